//! Loading one field's tiles ([`load_tiles`], [`load_tiles_pooled`]): read
//! and unfiltered, each way the field can be stored — fixed-size cells,
//! var-sized cells with their offsets tile, whole strings (RLE or dictionary
//! encoded, no offsets tile) — and the validity tiles of a nullable field.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::filter::{Datatype, FilterContext};
use crate::fragment::{Field, FieldTileTables, FragmentMetadata};
use crate::storage::Storage;
use crate::tile::{unfilter_var_string_tile_into, TileJob};

use crate::read::tiles::data::{FieldShape, TileData};
use crate::read::tiles::pool::{unfilter_pooled, TilePool};
use crate::read::tiles::stored::*;

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
    /// The tiles to load, by index in the fragment.
    pub tiles: &'a [u64],
    /// Per tile, the cells the caller will read; `None` for every cell.
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
    if shape.nullable && crate::format::generated::validity_stored(fragment.version) {
        load.add_validity(selection, &mut result, pool)?;
    }
    Ok(result)
}

/// What every step of loading one field's tiles needs: where the tiles are
/// stored, which of them, how the field is stored, and the key.
struct FieldLoad<'a> {
    storage: &'a dyn Storage,
    fragment: &'a FragmentMetadata,
    field: Field,
    /// The tiles to load, and the cell count of each.
    tiles: &'a [u64],
    cells: &'a [u64],
    shape: &'a FieldShape,
    /// Where each tile starts in each of the field's files.
    tables: &'a FieldTileTables,
    /// The sizes of the field's files: fixed (or offsets), var, validity.
    file_sizes: (u64, u64, u64),
    key: Option<&'a [u8; 32]>,
    /// The field's fixed (or offsets) file, for error locations.
    describe: PathBuf,
}

impl FieldLoad<'_> {
    /// Hands `with` the stored bytes of the tiles in the field's file with
    /// `suffix` (tiles starting at `offsets`), with where each starts.
    fn with_persisted<R>(
        &self,
        suffix: &str,
        offsets: &[u64],
        size: u64,
        buffers: &mut Vec<Vec<u8>>,
        with: impl FnOnce(&[(&[u8], u64)]) -> Result<R>,
    ) -> Result<R> {
        let file = StoredFile {
            suffix,
            offsets,
            size,
        };
        with_persisted(
            self.storage,
            self.fragment,
            self.field,
            file,
            self.tiles,
            buffers,
            with,
        )
    }

    fn context(&self, datatype: Datatype, cell_size: u64) -> FilterContext {
        context(datatype, cell_size, self.fragment.version, self.key)
    }

    /// The tiles of a fixed-size field (`cell_val_num` values a cell); of
    /// each, only the chunks holding the selected cells are decoded.
    fn fixed(
        &self,
        selection: TileSelection<'_>,
        cell_val_num: u32,
        pool: &mut TilePool,
    ) -> Result<Vec<TileData>> {
        let shape = self.shape;
        let cell_size = shape.datatype.size() * cell_val_num as u64;
        let pipeline = with_key(&shape.filters, self.key);
        let decoded = self.with_persisted(
            "",
            &self.tables.offsets,
            self.file_sizes.0,
            &mut pool.persisted,
            |raw| {
                let mut jobs = tile_jobs(raw, self.tiles, self.cells, cell_size);
                selection.limit(&mut jobs, cell_size);
                unfilter_pooled(
                    &jobs,
                    &pipeline,
                    &self.context(shape.datatype, cell_size),
                    &mut pool.decoded,
                )
                .map_err(|e| e.in_file(&self.describe))
            },
        )?;
        let mut result = Vec::with_capacity(self.tiles.len());
        for (data, c) in decoded.into_iter().zip(self.cells) {
            result.push(TileData {
                data,
                offsets: None,
                validity: None,
                cell_size,
                cells: *c,
            });
        }
        Ok(result)
    }

    /// The tiles of a var-sized field: its var file, and its offsets file
    /// unless the filter encodes the strings whole.
    fn var(&self, pool: &mut TilePool) -> Result<Vec<TileData>> {
        let var_describe = self
            .storage
            .describe(&self.fragment.data_path(self.field, "_var")?);
        let whole = self
            .shape
            .filters
            .skips_offsets(self.shape.datatype, self.fragment.version);
        // The var file's buffers are lent apart: the offsets file (read
        // while the var file's bytes are held) borrows the pool's.
        let mut var_buffers = std::mem::take(&mut pool.persisted);
        let result = self.with_persisted(
            "_var",
            &self.tables.var_offsets,
            self.file_sizes.1,
            &mut var_buffers,
            |raw_var| {
                if whole {
                    self.whole_strings(raw_var, &var_describe, pool)
                } else {
                    self.var_with_offsets(raw_var, &var_describe, pool)
                }
            },
        );
        pool.persisted.append(&mut var_buffers);
        result
    }

    /// Strings whose filter (RLE, dictionary) encodes the cells whole: each
    /// tile decodes on its own, in parallel, cell starts included.
    fn whole_strings(
        &self,
        raw_var: &[(&[u8], u64)],
        var_describe: &Path,
        pool: &mut TilePool,
    ) -> Result<Vec<TileData>> {
        let type_size = self.shape.datatype.size();
        let pipeline = with_key(&self.shape.filters, self.key);
        let ctx = self.context(self.shape.datatype, type_size);
        let spare: Vec<(Vec<u8>, Vec<u64>)> = (0..self.tiles.len())
            .map(|_| {
                (
                    pool.decoded.pop().unwrap_or_default(),
                    pool.starts.pop().unwrap_or_default(),
                )
            })
            .collect();
        let var_sizes = &self.tables.var_sizes;
        let decoded: Vec<Result<TileData>> = raw_var
            .par_iter()
            .zip(self.tiles.par_iter().zip(self.cells))
            .zip(spare)
            .map(|(((bytes, at), (t, c)), (mut data, mut starts))| {
                let size = *var_sizes
                    .get(*t as usize)
                    .ok_or_else(|| no_var_size(*t, var_sizes.len()))?;
                unfilter_var_string_tile_into(
                    bytes,
                    &pipeline,
                    &ctx,
                    (size, *c),
                    &mut data,
                    &mut starts,
                )
                .map_err(|e| {
                    e.within(format!("tile {t}"))
                        .at_base(*at)
                        .in_file(var_describe)
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
        let mut result = Vec::with_capacity(self.tiles.len());
        for tile in decoded {
            result.push(tile?);
        }
        Ok(result)
    }

    /// Var-sized cells with an offsets tile: the offsets tiles and the var
    /// tiles unfiltered (each batch in parallel), then each tile's cell
    /// starts checked and turned into positions in its data.
    fn var_with_offsets(
        &self,
        raw_var: &[(&[u8], u64)],
        var_describe: &Path,
        pool: &mut TilePool,
    ) -> Result<Vec<TileData>> {
        let type_size = self.shape.datatype.size();
        let offsets_pipeline = with_key(&self.fragment.schema.offsets_filters, self.key);
        let (offsets, offsets_at) = self.with_persisted(
            "",
            &self.tables.offsets,
            self.file_sizes.0,
            &mut pool.persisted,
            |raw| {
                let jobs = tile_jobs(raw, self.tiles, self.cells, 8);
                let offsets = unfilter_pooled(
                    &jobs,
                    &offsets_pipeline,
                    &self.context(Datatype::Uint64, 8),
                    &mut pool.decoded,
                )
                .map_err(|e| e.in_file(&self.describe))?;
                // Where each offsets tile starts in its file, to locate a
                // fault in it.
                let at: Vec<u64> = raw.iter().map(|&(_, at)| at).collect();
                Ok((offsets, at))
            },
        )?;
        let mut var_jobs = Vec::with_capacity(self.tiles.len());
        for (&(bytes, at), t) in raw_var.iter().zip(self.tiles) {
            let size = *self.tables.var_sizes.get(*t as usize).ok_or_else(|| {
                no_var_size(*t, self.tables.var_sizes.len()).in_file(&self.describe)
            })?;
            var_jobs.push(TileJob {
                bytes,
                file_offset: at,
                index: *t,
                expected_len: size,
                wanted: None,
            });
        }
        let data_pipeline = with_key(&self.shape.filters, self.key);
        let data_ctx = self.context(self.shape.datatype, type_size);
        let datas = unfilter_pooled(&var_jobs, &data_pipeline, &data_ctx, &mut pool.decoded)
            .map_err(|e| e.in_file(var_describe))?;
        drop(var_jobs);
        let spare_starts: Vec<Vec<u64>> = (0..offsets.len())
            .map(|_| pool.starts.pop().unwrap_or_default())
            .collect();
        let describe = &self.describe;
        let decoded: Vec<(Result<TileData>, Vec<u8>)> = offsets
            .into_par_iter()
            .zip(datas)
            .zip(spare_starts)
            .zip(self.cells.par_iter().zip(self.tiles).zip(&offsets_at))
            .map(|(((off, data), mut starts), ((c, t), at))| {
                starts.clear();
                starts.extend(
                    off.chunks_exact(8)
                        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]))),
                );
                starts.push(data.len() as u64);
                if let Some(cause) = var_offsets_fault(&starts) {
                    let err = Error::corrupt(*at, "offsets", cause)
                        .within(format!("tile {t}"))
                        .in_file(describe);
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
        let mut result = Vec::with_capacity(self.tiles.len());
        for (tile, off) in decoded {
            // The offsets tile's buffer goes back to the pool either way.
            pool.decoded.push(off);
            result.push(tile?);
        }
        Ok(result)
    }

    /// The validity tiles of a nullable field (format 7 on), one per tile
    /// of `result`; of each, only the chunks holding the selected cells.
    fn add_validity(
        &self,
        selection: TileSelection<'_>,
        result: &mut [TileData],
        pool: &mut TilePool,
    ) -> Result<()> {
        let validity_describe = self
            .storage
            .describe(&self.fragment.data_path(self.field, "_validity")?);
        let pipeline = with_key(&self.fragment.schema.validity_filters, self.key);
        let validity = self.with_persisted(
            "_validity",
            &self.tables.validity_offsets,
            self.file_sizes.2,
            &mut pool.persisted,
            |raw| {
                let mut jobs = tile_jobs(raw, self.tiles, self.cells, 1);
                selection.limit(&mut jobs, 1);
                unfilter_pooled(
                    &jobs,
                    &pipeline,
                    &self.context(Datatype::Uint8, 1),
                    &mut pool.decoded,
                )
                .map_err(|e| e.in_file(&validity_describe))
            },
        )?;
        for (tile, v) in result.iter_mut().zip(validity) {
            tile.validity = Some(v);
        }
        Ok(())
    }
}
