//! Dense reads of one box (one range per dimension) in row- or column-major
//! order, without a per-cell plan.
//!
//! The result is cut into bands: the cells whose outermost coordinate (in
//! the result order) falls in one row of space tiles, or in a few rows when
//! a row holds too few tiles to keep every thread busy (see
//! [`rows_per_band`]). A band is a contiguous part of every result column
//! and needs only the tiles that meet it. Inside a band the result is a run
//! of lines (the cells along the innermost dimension); each line is cut
//! into pieces that come from one tile of one fragment, or are fill.
//!
//! When every piece reads consecutive cells of its tile (the result order
//! is the tiles' cell order along the line), the band is decoded straight
//! into the result: each piece's place is cut out of the result column and
//! handed to its tile, and each tile's chunks are decoded into a small
//! buffer and copied to those places ([`scatter_band`]; var-sized cells are
//! sized and placed from the band's offsets tiles first,
//! [`scatter_var_band`]). No decoded tile is assembled, and memory holds
//! the result plus one stored tile per thread.
//!
//! Otherwise (a column-major result of row-major tiles, strings encoded
//! whole) the band's tiles are decoded whole, all tiles and chunks in one
//! parallel batch and of each tile only the chunks holding cells the band
//! reads; fixed-size pieces are then copied line by line in parallel, and
//! var-sized ones sized first, then copied in parallel into their places.

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::fragment::Field;
use crate::read::dense::Geometry;
use crate::read::dense_geometry::{DenseDimension, Span};
use crate::read::memory;
use crate::read::tiles::{
    load_tiles_pooled, StoredBuffers, TileData, TilePart, TilePool, TileSelection, TileSource,
};
use crate::read::{Column, Layout, ReadResult};
use crate::snapshot::Snapshot;
use crate::tile::ScatterRun;

/// A run of result cells along a line that share a source.
#[derive(Debug, Clone, Copy)]
struct Piece {
    /// First cell of the piece within its line.
    start: u64,
    count: u64,
    /// Fragment (index into the geometry), tile, first cell position in the
    /// tile and the distance between consecutive cells there; `None` = fill.
    source: Option<(usize, u64, u64, u64)>,
}

/// The coordinates of line `line` of a band: every dimension but `inner`
/// is fixed, counted in the result order (the last of `order` fastest).
fn line_coords(line: u64, band: &[Span], order: &[usize], inner: usize, out: &mut [i128]) {
    let mut rest = line as i128;
    for &d in order.iter().rev() {
        if d == inner {
            out[d] = band[d].0;
            continue;
        }
        let len = band[d].1 - band[d].0 + 1;
        out[d] = band[d].0 + rest % len;
        rest /= len;
    }
}

/// The pieces of one line, newest fragment first wherever they overlap.
fn line_pieces(
    coords: &mut [i128],
    inner_span: Span,
    inner: usize,
    dims: &[DenseDimension],
    geometry: &[Geometry<'_>],
    needed: &mut [BTreeMap<u64, (u64, u64)>],
) -> Vec<Piece> {
    // The fragments whose non-empty domain holds the line's fixed coordinates.
    let holding: Vec<usize> = (0..geometry.len())
        .filter(|&gi| {
            geometry[gi]
                .ned
                .iter()
                .enumerate()
                .all(|(d, (lo, hi))| d == inner || (*lo <= coords[d] && coords[d] <= *hi))
        })
        .collect();
    let mut cuts = vec![inner_span.0, inner_span.1 + 1];
    let dim = &dims[inner];
    let mut t = dim.tile_low(dim.tile_index(inner_span.0) + 1);
    while t <= inner_span.1 {
        cuts.push(t);
        t += dim.extent;
    }
    for &gi in &holding {
        let (lo, hi) = geometry[gi].ned[inner];
        cuts.extend([lo, hi + 1]);
    }
    cuts.retain(|c| *c >= inner_span.0 && *c <= inner_span.1 + 1);
    cuts.sort_unstable();
    cuts.dedup();
    let mut pieces = Vec::with_capacity(cuts.len());
    for w in cuts.windows(2) {
        let (from, to) = (w[0], w[1]);
        coords[inner] = from;
        let owner = holding.iter().rev().copied().find(|&gi| {
            let (lo, hi) = geometry[gi].ned[inner];
            lo <= from && from <= hi
        });
        let source = owner.map(|gi| {
            let tiling = &geometry[gi].tiling;
            let tile = tiling.tile_position(coords);
            let (first, stride) = (tiling.cell_position(coords), tiling.cell_stride(inner));
            // The tile's cells this piece reads: first .. last.
            let last = first + ((to - from) as u64).saturating_sub(1) * stride;
            needed[gi]
                .entry(tile)
                .and_modify(|(lo, hi)| {
                    *lo = (*lo).min(first);
                    *hi = (*hi).max(last);
                })
                .or_insert((first, last));
            (gi, tile, first, stride)
        });
        pieces.push(Piece {
            start: (from - inner_span.0) as u64,
            count: (to - from) as u64,
            source,
        });
    }
    pieces
}

/// A var-sized result whose cells' sizes (from the fragments' offsets and
/// var sizes) add up to more memory than the system gives.
fn too_large(bytes: u64) -> Error {
    Error::corrupt(
        0,
        "tile var sizes",
        format!("the cells read need {bytes} bytes, more than can be allocated"),
    )
}

fn short_tile() -> Error {
    Error::corrupt(0, "tile", "a decoded tile is shorter than its cells")
}

/// Copies the pieces of one line of fixed-size cells into `line`.
fn copy_line(
    line: &mut [u8],
    pieces: &[Piece],
    tiles: &HashMap<(usize, u64), TileData>,
    cell_size: usize,
    fill: &[u8],
    validity: bool,
) -> Result<()> {
    for p in pieces {
        let dst = line
            .get_mut(p.start as usize * cell_size..(p.start + p.count) as usize * cell_size)
            .ok_or_else(short_tile)?;
        let tile = p
            .source
            .and_then(|(gi, t, pos, stride)| tiles.get(&(gi, t)).map(|d| (d, pos, stride)));
        let Some((tile, pos, stride)) = tile else {
            for cell in dst.chunks_exact_mut(cell_size) {
                cell.copy_from_slice(fill);
            }
            continue;
        };
        let src: &[u8] = if validity {
            match &tile.validity {
                Some(v) => v,
                None => {
                    dst.fill(1);
                    continue;
                }
            }
        } else {
            &tile.data
        };
        if stride == 1 {
            let from = pos as usize * cell_size;
            dst.copy_from_slice(src.get(from..from + dst.len()).ok_or_else(short_tile)?);
        } else {
            for (i, cell) in dst.chunks_exact_mut(cell_size).enumerate() {
                let from = (pos + i as u64 * stride) as usize * cell_size;
                cell.copy_from_slice(src.get(from..from + cell_size).ok_or_else(short_tile)?);
            }
        }
    }
    Ok(())
}

/// Writes the coordinates of dimension `d` for one line.
fn coords_line(line: &mut [u8], coords: &[i128], d: usize, inner: usize, size: usize) {
    for (i, cell) in line.chunks_exact_mut(size).enumerate() {
        let x = if d == inner {
            coords[d] + i as i128
        } else {
            coords[d]
        };
        // Little-endian two's complement, cut to the coordinate's width,
        // is the value's encoding for every integral datatype.
        cell.copy_from_slice(&x.to_le_bytes()[..size]);
    }
}

/// Pieces of decoding work (tiles' chunks) per thread in a band: enough to
/// keep every thread busy, few enough that a band's decoded tiles stay a
/// bounded part of memory.
const BAND_TILES_PER_THREAD: u64 = 4;
const BAND_BYTES: u64 = 128 << 20;

/// How many rows of space tiles (along the outermost dimension of the
/// result order) one band spans. A band is one tile row at least; when a
/// row holds few tiles (a one-dimensional array, a narrow subarray) more
/// rows are taken, so that a band's tiles can be decoded in parallel.
fn rows_per_band(
    dims: &[DenseDimension],
    spans: &[Span],
    outer: usize,
    schema: &crate::schema::ArraySchema,
    attributes: &[usize],
) -> u64 {
    let tiles_per_row: u64 = dims
        .iter()
        .zip(spans)
        .enumerate()
        .filter(|(d, _)| *d != outer)
        .map(|(_, (dim, (lo, hi)))| (dim.tile_index(*hi) - dim.tile_index(*lo) + 1) as u64)
        .fold(1u64, u64::saturating_mul);
    let cells_per_tile: u64 = dims
        .iter()
        .map(|d| d.extent.max(1) as u64)
        .fold(1u64, u64::saturating_mul);
    // Var-sized cells count as their offset (8 bytes) plus as much data.
    let cell_bytes: u64 = attributes
        .iter()
        .map(|&a| {
            let a = &schema.attributes[a];
            a.cell_val_num
                .map_or(16, |v| v as u64 * a.datatype.size())
                .max(1)
        })
        .sum::<u64>()
        .max(1);
    let row_bytes = tiles_per_row
        .saturating_mul(cells_per_tile)
        .saturating_mul(cell_bytes);
    // The pieces of work in a row: each tile's chunks decode on their own
    // (TileDB cuts tiles into chunks of 64 KiB), so a row of large tiles
    // keeps every thread busy alone, and more rows would only hold more
    // tile buffers. A var-sized tile may be one chunk (the string filters
    // encode it whole), and counts as one.
    let chunks_per_tile = attributes
        .iter()
        .map(|&a| {
            let a = &schema.attributes[a];
            a.cell_val_num.map_or(1, |v| {
                let tile_bytes = cells_per_tile.saturating_mul(v as u64 * a.datatype.size());
                (tile_bytes / crate::tile::CHUNK_SIZE).max(1)
            })
        })
        .min()
        .unwrap_or(1);
    let work_per_row = tiles_per_row.saturating_mul(chunks_per_tile).max(1);
    let by_tiles = (BAND_TILES_PER_THREAD * rayon::current_num_threads() as u64) / work_per_row;
    let by_bytes = BAND_BYTES / row_bytes.max(1);
    by_tiles.min(by_bytes).max(1)
}

/// Where a piece's cells come from: a decoded tile, the first cell's
/// position there and the distance between cells; `None` for fill.
fn piece_tile<'t>(
    piece: &Piece,
    tiles: &'t HashMap<(usize, u64), TileData>,
) -> Option<(&'t TileData, u64, u64)> {
    piece
        .source
        .and_then(|(gi, t, pos, stride)| tiles.get(&(gi, t)).map(|d| (d, pos, stride)))
}

/// One piece's part of a var-sized column: its data, its cells' ends, and
/// where its data starts in the column.
type VarPart<'c> = (&'c mut [u8], &'c mut [u64], u64);

/// Grows a var-sized column by the pieces of a band (`sizes`: each piece's
/// bytes) and cuts the new space into one disjoint part per piece: its
/// data, its cells' ends, and where its data starts in the column.
fn var_parts<'c>(
    col: &'c mut Column,
    pieces: &[&Piece],
    sizes: &[u64],
) -> Result<Vec<VarPart<'c>>> {
    let added: u64 = sizes.iter().sum();
    let cells: u64 = pieces.iter().map(|p| p.count).sum();
    let offsets = col.offsets.as_mut().ok_or_else(short_tile)?;
    let (data_base, offsets_base) = (col.data.len(), offsets.len());
    let grow = |n: u64| usize::try_from(n).map_err(|_| short_tile());
    memory::extend_zeroed(&mut col.data, grow(added)?).ok_or_else(|| too_large(added))?;
    memory::extend_zeroed(offsets, grow(cells)?)
        .ok_or_else(|| too_large(cells.saturating_mul(8)))?;
    let mut data_rest = &mut col.data[data_base..];
    let mut ends_rest = &mut offsets[offsets_base..];
    let mut at = data_base as u64;
    let mut parts = Vec::with_capacity(pieces.len());
    for (p, &size) in pieces.iter().zip(sizes) {
        let (data, rest) = std::mem::take(&mut data_rest).split_at_mut(grow(size)?);
        data_rest = rest;
        let (ends, rest) = std::mem::take(&mut ends_rest).split_at_mut(grow(p.count)?);
        ends_rest = rest;
        parts.push((data, ends, at));
        at += size;
    }
    Ok(parts)
}

/// The var-sized cells of one band, appended to `col`: every piece is sized
/// first (from its tile's offsets), then all are copied into their places in
/// parallel. Returns the bytes added.
fn copy_var_band(
    col: &mut Column,
    plan: &[Vec<Piece>],
    tiles: &HashMap<(usize, u64), TileData>,
    fill: &[u8],
) -> Result<u64> {
    let pieces: Vec<&Piece> = plan.iter().flatten().collect();
    let sizes: Vec<u64> = pieces
        .par_iter()
        .map(|p| match piece_tile(p, tiles) {
            None => Ok(p.count * fill.len() as u64),
            Some((tile, pos, stride)) => {
                let starts = tile.offsets.as_deref().ok_or_else(short_tile)?;
                let bound = |i: u64| {
                    starts
                        .get(usize::try_from(i).ok()?)
                        .copied()
                        .ok_or_else(short_tile)
                        .ok()
                };
                let mut bytes = 0u64;
                if stride == 1 {
                    let (first, last) = (bound(pos), bound(pos + p.count));
                    let (Some(first), Some(last)) = (first, last) else {
                        return Err(short_tile());
                    };
                    bytes = last.checked_sub(first).ok_or_else(short_tile)?;
                } else {
                    for i in 0..p.count {
                        let cell = pos + i * stride;
                        let (Some(a), Some(b)) = (bound(cell), bound(cell + 1)) else {
                            return Err(short_tile());
                        };
                        bytes += b.checked_sub(a).ok_or_else(short_tile)?;
                    }
                }
                Ok(bytes)
            }
        })
        .collect::<Result<_>>()?;
    let added: u64 = sizes.iter().sum();
    let parts = var_parts(col, &pieces, &sizes)?;
    parts
        .into_par_iter()
        .zip(pieces)
        .try_for_each(|((data, ends, at), p)| copy_var_piece(p, data, ends, at, tiles, fill))?;
    Ok(added)
}

/// Copies one piece of var-sized cells into `data` (exactly its bytes) and
/// writes each cell's end, counted from the column's start (`at` is where
/// `data` begins), into `ends`.
fn copy_var_piece(
    p: &Piece,
    data: &mut [u8],
    ends: &mut [u64],
    at: u64,
    tiles: &HashMap<(usize, u64), TileData>,
    fill: &[u8],
) -> Result<()> {
    let Some((tile, pos, stride)) = piece_tile(p, tiles) else {
        for (i, (cell, end)) in data
            .chunks_exact_mut(fill.len().max(1))
            .zip(ends.iter_mut())
            .enumerate()
        {
            cell.copy_from_slice(fill);
            *end = at + ((i + 1) * fill.len()) as u64;
        }
        if fill.is_empty() {
            ends.fill(at);
        }
        return Ok(());
    };
    let starts = tile.offsets.as_deref().ok_or_else(short_tile)?;
    let start_of = |i: u64| -> Result<usize> {
        starts
            .get(usize::try_from(i).map_err(|_| short_tile())?)
            .and_then(|s| usize::try_from(*s).ok())
            .ok_or_else(short_tile)
    };
    if stride == 1 {
        // Consecutive cells of a tile are consecutive bytes: one copy, and
        // their offsets shifted.
        let first = start_of(pos)?;
        let last = start_of(pos + p.count)?;
        data.copy_from_slice(tile.data.get(first..last).ok_or_else(short_tile)?);
        for (i, end) in ends.iter_mut().enumerate() {
            let past = start_of(pos + i as u64 + 1)?
                .checked_sub(first)
                .ok_or_else(short_tile)?;
            *end = at + past as u64;
        }
    } else {
        let mut written = 0usize;
        for (i, end) in ends.iter_mut().enumerate() {
            let cell = pos + i as u64 * stride;
            let bytes = tile
                .data
                .get(start_of(cell)?..start_of(cell + 1)?)
                .ok_or_else(short_tile)?;
            data.get_mut(written..written + bytes.len())
                .ok_or_else(short_tile)?
                .copy_from_slice(bytes);
            written += bytes.len();
            *end = at + written as u64;
        }
    }
    Ok(())
}

/// The runs of one band's fixed-size cells (or validity bytes, `cell_size`
/// 1), cut out of the band's part of the result `region`: per fragment of
/// the geometry, per tile, the places its cells go; and the places that
/// take the fill value.
type BandRuns<'o> = (Vec<BTreeMap<u64, Vec<ScatterRun<'o>>>>, Vec<&'o mut [u8]>);

fn band_runs<'o>(
    region: &'o mut [u8],
    plan: &[Vec<Piece>],
    line_len: u64,
    cell_size: usize,
    fragments: usize,
) -> Result<BandRuns<'o>> {
    let mut per_tile: Vec<BTreeMap<u64, Vec<ScatterRun<'o>>>> =
        (0..fragments).map(|_| BTreeMap::new()).collect();
    let mut fills = Vec::new();
    let mut rest = region;
    for pieces in plan {
        let line_bytes = line_len as usize * cell_size;
        if rest.len() < line_bytes {
            return Err(short_tile());
        }
        let (mut line, tail) = std::mem::take(&mut rest).split_at_mut(line_bytes);
        rest = tail;
        let mut at = 0u64;
        for p in pieces {
            if p.start != at || line.len() < p.count as usize * cell_size {
                return Err(short_tile());
            }
            at += p.count;
            let (dest, tail) = std::mem::take(&mut line).split_at_mut(p.count as usize * cell_size);
            line = tail;
            match p.source {
                Some((gi, tile, first, _)) => per_tile
                    .get_mut(gi)
                    .ok_or_else(short_tile)?
                    .entry(tile)
                    .or_default()
                    .push(ScatterRun {
                        tile_offset: first * cell_size as u64,
                        dest,
                    }),
                None => fills.push(dest),
            }
        }
    }
    Ok((per_tile, fills))
}

/// Fills each of `places` with copies of `cell`, in parallel.
fn fill_cells(places: Vec<&mut [u8]>, cell: &[u8]) {
    if cell.is_empty() {
        // An empty fill: its places hold no bytes.
        return;
    }
    places.into_par_iter().for_each(|place| {
        if cell.len() == 1 {
            place.fill(cell[0]);
        } else {
            for c in place.chunks_exact_mut(cell.len()) {
                c.copy_from_slice(cell);
            }
        }
    });
}

/// Decodes one band of a fixed-size attribute (its cells, or its
/// validity bytes) straight into the result: every tile's chunks are
/// decoded into a small buffer and their cells copied to where the result
/// wants them, without assembling the tile (see
/// [`crate::tile::unfilter_tile_scattered`]). Needs every piece of the band
/// to read consecutive cells of its tile (stride 1).
#[allow(clippy::too_many_arguments)]
fn scatter_band(
    array: &Snapshot,
    geometry: &[Geometry<'_>],
    attr: &crate::schema::Attribute,
    part: TilePart,
    region: &mut [u8],
    plan: &[Vec<Piece>],
    line_len: u64,
    buffers: &StoredBuffers,
) -> Result<()> {
    let storage = array.storage();
    let key = array.options().key;
    let (cell_size, fill) = match part {
        TilePart::Cells => (attr.fill.len(), attr.fill.clone()),
        TilePart::Validity => (1, vec![u8::from(attr.fill_validity)]),
        TilePart::VarData => {
            return Err(Error::Usage(
                "var-sized cells are scattered by scatter_var_band".into(),
            ))
        }
    };
    let (per_tile, fills) = band_runs(region, plan, line_len, cell_size, geometry.len())?;
    fill_cells(fills, &fill);
    let mut jobs = Vec::new();
    for (g, tiles) in geometry.iter().zip(per_tile) {
        if tiles.is_empty() {
            continue;
        }
        let source = match g.fragment.schema.attribute(&attr.name) {
            Some((fa, _)) => TileSource::new(
                storage,
                g.fragment,
                Field::Attribute(fa),
                part,
                g.tiling.cells_per_tile(),
                key.as_ref(),
            )?,
            None => None,
        };
        match source {
            Some(source) => {
                let source = std::sync::Arc::new(source);
                jobs.extend(
                    tiles
                        .into_iter()
                        .map(|(tile, runs)| (source.clone(), tile, runs)),
                );
            }
            None => {
                // A fragment without the attribute (written before it was
                // added) holds its fill; one without validity, valid cells.
                let value = match part {
                    TilePart::Cells | TilePart::VarData => fill.clone(),
                    TilePart::Validity if g.fragment.schema.attribute(&attr.name).is_some() => {
                        vec![1]
                    }
                    TilePart::Validity => fill.clone(),
                };
                let places = tiles.into_values().flatten().map(|r| r.dest).collect();
                fill_cells(places, &value);
            }
        }
    }
    jobs.into_par_iter()
        .try_for_each(|(source, tile, runs)| source.scatter(storage, tile, runs, buffers))
}

/// One band of a var-sized attribute decoded straight into the result
/// (appended to `col`): the offsets of the band's tiles are decoded first,
/// every piece is sized from them and given its place, then each tile's
/// data chunks are decoded into a small buffer and their bytes copied to
/// those places (see [`crate::tile::unfilter_tile_scattered`]); no tile's
/// data is assembled. Needs every piece to read consecutive cells of its
/// tile (stride 1). Returns the bytes added, or `None` (nothing changed)
/// when a fragment encodes its strings whole (RLE, dictionary: their
/// offsets come only from decoding the data).
fn scatter_var_band(
    array: &Snapshot,
    geometry: &[Geometry<'_>],
    attr: &crate::schema::Attribute,
    col: &mut Column,
    plan: &[Vec<Piece>],
    buffers: &StoredBuffers,
) -> Result<Option<u64>> {
    let storage = array.storage();
    let key = array.options().key;
    let fill = attr.fill.as_slice();
    // The tiles each fragment gives the band, and its var data.
    let mut needed: Vec<Vec<u64>> = vec![Vec::new(); geometry.len()];
    for p in plan.iter().flatten() {
        if let Some((gi, tile, _, _)) = p.source {
            needed.get_mut(gi).ok_or_else(short_tile)?.push(tile);
        }
    }
    let mut sources = Vec::with_capacity(geometry.len());
    for (g, tiles) in geometry.iter().zip(&mut needed) {
        tiles.sort_unstable();
        tiles.dedup();
        let source = match g.fragment.schema.attribute(&attr.name) {
            Some((fa, _)) if !tiles.is_empty() => {
                let source = TileSource::new(
                    storage,
                    g.fragment,
                    Field::Attribute(fa),
                    TilePart::VarData,
                    g.tiling.cells_per_tile(),
                    key.as_ref(),
                )?;
                if source.is_none() {
                    return Ok(None);
                }
                source
            }
            // No tiles, or written before the attribute was added (fill).
            _ => None,
        };
        sources.push(source);
    }
    // Every needed tile's cell starts, tiles in parallel.
    let jobs: Vec<(usize, u64)> = needed
        .iter()
        .enumerate()
        .filter(|(gi, _)| sources[*gi].is_some())
        .flat_map(|(gi, tiles)| tiles.iter().map(move |t| (gi, *t)))
        .collect();
    let decoded: Vec<Vec<u64>> = jobs
        .par_iter()
        .map(|&(gi, tile)| match &sources[gi] {
            Some(source) => source.var_starts(storage, tile, buffers),
            None => Err(short_tile()),
        })
        .collect::<Result<_>>()?;
    let starts: HashMap<(usize, u64), Vec<u64>> = jobs.into_iter().zip(decoded).collect();
    let starts_of = |p: &Piece| -> Option<(&[u64], u64)> {
        let (gi, tile, pos, _) = p.source?;
        sources.get(gi)?.as_ref()?;
        Some((starts.get(&(gi, tile))?.as_slice(), pos))
    };
    // Each piece's bytes.
    let pieces: Vec<&Piece> = plan.iter().flatten().collect();
    let sizes: Vec<u64> = pieces
        .iter()
        .map(|p| match starts_of(p) {
            None => Ok(p.count * fill.len() as u64),
            Some((cell_starts, pos)) => {
                let at = |i: u64| {
                    usize::try_from(i)
                        .ok()
                        .and_then(|i| cell_starts.get(i).copied())
                        .ok_or_else(short_tile)
                };
                Ok(at(pos + p.count)? - at(pos)?)
            }
        })
        .collect::<Result<_>>()?;
    let added: u64 = sizes.iter().sum();
    // Each piece's part of the new space: its data goes to its tile's runs
    // (or takes the fill), its ends are written from the tile's starts.
    let mut runs: HashMap<(usize, u64), Vec<ScatterRun<'_>>> = HashMap::new();
    let mut fills = Vec::new();
    let mut ends_jobs = Vec::with_capacity(pieces.len());
    for (p, (data, ends, at)) in pieces.iter().zip(var_parts(col, &pieces, &sizes)?) {
        let tile_start = match (p.source, starts_of(p)) {
            (Some((gi, tile, pos, _)), Some((cell_starts, _))) => {
                let first = cell_starts[pos as usize];
                runs.entry((gi, tile)).or_default().push(ScatterRun {
                    tile_offset: first,
                    dest: data,
                });
                Some((cell_starts, pos, first))
            }
            _ => {
                fills.push(data);
                None
            }
        };
        ends_jobs.push((ends, at, tile_start));
    }
    let fill_len = fill.len() as u64;
    ends_jobs
        .into_par_iter()
        .for_each(|(ends, at, tile_start)| match tile_start {
            Some((cell_starts, pos, first)) => {
                let past = &cell_starts[pos as usize + 1..pos as usize + 1 + ends.len()];
                for (end, s) in ends.iter_mut().zip(past) {
                    *end = at + (s - first);
                }
            }
            None => {
                for (i, end) in ends.iter_mut().enumerate() {
                    *end = at + (i as u64 + 1) * fill_len;
                }
            }
        });
    fill_cells(fills, fill);
    runs.into_par_iter()
        .try_for_each(|((gi, tile), runs)| match &sources[gi] {
            Some(source) => source.scatter(storage, tile, runs, buffers),
            None => Err(short_tile()),
        })?;
    Ok(Some(added))
}

/// After the first band of a var-sized column, room for the rest of its
/// data, estimated from that band (reserved, not touched: see `memory`).
fn reserve_for_rest(col: &mut Column, added: u64, band_start: u64, band_cells: u64, total: u64) {
    if band_start == 0 && band_cells < total {
        let estimate = (added as u128 * (total - band_cells) as u128 / band_cells.max(1) as u128)
            .min(usize::MAX as u128) as usize;
        memory::reserve_hint(&mut col.data, estimate);
    }
}

pub(crate) fn read_box(
    array: &Snapshot,
    layout: Layout,
    dims: &[DenseDimension],
    spans: &[Span],
    geometry: &[Geometry<'_>],
    attributes: &[usize],
    with_coordinates: bool,
) -> Result<ReadResult> {
    let schema = array.schema();
    let storage = array.storage();
    let key = array.options().key;
    let n = dims.len();
    // Dimensions from slowest to fastest in the result.
    let order: Vec<usize> = match layout {
        Layout::ColMajor => (0..n).rev().collect(),
        _ => (0..n).collect(),
    };
    let (outer, inner) = (order[0], order[n - 1]);
    let total: u64 = spans.iter().map(|(lo, hi)| (hi - lo + 1) as u64).product();

    let mut dim_cols: Vec<Column> = if with_coordinates {
        schema
            .dimensions
            .iter()
            .map(|d| {
                let mut c = Column::new(&d.name, d.datatype, Some(1), false);
                c.data = memory::zeroed_bytes((total * d.datatype.size()) as usize);
                c
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut attr_cols: Vec<Column> = attributes
        .iter()
        .map(|&a| {
            let a = &schema.attributes[a];
            let mut c = Column::new(&a.name, a.datatype, a.cell_val_num, a.nullable);
            if let Some(v) = a.cell_val_num {
                c.data = memory::zeroed_bytes((total * v as u64 * a.datatype.size()) as usize);
            } else if let Some(o) = &mut c.offsets {
                memory::reserve(o, total as usize);
            }
            if let Some(v) = &mut c.validity {
                *v = memory::zeroed_bytes(total as usize);
            }
            c
        })
        .collect();

    // Tile buffers of the previous band, decoded into again.
    let mut pool = TilePool::default();
    // Stored tiles of the bands decoded straight into the result.
    let stored = StoredBuffers::default();
    let outer_dim = &dims[outer];
    let rows = rows_per_band(dims, spans, outer, schema, attributes);
    let mut band_lo = spans[outer].0;
    let mut done_cells: u64 = 0;
    while band_lo <= spans[outer].1 {
        let band_hi = (outer_dim.tile_low(outer_dim.tile_index(band_lo) + rows as i128) - 1)
            .min(spans[outer].1);
        let mut band: Vec<Span> = spans.to_vec();
        band[outer] = (band_lo, band_hi);
        band_lo = band_hi + 1;
        let inner_len = (band[inner].1 - band[inner].0 + 1) as u64;
        let band_cells: u64 = band.iter().map(|(lo, hi)| (hi - lo + 1) as u64).product();
        let lines = band_cells / inner_len;

        // Plan the pieces of every line and the tiles they need.
        let mut needed = vec![BTreeMap::new(); geometry.len()];
        let mut coords = vec![0i128; n];
        let mut plan: Vec<Vec<Piece>> = Vec::with_capacity(lines as usize);
        for line in 0..lines {
            line_coords(line, &band, &order, inner, &mut coords);
            plan.push(line_pieces(
                &mut coords,
                band[inner],
                inner,
                dims,
                geometry,
                &mut needed,
            ));
        }

        let band_start = done_cells;
        done_cells += band_cells;
        let range = |size: u64| (band_start * size) as usize..(done_cells * size) as usize;

        if with_coordinates {
            for (d, col) in dim_cols.iter_mut().enumerate() {
                let size = col.datatype.size() as usize;
                let region = col
                    .data
                    .get_mut(range(size as u64))
                    .ok_or_else(short_tile)?;
                region
                    .par_chunks_mut(inner_len as usize * size)
                    .enumerate()
                    .for_each(|(line, out)| {
                        let mut c = vec![0i128; n];
                        line_coords(line as u64, &band, &order, inner, &mut c);
                        coords_line(out, &c, d, inner, size);
                    });
            }
        }

        // Every piece reads consecutive cells of its tile: fixed-size cells
        // are decoded straight into the result.
        let direct = plan
            .iter()
            .flatten()
            .all(|p| p.source.is_none_or(|(_, _, _, stride)| stride == 1));
        for (col, &a) in attr_cols.iter_mut().zip(attributes) {
            let attr = &schema.attributes[a];
            if let (true, Some(v)) = (direct, attr.cell_val_num) {
                let cell_size = v as u64 * attr.datatype.size();
                if attr.fill.len() as u64 != cell_size {
                    return Err(Error::corrupt(
                        0,
                        "fill",
                        format!("the fill value of {} is not one cell", attr.name),
                    ));
                }
                let region = col.data.get_mut(range(cell_size)).ok_or_else(short_tile)?;
                scatter_band(
                    array,
                    geometry,
                    attr,
                    TilePart::Cells,
                    region,
                    &plan,
                    inner_len,
                    &stored,
                )?;
                if let Some(validity) = &mut col.validity {
                    let region = validity.get_mut(range(1)).ok_or_else(short_tile)?;
                    scatter_band(
                        array,
                        geometry,
                        attr,
                        TilePart::Validity,
                        region,
                        &plan,
                        inner_len,
                        &stored,
                    )?;
                }
                continue;
            }
            if direct && attr.cell_val_num.is_none() {
                if let Some(added) = scatter_var_band(array, geometry, attr, col, &plan, &stored)? {
                    if let Some(validity) = &mut col.validity {
                        let region = validity.get_mut(range(1)).ok_or_else(short_tile)?;
                        scatter_band(
                            array,
                            geometry,
                            attr,
                            TilePart::Validity,
                            region,
                            &plan,
                            inner_len,
                            &stored,
                        )?;
                    }
                    reserve_for_rest(col, added, band_start, band_cells, total);
                    continue;
                }
            }
            // Decode this band's tiles of the attribute.
            let mut tiles: HashMap<(usize, u64), TileData> = HashMap::new();
            for (gi, g) in geometry.iter().enumerate() {
                let wanted: Vec<u64> = needed[gi].keys().copied().collect();
                let wanted_cells: Vec<(u64, u64)> = needed[gi].values().copied().collect();
                if wanted.is_empty() {
                    continue;
                }
                if let Some(&bad) = wanted.iter().find(|t| **t >= g.fragment.tile_num) {
                    return Err(Error::corrupt(
                        0,
                        "tile offsets",
                        format!("fragment {} has no tile {bad}", g.fragment.name),
                    ));
                }
                let Some((fa, _)) = g.fragment.schema.attribute(&attr.name) else {
                    continue;
                };
                let data = load_tiles_pooled(
                    storage,
                    g.fragment,
                    Field::Attribute(fa),
                    TileSelection {
                        tiles: &wanted,
                        cells: Some(&wanted_cells),
                    },
                    g.tiling.cells_per_tile(),
                    key.as_ref(),
                    &mut pool,
                )?;
                for (t, d) in wanted.iter().zip(data) {
                    tiles.insert((gi, *t), d);
                }
            }
            match attr.cell_val_num {
                Some(v) => {
                    let cell_size = (v as u64 * attr.datatype.size()) as usize;
                    if attr.fill.len() != cell_size {
                        return Err(Error::corrupt(
                            0,
                            "fill",
                            format!("the fill value of {} is not one cell", attr.name),
                        ));
                    }
                    let region = col
                        .data
                        .get_mut(range(cell_size as u64))
                        .ok_or_else(short_tile)?;
                    region
                        .par_chunks_mut(inner_len as usize * cell_size)
                        .zip(&plan)
                        .try_for_each(|(out, pieces)| {
                            copy_line(out, pieces, &tiles, cell_size, &attr.fill, false)
                        })?;
                }
                None => {
                    let added = copy_var_band(col, &plan, &tiles, &attr.fill)?;
                    reserve_for_rest(col, added, band_start, band_cells, total);
                }
            }
            if let Some(validity) = &mut col.validity {
                let fill = [u8::from(attr.fill_validity)];
                let region = validity.get_mut(range(1)).ok_or_else(short_tile)?;
                region
                    .par_chunks_mut(inner_len as usize)
                    .zip(&plan)
                    .try_for_each(|(out, pieces)| copy_line(out, pieces, &tiles, 1, &fill, true))?;
            }
            pool.recycle(tiles.into_values());
        }
    }
    Ok(ReadResult {
        dimensions: dim_cols,
        attributes: attr_cols,
    })
}
