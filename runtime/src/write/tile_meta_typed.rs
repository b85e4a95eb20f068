//! The min, max and sum of a tile of numeric cells computed straight off
//! the tile's bytes, one loop per datatype (monomorphized, no per-cell
//! enum): the fast path of [`tile_meta::fixed_tile`](super::tile_meta::fixed_tile)
//! for packed tiles. It follows the generic path's rules exactly (tested
//! against it): a cell equal to the running min or max replaces it, a NaN
//! replaces either and is replaced by the next cell, and a sum that
//! saturates stops there.

use crate::filter::Datatype;

/// A numeric cell read off little-endian bytes, with how it sums.
trait NumCell: Copy + PartialOrd {
    const SIZE: usize;
    /// The starting min (the type's greatest value) and max (its lowest).
    const GREATEST: Self;
    const LOWEST: Self;
    /// The running sum (i64, u64 or f64).
    type Sum: Copy + Default;
    /// Reads one cell of exactly `SIZE` bytes.
    fn read(bytes: &[u8]) -> Self;
    /// Adds the cell to `sum` as TileDB does; true when it saturated.
    fn add_to(self, sum: &mut Self::Sum) -> bool;
    fn sum_bytes(sum: Self::Sum) -> [u8; 8];
}

/// An integer cell: its sum cannot overflow while `cells × the greatest
/// magnitude` stays within `SUM_LIMIT`, and then adds without checks.
trait IntCell: NumCell + Ord + Into<i128> + TryFrom<i128> {
    const SUM_LIMIT: i128;
    fn add_unchecked(self, sum: Self::Sum) -> Self::Sum;
    /// Two unchecked sums added, wrapping as [`IntCell::add_unchecked`]
    /// does (so lanes summed apart and joined give the same bits).
    fn join_unchecked(a: Self::Sum, b: Self::Sum) -> Self::Sum;
}

macro_rules! signed_cell {
    ($t:ty) => {
        impl NumCell for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            const GREATEST: Self = <$t>::MAX;
            const LOWEST: Self = <$t>::MIN;
            type Sum = i64;
            fn read(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().unwrap_or_default())
            }
            fn add_to(self, sum: &mut i64) -> bool {
                // Overflow only happens with both signs equal: it saturates
                // towards the value's sign.
                match sum.checked_add(self as i64) {
                    Some(s) => {
                        *sum = s;
                        false
                    }
                    None => {
                        *sum = if self > 0 { i64::MAX } else { i64::MIN };
                        true
                    }
                }
            }
            fn sum_bytes(sum: i64) -> [u8; 8] {
                sum.to_le_bytes()
            }
        }

        impl IntCell for $t {
            const SUM_LIMIT: i128 = i64::MAX as i128;
            fn add_unchecked(self, sum: i64) -> i64 {
                sum.wrapping_add(self as i64)
            }
            fn join_unchecked(a: i64, b: i64) -> i64 {
                a.wrapping_add(b)
            }
        }
    };
}

macro_rules! unsigned_cell {
    ($t:ty) => {
        impl NumCell for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            const GREATEST: Self = <$t>::MAX;
            const LOWEST: Self = 0;
            type Sum = u64;
            fn read(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().unwrap_or_default())
            }
            fn add_to(self, sum: &mut u64) -> bool {
                match sum.checked_add(self as u64) {
                    Some(s) => {
                        *sum = s;
                        false
                    }
                    None => {
                        *sum = u64::MAX;
                        true
                    }
                }
            }
            fn sum_bytes(sum: u64) -> [u8; 8] {
                sum.to_le_bytes()
            }
        }

        impl IntCell for $t {
            const SUM_LIMIT: i128 = u64::MAX as i128;
            fn add_unchecked(self, sum: u64) -> u64 {
                sum.wrapping_add(self as u64)
            }
            fn join_unchecked(a: u64, b: u64) -> u64 {
                a.wrapping_add(b)
            }
        }
    };
}

/// A floating-point cell: its value as the f64 it is summed as.
trait FloatCell: NumCell<Sum = f64> {
    fn wide(self) -> f64;
}

macro_rules! float_cell {
    ($t:ty) => {
        impl FloatCell for $t {
            fn wide(self) -> f64 {
                self as f64
            }
        }

        impl NumCell for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            const GREATEST: Self = <$t>::MAX;
            const LOWEST: Self = <$t>::MIN;
            type Sum = f64;
            fn read(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().unwrap_or_default())
            }
            fn add_to(self, sum: &mut f64) -> bool {
                let (s, v) = (*sum, self as f64);
                // TileDB's test: same sign and no room left below f64::MAX.
                if (s < 0.0) == (v < 0.0) && s.abs() > f64::MAX - v.abs() {
                    *sum = if s < 0.0 { f64::MIN } else { f64::MAX };
                    return true;
                }
                *sum = s + v;
                false
            }
            fn sum_bytes(sum: f64) -> [u8; 8] {
                sum.to_le_bytes()
            }
        }
    };
}

signed_cell!(i8);
signed_cell!(i16);
signed_cell!(i32);
signed_cell!(i64);
unsigned_cell!(u8);
unsigned_cell!(u16);
unsigned_cell!(u32);
unsigned_cell!(u64);
float_cell!(f32);
float_cell!(f64);

/// What the scan of a tile found: the cells holding the min and max (`None`
/// when no valid cell replaced the starting extremes, or when the values
/// are given instead), and the sum.
pub(super) struct Scanned {
    pub(super) min_at: Option<usize>,
    pub(super) max_at: Option<usize>,
    /// The min's and max's bytes where `min_at` and `max_at` are `None`:
    /// the starting extremes (the type's greatest and lowest value), or an
    /// integer tile's min and max themselves (equal integers have equal
    /// bytes, so which cell held them does not matter).
    pub(super) min: Vec<u8>,
    pub(super) max: Vec<u8>,
    pub(super) sum: [u8; 8],
}

/// Scans the cells of `data` (packed `T`s) in one pass; `valid(i)` tells
/// whether cell `i` counts.
fn scan<T: NumCell>(
    data: &[u8],
    valid: impl Fn(usize) -> bool,
    want_min_max: bool,
    want_sum: bool,
    to_bytes: fn(T) -> Vec<u8>,
) -> Scanned {
    let (mut lo, mut hi) = (T::GREATEST, T::LOWEST);
    let (mut min_at, mut max_at) = (None, None);
    let mut sum = T::Sum::default();
    let mut summing = want_sum;
    for (i, bytes) in data.chunks_exact(T::SIZE).enumerate() {
        if !valid(i) {
            continue;
        }
        let v = T::read(bytes);
        if want_min_max {
            // Written as the generic path compares: "not greater" replaces
            // (so equal cells and NaNs replace the running value).
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            if !(lo < v) {
                (lo, min_at) = (v, Some(i));
            }
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            if !(hi > v) {
                (hi, max_at) = (v, Some(i));
            }
        }
        if summing && v.add_to(&mut sum) {
            summing = false;
        }
    }
    Scanned {
        min_at,
        max_at,
        min: to_bytes(T::GREATEST),
        max: to_bytes(T::LOWEST),
        sum: if want_sum { T::sum_bytes(sum) } else { [0; 8] },
    }
}

fn scan_as<T: NumCell>(
    data: &[u8],
    validity: Option<&[bool]>,
    want_min_max: bool,
    want_sum: bool,
    to_bytes: fn(T) -> Vec<u8>,
) -> Scanned {
    // Two monomorphized loops: the common tile without validity tests
    // nothing per cell.
    match validity {
        None => scan::<T>(data, |_| true, want_min_max, want_sum, to_bytes),
        Some(v) => scan::<T>(
            data,
            |i| v.get(i).copied().unwrap_or(true),
            want_min_max,
            want_sum,
            to_bytes,
        ),
    }
}

/// [`scan_as`] of floats without validity, in one pass with no per-cell
/// branch: the min and max kept as values (the cell that last replaced the
/// running value has exactly its bytes: reading and writing a float keeps
/// every bit, NaNs' included), and the sum added unchecked while the
/// greatest magnitude is tracked. When no partial sum can come near
/// `f64::MAX` (cells × greatest magnitude within a quarter of it, a margin
/// far above the rounding of so many additions), TileDB's saturation test
/// can never fire and the unchecked sum is its sum, bit for bit; otherwise
/// (infinities, huge values) the tile is scanned again cell by cell.
fn scan_floats<T: FloatCell>(
    data: &[u8],
    want_min_max: bool,
    want_sum: bool,
    to_bytes: fn(T) -> Vec<u8>,
) -> Scanned {
    let (mut lo, mut hi) = (T::GREATEST, T::LOWEST);
    let (mut sum, mut magnitude) = (0f64, 0f64);
    for v in data.chunks_exact(T::SIZE).map(T::read) {
        // The rules of `scan`: "not greater" replaces (equal cells and
        // NaNs too).
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        {
            lo = if !(lo < v) { v } else { lo };
            hi = if !(hi > v) { v } else { hi };
        }
        let wide = v.wide();
        sum += wide;
        // A NaN is not a magnitude (`max` ignores it); its sum is NaN
        // either way.
        magnitude = magnitude.max(wide.abs());
    }
    let cells = (data.len() / T::SIZE) as f64;
    // `magnitude` is never NaN, nor the product (no cell, no magnitude).
    if want_sum && cells * magnitude > f64::MAX / 4.0 {
        return scan::<T>(data, |_| true, want_min_max, want_sum, to_bytes);
    }
    Scanned {
        min_at: None,
        max_at: None,
        min: to_bytes(lo),
        max: to_bytes(hi),
        sum: if want_sum { sum.to_le_bytes() } else { [0; 8] },
    }
}

/// [`scan_as`] of integers: a tile without validity in passes the compiler
/// can vectorize. The min and max as values (the loop's "an equal cell
/// replaces" rule cannot change an integer's bytes). The
/// sum unchecked when no prefix can overflow (cells × greatest magnitude
/// within the sum's range), else checked cell by cell as TileDB adds.
fn scan_ints<T: IntCell>(
    data: &[u8],
    validity: Option<&[bool]>,
    want_min_max: bool,
    want_sum: bool,
    to_bytes: fn(T) -> Vec<u8>,
) -> Scanned {
    if validity.is_some() {
        return scan_as(data, validity, want_min_max, want_sum, to_bytes);
    }
    let (mut scanned, sum_ok) = int_scanned::<T>(int_partial::<T>(data), want_sum, to_bytes);
    if !sum_ok {
        let mut sum = T::Sum::default();
        for v in data.chunks_exact(T::SIZE).map(T::read) {
            if v.add_to(&mut sum) {
                break;
            }
        }
        scanned.sum = T::sum_bytes(sum);
    }
    scanned
}

/// The extremes, the wrapping sum and the number of some integer cells. A
/// tile scanned in pieces (chunk by chunk, as it is gathered and filtered)
/// joins its pieces' partial scans: min, max and a wrapping sum do not
/// depend on the order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct IntPartial {
    lo: i128,
    hi: i128,
    /// The sum's bits, wrapping (i64 and u64 sums wrap alike).
    sum: u64,
    cells: u64,
}

impl IntPartial {
    /// The scan of no cell.
    pub(super) const EMPTY: IntPartial = IntPartial {
        lo: i128::MAX,
        hi: i128::MIN,
        sum: 0,
        cells: 0,
    };

    /// The scan of both pieces' cells.
    pub(super) fn join(self, other: IntPartial) -> IntPartial {
        IntPartial {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
            sum: self.sum.wrapping_add(other.sum),
            cells: self.cells + other.cells,
        }
    }
}

/// One pass over packed `T`s: four lanes, cells taken four at a time, so
/// that no lane waits on the previous cell's result.
fn int_partial<T: IntCell>(data: &[u8]) -> IntPartial {
    const LANES: usize = 4;
    let mut lanes = [(T::GREATEST, T::LOWEST, T::Sum::default()); LANES];
    let mut quads = data.chunks_exact(LANES * T::SIZE);
    for quad in &mut quads {
        for (lane, cell) in lanes.iter_mut().zip(quad.chunks_exact(T::SIZE)) {
            let v = T::read(cell);
            *lane = (lane.0.min(v), lane.1.max(v), v.add_unchecked(lane.2));
        }
    }
    for v in quads.remainder().chunks_exact(T::SIZE).map(T::read) {
        let lane = &mut lanes[0];
        *lane = (lane.0.min(v), lane.1.max(v), v.add_unchecked(lane.2));
    }
    let cells = (data.len() / T::SIZE) as u64;
    if cells == 0 {
        return IntPartial::EMPTY;
    }
    let (lo, hi, sum) = lanes.into_iter().fold(
        (T::GREATEST, T::LOWEST, T::Sum::default()),
        |(lo, hi, s), lane| (lo.min(lane.0), hi.max(lane.1), T::join_unchecked(s, lane.2)),
    );
    IntPartial {
        lo: lo.into(),
        hi: hi.into(),
        sum: u64::from_le_bytes(T::sum_bytes(sum)),
        cells,
    }
}

/// The scan of the cells `partial` covers, and whether its unchecked sum
/// is the sum (no prefix can overflow: cells × greatest magnitude within
/// the sum's range); when not, the sum must be added checked, in order.
fn int_scanned<T: IntCell>(
    partial: IntPartial,
    want_sum: bool,
    to_bytes: fn(T) -> Vec<u8>,
) -> (Scanned, bool) {
    let value = |v: i128, start: T| match partial.cells {
        0 => start,
        _ => T::try_from(v).unwrap_or(start),
    };
    let (lo, hi) = (value(partial.lo, T::GREATEST), value(partial.hi, T::LOWEST));
    // With no cell, `lo` and `hi` are the starting extremes (i128's own,
    // whose magnitude does not fit): the sum is 0.
    let sum_ok = !want_sum || partial.cells == 0 || {
        let magnitude = partial.lo.abs().max(partial.hi.abs());
        (partial.cells as i128).saturating_mul(magnitude) <= T::SUM_LIMIT
    };
    let scanned = Scanned {
        min_at: None,
        max_at: None,
        // With no cell, `lo` and `hi` are the starting extremes.
        min: to_bytes(lo),
        max: to_bytes(hi),
        sum: if want_sum && sum_ok {
            partial.sum.to_le_bytes()
        } else {
            [0; 8]
        },
    };
    (scanned, sum_ok)
}

/// Calls `$f::<T>($args)` with the integer type `T` that [`scan_packed`]
/// scans `$t` as, or gives `$none` for a type it does not scan as an
/// integer.
macro_rules! as_int_type {
    ($t:expr, $none:expr, $f:ident($($arg:expr),*)) => {{
        use Datatype::*;
        match $t {
            Int8 => $f::<i8>($($arg),*),
            Uint8 | Bool => $f::<u8>($($arg),*),
            Int16 => $f::<i16>($($arg),*),
            Uint16 => $f::<u16>($($arg),*),
            Int32 => $f::<i32>($($arg),*),
            Uint32 => $f::<u32>($($arg),*),
            Uint64 => $f::<u64>($($arg),*),
            Char | StringAscii | Float32 | Float64 => $none,
            // Int64 and the 8-byte date and time types.
            t if t.size() == 8 => $f::<i64>($($arg),*),
            _ => $none,
        }
    }};
}

/// The partial scan of packed cells of `t`, for a tile scanned in pieces;
/// `None` where [`scan_packed`] does not scan `t` as integers.
pub(super) fn int_partial_of(t: Datatype, data: &[u8]) -> Option<IntPartial> {
    fn of<T: IntCell>(data: &[u8]) -> Option<IntPartial> {
        Some(int_partial::<T>(data))
    }
    as_int_type!(t, None, of(data))
}

/// What [`scan_packed`] finds over the cells whose partial scans were
/// joined into `partial`; `None` where the sum must be added cell by cell
/// (then scan the joined cells with [`scan_packed`]).
pub(super) fn int_scanned_of(t: Datatype, partial: IntPartial, want_sum: bool) -> Option<Scanned> {
    fn of<T: IntCell>(partial: IntPartial, want_sum: bool) -> Option<Scanned> {
        let to_bytes = |v: T| {
            let wide: i128 = v.into();
            wide.to_le_bytes()[..T::SIZE].to_vec()
        };
        match int_scanned::<T>(partial, want_sum, to_bytes) {
            (scanned, true) => Some(scanned),
            (_, false) => None,
        }
    }
    as_int_type!(t, None, of(partial, want_sum))
}

/// The typed scan of a packed tile of `t` cells, one value each (`None`
/// for a type the generic path keeps: strings, chars, odd sizes).
pub(super) fn scan_packed(
    t: Datatype,
    data: &[u8],
    validity: Option<&[bool]>,
    want_min_max: bool,
    want_sum: bool,
) -> Option<Scanned> {
    use Datatype::*;
    let (m, s) = (want_min_max, want_sum);
    Some(match t {
        Int8 => scan_ints::<i8>(data, validity, m, s, |v| v.to_le_bytes().into()),
        Uint8 | Bool => scan_ints::<u8>(data, validity, m, s, |v| v.to_le_bytes().into()),
        Int16 => scan_ints::<i16>(data, validity, m, s, |v| v.to_le_bytes().into()),
        Uint16 => scan_ints::<u16>(data, validity, m, s, |v| v.to_le_bytes().into()),
        Int32 => scan_ints::<i32>(data, validity, m, s, |v| v.to_le_bytes().into()),
        Uint32 => scan_ints::<u32>(data, validity, m, s, |v| v.to_le_bytes().into()),
        Uint64 => scan_ints::<u64>(data, validity, m, s, |v| v.to_le_bytes().into()),
        Float32 if validity.is_none() => scan_floats::<f32>(data, m, s, |v| v.to_le_bytes().into()),
        Float64 if validity.is_none() => scan_floats::<f64>(data, m, s, |v| v.to_le_bytes().into()),
        Float32 => scan_as::<f32>(data, validity, m, s, |v| v.to_le_bytes().into()),
        Float64 => scan_as::<f64>(data, validity, m, s, |v| v.to_le_bytes().into()),
        Char | StringAscii => return None,
        // Int64 and the 8-byte date and time types, as the generic path
        // decodes them.
        _ if t.size() == 8 => scan_ints::<i64>(data, validity, m, s, |v| v.to_le_bytes().into()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::tile_meta::{fixed_tile, kinds, Packed, TileMeta};
    use crate::filter::Datatype;

    /// A small deterministic generator (xorshift64*).
    struct Bits(u64);

    impl Bits {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    /// A tile's min, max, sum and null count, compared whole.
    type Recorded = (Option<Vec<u8>>, Option<Vec<u8>>, [u8; 8], u64);

    fn as_tuple(m: &TileMeta) -> Recorded {
        (m.min.clone(), m.max.clone(), m.sum, m.null_count)
    }

    /// Tiles of `size`-byte cells that stress every rule: random bits (NaNs
    /// and infinities among floats), the type's extremes repeated (sums
    /// that overflow both ways), ties, NaN first and last, one cell, none.
    fn tiles(size: usize, bits: &mut Bits) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let random: Vec<u8> = (0..size * 300).map(|_| bits.next() as u8).collect();
        out.push(random.clone());
        let high = |b: u8| {
            let mut cell = vec![0xff; size];
            cell[size - 1] = b;
            cell
        };
        // The greatest signed value (0x7f..), the lowest (0x80 00..), and
        // all ones (-1, or the unsigned maximum, or a NaN).
        for cell in [high(0x7f), vec![0; size], high(0xff)] {
            out.push(cell.repeat(50));
        }
        let mut lowest = vec![0; size];
        lowest[size - 1] = 0x80;
        out.push(lowest.repeat(50));
        out.push([high(0x7f), lowest.clone()].concat().repeat(20));
        let nan: Vec<u8> = match size {
            4 => f32::NAN.to_le_bytes().into(),
            8 => f64::NAN.to_le_bytes().into(),
            _ => high(0x7f),
        };
        out.push([nan.clone(), random[..size * 20].to_vec(), nan.clone()].concat());
        // Floats of modest size (the unchecked sum), signed zeros in both
        // orders, infinities, a NaN among them.
        let floats: Vec<f64> = (0..300)
            .map(|i| match i % 7 {
                0 => 0.0,
                1 => -0.0,
                _ => (bits.next() % 2001) as f64 / 8.0 - 125.0,
            })
            .collect();
        let as_cells = |values: &[f64]| -> Vec<u8> {
            values
                .iter()
                .flat_map(|&v| match size {
                    4 => (v as f32).to_le_bytes().to_vec(),
                    _ => v.to_le_bytes()[..size].to_vec(),
                })
                .collect()
        };
        out.push(as_cells(&floats));
        out.push(as_cells(&[-0.0, 0.0, -0.0, 5.0, 0.0, -0.0]));
        out.push(as_cells(&[f64::INFINITY, 1.0, f64::NEG_INFINITY, 2.0]));
        out.push(as_cells(&[f64::INFINITY; 5]));
        out.push(as_cells(&[f64::NEG_INFINITY; 5]));
        out.push(as_cells(&[1e300, 1e300, -1e300, 1e300, 1e300]));
        out.push([as_cells(&floats[..50]), nan, as_cells(&floats[50..])].concat());
        out.push(random[..size].to_vec());
        out.push(Vec::new());
        out
    }

    #[test]
    fn the_typed_path_equals_the_generic_one_for_every_datatype() {
        let mut bits = Bits(0x9e37_79b9_7f4a_7c15);
        let mut typed_types = 0;
        for &t in Datatype::ALL {
            let size = t.size() as usize;
            for is_dim in [false, true] {
                let kinds = kinds(t, is_dim, false, 1);
                for data in tiles(size, &mut bits) {
                    let n = data.len() / size;
                    let list: Vec<&[u8]> = data.chunks_exact(size).collect();
                    let packed = Packed {
                        data: &data,
                        cell_size: size,
                    };
                    let random_validity: Vec<bool> =
                        (0..n).map(|_| !bits.next().is_multiple_of(3)).collect();
                    let short_validity = random_validity[..n / 2].to_vec();
                    let no_valid_cell = vec![false; n];
                    let validities = [
                        None,
                        Some(random_validity.as_slice()),
                        Some(short_validity.as_slice()),
                        Some(no_valid_cell.as_slice()),
                    ];
                    for validity in validities {
                        let typed = fixed_tile(t, kinds, &packed, validity);
                        let generic = fixed_tile(t, kinds, list.as_slice(), validity);
                        assert_eq!(
                            as_tuple(&typed),
                            as_tuple(&generic),
                            "{t} dim {is_dim}, {n} cells, validity {validity:?}"
                        );
                    }
                }
                if super::scan_packed(t, &[], None, kinds.min_max, kinds.sum).is_some()
                    && (kinds.min_max || kinds.sum)
                {
                    typed_types += 1;
                }
            }
        }
        // Every numeric type (both as attribute and as dimension) took the
        // typed path: 10 plain numeric types, Bool and 22 date and time types.
        assert_eq!(typed_types, 2 * (10 + 1 + 22));
    }

    #[test]
    fn signed_sums_saturate_and_stop() {
        let cells: Vec<u8> = [i64::MAX, 1, i64::MIN, 5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let kinds = kinds(Datatype::Int64, false, false, 1);
        let packed = Packed {
            data: &cells,
            cell_size: 8,
        };
        let meta = fixed_tile(Datatype::Int64, kinds, &packed, None);
        // Saturated at the second cell: the later cells add nothing.
        assert_eq!(meta.sum, i64::MAX.to_le_bytes());
        assert_eq!(meta.min, Some(i64::MIN.to_le_bytes().to_vec()));
        assert_eq!(meta.max, Some(i64::MAX.to_le_bytes().to_vec()));
    }
}
