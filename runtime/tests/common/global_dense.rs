//! The large square INT64 array of the global-order dense write tests
//! (`write_global_dense`, `write_stream_global`): its input in global
//! order, and TileDB's read of the result.

use std::path::Path;

use serde_json::json;

/// The tile extent of the large array, both dimensions.
pub const LARGE_TILE: i64 = 256;

/// The side of the large square array (cells: its square), 4096 unless
/// the environment variable `var` says otherwise.
pub fn large_side(var: &str) -> i64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4096)
}

/// The large array's cells `start..end` in global order (tiles row-major,
/// cells column-major within a tile, so the global order is not the
/// row-major one), each cell's value its row-major place `r × side + c`.
pub fn global_order_values(side: i64, start: i64, end: i64) -> Vec<u8> {
    let tiles = side / LARGE_TILE;
    let per_tile = LARGE_TILE * LARGE_TILE;
    let mut data = Vec::with_capacity(((end - start) * 8) as usize);
    for k in start..end {
        let (tile, within) = (k / per_tile, k % per_tile);
        let r = (tile / tiles) * LARGE_TILE + within % LARGE_TILE;
        let c = (tile % tiles) * LARGE_TILE + within / LARGE_TILE;
        data.extend_from_slice(&(r * side + c).to_le_bytes());
    }
    data
}

/// TileDB reads the whole array: is every cell its row-major place?
const TILEDB_READS_LARGE: &str = r#"
import json, sys, numpy as np, tiledb
spec = json.loads(sys.argv[1])
with tiledb.open(spec["uri"]) as A:
    a = A[:]["a"]
n = spec["side"] * spec["side"]
print(json.dumps({"cells": int(a.size), "equal": bool(np.array_equal(a.ravel(), np.arange(n)))}))
"#;

/// TileDB reads every cell of the large array at `path` as its row-major
/// place (skipped, saying so, without the oracle).
pub fn assert_tiledb_reads_row_major_places(path: &Path, side: i64) {
    let Some(python) = super::tiledb_python() else {
        println!("skipped TileDB's read: no oracle (.venv-tiledb in the workspace, or $TILEDB_PY)");
        return;
    };
    let read = super::python_json(
        &python,
        TILEDB_READS_LARGE,
        &json!({"uri": path, "side": side}),
    );
    assert_eq!(read, json!({"cells": side * side, "equal": true}));
}
