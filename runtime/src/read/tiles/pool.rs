//! Buffers reused from tile to tile, and unfiltering into them.

use crate::error::Result;
use crate::filter::{FilterContext, FilterPipeline};
use crate::tile::{parse_chunks, unfilter_tiles, unfilter_tiles_into, TileJob};

use crate::read::tiles::data::TileData;

/// Buffers of tiles a read has finished with, used again for the next tiles
/// (read into, or decoded into), so that their pages are not faulted in and
/// zeroed for every tile: a read that goes through its tiles in batches
/// keeps one batch's worth of memory.
#[derive(Debug, Default)]
pub struct TilePool {
    /// Buffers for decoded cells.
    pub(super) decoded: Vec<Vec<u8>>,
    /// Buffers for the bytes as stored.
    pub(super) persisted: Vec<Vec<u8>>,
    /// Buffers for the cell starts of var-sized tiles.
    pub(super) starts: Vec<Vec<u64>>,
}

impl TilePool {
    /// Takes back the buffers of tiles the caller is done with.
    pub fn recycle(&mut self, tiles: impl IntoIterator<Item = TileData>) {
        for tile in tiles {
            self.decoded.push(tile.data);
            self.decoded.extend(tile.validity);
            self.starts.extend(tile.offsets);
        }
    }
}

/// Like [`unfilter_tiles`], but decodes into buffers taken from `pool`
/// (buffers of earlier tiles, so that their pages are not faulted in and
/// zeroed again); the framing of each tile is checked before its buffer is
/// sized.
pub(super) fn unfilter_pooled(
    jobs: &[TileJob<'_>],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    pool: &mut Vec<Vec<u8>>,
) -> Result<Vec<Vec<u8>>> {
    if pool.is_empty() {
        return unfilter_tiles(jobs, pipeline, ctx);
    }
    let mut outputs = Vec::with_capacity(jobs.len());
    for job in jobs {
        let declared: u64 = parse_chunks(job.bytes)
            .map_err(|e| {
                e.within(format!("tile {}", job.index))
                    .at_base(job.file_offset)
            })?
            .iter()
            .map(|c| c.original_len as u64)
            .sum();
        let len = match usize::try_from(job.expected_len) {
            Ok(len) if declared == job.expected_len => len,
            // Let the general path report the fault.
            _ => return unfilter_tiles(jobs, pipeline, ctx),
        };
        let mut buffer = pool.pop().unwrap_or_default();
        // Every byte is overwritten by the decode; only growth is zeroed.
        buffer.resize(len, 0);
        buffer.truncate(len);
        outputs.push(buffer);
    }
    let mut slices: Vec<&mut [u8]> = outputs
        .iter_mut()
        .map(std::vec::Vec::as_mut_slice)
        .collect();
    unfilter_tiles_into(jobs, pipeline, ctx, &mut slices)?;
    Ok(outputs)
}
