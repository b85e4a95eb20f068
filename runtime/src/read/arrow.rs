//! Read results as Arrow [`RecordBatch`]es and array schemas as Arrow
//! [`Schema`]s (the `arrow` feature).
//!
//! TileDB's types map as tiledb-py maps them with `return_arrow=True`
//! (TileDB 2.30's Arrow adapter), and sanely where tiledb-py has no answer:
//!
//! | TileDB | Arrow | note |
//! | --- | --- | --- |
//! | `INT8` … `UINT64`, `FLOAT32`, `FLOAT64` | the same | |
//! | `BOOL` | `UInt8` | as tiledb-py (not `Boolean`: TileDB's Arrow output is its raw bytes) |
//! | `STRING_ASCII`, `STRING_UTF8`, var-sized | `LargeUtf8` | checked to be UTF-8 |
//! | `CHAR`, `BLOB`, `GEOM_*`, `ANY`, `STRING_UTF16/32`, `STRING_UCS2/4`, var-sized | `LargeBinary` | tiledb-py refuses `BLOB` |
//! | byte and string types, fixed-size | `FixedSizeBinary(bytes per cell)` | |
//! | `DATETIME_DAY` | `Date32` | tiledb-py refuses days before 1970 ("Non-zero data detected"); we narrow them, and refuse (usage error) days beyond Date32's ±5.8 million years |
//! | `DATETIME_SEC/MS/US/NS` | `Timestamp(unit, no zone)` | |
//! | `TIME_SEC/MS` | `Duration(unit)` | tiledb-py says `Time32(unit)` but hands over the 64-bit values as pairs of 32-bit ones (wrong values); `Time32` cannot hold every stored value, `Duration` holds them as they are |
//! | `TIME_US/NS` | `Time64(unit)` | |
//! | other `DATETIME_*`, `TIME_*` units | `Int64`, field metadata `tiledb_datatype` | tiledb-py refuses them |
//! | an attribute with an enumeration | `Dictionary(index type, values)` | string values as `Utf8`, as tiledb-py builds them |
//! | fixed, several values per cell | `FixedSizeList(values)` | tiledb-py refuses most multi-value cells, and returns those it takes (complex64: `FLOAT32` × 2) as a flat column of values, one row per value |
//! | var-sized numbers | `LargeList(values)` | tiledb-py refuses them |
//!
//! Nullable fields carry a validity bitmap, and their fields are marked
//! nullable (tiledb-py marks every field nullable). Numeric and
//! var-sized data move into Arrow buffers without a copy (a column's
//! `Vec<u8>` becomes the buffer; offsets are rewritten in place as `i64`);
//! validity is packed into bits, and `Date32` values are narrowed.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{make_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_buffer::{Buffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::column::Column;
use crate::error::{Cause, Error, Result};
use crate::filter::Datatype;
use crate::read::result::ReadResult;
use crate::read::typed::TypedResult;
use crate::schema::{ArraySchema, Enumeration};

/// How the values of one TileDB datatype become Arrow values.
enum Values {
    /// The stored bytes as they are, as this type.
    Same(DataType),
    /// 64-bit counts narrowed to 32 bits, as this type (`Date32`).
    Narrow(DataType),
    /// Text (UTF-8 checked).
    Text,
    /// Bytes.
    Bytes,
}

fn values_of(datatype: Datatype) -> Values {
    use Datatype::*;
    Values::Same(match datatype {
        Int8 => DataType::Int8,
        Uint8 | Bool => DataType::UInt8,
        Int16 => DataType::Int16,
        Uint16 => DataType::UInt16,
        Int32 => DataType::Int32,
        Uint32 => DataType::UInt32,
        Int64 => DataType::Int64,
        Uint64 => DataType::UInt64,
        Float32 => DataType::Float32,
        Float64 => DataType::Float64,
        StringAscii | StringUtf8 => return Values::Text,
        Char | Blob | GeomWkb | GeomWkt | Any | StringUtf16 | StringUtf32 | StringUcs2
        | StringUcs4 => return Values::Bytes,
        DatetimeDay => return Values::Narrow(DataType::Date32),
        DatetimeSec => DataType::Timestamp(TimeUnit::Second, None),
        DatetimeMs => DataType::Timestamp(TimeUnit::Millisecond, None),
        DatetimeUs => DataType::Timestamp(TimeUnit::Microsecond, None),
        DatetimeNs => DataType::Timestamp(TimeUnit::Nanosecond, None),
        // Not Time32: it cannot hold every stored 64-bit value (see the module docs).
        TimeSec => DataType::Duration(TimeUnit::Second),
        TimeMs => DataType::Duration(TimeUnit::Millisecond),
        TimeUs => DataType::Time64(TimeUnit::Microsecond),
        TimeNs => DataType::Time64(TimeUnit::Nanosecond),
        // The remaining DATETIME_* and TIME_* units have no Arrow type.
        _ => DataType::Int64,
    })
}

/// The Arrow type of one value of `datatype` (one fixed cell of `width` bytes for byte types).
fn value_type(datatype: Datatype, var: bool, width: i32) -> DataType {
    match values_of(datatype) {
        Values::Same(t) | Values::Narrow(t) => t,
        Values::Text if var => DataType::LargeUtf8,
        Values::Bytes | Values::Text if var => DataType::LargeBinary,
        Values::Text | Values::Bytes => DataType::FixedSizeBinary(width),
    }
}

/// The Arrow type of a field: its datatype, values per cell (`None` =
/// var-sized) and enumeration.
pub fn field_type(
    datatype: Datatype,
    cell_val_num: Option<u32>,
    enumeration: Option<&Enumeration>,
) -> DataType {
    if let Some(e) = enumeration {
        let values = match values_of(e.datatype) {
            Values::Text if e.cell_val_num.is_none() => DataType::Utf8,
            Values::Text | Values::Bytes if e.cell_val_num.is_none() => DataType::Binary,
            _ => field_type(e.datatype, e.cell_val_num, None),
        };
        let key = field_type(datatype, cell_val_num, None);
        return DataType::Dictionary(Box::new(key), Box::new(values));
    }
    let size = datatype.size() as i32;
    match (values_of(datatype), cell_val_num) {
        (Values::Text | Values::Bytes, n) => {
            value_type(datatype, n.is_none(), n.unwrap_or(1) as i32 * size)
        }
        (_, Some(1)) => value_type(datatype, false, size),
        (_, None) => DataType::LargeList(Arc::new(Field::new(
            "item",
            value_type(datatype, false, size),
            false,
        ))),
        (_, Some(n)) => DataType::FixedSizeList(
            Arc::new(Field::new("item", value_type(datatype, false, size), false)),
            n as i32,
        ),
    }
}

/// The Arrow field of a column (named and typed as the TileDB field).
fn field(
    name: &str,
    datatype: Datatype,
    cell_val_num: Option<u32>,
    nullable: bool,
    enumeration: Option<&Enumeration>,
) -> Field {
    let data_type = field_type(datatype, cell_val_num, enumeration);
    let field = Field::new(name, data_type.clone(), nullable);
    if data_type == DataType::Int64 && datatype != Datatype::Int64 {
        // A date or time unit Arrow lacks: say which.
        field.with_metadata(HashMap::from([(
            "tiledb_datatype".to_string(),
            datatype.name().to_string(),
        )]))
    } else {
        field
    }
}

fn enumeration_of<'a>(schema: &'a ArraySchema, attribute: &str) -> Option<&'a Enumeration> {
    let (_, a) = schema.attribute(attribute)?;
    schema.enumeration(a.enumeration.as_deref()?)
}

/// The Arrow schema of a whole array: its dimensions, then its attributes.
pub fn arrow_schema(schema: &ArraySchema) -> Schema {
    let dims = schema
        .dimensions
        .iter()
        .map(|d| field(&d.name, d.datatype, (!d.var).then_some(1), false, None));
    let attrs = schema.attributes.iter().map(|a| {
        let e = enumeration_of(schema, &a.name);
        field(&a.name, a.datatype, a.cell_val_num, a.nullable, e)
    });
    Schema::new(dims.chain(attrs).collect::<Vec<_>>())
}

/// A read's result as one record batch: its coordinates, then its
/// attributes; `schema` is the array's (for enumerations).
pub fn record_batch(schema: &ArraySchema, result: ReadResult) -> Result<RecordBatch> {
    let enumerations: Vec<(String, Enumeration)> = result
        .attributes
        .iter()
        .filter_map(|c| Some((c.name.clone(), enumeration_of(schema, &c.name)?.clone())))
        .collect();
    to_batch(result, &enumerations)
}

impl TypedResult {
    /// The result as one Arrow record batch (see the [module](crate::read::arrow)
    /// for the type mapping); the buffers move without a copy where they can.
    pub fn into_record_batch(self) -> Result<RecordBatch> {
        to_batch(self.result, &self.enumerations)
    }
}

impl<'a> crate::read::TypedBatches<'a> {
    /// The batches as Arrow record batches, each with the same schema
    /// (a read under a memory budget: see [`QueryBuilder::batches`](crate::read::QueryBuilder::batches)).
    pub fn record_batches(self) -> impl Iterator<Item = Result<RecordBatch>> + 'a {
        self.map(|batch| batch?.into_record_batch())
    }
}

fn to_batch(result: ReadResult, enumerations: &[(String, Enumeration)]) -> Result<RecordBatch> {
    let rows = result.cell_count();
    let mut fields = Vec::new();
    let mut arrays = Vec::new();
    for column in result.dimensions.into_iter().chain(result.attributes) {
        let e = enumerations
            .iter()
            .find(|(n, _)| *n == column.name)
            .map(|(_, e)| e);
        fields.push(field(
            &column.name,
            column.datatype,
            column.cell_val_num,
            column.nullable,
            e,
        ));
        arrays.push(column_array(column, e)?);
    }
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema, arrays, &options).map_err(arrow_error("the result"))
}

fn arrow_error(what: &str) -> impl Fn(arrow_schema::ArrowError) -> Error + '_ {
    move |e| Error::corrupt(0, what, format!("not a valid Arrow array: {e}"))
}

/// One column as an Arrow array.
fn column_array(mut column: Column, enumeration: Option<&Enumeration>) -> Result<ArrayRef> {
    if let Some(shape) = column.shape_error() {
        return Err(Error::corrupt(0, column.name.clone(), shape));
    }
    let name = column.name.clone();
    let data_type = field_type(column.datatype, column.cell_val_num, enumeration);
    let rows = column.len();
    let nulls = column
        .validity
        .as_ref()
        .map(|v| v.iter().map(|&b| b != 0).collect::<NullBuffer>());
    let mut builder = ArrayData::builder(data_type.clone())
        .len(rows)
        .nulls(nulls)
        .align_buffers(true);
    let values_buffer = |column: Column| -> Result<Buffer> {
        match values_of(column.datatype) {
            Values::Narrow(_) => narrow(&column),
            _ => Ok(Buffer::from_vec(column.data)),
        }
    };
    match &data_type {
        DataType::Dictionary(_, _) => {
            let e = enumeration.ok_or_else(|| Error::Usage(format!("{name}: no enumeration")))?;
            builder = builder
                .add_buffer(values_buffer(column)?)
                .add_child_data(enumeration_values(e)?);
        }
        DataType::LargeUtf8 | DataType::LargeBinary => {
            let offsets = column.offsets.take().unwrap_or_default();
            builder = builder
                .add_buffer(Buffer::from_vec(i64_offsets(offsets, 1)))
                .add_buffer(Buffer::from_vec(column.data));
        }
        DataType::LargeList(item) => {
            let size = column.datatype.size();
            let offsets = column.offsets.take().unwrap_or_default();
            if let Some(&partial) = offsets.iter().find(|&&o| o % size != 0) {
                let cause = Cause::NotMultiple {
                    size: partial,
                    unit: size,
                };
                return Err(Error::corrupt(0, name, cause));
            }
            let count = column.data.len() / size as usize;
            let child = ArrayData::builder(item.data_type().clone())
                .len(count)
                .add_buffer(values_buffer(column)?)
                .align_buffers(true)
                .build()
                .map_err(arrow_error(&name))?;
            builder = builder
                .add_buffer(Buffer::from_vec(i64_offsets(offsets, size)))
                .add_child_data(child);
        }
        DataType::FixedSizeList(item, n) => {
            let child = ArrayData::builder(item.data_type().clone())
                .len(rows * *n as usize)
                .add_buffer(values_buffer(column)?)
                .align_buffers(true)
                .build()
                .map_err(arrow_error(&name))?;
            builder = builder.add_child_data(child);
        }
        _ => builder = builder.add_buffer(values_buffer(column)?),
    }
    Ok(make_array(builder.build().map_err(arrow_error(&name))?))
}

/// Byte offsets as Arrow's `i64` offsets in units of `size` bytes (the
/// allocation is reused: `u64` and `i64` have one layout).
fn i64_offsets(offsets: Vec<u64>, size: u64) -> Vec<i64> {
    offsets.into_iter().map(|o| (o / size) as i64).collect()
}

/// 64-bit day counts as `Date32`'s 32-bit ones; a count that does not fit
/// (beyond ±5.8 million years) is an error.
fn narrow(column: &Column) -> Result<Buffer> {
    let wide: Vec<i64> = bytemuck::pod_collect_to_vec(&column.data);
    let narrow = wide
        .iter()
        .enumerate()
        .map(|(i, &v)| match i32::try_from(v) {
            Ok(v) => Ok(v),
            Err(_) if !column.is_valid(i) => Ok(0),
            Err(_) => Err(Error::Usage(format!(
                "cell {i} of {}: {v} does not fit Arrow's 32-bit {}",
                column.name,
                column.datatype.name()
            ))),
        })
        .collect::<Result<Vec<i32>>>()?;
    Ok(Buffer::from_vec(narrow))
}

/// The values of an enumeration as the dictionary of its attribute's array.
fn enumeration_values(e: &Enumeration) -> Result<ArrayData> {
    let data_type = match &field_type(Datatype::Int32, Some(1), Some(e)) {
        DataType::Dictionary(_, values) => (**values).clone(),
        _ => unreachable!("an enumeration maps to a dictionary"),
    };
    let data: Vec<u8> = e.values.concat();
    let builder = ArrayData::builder(data_type.clone()).len(e.values.len());
    let builder = match data_type {
        DataType::Utf8 | DataType::Binary => {
            let mut offsets = vec![0i32];
            for v in &e.values {
                let end = i32::try_from(offsets[offsets.len() - 1] as usize + v.len())
                    .map_err(|_| Error::Usage(format!("enumeration {} is over 2 GiB", e.name)))?;
                offsets.push(end);
            }
            builder
                .add_buffer(Buffer::from_vec(offsets))
                .add_buffer(Buffer::from_vec(data))
        }
        _ => {
            let column =
                Column::from_fixed_bytes(&e.name, e.datatype, e.cell_val_num.unwrap_or(1), data);
            return column_array(column, None).map(|a| a.to_data());
        }
    };
    builder.build().map_err(arrow_error(&e.name))
}
