//! Writes from Arrow [`RecordBatch`]es (the `arrow` feature): the inverse of
//! the read mapping of [`crate::read::arrow`]. Each column of a batch is
//! named after a dimension or an attribute and typed as a read of that
//! field returns it, or as one of these equivalents:
//!
//! - `Utf8`, `Utf8View`, `LargeUtf8` for var-sized text; `Binary`,
//!   `LargeBinary` (or text) for var-sized bytes;
//! - `List` or `LargeList` of the values for var-sized numbers;
//! - `Timestamp` with any time zone (the values are UTC instants);
//! - `Boolean` for `BOOL`;
//! - for an attribute with an enumeration, a dictionary with any integer
//!   keys whose values are values of the enumeration (each becomes the
//!   index of that value), or the indexes themselves.
//!
//! A null on a non-nullable field, a column no field is named after and a
//! type that does not fit are usage errors naming the column. A dense
//! write takes its box from the coordinates (which must cover it, each
//! cell once) or from a given subarray (cells in its row-major order).

use arrow_array::cast::AsArray;
use arrow_array::types::Date32Type;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;

use crate::column::Column;
use crate::error::{Error, Result};
use crate::filter::Datatype;
use crate::read::arrow::field_type;
use crate::schema::{ArraySchema, Enumeration};
use crate::write::coordinates::dense_from_coordinates;
use crate::write::Write;

/// The target of one column: the TileDB field it fills.
struct Target<'a> {
    name: &'a str,
    datatype: Datatype,
    cell_val_num: Option<u32>,
    nullable: bool,
    enumeration: Option<&'a Enumeration>,
}

/// One write from record batches (all with one schema): a sparse write of
/// every column, or a dense write whose box is `subarray` (cells in its
/// row-major order, no coordinate columns) or, without one, the box the
/// coordinate columns cover.
pub fn write_from_record_batches(
    schema: &ArraySchema,
    batches: &[RecordBatch],
    subarray: Option<Vec<(i128, i128)>>,
) -> Result<Write> {
    let mut coords: Vec<Column> = Vec::new();
    let mut attrs: Vec<Column> = Vec::new();
    for batch in batches {
        let (c, a) = columns_from_record_batch(schema, batch)?;
        append_all(&mut coords, c);
        append_all(&mut attrs, a);
    }
    if !schema.is_dense() {
        return Ok(Write::sparse(coords.into_iter().chain(attrs).collect()));
    }
    match subarray {
        Some(sub) if coords.is_empty() => Ok(Write::dense(sub, attrs)),
        Some(_) => Err(Error::Usage(format!(
            "column {}: a dense write with a subarray takes no coordinates",
            coords[0].name
        ))),
        None => dense_from_coordinates(schema, &coords, attrs),
    }
}

/// [`write_from_record_batches`] of one batch.
pub fn write_from_record_batch(
    schema: &ArraySchema,
    batch: &RecordBatch,
    subarray: Option<Vec<(i128, i128)>>,
) -> Result<Write> {
    write_from_record_batches(schema, std::slice::from_ref(batch), subarray)
}

fn append_all(into: &mut Vec<Column>, from: Vec<Column>) {
    if into.is_empty() {
        *into = from;
        return;
    }
    for (a, b) in into.iter_mut().zip(from) {
        for i in 0..b.len() {
            let (bytes, valid) = b.cell(i);
            a.push(bytes, valid);
        }
    }
}

/// The columns of one batch as TileDB columns: `(coordinates, attributes)`.
pub fn columns_from_record_batch(
    schema: &ArraySchema,
    batch: &RecordBatch,
) -> Result<(Vec<Column>, Vec<Column>)> {
    let (mut coords, mut attrs) = (Vec::new(), Vec::new());
    for (field, array) in batch.schema().fields().iter().zip(batch.columns()) {
        let name = field.name().as_str();
        if let Some((_, d)) = schema.dimension(name) {
            let target = Target {
                name,
                datatype: d.datatype,
                cell_val_num: (!d.var).then_some(1),
                nullable: false,
                enumeration: None,
            };
            coords.push(column(&target, array.as_ref())?);
        } else if let Some((_, a)) = schema.attribute(name) {
            let enumeration = a.enumeration.as_deref().and_then(|e| schema.enumeration(e));
            let target = Target {
                name,
                datatype: a.datatype,
                cell_val_num: a.cell_val_num,
                nullable: a.nullable,
                enumeration,
            };
            attrs.push(column(&target, array.as_ref())?);
        } else {
            return Err(Error::Usage(format!(
                "column {name}: the array has no dimension or attribute of that name"
            )));
        }
    }
    Ok((coords, attrs))
}

fn mismatch(target: &Target, actual: &DataType, expected: &DataType) -> Error {
    Error::Usage(format!(
        "column {}: Arrow type {actual} does not fit {} ({} expected)",
        target.name,
        target.datatype.name(),
        expected
    ))
}

/// Whether `actual` holds the values `expected` stands for.
fn fits(actual: &DataType, expected: &DataType) -> bool {
    use DataType::*;
    match (actual, expected) {
        (Timestamp(a, _), Timestamp(e, _)) => a == e,
        (Utf8 | Utf8View, LargeUtf8) => true,
        (Binary | Utf8 | LargeUtf8 | Utf8View, LargeBinary) => true,
        (List(a) | LargeList(a), LargeList(e)) => fits(a.data_type(), e.data_type()),
        (FixedSizeList(a, n), FixedSizeList(e, m)) => n == m && fits(a.data_type(), e.data_type()),
        _ => actual == expected,
    }
}

/// One column of the batch as the cells of `target`.
fn column(target: &Target, array: &dyn Array) -> Result<Column> {
    let plain = field_type(target.datatype, target.cell_val_num, None);
    let actual = array.data_type();
    if let (Some(e), DataType::Dictionary(_, _)) = (target.enumeration, actual) {
        return enumerated(target, e, array);
    }
    let bool_as_boolean = target.datatype == Datatype::Bool && *actual == DataType::Boolean;
    if !bool_as_boolean && !fits(actual, &plain) {
        let expected = field_type(target.datatype, target.cell_val_num, target.enumeration);
        return Err(mismatch(target, actual, &expected));
    }
    let mut out = Column::new(
        target.name,
        target.datatype,
        target.cell_val_num,
        target.nullable,
    );
    let fixed = target
        .cell_val_num
        .map(|n| n as usize * target.datatype.size() as usize);
    let flat = match actual {
        DataType::FixedSizeList(_, _) | DataType::List(_) | DataType::LargeList(_) => None,
        _ if fixed.is_some() && !matches!(actual, DataType::FixedSizeBinary(_)) => {
            Some(values_bytes(array))
        }
        _ => None,
    };
    for i in 0..array.len() {
        if array.is_null(i) {
            push_null(&mut out, target, i, fixed)?;
            continue;
        }
        match (&flat, actual) {
            (Some(all), _) => {
                let w = fixed.unwrap_or(0);
                out.push(&all[i * w..(i + 1) * w], true);
            }
            (None, DataType::Utf8) => out.push(array.as_string::<i32>().value(i).as_bytes(), true),
            (None, DataType::LargeUtf8) => {
                out.push(array.as_string::<i64>().value(i).as_bytes(), true);
            }
            (None, DataType::Utf8View) => {
                out.push(array.as_string_view().value(i).as_bytes(), true);
            }
            (None, DataType::Binary) => out.push(array.as_binary::<i32>().value(i), true),
            (None, DataType::LargeBinary) => out.push(array.as_binary::<i64>().value(i), true),
            (None, DataType::FixedSizeBinary(_)) => {
                out.push(array.as_fixed_size_binary().value(i), true);
            }
            (None, DataType::FixedSizeList(_, _)) => out.push(
                &values_bytes(array.as_fixed_size_list().value(i).as_ref()),
                true,
            ),
            (None, DataType::List(_)) => out.push(
                &values_bytes(array.as_list::<i32>().value(i).as_ref()),
                true,
            ),
            (None, DataType::LargeList(_)) => out.push(
                &values_bytes(array.as_list::<i64>().value(i).as_ref()),
                true,
            ),
            (None, other) => return Err(mismatch(target, other, &plain)),
        }
    }
    Ok(out)
}

fn push_null(out: &mut Column, target: &Target, i: usize, fixed: Option<usize>) -> Result<()> {
    if !target.nullable {
        return Err(Error::Usage(format!(
            "column {}, row {i}: null, but the field is not nullable",
            target.name
        )));
    }
    out.push(&vec![0; fixed.unwrap_or(0)], false);
    Ok(())
}

/// The values of a flat array as TileDB stores them (little-endian, `Date32`
/// days widened to 64 bits, `Boolean` as one byte each).
fn values_bytes(array: &dyn Array) -> Vec<u8> {
    match array.data_type() {
        DataType::Date32 => array
            .as_primitive::<Date32Type>()
            .values()
            .iter()
            .flat_map(|&d| i64::from(d).to_le_bytes())
            .collect(),
        DataType::Boolean => array.as_boolean().values().iter().map(u8::from).collect(),
        t => {
            let data = array.to_data();
            let w = t.primitive_width().unwrap_or(0);
            let bytes = data.buffers().first().map_or(&[][..], |b| b.as_slice());
            let (from, to) = (data.offset() * w, (data.offset() + data.len()) * w);
            bytes.get(from..to).unwrap_or_default().to_vec()
        }
    }
}

/// A dictionary column of an enumerated attribute: each value looked up
/// in the enumeration, its index stored.
fn enumerated(target: &Target, e: &Enumeration, array: &dyn Array) -> Result<Column> {
    let dictionary = array
        .as_any_dictionary_opt()
        .ok_or_else(|| Error::Usage(format!("column {}: not a dictionary", target.name)))?;
    let value_target = Target {
        name: target.name,
        datatype: e.datatype,
        cell_val_num: e.cell_val_num,
        nullable: false,
        enumeration: None,
    };
    let values = column(&value_target, dictionary.values().as_ref())?;
    let indexes: Vec<Option<usize>> = (0..values.len())
        .map(|j| {
            e.values
                .iter()
                .position(|v| v.as_slice() == values.cell_bytes(j))
        })
        .collect();
    let keys = dictionary.normalized_keys();
    let size = target.datatype.size() as usize;
    let mut out = Column::new(target.name, target.datatype, Some(1), target.nullable);
    for (i, &key) in keys.iter().enumerate().take(array.len()) {
        if array.is_null(i) {
            push_null(&mut out, target, i, Some(size))?;
            continue;
        }
        let index = indexes.get(key).copied().flatten().ok_or_else(|| {
            Error::Usage(format!(
                "column {}, row {i}: {:?} is not a value of enumeration {}",
                target.name,
                String::from_utf8_lossy(values.cell_bytes(key.min(values.len().saturating_sub(1)))),
                e.name
            ))
        })?;
        let fits_key = size >= 8 || (index as u64) < (1u64 << (8 * size - 1));
        if !fits_key {
            return Err(Error::Usage(format!(
                "column {}: index {index} does not fit {}",
                target.name,
                target.datatype.name()
            )));
        }
        out.push(&(index as u64).to_le_bytes()[..size], true);
    }
    Ok(out)
}
