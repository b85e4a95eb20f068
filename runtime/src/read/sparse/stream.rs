//! A global-order or unordered read of one fragment, streamed a batch of
//! tiles at a time in stored order (see [`stream_stored_order`]).

use rayon::prelude::*;

use crate::error::{Cause, Error, Result};
use crate::filter::Datatype;
use crate::fragment::{Field, FragmentMetadata};
use crate::memory;
use crate::read::query::{ReadQuery, ResultOrder};
use crate::read::result::{Column, ReadResult};
use crate::read::sparse::sorted::*;
use crate::read::tiles::{
    load_tiles_pooled, prefetch_tiles, StoredBuffers, TileData, TilePool, TileSelection,
    WantedTiles,
};
use crate::schema::{ArraySchema, Attribute};
use crate::snapshot::Snapshot;

mod whole_tiles;
use whole_tiles::scatter_whole_tiles;

/// Tiles decoded at once by [`stream_stored_order`].
pub(crate) const STREAM_BATCH: usize = 64;

/// A global-order or unordered read of one fragment (the common case of
/// [`try_read`] that keeps the stored order), streamed: tiles are decoded
/// a batch at a time into reused buffers and their kept cells appended to
/// the result, so that memory holds the result and one batch, not every
/// decoded tile of the query. `None` leaves the read to the loading path
/// (nothing has been read then). `tiles` are the fragment's tiles the
/// ranges touch, in stored order.
pub(crate) fn stream_stored_order(
    array: &Snapshot,
    query: &ReadQuery,
    fragment: &FragmentMetadata,
    tiles: &[u64],
    attributes: &[usize],
) -> Option<Result<ReadResult>> {
    let schema = array.schema();
    let n = schema.dimensions.len();
    let (open_start, open_end) = (
        array.options().timestamp_start,
        array.options().timestamp_end,
    );
    let t1 = fragment.name.timestamp_range().0;
    let fixed_numeric = fixed_numeric_dimensions(schema);
    // Every output attribute fixed-size, in the fragment or filled.
    let attrs_fixed = attributes.iter().all(|&a| {
        let attr = &schema.attributes[a];
        attr.cell_val_num
            .is_some_and(|v| attr.fill.len() as u64 == v as u64 * attr.datatype.size())
            && fragment.schema.attribute(&attr.name).is_none_or(|(_, fa)| {
                fa.cell_val_num == attr.cell_val_num && fa.datatype == attr.datatype
            })
    });
    let eligible = matches!(query.layout, ResultOrder::Global | ResultOrder::Unordered)
        && array.conditions().is_empty()
        && fixed_numeric
        && attrs_fixed
        && (1..=4).contains(&n)
        && crate::format::generated::dimensions_stored_apart(fragment.version)
        && !fragment.has_timestamps
        && !fragment.has_delete_meta
        && fragment.schema.dimensions.len() == n
        && fragment
            .schema
            .dimensions
            .iter()
            .zip(&schema.dimensions)
            .all(|(a, b)| a.datatype == b.datatype && !a.var);
    if !eligible {
        return None;
    }
    let ranges = keyed_ranges(schema, query)?;
    Some(stream(
        array, query, fragment, tiles, attributes, &ranges, t1, open_start, open_end,
    ))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn stream(
    array: &Snapshot,
    query: &ReadQuery,
    fragment: &FragmentMetadata,
    tiles: &[u64],
    attributes: &[usize],
    ranges: &[Vec<(u64, u64)>],
    t1: u64,
    open_start: u64,
    open_end: u64,
) -> Result<ReadResult> {
    let schema = array.schema();
    let storage = array.storage();
    let key = array.options().key;
    let n = schema.dimensions.len();
    let (mut dims, mut attrs) = output_columns(schema, query, attributes);
    if t1 < open_start || t1 > open_end || tiles.is_empty() {
        return Ok(ReadResult {
            dimensions: dims,
            attributes: attrs,
        });
    }
    reserve_room(fragment, tiles, schema, attributes, &mut dims, &mut attrs);
    let attr_fields: Vec<Option<Field>> = attributes
        .iter()
        .map(|&a| {
            fragment
                .schema
                .attribute(&schema.attributes[a].name)
                .map(|(i, _)| Field::Attribute(i))
        })
        .collect();
    let dedup = !schema.allows_dups;
    let key_types: Vec<Datatype> = fragment
        .schema
        .dimensions
        .iter()
        .map(|d| d.datatype)
        .collect();
    let mut dim_pools: Vec<TilePool> = (0..n).map(|_| TilePool::default()).collect();
    // Stored tiles of the attributes decoded straight into the result.
    let stored = StoredBuffers::default();
    let mut attr_pools: Vec<TilePool> =
        (0..attributes.len()).map(|_| TilePool::default()).collect();
    // Cells in the result so far, and the order key of the last of them.
    let mut written = 0usize;
    let mut last_key: Option<[u64; 4]> = None;
    // The whole read's tiles, batch after batch, every field's: an object
    // store fetches them ahead a window at a time, many batches a request.
    let fields: Vec<Field> = (0..n)
        .map(Field::Dimension)
        .chain(attr_fields.iter().flatten().copied())
        .collect();
    let ahead: Vec<WantedTiles<'_>> = tiles
        .chunks(STREAM_BATCH)
        .flat_map(|batch| {
            fields.iter().map(move |&field| WantedTiles {
                fragment,
                field,
                tiles: batch,
            })
        })
        .collect();
    prefetch_tiles(storage, &ahead);
    for batch in tiles.chunks(STREAM_BATCH) {
        let coords: Vec<Vec<TileData>> = (0..n)
            .map(|d| {
                load_tiles_pooled(
                    storage,
                    fragment,
                    Field::Dimension(d),
                    TileSelection::whole(batch),
                    0,
                    key.as_ref(),
                    &mut dim_pools[d],
                )
            })
            .collect::<Result<_>>()?;
        let mut kept = kept_in_batch(fragment, batch, &coords, &key_types, ranges, dedup)?;
        // Of equal coordinates (adjacent in stored order) the last stored
        // cell stays, as on the loading path: a tile starting with the key
        // the previous kept cell ended on drops that cell, which is in an
        // earlier tile of this batch or already in the result.
        if dedup {
            written -= drop_duplicates_across_tiles(&mut kept, &mut last_key).min(written);
        }
        let counts: Vec<usize> = kept.iter().map(KeptRuns::count).collect();
        let batch_cells: usize = counts.iter().sum();
        let at = BatchPlace {
            kept: &kept,
            counts: &counts,
            written,
            cells: batch_cells,
        };
        for (d, col) in dims.iter_mut().enumerate() {
            let size = schema.dimensions[d].datatype.size() as usize;
            let out = batch_output(&mut col.data, written, batch_cells, size);
            copy_kept(out, size, &kept, &counts, |slot| {
                coords[d].get(slot).map(|t| &t.data[..])
            })?;
        }
        for (pool, tiles) in dim_pools.iter_mut().zip(coords) {
            pool.recycle(tiles);
        }
        for (i, (col, &a)) in attrs.iter_mut().zip(attributes).enumerate() {
            let attr = &schema.attributes[a];
            let Some(field) = attr_fields[i] else {
                fill_batch(col, attr, &at);
                continue;
            };
            if col.validity.is_none() {
                let size = attr.fill.len();
                let out = batch_output(&mut col.data, written, batch_cells, size);
                let place = (out, size);
                if scatter_whole_tiles(
                    storage,
                    fragment,
                    (field, key.as_ref()),
                    place,
                    batch,
                    &at,
                    &stored,
                )? {
                    continue;
                }
            }
            let data = load_tiles_pooled(
                storage,
                fragment,
                field,
                TileSelection::whole(batch),
                0,
                key.as_ref(),
                &mut attr_pools[i],
            )?;
            copy_attribute_batch(col, attr.fill.len(), &data, &at)?;
            attr_pools[i].recycle(data);
        }
        written += batch_cells;
    }
    truncate_to_written(schema, attributes, written, &mut dims, &mut attrs);
    Ok(ReadResult {
        dimensions: dims,
        attributes: attrs,
    })
}

/// The empty result columns of a streamed read: each dimension (unless the
/// query skips coordinates) and each output attribute.
fn output_columns(
    schema: &ArraySchema,
    query: &ReadQuery,
    attributes: &[usize],
) -> (Vec<Column>, Vec<Column>) {
    let dims: Vec<Column> = if query.skip_coordinates {
        Vec::new()
    } else {
        schema
            .dimensions
            .iter()
            .map(|d| Column::new(&d.name, d.datatype, Some(1), false))
            .collect()
    };
    let attrs: Vec<Column> = attributes
        .iter()
        .map(|&a| {
            let attr = &schema.attributes[a];
            Column::new(&attr.name, attr.datatype, attr.cell_val_num, attr.nullable)
        })
        .collect();
    (dims, attrs)
}

/// Room in every column for every cell of the touched tiles, allocated
/// untouched: the batches then write their cells in place, in parallel, so
/// the pages of the result are first touched (and zeroed by the kernel) on
/// every thread at once. The cell counts come from the fragment's metadata,
/// so the room is capped; a larger result grows as it is filled.
fn reserve_room(
    fragment: &FragmentMetadata,
    tiles: &[u64],
    schema: &ArraySchema,
    attributes: &[usize],
    dims: &mut [Column],
    attrs: &mut [Column],
) {
    let most: u64 = tiles
        .iter()
        .map(|t| fragment.cell_num(*t, 0))
        .fold(0u64, u64::saturating_add);
    let room = |size: u64| most.saturating_mul(size).min(MAX_RESERVE) as usize;
    for (col, dim) in dims.iter_mut().zip(&schema.dimensions) {
        col.data = memory::zeroed_bytes(room(dim.datatype.size()));
    }
    for (col, &a) in attrs.iter_mut().zip(attributes) {
        let attr = &schema.attributes[a];
        col.data = memory::zeroed_bytes(room(attr.fill.len() as u64));
        if let Some(v) = col.validity.as_mut() {
            *v = memory::zeroed_bytes(room(1));
        }
    }
}

/// Each tile's kept cells of a batch (`coords`: its decoded dimension
/// tiles, by dimension then slot), tiles in parallel.
fn kept_in_batch(
    fragment: &FragmentMetadata,
    batch: &[u64],
    coords: &[Vec<TileData>],
    key_types: &[Datatype],
    ranges: &[Vec<(u64, u64)>],
    dedup: bool,
) -> Result<Vec<KeptRuns>> {
    let n = coords.len();
    batch
        .par_iter()
        .enumerate()
        .map(|(slot, &tile)| {
            let count = fragment.cell_num(tile, 0);
            // Cells are numbered by `u32` within a tile (TileDB's
            // capacity is a `u64`, but no tile of 2^32 cells is read).
            let count = u32::try_from(count).map(|c| c as usize).map_err(|_| {
                let cause = Cause::OutOfRange {
                    value: count,
                    limit: u32::MAX.into(),
                };
                let at = format!("fragment {}, tile {tile}", fragment.name);
                Error::corrupt(0, "cell count", cause).within(at)
            })?;
            // The decoded coordinates must hold every cell the metadata
            // counts before anything is sized by that count.
            let mut columns = [&[][..]; 4];
            for (d, &datatype) in key_types.iter().enumerate() {
                let size = datatype.size() as usize;
                let data = &coords[d].get(slot).ok_or_else(short)?.data;
                if data.len() / size.max(1) < count {
                    let cause = Cause::Truncated {
                        needed: (count * size) as u64,
                        available: data.len() as u64,
                    };
                    let at = format!("fragment {}, tile {tile}", fragment.name);
                    return Err(Error::corrupt(0, "coordinates", cause).within(at));
                }
                columns[d] = &data[..count * size];
            }
            Ok(keep_cells(key_types, &columns[..n], count, ranges, dedup))
        })
        .collect()
}

/// Where a batch's kept cells go in the result: each tile's kept runs and
/// their counts, after the `written` cells before, `cells` in all.
struct BatchPlace<'k> {
    kept: &'k [KeptRuns],
    counts: &'k [usize],
    written: usize,
    cells: usize,
}

/// An attribute the fragment does not store: the batch's cells are its
/// fill value (and fill validity).
fn fill_batch(col: &mut Column, attr: &Attribute, at: &BatchPlace<'_>) {
    let size = attr.fill.len();
    let out = batch_output(&mut col.data, at.written, at.cells, size);
    for cell in out.chunks_exact_mut(size.max(1)) {
        cell.copy_from_slice(&attr.fill);
    }
    if let Some(v) = col.validity.as_mut() {
        batch_output(v, at.written, at.cells, 1).fill(u8::from(attr.fill_validity));
    }
}

/// An attribute's kept cells of `size` bytes (and their validity) copied
/// from its decoded tiles of the batch.
fn copy_attribute_batch(
    col: &mut Column,
    size: usize,
    data: &[TileData],
    at: &BatchPlace<'_>,
) -> Result<()> {
    let out = batch_output(&mut col.data, at.written, at.cells, size);
    copy_kept(out, size, at.kept, at.counts, |slot| {
        data.get(slot).map(|t| &t.data[..])
    })?;
    if let Some(v) = col.validity.as_mut() {
        let out = batch_output(v, at.written, at.cells, 1);
        copy_kept_validity(out, at.kept, at.counts, |slot| data.get(slot))?;
    }
    Ok(())
}

/// The room past the last written cell was never touched: give it back.
fn truncate_to_written(
    schema: &ArraySchema,
    attributes: &[usize],
    written: usize,
    dims: &mut [Column],
    attrs: &mut [Column],
) {
    let finish = |data: &mut Vec<u8>, size: usize| {
        data.truncate(written * size);
        data.shrink_to_fit();
    };
    for (col, dim) in dims.iter_mut().zip(&schema.dimensions) {
        finish(&mut col.data, dim.datatype.size() as usize);
    }
    for (col, &a) in attrs.iter_mut().zip(attributes) {
        finish(&mut col.data, schema.attributes[a].fill.len());
        if let Some(v) = col.validity.as_mut() {
            finish(v, 1);
        }
    }
}

/// The cells a streamed tile keeps: runs of consecutive cells (first, how
/// many) in stored order, and the order keys of the first and last kept
/// cell when duplicates are dropped.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct KeptRuns {
    pub(crate) runs: Vec<(u32, u32)>,
    pub(crate) first: Option<[u64; 4]>,
    pub(crate) last: Option<[u64; 4]>,
}

impl KeptRuns {
    fn count(&self) -> usize {
        self.runs.iter().map(|&(_, len)| len as usize).sum()
    }

    fn push(&mut self, cell: u32) {
        match self.runs.last_mut() {
            Some((start, len)) if *start + *len == cell => *len += 1,
            _ => self.runs.push((cell, 1)),
        }
    }

    /// Drops the last kept cell (if any).
    fn pop(&mut self) {
        if let Some((_, len)) = self.runs.last_mut() {
            *len -= 1;
            if *len == 0 {
                self.runs.pop();
            }
        }
    }
}

/// The cells of one tile (`columns`: each dimension's `count` coordinates)
/// inside `ranges` (per dimension, in order keys; empty means all), and
/// when `dedup`, of adjacent equal coordinates only the last.
pub(crate) fn keep_cells(
    types: &[Datatype],
    columns: &[&[u8]],
    count: usize,
    ranges: &[Vec<(u64, u64)>],
    dedup: bool,
) -> KeptRuns {
    let filtered = ranges.iter().any(|r| !r.is_empty());
    // Callers number cells by `u32` (see `stream`).
    let count = count.min(u32::MAX as usize);
    if !filtered && !dedup {
        let runs = match count {
            0 => Vec::new(),
            count => vec![(0, count as u32)],
        };
        return KeptRuns {
            runs,
            first: None,
            last: None,
        };
    }
    let sizes: Vec<usize> = types.iter().map(|t| t.size() as usize).collect();
    if !filtered && count > 0 && every_cell_stays(types, columns, count) {
        if let (Some(first), Some(last)) = (
            cell_key(types, &sizes, columns, 0),
            cell_key(types, &sizes, columns, count - 1),
        ) {
            return KeptRuns {
                runs: vec![(0, count as u32)],
                first: Some(first),
                last: Some(last),
            };
        }
    }
    let mut kept = KeptRuns::default();
    for cell in 0..count {
        let mut key = [0u64; 4];
        let mut keep = true;
        for (d, (&datatype, &size)) in types.iter().zip(&sizes).enumerate() {
            // NaN coordinates: no order key; TileDB never writes them, and
            // no range holds them.
            let Some(k) = order_key(datatype, &columns[d][cell * size..(cell + 1) * size]) else {
                keep = false;
                break;
            };
            key[d] = k;
            if !ranges[d].is_empty() && !ranges[d].iter().any(|(lo, hi)| *lo <= k && k <= *hi) {
                keep = false;
                break;
            }
        }
        if !keep {
            continue;
        }
        if dedup {
            if kept.last == Some(key) {
                kept.pop();
            }
            kept.first.get_or_insert(key);
            kept.last = Some(key);
        }
        kept.push(cell as u32);
    }
    kept
}

/// The order key of one cell (`None` if a coordinate is NaN).
pub(crate) fn cell_key(
    types: &[Datatype],
    sizes: &[usize],
    columns: &[&[u8]],
    cell: usize,
) -> Option<[u64; 4]> {
    let mut key = [0u64; 4];
    for (d, (&datatype, &size)) in types.iter().zip(sizes).enumerate() {
        key[d] = order_key(datatype, columns[d].get(cell * size..(cell + 1) * size)?)?;
    }
    Some(key)
}

/// Whether deduplication keeps every cell of a tile: no coordinate is NaN
/// and no cell has the coordinates of the one before it. One pass per
/// dimension over the whole column, narrowing which neighbours are still
/// equal; written so that the compiler vectorizes the common widths.
pub(crate) fn every_cell_stays(types: &[Datatype], columns: &[&[u8]], count: usize) -> bool {
    let mut equal = vec![1u8; count.saturating_sub(1)];
    for (&datatype, column) in types.iter().zip(columns) {
        let ok = match datatype {
            Datatype::Float64 => narrow_floats::<8>(column, &mut equal, f64::from_le_bytes),
            Datatype::Float32 => {
                narrow_floats::<4>(column, &mut equal, |b| f64::from(f32::from_le_bytes(b)))
            }
            // Equal bytes are equal values for every other fixed type.
            _ => match datatype.size() {
                1 => narrow_bytes::<1>(column, &mut equal),
                2 => narrow_bytes::<2>(column, &mut equal),
                4 => narrow_bytes::<4>(column, &mut equal),
                8 => narrow_bytes::<8>(column, &mut equal),
                _ => false,
            },
        };
        if !ok {
            return false;
        }
    }
    equal.iter().all(|&e| e == 0)
}

/// Clears `equal[i]` where values `i` and `i + 1` of `column` differ.
pub(crate) fn narrow_bytes<const W: usize>(column: &[u8], equal: &mut [u8]) -> bool {
    let values = column.chunks_exact(W);
    if values.len() != equal.len() + 1 {
        return false;
    }
    let next = column.get(W..).unwrap_or_default().chunks_exact(W);
    for ((e, a), b) in equal.iter_mut().zip(values).zip(next) {
        *e &= u8::from(a == b);
    }
    true
}

/// As [`narrow_bytes`] for floats (where -0 equals +0); false if a value
/// is NaN (left to the cell-by-cell pass).
pub(crate) fn narrow_floats<const W: usize>(
    column: &[u8],
    equal: &mut [u8],
    value: impl Fn([u8; W]) -> f64,
) -> bool {
    let values: Vec<f64> = column
        .chunks_exact(W)
        .map(|c| {
            let mut bytes = [0u8; W];
            bytes.copy_from_slice(c);
            value(bytes)
        })
        .collect();
    if values.len() != equal.len() + 1 || values.iter().any(|v| v.is_nan()) {
        return false;
    }
    for (e, pair) in equal.iter_mut().zip(values.windows(2)) {
        *e &= u8::from(pair[0] == pair[1]);
    }
    true
}

/// Of adjacent equal coordinates across the tiles of a batch (each tile
/// already deduplicated within itself), only the last stays: a tile whose
/// first kept cell has the key the previous kept cell ended on drops that
/// cell, from an earlier tile of the batch or else from the result written
/// before it. `last_key` carries the last kept key from batch to batch.
/// Returns how many cells of the result written before must go.
pub(crate) fn drop_duplicates_across_tiles(
    kept: &mut [KeptRuns],
    last_key: &mut Option<[u64; 4]>,
) -> usize {
    let mut from_written = 0;
    for i in 0..kept.len() {
        if kept[i].first.is_some() && kept[i].first == *last_key {
            match (0..i).rev().find(|&j| kept[j].count() > 0) {
                Some(j) => kept[j].pop(),
                None => from_written += 1,
            }
        }
        if kept[i].last.is_some() {
            *last_key = kept[i].last;
        }
    }
    from_written
}

/// The part of `data` that a batch of `cells` cells of `size` bytes fills
/// after the first `written`: normally inside the room allocated at the
/// start; past it (a result larger than the room), grown.
pub(crate) fn batch_output(
    data: &mut Vec<u8>,
    written: usize,
    cells: usize,
    size: usize,
) -> &mut [u8] {
    let (start, end) = (written * size, (written + cells) * size);
    if data.len() < end {
        data.resize(end, 0);
    }
    &mut data[start..end]
}

/// `out` split into each tile's part (`counts[slot]` cells of `size`).
pub(crate) fn tile_parts<'o>(
    out: &'o mut [u8],
    size: usize,
    counts: &[usize],
) -> Vec<&'o mut [u8]> {
    let mut parts = Vec::with_capacity(counts.len());
    let mut rest = out;
    for &count in counts {
        let (part, tail) = std::mem::take(&mut rest).split_at_mut(count * size);
        parts.push(part);
        rest = tail;
    }
    parts
}

/// Copies each tile's kept cells of `size` bytes into its part of `out`
/// (parts in tile order), tiles in parallel.
pub(crate) fn copy_kept<'t>(
    out: &mut [u8],
    size: usize,
    kept: &[KeptRuns],
    counts: &[usize],
    tile: impl Fn(usize) -> Option<&'t [u8]> + Sync,
) -> Result<()> {
    tile_parts(out, size, counts)
        .into_par_iter()
        .enumerate()
        .try_for_each(|(slot, part)| {
            let data = tile(slot).ok_or_else(short)?;
            let mut at = 0;
            for &(start, len) in &kept[slot].runs {
                let (from, bytes) = (start as usize * size, len as usize * size);
                part[at..at + bytes]
                    .copy_from_slice(data.get(from..from + bytes).ok_or_else(short)?);
                at += bytes;
            }
            Ok(())
        })
}

/// The validity (0 or 1) of each tile's kept cells, as [`copy_kept`].
pub(crate) fn copy_kept_validity<'t>(
    out: &mut [u8],
    kept: &[KeptRuns],
    counts: &[usize],
    tile: impl Fn(usize) -> Option<&'t TileData> + Sync,
) -> Result<()> {
    tile_parts(out, 1, counts)
        .into_par_iter()
        .enumerate()
        .try_for_each(|(slot, part)| {
            let data = tile(slot).ok_or_else(short)?;
            let cells = kept[slot]
                .runs
                .iter()
                .flat_map(|&(start, len)| start..start + len);
            for (valid, cell) in part.iter_mut().zip(cells) {
                *valid = u8::from(data.valid(u64::from(cell)));
            }
            Ok(())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tiles and batches cut anywhere through a run of cells: what
    /// `keep_cells` and `drop_duplicates_across_tiles` keep is what one
    /// pass over all cells keeps (inside the range, and of adjacent equal
    /// coordinates the last).
    #[test]
    fn kept_cells_match_one_pass_however_tiles_and_batches_cut() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        for round in 0..300 {
            let len = next(60) as usize;
            // Few distinct values, so runs of equal coordinates are common.
            let values: Vec<u64> = (0..len).map(|_| next(4)).collect();
            let range = if round % 3 == 0 {
                vec![(1, 2)]
            } else {
                Vec::new()
            };
            let inside = |v: u64| range.iter().all(|&(lo, hi)| lo <= v && v <= hi);
            let mut expected: Vec<usize> = Vec::new();
            let mut last = None;
            for (i, &v) in values.iter().enumerate() {
                if !inside(v) {
                    continue;
                }
                if last == Some(v) {
                    expected.pop();
                }
                expected.push(i);
                last = Some(v);
            }
            // Cut into tiles of 0-5 cells and batches of 1-4 tiles.
            let mut tiles = Vec::new();
            let mut at = 0;
            while at < len {
                let size = (next(6) as usize).min(len - at);
                tiles.push(at..at + size);
                at += size;
            }
            let mut result: Vec<usize> = Vec::new();
            let mut last_key = None;
            let mut t = 0;
            while t < tiles.len() {
                let batch = &tiles[t..(t + 1 + next(4) as usize).min(tiles.len())];
                t += batch.len();
                let mut kept: Vec<KeptRuns> = batch
                    .iter()
                    .map(|cells| {
                        let bytes: Vec<u8> = values[cells.clone()]
                            .iter()
                            .flat_map(|v| v.to_le_bytes())
                            .collect();
                        keep_cells(
                            &[Datatype::Uint64],
                            &[&bytes],
                            cells.len(),
                            std::slice::from_ref(&range),
                            true,
                        )
                    })
                    .collect();
                let gone = drop_duplicates_across_tiles(&mut kept, &mut last_key);
                result.truncate(result.len() - gone);
                for (cells, k) in batch.iter().zip(&kept) {
                    for &(start, n) in &k.runs {
                        result.extend((start..start + n).map(|c| cells.start + c as usize));
                    }
                }
            }
            assert_eq!(result, expected, "values {values:?} tiles {tiles:?}");
        }
    }

    /// The whole-tile shortcut agrees with the cell-by-cell pass: floats
    /// compare as values (-0 equals +0), NaN falls back, and a single
    /// differing dimension keeps neighbours apart.
    #[test]
    fn every_cell_stays_only_when_no_neighbours_are_equal() {
        let f64s = |v: &[f64]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
        let i32s = |v: &[i32]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
        let stays =
            |types: &[Datatype], columns: &[&[u8]], count| every_cell_stays(types, columns, count);
        let f = [Datatype::Float64];
        assert!(stays(&f, &[&f64s(&[1.0, 2.0, 1.0])], 3));
        assert!(!stays(&f, &[&f64s(&[1.0, -0.0, 0.0])], 3));
        assert!(!stays(&f, &[&f64s(&[1.0, f64::NAN, 2.0])], 3));
        let two = [Datatype::Int32, Datatype::Float64];
        let (x, y) = (i32s(&[5, 5, 5]), f64s(&[1.0, 2.0, 3.0]));
        assert!(stays(&two, &[&x, &y], 3));
        let y_same = f64s(&[1.0, 2.0, 2.0]);
        assert!(!stays(&two, &[&x, &y_same], 3));
        let x_apart = i32s(&[5, 5, 6]);
        assert!(stays(&two, &[&x_apart, &y_same], 3));
        // What keep_cells returns either way is the same.
        for (types, columns) in [
            (&two[..], [&x[..], &y_same[..]]),
            (&two[..], [&x_apart[..], &y_same[..]]),
        ] {
            let kept = keep_cells(types, &columns, 3, &[Vec::new(), Vec::new()], true);
            let expected = if stays(types, &columns, 3) { 3 } else { 2 };
            assert_eq!(kept.count(), expected);
        }
    }
}
