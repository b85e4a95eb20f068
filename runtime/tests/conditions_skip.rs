//! Tile skipping under a query condition: a read under a selective
//! condition on a sorted attribute reads the data of far fewer tiles (bytes
//! of data files counted by a wrapping `Storage`), and returns exactly what
//! the same read returns with skipping off — reads, aggregates and batches,
//! including the cases where skipping must not happen (a newer cell that
//! fails hides an older one that passes). The whole conditions_oracle set
//! is also run both ways (`conditions_oracle.rs`).

mod common;

use std::path::Path;
use std::sync::atomic::Ordering;

use common::counting::counted;

use tiledb_runtime::array::Array;
use tiledb_runtime::condition::QueryCondition;
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::read::{batches_where, Aggregate, ReadQuery, ReadResult, ResultOrder};
use tiledb_runtime::schema::{AttributeSpec, DimensionSpec, SchemaBuilder};
use tiledb_runtime::write::{Column, Write};

fn parts(
    result: &ReadResult,
) -> (
    &[tiledb_runtime::read::Column],
    &[tiledb_runtime::read::Column],
) {
    (&result.dimensions, &result.attributes)
}

const CELLS: i64 = 20_000;
const CAPACITY: u64 = 500;

/// A sparse array: INT64 `d` in 1..=CELLS, `v = 3 d` (sorted with `d`),
/// nullable FLOAT64 `f` (null every 7th cell, NaN every 11th); tiles of
/// 500 cells. `dups` allows duplicates.
fn sparse_array(path: &Path, dups: bool) -> Array {
    let schema = SchemaBuilder::sparse()
        .dimension(DimensionSpec::new::<i64>("d", 1, 1 << 30, Some(1 << 20)))
        .attribute(AttributeSpec::new("v", Datatype::Int64))
        .attribute(AttributeSpec::new("f", Datatype::Float64).nullable())
        .capacity(CAPACITY)
        .allows_dups(dups);
    let array = Array::create_path(path, &schema).unwrap();
    write(&array, 1..=CELLS, 1, |d| 3 * d);
    array
}

fn write(array: &Array, d: std::ops::RangeInclusive<i64>, at: u64, v: impl Fn(i64) -> i64) {
    let d: Vec<i64> = d.collect();
    let values: Vec<i64> = d.iter().map(|&x| v(x)).collect();
    let mut f = tiledb_runtime::read::Column::new("f", Datatype::Float64, Some(1), true);
    for &x in &d {
        let value = if x % 11 == 0 {
            f64::NAN
        } else {
            x as f64 / 2.0
        };
        f.push(&value.to_le_bytes(), x % 7 != 0);
    }
    let write = Write::sparse(vec![
        Column::from_values("d", &d),
        Column::from_values("v", &values),
        f,
    ])
    .at(at);
    array.write(&write).unwrap();
}

/// Reads `cond` with skipping on and off; both results must be equal.
/// Returns the result and the data bytes read by each.
fn both_ways(path: &Path, cond: &str, layout: ResultOrder) -> (ReadResult, u64, u64) {
    let mut out = Vec::new();
    for skip in [true, false] {
        let (array, counter) = counted(path);
        let condition = QueryCondition::parse(cond, array.schema())
            .unwrap()
            .skipping_tiles(skip);
        let query = ReadQuery {
            layout,
            ..ReadQuery::default()
        };
        let result = tiledb_runtime::read::read_where(array.snapshot(), &query, &condition)
            .unwrap_or_else(|e| panic!("{cond}: {e}"));
        let read = counter.load(Ordering::Relaxed);
        // Aggregates and batches under the condition: the same both ways.
        let builder = array.query().with_condition(condition.clone());
        let aggregates: Vec<Aggregate> = ["count", "sum:v", "min:v", "max:v", "null_count:f"]
            .iter()
            .map(|a| Aggregate::parse(a).unwrap())
            .collect();
        let answers = builder.aggregate(&aggregates).unwrap();
        let mut batched: Option<ReadResult> = None;
        for batch in batches_where(array.snapshot(), &query, Some(&condition), 64 << 10).unwrap() {
            let batch = batch.unwrap();
            match &mut batched {
                None => batched = Some(batch),
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
        out.push((result, read, format!("{answers:?}"), batched));
    }
    let (off, on) = (out.pop().unwrap(), out.pop().unwrap());
    assert!(
        parts(&on.0) == parts(&off.0),
        "{cond}: the read differs with skipping on"
    );
    assert_eq!(
        on.2, off.2,
        "{cond}: the aggregates differ with skipping on"
    );
    for (way, (result, _, _, batched)) in [("on", &on), ("off", &off)] {
        match batched {
            Some(batched) => assert!(
                parts(batched) == parts(result),
                "{cond}: the batches with skipping {way} differ from the read"
            ),
            None => assert_eq!(result.cell_count(), 0, "{cond}: no batches"),
        }
    }
    (on.0, on.1, off.1)
}

#[test]
fn a_selective_condition_on_a_sorted_attribute_reads_few_tiles() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a");
    sparse_array(&path, false);
    let tiles = (CELLS as u64).div_ceil(CAPACITY);
    for layout in [ResultOrder::Global, ResultOrder::RowMajor] {
        // v < 1500: the first tile only (v = 3 d, 500 cells a tile).
        let (result, on, off) = both_ways(&path, "v < 1500", layout);
        assert_eq!(result.cell_count(), 499);
        assert!(
            on * tiles / 4 <= off,
            "skipping read {on} data bytes, not skipping {off}: not far fewer tiles"
        );
        // Either end of the array, in two tiles.
        let (result, on, off) = both_ways(&path, "v <= 3 or v >= 59998", layout);
        assert_eq!(result.cell_count(), 1 + 1);
        assert!(on * tiles / 8 <= off, "{on} vs {off}");
    }
    // Conditions no tile can be ruled out for read every tile: still equal.
    for cond in [
        "v != 3",
        "f != 1.5",
        "f == None",
        "v > 0 and f != None",
        "not (v < 1500)",
        "v in [3, 30000, 59997]",
        "d < 600 and v > 3",
        "f > 9999.0 or f < 0.0",
        "f not in [0.5]",
    ] {
        both_ways(&path, cond, ResultOrder::Global);
    }
    // Ruled out whole: every bound is outside; nothing decoded.
    let (result, on, _) = both_ways(&path, "v > 60000 or d < 0", ResultOrder::Global);
    assert_eq!((result.cell_count(), on), (0, 0));
}

#[test]
fn a_newer_failing_cell_still_hides_an_older_one() {
    let dir = tempfile::tempdir().unwrap();
    for dups in [false, true] {
        let path = dir.path().join(format!("dups-{dups}"));
        let array = sparse_array(&path, dups);
        // A newer fragment overwrites d 1..=100 with values that fail v > 0;
        // without duplicates, the old cells must stay hidden.
        write(&array, 1..=100, 2, |_| -1);
        // A third fragment apart from the others: ruled out whole by v > 0.
        write(&array, 1_000_000..=1_000_999, 3, |_| -5);
        let (result, on, off) = both_ways(&path, "v > 0", ResultOrder::Global);
        let expected = if dups { CELLS } else { CELLS - 100 };
        assert_eq!(result.cell_count() as i64, expected, "dups {dups}");
        assert!(on < off, "the fragment apart is not read: {on} vs {off}");
        both_ways(&path, "v < 0", ResultOrder::RowMajor);
        both_ways(&path, "v == -1 or v > 59000", ResultOrder::Unordered);
    }
}

/// The aggregates of `query` (no condition) from metadata and with every
/// tile decoded: equal answers; the data bytes each read.
fn aggregates_both_ways(path: &Path, query: &ReadQuery) -> (Vec<String>, u64, u64) {
    let aggregates: Vec<Aggregate> = ["count", "sum:v", "min:v", "max:v", "mean:v", "null_count:f"]
        .iter()
        .map(|a| Aggregate::parse(a).unwrap())
        .collect();
    let (array, counter) = counted(path);
    let from_metadata =
        tiledb_runtime::read::aggregate::aggregate(array.snapshot(), query, None, &aggregates)
            .unwrap();
    let with_metadata = counter.load(Ordering::Relaxed);
    let (array, counter) = counted(path);
    let decoded = tiledb_runtime::read::aggregate::aggregate_decoding(
        array.snapshot(),
        query,
        None,
        &aggregates,
    )
    .unwrap();
    let decoding = counter.load(Ordering::Relaxed);
    let show = |v: &[tiledb_runtime::read::AggregateValue]| -> Vec<String> {
        v.iter().map(|v| format!("{v:?}")).collect()
    };
    assert_eq!(show(&from_metadata), show(&decoded), "{query:?}");
    (show(&from_metadata), with_metadata, decoding)
}

#[test]
fn aggregates_over_whole_tiles_come_from_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a");
    let array = sparse_array(&path, false);
    // The whole array: nothing decoded.
    let (answers, with, without) = aggregates_both_ways(&path, &ReadQuery::default());
    assert_eq!(answers[0], format!("UInt({CELLS})"));
    assert_eq!(answers[1], format!("Int({})", 3 * CELLS * (CELLS + 1) / 2));
    assert_eq!((with, without > 0), (0, true), "{answers:?}");
    // A subarray: the two tiles it cuts are decoded, the nineteen inside not.
    let query = ReadQuery {
        ranges: vec![vec![(
            250i64.to_le_bytes().to_vec(),
            10_249i64.to_le_bytes().to_vec(),
        )]],
        ..ReadQuery::default()
    };
    let (answers, with, without) = aggregates_both_ways(&path, &query);
    assert_eq!(answers[0], "UInt(10000)");
    assert_eq!(answers[2], "Int(750)");
    assert!(with > 0 && with * 8 <= without, "{with} vs {without}");
    // A newer fragment over the first hundred cells: the tile it meets is
    // decoded (its cells are hidden), the others still from metadata.
    write(&array, 1..=100, 2, |_| -1);
    let (answers, with, without) = aggregates_both_ways(&path, &ReadQuery::default());
    assert_eq!(answers[0], format!("UInt({CELLS})"));
    assert_eq!(answers[2], "Int(-1)");
    assert!(with > 0 && with * 8 <= without, "{with} vs {without}");
}

/// TileDB's count, sum, min and max of `v` (no condition) over each of
/// `ranges` of `d`, read by tiledb-py; `None` without the oracle venv.
fn tiledb_aggregates_per_range(path: &Path, ranges: &[(i64, i64)]) -> Option<Vec<[i64; 4]>> {
    let python = common::tiledb_python()?;
    let script = r#"
import json, sys, tiledb
out = []
with tiledb.open(sys.argv[1]) as A:
    for r in sys.argv[2:]:
        lo, hi = (int(x) for x in r.split(":"))
        a = A.query().agg({"v": ["count", "sum", "min", "max"]})[lo:hi + 1]
        out.append([int(a[op]) for op in ["count", "sum", "min", "max"]])
print(json.dumps(out))
"#;
    let mut command = std::process::Command::new(python);
    command.arg("-c").arg(script).arg(path);
    command.args(ranges.iter().map(|(lo, hi)| format!("{lo}:{hi}")));
    let out = command.output().expect("run tiledb-py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn aggregates_over_several_ranges_come_from_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a");
    sparse_array(&path, false);
    let bytes = |x: i64| x.to_le_bytes().to_vec();
    // Two ranges cutting a tile at each end: the tiles inside one range
    // from metadata, the cut ones decoded. Then overlapping ranges: the
    // tiles both meet are decoded too.
    for (ranges, fewer) in [
        (vec![(250, 5000), (8001, 12_250)], 4),
        (vec![(1, 6000), (5001, 12_000)], 4),
    ] {
        let query = ReadQuery {
            ranges: vec![ranges
                .iter()
                .map(|&(lo, hi)| (bytes(lo), bytes(hi)))
                .collect()],
            ..ReadQuery::default()
        };
        let (answers, with, without) = aggregates_both_ways(&path, &query);
        assert!(
            with > 0 && with * fewer <= without,
            "{ranges:?}: {with} vs {without}"
        );
        if ranges[1].0 <= ranges[0].1 {
            continue; // TileDB's answer is not a sum over its ranges.
        }
        let Some(per_range) = tiledb_aggregates_per_range(&path, &ranges) else {
            eprintln!("no tiledb-py venv: TileDB's answer not compared");
            continue;
        };
        let total =
            |i: usize, f: fn(i64, i64) -> i64| per_range.iter().map(|r| r[i]).reduce(f).unwrap();
        let expected = [
            format!("UInt({})", total(0, |a, b| a + b)),
            format!("Int({})", total(1, |a, b| a + b)),
            format!("Int({})", total(2, i64::min)),
            format!("Int({})", total(3, i64::max)),
        ];
        assert_eq!(answers[..4], expected, "{ranges:?}: differs from TileDB");
    }
}
