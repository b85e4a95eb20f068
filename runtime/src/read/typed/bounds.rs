//! Range bounds in Rust types ([`RangeValue`]), turned into a dimension's
//! stored bytes only when the type fits the dimension's datatype: a
//! mismatch is a usage error, never a conversion (an `f64` bound on an
//! `INT32` dimension is refused, not truncated).

use jiff::civil::{Date, DateTime};
use jiff::{SignedDuration, Timestamp};

use super::time;
use crate::filter::Datatype;
use crate::schema::Dimension;

/// A value that can bound a range of a dimension (see
/// [`QueryBuilder::range`](super::QueryBuilder::range)).
///
/// | Rust type | dimension datatypes |
/// | --- | --- |
/// | `i8` … `u64` | every integer type, checked to fit; `DATETIME_*` and `TIME_*` as the stored count |
/// | `f32`, `f64` | `FLOAT32` (an `f64` only when exactly a `f32`), `FLOAT64` |
/// | `&str`, `String` | string dimensions (`STRING_ASCII`, var-sized) |
/// | [`Timestamp`], [`Date`] and [`DateTime`] (UTC) | `DATETIME_*`, when the unit holds the value exactly |
/// | [`SignedDuration`] (since midnight) | `TIME_*`, when the unit holds it exactly |
pub trait RangeValue {
    /// The bound as `dimension` stores it, or why this value cannot bound it.
    fn bound_bytes(&self, dimension: &Dimension) -> Result<Vec<u8>, String>;
}

/// Why a value of `what` cannot bound `dimension`.
fn mismatch(what: &str, dimension: &Dimension) -> String {
    format!(
        "{what} cannot bound dimension {:?} of type {}",
        dimension.name,
        dimension.datatype.name()
    )
}

/// An integer as the bytes of an integer, date or time dimension.
fn integer_bound(value: i128, dimension: &Dimension) -> Result<Vec<u8>, String> {
    use Datatype::*;
    let dt = dimension.datatype;
    let fits = |ok: bool, bytes: Vec<u8>| {
        if ok {
            Ok(bytes)
        } else {
            Err(format!(
                "{value} does not fit dimension {:?} of type {}",
                dimension.name,
                dt.name()
            ))
        }
    };
    let v = value;
    match dt {
        Int8 => fits(i8::try_from(v).is_ok(), (v as i8).to_le_bytes().to_vec()),
        Uint8 => fits(u8::try_from(v).is_ok(), (v as u8).to_le_bytes().to_vec()),
        Int16 => fits(i16::try_from(v).is_ok(), (v as i16).to_le_bytes().to_vec()),
        Uint16 => fits(u16::try_from(v).is_ok(), (v as u16).to_le_bytes().to_vec()),
        Int32 => fits(i32::try_from(v).is_ok(), (v as i32).to_le_bytes().to_vec()),
        Uint32 => fits(u32::try_from(v).is_ok(), (v as u32).to_le_bytes().to_vec()),
        Uint64 => fits(u64::try_from(v).is_ok(), (v as u64).to_le_bytes().to_vec()),
        Int64 => fits(i64::try_from(v).is_ok(), (v as i64).to_le_bytes().to_vec()),
        dt if time::is_datetime(dt) || time::is_time(dt) => {
            fits(i64::try_from(v).is_ok(), (v as i64).to_le_bytes().to_vec())
        }
        _ => Err(mismatch("an integer", dimension)),
    }
}

macro_rules! integer_range_value {
    ($($t:ty),*) => {$(
        impl RangeValue for $t {
            fn bound_bytes(&self, dimension: &Dimension) -> Result<Vec<u8>, String> {
                integer_bound(i128::from(*self), dimension)
            }
        }
    )*};
}

integer_range_value!(i8, u8, i16, u16, i32, u32, i64, u64);

impl RangeValue for f64 {
    fn bound_bytes(&self, dimension: &Dimension) -> Result<Vec<u8>, String> {
        match dimension.datatype {
            Datatype::Float64 => Ok(self.to_le_bytes().to_vec()),
            Datatype::Float32 if f64::from(*self as f32) == *self || self.is_nan() => {
                Ok((*self as f32).to_le_bytes().to_vec())
            }
            Datatype::Float32 => Err(format!(
                "{self} is not exactly a FLOAT32 value (dimension {:?}); give an f32",
                dimension.name
            )),
            _ => Err(mismatch("an f64", dimension)),
        }
    }
}

impl RangeValue for f32 {
    fn bound_bytes(&self, dimension: &Dimension) -> Result<Vec<u8>, String> {
        match dimension.datatype {
            Datatype::Float32 => Ok(self.to_le_bytes().to_vec()),
            Datatype::Float64 => Ok(f64::from(*self).to_le_bytes().to_vec()),
            _ => Err(mismatch("an f32", dimension)),
        }
    }
}

impl RangeValue for &str {
    fn bound_bytes(&self, dimension: &Dimension) -> Result<Vec<u8>, String> {
        if dimension.var {
            Ok(self.as_bytes().to_vec())
        } else {
            Err(mismatch("a string", dimension))
        }
    }
}

impl RangeValue for String {
    fn bound_bytes(&self, dimension: &Dimension) -> Result<Vec<u8>, String> {
        self.as_str().bound_bytes(dimension)
    }
}

impl RangeValue for Timestamp {
    fn bound_bytes(&self, dimension: &Dimension) -> Result<Vec<u8>, String> {
        if !time::is_datetime(dimension.datatype) {
            return Err(mismatch("a timestamp", dimension));
        }
        time::timestamp_to_count(*self, dimension.datatype)
            .map(|c| c.to_le_bytes().to_vec())
            .map_err(|e| format!("dimension {:?}: {e}", dimension.name))
    }
}

impl RangeValue for DateTime {
    fn bound_bytes(&self, dimension: &Dimension) -> Result<Vec<u8>, String> {
        let utc = self
            .to_zoned(jiff::tz::TimeZone::UTC)
            .map_err(|e| format!("dimension {:?}: {e}", dimension.name))?;
        utc.timestamp().bound_bytes(dimension)
    }
}

impl RangeValue for Date {
    fn bound_bytes(&self, dimension: &Dimension) -> Result<Vec<u8>, String> {
        self.to_datetime(jiff::civil::Time::midnight())
            .bound_bytes(dimension)
    }
}

impl RangeValue for SignedDuration {
    fn bound_bytes(&self, dimension: &Dimension) -> Result<Vec<u8>, String> {
        if !time::is_time(dimension.datatype) {
            return Err(mismatch("a duration", dimension));
        }
        time::duration_to_count(*self, dimension.datatype)
            .map(|c| c.to_le_bytes().to_vec())
            .map_err(|e| format!("dimension {:?}: {e}", dimension.name))
    }
}
