//! Decoding a tile's cells straight into the places a result wants them,
//! chunk by chunk, without assembling the tile ([`TileSource`]).

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::filter::{Datatype, FilterContext, FilterPipeline};
use crate::fragment::{Field, FieldTileTables, FragmentMetadata};
use crate::storage::{RelPath, Storage};
use crate::tile::{
    unfilter_tile, unfilter_tile_scattered, unfilter_var_string_tile_in_place, ScatterRun, TileJob,
};

use crate::read::tiles::data::*;
use crate::read::tiles::stored::*;

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
    /// The strings of a var-sized ASCII/UTF8 field whose pipeline encodes
    /// them whole (RLE, dictionary): its `_var` file, whose tiles decode to
    /// their cells' offsets too (see [`TileSource::decode_strings`]).
    Strings,
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
    tables: Arc<FieldTileTables>,
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
    /// or encoded as whole strings (for [`TilePart::VarData`]), not encoded
    /// as whole strings (for [`TilePart::Strings`]), not nullable, or the
    /// fragment predates validity files (for [`TilePart::Validity`]).
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
            TilePart::VarData | TilePart::Strings => {
                let whole = shape.filters.skips_offsets(shape.datatype, version);
                if shape.cell_val_num.is_some() || whole != (part == TilePart::Strings) {
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
                if !shape.nullable || !crate::format::generated::validity_stored(version) {
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
            return Err(no_such_tile(self.fragment, tile).in_file(&self.describe));
        }
        Ok(())
    }

    /// The cells of tile `tile`.
    pub fn tile_cells(&self, tile: u64) -> u64 {
        self.fragment.cell_num(tile, self.cells_per_dense_tile)
    }

    /// The unfiltered size of var data tile `tile`, from the fragment
    /// metadata.
    pub fn var_size(&self, tile: u64) -> Result<u64> {
        self.tables
            .var_sizes
            .get(tile as usize)
            .copied()
            .ok_or_else(|| no_var_size(tile, self.tables.var_sizes.len()).in_file(&self.describe))
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
            .map(|raw| (raw, start))
        });
        buffers.give_back(bytes);
        let (raw, start) = decoded?;
        let data_size = self.var_size(tile)?;
        let mut starts: Vec<u64> = raw
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            .collect();
        starts.push(data_size);
        if let Some(cause) = var_offsets_fault(&starts) {
            return Err(Error::corrupt(start, "offsets", cause)
                .within(format!("tile {tile}"))
                .in_file(&describe));
        }
        Ok(starts)
    }

    /// Reads string tile `tile` (of a [`TilePart::Strings`] source) and
    /// decodes it straight into `data` (exactly its bytes) and the end of
    /// each of its cells, plus `base`, into `ends` (one per cell): a read's
    /// own data and offsets. Safe to call for many tiles at once.
    pub fn decode_strings(
        &self,
        storage: &dyn Storage,
        tile: u64,
        (data, ends, base): (&mut [u8], &mut [u64], u64),
        buffers: &StoredBuffers,
    ) -> Result<()> {
        if self.part != TilePart::Strings {
            return Err(Error::Usage(
                "decode_strings reads sources of strings encoded whole".into(),
            ));
        }
        self.check_tile(tile)?;
        if data.len() as u64 != self.var_size(tile)? || ends.len() as u64 != self.tile_cells(tile) {
            return Err(Error::Usage(format!(
                "the place given to tile {tile} is not its size ({} bytes, {} cells)",
                data.len(),
                ends.len()
            )));
        }
        let file = StoredFile {
            suffix: self.suffix,
            offsets: &self.tables.var_offsets,
            size: self.file_size,
        };
        let mut bytes = buffers.take();
        let decoded = with_stored_tile(
            storage,
            self.fragment,
            self.field,
            &file,
            (&self.path, &self.describe),
            tile,
            &mut bytes,
            &mut |start, stored| {
                unfilter_var_string_tile_in_place(
                    stored,
                    &self.pipeline,
                    &self.ctx,
                    data,
                    ends,
                    base,
                )
                .map_err(|e| {
                    e.within(format!("tile {tile}"))
                        .at_base(start)
                        .in_file(&self.describe)
                })
            },
        );
        buffers.give_back(bytes);
        decoded
    }

    /// Reads tile `tile` and decodes the bytes of `runs` into them (see
    /// [`unfilter_tile_scattered`]); only the chunks holding those bytes are
    /// decoded, and of a tile stored plainly, when they are a small part of
    /// it, only those chunks are read. Safe to call for many tiles at once.
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
                TilePart::Strings => {
                    return Err(Error::Usage(
                        "strings encoded whole are decoded by decode_strings".into(),
                    ))
                }
            },
            size: self.file_size,
        };
        let expected_len = match self.part {
            TilePart::VarData | TilePart::Strings => self.var_size(tile)?,
            _ => self
                .fragment
                .cell_num(tile, self.cells_per_dense_tile)
                .saturating_mul(self.cell_size),
        };
        let mut bytes = buffers.take();
        let decoded = self.decode_runs(storage, &file, tile, expected_len, runs, &mut bytes);
        buffers.give_back(bytes);
        decoded
    }

    /// Decodes `runs` of tile `tile` from only the chunks holding them when
    /// the tile is stored plainly and they are a small part of it (read
    /// into `bytes`, the runs moved to the part's own bytes, see
    /// [`read_plain_part`]), else from the whole stored tile (the storage's
    /// own bytes where it holds them, else read into `bytes`).
    fn decode_runs(
        &self,
        storage: &dyn Storage,
        file: &StoredFile<'_>,
        tile: u64,
        expected_len: u64,
        mut runs: Vec<ScatterRun<'_>>,
        bytes: &mut Vec<u8>,
    ) -> Result<()> {
        let decode = |bytes: &[u8], file_offset: u64, expected_len: u64, runs| {
            let job = TileJob {
                bytes,
                file_offset,
                index: tile,
                expected_len,
                wanted: None,
            };
            unfilter_tile_scattered(&job, &self.pipeline, &self.ctx, runs)
                .map_err(|e| e.in_file(&self.describe))
        };
        if let Some((at, len)) =
            self.read_part_for_runs(storage, file, tile, expected_len, &mut runs, bytes)?
        {
            return decode(bytes, at, len, runs);
        }
        let mut runs = Some(runs);
        with_stored_tile(
            storage,
            self.fragment,
            self.field,
            file,
            (&self.path, &self.describe),
            tile,
            bytes,
            &mut |start, stored| {
                decode(stored, start, expected_len, runs.take().unwrap_or_default())
            },
        )
    }

    /// Reads into `bytes` only the chunks holding `runs` of tile `tile`
    /// when the tile is stored plainly and they are a small part of it (the
    /// runs then moved to the part's own bytes, see [`read_plain_part`]).
    /// Returns where the bytes start in the file and the unfiltered size
    /// they frame; `None` when the tile is to be read whole.
    fn read_part_for_runs(
        &self,
        storage: &dyn Storage,
        file: &StoredFile<'_>,
        tile: u64,
        expected_len: u64,
        runs: &mut [ScatterRun<'_>],
        bytes: &mut Vec<u8>,
    ) -> Result<Option<(u64, u64)>> {
        let plain = self.part != TilePart::VarData && self.pipeline.filters.is_empty();
        let first = runs.iter().map(|r| r.tile_offset).min();
        // A run that is not whole cells apart reads the whole tile, which
        // refuses it.
        let end = runs
            .iter()
            .map(|r| r.tile_end().unwrap_or(u64::MAX))
            .max()
            .filter(|end| *end != u64::MAX);
        if let (true, Some(first), Some(end)) = (plain, first, end) {
            let place = (&self.path, self.describe.as_path());
            let sizes = (expected_len, self.cell_size);
            let part = read_plain_part(
                storage,
                self.fragment,
                file,
                place,
                tile,
                sizes,
                first..end,
                bytes,
            )?;
            if let Some((at, cells)) = part {
                for run in runs.iter_mut() {
                    run.tile_offset -= cells.start;
                }
                return Ok(Some((at, cells.end - cells.start)));
            }
        }
        Ok(None)
    }
}
