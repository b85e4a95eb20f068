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
