//! `write::arrow`: record batches typed as reads return them write the
//! same cells back (a dense subarray write with nulls, dates and text);
//! a dense batch whose coordinates do not cover a box, and nulls on a
//! non-nullable field, are usage errors. (tdb's tests run the corpus and
//! pyarrow's files through the same code.)

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, TimestampMillisecondType};
use arrow_array::TimestampMillisecondArray;
use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::error::Error;
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::read::ResultOrder;
use tiledb_runtime::schema::{AttributeSpec, DimensionSpec, SchemaBuilder};
use tiledb_runtime::write::arrow::write_from_record_batch;

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

#[test]
fn a_dense_subarray_write_reads_back_the_same_cells() {
    let dir = tempfile::tempdir().unwrap();
    let schema = SchemaBuilder::dense()
        .dimension(DimensionSpec::new::<i64>("r", 0, 3, Some(2)))
        .dimension(DimensionSpec::new::<i64>("c", 0, 3, Some(2)))
        .attribute(AttributeSpec::new("a", Datatype::Int32).nullable())
        .attribute(AttributeSpec::new("t", Datatype::DatetimeMs))
        .attribute(AttributeSpec::new("s", Datatype::StringUtf8).var());
    let array = Array::create_path(dir.path(), &schema).unwrap();
    let a = Int32Array::from(vec![Some(1), None, Some(3), Some(-4)]);
    let t = TimestampMillisecondArray::from(vec![0, -86_400_000, 1_700_000_000_000, 5]);
    let s = StringArray::from(vec!["x", "", "yz", "ünï"]);
    let input = batch(vec![
        ("a", Arc::new(a.clone()) as ArrayRef),
        ("t", Arc::new(t.clone())),
        ("s", Arc::new(s.clone())),
    ]);
    let write =
        write_from_record_batch(array.schema(), &input, Some(vec![(1, 2), (0, 1)])).unwrap();
    array.write(&write).unwrap();

    let array = Array::open_path(dir.path(), OpenOptions::default()).unwrap();
    let back = array
        .query()
        .range("r", 1i64..=2)
        .unwrap()
        .range("c", 0i64..=1)
        .unwrap()
        .order(ResultOrder::RowMajor)
        .read()
        .unwrap()
        .into_record_batch()
        .unwrap();
    let column = |name: &str| back.column(back.schema().index_of(name).unwrap()).clone();
    assert_eq!(column("a").as_primitive::<Int32Type>(), &a);
    assert_eq!(column("t").as_primitive::<TimestampMillisecondType>(), &t);
    let s_back = column("s");
    let strings: Vec<&str> = s_back.as_string::<i64>().iter().flatten().collect();
    assert_eq!(strings, ["x", "", "yz", "ünï"]);

    // The batch read back (coordinates and all) writes again: the read mapping's inverse.
    let again = write_from_record_batch(array.schema(), &back, None).unwrap();
    assert_eq!(again.subarray, Some(vec![(1, 2), (0, 1)]));
    assert_eq!(again.columns, write.columns);
}

#[test]
fn coordinates_off_a_box_and_nulls_on_a_non_nullable_field_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let schema = SchemaBuilder::dense()
        .dimension(DimensionSpec::new::<i64>("d", 0, 9, Some(5)))
        .attribute(AttributeSpec::new("a", Datatype::Int32));
    let array = Array::create_path(dir.path(), &schema).unwrap();
    let holes = batch(vec![
        ("d", Arc::new(Int64Array::from(vec![1, 3])) as ArrayRef),
        ("a", Arc::new(Int32Array::from(vec![1, 2]))),
    ]);
    let err = write_from_record_batch(array.schema(), &holes, None).unwrap_err();
    assert!(
        matches!(&err, Error::Usage(m) if m.contains("do not cover the box")),
        "{err}"
    );
    let nulls = batch(vec![
        ("d", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef),
        ("a", Arc::new(Int32Array::from(vec![Some(1), None]))),
    ]);
    let err = write_from_record_batch(array.schema(), &nulls, None).unwrap_err();
    assert!(
        matches!(&err, Error::Usage(m) if m.contains("column a, row 1: null")),
        "{err}"
    );
}
