//! Dense reads with coordinates against TileDB's: tiledb-py's
//! `return_arrow=True` coordinate columns (and attribute columns) for the
//! same reads must equal ours, whole and read in batches under a small
//! budget, in every layout TileDB allows for a dense read — row-major,
//! column-major, global order (one box only: TileDB 2.30 fails multi-range
//! global reads with `bad_alloc`; unordered it refuses for dense arrays) —
//! on arrays written by tiledb-py in this test
//! (`tests/arrow/dense_arrays.py`): several tiles, partial edge tiles, every
//! tile and cell order, one to three dimensions of 1, 2, 4 and 8 bytes,
//! negative coordinates, fill, and boxes and multi-range subarrays.

mod common;

use std::fs::File;
use std::path::Path;
use std::process::Command;

use arrow_array::RecordBatch;
use arrow_ipc::reader::FileReader;
use serde_json::{json, Value};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::read::ResultOrder;

/// One read: its ranges per dimension (inclusive), by dimension name.
type Ranges = Vec<(&'static str, Vec<(i64, i64)>)>;

/// The reads of each array: the whole domain, a box across tile edges, and
/// subarrays of several ranges.
fn reads() -> Vec<(&'static str, Ranges)> {
    vec![
        (
            "rows_int16",
            vec![("r", vec![(0, 20)]), ("c", vec![(-3, 10)])],
        ),
        (
            "rows_int16",
            vec![("r", vec![(3, 17)]), ("c", vec![(-2, 8)])],
        ),
        (
            "rows_int16",
            vec![("r", vec![(1, 4), (9, 18)]), ("c", vec![(-3, 1), (4, 10)])],
        ),
        (
            "cols_int64",
            vec![("x", vec![(5, 40)]), ("y", vec![(0, 22)])],
        ),
        (
            "cols_int64",
            vec![("x", vec![(10, 33)]), ("y", vec![(1, 21)])],
        ),
        (
            "cols_int64",
            vec![("x", vec![(5, 6), (12, 29), (40, 40)]), ("y", vec![(2, 9)])],
        ),
        (
            "cube_uint8",
            vec![
                ("x", vec![(0, 16)]),
                ("y", vec![(0, 9)]),
                ("z", vec![(0, 12)]),
            ],
        ),
        (
            "cube_uint8",
            vec![
                ("x", vec![(2, 13)]),
                ("y", vec![(1, 8)]),
                ("z", vec![(4, 12)]),
            ],
        ),
        (
            "cube_uint8",
            vec![
                ("x", vec![(0, 3), (6, 15)]),
                ("y", vec![(3, 5)]),
                ("z", vec![(1, 2), (5, 11)]),
            ],
        ),
        ("line_uint32", vec![("i", vec![(0, 4999)])]),
        ("line_uint32", vec![("i", vec![(17, 4321)])]),
        (
            "line_uint32",
            vec![("i", vec![(3, 700), (1280, 1290), (4000, 4999)])],
        ),
    ]
}

/// TileDB's order letter and ours.
const ORDERS: [(&str, ResultOrder); 3] = [
    ("C", ResultOrder::RowMajor),
    ("F", ResultOrder::ColMajor),
    ("G", ResultOrder::Global),
];

/// TileDB's table for read `i`: the oracle writes one batch (a combined
/// table), none when empty.
fn tiledb_batch(dir: &Path, i: usize) -> RecordBatch {
    let file = File::open(dir.join(format!("{i}.arrow"))).unwrap();
    let reader = FileReader::try_new(file, None).unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    assert!(batches.len() <= 1, "the oracle writes one batch");
    batches
        .into_iter()
        .next()
        .unwrap_or_else(|| RecordBatch::new_empty(schema))
}

fn query<'a>(
    array: &'a Array,
    ranges: &Ranges,
    order: ResultOrder,
) -> tiledb_runtime::read::QueryBuilder<'a> {
    let mut q = array.query().order(order);
    for (dim, rs) in ranges {
        q = q.ranges(dim, rs.iter().map(|&(lo, hi)| lo..=hi)).unwrap();
    }
    q
}

/// Every column of TileDB's table equals ours of the same name.
fn same_columns(what: &str, theirs: &RecordBatch, ours: &RecordBatch) {
    assert_eq!(ours.num_rows(), theirs.num_rows(), "{what}: rows");
    for (field, column) in theirs.schema().fields().iter().zip(theirs.columns()) {
        let mine = ours
            .column_by_name(field.name())
            .unwrap_or_else(|| panic!("{what}: no column {}", field.name()));
        assert_eq!(
            mine.to_data(),
            column.to_data(),
            "{what}: column {}",
            field.name()
        );
    }
}

#[test]
fn dense_coordinates_equal_tiledb_py() {
    let Some(python) = common::tiledb_python() else {
        println!("skipped: no TileDB oracle (.venv-tiledb in the workspace, or $TILEDB_PY)");
        return;
    };
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/arrow");
    let arrays = tempfile::tempdir().unwrap();
    let status = Command::new(&python)
        .arg(tests.join("dense_arrays.py"))
        .arg(arrays.path())
        .env("PYTHONWARNINGS", "ignore")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "dense_arrays.py failed");

    // Every read in every order TileDB allows for it.
    let mut cases = Vec::new();
    for (name, ranges) in reads() {
        let boxed = ranges.iter().all(|(_, rs)| rs.len() == 1);
        for (letter, order) in ORDERS {
            if letter == "G" && !boxed {
                continue;
            }
            cases.push((name, ranges.clone(), letter, order));
        }
    }
    let oracle_reads: Vec<Value> = cases
        .iter()
        .map(|(name, ranges, letter, _)| {
            let ranges: Vec<Value> = ranges
                .iter()
                .map(|(dim, rs)| {
                    json!([
                        dim,
                        rs.iter()
                            .map(|&(lo, hi)| json!([lo, hi]))
                            .collect::<Vec<_>>()
                    ])
                })
                .collect();
            let attrs: Vec<&str> = match *name {
                "cols_int64" => vec!["f"],
                "cube_uint8" => vec!["v"],
                _ => vec!["a"],
            };
            json!({
                "array": arrays.path().join(name).to_str().unwrap(),
                "ranges": ranges,
                "attrs": attrs,
                "order": letter,
            })
        })
        .collect();
    let out = tempfile::tempdir().unwrap();
    let reads_file = out.path().join("reads.json");
    std::fs::write(&reads_file, serde_json::to_string(&oracle_reads).unwrap()).unwrap();
    let status = Command::new(&python)
        .arg(tests.join("oracle.py"))
        .arg("--reads")
        .arg(&reads_file)
        .arg(out.path())
        .env("PYTHONWARNINGS", "ignore")
        .status()
        .unwrap();
    assert!(status.success(), "the oracle failed");

    let mut batched_reads = 0;
    for (i, (name, ranges, letter, order)) in cases.iter().enumerate() {
        let what = format!("{name} {ranges:?} order {letter}");
        let theirs = tiledb_batch(out.path(), i);
        assert!(theirs.num_rows() > 0, "{what}: the read selects cells");
        let dims = theirs
            .schema()
            .fields()
            .iter()
            .filter(|f| ranges.iter().any(|(d, _)| d == f.name()))
            .count();
        assert_eq!(
            dims,
            ranges.len(),
            "{what}: TileDB returned every coordinate"
        );
        let array = Array::open_path(arrays.path().join(name), OpenOptions::default()).unwrap();
        let ours = query(&array, ranges, *order)
            .read()
            .unwrap()
            .into_record_batch()
            .unwrap();
        same_columns(&what, &theirs, &ours);

        // In batches of a few hundred cells, in the same order.
        let mut at = 0;
        let mut count = 0;
        for batch in query(&array, ranges, *order).batches(4 << 10).unwrap() {
            let batch = batch.unwrap().into_record_batch().unwrap();
            let rows = batch.num_rows();
            assert!(
                at + rows <= theirs.num_rows(),
                "{what}: batches hold too many rows"
            );
            same_columns(
                &format!("{what}, batch at {at}"),
                &theirs.slice(at, rows),
                &batch,
            );
            at += rows;
            count += 1;
        }
        assert_eq!(at, theirs.num_rows(), "{what}: the batches hold every row");
        if count > 1 {
            batched_reads += 1;
        }
    }
    assert!(
        batched_reads > 10,
        "reads came in several batches ({batched_reads})"
    );
}
