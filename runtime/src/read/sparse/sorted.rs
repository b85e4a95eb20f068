//! The common case of sparse reads, without a per-cell plan: no delete
//! conditions, no per-cell timestamps, fixed-size numeric dimensions.
//!
//! Each cell is reduced to an order key (one `u64` per dimension that sorts
//! as the coordinate does) and a location packed so that sorting locations
//! gives TileDB's order among equal coordinates: newest fragment first, then
//! stored order. Row- and column-major results sort (key, location) pairs in
//! parallel; a global-order or unordered read of one fragment keeps the
//! stored order, which is the global order TileDB wrote. Results are
//! gathered column by column, in parallel for fixed-size fields.

use rayon::prelude::*;

use crate::error::{Cause, Error, Result};
use crate::filter::Datatype;
use crate::fragment::{Field, FragmentMetadata};
use crate::memory;
use crate::read::query::{ReadQuery, ResultOrder};
use crate::read::result::{Column, ReadResult};
use crate::read::sparse::fragment_tiles::FragmentTiles;
use crate::read::tiles::TileData;
use crate::schema::{ArraySchema, Scalar};
use crate::snapshot::Snapshot;

/// The most a result column reserves ahead, in bytes.
pub(crate) const MAX_RESERVE: u64 = 1 << 30;

pub(crate) const SLOT_BITS: u32 = 24;
pub(crate) const CELL_BITS: u32 = 24;
pub(crate) const PRIORITY_BITS: u32 = 64 - SLOT_BITS - CELL_BITS;

pub(crate) fn pack(priority: usize, slot: usize, cell: u64) -> u64 {
    ((priority as u64) << (SLOT_BITS + CELL_BITS)) | ((slot as u64) << CELL_BITS) | cell
}

/// Tiles keyed at once.
pub(crate) const KEY_BATCH: usize = 64;

/// The kept cells of one tile as (key, location); `None` leaves the read to
/// the general path.
pub(crate) type TileKeys<const N: usize> = Option<Result<Vec<([u64; N], u64)>>>;

pub(crate) fn unpack(location: u64) -> (usize, usize, u64) {
    (
        (location >> (SLOT_BITS + CELL_BITS)) as usize,
        ((location >> CELL_BITS) & ((1 << SLOT_BITS) - 1)) as usize,
        location & ((1 << CELL_BITS) - 1),
    )
}

/// A `u64` that sorts as the coordinate does under [`Scalar::compare`];
/// `None` for NaN (left to the general path).
pub(crate) fn order_key(datatype: Datatype, bytes: &[u8]) -> Option<u64> {
    // The common coordinate types straight from their bytes.
    match (datatype, bytes.first_chunk::<8>()) {
        (Datatype::Int64, Some(b)) => return Some(u64::from_le_bytes(*b) ^ (1 << 63)),
        (Datatype::Uint64, Some(b)) => return Some(u64::from_le_bytes(*b)),
        (Datatype::Float64, Some(b)) => return float_key(f64::from_le_bytes(*b)),
        _ => {}
    }
    match Scalar::decode(datatype, bytes)? {
        Scalar::Int(v) if datatype == Datatype::Uint64 => u64::try_from(v).ok(),
        Scalar::Int(v) => Some((i64::try_from(v).ok()? as u64) ^ (1 << 63)),
        Scalar::Float(f) => float_key(f),
        Scalar::Bytes(_) => None,
    }
}

/// The order key of a float; `None` for NaN.
pub(crate) fn float_key(f: f64) -> Option<u64> {
    if f.is_nan() {
        return None;
    }
    // -0 and +0 compare equal.
    let bits = if f == 0.0 { 0 } else { f.to_bits() };
    Some(if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    })
}

/// Whether every dimension is a fixed-size number (what order keys cover).
pub(crate) fn fixed_numeric_dimensions(schema: &ArraySchema) -> bool {
    schema.dimensions.iter().all(|d| {
        !d.var
            && matches!(d.datatype.size(), 1 | 2 | 4 | 8)
            && !matches!(
                Scalar::decode(d.datatype, &[0; 8]),
                None | Some(Scalar::Bytes(_))
            )
    })
}

/// The query's ranges as order keys, per dimension; `None` when a bound has
/// the wrong size or no key (NaN), which the general path reports or handles.
pub(crate) fn keyed_ranges(
    schema: &ArraySchema,
    query: &ReadQuery,
) -> Option<Vec<Vec<(u64, u64)>>> {
    let mut ranges = Vec::with_capacity(schema.dimensions.len());
    for (d, dim) in schema.dimensions.iter().enumerate() {
        let mut keyed = Vec::new();
        for (lo, hi) in query.ranges.get(d).map_or(&[][..], |r| &r[..]) {
            if lo.len() as u64 != dim.datatype.size() || hi.len() as u64 != dim.datatype.size() {
                return None;
            }
            keyed.push((order_key(dim.datatype, lo)?, order_key(dim.datatype, hi)?));
        }
        ranges.push(keyed);
    }
    Some(ranges)
}

/// Runs the read if it is the common case; `None` leaves it to the general
/// path (nothing has been changed then).
pub(crate) fn try_read(
    array: &Snapshot,
    query: &ReadQuery,
    loaded: &[FragmentTiles<'_>],
    attributes: &[usize],
) -> Option<Result<ReadResult>> {
    let schema = array.schema();
    let n = schema.dimensions.len();
    let fixed_numeric = fixed_numeric_dimensions(schema);
    let with_tiles: Vec<usize> = (0..loaded.len())
        .filter(|&i| !loaded[i].tiles.is_empty())
        .collect();
    let eligible = array.conditions().is_empty()
        && fixed_numeric
        && (1..=4).contains(&n)
        && loaded.len() < (1 << PRIORITY_BITS)
        && loaded.iter().all(|f| {
            let frag = f.fragment;
            crate::format::generated::dimensions_stored_apart(frag.version)
                && !frag.has_timestamps
                && !frag.has_delete_meta
                && frag.schema.dimensions.len() == n
                && f.tiles.len() < (1 << SLOT_BITS)
                && f.tiles
                    .iter()
                    .all(|t| frag.cell_num(*t, 0) < (1 << CELL_BITS))
        })
        && match query.layout {
            // Overlapping ranges repeat cells in these orders: one range
            // per dimension here.
            ResultOrder::RowMajor | ResultOrder::ColMajor => {
                query.ranges.iter().all(|r| r.len() <= 1)
            }
            ResultOrder::Global | ResultOrder::Unordered => with_tiles.len() <= 1,
        };
    if !eligible {
        return None;
    }
    let ranges = keyed_ranges(schema, query)?;
    // Fragments by priority: latest timestamp first, then latest index.
    let mut by_priority: Vec<usize> = (0..loaded.len()).collect();
    by_priority
        .sort_by_key(|&i| std::cmp::Reverse((loaded[i].fragment.name.timestamp_range().0, i)));

    let col_major = query.layout == ResultOrder::ColMajor;
    macro_rules! dispatch {
        ($($n:literal),*) => {
            match (col_major, n) {
                $(
                    (false, $n) => run::<false, $n>(array, query, loaded, &by_priority, &ranges, attributes),
                    (true, $n) => run::<true, $n>(array, query, loaded, &by_priority, &ranges, attributes),
                )*
                _ => None,
            }
        };
    }
    dispatch!(1, 2, 3, 4)
}

/// The decoded tiles of dimension `d` of a fragment, one per slot.
pub(crate) fn dim_tiles<'a>(frag: &'a FragmentTiles<'_>, d: usize) -> Option<&'a [TileData]> {
    frag.fields.get(&Field::Dimension(d)).map(Vec::as_slice)
}

pub(crate) fn run<const COL_MAJOR: bool, const N: usize>(
    array: &Snapshot,
    query: &ReadQuery,
    loaded: &[FragmentTiles<'_>],
    by_priority: &[usize],
    ranges: &[Vec<(u64, u64)>],
    attributes: &[usize],
) -> Option<Result<ReadResult>> {
    let schema = array.schema();
    let n = schema.dimensions.len();
    let (open_start, open_end) = (
        array.options().timestamp_start,
        array.options().timestamp_end,
    );
    let sorted = matches!(query.layout, ResultOrder::RowMajor | ResultOrder::ColMajor);
    // (key per dimension in comparison order, location)
    let most: u64 = loaded
        .iter()
        .flat_map(|fr| fr.tiles.iter().map(|t| fr.fragment.cell_num(*t, 0)))
        .fold(0u64, u64::saturating_add);
    // Sorted reads collect (key, location) pairs; a read in stored order
    // (one fragment) collects locations only, dropping duplicates as it goes.
    let mut cells: Vec<([u64; N], u64)> = Vec::new();
    let mut locations: Vec<u64> = Vec::new();
    // Counts from the fragment metadata: the reservation is capped.
    let most = most.min(MAX_RESERVE / 16) as usize;
    if sorted {
        cells.reserve(most);
    } else {
        locations.reserve(most);
    }
    let mut last_key: Option<[u64; N]> = None;
    for (priority, &fi) in by_priority.iter().enumerate() {
        let frag = &loaded[fi];
        let f = frag.fragment;
        let t1 = f.name.timestamp_range().0;
        if t1 < open_start || t1 > open_end || frag.tiles.is_empty() {
            continue;
        }
        let tiles: Vec<&[TileData]> = (0..n).map(|d| dim_tiles(frag, d)).collect::<Option<_>>()?;
        // Keys of every tile, tiles in parallel; `None` leaves the read to
        // the general path.
        // Batches of tiles bound the memory of keys not yet merged.
        for first in (0..frag.tiles.len()).step_by(KEY_BATCH) {
            let batch = &frag.tiles[first..(first + KEY_BATCH).min(frag.tiles.len())];
            let per_tile: Vec<TileKeys<N>> = batch
                .par_iter()
                .enumerate()
                .map(|(i, &tile)| {
                    tile_keys::<COL_MAJOR, N>(f, &tiles, ranges, (priority, first + i), tile)
                })
                .collect();
            for keys in per_tile {
                let keys = match keys? {
                    Ok(keys) => keys,
                    Err(e) => return Some(Err(e)),
                };
                if sorted {
                    cells.extend(keys);
                    continue;
                }
                for (key, location) in keys {
                    // Of equal coordinates (adjacent in stored order) the last
                    // stored cell stays.
                    if !schema.allows_dups && last_key == Some(key) {
                        locations.pop();
                    }
                    locations.push(location);
                    last_key = Some(key);
                }
            }
        }
    }
    if sorted {
        cells.par_sort_unstable();
    }
    if sorted && !schema.allows_dups {
        keep_newest_of_equal(&mut cells);
    }

    if sorted {
        locations = cells.into_iter().map(|(_, location)| location).collect();
        // The collection reuses the (key, location) list's allocation, which
        // is several times larger: give the rest back before the result
        // columns are allocated.
        locations.shrink_to_fit();
    }
    let locate = |location: u64| {
        let (priority, slot, cell) = unpack(location);
        (
            by_priority.get(priority).copied().unwrap_or(usize::MAX),
            slot,
            cell,
        )
    };
    Some(gather(
        array, query, loaded, &locations, &locate, attributes,
    ))
}

/// One dimension of a tile as [`tile_keys`] reads it: its values (`size`
/// bytes each, of `datatype`), where its key goes in a cell's key, and the
/// query's ranges on it as order keys (empty: every value).
struct KeyColumn<'a> {
    values: &'a [u8],
    size: usize,
    datatype: Datatype,
    at: usize,
    ranges: &'a [(u64, u64)],
}

/// The kept cells of one tile (`tile`, at `slot` of a fragment of
/// `priority`) as (key, location): their order keys (dimensions in
/// comparison order), those outside `ranges` left out. `None` (a NaN
/// coordinate, a missing tile) leaves the read to the general path.
fn tile_keys<const COL_MAJOR: bool, const N: usize>(
    f: &FragmentMetadata,
    tiles: &[&[TileData]],
    ranges: &[Vec<(u64, u64)>],
    (priority, slot): (usize, usize),
    tile: u64,
) -> TileKeys<N> {
    let n = tiles.len();
    let count = f.cell_num(tile, 0) as usize;
    let mut columns: Vec<KeyColumn<'_>> = Vec::with_capacity(n);
    for (d, dim) in f.schema.dimensions.iter().enumerate() {
        let size = dim.datatype.size() as usize;
        let data = &tiles[d].get(slot)?.data;
        if data.len() < count * size {
            let cause = Cause::Truncated {
                needed: (count * size) as u64,
                available: data.len() as u64,
            };
            let at = format!("fragment {}, tile {tile}", f.name);
            return Some(Err(Error::corrupt(0, "coordinates", cause).within(at)));
        }
        let at = if COL_MAJOR { n - 1 - d } else { d };
        columns.push(KeyColumn {
            values: data.as_slice(),
            size,
            datatype: dim.datatype,
            at,
            ranges: ranges[d].as_slice(),
        });
    }
    // Cell by cell, keeping only the cells inside the ranges: a tile's keys
    // are never held whole (a small subarray keeps a few of each tile's
    // cells, and fresh memory costs a page fault a page). Every value is
    // still keyed, so a NaN anywhere leaves the read to the general path
    // as before.
    let unbounded = columns.iter().all(|column| column.ranges.is_empty());
    let mut kept = Vec::with_capacity(if unbounded { count } else { 0 });
    for c in 0..count {
        let mut key = [0u64; N];
        let mut inside = true;
        for column in &columns {
            let size = column.size;
            let k = order_key(
                column.datatype,
                column.values.get(c * size..(c + 1) * size)?,
            )?;
            key[column.at] = k;
            inside &= column.ranges.is_empty()
                || column.ranges.iter().any(|(lo, hi)| *lo <= k && k <= *hi);
        }
        if inside {
            kept.push((key, pack(priority, slot, c as u64)));
        }
    }
    Some(Ok(kept))
}

/// Duplicates of a sorted (key, location) list: of equal coordinates only
/// the newest fragment's last stored cell stays. Compacted in place: a
/// second list as long as the first would double the largest allocation
/// of the read.
fn keep_newest_of_equal<const N: usize>(cells: &mut Vec<([u64; N], u64)>) {
    let mut kept = 0;
    let mut i = 0;
    while i < cells.len() {
        let mut j = i + 1;
        let first_priority = unpack(cells[i].1).0;
        let mut winner = i;
        while j < cells.len() && cells[j].0 == cells[i].0 {
            if unpack(cells[j].1).0 == first_priority {
                winner = j;
            }
            j += 1;
        }
        // kept <= i <= winner: nothing not yet read is overwritten.
        cells[kept] = cells[winner];
        kept += 1;
        i = j;
    }
    cells.truncate(kept);
}

pub(crate) fn short() -> Error {
    Error::corrupt(0, "tile", Cause::EndsEarly)
}

/// Turns a packed location into (fragment index, slot, cell).
pub(crate) type Locate<'a> = dyn Fn(u64) -> (usize, usize, u64) + Sync + 'a;

/// Per fragment (by index), the decoded tiles of one field, by slot.
pub(crate) type TilesByFragment<'t> = Vec<Option<&'t [TileData]>>;

pub(crate) fn field_tiles<'t>(
    loaded: &'t [FragmentTiles<'_>],
    field: impl Fn(&FragmentTiles<'_>) -> Option<Field>,
) -> TilesByFragment<'t> {
    loaded
        .iter()
        .map(|fr| fr.fields.get(&field(fr)?).map(Vec::as_slice))
        .collect()
}

/// One output column of fixed-size cells, gathered in parallel blocks.
pub(crate) fn gather_fixed(
    out: &mut [u8],
    size: usize,
    locations: &[u64],
    locate: &Locate<'_>,
    tiles: &TilesByFragment<'_>,
    fill: &[u8],
) -> Result<()> {
    const BLOCK: usize = 4096;
    let size = size.max(1);
    let copy = |(dst, locations): (&mut [u8], &[u64])| -> Result<()> {
        // Runs of consecutive cells of one tile (consecutive packed
        // locations) are copied at once.
        let mut i = 0;
        while i < locations.len() {
            let mut run = 1;
            while i + run < locations.len() && locations[i + run] == locations[i] + run as u64 {
                run += 1;
            }
            let (f, slot, cell) = locate(locations[i]);
            let out = dst.get_mut(i * size..(i + run) * size).ok_or_else(short)?;
            match tiles.get(f).copied().flatten().and_then(|t| t.get(slot)) {
                Some(tile) => {
                    let from = cell as usize * size;
                    out.copy_from_slice(tile.data.get(from..from + out.len()).ok_or_else(short)?);
                }
                None => {
                    let fill = fill.get(..size).ok_or_else(short)?;
                    for one in out.chunks_exact_mut(size) {
                        one.copy_from_slice(fill);
                    }
                }
            }
            i += run;
        }
        Ok(())
    };
    // One block is copied here: waking the pool costs more than the copy.
    if locations.len() <= BLOCK {
        return copy((out, locations));
    }
    out.par_chunks_mut(size * BLOCK)
        .zip(locations.par_chunks(BLOCK))
        .try_for_each(copy)
}

pub(crate) fn gather(
    array: &Snapshot,
    query: &ReadQuery,
    loaded: &[FragmentTiles<'_>],
    locations: &[u64],
    locate: &Locate<'_>,
    attributes: &[usize],
) -> Result<ReadResult> {
    let schema = array.schema();
    let total = locations.len();
    let mut dims = Vec::new();
    if !query.skip_coordinates {
        for (d, dim) in schema.dimensions.iter().enumerate() {
            let mut col = Column::new(&dim.name, dim.datatype, Some(1), false);
            let size = dim.datatype.size() as usize;
            col.data = memory::zeroed_bytes(total * size);
            let tiles = field_tiles(loaded, |_| Some(Field::Dimension(d)));
            gather_fixed(&mut col.data, size, locations, locate, &tiles, &[])?;
            dims.push(col);
        }
    }
    let mut attrs = Vec::new();
    for &a in attributes {
        let attr = &schema.attributes[a];
        let mut col = Column::new(&attr.name, attr.datatype, attr.cell_val_num, attr.nullable);
        // Per fragment, the attribute under its index in the fragment's schema.
        let tiles = field_tiles(loaded, |fr| {
            fr.fragment
                .schema
                .attribute(&attr.name)
                .map(|(i, _)| Field::Attribute(i))
        });
        let tile_of = |f: usize, slot: usize| -> Option<&TileData> {
            tiles.get(f).copied().flatten()?.get(slot)
        };
        match attr.cell_val_num {
            Some(v) if attr.fill.len() as u64 == v as u64 * attr.datatype.size() => {
                let size = (v as u64 * attr.datatype.size()) as usize;
                col.data = memory::zeroed_bytes(total * size);
                gather_fixed(&mut col.data, size, locations, locate, &tiles, &attr.fill)?;
            }
            _ => {
                for &location in locations {
                    let (f, slot, cell) = locate(location);
                    match tile_of(f, slot) {
                        Some(tile) => col.data.extend_from_slice(tile.cell(cell)),
                        None => col.data.extend_from_slice(&attr.fill),
                    }
                    if let Some(o) = &mut col.offsets {
                        o.push(col.data.len() as u64);
                    }
                }
            }
        }
        if let Some(validity) = &mut col.validity {
            *validity = locations
                .par_iter()
                .map(|&location| locate(location))
                .map(|(f, slot, cell)| match tile_of(f, slot) {
                    Some(tile) => u8::from(tile.valid(cell)),
                    None => u8::from(attr.fill_validity),
                })
                .collect();
        }
        attrs.push(col);
    }
    Ok(ReadResult {
        dimensions: dims,
        attributes: attrs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys order every pair of values as `Scalar::compare` does.
    fn check(datatype: Datatype, values: &[Vec<u8>]) {
        for a in values {
            for b in values {
                let (sa, sb) = (
                    Scalar::decode(datatype, a).unwrap(),
                    Scalar::decode(datatype, b).unwrap(),
                );
                let (ka, kb) = (order_key(datatype, a), order_key(datatype, b));
                assert_eq!(
                    ka.unwrap().cmp(&kb.unwrap()),
                    sa.compare(&sb),
                    "{datatype:?} {sa:?} {sb:?}"
                );
            }
        }
    }

    #[test]
    fn order_keys_sort_as_values_compare() {
        let floats = [
            f64::NEG_INFINITY,
            -2.5,
            -1e-300,
            -0.0,
            0.0,
            1e-300,
            3.0,
            f64::INFINITY,
        ];
        check(Datatype::Float64, &floats.map(|f| f.to_le_bytes().to_vec()));
        check(
            Datatype::Float32,
            &floats.map(|f| (f as f32).to_le_bytes().to_vec()),
        );
        let ints = [i64::MIN, -70_000, -1, 0, 1, 255, i64::MAX];
        check(Datatype::Int64, &ints.map(|v| v.to_le_bytes().to_vec()));
        check(
            Datatype::Int16,
            &[i16::MIN, -1, 0, 1, i16::MAX].map(|v| v.to_le_bytes().to_vec()),
        );
        check(
            Datatype::Uint64,
            &[0, 1, 1 << 63, u64::MAX].map(|v: u64| v.to_le_bytes().to_vec()),
        );
        check(Datatype::Uint8, &[0u8, 1, 127, 128, 255].map(|v| vec![v]));
        assert_eq!(order_key(Datatype::Float64, &f64::NAN.to_le_bytes()), None);
    }

    #[test]
    fn packed_locations_round_trip_and_sort_by_priority_then_stored_order() {
        let a = pack(1, 5, 9);
        assert_eq!(unpack(a), (1, 5, 9));
        assert!(pack(0, 900, 9_000) < pack(1, 0, 0));
        assert!(pack(2, 3, 4) < pack(2, 3, 5));
        assert!(pack(2, 3, 9_999) < pack(2, 4, 0));
    }
}
