//! The typed read API refuses every mismatch between a Rust type and a
//! field's datatype with a usage error — never a conversion — and hands
//! out numbers without copying them. (Its results are compared with
//! tiledb-py's in `read_arrow.rs`.)

mod common;

use std::borrow::Cow;
use std::ops::RangeInclusive;

use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::read::{ReadQuery, ResultOrder};
use tiledb_runtime::{Error, ErrorClass};

fn corpus(case: &str) -> Array {
    let path = common::workspace()
        .join("conformance/corpus/tiledb-2.30")
        .join(case)
        .join("array");
    Array::open_path(path, OpenOptions::default()).unwrap()
}

/// A usage error whose message mentions `needle`.
fn assert_usage<T: std::fmt::Debug>(result: Result<T, Error>, needle: &str) {
    let err = result.expect_err("a usage error");
    assert_eq!(err.class(), ErrorClass::Usage, "{err}");
    assert!(err.to_string().contains(needle), "{err:?} lacks {needle:?}");
}

#[test]
fn f64_bounds_on_an_int32_dimension_are_refused() {
    // sparse.dim.int32: dimension d is INT32.
    let array = corpus("sparse.dim.int32");
    assert_usage(
        array.query().range("d", 0.5..=7.0),
        "an f64 cannot bound dimension \"d\" of type INT32",
    );
    // The raw API: 8-byte bounds on a 4-byte dimension were read as their
    // first 4 bytes; now refused too.
    let query = ReadQuery {
        ranges: vec![vec![(
            0.5f64.to_le_bytes().to_vec(),
            7.0f64.to_le_bytes().to_vec(),
        )]],
        ..ReadQuery::default()
    };
    assert_usage(array.read(&query), "8- and 8-byte bounds");
}

#[test]
fn mismatched_bound_types_are_refused() {
    let ints = corpus("sparse.dim.int32");
    assert_usage(ints.query().range("d", "a"..="c"), "a string cannot bound");
    assert_usage(ints.query().range("d", 0.5f32..=1.0), "an f32 cannot bound");
    let ts: jiff::Timestamp = "2020-01-01T00:00:00Z".parse().unwrap();
    assert_usage(ints.query().range("d", ts..=ts), "a timestamp cannot bound");
    assert_usage(
        ints.query().range("d", 1i64..=(1i64 << 40)),
        "does not fit dimension",
    );
    assert_usage(
        ints.query().range("d", RangeInclusive::new(5, 1)),
        "low bound above its high bound",
    );
    assert_usage(
        ints.query().range("nope", 1..=2),
        "no dimension named \"nope\"",
    );

    let strings = corpus("sparse.dim.string_ascii");
    assert_usage(strings.query().range("d", 1..=2), "an integer cannot bound");

    let int8 = corpus("sparse.dim.int8");
    assert_usage(int8.query().range("d", 0..=300), "300 does not fit");

    let float32 = corpus("sparse.dim.float32");
    assert_usage(
        float32.query().range("d", 0.1f64..=1.0),
        "not exactly a FLOAT32",
    );
    assert!(
        float32.query().range("d", 0.5f64..=1.0).is_ok(),
        "0.5 is a FLOAT32"
    );

    let days = corpus("dense.dim.datetime_day");
    let noon: jiff::Timestamp = "1970-01-02T12:00:00Z".parse().unwrap();
    assert_usage(
        days.query().range("d", noon..=noon),
        "no whole number of DATETIME_DAY",
    );
    assert_usage(days.query().range("d", 0.0..=1.0), "an f64 cannot bound");
    assert_usage(
        days.query()
            .range("d", jiff::SignedDuration::ZERO..=jiff::SignedDuration::ZERO),
        "a duration cannot bound",
    );
}

#[test]
fn unknown_fields_are_refused() {
    let array = corpus("sparse.dim.int32");
    assert_usage(
        array.query().attributes(["nope"]).read(),
        "no attribute named \"nope\"",
    );
    let result = array.query().read().unwrap();
    assert_usage(result.values::<i32>("nope"), "no field named \"nope\"");
}

#[test]
fn wrong_result_types_are_refused() {
    // sparse.dim.int32: d INT32, a INT32.
    let result = corpus("sparse.dim.int32").query().read().unwrap();
    assert_usage(result.values::<f64>("a"), "holds no f64 values");
    assert_usage(result.values::<i64>("a"), "holds no i64 values");
    assert_usage(result.values::<u32>("d"), "holds no u32 values");
    assert_usage(result.strings("a").map(Iterator::count), "holds no strings");
    assert_usage(result.timestamps("a"), "holds no dates or times");
    assert_usage(
        result.var_cells::<i32>("a").map(|c| c.len()),
        "fixed-size cells",
    );

    let strings = corpus("sparse.attr.var_utf8.nullable.zstd")
        .query()
        .read()
        .unwrap();
    assert_usage(strings.values::<i32>("s"), "holds no i32 values");
}

#[test]
fn numbers_are_borrowed_not_copied() {
    let result = corpus("sparse.dim.int32")
        .query()
        .order(ResultOrder::RowMajor)
        .read()
        .unwrap();
    let values = result.values::<i32>("a").unwrap();
    let column = result.column("a").unwrap();
    assert!(
        matches!(values, Cow::Borrowed(_)),
        "an allocation is aligned for i32"
    );
    assert_eq!(values.as_ptr() as *const u8, column.data.as_ptr());
    assert_eq!(values.len(), result.len());
    assert!(!values.is_empty());
}

#[test]
fn var_sized_cells_and_validity() {
    // sparse.attr.var_numeric.nullable: vi INT64 var nullable, vf FLOAT32 var.
    let result = corpus("sparse.attr.var_numeric.nullable")
        .query()
        .read()
        .unwrap();
    for name in ["vi", "vf"] {
        let column = result.column(name).unwrap();
        let size = column.datatype.size() as usize;
        let expected: Vec<Option<Vec<[u8; 8]>>> = (0..column.len())
            .map(|i| {
                let (bytes, valid) = column.cell(i);
                valid.then(|| {
                    bytes
                        .chunks_exact(size)
                        .map(|c| {
                            let mut v = [0u8; 8];
                            v[..size].copy_from_slice(c);
                            v
                        })
                        .collect()
                })
            })
            .collect();
        let ours: Vec<Option<Vec<[u8; 8]>>> = if name == "vi" {
            let cells = result.var_cells::<i64>(name).unwrap();
            cells
                .iter()
                .map(|c| c.map(|c| c.iter().map(|v| v.to_le_bytes()).collect()))
                .collect()
        } else {
            let cells = result.var_cells::<f32>(name).unwrap();
            cells
                .iter()
                .map(|c| {
                    c.map(|c| {
                        c.iter()
                            .map(|v| {
                                let mut b = [0u8; 8];
                                b[..4].copy_from_slice(&v.to_le_bytes());
                                b
                            })
                            .collect()
                    })
                })
                .collect()
        };
        assert_eq!(ours, expected, "{name}");
    }
    // TileDB's answer for this case (its expected.json): [[1,2,3],[],null,[4,5],[6]].
    let vi = result.var_cells::<i64>("vi").unwrap();
    let cells: Vec<Option<Vec<i64>>> = vi.iter().map(|c| c.map(<[i64]>::to_vec)).collect();
    assert_eq!(
        cells,
        [
            Some(vec![1, 2, 3]),
            Some(vec![]),
            None,
            Some(vec![4, 5]),
            Some(vec![6])
        ]
    );
    assert_eq!(result.validity("vi").unwrap(), Some(&[1u8, 1, 0, 1, 1][..]));
    assert_eq!(result.validity("vf").unwrap(), None);
}

#[path = "../examples/typed_read.rs"]
mod typed_read_example;

#[test]
fn the_example_runs_on_its_corpus_array() {
    typed_read_example::main().unwrap();
}

#[test]
fn the_byte_encoder_converts_nothing_silently() {
    use tiledb_runtime::filter::Datatype;
    use tiledb_runtime::read::encode_scalar;
    use tiledb_runtime::schema::Scalar;
    assert_eq!(encode_scalar(Datatype::Int32, &Scalar::Float(0.5)), None);
    assert_eq!(encode_scalar(Datatype::Int32, &Scalar::Int(1 << 40)), None);
    assert_eq!(
        encode_scalar(Datatype::Float32, &Scalar::Int(16_777_217)),
        None,
        "2^24 + 1 is no f32"
    );
    assert_eq!(
        encode_scalar(Datatype::Float32, &Scalar::Int(16_777_216)),
        Some(16_777_216f32.to_le_bytes().to_vec())
    );
    assert_eq!(
        encode_scalar(Datatype::Float64, &Scalar::Int((1 << 53) + 1)),
        None
    );
}
