//! Reads in batches of orders once read whole before being cut: the
//! global order of a sparse array over FLOAT64 dimensions (space tiles of
//! floats). TileDB (tiledb-py 0.36.1 = TileDB 2.30) writes the array in two
//! fragments, cells on tile boundaries included, and gives its cells in
//! global order (`A.query(order="G")`); ours in batches under a small
//! budget must be the same cells in the same order, in many batches, each
//! within the budget, the first one reached having read a small part of
//! the data files (bytes counted by a wrapping `Storage`).
//!
//! Skips, saying why, without the oracle venv.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::Ordering;

use tiledb_runtime::read::{batches, Column, ReadQuery, ReadResult, ResultOrder};

use common::counting::counted;

const MAKE_AND_READ: &str = r#"
import json, sys
import numpy as np
import tiledb
uri = sys.argv[1]
dims = [tiledb.Dim("x", domain=(0.0, 100.0), tile=10.0, dtype=np.float64),
        tiledb.Dim("y", domain=(-50.0, 50.0), tile=7.5, dtype=np.float64)]
schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=100,
                            cell_order="col-major", tile_order="row-major",
                            attrs=[tiledb.Attr("a", dtype=np.int64)])
tiledb.Array.create(uri, schema)
rng = np.random.default_rng(7)
for at, n in [(1, 12000), (2, 6000)]:
    x = rng.uniform(0.0, 100.0, n)
    y = rng.uniform(-50.0, 50.0, n)
    # Cells on tile boundaries (and the domain's ends).
    x[:30] = rng.integers(0, 11, 30) * 10.0
    y[30:60] = rng.integers(0, 14, 30) * 7.5 - 50.0
    with tiledb.open(uri, "w", timestamp=at) as A:
        A[x, y] = {"a": np.arange(n) + at * 100000}
with tiledb.open(uri) as A:
    r = A.query(order="G")[:]
    print(json.dumps({"x": [float(v).hex() for v in r["x"]],
                      "y": [float(v).hex() for v in r["y"]],
                      "a": [int(v) for v in r["a"]]}))
"#;

/// The cells of `result` as the script prints them.
fn cells_json(result: &ReadResult) -> serde_json::Value {
    let floats = |c: &Column| -> Vec<String> {
        (0..c.len())
            .map(|i| hex_float(f64::from_le_bytes(c.cell(i).0.try_into().unwrap())))
            .collect()
    };
    let column = |name: &str| {
        result
            .dimensions
            .iter()
            .chain(&result.attributes)
            .find(|c| c.name == name)
            .unwrap()
    };
    let a: Vec<i64> = (0..column("a").len())
        .map(|i| i64::from_le_bytes(column("a").cell(i).0.try_into().unwrap()))
        .collect();
    serde_json::json!({"x": floats(column("x")), "y": floats(column("y")), "a": a})
}

/// Python's `float.hex()` of `v`: exact, to compare floats as text.
fn hex_float(v: f64) -> String {
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0x0.0p+0"
        } else {
            "0x0.0p+0"
        }
        .to_string();
    }
    let bits = v.to_bits();
    let sign = if v < 0.0 { "-" } else { "" };
    let exponent = ((bits >> 52) & 0x7ff) as i64;
    let mantissa = bits & ((1 << 52) - 1);
    let (lead, exponent) = if exponent == 0 {
        (0, -1022)
    } else {
        (1, exponent - 1023)
    };
    format!("{sign}0x{lead}.{mantissa:013x}p{exponent:+}")
}

#[test]
fn float_global_order_streams_in_batches_as_tiledb_orders_it() {
    let Some(python) = common::tiledb_python() else {
        eprintln!("skipped: no tiledb-py venv (.venv-tiledb or $TILEDB_PY)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("floats");
    let out = Command::new(&python)
        .arg("-c")
        .arg(MAKE_AND_READ)
        .arg(&path)
        .output()
        .expect("run tiledb-py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    let budget = 32 << 10;
    let (array, counter) = counted(Path::new(&path));
    let query = ReadQuery {
        layout: ResultOrder::Global,
        ..ReadQuery::default()
    };
    let mut joined: Option<ReadResult> = None;
    let mut count = 0;
    let mut read_before_first = None;
    for batch in batches(array.snapshot(), &query, budget).unwrap() {
        let batch = batch.unwrap();
        read_before_first.get_or_insert(counter.load(Ordering::Relaxed));
        let bytes: usize = batch
            .dimensions
            .iter()
            .chain(&batch.attributes)
            .map(|c| c.data.len() + c.offsets.as_ref().map_or(0, |o| o.len() * 8))
            .sum();
        assert!(bytes as u64 <= budget, "a batch of {bytes} bytes");
        count += 1;
        match &mut joined {
            None => joined = Some(batch),
            Some(all) => {
                for (into, part) in all
                    .dimensions
                    .iter_mut()
                    .chain(&mut all.attributes)
                    .zip(batch.dimensions.iter().chain(&batch.attributes))
                {
                    for i in 0..part.len() {
                        let (bytes, valid) = part.cell(i);
                        into.push(bytes, valid);
                    }
                }
            }
        }
    }
    let total = counter.load(Ordering::Relaxed);
    let first = read_before_first.unwrap();
    assert!(count > 10, "{count} batches");
    assert!(
        first * 4 <= total,
        "the first batch came after {first} of {total} data bytes: read whole"
    );
    let ours = cells_json(&joined.unwrap());
    for name in ["a", "x", "y"] {
        let (o, t) = (
            ours[name].as_array().unwrap(),
            expected[name].as_array().unwrap(),
        );
        assert_eq!(o.len(), t.len(), "{name}: cell count");
        if let Some(i) = (0..o.len()).find(|&i| o[i] != t[i]) {
            panic!("{name}[{i}]: {} TileDB {}", o[i], t[i]);
        }
    }
}
