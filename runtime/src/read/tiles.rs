//! Loading the data tiles of one fragment field: read the persisted bytes,
//! unfilter them (many tiles at once, in parallel), and give access to the
//! cells ([`load_tiles`], [`load_tiles_pooled`]); or decode a tile's cells
//! straight into the places a result wants them, chunk by chunk, without
//! assembling the tile ([`TileSource`]).

use rayon::prelude::*;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::filter::{Datatype, Filter, FilterContext, FilterPipeline};
use crate::fragment::{Field, FieldTiles, FragmentMetadata};
use crate::storage::{RelPath, Storage};
use crate::tile::{
    parse_chunks, unfilter_tile, unfilter_tile_scattered, unfilter_tiles, unfilter_tiles_into,
    unfilter_var_string_tile_into, ScatterRun, TileJob,
};

/// How a field is stored in a fragment.
#[derive(Debug, Clone)]
pub struct FieldShape {
    pub datatype: Datatype,
    /// Values per cell; `None` for var-sized.
    pub cell_val_num: Option<u32>,
    pub nullable: bool,
    pub filters: FilterPipeline,
}

impl FieldShape {
    /// The shape of `field` in `fragment`'s own schema.
    pub fn of(fragment: &FragmentMetadata, field: Field) -> Option<FieldShape> {
        let schema = &fragment.schema;
        Some(match field {
            Field::Attribute(i) => {
                let a = schema.attributes.get(i)?;
                FieldShape {
                    datatype: a.datatype,
                    cell_val_num: a.cell_val_num,
                    nullable: a.nullable,
                    filters: a.filters.clone(),
                }
            }
            Field::Dimension(j) => {
                let d = schema.dimensions.get(j)?;
                FieldShape {
                    datatype: d.datatype,
                    cell_val_num: if d.var { None } else { Some(1) },
                    nullable: false,
                    filters: d.filters.clone(),
                }
            }
            Field::Coords => {
                let d = schema.dimensions.first()?;
                FieldShape {
                    datatype: d.datatype,
                    cell_val_num: Some(schema.dimensions.len() as u32),
                    nullable: false,
                    filters: schema.coords_filters.clone(),
                }
            }
            Field::Timestamps | Field::DeleteTimestamps | Field::DeleteConditionIndex => {
                FieldShape {
                    datatype: Datatype::Uint64,
                    cell_val_num: Some(1),
                    nullable: false,
                    filters: schema.coords_filters.clone(),
                }
            }
        })
    }
}

/// One decoded tile of one field.
#[derive(Debug, Clone, Default)]
pub struct TileData {
    /// Fixed cells, or the var data for var-sized fields.
    pub data: Vec<u8>,
    /// Var fields: the start of each cell in `data`, plus the end.
    pub offsets: Option<Vec<u64>>,
    pub validity: Option<Vec<u8>>,
    pub cell_size: u64,
    pub cells: u64,
}

impl TileData {
    /// The bytes of cell `i`.
    pub fn cell(&self, i: u64) -> &[u8] {
        match &self.offsets {
            Some(offsets) => {
                let start = offsets.get(i as usize).copied().unwrap_or(0) as usize;
                let end = offsets.get(i as usize + 1).copied().unwrap_or(0) as usize;
                self.data.get(start..end).unwrap_or_default()
            }
            None => {
                let start = (i * self.cell_size) as usize;
                self.data
                    .get(start..start + self.cell_size as usize)
                    .unwrap_or_default()
            }
        }
    }

    pub fn valid(&self, i: u64) -> bool {
        self.validity
            .as_ref()
            .is_none_or(|v| v.get(i as usize).copied().unwrap_or(0) != 0)
    }
}

fn with_key(pipeline: &FilterPipeline, key: Option<&[u8; 32]>) -> FilterPipeline {
    let mut p = pipeline.clone();
    if key.is_some() && !p.has(crate::filter::FilterType::Aes256Gcm) {
        p.filters.push(Filter::Aes256Gcm);
    }
    p
}

fn context(
    datatype: Datatype,
    cell_size: u64,
    version: u32,
    key: Option<&[u8; 32]>,
) -> FilterContext {
    let ctx = FilterContext::new(datatype, cell_size.max(1), version);
    match key {
        Some(k) => ctx.with_key(*k),
        None => ctx,
    }
}

/// Reads the persisted bytes of tiles `tiles` of a file whose tiles start at
/// `offsets` (the last one ends at `file_size`).
/// One decode job per tile: its persisted bytes and where they start in the
/// file, and the unfiltered size its cell count implies.
fn tile_jobs<'a>(
    raw: &'a [(Vec<u8>, u64)],
    tiles: &[u64],
    cells: &[u64],
    cell_size: u64,
) -> Vec<TileJob<'a>> {
    raw.iter()
        .zip(tiles)
        .zip(cells)
        .map(|(((bytes, at), t), c)| TileJob {
            bytes,
            file_offset: *at,
            index: *t,
            expected_len: c * cell_size,
            wanted: None,
        })
        .collect()
}

/// One of a field's data files: its name suffix (`""`, `"_var"`,
/// `"_validity"`), where each tile starts, and its size.
struct StoredFile<'a> {
    suffix: &'a str,
    offsets: &'a [u64],
    size: u64,
}

/// Reads the stored bytes of tile `t` of one of a field's files into
/// `bytes` (TileDB 1.3's own chunk framing turned into the chunked one).
/// Returns where they start in the file.
fn read_stored_tile(
    storage: &dyn Storage,
    fragment: &FragmentMetadata,
    field: Field,
    file: &StoredFile<'_>,
    (path, describe): (&RelPath, &Path),
    t: u64,
    bytes: &mut Vec<u8>,
) -> Result<u64> {
    let start = *file.offsets.get(t as usize).ok_or_else(|| {
        Error::corrupt(0, "tile offsets", format!("no offset for tile {t}")).in_file(describe)
    })?;
    let end = file
        .offsets
        .get(t as usize + 1)
        .copied()
        .unwrap_or(file.size);
    if end < start {
        return Err(
            Error::corrupt(start, "tile offsets", "tile offsets decrease").in_file(describe),
        );
    }
    storage.read_range_into(path, start, end - start, bytes)?;
    if fragment.version == 0 {
        // TileDB 1.3: raw, or its own chunk framing when compressed.
        let shape = FieldShape::of(fragment, field);
        let compressed = match file.suffix {
            "" if shape.as_ref().is_some_and(|s| s.cell_val_num.is_none()) => {
                !fragment.schema.offsets_filters.filters.is_empty()
            }
            _ => shape.is_some_and(|s| !s.filters.filters.is_empty()),
        };
        *bytes = crate::schema::legacy13::reframe(bytes, compressed)
            .map_err(|e| e.at_base(start).in_file(describe))?;
    }
    Ok(start)
}

fn persisted(
    storage: &dyn Storage,
    fragment: &FragmentMetadata,
    field: Field,
    file: StoredFile<'_>,
    tiles: &[u64],
    buffers: &mut Vec<Vec<u8>>,
) -> Result<Vec<(Vec<u8>, u64)>> {
    let path = fragment.data_path(field, file.suffix)?;
    let describe = storage.describe(&path);
    let mut out = Vec::with_capacity(tiles.len());
    for &t in tiles {
        let mut bytes = buffers.pop().unwrap_or_default();
        let start = read_stored_tile(
            storage,
            fragment,
            field,
            &file,
            (&path, &describe),
            t,
            &mut bytes,
        )?;
        out.push((bytes, start));
    }
    Ok(out)
}

/// Which file of a field a scattered read decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TilePart {
    /// The cells of a fixed-size field (its main file).
    Cells,
    /// The validity bytes of a nullable field.
    Validity,
    /// The cells' bytes of a var-sized field (its `_var` file) whose
    /// offsets are stored (not a pipeline that encodes whole strings).
    VarData,
}

/// Buffers for stored tile bytes, shared by the threads of one read: a tile
/// job takes one and gives it back, so a read holds about one stored tile
/// per thread, and pages once faulted in are used again.
#[derive(Debug, Default)]
pub struct StoredBuffers(std::sync::Mutex<Vec<Vec<u8>>>);

impl StoredBuffers {
    fn take(&self) -> Vec<u8> {
        self.0
            .lock()
            .map(|mut b| b.pop().unwrap_or_default())
            .unwrap_or_default()
    }

    fn give_back(&self, buffer: Vec<u8>) {
        if let Ok(mut b) = self.0.lock() {
            b.push(buffer);
        }
    }
}

/// One file of one fragment field, ready to decode tiles of straight into
/// a result ([`TileSource::scatter`]): what every tile job of a read
/// shares, worked out once.
pub struct TileSource<'f> {
    fragment: &'f FragmentMetadata,
    field: Field,
    part: TilePart,
    /// The file's name suffix (`""`, `"_var"`, `"_validity"`).
    suffix: &'static str,
    path: RelPath,
    describe: PathBuf,
    tables: Arc<FieldTiles>,
    file_size: u64,
    pipeline: FilterPipeline,
    ctx: FilterContext,
    cell_size: u64,
    cells_per_dense_tile: u64,
    key: Option<[u8; 32]>,
}

impl<'f> TileSource<'f> {
    /// `None` when the fragment stores no such file, or not in the form
    /// asked: the field is var-sized (for [`TilePart::Cells`]), fixed-size
    /// or encoded as whole strings (for [`TilePart::VarData`]), not
    /// nullable, or the fragment predates validity files (for
    /// [`TilePart::Validity`]).
    pub fn new(
        storage: &dyn Storage,
        fragment: &'f FragmentMetadata,
        field: Field,
        part: TilePart,
        cells_per_dense_tile: u64,
        key: Option<&[u8; 32]>,
    ) -> Result<Option<Self>> {
        let shape = FieldShape::of(fragment, field).ok_or_else(|| {
            Error::Usage(format!("no field {field:?} in fragment {}", fragment.name))
        })?;
        let version = fragment.version;
        let (files, var_size, validity_size) = fragment.file_sizes(field);
        let (suffix, file_size, pipeline, ctx, cell_size) = match part {
            TilePart::Cells => {
                let Some(n) = shape.cell_val_num else {
                    return Ok(None);
                };
                let cell_size = shape.datatype.size() * n as u64;
                (
                    "",
                    files,
                    with_key(&shape.filters, key),
                    context(shape.datatype, cell_size, version, key),
                    cell_size,
                )
            }
            TilePart::VarData => {
                if shape.cell_val_num.is_some()
                    || shape.filters.skips_offsets(shape.datatype, version)
                {
                    return Ok(None);
                }
                let type_size = shape.datatype.size();
                (
                    "_var",
                    var_size,
                    with_key(&shape.filters, key),
                    context(shape.datatype, type_size, version, key),
                    type_size,
                )
            }
            TilePart::Validity => {
                if !shape.nullable || version < 7 {
                    return Ok(None);
                }
                (
                    "_validity",
                    validity_size,
                    with_key(&fragment.schema.validity_filters, key),
                    context(Datatype::Uint8, 1, version, key),
                    1,
                )
            }
        };
        let path = fragment.data_path(field, suffix)?;
        Ok(Some(TileSource {
            fragment,
            field,
            part,
            suffix,
            describe: storage.describe(&path),
            path,
            tables: fragment.field_tiles(storage, field)?,
            file_size,
            pipeline,
            ctx,
            cell_size,
            cells_per_dense_tile,
            key: key.copied(),
        }))
    }

    /// The bytes of one cell (one byte for validity; the type's size for
    /// var data).
    pub fn cell_size(&self) -> u64 {
        self.cell_size
    }

    /// An error unless the fragment has tile `tile`.
    fn check_tile(&self, tile: u64) -> Result<()> {
        if tile >= self.fragment.tile_num {
            return Err(Error::corrupt(
                0,
                "tile offsets",
                format!("fragment {} has no tile {tile}", self.fragment.name),
            )
            .in_file(&self.describe));
        }
        Ok(())
    }

    /// The unfiltered size of var data tile `tile`, from the fragment
    /// metadata.
    fn var_size(&self, tile: u64) -> Result<u64> {
        self.tables
            .var_sizes
            .get(tile as usize)
            .copied()
            .ok_or_else(|| {
                Error::corrupt(0, "tile var sizes", format!("no size for tile {tile}"))
                    .in_file(&self.describe)
            })
    }

    /// The start of every cell of var-sized tile `tile` in its data, and
    /// the data's size after them: the tile's offsets, decoded (from the
    /// field's main file) and checked to rise and end within the data.
    pub fn var_starts(
        &self,
        storage: &dyn Storage,
        tile: u64,
        buffers: &StoredBuffers,
    ) -> Result<Vec<u64>> {
        if self.part != TilePart::VarData {
            return Err(Error::Usage(
                "cell starts come from var data sources".into(),
            ));
        }
        self.check_tile(tile)?;
        let path = self.fragment.data_path(self.field, "")?;
        let describe = storage.describe(&path);
        let (file_size, _, _) = self.fragment.file_sizes(self.field);
        let file = StoredFile {
            suffix: "",
            offsets: &self.tables.offsets,
            size: file_size,
        };
        let cells = self.fragment.cell_num(tile, self.cells_per_dense_tile);
        let version = self.fragment.version;
        let mut bytes = buffers.take();
        let decoded = read_stored_tile(
            storage,
            self.fragment,
            self.field,
            &file,
            (&path, &describe),
            tile,
            &mut bytes,
        )
        .and_then(|start| {
            // The framing is checked before anything is allocated for it.
            unfilter_tile(
                &bytes,
                &with_key(&self.fragment.schema.offsets_filters, self.key.as_ref()),
                &context(Datatype::Uint64, 8, version, self.key.as_ref()),
                cells.saturating_mul(8),
            )
            .map_err(|e| {
                e.within(format!("tile {tile}"))
                    .at_base(start)
                    .in_file(&describe)
            })
        });
        buffers.give_back(bytes);
        let raw = decoded?;
        let data_size = self.var_size(tile)?;
        let mut starts: Vec<u64> = raw
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            .collect();
        starts.push(data_size);
        if starts.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::corrupt(
                0,
                format!("tile {tile}"),
                "var offsets out of order or past the data",
            )
            .in_file(&describe));
        }
        Ok(starts)
    }

    /// Reads tile `tile` and decodes the bytes of `runs` into them (see
    /// [`unfilter_tile_scattered`]); only the chunks holding those bytes are
    /// decoded. Safe to call for many tiles at once.
    pub fn scatter(
        &self,
        storage: &dyn Storage,
        tile: u64,
        runs: Vec<ScatterRun<'_>>,
        buffers: &StoredBuffers,
    ) -> Result<()> {
        self.check_tile(tile)?;
        let file = StoredFile {
            suffix: self.suffix,
            offsets: match self.part {
                TilePart::Cells => &self.tables.offsets,
                TilePart::Validity => &self.tables.validity_offsets,
                TilePart::VarData => &self.tables.var_offsets,
            },
            size: self.file_size,
        };
        let expected_len = match self.part {
            TilePart::VarData => self.var_size(tile)?,
            _ => self
                .fragment
                .cell_num(tile, self.cells_per_dense_tile)
                .saturating_mul(self.cell_size),
        };
        let mut bytes = buffers.take();
        let decoded = read_stored_tile(
            storage,
            self.fragment,
            self.field,
            &file,
            (&self.path, &self.describe),
            tile,
            &mut bytes,
        )
        .and_then(|start| {
            let job = TileJob {
                bytes: &bytes,
                file_offset: start,
                index: tile,
                expected_len,
                wanted: None,
            };
            unfilter_tile_scattered(&job, &self.pipeline, &self.ctx, runs)
                .map_err(|e| e.in_file(&self.describe))
        });
        buffers.give_back(bytes);
        decoded
    }
}

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
