//! Coordinates as integer keys in their order, so that one plan cuts
//! integer and float dimensions alike: an integer is its own key; a float's
//! key is its magnitude's bits with its sign (so -0 and +0 share key 0,
//! as they compare equal, and every key between two finite floats' keys is
//! a finite float).

use crate::filter::Datatype;
use crate::read::query::encode_scalar;
use crate::schema::Scalar;

/// How a dimension's values map to keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scale {
    /// Integers (and dates, times): the value.
    Int,
    /// `FLOAT32` values.
    F32,
    /// `FLOAT64` values.
    F64,
}

impl Scale {
    /// The scale of a fixed-size dimension's datatype.
    pub(crate) fn of(datatype: Datatype) -> Scale {
        match datatype {
            Datatype::Float32 => Scale::F32,
            Datatype::Float64 => Scale::F64,
            _ => Scale::Int,
        }
    }

    /// The key of a value (`None` for NaN or a value of another kind).
    pub(crate) fn key(self, value: &Scalar) -> Option<i128> {
        match (self, value) {
            (Scale::Int, Scalar::Int(v)) => Some(*v),
            (Scale::F64, Scalar::Float(f)) if !f.is_nan() => {
                let bits = i128::from(f.abs().to_bits());
                Some(if *f < 0.0 { -bits } else { bits })
            }
            (Scale::F32, Scalar::Float(f)) if !f.is_nan() => {
                let f = *f as f32;
                let bits = i128::from(f.abs().to_bits());
                Some(if f < 0.0 { -bits } else { bits })
            }
            _ => None,
        }
    }

    /// The value of a key, as a float.
    pub(crate) fn value(self, key: i128) -> f64 {
        let sign = if key < 0 { -1.0 } else { 1.0 };
        let bits = key.unsigned_abs();
        match self {
            Scale::Int => key as f64,
            Scale::F64 => sign * f64::from_bits(bits as u64),
            Scale::F32 => sign * f64::from(f32::from_bits(bits as u32)),
        }
    }

    /// The bytes of the value of `key` as a `datatype` bound.
    pub(crate) fn encode(self, datatype: Datatype, key: i128) -> Vec<u8> {
        match self {
            Scale::Int => encode_scalar(datatype, &Scalar::Int(key)).unwrap_or_default(),
            Scale::F64 => self.value(key).to_le_bytes().to_vec(),
            Scale::F32 => (self.value(key) as f32).to_le_bytes().to_vec(),
        }
    }

    /// Where to cut the keys `a..=b` (`a < b`) in two: the middle value,
    /// so that halves of a float range are halves of its values.
    pub(crate) fn midpoint(self, a: i128, b: i128) -> i128 {
        match self {
            Scale::Int => a + (b - a) / 2,
            float => {
                let middle = float.value(a) / 2.0 + float.value(b) / 2.0;
                float
                    .key(&Scalar::Float(middle))
                    .unwrap_or(a)
                    .clamp(a, b - 1)
            }
        }
    }

    /// The share of a tile's values `lo..=hi` (keys) inside `spans`:
    /// `None` when they do not meet.
    pub(crate) fn share(self, (lo, hi): (i128, i128), spans: &[(i128, i128)]) -> Option<f64> {
        let met = spans.iter().filter(|&&(a, b)| a <= hi && lo <= b);
        if self == Scale::Int {
            let inside: i128 = met
                .map(|&(a, b)| b.min(hi) - a.max(lo) + 1)
                .fold(0, i128::saturating_add);
            return (inside > 0).then(|| (inside as f64 / (hi - lo + 1) as f64).min(1.0));
        }
        let width = self.value(hi) - self.value(lo);
        let mut any = false;
        let mut inside = 0.0;
        for &(a, b) in met {
            any = true;
            inside += self.value(b.min(hi)) - self.value(a.max(lo));
        }
        any.then(|| {
            if width > 0.0 {
                (inside / width).clamp(0.0, 1.0)
            } else {
                1.0
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_keys_keep_the_order_and_merge_the_zeros() {
        let values = [-1e300, -2.5, -1e-310, -0.0, 0.0, 1e-310, 1.0, 2.5, 1e300];
        let keys: Vec<i128> = values
            .iter()
            .map(|v| Scale::F64.key(&Scalar::Float(*v)).unwrap())
            .collect();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(keys[3], keys[4]);
        for (v, k) in values.iter().zip(&keys) {
            assert_eq!(Scale::F64.value(*k), *v);
        }
        let (a, b) = (keys[1], keys[7]);
        let m = Scale::F64.midpoint(a, b);
        assert!(a <= m && m < b);
        assert_eq!(Scale::F64.value(m), 0.0);
        let k32 = Scale::F32.key(&Scalar::Float(0.1f32.into())).unwrap();
        assert_eq!(
            Scale::F32.encode(Datatype::Float32, k32),
            0.1f32.to_le_bytes()
        );
        assert_eq!(Scale::Int.share((0, 9), &[(5, 14)]), Some(0.5));
        assert_eq!(Scale::Int.share((0, 9), &[(10, 14)]), None);
    }
}
