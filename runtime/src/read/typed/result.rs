//! [`TypedResult`]: a read's cells in the caller's types — numbers as
//! typed slices borrowed from the result (no copy when the buffer is
//! aligned, as allocations are), strings and var-sized cells as iterators,
//! validity, dates and times as jiff types. Every accessor checks the
//! field's datatype: asking for `i32` values of a `FLOAT64` attribute is a
//! usage error.

use std::borrow::Cow;

use jiff::{SignedDuration, Timestamp};

use super::time;
use crate::column::Column;
use crate::error::{Error, Result};
use crate::filter::Datatype;
use crate::read::result::ReadResult;
use crate::schema::Enumeration;

/// A Rust type whose values are a field's values, byte for byte.
pub trait CellType: bytemuck::Pod {
    /// Whether a field of `datatype` holds values of this type.
    fn matches(datatype: Datatype) -> bool;
    /// The Rust name, for error messages.
    const NAME: &'static str;
}

macro_rules! cell_type {
    ($($t:ty => $($d:ident)|+),* $(,)?) => {$(
        impl CellType for $t {
            fn matches(datatype: Datatype) -> bool {
                matches!(datatype, $(Datatype::$d)|+)
            }
            const NAME: &'static str = stringify!($t);
        }
    )*};
}

cell_type!(
    i8 => Int8 | Char,
    u8 => Uint8 | Bool | Char | StringAscii | StringUtf8 | Blob | GeomWkb | GeomWkt | Any,
    i16 => Int16,
    u16 => Uint16 | StringUtf16 | StringUcs2,
    i32 => Int32,
    u32 => Uint32 | StringUtf32 | StringUcs4,
    u64 => Uint64,
    f32 => Float32,
    f64 => Float64,
);

impl CellType for i64 {
    fn matches(datatype: Datatype) -> bool {
        datatype == Datatype::Int64 || time::is_datetime(datatype) || time::is_time(datatype)
    }
    const NAME: &'static str = "i64";
}

/// The cells of a read, by field name, in the caller's types.
#[derive(Debug, Clone)]
pub struct TypedResult {
    pub(crate) result: ReadResult,
    /// The enumerations of the attributes returned, by attribute name.
    pub(crate) enumerations: Vec<(String, Enumeration)>,
}

/// The var-sized cells of a field as slices of `T` ([`TypedResult::var_cells`]).
#[derive(Debug)]
pub struct VarCells<'a, T: Clone> {
    values: Cow<'a, [T]>,
    /// Cell `i` is `values[starts[i]..starts[i + 1]]`.
    starts: Vec<usize>,
    column: &'a Column,
}

impl<T: CellType> VarCells<'_, T> {
    /// The number of cells.
    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// No cells.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cell `i`: `None` past the end or when the cell is null.
    pub fn get(&self, i: usize) -> Option<&[T]> {
        let (&s, &e) = (self.starts.get(i)?, self.starts.get(i + 1)?);
        self.column.is_valid(i).then(|| &self.values[s..e])
    }

    /// The cells in order (`None` for a null cell).
    pub fn iter(&self) -> impl Iterator<Item = Option<&[T]>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

impl TypedResult {
    /// The number of result cells.
    pub fn len(&self) -> usize {
        self.result.cell_count()
    }

    /// No result cells.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The untyped result: the columns as bytes.
    pub fn raw(&self) -> &ReadResult {
        &self.result
    }

    /// The untyped result, taken out.
    pub fn into_raw(self) -> ReadResult {
        self.result
    }

    /// The names of the fields returned: dimensions, then attributes.
    pub fn field_names(&self) -> impl Iterator<Item = &str> {
        self.result
            .dimensions
            .iter()
            .chain(&self.result.attributes)
            .map(|c| c.name.as_str())
    }

    /// The column of a dimension or attribute returned by the read.
    pub fn column(&self, name: &str) -> Result<&Column> {
        self.result
            .dimensions
            .iter()
            .chain(&self.result.attributes)
            .find(|c| c.name == name)
            .ok_or_else(|| Error::Usage(format!("the result has no field named {name:?}")))
    }

    /// The enumeration the attribute `name` indexes, if any.
    pub fn enumeration(&self, name: &str) -> Option<&Enumeration> {
        self.enumerations
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, e)| e)
    }

    /// Every value of field `name`, back to back, as `T` (all values of
    /// every cell: `cell_val_num` per fixed cell; a null cell's values are
    /// whatever was stored). Borrowed from the result when its buffer is
    /// aligned for `T` (as allocations are), copied otherwise.
    pub fn values<T: CellType>(&self, name: &str) -> Result<Cow<'_, [T]>> {
        let column = self.column(name)?;
        check_type::<T>(column)?;
        Ok(cast_values(&column.data))
    }

    /// The var-sized cells of field `name`, each as a slice of `T`.
    pub fn var_cells<T: CellType>(&self, name: &str) -> Result<VarCells<'_, T>> {
        let column = self.column(name)?;
        check_type::<T>(column)?;
        let offsets = column.offsets.as_ref().ok_or_else(|| {
            Error::Usage(format!(
                "{name} has fixed-size cells: read them with values::<{}>",
                T::NAME
            ))
        })?;
        let size = std::mem::size_of::<T>() as u64;
        if let Some(shape) = column.shape_error() {
            return Err(Error::Usage(shape));
        }
        if offsets.iter().any(|o| o % size != 0) {
            return Err(Error::Usage(format!(
                "the cells of {name} are not whole {} values",
                T::NAME
            )));
        }
        Ok(VarCells {
            values: cast_values(&column.data),
            starts: offsets.iter().map(|&o| (o / size) as usize).collect(),
            column,
        })
    }

    /// The cells of a string field (`STRING_ASCII`, `STRING_UTF8`, or var
    /// `CHAR` holding UTF-8) as `&str`, `None` for a null cell. Text that is
    /// not UTF-8 is an error, found before the first cell is returned.
    pub fn strings(&self, name: &str) -> Result<impl Iterator<Item = Option<&str>> + '_> {
        let column = self.column(name)?;
        if !matches!(
            column.datatype,
            Datatype::StringAscii | Datatype::StringUtf8 | Datatype::Char
        ) {
            return Err(wrong_type("strings", column));
        }
        let cells = (0..column.len())
            .map(|i| {
                let (bytes, valid) = column.cell(i);
                std::str::from_utf8(bytes)
                    .map(|s| valid.then_some(s))
                    .map_err(|e| Error::Usage(format!("cell {i} of {name} is not UTF-8: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(cells.into_iter())
    }

    /// The cells of any field as their stored bytes, `None` for a null cell.
    pub fn bytes(&self, name: &str) -> Result<impl Iterator<Item = Option<&[u8]>> + '_> {
        let column = self.column(name)?;
        Ok((0..column.len()).map(move |i| {
            let (bytes, valid) = column.cell(i);
            valid.then_some(bytes)
        }))
    }

    /// The validity of field `name`, one byte per cell (non-zero = valid);
    /// `None` when the field is not nullable.
    pub fn validity(&self, name: &str) -> Result<Option<&[u8]>> {
        Ok(self.column(name)?.validity.as_deref())
    }

    /// The cells of a `DATETIME_*` field as instants, `None` for a null
    /// cell. A value jiff cannot hold exactly is an error (read such a
    /// field with `values::<i64>`).
    pub fn timestamps(&self, name: &str) -> Result<Vec<Option<Timestamp>>> {
        self.temporal(name, time::is_datetime, time::count_to_timestamp)
    }

    /// The cells of a `TIME_*` field as times since midnight, `None` for a null cell.
    pub fn durations(&self, name: &str) -> Result<Vec<Option<SignedDuration>>> {
        self.temporal(name, time::is_time, time::count_to_duration)
    }

    fn temporal<V>(
        &self,
        name: &str,
        accepts: fn(Datatype) -> bool,
        convert: fn(i64, Datatype) -> std::result::Result<V, String>,
    ) -> Result<Vec<Option<V>>> {
        let column = self.column(name)?;
        if !accepts(column.datatype) || column.cell_val_num != Some(1) {
            return Err(wrong_type("dates or times of this kind", column));
        }
        let values: Cow<'_, [i64]> = cast_values(&column.data);
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                if !column.is_valid(i) {
                    return Ok(None);
                }
                convert(v, column.datatype)
                    .map(Some)
                    .map_err(|e| Error::Usage(format!("cell {i} of {name}: {e}")))
            })
            .collect()
    }
}

fn wrong_type(what: &str, column: &Column) -> Error {
    Error::Usage(format!(
        "{} is of type {}, which holds no {what}",
        column.name,
        column.datatype.name()
    ))
}

fn check_type<T: CellType>(column: &Column) -> Result<()> {
    if T::matches(column.datatype) {
        Ok(())
    } else {
        Err(wrong_type(&format!("{} values", T::NAME), column))
    }
}

/// The bytes as `T`s: borrowed when aligned, else copied. A trailing
/// partial value (a malformed column) is left out.
fn cast_values<T: CellType>(bytes: &[u8]) -> Cow<'_, [T]> {
    let whole = bytes.len() - bytes.len() % std::mem::size_of::<T>();
    match bytemuck::try_cast_slice(&bytes[..whole]) {
        Ok(values) => Cow::Borrowed(values),
        Err(_) => Cow::Owned(bytemuck::pod_collect_to_vec(&bytes[..whole])),
    }
}
