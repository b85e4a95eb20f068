//! Values as the reader compares them: coordinates, range bounds and query
//! condition operands, decoded from their stored bytes by datatype.

use std::cmp::Ordering;

use crate::filter::datatype::is_byte;
use crate::filter::Datatype;

/// One value of a fixed-size numeric type, or the bytes of a string value.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// Every integer, boolean, date and time type (i128 holds u64 and i64).
    Int(i128),
    /// Both floating-point types.
    Float(f64),
    /// Strings, bytes, blobs: compared as unsigned byte strings.
    Bytes(Vec<u8>),
}

impl Scalar {
    /// Decodes one value of `datatype` from the front of `bytes` (which
    /// must hold at least one value; strings take all of `bytes`).
    pub fn decode(datatype: Datatype, bytes: &[u8]) -> Option<Scalar> {
        use Datatype::*;
        // Every string type and the opaque byte types (BLOB, GEOM_*) are byte
        // strings, as are CHAR and ANY below: the classes come from spec/.
        if datatype.is_string() || is_byte(datatype) {
            return Some(Scalar::Bytes(bytes.to_vec()));
        }
        let b = bytes;
        Some(match datatype {
            Int8 => Scalar::Int(i8::from_le_bytes([*b.first()?]) as i128),
            Char | Any => Scalar::Bytes(bytes.to_vec()),
            Uint8 | Bool => Scalar::Int(*b.first()? as i128),
            Int16 => Scalar::Int(i16::from_le_bytes(b.get(..2)?.try_into().ok()?) as i128),
            Uint16 => Scalar::Int(u16::from_le_bytes(b.get(..2)?.try_into().ok()?) as i128),
            Int32 => Scalar::Int(i32::from_le_bytes(b.get(..4)?.try_into().ok()?) as i128),
            Uint32 => Scalar::Int(u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as i128),
            Uint64 => Scalar::Int(u64::from_le_bytes(b.get(..8)?.try_into().ok()?) as i128),
            Float32 => Scalar::Float(f32::from_le_bytes(b.get(..4)?.try_into().ok()?) as f64),
            Float64 => Scalar::Float(f64::from_le_bytes(b.get(..8)?.try_into().ok()?)),
            // INT64, DATETIME_*, TIME_*
            _ => Scalar::Int(i64::from_le_bytes(b.get(..8)?.try_into().ok()?) as i128),
        })
    }

    /// The order TileDB sorts and compares values in (floats numerically,
    /// NaN after everything; byte strings lexicographically, a prefix first).
    pub fn compare(&self, other: &Scalar) -> Ordering {
        match (self, other) {
            (Scalar::Int(a), Scalar::Int(b)) => a.cmp(b),
            (Scalar::Float(a), Scalar::Float(b)) => a
                .partial_cmp(b)
                .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan())),
            (Scalar::Bytes(a), Scalar::Bytes(b)) => a.cmp(b),
            (Scalar::Int(a), Scalar::Float(b)) => {
                (*a as f64).partial_cmp(b).unwrap_or(Ordering::Less)
            }
            (Scalar::Float(a), Scalar::Int(b)) => {
                a.partial_cmp(&(*b as f64)).unwrap_or(Ordering::Greater)
            }
            (Scalar::Bytes(_), _) => Ordering::Greater,
            (_, Scalar::Bytes(_)) => Ordering::Less,
        }
    }

    /// The value as an i128 if it is an integer.
    pub fn as_int(&self) -> Option<i128> {
        match self {
            Scalar::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The value as a float (integers converted).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Scalar::Int(v) => Some(*v as f64),
            Scalar::Float(v) => Some(*v),
            Scalar::Bytes(_) => None,
        }
    }
}

/// The default fill value of one value of `datatype`: the value of cells never
/// written when the schema stores none (TileDB `constants::fill_value`). Which value each
/// datatype takes is the `default_fill` column of spec/'s Datatype table.
pub fn default_fill(datatype: Datatype) -> Vec<u8> {
    let size = datatype.size() as usize;
    match (datatype.default_fill(), size) {
        // The smallest value of a signed integer of the datatype's size.
        ("min", _) => {
            let mut bytes = vec![0; size];
            if let Some(last) = bytes.last_mut() {
                *last = 0x80;
            }
            bytes
        }
        ("max", _) => vec![0xFF; size],
        ("nan", 4) => f32::NAN.to_le_bytes().to_vec(),
        ("nan", _) => f64::NAN.to_le_bytes().to_vec(),
        _ => vec![0; size],
    }
}

/// The smallest and largest value of an integer-like `datatype` (integers,
/// booleans, dates and times); `None` for the others.
pub fn int_limits(datatype: Datatype) -> Option<(i128, i128)> {
    use Datatype::*;
    Some(match datatype {
        Int8 => (i8::MIN.into(), i8::MAX.into()),
        Uint8 | Bool => (0, u8::MAX.into()),
        Int16 => (i16::MIN.into(), i16::MAX.into()),
        Uint16 => (0, u16::MAX.into()),
        Int32 => (i32::MIN.into(), i32::MAX.into()),
        Uint32 => (0, u32::MAX.into()),
        Uint64 => (0, u64::MAX.into()),
        t if t == Int64 || t.is_datetime() || t.is_time() => (i64::MIN.into(), i64::MAX.into()),
        _ => return None,
    })
}

/// The little-endian bytes of `v` as a `size`-byte integer, wrapping as a
/// C++ integer of that size does.
pub fn int_bytes(v: i128, size: u64) -> Vec<u8> {
    v.to_le_bytes()[..size.min(16) as usize].to_vec()
}

/// The tile extent TileDB gives a dimension without one
/// (`Dimension::set_null_tile_extent_to_range`): `hi - lo + 1` computed in
/// the dimension's type (wrapping like C++) for integers, `hi - lo` for
/// floats; `None` when an integer domain spans its whole type.
pub fn range_extent(datatype: Datatype, lo: &[u8], hi: &[u8]) -> Option<Vec<u8>> {
    match (Scalar::decode(datatype, lo)?, Scalar::decode(datatype, hi)?) {
        (Scalar::Int(l), Scalar::Int(h)) => {
            let (min, max) = int_limits(datatype)?;
            if l == min && h == max {
                return None;
            }
            Some(int_bytes(h - l + 1, datatype.size()))
        }
        (Scalar::Float(l), Scalar::Float(h)) if datatype == Datatype::Float32 => {
            Some(((h as f32) - (l as f32)).to_le_bytes().to_vec())
        }
        (Scalar::Float(l), Scalar::Float(h)) => Some((h - l).to_le_bytes().to_vec()),
        _ => None,
    }
}
