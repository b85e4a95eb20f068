//! Var-sized cells of a dense box read: sized from the band's offsets
//! tiles, then copied (or scattered straight from the chunks) into their
//! places.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::error::Result;
use crate::fragment::Field;
use crate::memory;
use crate::read::dense::fragments::Geometry;
use crate::read::dense::pieces::*;
use crate::read::result::Column;
use crate::read::tiles::{StoredBuffers, TileData, TilePart, TileSource};
use crate::snapshot::Snapshot;
use crate::tile::ScatterRun;

/// Grows a var-sized column by the pieces of a band (`sizes`: each piece's
/// bytes) and cuts the new space into one disjoint part per piece: its
/// data, its cells' ends, and where its data starts in the column.
pub(crate) fn var_parts<'c>(
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
pub(crate) fn copy_var_band(
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
pub(crate) fn copy_var_piece(
    p: &Piece,
    data: &mut [u8],
    ends: &mut [u64],
    at: u64,
    tiles: &HashMap<(usize, u64), TileData>,
    fill: &[u8],
) -> Result<()> {
    let Some((tile, pos, stride)) = piece_tile(p, tiles) else {
        fill_var_piece(data, ends, at, fill);
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

/// A piece of fill: `fill` in every cell of `data`, and the cells' ends
/// counted from the column's start (`at` is where `data` begins).
fn fill_var_piece(data: &mut [u8], ends: &mut [u64], at: u64, fill: &[u8]) {
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
}

/// Each fragment's source of `part` of `attr` for a band: `None` for a
/// fragment the band does not read (`read[i]` false) or one written before
/// the attribute was added (its cells take the fill). Returns `None` as a
/// whole when a fragment the band reads does not store `part` (its strings
/// are encoded otherwise), so the caller can take another path with
/// nothing changed.
fn band_sources<'a>(
    array: &'a Snapshot,
    geometry: &[Geometry<'a>],
    attr: &crate::schema::Attribute,
    part: TilePart,
    read: &[bool],
) -> Result<Option<Vec<Option<TileSource<'a>>>>> {
    let key = array.options().key;
    let mut sources = Vec::with_capacity(geometry.len());
    for (g, &read) in geometry.iter().zip(read) {
        let source = match g.fragment.schema.attribute(&attr.name) {
            Some((fa, _)) if read => {
                let source = TileSource::new(
                    array.storage(),
                    g.fragment,
                    Field::Attribute(fa),
                    part,
                    g.tiling.cells_per_tile(),
                    key.as_ref(),
                )?;
                if source.is_none() {
                    return Ok(None);
                }
                source
            }
            _ => None,
        };
        sources.push(source);
    }
    Ok(Some(sources))
}

/// One band of strings encoded whole (RLE, dictionary) decoded straight
/// into the result: every piece that reads a whole tile is given its place
/// (sized from the fragment metadata's var sizes) and its tile is decoded
/// there, strings and offsets, tiles in parallel; no tile is held decoded
/// on its own. Returns the bytes added, or `None` (nothing changed) when a
/// fragment the band reads stores its strings otherwise, or a piece reads
/// part of a tile (a tile's part has no size until it is decoded).
pub(crate) fn scatter_strings_band(
    array: &Snapshot,
    geometry: &[Geometry<'_>],
    attr: &crate::schema::Attribute,
    col: &mut Column,
    plan: &[Vec<Piece>],
    buffers: &StoredBuffers,
) -> Result<Option<u64>> {
    let storage = array.storage();
    let fill = attr.fill.as_slice();
    let mut read = vec![false; geometry.len()];
    for p in plan.iter().flatten() {
        if let Some((gi, _, _, _)) = p.source {
            *read.get_mut(gi).ok_or_else(short_tile)? = true;
        }
    }
    let Some(sources) = band_sources(array, geometry, attr, TilePart::Strings, &read)? else {
        return Ok(None);
    };
    let source_of = |p: &Piece| -> Option<(&TileSource<'_>, u64, u64, u64)> {
        let (gi, tile, pos, stride) = p.source?;
        Some((sources.get(gi)?.as_ref()?, tile, pos, stride))
    };
    let pieces: Vec<&Piece> = plan.iter().flatten().collect();
    let mut sizes = Vec::with_capacity(pieces.len());
    for p in &pieces {
        sizes.push(match source_of(p) {
            None => p.count * fill.len() as u64,
            Some((source, tile, pos, stride)) => {
                if pos != 0 || stride != 1 || p.count != source.tile_cells(tile) {
                    return Ok(None);
                }
                source.var_size(tile)?
            }
        });
    }
    let added: u64 = sizes.iter().sum();
    var_parts(col, &pieces, &sizes)?
        .into_par_iter()
        .zip(pieces)
        .try_for_each(|((data, ends, at), p)| match source_of(p) {
            Some((source, tile, _, _)) => {
                source.decode_strings(storage, tile, (data, ends, at), buffers)
            }
            None => {
                fill_var_piece(data, ends, at, fill);
                Ok(())
            }
        })?;
    Ok(Some(added))
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
pub(crate) fn scatter_var_band(
    array: &Snapshot,
    geometry: &[Geometry<'_>],
    attr: &crate::schema::Attribute,
    col: &mut Column,
    plan: &[Vec<Piece>],
    buffers: &StoredBuffers,
) -> Result<Option<u64>> {
    let storage = array.storage();
    let fill = attr.fill.as_slice();
    // The tiles each fragment gives the band, and its var data.
    let mut needed: Vec<Vec<u64>> = vec![Vec::new(); geometry.len()];
    for p in plan.iter().flatten() {
        if let Some((gi, tile, _, _)) = p.source {
            needed.get_mut(gi).ok_or_else(short_tile)?.push(tile);
        }
    }
    for tiles in &mut needed {
        tiles.sort_unstable();
        tiles.dedup();
    }
    let read: Vec<bool> = needed.iter().map(|tiles| !tiles.is_empty()).collect();
    let Some(sources) = band_sources(array, geometry, attr, TilePart::VarData, &read)? else {
        return Ok(None);
    };
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
                    across: None,
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
