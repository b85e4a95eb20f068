//! The one-number key of a numeric coordinate, shared by the global-order
//! sort (`cell_order`) and the typed tile ranks (`tile_rank`).

use crate::filter::Datatype;
use crate::schema::Scalar;

/// How a numeric coordinate becomes a u64 that sorts as `Scalar::compare`
/// sorts the value: integers by value, floats numerically with -0 equal to
/// 0 and NaN after everything. For integers the key is also exact: two
/// keys differ by what the values differ by.
#[derive(Clone, Copy)]
pub(super) enum NumKey {
    Signed(usize),
    Unsigned(usize),
    F32,
    F64,
}

impl NumKey {
    /// The key kind of a datatype; `None` for strings.
    pub(super) fn of(datatype: Datatype) -> Option<NumKey> {
        use Datatype::*;
        Some(match datatype {
            Float32 => NumKey::F32,
            Float64 => NumKey::F64,
            Int8 => NumKey::Signed(1),
            Int16 => NumKey::Signed(2),
            Int32 => NumKey::Signed(4),
            Uint8 | Bool => NumKey::Unsigned(1),
            Uint16 => NumKey::Unsigned(2),
            Uint32 => NumKey::Unsigned(4),
            Uint64 => NumKey::Unsigned(8),
            // INT64, DATETIME_*, TIME_*, as `Scalar::decode` reads them.
            t if t.size() == 8 && matches!(Scalar::decode(t, &[0; 8]), Some(Scalar::Int(_))) => {
                NumKey::Signed(8)
            }
            _ => return None,
        })
    }

    fn float(f: f64) -> u64 {
        if f.is_nan() {
            return u64::MAX;
        }
        // -0 compares equal to 0.
        let bits = if f == 0.0 { 0 } else { f.to_bits() };
        if bits >> 63 == 1 {
            !bits
        } else {
            bits | 1 << 63
        }
    }

    /// The key of a value given as a `Scalar` (a domain bound); `None`
    /// when the value is not of this kind.
    pub(super) fn of_scalar(self, value: &Scalar) -> Option<u64> {
        match (self, value) {
            (NumKey::Signed(_), Scalar::Int(v)) => {
                i64::try_from(*v).ok().map(|v| (v as u64) ^ 1 << 63)
            }
            (NumKey::Unsigned(_), Scalar::Int(v)) => u64::try_from(*v).ok(),
            (NumKey::F32 | NumKey::F64, Scalar::Float(f)) => Some(Self::float(*f)),
            _ => None,
        }
    }

    /// The key of the value stored little-endian at the start of `bytes`
    /// (`u64::MAX` when `bytes` is too short). Each width reads as its own
    /// integer, so that the per-cell loops calling this stay branch-light.
    #[inline(always)]
    pub(super) fn key(self, bytes: &[u8]) -> u64 {
        const SIGN: u64 = 1 << 63;
        fn read<const N: usize>(bytes: &[u8]) -> Option<[u8; N]> {
            bytes.first_chunk::<N>().copied()
        }
        let key = match self {
            NumKey::Signed(1) => read::<1>(bytes).map(|b| i8::from_le_bytes(b) as u64 ^ SIGN),
            NumKey::Signed(2) => read::<2>(bytes).map(|b| i16::from_le_bytes(b) as u64 ^ SIGN),
            NumKey::Signed(4) => read::<4>(bytes).map(|b| i32::from_le_bytes(b) as u64 ^ SIGN),
            NumKey::Signed(_) => read::<8>(bytes).map(|b| i64::from_le_bytes(b) as u64 ^ SIGN),
            NumKey::Unsigned(1) => read::<1>(bytes).map(|b| b[0] as u64),
            NumKey::Unsigned(2) => read::<2>(bytes).map(|b| u16::from_le_bytes(b) as u64),
            NumKey::Unsigned(4) => read::<4>(bytes).map(|b| u32::from_le_bytes(b) as u64),
            NumKey::Unsigned(_) => read::<8>(bytes).map(u64::from_le_bytes),
            NumKey::F32 => read::<4>(bytes).map(|b| Self::float(f32::from_le_bytes(b) as f64)),
            NumKey::F64 => read::<8>(bytes).map(|b| Self::float(f64::from_le_bytes(b))),
        };
        key.unwrap_or(u64::MAX)
    }
}
