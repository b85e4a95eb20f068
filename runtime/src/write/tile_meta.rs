//! Per-tile metadata as TileDB 2.30 computes it while writing (its
//! `TileMetadataGenerator`): min and max, sum, null count. Readers use them to
//! answer aggregates over fully covered tiles, so they must be exact.

use std::cmp::Ordering;

use crate::filter::Datatype;

use super::tile_meta_typed;
pub(super) use super::tile_meta_typed::IntPartial;

/// Which metadata a field carries.
#[derive(Debug, Clone, Copy)]
pub struct MetaKinds {
    pub(crate) min_max: bool,
    /// The field's tiles carry a sum (numeric fixed fields with one value per cell).
    pub sum: bool,
}

fn is_unsummable(t: Datatype) -> bool {
    use Datatype::*;
    matches!(
        t,
        Any | Blob
            | GeomWkb
            | GeomWkt
            | StringUtf8
            | StringUtf16
            | StringUtf32
            | StringUcs2
            | StringUcs4
    )
}

/// The kinds of metadata of a field (`is_dim`: a dimension).
pub fn kinds(t: Datatype, is_dim: bool, var: bool, cell_val_num: u32) -> MetaKinds {
    let is_char_like = matches!(t, Datatype::Char | Datatype::StringAscii);
    let min_max = !is_dim && (is_char_like || (!var && cell_val_num == 1)) && !is_unsummable(t);
    let sum = !var && cell_val_num == 1 && !is_unsummable(t) && t != Datatype::StringAscii;
    MetaKinds { min_max, sum }
}

/// `strncmp` over at most `n` bytes: stops at the first difference or NUL.
fn strncmp(a: &[u8], b: &[u8], n: usize) -> Ordering {
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        if x != y {
            return x.cmp(&y);
        }
        if x == 0 {
            return Ordering::Equal;
        }
    }
    Ordering::Equal
}

/// A numeric value, compared as C++ compares it (NaN compares false).
#[derive(Clone, Copy)]
enum Num {
    I(i128),
    F(f64),
}

impl Num {
    fn lt(self, o: Num) -> bool {
        match (self, o) {
            (Num::I(a), Num::I(b)) => a < b,
            (Num::F(a), Num::F(b)) => a < b,
            _ => false,
        }
    }
    fn gt(self, o: Num) -> bool {
        match (self, o) {
            (Num::I(a), Num::I(b)) => a > b,
            (Num::F(a), Num::F(b)) => a > b,
            _ => false,
        }
    }
}

fn decode_num(t: Datatype, b: &[u8]) -> Option<Num> {
    use Datatype::*;
    let arr = |n: usize| b.get(..n);
    Some(match t {
        Int8 => Num::I(i8::from_le_bytes([*b.first()?]) as i128),
        Uint8 | Bool => Num::I(*b.first()? as i128),
        Int16 => Num::I(i16::from_le_bytes(arr(2)?.try_into().ok()?) as i128),
        Uint16 => Num::I(u16::from_le_bytes(arr(2)?.try_into().ok()?) as i128),
        Int32 => Num::I(i32::from_le_bytes(arr(4)?.try_into().ok()?) as i128),
        Uint32 => Num::I(u32::from_le_bytes(arr(4)?.try_into().ok()?) as i128),
        Uint64 => Num::I(u64::from_le_bytes(arr(8)?.try_into().ok()?) as i128),
        Float32 => Num::F(f32::from_le_bytes(arr(4)?.try_into().ok()?) as f64),
        Float64 => Num::F(f64::from_le_bytes(arr(8)?.try_into().ok()?)),
        _ if t.size() == 8 => Num::I(i64::from_le_bytes(arr(8)?.try_into().ok()?) as i128),
        _ => return None,
    })
}

/// The bytes of the type's greatest and lowest values: the starting min and
/// max of a numeric tile, kept when every cell is null.
fn numeric_extremes(t: Datatype) -> (Vec<u8>, Vec<u8>) {
    use Datatype::*;
    match t {
        Int8 => (vec![i8::MAX as u8], vec![i8::MIN as u8]),
        Uint8 | Bool => (vec![u8::MAX], vec![0]),
        Int16 => (i16::MAX.to_le_bytes().into(), i16::MIN.to_le_bytes().into()),
        Uint16 => (u16::MAX.to_le_bytes().into(), 0u16.to_le_bytes().into()),
        Int32 => (i32::MAX.to_le_bytes().into(), i32::MIN.to_le_bytes().into()),
        Uint32 => (u32::MAX.to_le_bytes().into(), 0u32.to_le_bytes().into()),
        Uint64 => (u64::MAX.to_le_bytes().into(), 0u64.to_le_bytes().into()),
        Float32 => (f32::MAX.to_le_bytes().into(), f32::MIN.to_le_bytes().into()),
        Float64 => (f64::MAX.to_le_bytes().into(), f64::MIN.to_le_bytes().into()),
        _ => (i64::MAX.to_le_bytes().into(), i64::MIN.to_le_bytes().into()),
    }
}

/// The metadata of one tile.
#[derive(Debug, Clone, Default)]
pub struct TileMeta {
    /// `None` when the field has no min/max, or a string tile had no value.
    pub min: Option<Vec<u8>>,
    /// `None` when the field has no min/max, or a string tile had no value.
    pub max: Option<Vec<u8>>,
    /// The sum's 8 bytes (i64, u64 or f64).
    pub sum: [u8; 8],
    pub(crate) null_count: u64,
}

impl TileMeta {
    /// TileDB's writer records a tile's min and max only when some cell of
    /// the tile is not null (`null_count != cell_num` in its writers, with
    /// `cell_num` the tile's cell count in the fragment metadata: for a
    /// dense tile every cell, padding included). Otherwise the footer keeps
    /// the zeros it was sized with: a fixed field's min and max are zero
    /// bytes of the cell's size, a var-sized field's are empty. Applies that
    /// rule to metadata computed over a tile of `tile_cells` cells.
    pub fn into_recorded(mut self, nullable: bool, tile_cells: u64, var: bool) -> TileMeta {
        if nullable && tile_cells > 0 && self.null_count == tile_cells {
            let zeros = |v: &Option<Vec<u8>>| {
                v.as_ref()
                    .map(|v| if var { Vec::new() } else { vec![0; v.len()] })
            };
            self.min = zeros(&self.min);
            self.max = zeros(&self.max);
        }
        self
    }
}

/// How a type sums: `I` in i64, `U` in u64, `F` in f64.
#[derive(Clone, Copy)]
enum SumKind {
    I,
    U,
    F,
}

fn sum_kind(t: Datatype) -> SumKind {
    use Datatype::*;
    match t {
        Uint8 | Uint16 | Uint32 | Uint64 | Bool => SumKind::U,
        Float32 | Float64 => SumKind::F,
        _ => SumKind::I,
    }
}

/// Adds `value` to `sum` the way TileDB does; returns true when the sum
/// saturated, after which TileDB adds nothing more (tile or fragment).
fn add_to_sum(kind: SumKind, sum: &mut [u8; 8], value: Num) -> bool {
    match (kind, value) {
        (SumKind::I, Num::I(v)) => {
            let s = i64::from_le_bytes(*sum);
            let v = v as i64;
            if s > 0 && v > 0 && s > i64::MAX - v {
                *sum = i64::MAX.to_le_bytes();
                return true;
            }
            if s < 0 && v < 0 && s < i64::MIN - v {
                *sum = i64::MIN.to_le_bytes();
                return true;
            }
            *sum = s.wrapping_add(v).to_le_bytes();
        }
        (SumKind::U, Num::I(v)) => {
            let s = u64::from_le_bytes(*sum);
            let v = v as u64;
            if s > u64::MAX - v {
                *sum = u64::MAX.to_le_bytes();
                return true;
            }
            *sum = (s + v).to_le_bytes();
        }
        (SumKind::F, Num::F(v)) => {
            let s = f64::from_le_bytes(*sum);
            if (s < 0.0) == (v < 0.0) && s.abs() > f64::MAX - v.abs() {
                let r = if s < 0.0 { f64::MIN } else { f64::MAX };
                *sum = r.to_le_bytes();
                return true;
            }
            *sum = (s + v).to_le_bytes();
        }
        _ => {}
    }
    false
}

/// Adds a tile's stored sum to a fragment's; true when it saturated.
pub fn add_sums(t: Datatype, sum: &mut [u8; 8], tile: [u8; 8]) -> bool {
    let kind = sum_kind(t);
    let value = match kind {
        SumKind::I => Num::I(i64::from_le_bytes(tile) as i128),
        SumKind::U => Num::I(u64::from_le_bytes(tile) as i128),
        SumKind::F => Num::F(f64::from_le_bytes(tile)),
    };
    add_to_sum(kind, sum, value)
}

/// The cells of a tile as the metadata generator reads them: a list of
/// slices, or a tile's packed bytes (the writer's, without a copy).
pub trait CellList {
    /// The number of cells.
    fn count(&self) -> usize;
    /// The bytes of cell `i`.
    fn cell(&self, i: usize) -> &[u8];
    /// The cells as one packed run of bytes and the cell size, when they
    /// are (the typed fast path reads them straight).
    fn packed(&self) -> Option<(&[u8], usize)> {
        None
    }
}

impl CellList for [&[u8]] {
    fn count(&self) -> usize {
        self.len()
    }
    fn cell(&self, i: usize) -> &[u8] {
        self[i]
    }
}

/// Fixed-size cells packed one after another.
pub struct Packed<'a> {
    /// The cells' bytes.
    pub data: &'a [u8],
    /// The bytes of one cell (not 0).
    pub cell_size: usize,
}

impl CellList for Packed<'_> {
    fn count(&self) -> usize {
        self.data.len() / self.cell_size.max(1)
    }
    fn cell(&self, i: usize) -> &[u8] {
        &self.data[i * self.cell_size..(i + 1) * self.cell_size]
    }
    fn packed(&self) -> Option<(&[u8], usize)> {
        Some((self.data, self.cell_size))
    }
}

/// Metadata of a fixed-size tile of `cells` (each `cell_size` bytes).
pub fn fixed_tile<C: CellList + ?Sized>(
    t: Datatype,
    kinds: MetaKinds,
    cells: &C,
    validity: Option<&[bool]>,
) -> TileMeta {
    let mut meta = TileMeta::default();
    let valid = |i: usize| {
        validity
            .map(|v| v.get(i).copied().unwrap_or(true))
            .unwrap_or(true)
    };
    let n = cells.count();
    // Cells past the end of `validity` count as valid.
    meta.null_count = validity.map_or(0, |v| {
        v.iter().take(n).filter(|&&valid| !valid).count() as u64
    });
    let char_like = matches!(t, Datatype::Char | Datatype::StringAscii);
    if let Some(meta) = typed_fixed_tile(t, kinds, cells, validity, meta.null_count) {
        return meta;
    }
    if kinds.min_max {
        if char_like {
            let mut min: Option<&[u8]> = None;
            let mut max: Option<&[u8]> = None;
            for i in 0..n {
                if !valid(i) {
                    continue;
                }
                let c = cells.cell(i);
                let n = c.len();
                if min.is_none_or(|m| strncmp(m, c, n) == Ordering::Greater) {
                    min = Some(c);
                }
                if max.is_none_or(|m| strncmp(m, c, n) == Ordering::Less) {
                    max = Some(c);
                }
            }
            let size = if n > 0 { cells.cell(0).len() } else { 0 };
            meta.min = Some(min.map(<[u8]>::to_vec).unwrap_or_else(|| vec![0; size]));
            meta.max = Some(max.map(<[u8]>::to_vec).unwrap_or_else(|| vec![0; size]));
        } else {
            let (min, max) = numeric_extremes(t);
            // The running extremes are kept decoded, with the cell they came
            // from; a cell equal to one replaces it, as in TileDB.
            let (mut min_at, mut max_at) = (None, None);
            if let (Some(mut lo), Some(mut hi)) = (decode_num(t, &min), decode_num(t, &max)) {
                for i in 0..n {
                    if !valid(i) {
                        continue;
                    }
                    let Some(v) = decode_num(t, cells.cell(i)) else {
                        continue;
                    };
                    if !lo.lt(v) {
                        (lo, min_at) = (v, Some(i));
                    }
                    if !hi.gt(v) {
                        (hi, max_at) = (v, Some(i));
                    }
                }
            }
            meta.min = Some(min_at.map_or(min, |i| cells.cell(i).to_vec()));
            meta.max = Some(max_at.map_or(max, |i| cells.cell(i).to_vec()));
        }
    }
    if kinds.sum {
        meta.sum = slabbed_sum(t, cells, validity, n);
    }
    meta
}

/// [`fixed_tile`] over packed numeric cells, one loop per datatype; `None`
/// where the generic path is needed (lists of cells, chars and strings,
/// cells of another size than the type's).
fn typed_fixed_tile<C: CellList + ?Sized>(
    t: Datatype,
    kinds: MetaKinds,
    cells: &C,
    validity: Option<&[bool]>,
    null_count: u64,
) -> Option<TileMeta> {
    let (data, cell_size) = cells.packed()?;
    if cell_size as u64 != t.size() || !(kinds.min_max || kinds.sum) {
        return None;
    }
    let scanned = tile_meta_typed::scan_packed(t, data, validity, kinds.min_max, kinds.sum)?;
    let cell = |i: usize| data[i * cell_size..(i + 1) * cell_size].to_vec();
    let (min, max) = match kinds.min_max {
        true => (
            Some(scanned.min_at.map_or(scanned.min, cell)),
            Some(scanned.max_at.map_or(scanned.max, cell)),
        ),
        false => (None, None),
    };
    Some(TileMeta {
        min,
        max,
        sum: scanned.sum,
        null_count,
    })
}

/// The partial scan of a piece of a packed tile of `t` cells (one value
/// each) for [`int_tile_from_pieces`]; `None` where the typed scan does not
/// take `t` as integers (floats, chars and strings keep [`fixed_tile`]).
pub(super) fn int_piece(t: Datatype, data: &[u8]) -> Option<IntPartial> {
    tile_meta_typed::int_partial_of(t, data)
}

/// [`fixed_tile`] of a packed tile without validity scanned piece by piece
/// ([`int_piece`] of each piece, joined); `None` where the sum must be
/// added checked, cell by cell (then [`fixed_tile`] over the whole tile).
pub(super) fn int_tile_from_pieces(
    t: Datatype,
    kinds: MetaKinds,
    joined: IntPartial,
) -> Option<TileMeta> {
    let scanned = tile_meta_typed::int_scanned_of(t, joined, kinds.sum)?;
    let (min, max) = match kinds.min_max {
        true => (Some(scanned.min), Some(scanned.max)),
        false => (None, None),
    };
    Some(TileMeta {
        min,
        max,
        sum: scanned.sum,
        null_count: 0,
    })
}

/// The sum TileDB's metadata generator computes when it is handed the
/// cells `slab` at a time: a sum that saturates stops the slab it is in,
/// and the next slab goes on adding to the saturated value (one slab of
/// every cell is the sum of a whole tile).
pub fn slabbed_sum<C: CellList + ?Sized>(
    t: Datatype,
    cells: &C,
    validity: Option<&[bool]>,
    slab: usize,
) -> [u8; 8] {
    let kind = sum_kind(t);
    let mut sum = [0u8; 8];
    let valid = |i: usize| validity.is_none_or(|v| v.get(i).copied().unwrap_or(true));
    let mut start = 0;
    let n = cells.count();
    while start < n {
        let end = start.saturating_add(slab.max(1)).min(n);
        for i in start..end {
            if !valid(i) {
                continue;
            }
            let c = cells.cell(i);
            let value = if t == Datatype::Char {
                c.first().map(|b| Num::I(*b as i8 as i128))
            } else {
                decode_num(t, c)
            };
            if let Some(v) = value {
                if add_to_sum(kind, &mut sum, v) {
                    break;
                }
            }
        }
        start = end;
    }
    sum
}

/// Var-sized cells gathered one after another, each from its start to the
/// next cell's (the last to the end).
pub struct VarCells<'a> {
    /// The cells' values.
    pub data: &'a [u8],
    /// Where each cell starts in `data`, ascending.
    pub starts: &'a [u64],
}

impl CellList for VarCells<'_> {
    fn count(&self) -> usize {
        self.starts.len()
    }
    fn cell(&self, i: usize) -> &[u8] {
        let start = self.starts[i] as usize;
        let end = self
            .starts
            .get(i + 1)
            .map_or(self.data.len(), |&e| e as usize);
        &self.data[start..end]
    }
}

/// Metadata of a var-sized tile (strings only carry min/max).
pub fn var_tile<C: CellList + ?Sized>(
    kinds: MetaKinds,
    cells: &C,
    validity: Option<&[bool]>,
) -> TileMeta {
    let mut meta = TileMeta::default();
    let valid = |i: usize| {
        validity
            .map(|v| v.get(i).copied().unwrap_or(true))
            .unwrap_or(true)
    };
    // TileDB counts the nulls of a var tile only while computing its min
    // and max: var fields without min/max record no nulls.
    if kinds.min_max {
        meta.null_count = (0..cells.count()).filter(|&i| !valid(i)).count() as u64;
    }
    if kinds.min_max {
        let mut min: Option<&[u8]> = None;
        let mut max: Option<&[u8]> = None;
        for i in 0..cells.count() {
            if !valid(i) {
                continue;
            }
            let c = cells.cell(i);
            match (min, max) {
                (Some(lo), Some(hi)) => {
                    let (lo, hi) = (var_min(lo, c), var_max(hi, c));
                    min = Some(lo);
                    max = Some(hi);
                }
                _ => {
                    min = Some(c);
                    max = Some(c);
                }
            }
        }
        meta.min = Some(min.map(<[u8]>::to_vec).unwrap_or_default());
        meta.max = Some(max.map(<[u8]>::to_vec).unwrap_or_default());
    }
    meta
}

/// The smaller of two strings as TileDB's writer decides it.
pub fn var_min<'a>(current: &'a [u8], value: &'a [u8]) -> &'a [u8] {
    let n = current.len().min(value.len());
    match strncmp(current, value, n) {
        Ordering::Greater => value,
        Ordering::Less => current,
        Ordering::Equal if value.len() < current.len() => value,
        Ordering::Equal => current,
    }
}

/// The greater of two strings as TileDB's writer decides it.
pub fn var_max<'a>(current: &'a [u8], value: &'a [u8]) -> &'a [u8] {
    let n = current.len().min(value.len());
    match strncmp(current, value, n) {
        Ordering::Less => value,
        Ordering::Greater => current,
        Ordering::Equal if value.len() > current.len() => value,
        Ordering::Equal => current,
    }
}

/// The smaller and greater of two fixed values (fragment totals).
pub fn fixed_min_max(t: Datatype, a: &[u8], b: &[u8], want_min: bool) -> Vec<u8> {
    if matches!(t, Datatype::Char | Datatype::StringAscii) {
        let o = strncmp(a, b, a.len());
        let take_b = if want_min {
            o == Ordering::Greater
        } else {
            o == Ordering::Less
        };
        return if take_b { b.to_vec() } else { a.to_vec() };
    }
    match (decode_num(t, a), decode_num(t, b)) {
        (Some(x), Some(y)) => {
            // Keeps `a` only when it compares strictly better (NaN never does).
            let take_b = if want_min { !x.lt(y) } else { !x.gt(y) };
            if take_b {
                b.to_vec()
            } else {
                a.to_vec()
            }
        }
        _ => a.to_vec(),
    }
}
