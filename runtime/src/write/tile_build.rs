//! One tile of one field, built: its cells gathered straight from the input
//! column (no copy of the whole field), its metadata (min, max, sum, null
//! count) computed over the gathered bytes, and its filter pipeline run.
//! Tiles are independent, so the caller builds many at once.

use crate::error::Result;
use crate::filter::{Datatype, FilterContext, FilterPipeline};
use std::sync::{Mutex, PoisonError};

use crate::tile::{
    filter_gathered_tile_into, filter_tile, filter_tile_into, filter_var_tile, unfiltered_frame,
    UnfilteredFrame, SKIPPED_OFFSETS_TILE,
};

use super::fragment_input::{usage, Column};
use super::tile_meta::{self, IntPartial, MetaKinds, Packed, TileMeta};
use super::tiling::{gather, Cells, Run};
use super::WRITE_VERSION;

/// How one field's tiles are built: its shape, metadata kinds, pipelines
/// (as applied: with encryption appended) and fill cell.
pub(crate) struct TileRecipe {
    pub(crate) datatype: Datatype,
    /// `None` for a var-sized field.
    pub(crate) cell_size: Option<usize>,
    pub(crate) nullable: bool,
    pub(crate) kinds: MetaKinds,
    pub(crate) pipeline: FilterPipeline,
    /// The field's own pipeline skips the offsets tile (string codecs).
    pub(crate) skips_offsets: bool,
    pub(crate) offsets_pipeline: FilterPipeline,
    pub(crate) validity_pipeline: FilterPipeline,
    pub(crate) data_ctx: FilterContext,
    pub(crate) offsets_ctx: FilterContext,
    pub(crate) validity_ctx: FilterContext,
    pub(crate) fill: Vec<u8>,
    pub(crate) fill_validity: bool,
    pub(crate) stem: String,
}

/// One tile of one field, filtered.
pub(crate) struct BuiltTile<'c> {
    /// The tile of the field's first file (values, or offsets of a
    /// var-sized field); empty when `unframed` holds it.
    pub(crate) fixed: Vec<u8>,
    /// A tile of fixed-size cells whose pipeline has no filters: its frame,
    /// and its cells, written between the frame's bytes as they are (read
    /// in place from the input, or gathered), never copied into a framed
    /// buffer first.
    pub(crate) unframed: Option<(UnfilteredFrame, TileBytes<'c>)>,
    /// A var-sized field's values tile.
    pub(crate) var: Vec<u8>,
    /// The unfiltered size of `var`.
    pub(crate) var_size: u64,
    /// A nullable field's validity tile.
    pub(crate) validity: Vec<u8>,
    pub(crate) meta: TileMeta,
}

/// The unfiltered bytes of a tile: a run of the input's, or gathered.
pub(crate) enum TileBytes<'c> {
    /// Read in place from the input column.
    Input(&'c [u8]),
    /// Gathered from the input (a buffer of the [`BufferPool`]).
    Gathered(Vec<u8>),
    /// Runs of the input, in tile order (none empty): a dense tile's row
    /// segments, never gathered.
    Runs(Vec<&'c [u8]>),
}

impl TileBytes<'_> {
    /// The framed tile's pieces in file order: `frame`'s bytes with the
    /// tile's bytes between them, for one vectored write.
    pub(crate) fn framed<'a>(&'a self, frame: &'a UnfilteredFrame) -> Vec<&'a [u8]> {
        let runs = match self {
            TileBytes::Input(b) => return frame.pieces(b).collect(),
            TileBytes::Gathered(v) => return frame.pieces(v).collect(),
            TileBytes::Runs(runs) => runs,
        };
        let mut out = Vec::with_capacity(2 * frame.chunks.len() + runs.len());
        let (mut run, mut at) = (0, 0);
        for (header, chunk) in &frame.chunks {
            out.push(&frame.headers[header.clone()]);
            let mut need = chunk.len();
            while need > 0 {
                let Some(r) = runs.get(run) else { break };
                let take = (r.len() - at).min(need);
                out.push(&r[at..at + take]);
                (at, need) = (at + take, need - take);
                if at == r.len() {
                    (run, at) = (run + 1, 0);
                }
            }
        }
        out.retain(|piece| !piece.is_empty());
        out
    }
}

/// The input runs of a tile of fixed-size cells whose runs are all of
/// neighbouring cells (a dense write's row segments): `None` otherwise.
fn contiguous_runs<'c>(
    column: &'c Column,
    cells: &Cells<'_>,
    cell_size: usize,
) -> Option<Vec<&'c [u8]>> {
    let Cells::Runs(runs) = cells else {
        return None;
    };
    runs.iter()
        .filter(|r| r.len > 0)
        .map(|&Run { from, step, len }| {
            let from = from?;
            (step == 1 || len == 1).then_some(())?;
            column.data.get(from * cell_size..(from + len) * cell_size)
        })
        .collect()
}

/// The metadata of an integer tile given as runs, each run's metadata
/// read in place and merged: the minimum of the minima, the maximum of the
/// maxima, the sum of the sums. Equal to the whole tile's when no partial
/// sum can saturate (every cell's magnitude times the cells stays within
/// the sum's type); `None` otherwise, or for other types, and the caller
/// gathers the tile instead.
fn runs_meta(recipe: &TileRecipe, runs: &[&[u8]], cell_size: usize) -> Option<TileMeta> {
    use crate::filter::Datatype::*;
    let t = recipe.datatype;
    let signed = match t {
        Int8 | Int16 | Int32 | Int64 => true,
        Uint8 | Uint16 | Uint32 | Uint64 => false,
        _ => return None,
    };
    if recipe.nullable || cell_size != t.size() as usize {
        return None;
    }
    let value = |b: &[u8]| -> Option<i128> {
        Some(match t {
            Int8 => i8::from_le_bytes(b.try_into().ok()?).into(),
            Int16 => i16::from_le_bytes(b.try_into().ok()?).into(),
            Int32 => i32::from_le_bytes(b.try_into().ok()?).into(),
            Int64 => i64::from_le_bytes(b.try_into().ok()?).into(),
            Uint8 => u8::from_le_bytes(b.try_into().ok()?).into(),
            Uint16 => u16::from_le_bytes(b.try_into().ok()?).into(),
            Uint32 => u32::from_le_bytes(b.try_into().ok()?).into(),
            _ => u64::from_le_bytes(b.try_into().ok()?).into(),
        })
    };
    let limit: i128 = if signed {
        i64::MAX.into()
    } else {
        u64::MAX.into()
    };
    // The running extremes: each decoded, with its stored bytes.
    let mut min: Option<(i128, Vec<u8>)> = None;
    let mut max: Option<(i128, Vec<u8>)> = None;
    let (mut sum, mut bound) = (0i128, 0i128);
    for run in runs {
        let packed = Packed {
            data: run,
            cell_size,
        };
        let meta = tile_meta::fixed_tile(t, recipe.kinds, &packed, None);
        let (lo, hi) = match (&meta.min, &meta.max) {
            (Some(lo), Some(hi)) => (value(lo)?, value(hi)?),
            _ => return None,
        };
        // Every partial sum of the tile lies within ± this bound.
        let cells = (run.len() / cell_size) as i128;
        bound = bound.checked_add(cells.checked_mul(lo.abs().max(hi.abs()))?)?;
        if bound >= limit {
            return None;
        }
        sum += if signed {
            i128::from(i64::from_le_bytes(meta.sum))
        } else {
            i128::from(u64::from_le_bytes(meta.sum))
        };
        if min.as_ref().is_none_or(|(m, _)| lo <= *m) {
            min = meta.min.map(|b| (lo, b));
        }
        if max.as_ref().is_none_or(|(m, _)| hi >= *m) {
            max = meta.max.map(|b| (hi, b));
        }
    }
    let sum = if !recipe.kinds.sum {
        [0; 8]
    } else if signed {
        i64::try_from(sum).ok()?.to_le_bytes()
    } else {
        u64::try_from(sum).ok()?.to_le_bytes()
    };
    Some(TileMeta {
        min: min.map(|(_, b)| b),
        max: max.map(|(_, b)| b),
        sum,
        null_count: 0,
    })
}

/// Tile buffers kept for reuse while one field is written: a buffer
/// whose pages are mapped already costs no page faults, where a fresh tile
/// of megabytes faults in every page (and frees them again). It holds at
/// most the buffers of one group in flight.
#[derive(Default)]
pub(crate) struct BufferPool(Mutex<Vec<Vec<u8>>>);

impl BufferPool {
    /// An empty buffer, with the capacity of one given back if any.
    pub(crate) fn take(&self) -> Vec<u8> {
        let mut free = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        free.pop().unwrap_or_default()
    }

    /// Gives a buffer back for the next tile.
    pub(crate) fn give(&self, mut buffer: Vec<u8>) {
        if buffer.capacity() > 0 {
            buffer.clear();
            let mut free = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            free.push(buffer);
        }
    }
}

/// Builds the tile of `cells` (`cell_num` cells, fill included) of `column`;
/// packed tiles take their buffers from `pool`.
pub(crate) fn build_tile<'c>(
    recipe: &TileRecipe,
    column: &'c Column,
    cells: &Cells<'_>,
    pool: &BufferPool,
) -> Result<BuiltTile<'c>> {
    match recipe.cell_size {
        Some(cell_size) if !cells.has_fill() && column.cell_size() == Some(cell_size) => {
            packed_tile(recipe, column, cells, cell_size, pool)
        }
        None if !cells.has_fill() => match column.offsets.as_deref() {
            Some(offsets) => var_packed_tile(recipe, column, offsets, cells),
            None => listed_tile(recipe, column, cells),
        },
        _ => listed_tile(recipe, column, cells),
    }
}

/// A var-sized tile without fill cells: the values of each run of
/// neighbouring cells copied at once and their offsets shifted, no list of
/// cells; the metadata read off the gathered values.
fn var_packed_tile(
    recipe: &TileRecipe,
    column: &Column,
    offsets: &[u64],
    cells: &Cells<'_>,
) -> Result<BuiltTile<'static>> {
    let cell_num = cells.len();
    let mut data = Vec::new();
    let mut starts = Vec::with_capacity(cell_num);
    // Cells `from..to` of the column: their values are contiguous.
    let mut push_cells = |from: usize, to: usize| -> Result<()> {
        let bounds = offsets.get(from..=to).filter(|b| {
            b.first() <= b.last() && b.last().is_some_and(|&e| e <= column.data.len() as u64)
        });
        let Some(bounds) = bounds else {
            return Err(usage(format!(
                "the offsets of {} do not delimit its data",
                recipe.stem
            )));
        };
        let (first, last) = (bounds[0], bounds[to - from]);
        let shift = data.len() as u64;
        starts.extend(bounds[..to - from].iter().map(|&o| o - first + shift));
        data.extend_from_slice(&column.data[first as usize..last as usize]);
        Ok(())
    };
    match cells {
        Cells::Runs(runs) => {
            for &Run { from, step, len } in runs {
                let Some(from) = from else { continue };
                if step == 1 {
                    push_cells(from, from + len)?;
                } else {
                    for k in 0..len {
                        push_cells(from + k * step, from + k * step + 1)?;
                    }
                }
            }
        }
        Cells::Listed(list) => {
            for &i in *list {
                push_cells(i, i + 1)?;
            }
        }
    }
    let validity: Option<Vec<bool>> = recipe.nullable.then(|| {
        let mut v = Vec::with_capacity(cell_num);
        cells.for_each(|c| v.push(c.map_or(recipe.fill_validity, |i| column.is_valid(i))));
        v
    });
    let values = tile_meta::VarCells {
        data: &data,
        starts: &starts,
    };
    let meta = tile_meta::var_tile(recipe.kinds, &values, validity.as_deref()).into_recorded(
        recipe.nullable,
        cell_num as u64,
        true,
    );
    let var = filter_var_tile(&data, &starts, &recipe.pipeline, &recipe.data_ctx)?;
    let fixed = if recipe.skips_offsets {
        SKIPPED_OFFSETS_TILE.to_vec()
    } else {
        let offsets: Vec<u8> = starts.iter().flat_map(|s| s.to_le_bytes()).collect();
        filter_tile(&offsets, &recipe.offsets_pipeline, &recipe.offsets_ctx)?
    };
    Ok(BuiltTile {
        fixed,
        unframed: None,
        var,
        var_size: data.len() as u64,
        validity: validity_tile(recipe, validity.as_deref())?,
        meta,
    })
}

/// A fixed-size tile without fill cells: the cells copied one run (or one
/// cell) at a time into the tile, its metadata read off the tile.
fn packed_tile<'c>(
    recipe: &TileRecipe,
    column: &'c Column,
    cells: &Cells<'_>,
    cell_size: usize,
    pool: &BufferPool,
) -> Result<BuiltTile<'c>> {
    let cell_num = cells.len();
    if let Some(built) = unfiltered_runs_tile(recipe, column, cells, cell_size)? {
        return Ok(built);
    }
    // One run of consecutive input cells (a sparse write given in global
    // order) is the tile itself: read in place, not copied.
    let in_place = match cells {
        Cells::Runs(runs) if runs.len() == 1 && runs[0].step == 1 => {
            runs[0].from.and_then(|from| {
                column
                    .data
                    .get(from * cell_size..(from + runs[0].len) * cell_size)
            })
        }
        _ => None,
    };
    if let Some(built) = chunk_gathered_tile(recipe, column, cells, cell_size, pool) {
        return built;
    }
    let mut gathered = pool.take();
    if in_place.is_none() {
        gathered.reserve(cell_num * cell_size);
    }
    let bytes = |i: usize| &column.data[i * cell_size..(i + 1) * cell_size];
    match cells {
        _ if in_place.is_some() => {}
        Cells::Runs(runs) => {
            for &Run { from, step, len } in runs {
                let Some(from) = from else { continue };
                if step == 1 {
                    gathered.extend_from_slice(
                        &column.data[from * cell_size..(from + len) * cell_size],
                    );
                } else {
                    (0..len).for_each(|k| gathered.extend_from_slice(bytes(from + k * step)));
                }
            }
        }
        Cells::Listed(list) => gather(list, &column.data, cell_size, &mut gathered),
    }
    let validity: Option<Vec<bool>> = recipe.nullable.then(|| {
        let mut v = Vec::with_capacity(cell_num);
        cells.for_each(|c| v.push(c.map_or(recipe.fill_validity, |i| column.is_valid(i))));
        v
    });
    let data: &[u8] = in_place.unwrap_or(&gathered);
    let packed = Packed { data, cell_size };
    let meta = tile_meta::fixed_tile(recipe.datatype, recipe.kinds, &packed, validity.as_deref())
        .into_recorded(recipe.nullable, cell_num as u64, false);
    let validity = validity_tile(recipe, validity.as_deref())?;
    // No filters: the cells go to the file as they are, between the
    // frame's bytes (the gathered buffer back to the pool once written).
    if let Some(frame) = unfiltered_frame(data.len(), &recipe.pipeline, &recipe.data_ctx)? {
        let bytes = match in_place {
            Some(run) => {
                pool.give(gathered);
                TileBytes::Input(run)
            }
            None => TileBytes::Gathered(gathered),
        };
        return Ok(BuiltTile {
            fixed: Vec::new(),
            unframed: Some((frame, bytes)),
            var: Vec::new(),
            var_size: 0,
            validity,
            meta,
        });
    }
    let mut fixed = pool.take();
    let filtered = filter_tile_into(data, &recipe.pipeline, &recipe.data_ctx, &mut fixed);
    pool.give(gathered);
    filtered?;
    Ok(BuiltTile {
        fixed,
        unframed: None,
        var: Vec::new(),
        var_size: 0,
        validity,
        meta,
    })
}

/// An unfiltered integer tile of several runs of the input (a dense
/// write's row segments): its metadata read off the runs and its cells
/// written from them between the frame's bytes, never gathered. `None`
/// where that does not apply (one run, filters, other types, a sum that
/// might saturate).
fn unfiltered_runs_tile<'c>(
    recipe: &TileRecipe,
    column: &'c Column,
    cells: &Cells<'_>,
    cell_size: usize,
) -> Result<Option<BuiltTile<'c>>> {
    if !recipe.pipeline.filters.is_empty() || !recipe.kinds.min_max {
        return Ok(None);
    }
    let Some(runs) = contiguous_runs(column, cells, cell_size).filter(|r| r.len() > 1) else {
        return Ok(None);
    };
    let Some(meta) = runs_meta(recipe, &runs, cell_size) else {
        return Ok(None);
    };
    let len = runs.iter().map(|r| r.len()).sum();
    let Some(frame) = unfiltered_frame(len, &recipe.pipeline, &recipe.data_ctx)? else {
        return Ok(None);
    };
    Ok(Some(BuiltTile {
        fixed: Vec::new(),
        unframed: Some((frame, TileBytes::Runs(runs))),
        var: Vec::new(),
        var_size: 0,
        validity: Vec::new(),
        meta: meta.into_recorded(false, cells.len() as u64, false),
    }))
}

/// A filtered packed tile of integers without validity, gathered a chunk
/// at a time ([`filter_gathered_tile_into`]): each chunk's metadata
/// scanned right after its cells are gathered, while they are in cache,
/// and the partial scans joined. `None` where this does not apply (no
/// filter, validity, floats or strings, cells of several values); the
/// tile is then gathered whole.
fn chunk_gathered_tile<'c>(
    recipe: &TileRecipe,
    column: &'c Column,
    cells: &Cells<'_>,
    cell_size: usize,
    pool: &BufferPool,
) -> Option<Result<BuiltTile<'c>>> {
    let t = recipe.datatype;
    if recipe.nullable
        || recipe.pipeline.filters.is_empty()
        || cell_size as u64 != t.size()
        || !(recipe.kinds.min_max || recipe.kinds.sum)
    {
        return None;
    }
    tile_meta::int_piece(t, &[])?;
    let cell_num = cells.len();
    // Where each run starts in the tile, to find a chunk's first run.
    let run_starts: Vec<usize> = match cells {
        Cells::Runs(runs) => runs
            .iter()
            .scan(0, |at, run| {
                let start = *at;
                *at += run.len;
                Some(start)
            })
            .collect(),
        Cells::Listed(_) => Vec::new(),
    };
    let gather_chunk = |start: usize, end: usize, out: &mut Vec<u8>| -> Result<IntPartial> {
        let (first, last) = (start / cell_size, end / cell_size);
        match cells {
            Cells::Listed(list) => gather(&list[first..last], &column.data, cell_size, out),
            Cells::Runs(runs) => {
                let mut r = run_starts.partition_point(|&s| s <= first) - 1;
                let mut at = first;
                while at < last {
                    let (run, run_start) = (&runs[r], run_starts[r]);
                    let from_run = at - run_start;
                    let count = (run.len - from_run).min(last - at);
                    let Some(from) = run.from else {
                        return Err(usage(format!(
                            "a fill cell in a packed tile of {}",
                            recipe.stem
                        )));
                    };
                    let first_cell = from + from_run * run.step;
                    if run.step == 1 {
                        let bytes = first_cell * cell_size..(first_cell + count) * cell_size;
                        out.extend_from_slice(&column.data[bytes]);
                    } else {
                        for k in 0..count {
                            let i = first_cell + k * run.step;
                            out.extend_from_slice(&column.data[i * cell_size..(i + 1) * cell_size]);
                        }
                    }
                    at += count;
                    r += 1;
                }
            }
        }
        Ok(tile_meta::int_piece(t, out).unwrap_or(IntPartial::EMPTY))
    };
    let mut fixed = pool.take();
    let built = filter_gathered_tile_into(
        cell_num * cell_size,
        &recipe.pipeline,
        &recipe.data_ctx,
        gather_chunk,
        &mut fixed,
    )
    .and_then(|pieces| {
        let joined = pieces.into_iter().fold(IntPartial::EMPTY, IntPartial::join);
        let meta = match tile_meta::int_tile_from_pieces(t, recipe.kinds, joined) {
            Some(meta) => meta,
            // A sum that may overflow is added cell by cell, in order,
            // over the tile gathered whole.
            None => {
                let mut whole = pool.take();
                gather_chunk(0, cell_num * cell_size, &mut whole)?;
                let packed = Packed {
                    data: &whole,
                    cell_size,
                };
                let meta = tile_meta::fixed_tile(t, recipe.kinds, &packed, None);
                pool.give(whole);
                meta
            }
        };
        Ok(BuiltTile {
            fixed,
            unframed: None,
            var: Vec::new(),
            var_size: 0,
            validity: Vec::new(),
            meta: meta.into_recorded(false, cell_num as u64, false),
        })
    });
    Some(built)
}

fn validity_tile(recipe: &TileRecipe, validity: Option<&[bool]>) -> Result<Vec<u8>> {
    match validity {
        Some(v) if recipe.nullable => {
            let bytes: Vec<u8> = v.iter().map(|&b| b as u8).collect();
            filter_tile(&bytes, &recipe.validity_pipeline, &recipe.validity_ctx)
        }
        _ => Ok(Vec::new()),
    }
}

/// Any tile, cell by cell: var-sized fields and dense tiles with fill
/// cells (whose metadata covers the written cells only, never padding).
fn listed_tile(
    recipe: &TileRecipe,
    column: &Column,
    cells: &Cells<'_>,
) -> Result<BuiltTile<'static>> {
    let tile = cells.listed();
    let bytes: Vec<&[u8]> = tile
        .iter()
        .map(|c| match c {
            Some(i) => column.cell_bytes(*i),
            None => recipe.fill.as_slice(),
        })
        .collect();
    let validity: Vec<bool> = tile
        .iter()
        .map(|c| c.map_or(recipe.fill_validity, |i| column.is_valid(i)))
        .collect();
    let written: Vec<&[u8]> = bytes
        .iter()
        .zip(&tile)
        .filter(|(_, c)| c.is_some())
        .map(|(b, _)| *b)
        .collect();
    let written_validity: Vec<bool> = validity
        .iter()
        .zip(&tile)
        .filter(|(_, c)| c.is_some())
        .map(|(v, _)| *v)
        .collect();
    let validity_arg = recipe.nullable.then_some(written_validity.as_slice());
    let cell_num = tile.len() as u64;
    let mut built = BuiltTile {
        fixed: Vec::new(),
        unframed: None,
        var: Vec::new(),
        var_size: 0,
        validity: validity_tile(recipe, recipe.nullable.then_some(validity.as_slice()))?,
        meta: TileMeta::default(),
    };
    match recipe.cell_size {
        None => {
            let mut data = Vec::new();
            let mut starts = Vec::with_capacity(bytes.len());
            for c in &bytes {
                starts.push(data.len() as u64);
                data.extend_from_slice(c);
            }
            built.var_size = data.len() as u64;
            built.var = filter_var_tile(&data, &starts, &recipe.pipeline, &recipe.data_ctx)?;
            built.fixed = if recipe.skips_offsets {
                SKIPPED_OFFSETS_TILE.to_vec()
            } else {
                let offsets: Vec<u8> = starts.iter().flat_map(|s| s.to_le_bytes()).collect();
                filter_tile(&offsets, &recipe.offsets_pipeline, &recipe.offsets_ctx)?
            };
            built.meta = tile_meta::var_tile(recipe.kinds, written.as_slice(), validity_arg)
                .into_recorded(recipe.nullable, cell_num, true);
        }
        Some(cell_size) => {
            if bytes.iter().any(|c| c.len() != cell_size) {
                return Err(usage(format!(
                    "a cell of {} is not {cell_size} bytes",
                    recipe.stem
                )));
            }
            let data: Vec<u8> = bytes.concat();
            built.fixed = filter_tile(&data, &recipe.pipeline, &recipe.data_ctx)?;
            built.meta = tile_meta::fixed_tile(
                recipe.datatype,
                recipe.kinds,
                written.as_slice(),
                validity_arg,
            )
            .into_recorded(recipe.nullable, cell_num, false);
        }
    }
    Ok(built)
}

/// The recipe of a field: `cell_val_num` `None` for var-sized; `key`
/// appends AES-256-GCM to every pipeline, as TileDB does for an encrypted
/// array.
#[allow(clippy::too_many_arguments)]
pub(crate) fn recipe(
    datatype: Datatype,
    cell_val_num: Option<u32>,
    nullable: bool,
    is_dim: bool,
    pipelines: [&FilterPipeline; 3],
    fill: Vec<u8>,
    fill_validity: bool,
    stem: String,
    key: Option<[u8; 32]>,
) -> TileRecipe {
    let [pipeline, offsets, validity] = pipelines;
    let type_size = datatype.size();
    let cell_size = cell_val_num.map(|n| (type_size * n as u64) as usize);
    let applied = |p: &FilterPipeline| {
        let mut p = p.clone();
        if key.is_some() {
            p.filters.push(crate::filter::Filter::Aes256Gcm);
        }
        p
    };
    let keyed = |ctx: FilterContext| match key {
        Some(k) => ctx.with_key(k),
        None => ctx,
    };
    TileRecipe {
        datatype,
        cell_size,
        nullable,
        kinds: tile_meta::kinds(
            datatype,
            is_dim,
            cell_size.is_none(),
            cell_val_num.unwrap_or(u32::MAX),
        ),
        pipeline: applied(pipeline),
        skips_offsets: pipeline.skips_offsets(datatype, WRITE_VERSION),
        offsets_pipeline: applied(offsets),
        validity_pipeline: applied(validity),
        data_ctx: keyed(FilterContext::new(
            datatype,
            cell_size.map_or(type_size, |s| s as u64),
            WRITE_VERSION,
        )),
        offsets_ctx: keyed(FilterContext::new(Datatype::Uint64, 8, WRITE_VERSION)),
        validity_ctx: keyed(FilterContext::new(Datatype::Uint8, 1, WRITE_VERSION)),
        fill,
        fill_validity,
        stem,
    }
}

#[cfg(test)]
#[path = "tile_build_tests.rs"]
mod tests;
