//! Overlapping ranges of one dimension whose order (TileDB's range order
//! or coordinate order) needs every coordinate in the ranges, against
//! tiledb-py's Arrow tables.

use super::against_arrow;

/// One-dimensional arrays (as `MULTI_RANGE_ARRAYS`) whose order TileDB
/// decides from every coordinate in the ranges: `overwritten` (an older
/// fragment's cells in the ranges all overwritten by a newer one: every
/// result from one fragment, range order), `overwrites` (the same cells,
/// the small fragment newer: coordinate order), `deleted` (a newer
/// fragment's cells in the ranges deleted after: TileDB counts them, so
/// coordinate order) and `many-met` (more than 65,536 cells of a newer
/// fragment in the tiles the ranges touch, none in the ranges: range
/// order; its odd cells skip `k * 1000 + 1`, which the ranges hold).
const WHOLE_PASS_ARRAYS: &str = r#"
import sys, os
import numpy as np
import tiledb
root = sys.argv[1]
def make(name, fragments):
    uri = os.path.join(root, name)
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 1_000_000), tile=1000, dtype=np.int64))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=True, capacity=500,
                        attrs=[tiledb.Attr("a", dtype=np.int64)]))
    for t, d in enumerate(fragments, 1):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[d] = {"a": d * 10 + t}
    return uri
make("overwritten", [np.arange(100, 5000, 2), np.arange(0, 20000, 2)])
make("overwrites", [np.arange(0, 20000, 2), np.arange(100, 5000, 2)])
uri = make("deleted", [np.arange(0, 20000, 2), np.arange(101, 200, 2)])
with tiledb.open(uri, "d", timestamp=3) as A:
    A.query(cond="d < 200").submit()
odd = np.arange(1, 150_000, 2)
make("many-met", [np.arange(0, 200_000, 2), odd[odd % 1000 != 1]])
"#;

#[test]
fn overlapping_ranges_over_overwritten_and_many_met_cells_stream_in_tiledbs_order() {
    use tiledb_runtime::read::{Range, ReadQuery, ResultOrder};
    let few: Vec<(i64, i64)> = vec![(3000, 8000), (100, 5000), (50, 60), (7000, 7100)];
    // Unsorted: each holds an even cell of either side of `k * 1000 + 1`.
    let many: Vec<(i64, i64)> = (0..150).rev().map(|k| (k * 1000, k * 1000 + 2)).collect();
    let cases = [
        ("overwritten", &few, 4 << 10),
        ("overwrites", &few, 4 << 10),
        ("deleted", &few, 4 << 10),
        ("many-met", &many, 512),
    ];
    let reads = cases
        .iter()
        .map(|(name, ranges, _)| {
            serde_json::json!({"array": name, "ranges": [["d", ranges]],
                               "attrs": ["a"], "order": "C"})
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let Some(tables) = against_arrow::tiledb_tables(dir.path(), WHOLE_PASS_ARRAYS, reads) else {
        return;
    };
    for ((name, ranges, budget), theirs) in cases.iter().zip(&tables) {
        let query = ReadQuery {
            ranges: vec![ranges
                .iter()
                .map(|(a, b)| -> Range { (a.to_le_bytes().to_vec(), b.to_le_bytes().to_vec()) })
                .collect()],
            layout: ResultOrder::RowMajor,
            ..ReadQuery::default()
        };
        let ours = against_arrow::in_batches(&dir.path().join(name), &query, *budget);
        assert!(ours.count > 8, "{name}: {} batches", ours.count);
        against_arrow::assert_same(name, &ours.joined, theirs);
    }
}

/// One-dimensional arrays in Hilbert order, of three fragments each (the
/// third outside the ranges): `h-overwritten` and `h-overwrites` (INT64,
/// as `overwritten` and `overwrites` above: range order, coordinate
/// order), `hw-overwritten` and `hw-overwrites` (strings, the same
/// pattern). The strings `aé…` map, their second byte read as a negative
/// `char`, to Hilbert values above those of `b…`: a fragment stores them
/// after `b…`, out of coordinate order, so the pass merges by the
/// Hilbert value, not the coordinate.
const HILBERT_WHOLE_PASS_ARRAYS: &str = r#"
import sys, os
import numpy as np
import tiledb
root = sys.argv[1]
def make(name, dim, fragments):
    uri = os.path.join(root, name)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=True,
                        cell_order="hilbert", capacity=100,
                        attrs=[tiledb.Attr("a", dtype=np.int64)]))
    for t, d in enumerate(fragments, 1):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[d] = {"a": np.arange(len(d)) + 100_000 * t}
int_dim = tiledb.Dim("d", domain=(0, 1_000_000), dtype=np.int64)
make("h-overwritten", int_dim, [np.arange(100, 5000, 2), np.arange(0, 20000, 2),
                                np.arange(30000, 40000, 3)])
make("h-overwrites", int_dim, [np.arange(0, 20000, 2), np.arange(100, 5000, 2),
                               np.arange(30000, 40000, 3)])
def words(accented, plain, step):
    # As bytes: tiledb-py refuses non-ASCII text for an ASCII dimension.
    w = ["a\u00e9%04d" % i for i in range(0, accented, step)]
    w += ["b%05d" % i for i in range(0, plain, step)]
    return np.array([x.encode() for x in w], dtype=object)
str_dim = tiledb.Dim("s", domain=(None, None), tile=None, dtype="ascii")
far = np.array([("c%05d" % i).encode() for i in range(3000)], dtype=object)
make("hw-overwritten", str_dim, [words(1000, 5000, 2), words(2000, 10000, 1), far])
make("hw-overwrites", str_dim, [words(2000, 10000, 1), words(1000, 5000, 2), far])
"#;

#[test]
fn overlapping_ranges_in_hilbert_order_over_one_dimension_stream_in_tiledbs_order() {
    use tiledb_runtime::read::{Range, ReadQuery, ResultOrder};
    let int_ranges: [(i64, i64); 4] = [(3000, 8000), (100, 5000), (50, 60), (7000, 7100)];
    let ints: Vec<Range> = int_ranges
        .iter()
        .map(|(a, b)| (a.to_le_bytes().to_vec(), b.to_le_bytes().to_vec()))
        .collect();
    let words = [
        ("b01000", "b03000"),
        ("a\u{e9}0100", "a\u{e9}0900"),
        ("b00500", "b01500"),
        ("a\u{e9}0050", "b00100"),
    ];
    let strings: Vec<Range> = words
        .iter()
        .map(|(a, b)| (a.as_bytes().to_vec(), b.as_bytes().to_vec()))
        .collect();
    let cases = [
        ("h-overwritten", "d", &ints),
        ("h-overwrites", "d", &ints),
        ("hw-overwritten", "s", &strings),
        ("hw-overwrites", "s", &strings),
    ];
    let reads = cases
        .iter()
        .map(|&(name, dim, _)| {
            let ranges = if dim == "d" {
                serde_json::json!(int_ranges)
            } else {
                serde_json::json!(words)
            };
            serde_json::json!({"array": name, "ranges": [[dim, ranges]],
                               "attrs": ["a"], "order": "C"})
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let Some(tables) = against_arrow::tiledb_tables(dir.path(), HILBERT_WHOLE_PASS_ARRAYS, reads)
    else {
        return;
    };
    for ((name, _, ranges), theirs) in cases.iter().zip(&tables) {
        let query = ReadQuery {
            ranges: vec![(*ranges).clone()],
            layout: ResultOrder::RowMajor,
            ..ReadQuery::default()
        };
        let ours = against_arrow::in_batches(&dir.path().join(name), &query, 4 << 10);
        assert!(ours.count > 8, "{name}: {} batches", ours.count);
        against_arrow::assert_same(name, &ours.joined, theirs);
    }
}
