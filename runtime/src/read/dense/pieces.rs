//! The cut of a dense box read: bands of space-tile rows, lines along the
//! innermost dimension, and pieces of a line that come from one tile of
//! one fragment (or are fill).

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;

use crate::error::{Cause, Error, Result};
use crate::read::dense::fragments::Geometry;
use crate::read::dense::geometry::{DenseDimension, Span};
use crate::read::tiles::TileData;
use crate::tile::{Across, ScatterRun};

/// A run of result cells along a line that share a source.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Piece {
    /// First cell of the piece within its line.
    pub(crate) start: u64,
    pub(crate) count: u64,
    /// Fragment (index into the geometry), tile, first cell position in the
    /// tile and the distance between consecutive cells there; `None` = fill
    /// (no fragment holds the cells, or their tile was left out: failing a
    /// condition, or answered from its metadata).
    pub(crate) source: Option<(usize, u64, u64, u64)>,
}

/// The coordinates of line `line` of a band: every dimension but `inner`
/// is fixed, counted in the result order (the last of `order` fastest).
pub(crate) fn line_coords(
    line: u64,
    band: &[Span],
    order: &[usize],
    inner: usize,
    out: &mut [i128],
) {
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
pub(crate) fn line_pieces(
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
        let source = owner.and_then(|gi| {
            let tiling = &geometry[gi].tiling;
            let tile = tiling.tile_position(coords);
            if geometry[gi].skipped.contains(&tile) {
                // Left out (no cell passes, or answered): fill.
                return None;
            }
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
            Some((gi, tile, first, stride))
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
pub(crate) fn too_large(bytes: u64) -> Error {
    Error::corrupt(
        0,
        "tile var sizes",
        crate::error::Cause::TooLarge { size: bytes },
    )
}

pub(crate) fn short_tile() -> Error {
    Error::corrupt(0, "tile", Cause::EndsEarly)
}

/// Pieces of decoding work (tiles' chunks) per thread in a band: enough to
/// keep every thread busy, few enough that a band's decoded tiles stay a
/// bounded part of memory.
pub(crate) const BAND_TILES_PER_THREAD: u64 = 4;
pub(crate) const BAND_BYTES: u64 = 128 << 20;

/// How many rows of space tiles (along the outermost dimension of the
/// result order) one band spans. A band is one tile row at least; when a
/// row holds few tiles (a one-dimensional array, a narrow subarray) more
/// rows are taken, so that a band's tiles can be decoded in parallel.
pub(crate) fn rows_per_band(
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
pub(crate) fn piece_tile<'t>(
    piece: &Piece,
    tiles: &'t HashMap<(usize, u64), TileData>,
) -> Option<(&'t TileData, u64, u64)> {
    piece
        .source
        .and_then(|(gi, t, pos, stride)| tiles.get(&(gi, t)).map(|d| (d, pos, stride)))
}

/// One piece's part of a var-sized column: its data, its cells' ends, and
/// where its data starts in the column.
pub(crate) type VarPart<'c> = (&'c mut [u8], &'c mut [u64], u64);

pub(crate) fn band_runs<'o>(
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
                Some((gi, tile, first, stride)) => per_tile
                    .get_mut(gi)
                    .ok_or_else(short_tile)?
                    .entry(tile)
                    .or_default()
                    .push(ScatterRun {
                        tile_offset: first * cell_size as u64,
                        dest,
                        // A line reading its tile across takes one cell
                        // every `stride`.
                        across: (stride != 1).then_some(Across {
                            cell: cell_size as u64,
                            every: stride * cell_size as u64,
                        }),
                    }),
                None => fills.push(dest),
            }
        }
    }
    Ok((per_tile, fills))
}

/// The runs of one band's fixed-size cells (or validity bytes, `cell_size`
/// 1), cut out of the band's part of the result `region`: per fragment of
/// the geometry, per tile, the places its cells go; and the places that
/// take the fill value.
pub(crate) type BandRuns<'o> = (Vec<BTreeMap<u64, Vec<ScatterRun<'o>>>>, Vec<&'o mut [u8]>);

/// Fills each of `places` with copies of `cell`, in parallel.
pub(crate) fn fill_cells(places: Vec<&mut [u8]>, cell: &[u8]) {
    if cell.is_empty() {
        // An empty fill: its places hold no bytes.
        return;
    }
    places.into_par_iter().for_each(|place| {
        if cell.len() == 1 {
            place.fill(cell[0]);
        } else {
            repeat_cell(place, cell);
        }
    });
}

/// Fills `place` (a whole number of cells) with copies of `cell`, doubling
/// the filled part with each copy: a few `memcpy`s however many cells (a
/// read of a mostly unwritten domain is nearly all fill).
pub(crate) fn repeat_cell(place: &mut [u8], cell: &[u8]) {
    let first = cell.len().min(place.len());
    place[..first].copy_from_slice(&cell[..first]);
    let mut filled = first;
    while filled > 0 && filled < place.len() {
        let n = filled.min(place.len() - filled);
        place.copy_within(..n, filled);
        filled += n;
    }
}
