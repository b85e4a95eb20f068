//! Dense tile skipping under a query condition, against TileDB (tiledb-py
//! 0.36.1 = TileDB 2.30, `tests/conditions/dense_skip.py`): on a dense
//! array TileDB wrote in three overlapping fragments, a read under a
//! selective condition decodes far fewer bytes of data files (counted by a
//! wrapping `Storage`) than the same read with skipping off, and both give
//! TileDB's cells — the fill value, "zz" for the string, where a cell
//! fails, including the older cells a newer failing fragment hides — over
//! the whole domain and over two ranges; the aggregates under the
//! condition equal TileDB's both ways, and the read in batches under a
//! small budget gives the same cells in more than one batch.
//!
//! Skips, saying why, without the oracle venv.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::Ordering;

use serde_json::{json, Value};
use tiledb_runtime::condition::QueryCondition;
use tiledb_runtime::read::{
    batches_where, Aggregate, AggregateValue, Column, ReadQuery, ReadResult, ResultOrder,
};
use tiledb_runtime::schema::Scalar;

use common::counting::counted;

/// The two ranges the oracle reads besides the whole domain.
const RANGES: [(i64, i64); 2] = [(1, 5000), (8000, 12000)];

const AGGREGATES: [&str; 5] = ["count:v", "sum:v", "min:v", "max:v", "null_count:f"];

fn oracle(python: &Path, args: &[&str]) -> String {
    let script = common::workspace().join("runtime/tests/conditions/dense_skip.py");
    let out = Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .expect("run the oracle");
    assert!(
        out.status.success(),
        "oracle {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// One column as the oracle prints it (`canon` in dense_skip.py).
fn column_json(column: &Column) -> Value {
    let cells = (0..column.len()).map(|i| {
        let (bytes, valid) = column.cell(i);
        if !valid {
            return Value::Null;
        }
        match (column.name.as_str(), Scalar::decode(column.datatype, bytes)) {
            ("s", _) => json!(bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()),
            (_, Some(Scalar::Float(f))) if f.is_nan() => json!("nan"),
            (_, Some(Scalar::Float(f))) => json!(f.to_bits().to_string()),
            (_, Some(Scalar::Int(v))) => json!(v as i64),
            other => panic!("unexpected cell {other:?}"),
        }
    });
    Value::Array(cells.collect())
}

fn cells_json(result: &ReadResult) -> Value {
    let mut out = serde_json::Map::new();
    for column in &result.attributes {
        out.insert(column.name.clone(), column_json(column));
    }
    Value::Object(out)
}

/// Where `ours` first differs from `theirs` (column, cell and values), if
/// anywhere.
fn first_difference(ours: &Value, theirs: &Value) -> Option<String> {
    for name in ["v", "f", "s"] {
        let (a, b) = (ours[name].as_array()?, theirs[name].as_array()?);
        if a.len() != b.len() {
            return Some(format!("{name}: {} cells, TileDB {}", a.len(), b.len()));
        }
        if let Some(i) = (0..a.len()).find(|&i| a[i] != b[i]) {
            return Some(format!("{name}[{i}]: {}, TileDB {}", a[i], b[i]));
        }
    }
    (ours != theirs).then(|| "the columns differ".to_string())
}

fn query(ranged: bool) -> ReadQuery {
    let ranges = if ranged {
        let bytes = |x: i64| x.to_le_bytes().to_vec();
        vec![RANGES
            .iter()
            .map(|&(lo, hi)| (bytes(lo), bytes(hi)))
            .collect()]
    } else {
        Vec::new()
    };
    ReadQuery {
        ranges,
        layout: ResultOrder::RowMajor,
        ..ReadQuery::default()
    }
}

/// The read of `cond` (over the ranges when `ranged`), tiles skipped or
/// not, and the data bytes it read.
fn read(path: &Path, cond: &str, ranged: bool, skip: bool) -> (ReadResult, u64) {
    let (array, counter) = counted(path);
    let condition = QueryCondition::parse(cond, array.schema())
        .unwrap()
        .skipping_tiles(skip);
    let result = tiledb_runtime::read::read_where(array.snapshot(), &query(ranged), &condition)
        .unwrap_or_else(|e| panic!("{cond}: {e}"));
    (result, counter.load(Ordering::Relaxed))
}

/// Our aggregates of `cond` over the whole domain, as the oracle prints them.
fn aggregates_json(path: &Path, cond: &str, skip: bool) -> Value {
    let (array, _) = counted(path);
    let condition = QueryCondition::parse(cond, array.schema())
        .unwrap()
        .skipping_tiles(skip);
    let aggregates: Vec<Aggregate> = AGGREGATES
        .iter()
        .map(|a| Aggregate::parse(a).unwrap())
        .collect();
    let answers = array
        .query()
        .with_condition(condition)
        .aggregate(&aggregates)
        .unwrap_or_else(|e| panic!("{cond}: {e}"));
    let mut out = serde_json::Map::new();
    for (name, value) in AGGREGATES.iter().zip(answers) {
        let value = match value {
            AggregateValue::Null => Value::Null,
            AggregateValue::UInt(v) => json!(v),
            AggregateValue::Int(v) => json!(v),
            other => panic!("{cond}: {name} = {other:?}"),
        };
        out.insert(name.to_string(), value);
    }
    Value::Object(out)
}

/// The read of `cond` in batches of at most `budget` bytes, joined; how
/// many batches there were.
fn batched(path: &Path, cond: &str, budget: u64) -> (Value, usize) {
    let (array, _) = counted(path);
    let condition = QueryCondition::parse(cond, array.schema()).unwrap();
    let mut joined: Option<ReadResult> = None;
    let mut count = 0;
    for batch in batches_where(array.snapshot(), &query(false), Some(&condition), budget).unwrap() {
        let batch = batch.unwrap();
        count += 1;
        match &mut joined {
            None => joined = Some(batch),
            Some(all) => {
                for (into, part) in all.attributes.iter_mut().zip(&batch.attributes) {
                    for i in 0..part.len() {
                        let (bytes, valid) = part.cell(i);
                        into.push(bytes, valid);
                    }
                }
            }
        }
    }
    (cells_json(&joined.expect("a batch")), count)
}

#[test]
fn dense_tiles_no_cell_of_which_passes_are_not_decoded() {
    let Some(python) = common::tiledb_python() else {
        eprintln!("skipped: no tiledb-py venv (.venv-tiledb or $TILEDB_PY)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dense");
    let uri = path.to_str().unwrap();
    oracle(&python, &["make", uri]);
    // Each condition, and how many times fewer data bytes a read of the
    // whole domain must decode with skipping on (1: no fewer required).
    let conditions: [(&str, u64); 10] = [
        // The first tile of the oldest fragment only.
        ("v < 1500", 8),
        // Older cells that pass, hidden by newer ones that fail: fill.
        ("v < 5000", 4),
        // Only inside the newer fragment.
        ("v > 100500 and v < 101200", 8),
        ("f < 0.0", 4),
        // Nulls: the newer fragments have none.
        ("f == None", 1),
        // The newest fragment's part of a tile, and the last tiles.
        ("v == 7 or v > 59990", 4),
        // Nothing passes anywhere: nothing decoded.
        ("v < 0", 1000),
        // Strings record no bounds here; TileDB takes no dense dimension.
        ("s == 'n1500'", 1),
        ("v > 3 and f != None", 1),
        ("not (v >= 1500)", 8),
    ];
    let conds: Vec<&str> = conditions.iter().map(|(c, _)| *c).collect();
    let mut args = vec!["answer", uri];
    args.extend(&conds);
    let answers: Vec<Value> = serde_json::from_str(&oracle(&python, &args)).unwrap();
    for ((cond, fewer), expected) in conditions.iter().zip(&answers) {
        assert_eq!(expected["cond"], *cond);
        for (ranged, key) in [(false, "whole"), (true, "ranges")] {
            let (on, read_on) = read(&path, cond, ranged, true);
            let (off, read_off) = read(&path, cond, ranged, false);
            if let Some(difference) = first_difference(&cells_json(&on), &expected[key]) {
                panic!("{cond} ({key}), skipping on: {difference}");
            }
            if let Some(difference) = first_difference(&cells_json(&off), &expected[key]) {
                panic!("{cond} ({key}), skipping off: {difference}");
            }
            if !ranged {
                assert!(
                    read_on.saturating_mul(*fewer) <= read_off.max(1) || *fewer == 1,
                    "{cond}: skipping read {read_on} data bytes, not skipping {read_off}"
                );
            }
        }
        for skip in [true, false] {
            assert_eq!(
                aggregates_json(&path, cond, skip),
                expected["agg"],
                "{cond}: the aggregates differ from TileDB's (skipping {skip})"
            );
        }
    }
    // Batches under a small budget: the same cells, in several batches.
    for (cond, _) in &conditions[..3] {
        let (cells, count) = batched(&path, cond, 64 << 10);
        assert!(count > 1, "{cond}: one batch");
        let expected = &answers.iter().find(|a| a["cond"] == *cond).unwrap()["whole"];
        if let Some(difference) = first_difference(&cells, expected) {
            panic!("{cond}, in batches: {difference}");
        }
    }
}

/// Our aggregates (no condition) of `query` from tile metadata and with
/// every tile decoded, as the oracle prints them, and the data bytes each
/// read.
fn aggregates_from_metadata(path: &Path, query: &ReadQuery) -> (Value, Value, u64, u64) {
    let aggregates: Vec<Aggregate> = AGGREGATES
        .iter()
        .map(|a| Aggregate::parse(a).unwrap())
        .collect();
    let json = |answers: Vec<AggregateValue>| -> Value {
        let mut out = serde_json::Map::new();
        for (name, value) in AGGREGATES.iter().zip(answers) {
            let value = match value {
                AggregateValue::UInt(v) => json!(v),
                AggregateValue::Int(v) => json!(v),
                other => panic!("{name} = {other:?}"),
            };
            out.insert(name.to_string(), value);
        }
        Value::Object(out)
    };
    let (array, counter) = counted(path);
    let read = tiledb_runtime::read::aggregate::aggregate;
    let from_metadata = json(read(array.snapshot(), query, None, &aggregates).unwrap());
    let with = counter.load(Ordering::Relaxed);
    let (array, counter) = counted(path);
    let decoding = tiledb_runtime::read::aggregate::aggregate_decoding;
    let decoded = json(decoding(array.snapshot(), query, None, &aggregates).unwrap());
    (
        from_metadata,
        decoded,
        with,
        counter.load(Ordering::Relaxed),
    )
}

/// TileDB's aggregates over disjoint ranges, from its answers per range.
fn combined(per_range: &[Value]) -> Value {
    let pick = |op: &str, f: fn(i64, i64) -> i64| {
        per_range
            .iter()
            .map(|r| r[op].as_i64().unwrap())
            .reduce(f)
            .unwrap()
    };
    json!({
        "count:v": pick("count:v", |a, b| a + b),
        "sum:v": pick("sum:v", |a, b| a + b),
        "min:v": pick("min:v", i64::min),
        "max:v": pick("max:v", i64::max),
        "null_count:f": pick("null_count:f", |a, b| a + b),
    })
}

#[test]
fn dense_aggregates_over_whole_tiles_come_from_metadata() {
    let Some(python) = common::tiledb_python() else {
        eprintln!("skipped: no tiledb-py venv (.venv-tiledb or $TILEDB_PY)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dense");
    let uri = path.to_str().unwrap();
    oracle(&python, &["make", uri]);
    let bytes = |x: i64| x.to_le_bytes().to_vec();
    // Each subarray (ranges on `d`), and how many times fewer data bytes
    // the aggregates from metadata must read.
    let cases: [(&[(i64, i64)], u64); 4] = [
        // 38 of 46 tiles whole, inside their fragment and not overlapped.
        (&[(1, 20_000)], 4),
        // Cut tiles at either end, decoded.
        (&[(250, 14_750)], 3),
        // Two ranges: tiles inside one and apart from the other.
        (&[(3001, 9000), (11_001, 19_000)], 4),
        // Overlapping ranges: the tiles both meet are decoded.
        (&[(3001, 9000), (8001, 12_000)], 2),
    ];
    for (ranges, fewer) in cases {
        let query = ReadQuery {
            ranges: vec![ranges
                .iter()
                .map(|&(lo, hi)| (bytes(lo), bytes(hi)))
                .collect()],
            ..ReadQuery::default()
        };
        let (from_metadata, decoded, with, without) = aggregates_from_metadata(&path, &query);
        assert_eq!(
            from_metadata, decoded,
            "{ranges:?}: differs with tiles decoded"
        );
        assert!(
            with.saturating_mul(fewer) <= without,
            "{ranges:?}: from metadata read {with} data bytes, decoding {without}"
        );
        let overlapping = ranges.windows(2).any(|w| w[1].0 <= w[0].1);
        if overlapping {
            continue; // TileDB's answer is not a sum over its ranges.
        }
        let mut args = vec!["agg".to_string(), uri.to_string()];
        args.extend(ranges.iter().map(|(lo, hi)| format!("{lo}:{hi}")));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let per_range: Vec<Value> = serde_json::from_str(&oracle(&python, &args)).unwrap();
        assert_eq!(
            from_metadata,
            combined(&per_range),
            "{ranges:?}: differs from TileDB"
        );
    }
}

/// Our count, min, max and null count of the string `s` over `ranges`
/// from tile metadata and with every tile decoded (as the oracle prints
/// them), and the data bytes each read.
fn string_aggregates(path: &Path, ranges: &[(i64, i64)]) -> (Value, Value, u64, u64) {
    let bytes = |x: i64| x.to_le_bytes().to_vec();
    let query = ReadQuery {
        ranges: vec![ranges
            .iter()
            .map(|&(lo, hi)| (bytes(lo), bytes(hi)))
            .collect()],
        ..ReadQuery::default()
    };
    let ops = ["count", "min", "max", "null_count"];
    let aggregates: Vec<Aggregate> = ops
        .iter()
        .map(|op| Aggregate::parse(&format!("{op}:s")).unwrap())
        .collect();
    let json = |answers: Vec<AggregateValue>| -> Value {
        let mut out = serde_json::Map::new();
        for (op, value) in ops.iter().zip(answers) {
            let value = match value {
                AggregateValue::UInt(v) => json!(v),
                AggregateValue::Bytes(b) => {
                    json!(b.iter().map(|x| format!("{x:02x}")).collect::<String>())
                }
                other => panic!("{op} = {other:?}"),
            };
            out.insert(op.to_string(), value);
        }
        Value::Object(out)
    };
    let (array, counter) = counted(path);
    let read = tiledb_runtime::read::aggregate::aggregate;
    let from_metadata = json(read(array.snapshot(), &query, None, &aggregates).unwrap());
    let with = counter.load(Ordering::Relaxed);
    let (array, counter) = counted(path);
    let decoding = tiledb_runtime::read::aggregate::aggregate_decoding;
    let decoded = json(decoding(array.snapshot(), &query, None, &aggregates).unwrap());
    (
        from_metadata,
        decoded,
        with,
        counter.load(Ordering::Relaxed),
    )
}

#[test]
fn string_minimums_and_maximums_come_from_tile_metadata() {
    let Some(python) = common::tiledb_python() else {
        eprintln!("skipped: no tiledb-py venv (.venv-tiledb or $TILEDB_PY)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for kind in ["sparse", "dense"] {
        let path = dir.path().join(kind);
        let uri = path.to_str().unwrap();
        oracle(&python, &["strings", uri, kind]);
        let cases: [&[(i64, i64)]; 3] = [
            &[(1, 20_000)],
            &[(250, 9000)],
            &[(250, 9000), (12_001, 15_000)],
        ];
        for ranges in cases {
            let (from_metadata, decoded, with, without) = string_aggregates(&path, ranges);
            assert_eq!(from_metadata, decoded, "{kind} {ranges:?}: differs decoded");
            assert!(
                with.saturating_mul(4) <= without,
                "{kind} {ranges:?}: from metadata read {with} data bytes, decoding {without}"
            );
            let mut args = vec!["agg_strings".to_string(), uri.to_string()];
            args.extend(ranges.iter().map(|(lo, hi)| format!("{lo}:{hi}")));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let per_range: Vec<Value> = serde_json::from_str(&oracle(&python, &args)).unwrap();
            // Disjoint ranges: counts add up, bounds are the extreme ones
            // (hex keeps the byte order).
            let add = |op: &str| {
                per_range
                    .iter()
                    .map(|r| r[op].as_u64().unwrap())
                    .sum::<u64>()
            };
            let bound = |op: &str| -> Vec<String> {
                per_range
                    .iter()
                    .map(|r| r[op].as_str().unwrap().to_string())
                    .collect()
            };
            let expected = json!({
                "count": add("count"),
                "null_count": add("null_count"),
                "min": bound("min").into_iter().min().unwrap(),
                "max": bound("max").into_iter().max().unwrap(),
            });
            assert_eq!(
                from_metadata, expected,
                "{kind} {ranges:?}: differs from TileDB"
            );
        }
    }
}

/// A dense array (`d` in 0..3999, tiles of 1000) of FLOAT64 `f` with NaN
/// cells and INT64 `b`: tile 0 holds small values, then a NaN, then large
/// ones (TileDB records the minimum and maximum of the cells after the
/// last NaN only: 500 and 999 here); tile 1 has no NaN and the only
/// negative `b`; tile 2 ends in a NaN; tile 3 is all NaN. The script then
/// prints TileDB's cells (`f` as bits or "nan", `b`) of each condition.
const NAN_TILES: &str = r#"
import json, sys
import numpy as np
import tiledb
uri = sys.argv[1]
dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 3999), tile=1000, dtype=np.int64))
tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=False, attrs=[
    tiledb.Attr("f", dtype=np.float64), tiledb.Attr("b", dtype=np.int64)]))
f = np.arange(4000, dtype=np.float64)
f[:400] = 1.0
f[400] = np.nan
f[2999] = np.nan
f[3000:] = np.nan
b = np.arange(4000, dtype=np.int64)
b[1200:1300] = -1
with tiledb.open(uri, "w") as A:
    A[:] = {"f": f, "b": b}
out = []
with tiledb.open(uri) as A:
    for cond in sys.argv[2:]:
        r = A.query(cond=cond, attrs=["f", "b"])[:]
        out.append({"f": ["nan" if np.isnan(v) else str(np.float64(v).view(np.uint64)) for v in r["f"]],
                    "b": [int(v) for v in r["b"]]})
print(json.dumps(out))
"#;

#[test]
fn tiles_holding_nan_are_skipped_only_where_it_is_safe() {
    let Some(python) = common::tiledb_python() else {
        eprintln!("skipped: no tiledb-py venv (.venv-tiledb or $TILEDB_PY)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nan");
    // Each condition and the data bytes a read with skipping must stay
    // under, as a share of the read without (1: no fewer required).
    let conditions: [(&str, f64); 4] = [
        // Tile 0's recorded bounds (500..999) exclude 1.0, but its first
        // cells pass: NaN makes its bounds partial, so it is read.
        ("f < 100.0", 1.0),
        // Only tile 1 can pass, by `b`: the NaN tiles are left out.
        ("b < 0 and f > 0.0", 0.6),
        // Nothing in tile 1 passes `f`; `b` rules out the others.
        ("b < 0 and f > 5000.0", 0.1),
        // NaN passes `!=` only.
        ("f != 2500.0", 1.0),
    ];
    let out = Command::new(&python)
        .args(["-c", NAN_TILES, path.to_str().unwrap()])
        .args(conditions.iter().map(|(c, _)| *c))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let whole = ReadQuery {
        layout: ResultOrder::RowMajor,
        ..ReadQuery::default()
    };
    for ((cond, share), expected) in conditions.iter().zip(&answers) {
        let mut bytes = [0u64; 2];
        for (skip, read_bytes) in [true, false].into_iter().zip(&mut bytes) {
            let (array, counter) = counted(&path);
            let condition = QueryCondition::parse(cond, array.schema())
                .unwrap()
                .skipping_tiles(skip);
            let result = tiledb_runtime::read::read_where(array.snapshot(), &whole, &condition)
                .unwrap_or_else(|e| panic!("{cond}: {e}"));
            *read_bytes = counter.load(Ordering::Relaxed);
            let ours = cells_json(&result);
            for name in ["f", "b"] {
                let (a, t) = (
                    ours[name].as_array().unwrap(),
                    expected[name].as_array().unwrap(),
                );
                assert_eq!(a.len(), t.len(), "{cond} ({name}, skipping {skip}): cells");
                // Ours prints integers as numbers, the script as text for f.
                let text = |v: &Value| v.as_str().map_or(v.to_string(), str::to_string);
                if let Some(i) = (0..a.len()).find(|&i| text(&a[i]) != text(&t[i])) {
                    panic!(
                        "{cond} (skipping {skip}): {name}[{i}] {} TileDB {}",
                        a[i], t[i]
                    );
                }
            }
        }
        let [on, off] = bytes;
        assert!(
            on as f64 <= off as f64 * share,
            "{cond}: skipping read {on} data bytes, not skipping {off}"
        );
    }
}
