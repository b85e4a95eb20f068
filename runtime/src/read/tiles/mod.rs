//! Loading the data tiles of one fragment field: read the persisted bytes,
//! unfilter them (many tiles at once, in parallel), and give access to the
//! cells ([`load_tiles`], [`load_tiles_pooled`]); or decode a tile's cells
//! straight into the places a result wants them, chunk by chunk, without
//! assembling the tile ([`TileSource`]).

mod data;
mod source;
mod stored;

pub use data::{FieldShape, TileData};
pub use source::{StoredBuffers, TilePart, TileSource};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::filter::{Datatype, FilterContext, FilterPipeline};
use crate::fragment::{Field, FragmentMetadata};
use crate::storage::Storage;
use crate::tile::{
    parse_chunks, unfilter_tiles, unfilter_tiles_into, unfilter_var_string_tile_into, TileJob,
};

use crate::read::tiles::stored::*;

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
    let (file_size, var_file_size, validity_file_size) = fragment.file_sizes(field);
    let version = fragment.version;
    let schema = &fragment.schema;
    let cells: Vec<u64> = tiles
        .iter()
        .map(|t| fragment.cell_num(*t, cells_per_dense_tile))
        .collect();
    let type_size = shape.datatype.size();
    let describe = storage.describe(&fragment.data_path(field, "")?);
    let locate = |e: Error| e.in_file(&describe);

    let mut result: Vec<TileData> = Vec::with_capacity(tiles.len());
    match shape.cell_val_num {
        Some(n) => {
            let cell_size = type_size * n as u64;
            let raw = persisted(
                storage,
                fragment,
                field,
                StoredFile {
                    suffix: "",
                    offsets: &tables.offsets,
                    size: file_size,
                },
                tiles,
                &mut pool.persisted,
            )?;
            let mut jobs = tile_jobs(&raw, tiles, &cells, cell_size);
            selection.limit(&mut jobs, cell_size);
            let pipeline = with_key(&shape.filters, key);
            let decoded = unfilter_pooled(
                &jobs,
                &pipeline,
                &context(shape.datatype, cell_size, version, key),
                &mut pool.decoded,
            )
            .map_err(locate)?;
            drop(jobs);
            pool.recycle_persisted(raw);
            for (data, c) in decoded.into_iter().zip(&cells) {
                result.push(TileData {
                    data,
                    offsets: None,
                    validity: None,
                    cell_size,
                    cells: *c,
                });
            }
        }
        None => {
            let var_path_describe = storage.describe(&fragment.data_path(field, "_var")?);
            let raw_var = persisted(
                storage,
                fragment,
                field,
                StoredFile {
                    suffix: "_var",
                    offsets: &tables.var_offsets,
                    size: var_file_size,
                },
                tiles,
                &mut pool.persisted,
            )?;
            let data_pipeline = with_key(&shape.filters, key);
            let data_ctx = context(shape.datatype, type_size, version, key);
            if shape.filters.skips_offsets(shape.datatype, version) {
                // Strings whose filter (RLE, dictionary) encodes the cells
                // whole: each tile decodes on its own, in parallel.
                let spare: Vec<(Vec<u8>, Vec<u64>)> = (0..tiles.len())
                    .map(|_| {
                        (
                            pool.decoded.pop().unwrap_or_default(),
                            pool.starts.pop().unwrap_or_default(),
                        )
                    })
                    .collect();
                let decoded: Vec<Result<TileData>> = raw_var
                    .par_iter()
                    .zip(tiles.par_iter().zip(&cells))
                    .zip(spare)
                    .map(|(((bytes, at), (t, c)), (mut data, mut starts))| {
                        let size = *tables.var_sizes.get(*t as usize).ok_or_else(|| {
                            Error::corrupt(0, "tile var sizes", format!("no size for tile {t}"))
                        })?;
                        unfilter_var_string_tile_into(
                            bytes,
                            &data_pipeline,
                            &data_ctx,
                            (size, *c),
                            &mut data,
                            &mut starts,
                        )
                        .map_err(|e| {
                            e.within(format!("tile {t}"))
                                .at_base(*at)
                                .in_file(&var_path_describe)
                        })?;
                        starts.push(data.len() as u64);
                        Ok(TileData {
                            data,
                            offsets: Some(starts),
                            validity: None,
                            cell_size: type_size,
                            cells: *c,
                        })
                    })
                    .collect();
                for tile in decoded {
                    result.push(tile?);
                }
            } else {
                let raw = persisted(
                    storage,
                    fragment,
                    field,
                    StoredFile {
                        suffix: "",
                        offsets: &tables.offsets,
                        size: file_size,
                    },
                    tiles,
                    &mut pool.persisted,
                )?;
                let jobs = tile_jobs(&raw, tiles, &cells, 8);
                let offsets_pipeline = with_key(&schema.offsets_filters, key);
                let offsets = unfilter_pooled(
                    &jobs,
                    &offsets_pipeline,
                    &context(Datatype::Uint64, 8, version, key),
                    &mut pool.decoded,
                )
                .map_err(locate)?;
                let mut var_jobs = Vec::with_capacity(tiles.len());
                for ((bytes, at), t) in raw_var.iter().zip(tiles) {
                    let size = *tables.var_sizes.get(*t as usize).ok_or_else(|| {
                        Error::corrupt(0, "tile var sizes", format!("no size for tile {t}"))
                            .in_file(&describe)
                    })?;
                    var_jobs.push(TileJob {
                        bytes,
                        file_offset: *at,
                        index: *t,
                        expected_len: size,
                        wanted: None,
                    });
                }
                let datas =
                    unfilter_pooled(&var_jobs, &data_pipeline, &data_ctx, &mut pool.decoded)
                        .map_err(|e| e.in_file(&var_path_describe))?;
                drop(var_jobs);
                drop(jobs);
                pool.recycle_persisted(raw);
                let spare_starts: Vec<Vec<u64>> = (0..offsets.len())
                    .map(|_| pool.starts.pop().unwrap_or_default())
                    .collect();
                let decoded: Vec<(Result<TileData>, Vec<u8>)> = offsets
                    .into_par_iter()
                    .zip(datas)
                    .zip(spare_starts)
                    .zip(&cells)
                    .map(|(((off, data), mut starts), c)| {
                        starts.clear();
                        starts.extend(
                            off.chunks_exact(8)
                                .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]))),
                        );
                        starts.push(data.len() as u64);
                        if starts.windows(2).any(|w| w[0] > w[1]) {
                            let err = Error::corrupt(
                                0,
                                "offsets",
                                "var offsets out of order or past the data",
                            )
                            .in_file(&describe);
                            return (Err(err), off);
                        }
                        let tile = TileData {
                            data,
                            offsets: Some(starts),
                            validity: None,
                            cell_size: type_size,
                            cells: *c,
                        };
                        (Ok(tile), off)
                    })
                    .collect();
                for (tile, off) in decoded {
                    pool.decoded.push(off);
                    result.push(tile?);
                }
            }
            pool.recycle_persisted(raw_var);
        }
    }
    if shape.nullable && version >= 7 {
        let validity_describe = storage.describe(&fragment.data_path(field, "_validity")?);
        let raw = persisted(
            storage,
            fragment,
            field,
            StoredFile {
                suffix: "_validity",
                offsets: &tables.validity_offsets,
                size: validity_file_size,
            },
            tiles,
            &mut pool.persisted,
        )?;
        let mut jobs = tile_jobs(&raw, tiles, &cells, 1);
        selection.limit(&mut jobs, 1);
        let pipeline = with_key(&schema.validity_filters, key);
        let validity = unfilter_pooled(
            &jobs,
            &pipeline,
            &context(Datatype::Uint8, 1, version, key),
            &mut pool.decoded,
        )
        .map_err(|e| e.in_file(&validity_describe))?;
        drop(jobs);
        pool.recycle_persisted(raw);
        for (tile, v) in result.iter_mut().zip(validity) {
            tile.validity = Some(v);
        }
    }
    Ok(result)
}
