//! Loading the data tiles of one fragment field: read the persisted bytes,
//! unfilter them (many tiles at once, in parallel), and give access to the
//! cells ([`load_tiles`], [`load_tiles_pooled`]); or decode a tile's cells
//! straight into the places a result wants them, chunk by chunk, without
//! assembling the tile ([`TileSource`]).

mod data;
mod load;
mod source;
mod stored;

pub use data::{FieldShape, TileData};
pub use source::{StoredBuffers, TilePart, TileSource};

use crate::error::{Error, Result};
use crate::filter::{FilterContext, FilterPipeline};
use crate::fragment::{Field, FragmentMetadata};
use crate::storage::Storage;
use crate::tile::{parse_chunks, unfilter_tiles, unfilter_tiles_into, TileJob};

use crate::read::tiles::load::FieldLoad;

/// Buffers of tiles a read has finished with, used again for the next tiles
/// (read into, or decoded into), so that their pages are not faulted in and
/// zeroed for every tile: a read that goes through its tiles in batches
/// keeps one batch's worth of memory.
#[derive(Debug, Default)]
pub struct TilePool {
    /// Buffers for decoded cells.
    decoded: Vec<Vec<u8>>,
    /// Buffers for the bytes as stored.
    persisted: Vec<Vec<u8>>,
    /// Buffers for the cell starts of var-sized tiles.
    starts: Vec<Vec<u64>>,
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

    fn recycle_persisted(&mut self, raw: Vec<(Vec<u8>, u64)>) {
        self.persisted
            .extend(raw.into_iter().map(|(bytes, _)| bytes));
    }
}

/// Like [`unfilter_tiles`], but decodes into buffers taken from `pool`
/// (buffers of earlier tiles, so that their pages are not faulted in and
/// zeroed again); the framing of each tile is checked before its buffer is
/// sized.
fn unfilter_pooled(
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
    let mut slices: Vec<&mut [u8]> = outputs.iter_mut().map(|v| v.as_mut_slice()).collect();
    unfilter_tiles_into(jobs, pipeline, ctx, &mut slices)?;
    Ok(outputs)
}

/// Decodes tiles `tiles` of `field` of `fragment`; `cells_per_tile` is the
/// cell count of a dense tile (ignored for sparse fragments).
pub fn load_tiles(
    storage: &dyn Storage,
    fragment: &FragmentMetadata,
    field: Field,
    tiles: &[u64],
    cells_per_dense_tile: u64,
    key: Option<&[u8; 32]>,
) -> Result<Vec<TileData>> {
    load_tiles_pooled(
        storage,
        fragment,
        field,
        TileSelection::whole(tiles),
        cells_per_dense_tile,
        key,
        &mut TilePool::default(),
    )
}

/// The tiles a read loads, and of each, optionally, the only cells it will
/// look at (first and last, inclusive, in the tile's cell order). Of a
/// fixed-size field, chunks that hold none of those cells are not decoded:
/// a subarray that cuts through a tile decodes only the rows it needs.
/// Those cells' bytes in the returned tile are then unspecified.
#[derive(Debug, Clone, Copy)]
pub struct TileSelection<'a> {
    pub tiles: &'a [u64],
    pub cells: Option<&'a [(u64, u64)]>,
}

impl<'a> TileSelection<'a> {
    /// Every cell of `tiles`.
    pub fn whole(tiles: &'a [u64]) -> Self {
        TileSelection { tiles, cells: None }
    }

    /// Limits each job to the bytes of its tile's wanted cells.
    fn limit(&self, jobs: &mut [TileJob<'_>], cell_size: u64) {
        if let Some(cells) = self.cells {
            for (job, (first, last)) in jobs.iter_mut().zip(cells) {
                job.wanted = Some((
                    first.saturating_mul(cell_size),
                    last.saturating_add(1).saturating_mul(cell_size),
                ));
            }
        }
    }
}

/// [`load_tiles`], decoding fixed-size cells into buffers from `pool`.
pub fn load_tiles_pooled(
    storage: &dyn Storage,
    fragment: &FragmentMetadata,
    field: Field,
    selection: TileSelection<'_>,
    cells_per_dense_tile: u64,
    key: Option<&[u8; 32]>,
    pool: &mut TilePool,
) -> Result<Vec<TileData>> {
    let tiles = selection.tiles;
    let shape = FieldShape::of(fragment, field)
        .ok_or_else(|| Error::Usage(format!("no field {field:?} in fragment {}", fragment.name)))?;
    let tables = fragment.field_tiles(storage, field)?;
    let cells: Vec<u64> = tiles
        .iter()
        .map(|t| fragment.cell_num(*t, cells_per_dense_tile))
        .collect();
    let load = FieldLoad {
        storage,
        fragment,
        field,
        tiles,
        cells: &cells,
        shape: &shape,
        tables: &tables,
        file_sizes: fragment.file_sizes(field),
        key,
        describe: storage.describe(&fragment.data_path(field, "")?),
    };
    let mut result = match shape.cell_val_num {
        Some(n) => load.fixed(selection, n, pool)?,
        None => load.var(pool)?,
    };
    if shape.nullable && fragment.version >= 7 {
        load.add_validity(selection, &mut result, pool)?;
    }
    Ok(result)
}
