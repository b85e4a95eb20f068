//! Arrow results against TileDB's: tiledb-py's `return_arrow=True` tables
//! (`tests/arrow/oracle.py`, written to Arrow IPC files) must equal our
//! record batches for the same reads — Arrow equality of every column, not
//! JSON — over the TileDB 2.30 corpus and over random arrays written by
//! tiledb-py (`conformance/scripts/random_arrays.py`) in this test.
//!
//! Where tiledb-py's table is not a faithful one, the test checks our
//! mapping instead and says so: `TIME_SEC`/`TIME_MS` (tiledb-py says
//! `Time32` but hands over the 64-bit values unconverted; ours are
//! `Duration`s holding the stored values) and the multi-value cells
//! tiledb-py takes (complex64, a flat column of values with one row per
//! value; ours a `FixedSizeList` whose values must equal that column).
//! Fields tiledb-py refuses are listed by the oracle with its error.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use arrow_array::cast::AsArray;
use arrow_array::{Array as _, RecordBatch};
use arrow_ipc::reader::FileReader;
use arrow_schema::{DataType, TimeUnit};
use serde_json::Value;
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::read::arrow::record_batch;
use tiledb_runtime::read::{ResultOrder, TypedResult};
use tiledb_runtime::ErrorClass;

/// TileDB's table and what it read, for one array.
struct Oracle {
    spec: Value,
    batch: Option<RecordBatch>,
}

/// Runs the oracle on `arrays`; `None` when there is no tiledb-py.
fn oracle(arrays: &[PathBuf]) -> Option<Vec<Oracle>> {
    let python = common::tiledb_python()?;
    let out = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/arrow/oracle.py");
    let status = Command::new(python)
        .arg(&script)
        .arg(out.path())
        .args(arrays)
        .env("PYTHONWARNINGS", "ignore")
        .status()
        .expect("the oracle runs");
    assert!(status.success(), "the oracle failed");
    Some(
        (0..arrays.len())
            .map(|i| {
                let spec: Value = serde_json::from_reader(
                    File::open(out.path().join(format!("{i}.json"))).unwrap(),
                )
                .unwrap();
                let ipc = out.path().join(format!("{i}.arrow"));
                let batch = ipc.exists().then(|| {
                    let reader = FileReader::try_new(File::open(&ipc).unwrap(), None).unwrap();
                    let schema = reader.schema();
                    let mut batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
                    assert!(batches.len() <= 1, "the oracle writes one batch");
                    batches
                        .pop()
                        .unwrap_or_else(|| RecordBatch::new_empty(schema))
                });
                Oracle { spec, batch }
            })
            .collect(),
    )
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Our batch for the oracle's read; `Err` names the first difference.
fn compare(oracle: &Oracle) -> Result<usize, String> {
    let spec = &oracle.spec;
    let expected = oracle.batch.as_ref().expect("a table");
    let path = spec["array"].as_str().unwrap();
    let array = Array::open_path(path, OpenOptions::default()).map_err(|e| e.to_string())?;
    let order = match spec["order"].as_str() {
        Some("G") => ResultOrder::Global,
        _ => ResultOrder::RowMajor,
    };
    let typed = array
        .query()
        .attributes(names(&spec["attrs"]))
        .order(order)
        .read()
        .map_err(|e| e.to_string())?;
    for (field, theirs) in expected.schema().fields().iter().zip(expected.columns()) {
        typed_equal(&typed, field.name(), theirs.as_ref())
            .map_err(|e| format!("typed {}: {e}", field.name()))?;
    }
    let ours = typed.into_record_batch().map_err(|e| e.to_string())?;
    let mut compared = 0;
    for (field, theirs) in expected.schema().fields().iter().zip(expected.columns()) {
        let name = field.name();
        let mine = ours
            .column_by_name(name)
            .ok_or_else(|| format!("no column {name}"))?;
        if let DataType::Time32(unit) = field.data_type() {
            println!(
                "{path}: {name}: tiledb-py's Time32 holds unconverted values; ours is a Duration"
            );
            if mine.data_type() != &DataType::Duration(*unit) || mine.len() != ours.num_rows() {
                return Err(format!("{name}: type {}", mine.data_type()));
            }
            continue;
        }
        if let DataType::FixedSizeList(item, _) = mine.data_type() {
            if item.data_type() == field.data_type() {
                println!("{path}: {name}: tiledb-py's flat values against our FixedSizeList");
                let list = mine.as_fixed_size_list();
                if list.values().to_data() != theirs.to_data() {
                    return Err(format!("{name}: the values of the lists differ"));
                }
                compared += 1;
                continue;
            }
        }
        if mine.len() != theirs.len() {
            return Err(format!(
                "{name}: {} rows, TileDB {}",
                mine.len(),
                theirs.len()
            ));
        }
        if mine.data_type() != field.data_type() {
            return Err(format!(
                "{name}: type {}, TileDB {}",
                mine.data_type(),
                field.data_type()
            ));
        }
        if mine.to_data() != theirs.to_data() {
            return Err(format!(
                "{name}: values differ:\n ours {mine:?}\n TileDB {theirs:?}"
            ));
        }
        compared += 1;
    }
    // Coordinates come only with dims; TileDB returned them all or said why not.
    let dims = names(&spec["dims"]);
    let dropped = spec["dropped"].as_object().cloned().unwrap_or_default();
    for d in &array.schema().dimensions {
        if !dims.contains(&d.name) && !dropped.contains_key(&d.name) {
            return Err(format!("TileDB gave no column {} and no reason", d.name));
        }
    }
    every_field_maps(&array)?;
    Ok(compared)
}

/// Every field — those tiledb-py refuses too — becomes an Arrow column of
/// the type `arrow_schema` gives it, holding the stored bytes: values
/// (children's values for lists), byte offsets as value offsets, validity.
fn every_field_maps(array: &Array) -> Result<(), String> {
    let schema = array.arrow_schema();
    let raw = match array.query().read() {
        Ok(result) => result.into_raw(),
        // The negative cases: TileDB read the fields it could, we refuse the array.
        Err(e) if e.class() == ErrorClass::Corrupt => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    let columns: Vec<_> = raw
        .dimensions
        .iter()
        .chain(&raw.attributes)
        .cloned()
        .collect();
    let batch = match record_batch(array.schema(), raw) {
        Ok(batch) => batch,
        // Days beyond Date32's ±5.8 million years (the corpus stores ±2^62):
        // no Arrow date holds them; refused, not wrapped.
        Err(e)
            if e.to_string()
                .contains("does not fit Arrow's 32-bit DATETIME_DAY") =>
        {
            println!("{e}");
            return Ok(());
        }
        Err(e) => return Err(format!("all fields: {e}")),
    };
    for column in &columns {
        let name = &column.name;
        let field = schema.field_with_name(name).map_err(|e| e.to_string())?;
        let ours = batch.column_by_name(name).unwrap();
        if ours.data_type() != field.data_type() {
            return Err(format!(
                "{name}: {} but the schema says {}",
                ours.data_type(),
                field.data_type()
            ));
        }
        let data = ours.to_data();
        let (values, offsets) = match ours.data_type() {
            DataType::Date32 | DataType::Dictionary(_, _) => continue,
            DataType::LargeUtf8 | DataType::LargeBinary => {
                (&data.buffers()[1], Some(&data.buffers()[0]))
            }
            DataType::LargeList(_) => {
                (&data.child_data()[0].buffers()[0], Some(&data.buffers()[0]))
            }
            DataType::FixedSizeList(_, _) => (&data.child_data()[0].buffers()[0], None),
            _ => (&data.buffers()[0], None),
        };
        if values.as_slice() != column.data.as_slice() {
            return Err(format!("{name}: the Arrow values are not the stored bytes"));
        }
        if let (Some(arrow_offsets), Some(stored)) = (offsets, &column.offsets) {
            let size = match ours.data_type() {
                DataType::LargeList(_) => column.datatype.size(),
                _ => 1,
            };
            let expected: Vec<i64> = stored.iter().map(|&o| (o / size) as i64).collect();
            if arrow_offsets.typed_data::<i64>() != expected.as_slice() {
                return Err(format!("{name}: offsets differ"));
            }
        }
        let valid: Vec<bool> = (0..ours.len()).map(|i| ours.is_valid(i)).collect();
        let stored: Vec<bool> = (0..column.len()).map(|i| column.is_valid(i)).collect();
        if valid != stored {
            return Err(format!("{name}: validity differs"));
        }
    }
    Ok(())
}

#[test]
fn buffers_move_into_arrow_without_a_copy() {
    let path = common::workspace()
        .join("conformance/corpus/tiledb-2.30/sparse.attr.var_utf8.nullable.zstd/array");
    let array = Array::open_path(path, OpenOptions::default()).unwrap();
    let result = array.query().read().unwrap();
    let (d0, s) = (result.column("d0").unwrap(), result.column("s").unwrap());
    let (d0_data, s_data, s_offsets) = (
        d0.data.as_ptr() as usize,
        s.data.as_ptr() as usize,
        s.offsets.as_ref().unwrap().as_ptr() as usize,
    );
    let batch = result.into_record_batch().unwrap();
    let d0 = batch.column_by_name("d0").unwrap().to_data();
    let s = batch.column_by_name("s").unwrap().to_data();
    assert_eq!(
        d0.buffers()[0].as_ptr() as usize,
        d0_data,
        "coordinates moved"
    );
    assert_eq!(
        s.buffers()[1].as_ptr() as usize,
        s_data,
        "string bytes moved"
    );
    assert_eq!(
        s.buffers()[0].as_ptr() as usize,
        s_offsets,
        "offsets rewritten in place"
    );
}

/// The typed accessors give TileDB's values: numbers as slices, strings,
/// timestamps and validity.
fn typed_equal(
    typed: &TypedResult,
    name: &str,
    theirs: &dyn arrow_array::Array,
) -> Result<(), String> {
    use arrow_array::types::*;
    let e = |e: tiledb_runtime::Error| e.to_string();
    let valid: Vec<bool> = (0..theirs.len()).map(|i| theirs.is_valid(i)).collect();
    if let Some(validity) = typed.validity(name).map_err(e)? {
        let ours: Vec<bool> = validity.iter().map(|&v| v != 0).collect();
        if ours != valid {
            return Err("validity differs".into());
        }
    }
    macro_rules! numbers {
        ($t:ty, $a:ty) => {{
            let ours = typed.values::<$t>(name).map_err(e)?;
            let theirs = theirs.as_primitive::<$a>().values();
            let same = ours.len() == theirs.len()
                && ours
                    .iter()
                    .zip(theirs.iter())
                    .zip(&valid)
                    .all(|((a, b), v)| !v || a.to_ne_bytes() == b.to_ne_bytes());
            if !same {
                return Err(format!("values {ours:?}, TileDB {theirs:?}"));
            }
        }};
    }
    match theirs.data_type() {
        DataType::Int8 => numbers!(i8, Int8Type),
        DataType::UInt8 => numbers!(u8, UInt8Type),
        DataType::Int16 => numbers!(i16, Int16Type),
        DataType::UInt16 => numbers!(u16, UInt16Type),
        DataType::Int32 => numbers!(i32, Int32Type),
        DataType::UInt32 => numbers!(u32, UInt32Type),
        DataType::Int64 => numbers!(i64, Int64Type),
        DataType::UInt64 => numbers!(u64, UInt64Type),
        DataType::Float32 if typed.column(name).map_err(e)?.cell_val_num == Some(1) => {
            numbers!(f32, Float32Type);
        }
        DataType::Float64 => numbers!(f64, Float64Type),
        DataType::LargeUtf8 => {
            let ours: Vec<Option<&str>> = typed.strings(name).map_err(e)?.collect();
            let theirs: Vec<Option<&str>> = theirs.as_string::<i64>().iter().collect();
            if ours != theirs {
                return Err(format!("strings {ours:?}, TileDB {theirs:?}"));
            }
        }
        DataType::Time64(unit) => {
            let ours = typed.durations(name).map_err(e)?;
            let (counts, scale): (&[i64], i128) = match unit {
                TimeUnit::Microsecond => (
                    theirs.as_primitive::<Time64MicrosecondType>().values(),
                    1_000,
                ),
                _ => (theirs.as_primitive::<Time64NanosecondType>().values(), 1),
            };
            for (i, d) in ours.iter().enumerate() {
                let expected = theirs.is_valid(i).then(|| counts[i] as i128 * scale);
                if d.map(|d| d.as_nanos()) != expected {
                    return Err(format!("cell {i}: {d:?}, TileDB {expected:?} ns"));
                }
            }
        }
        DataType::Timestamp(unit, _) => {
            let ours = typed.timestamps(name);
            let (counts, scale): (&[i64], i128) = match unit {
                TimeUnit::Second => (
                    theirs.as_primitive::<TimestampSecondType>().values(),
                    1_000_000_000,
                ),
                TimeUnit::Millisecond => (
                    theirs.as_primitive::<TimestampMillisecondType>().values(),
                    1_000_000,
                ),
                TimeUnit::Microsecond => (
                    theirs.as_primitive::<TimestampMicrosecondType>().values(),
                    1_000,
                ),
                TimeUnit::Nanosecond => {
                    (theirs.as_primitive::<TimestampNanosecondType>().values(), 1)
                }
            };
            let in_jiff =
                |i: usize| jiff::Timestamp::from_nanosecond(counts[i] as i128 * scale).is_ok();
            let ours = match ours {
                Ok(ours) => ours,
                // Refused only for a value jiff cannot hold; the raw values are TileDB's.
                Err(refusal) => {
                    let raw = typed.values::<i64>(name).map_err(e)?;
                    let beyond = (0..counts.len()).any(|i| theirs.is_valid(i) && !in_jiff(i));
                    if !beyond || *raw != *counts {
                        return Err(format!("{refusal}, though TileDB's values fit jiff"));
                    }
                    return Ok(());
                }
            };
            if ours.len() != counts.len() {
                return Err(format!(
                    "{} timestamps, TileDB {}",
                    ours.len(),
                    counts.len()
                ));
            }
            for (i, t) in ours.iter().enumerate() {
                let expected = theirs.is_valid(i).then(|| counts[i] as i128 * scale);
                if t.map(jiff::Timestamp::as_nanosecond) != expected {
                    return Err(format!("cell {i}: {t:?}, TileDB {expected:?} ns"));
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn check_all(oracles: &[Oracle], what: &str) -> usize {
    let mut failures = Vec::new();
    let (mut arrays, mut columns) = (0, 0);
    for o in oracles {
        if o.batch.is_none() {
            println!("{}: skipped: {}", o.spec["array"], o.spec["skipped"]);
            continue;
        }
        for (field, why) in o.spec["dropped"].as_object().into_iter().flatten() {
            println!(
                "{}: {field}: TileDB returns no Arrow: {why}",
                o.spec["array"]
            );
        }
        match compare(o) {
            Ok(n) => {
                arrays += 1;
                columns += n;
            }
            Err(e) => failures.push(format!("{}: {e}", o.spec["array"])),
        }
    }
    println!("{what}: {arrays} arrays, {columns} columns equal to TileDB's Arrow tables");
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    columns
}

/// The arrays of the TileDB 2.30 corpus (the folder each case reads).
fn corpus_arrays() -> Vec<PathBuf> {
    let corpus = common::workspace().join("conformance/corpus/tiledb-2.30");
    let mut arrays: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path().join("array"))
        .filter(|p| p.join("__schema").is_dir())
        .collect();
    arrays.sort();
    arrays
}

#[test]
fn corpus_arrow_equals_tiledb_py() {
    let arrays = corpus_arrays();
    assert!(arrays.len() > 100, "the corpus has its arrays");
    let Some(oracles) = oracle(&arrays) else {
        println!("skipped: no TileDB oracle (.venv-tiledb in the workspace, or $TILEDB_PY)");
        return;
    };
    let columns = check_all(&oracles, "corpus");
    assert!(
        columns > 200,
        "most corpus columns are compared ({columns})"
    );
}

#[test]
fn random_arrays_arrow_equals_tiledb_py() {
    let Some(python) = common::tiledb_python() else {
        println!("skipped: no TileDB oracle (.venv-tiledb in the workspace, or $TILEDB_PY)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = common::workspace().join("conformance/scripts/random_arrays.py");
    let mut arrays = Vec::new();
    for seed in [11, 12, 13] {
        let status = Command::new(&python)
            .arg(&script)
            .args([&seed.to_string(), "6"])
            .arg(dir.path())
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "random_arrays.py {seed}");
    }
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let case = entry.unwrap().path();
        let encrypted = std::fs::read_to_string(case.join("case.json"))
            .is_ok_and(|c| c.contains("\"encryption\""));
        if case.join("array/__schema").is_dir() && !encrypted {
            arrays.push(case.join("array"));
        }
    }
    arrays.sort();
    assert!(arrays.len() >= 12, "random arrays were written");
    let oracles = oracle(&arrays).expect("the oracle");
    let columns = check_all(&oracles, "random");
    assert!(columns >= 12, "random columns are compared ({columns})");
}

/// One typed read and the same read for tiledb-py.
struct RangeRead {
    case: &'static str,
    oracle: Value,
    ours: fn(&Array) -> tiledb_runtime::Result<TypedResult>,
}

fn range_reads() -> Vec<RangeRead> {
    use jiff::civil::date;
    use serde_json::json;
    let r = |case, ranges: Value, attrs: Value, order: &str, ours| RangeRead {
        case,
        oracle: json!({"ranges": ranges, "attrs": attrs, "order": order}),
        ours,
    };
    vec![
        r(
            "sparse.dim.int32",
            json!([["d", [[-5, 0], [3, 2147483646]]]]),
            json!(["a"]),
            "C",
            |a| {
                a.query()
                    .ranges("d", [-5..=0, 3..=2147483646])?
                    .attributes(["a"])
                    .order(ResultOrder::RowMajor)
                    .read()
            },
        ),
        r(
            "sparse.dim.string_ascii",
            json!([["d", [["a", "az"]]]]),
            json!(["a"]),
            "C",
            |a| a.query().range("d", "a"..="az")?.attributes(["a"]).read(),
        ),
        r(
            "sparse.dim.float64",
            json!([["d", [[-1.0, 3.25]]]]),
            json!(["a"]),
            "C",
            |a| a.query().range("d", -1.0..=3.25)?.read(),
        ),
        r(
            "sparse.dim.datetime_ms",
            json!([[
                "d",
                [["1969-12-31T23:59:59.999", "1970-01-01T00:00:12.345"]]
            ]]),
            json!(["a"]),
            "C",
            |a| {
                let lo: jiff::Timestamp = "1969-12-31T23:59:59.999Z".parse().unwrap();
                let hi: jiff::Timestamp = "1970-01-01T00:00:12.345Z".parse().unwrap();
                a.query().range("d", lo..=hi)?.read()
            },
        ),
        // Days from the epoch on: TileDB's Arrow output refuses dates before
        // it ("Non-zero data detected": it narrows days by dropping the high half).
        r(
            "dense.dim.datetime_day",
            json!([["d", [["1970-01-01", "1970-01-03"]]]]),
            json!(["a"]),
            "C",
            |a| {
                a.query()
                    .range("d", date(1970, 1, 1)..=date(1970, 1, 3))?
                    .read()
            },
        ),
        r(
            "dense.dim.int32",
            json!([["d", [[-1, 0], [2, 3]]]]),
            json!(["a"]),
            "F",
            |a| {
                a.query()
                    .ranges("d", [-1..=0, 2..=3])?
                    .order(ResultOrder::ColMajor)
                    .read()
            },
        ),
        r(
            "sparse.attr.var_utf8.nullable.zstd",
            json!([["d0", [[5, 50]]]]),
            json!(["s"]),
            "C",
            |a| a.query().range("d0", 5..=50)?.attributes(["s"]).read(),
        ),
    ]
}

#[test]
fn typed_range_reads_equal_tiledb_py() {
    let Some(python) = common::tiledb_python() else {
        println!("skipped: no TileDB oracle (.venv-tiledb in the workspace, or $TILEDB_PY)");
        return;
    };
    let corpus = common::workspace().join("conformance/corpus/tiledb-2.30");
    let reads = range_reads();
    let oracle_reads: Vec<Value> = reads
        .iter()
        .map(|r| {
            let mut v = r.oracle.clone();
            v["array"] = corpus.join(r.case).join("array").to_str().unwrap().into();
            v
        })
        .collect();
    let out = tempfile::tempdir().unwrap();
    let reads_file = out.path().join("reads.json");
    std::fs::write(&reads_file, serde_json::to_string(&oracle_reads).unwrap()).unwrap();
    let status = Command::new(python)
        .arg(common::workspace().join("runtime/tests/arrow/oracle.py"))
        .arg("--reads")
        .arg(&reads_file)
        .arg(out.path())
        .env("PYTHONWARNINGS", "ignore")
        .status()
        .unwrap();
    assert!(status.success(), "the oracle failed");
    for (i, read) in reads.iter().enumerate() {
        let file = File::open(out.path().join(format!("{i}.arrow"))).unwrap();
        let reader = FileReader::try_new(file, None).unwrap();
        let schema = reader.schema();
        let theirs = reader
            .map(Result::unwrap)
            .next()
            .unwrap_or_else(|| RecordBatch::new_empty(schema));
        assert!(
            theirs.num_rows() > 0,
            "{}: the read selects cells",
            read.case
        );
        let array =
            Array::open_path(corpus.join(read.case).join("array"), OpenOptions::default()).unwrap();
        let typed = (read.ours)(&array).unwrap();
        for (field, column) in theirs.schema().fields().iter().zip(theirs.columns()) {
            typed_equal(&typed, field.name(), column.as_ref())
                .unwrap_or_else(|e| panic!("{}: typed {}: {e}", read.case, field.name()));
        }
        let ours = typed.into_record_batch().unwrap();
        assert_eq!(ours.num_rows(), theirs.num_rows(), "{}", read.case);
        for (field, column) in theirs.schema().fields().iter().zip(theirs.columns()) {
            let mine = ours.column_by_name(field.name()).unwrap();
            assert_eq!(
                mine.to_data(),
                column.to_data(),
                "{}: {}",
                read.case,
                field.name()
            );
        }
    }
}
