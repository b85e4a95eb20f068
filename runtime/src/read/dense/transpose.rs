//! Copies of decoded tiles' cells into result lines, where a line reads
//! its tile across (a column-major result of row-major tiles, or the
//! reverse): consecutive cells of a line are `stride` cells apart in the
//! tile, and consecutive lines read neighbouring cells. Of a box read, the
//! validity bytes of var-sized cells read across come here; fixed-size
//! cells are decoded straight into the result ([`super::copy`]).
//!
//! Copied line by line, every cell read would touch its own cache line
//! (and, with a long stride, its own page). So lines are taken in groups of
//! [`GROUP`]: where each line of a group has the same pieces, reading
//! neighbouring cells of one tile, the group is copied tile row by tile row
//! — one contiguous read of `GROUP` cells, written to the `GROUP` lines —
//! as a blocked transposition does.
use std::collections::HashMap;

use rayon::prelude::*;

use crate::error::Result;
use crate::read::dense::pieces::{short_tile, Piece};
use crate::read::tiles::TileData;

/// Lines copied together: 16 cells of up to 8 bytes are two cache lines.
const GROUP: usize = 16;

/// Where a piece's cells come from.
pub(crate) enum Source<'t> {
    /// The attribute's fill value.
    Fill,
    /// Validity of a tile without validity: every cell valid.
    AllValid,
    /// The cells (or validity bytes) of a decoded tile, the first cell's
    /// position in it and the distance between consecutive cells.
    Tile(&'t [u8], u64, u64),
}

/// The source of piece `p` of a line: its tile's cells, or validity bytes
/// when `validity`.
pub(crate) fn piece_source<'t>(
    p: &Piece,
    tiles: &'t HashMap<(usize, u64), TileData>,
    validity: bool,
) -> Source<'t> {
    let Some((tile, pos, stride)) = p
        .source
        .and_then(|(gi, t, pos, stride)| tiles.get(&(gi, t)).map(|d| (d, pos, stride)))
    else {
        return Source::Fill;
    };
    if !validity {
        return Source::Tile(&tile.data, pos, stride);
    }
    match &tile.validity {
        Some(v) => Source::Tile(v, pos, stride),
        None => Source::AllValid,
    }
}

/// Copies the pieces of every line of a band (`plans`, one per line of
/// `inner_len` cells of `cell_size` bytes) into `region`, in parallel over
/// groups of lines.
pub(crate) fn copy_lines(
    region: &mut [u8],
    plans: &[Vec<Piece>],
    inner_len: u64,
    tiles: &HashMap<(usize, u64), TileData>,
    cell_size: usize,
    fill: &[u8],
    validity: bool,
) -> Result<()> {
    let line_bytes = inner_len as usize * cell_size;
    if line_bytes == 0 {
        return Ok(());
    }
    region
        .par_chunks_mut(GROUP * line_bytes)
        .zip(plans.par_chunks(GROUP))
        .try_for_each(|(out, group)| {
            let mut lines: Vec<&mut [u8]> = out.chunks_mut(line_bytes).collect();
            if lines.len() != group.len() {
                return Err(short_tile());
            }
            let same_shape = group.iter().all(|p| p.len() == group[0].len());
            if group.len() < 2 || !same_shape {
                for (line, pieces) in lines.iter_mut().zip(group) {
                    copy_line(line, pieces, tiles, cell_size, fill, validity)?;
                }
                return Ok(());
            }
            for k in 0..group[0].len() {
                if !copy_block(&mut lines, group, k, tiles, cell_size, validity)? {
                    for (line, pieces) in lines.iter_mut().zip(group) {
                        copy_line(line, &pieces[k..=k], tiles, cell_size, fill, validity)?;
                    }
                }
            }
            Ok(())
        })
}

/// Copies piece `k` of every line of the group as one block when the
/// lines' pieces read neighbouring cells of one tile across (same place
/// in the line, same tile and stride, first cells one apart); `false`
/// when they do not, copying nothing.
fn copy_block(
    lines: &mut [&mut [u8]],
    group: &[Vec<Piece>],
    k: usize,
    tiles: &HashMap<(usize, u64), TileData>,
    cell_size: usize,
    validity: bool,
) -> Result<bool> {
    let first = &group[0][k];
    let Some((gi, t, pos, stride)) = first.source else {
        return Ok(false);
    };
    let lined_up = group.iter().enumerate().all(|(j, p)| {
        let p = &p[k];
        p.start == first.start
            && p.count == first.count
            && p.source == Some((gi, t, pos + j as u64, stride))
    });
    if !lined_up || first.count == 0 {
        return Ok(false);
    }
    let Source::Tile(src, pos, stride) = piece_source(first, tiles, validity) else {
        return Ok(false);
    };
    let (start, count) = (first.start as usize, first.count as usize);
    let (pos, stride, width) = (pos as usize, stride as usize, group.len());
    // The last row read must be in the tile, each piece in its line; then
    // every cell is.
    let end = (pos + (count - 1) * stride + width) * cell_size;
    let src = src.get(..end).ok_or_else(short_tile)?;
    if lines.iter().any(|l| l.len() < (start + count) * cell_size) {
        return Err(short_tile());
    }
    match cell_size {
        1 => gather_block::<1>(lines, start, count, src, pos, stride),
        2 => gather_block::<2>(lines, start, count, src, pos, stride),
        4 => gather_block::<4>(lines, start, count, src, pos, stride),
        8 => gather_block::<8>(lines, start, count, src, pos, stride),
        16 => gather_block::<16>(lines, start, count, src, pos, stride),
        _ => return Ok(false),
    }
    Ok(true)
}

/// Cells `start..start + count` of each line `j` are cells `pos + j`,
/// `pos + j + stride`, ... of `src`: row `i` of the block is the
/// contiguous cells `pos + i * stride ..` for every line at once. Copied
/// [`ROWS`] rows at a time, line by line, so that each line is written a
/// whole cache line (of 8-byte cells) at once while those rows of `src`
/// stay in cache.
fn gather_block<const N: usize>(
    lines: &mut [&mut [u8]],
    start: usize,
    count: usize,
    src: &[u8],
    pos: usize,
    stride: usize,
) {
    const ROWS: usize = 8;
    let mut first = 0;
    while first < count {
        let rows = ROWS.min(count - first);
        for (j, line) in lines.iter_mut().enumerate() {
            let at = (start + first) * N;
            let out = &mut line[at..at + rows * N];
            for (r, cell) in out.chunks_exact_mut(N).enumerate() {
                let from = (pos + (first + r) * stride + j) * N;
                cell.copy_from_slice(&src[from..from + N]);
            }
        }
        first += rows;
    }
}

/// Copies cells `pos`, `pos + stride`, ... of `src` (`cell_size` bytes
/// each) into the consecutive cells of `dst`; the caller has checked that
/// the last of them is in `src`.
pub(crate) fn gather_cells(
    dst: &mut [u8],
    src: &[u8],
    pos: usize,
    stride: usize,
    cell_size: usize,
) {
    let copied = crate::tile::gather(dst, src, pos * cell_size, stride * cell_size, cell_size);
    debug_assert!(copied, "a gather reaching past its source");
}

/// Copies the pieces of one line of fixed-size cells into `line`.
pub(crate) fn copy_line(
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
        let (src, pos, stride) = match piece_source(p, tiles, validity) {
            Source::Fill => {
                crate::read::dense::pieces::repeat_cell(dst, fill);
                continue;
            }
            Source::AllValid => {
                dst.fill(1);
                continue;
            }
            Source::Tile(src, pos, stride) => (src, pos, stride),
        };
        if stride == 1 {
            let from = pos as usize * cell_size;
            dst.copy_from_slice(src.get(from..from + dst.len()).ok_or_else(short_tile)?);
        } else if p.count > 0 {
            let (pos, stride) = (pos as usize, stride as usize);
            // The last cell read must be in the tile; then every one is.
            let last = (pos + (p.count as usize - 1) * stride + 1) * cell_size;
            let src = src.get(..last).ok_or_else(short_tile)?;
            gather_cells(dst, src, pos, stride, cell_size);
        }
    }
    Ok(())
}
