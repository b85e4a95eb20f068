//! Writes build their tiles in bounded groups: a dense write of 128 MiB of
//! INT64 cells (BYTESHUFFLE: filtered tiles as large as their cells), its
//! tiles built 4 MiB at a time, holds little beyond its
//! input, while the same write with one unbounded group holds every tile
//! at once. Each write runs in a child process (this test binary again,
//! running the ignored `child` test) whose peak resident size (`VmHWM`)
//! is measured. Grouping must not change a byte: dense and sparse
//! fragments written with small groups equal those written with the
//! default ones, file for file.
//!
//! `WRITE_GROUP_TEST_CELLS_LOG2=27` (1 GiB of cells) makes a longer run.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::child::{resident_kib, run_child_test};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::filter::{Datatype, Filter};
use tiledb_runtime::schema::{AttributeSpec, DimensionSpec, SchemaBuilder};
use tiledb_runtime::write::{write_fragment, Column, FragmentInput};

/// The tiles of one group in the bounded child.
const GROUP_BYTES: u64 = 4 << 20;

fn cells_log2() -> u32 {
    std::env::var("WRITE_GROUP_TEST_CELLS_LOG2")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

/// A dense 1-D INT64 array of `cells` cells in tiles of 2^16 cells,
/// filtered with `filters`.
fn dense_array(path: &Path, cells: i64, filters: Vec<Filter>) -> Array {
    let attribute = AttributeSpec::new("a", Datatype::Int64).with_filters(filters);
    let schema = SchemaBuilder::dense()
        .dimension(DimensionSpec::new::<i64>("d", 0, cells - 1, Some(1 << 16)))
        .attribute(attribute);
    Array::create_path(path, &schema).unwrap()
}

fn dense_input(cells: i64, group: Option<u64>) -> FragmentInput {
    // The bytes made in place: one copy of the input, no more.
    let mut a = Column::new("a", Datatype::Int64, Some(1), false);
    a.data = (0..cells)
        .flat_map(|i| (i.wrapping_mul(0x9E37_79B9) >> 7).to_le_bytes())
        .collect();
    FragmentInput {
        timestamp: 7,
        attrs: vec![a],
        subarray: Some(vec![(0, i128::from(cells) - 1)]),
        tile_group_bytes: group,
        ..Default::default()
    }
}

#[test]
#[ignore = "run in a child process by the memory test"]
fn child() {
    let spec = std::env::var("WRITE_GROUP_CHILD").expect("WRITE_GROUP_CHILD names the write");
    let (path, group) = spec.split_once(';').unwrap();
    let cells = 1i64 << cells_log2();
    // A filter that keeps the size: every filtered tile as large as its
    // cells. (Unfiltered tiles of a 1-D write are read in place and written
    // between their frames' bytes: no group holds them.)
    let array = dense_array(Path::new(path), cells, vec![Filter::ByteShuffle]);
    let input = dense_input(cells, group.parse().ok());
    let before = resident_kib("VmRSS:");
    write_fragment(array.storage(), array.schema(), &input).unwrap();
    println!(
        "RESULT input_kib={before} peak_kib={}",
        resident_kib("VmHWM:")
    );
}

/// Runs the child: (resident KiB before the write, peak KiB after).
fn run_child(path: &Path, group: Option<u64>) -> (u64, u64) {
    let group = group.map_or("default".to_string(), |g| g.to_string());
    let result = run_child_test("WRITE_GROUP_CHILD", &format!("{};{group}", path.display()));
    println!("group {group}: {}", result.line);
    (result.field("input_kib"), result.field("peak_kib"))
}

#[test]
fn a_large_write_holds_one_group_of_tiles_not_the_fragment() {
    let dir = tempfile::tempdir().unwrap();
    let data_kib = (8u64 << cells_log2()) / 1024;
    let (input, bounded) = run_child(&dir.path().join("bounded"), Some(GROUP_BYTES));
    // Beyond the input: a group of gathered and of filtered tiles per
    // thread at most, file buffers, the allocator's slack.
    let grown = bounded - input;
    assert!(
        grown < 48 * 1024,
        "a write in groups of {GROUP_BYTES} bytes grew {grown} KiB past its input ({data_kib} KiB of cells)"
    );
    let bounded_files = fragment_files(&dir.path().join("bounded"));
    let (input, unbounded) = run_child(&dir.path().join("unbounded"), Some(u64::MAX));
    // One group of every tile: the whole field gathered and filtered.
    assert!(
        unbounded - input > data_kib,
        "one unbounded group grew only {} KiB past its input",
        unbounded - input
    );
    // The same fragment, but for the schema name in the footer.
    let unbounded_files = fragment_files(&dir.path().join("unbounded"));
    assert!(bounded_files[0]["a0.tdb"] == unbounded_files[0]["a0.tdb"]);
}

/// The files of each of an array's fragments, by name.
fn fragment_files(array: &Path) -> Vec<BTreeMap<String, Vec<u8>>> {
    std::fs::read_dir(array.join("__fragments"))
        .unwrap()
        .map(|fragment| {
            std::fs::read_dir(fragment.unwrap().path())
                .unwrap()
                .map(|e| {
                    let e = e.unwrap();
                    let name = e.file_name().to_string_lossy().into_owned();
                    (name, std::fs::read(e.path()).unwrap())
                })
                .collect()
        })
        .collect()
}

/// The two fragments of `array` are the same, file for file (the footer
/// names the array's schema, so they are compared within one array).
fn assert_two_equal_fragments(array: &Path, data_file: &str) {
    let fragments = fragment_files(array);
    assert_eq!(fragments.len(), 2, "two fragments in {}", array.display());
    assert!(
        fragments[0] == fragments[1],
        "the fragments of {} differ",
        array.display()
    );
    assert!(fragments[0][data_file].len() > 10_000);
}

#[test]
fn small_groups_write_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    // Dense, filtered, with tiles only partly written at both ends.
    let cells = 1i64 << 18;
    let path = dir.path().join("dense");
    let array = dense_array(&path, cells + (1 << 16), vec![Filter::Zstd { level: 1 }]);
    for group in [Some(100_000), None] {
        let mut input = dense_input(cells, group);
        input.subarray = Some(vec![(1000, i128::from(cells) + 999)]);
        write_fragment(array.storage(), array.schema(), &input).unwrap();
    }
    assert_two_equal_fragments(&path, "a0.tdb");

    // Sparse, unordered, capacity 1000: groups of a few tiles.
    let n = 200_000i64;
    let path = dir.path().join("sparse");
    let schema = SchemaBuilder::sparse()
        .dimension(DimensionSpec::new::<i64>("x", 0, 999_999, Some(10_000)))
        .dimension(DimensionSpec::new::<i64>("y", 0, 999_999, Some(10_000)))
        .attribute(
            AttributeSpec::new("v", Datatype::Float64)
                .with_filters(vec![Filter::Zstd { level: 1 }]),
        )
        .capacity(1000);
    let array = Array::create_path(&path, &schema).unwrap();
    for group in [Some(20_000), None] {
        let x: Vec<i64> = (0..n).map(|i| (i * 7919) % 1_000_000).collect();
        let y: Vec<i64> = (0..n).map(|i| (i * 104_729) % 999_983).collect();
        let v: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
        let input = FragmentInput {
            timestamp: 9,
            dims: vec![Column::from_values("x", &x), Column::from_values("y", &y)],
            attrs: vec![Column::from_values("v", &v)],
            tile_group_bytes: group,
            ..Default::default()
        };
        write_fragment(array.storage(), array.schema(), &input).unwrap();
    }
    assert_two_equal_fragments(&path, "d0.tdb");
    drop(Array::open_path(&path, OpenOptions::default()).unwrap());
}
