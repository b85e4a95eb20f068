//! A streamed read's attribute decoded straight into the result where a
//! batch keeps whole tiles ([`scatter_whole_tiles`]).

use rayon::prelude::*;

use super::BatchPlace;
use crate::error::Result;
use crate::fragment::{Field, FragmentMetadata};
use crate::read::sparse::sorted::short;
use crate::read::tiles::{StoredBuffers, TilePart, TileSource};
use crate::storage::Storage;
use crate::tile::ScatterRun;

/// Decodes a batch's cells of a fixed-size attribute straight into their
/// place in the result (`out`, cells of `size` bytes) when every tile of
/// the batch keeps all its cells or none (a read of the whole array): each
/// tile's chunks are decoded where its cells go, and no decoded tile is
/// held or copied. `false`, with nothing written, otherwise (a tile keeps
/// part of its cells: the tiles are decoded and the kept cells copied).
pub(super) fn scatter_whole_tiles(
    storage: &dyn Storage,
    fragment: &FragmentMetadata,
    (field, key): (Field, Option<&[u8; 32]>),
    (out, size): (&mut [u8], usize),
    batch: &[u64],
    at: &BatchPlace<'_>,
    stored: &StoredBuffers,
) -> Result<bool> {
    let whole = batch
        .iter()
        .zip(at.kept)
        .all(|(&tile, kept)| match kept.runs.as_slice() {
            [] => true,
            [(0, len)] => u64::from(*len) == fragment.cell_num(tile, 0),
            _ => false,
        });
    if !whole {
        return Ok(false);
    }
    let Some(source) = TileSource::new(storage, fragment, field, TilePart::Cells, 0, key)? else {
        return Ok(false);
    };
    if source.cell_size() != size as u64 {
        return Ok(false);
    }
    let mut rest = out;
    let mut jobs = Vec::with_capacity(batch.len());
    for (&tile, kept) in batch.iter().zip(at.kept) {
        let Some(&(_, len)) = kept.runs.first() else {
            continue;
        };
        let bytes = (len as usize).checked_mul(size).ok_or_else(short)?;
        if bytes > rest.len() {
            return Err(short());
        }
        let (dest, tail) = std::mem::take(&mut rest).split_at_mut(bytes);
        rest = tail;
        let run = ScatterRun {
            tile_offset: 0,
            dest,
            across: None,
        };
        jobs.push((tile, vec![run]));
    }
    jobs.into_par_iter()
        .try_for_each(|(tile, runs)| source.scatter(storage, tile, runs, stored))?;
    Ok(true)
}
