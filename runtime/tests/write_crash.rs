//! A write that stops part way (the storage fails after N changes, for every
//! N short of the whole write) leaves the array as it was: it opens, reads
//! the previous state, and lists no half fragment. The commit marker is the
//! last change a fragment write makes.

#[path = "common/stopped.rs"]
mod stopped;

use stopped::{input, StoppingStorage, SCHEMA};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::read::{ReadQuery, ResultOrder};
use tiledb_runtime::storage::LocalStorage;
use tiledb_runtime::write::{create_array, write_fragment};

/// The cells' validity in these writes: even values are valid.
fn even(v: i32) -> bool {
    v % 2 == 0
}

/// Every cell of the array as `(d, a)`, in global order.
fn cells(root: &std::path::Path) -> Vec<(i32, i32)> {
    let array = Array::open_path(root, OpenOptions::default()).expect("the array opens");
    let query = ReadQuery {
        layout: ResultOrder::Global,
        ..ReadQuery::default()
    };
    let result = array.read(&query).expect("the array reads");
    let col = |name: &str| {
        result
            .dimensions
            .iter()
            .chain(&result.attributes)
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no column {name}"))
    };
    let (d, a) = (col("d"), col("a"));
    (0..d.len())
        .map(|i| {
            let v = |c: &tiledb_runtime::read::Column| {
                i32::from_le_bytes(c.cell(i).0.try_into().expect("4 bytes"))
            };
            (v(d), v(a))
        })
        .collect()
}

#[test]
fn a_write_stopped_at_any_point_leaves_the_previous_state() {
    let table: toml::Value = toml::from_str(SCHEMA).unwrap();
    let stored = tiledb_conformance::recipe::stored_schema(&table).unwrap();

    // How many changes a whole second write makes.
    let full = tempfile::tempdir().unwrap();
    let counting = StoppingStorage::new(full.path(), u64::MAX, false);
    let schema = create_array(&counting, &stored, 1, None).unwrap();
    write_fragment(
        &counting,
        &schema,
        &input(10, &[5, 1, 9], &[50, 10, 90], even),
    )
    .unwrap();
    let before_second = counting.changes();
    write_fragment(&counting, &schema, &input(20, &[2, 7], &[20, 70], even)).unwrap();
    let second_write_changes = counting.changes() - before_second;
    assert!(second_write_changes >= 5, "{second_write_changes}");
    assert_eq!(
        cells(full.path()),
        vec![(1, 10), (2, 20), (5, 50), (7, 70), (9, 90)]
    );

    for budget in 0..second_write_changes {
        let dir = tempfile::tempdir().unwrap();
        let local = LocalStorage::new(dir.path());
        let schema = create_array(&local, &stored, 1, None).unwrap();
        write_fragment(&local, &schema, &input(10, &[5, 1, 9], &[50, 10, 90], even)).unwrap();
        let failing = StoppingStorage::new(dir.path(), budget, false);
        let err = write_fragment(&failing, &schema, &input(20, &[2, 7], &[20, 70], even))
            .expect_err("the write must fail");
        assert!(err.to_string().contains("simulated crash"), "{err}");
        // The half-written fragment folder may exist, but nothing commits it.
        let fragments = std::fs::read_dir(dir.path().join("__fragments"))
            .unwrap()
            .count();
        let commits = std::fs::read_dir(dir.path().join("__commits"))
            .unwrap()
            .count();
        assert_eq!(
            commits, 1,
            "budget {budget}: a commit marker of a half write"
        );
        assert!(fragments >= 1);
        let array = Array::open_path(dir.path(), OpenOptions::default()).unwrap();
        assert_eq!(array.fragments().len(), 1, "budget {budget}");
        assert_eq!(
            cells(dir.path()),
            vec![(1, 10), (5, 50), (9, 90)],
            "budget {budget}"
        );
    }
}
