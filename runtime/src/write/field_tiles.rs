//! The field files of a fragment. Field by field, the tiles are built in
//! bounded groups (about [`DEFAULT_GROUP_BYTES`] of unfiltered cells, or
//! the input's `tile_group_bytes`): every tile of a group gathered from
//! the input, its metadata computed and its pipeline run, in parallel
//! (rayon); then the group's filtered tiles appended in order to the
//! field's files, which stream to storage, and the group freed before the
//! next. The tile offsets and metadata are kept for the fragment metadata.

use rayon::prelude::*;

use crate::error::Result;
use crate::filter::Datatype;
use crate::schema::ArraySchema;
use crate::storage::{create_file, FileWriter, RelPath, Storage};

use super::fragment_input::{usage, Column, FragmentInput, InputColumns};
use super::tile_build::{build_tile, recipe, BufferPool, BuiltTile, TileBytes, TileRecipe};
use super::tile_meta::{self, MetaKinds, TileMeta};
use super::tiling::TilePlan;
use crate::format::generated::{DATA_FILE_SUFFIX, VALIDITY_FILE_SUFFIX, VAR_FILE_SUFFIX};

/// The unfiltered bytes of the tiles built at once, unless the input says
/// otherwise: enough tiles to keep every thread busy, few enough that a
/// write holds little beyond its input.
pub const DEFAULT_GROUP_BYTES: u64 = 64 << 20;

/// One field written: its files' sizes and per-tile offsets and metadata.
pub(crate) struct FieldFiles {
    pub(crate) fixed_len: u64,
    pub(crate) var_len: u64,
    pub(crate) validity_len: u64,
    pub(crate) tile_offsets: Vec<u64>,
    pub(crate) var_offsets: Vec<u64>,
    pub(crate) var_sizes: Vec<u64>,
    pub(crate) validity_offsets: Vec<u64>,
    pub(crate) metas: Vec<TileMeta>,
    pub(crate) kinds: MetaKinds,
    pub(crate) datatype: Datatype,
    pub(crate) var_sized: bool,
    pub(crate) nullable: bool,
    /// The `__coords` slot of format 5+: no files, zeroed tile metadata.
    pub(crate) coords_slot: bool,
}

/// Where the field files go: into a fragment's folder, or nowhere (only
/// their sizes are wanted).
pub(crate) enum Output<'s> {
    Files {
        storage: &'s dyn Storage,
        dir: RelPath,
    },
    Sizes,
}

/// A file that keeps only its length.
struct Discard(u64);

impl FileWriter for Discard {
    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        self.0 += bytes.len() as u64;
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0
    }
    fn finish(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

impl<'s> Output<'s> {
    fn open(&self, name: String) -> Result<Box<dyn FileWriter + 's>> {
        match self {
            Output::Files { storage, dir } => create_file(*storage, &dir.join(&name)?),
            Output::Sizes => Ok(Box::new(Discard(0))),
        }
    }
}

/// The `__coords` slot: TileDB keeps it (typed as the first dimension, one
/// value per cell, `dim_num` coordinates wide) with zero-filled tile minima,
/// maxima and sums though it writes no file for it.
fn coords_slot(schema: &ArraySchema, tile_num: usize) -> Option<FieldFiles> {
    let dim0 = schema.dimensions.first()?;
    let datatype = dim0.datatype;
    let cell_size = schema.dimensions.len() * datatype.size() as usize;
    let kinds = tile_meta::kinds(datatype, false, false, 1);
    let zeros = vec![0u64; tile_num];
    let meta = TileMeta {
        min: Some(vec![0; cell_size]),
        max: Some(vec![0; cell_size]),
        sum: [0; 8],
        null_count: 0,
    };
    Some(FieldFiles {
        fixed_len: 0,
        var_len: 0,
        validity_len: 0,
        tile_offsets: zeros.clone(),
        var_offsets: zeros.clone(),
        var_sizes: zeros.clone(),
        validity_offsets: zeros,
        metas: vec![meta; tile_num],
        kinds,
        datatype,
        var_sized: false,
        nullable: false,
        coords_slot: true,
    })
}

/// How many tiles of `column` make a group of about `budget` bytes.
fn group_tiles(column: &Column, plan: &TilePlan, n: usize, budget: u64) -> usize {
    let cells = plan.cell_num(0).max(1);
    let bytes_per_cell = (column.data.len() as u64 / n.max(1) as u64).max(1)
        + column.offsets.as_ref().map_or(0, |_| 8)
        + column.validity.as_ref().map_or(0, |_| 1);
    (budget / (cells * bytes_per_cell)).max(1) as usize
}

/// A field's open files and what is known of them so far.
struct FieldWriter<'s> {
    fixed: Box<dyn FileWriter + 's>,
    var: Option<Box<dyn FileWriter + 's>>,
    validity: Option<Box<dyn FileWriter + 's>>,
    out: FieldFiles,
}

impl FieldWriter<'_> {
    /// Appends a group's filtered tiles in order, giving their buffers
    /// back to `pool`.
    fn append(&mut self, built: Vec<BuiltTile<'_>>, pool: &BufferPool) -> Result<()> {
        let out = &mut self.out;
        for tile in built {
            out.tile_offsets.push(self.fixed.len());
            match tile.unframed {
                // The frame's bytes and the cells, in one vectored write.
                Some((frame, bytes)) => {
                    let parts = bytes.framed(&frame);
                    self.fixed.append_parts(&parts)?;
                    if let TileBytes::Gathered(buffer) = bytes {
                        pool.give(buffer);
                    }
                }
                None => self.fixed.append(&tile.fixed)?,
            }
            pool.give(tile.fixed);
            match self.var.as_mut() {
                Some(var) => {
                    out.var_offsets.push(var.len());
                    var.append(&tile.var)?;
                }
                None => out.var_offsets.push(0),
            }
            out.var_sizes.push(tile.var_size);
            match self.validity.as_mut() {
                Some(validity) => {
                    out.validity_offsets.push(validity.len());
                    validity.append(&tile.validity)?;
                }
                None => out.validity_offsets.push(0),
            }
            out.metas.push(tile.meta);
        }
        Ok(())
    }

    /// Finishes the files (each made visible whole) and gives the field.
    fn finish(self) -> Result<FieldFiles> {
        let mut out = self.out;
        out.fixed_len = self.fixed.len();
        self.fixed.finish()?;
        if let Some(var) = self.var {
            out.var_len = var.len();
            var.finish()?;
        }
        if let Some(validity) = self.validity {
            out.validity_len = validity.len();
            validity.finish()?;
        }
        Ok(out)
    }
}

/// Writes one field's files: its tiles built group by group, in parallel.
/// With more than one group, a thread of its own appends each group to
/// the files while the next is built (the files' writes, mostly the
/// kernel's copy into its page cache, overlap the gathering and
/// filtering), so at most two groups are held at once.
fn write_field(
    recipe: &TileRecipe,
    column: &Column,
    plan: &TilePlan,
    output: &Output<'_>,
    budget: u64,
) -> Result<FieldFiles> {
    let tile_num = plan.len();
    let var_sized = recipe.cell_size.is_none();
    let mut writer = FieldWriter {
        fixed: output.open(format!("{}{DATA_FILE_SUFFIX}", recipe.stem))?,
        var: var_sized
            .then(|| output.open(format!("{}{VAR_FILE_SUFFIX}", recipe.stem)))
            .transpose()?,
        validity: recipe
            .nullable
            .then(|| output.open(format!("{}{VALIDITY_FILE_SUFFIX}", recipe.stem)))
            .transpose()?,
        out: FieldFiles {
            fixed_len: 0,
            var_len: 0,
            validity_len: 0,
            tile_offsets: Vec::with_capacity(tile_num),
            var_offsets: Vec::with_capacity(tile_num),
            var_sizes: Vec::with_capacity(tile_num),
            validity_offsets: Vec::with_capacity(tile_num),
            metas: Vec::with_capacity(tile_num),
            kinds: recipe.kinds,
            datatype: recipe.datatype,
            var_sized,
            nullable: recipe.nullable,
            coords_slot: false,
        },
    };
    let group = group_tiles(column, plan, column.len(), budget);
    let pool = BufferPool::default();
    let build = |start: usize| -> Result<Vec<BuiltTile<'_>>> {
        let end = (start + group).min(tile_num);
        (start..end)
            .into_par_iter()
            .map(|t| build_tile(recipe, column, &plan.cells(t), &pool))
            .collect()
    };
    if tile_num <= group {
        writer.append(build(0)?, &pool)?;
        return writer.finish();
    }
    std::thread::scope(|scope| {
        // A rendezvous: a group is handed over only once the previous one
        // is written.
        let (send, receive) = std::sync::mpsc::sync_channel::<Vec<BuiltTile<'_>>>(0);
        let pool = &pool;
        let appending = scope.spawn(move || -> Result<FieldWriter<'_>> {
            for built in receive {
                writer.append(built, pool)?;
            }
            Ok(writer)
        });
        let mut built = Ok(());
        for start in (0..tile_num).step_by(group) {
            match build(start) {
                // A closed channel: the writer failed; its error is kept.
                Ok(tiles) => {
                    if send.send(tiles).is_err() {
                        break;
                    }
                }
                Err(e) => {
                    built = Err(e);
                    break;
                }
            }
        }
        drop(send);
        let writer = appending
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        built?;
        writer.finish()
    })
}

/// The fields of a fragment, in footer order (attributes, the `__coords`
/// slot, dimensions, then `t`, `dt`, `dci`; `None` where a field has no
/// data), and which special fields it has.
pub(crate) struct FragmentFields {
    pub(crate) fields: Vec<Option<FieldFiles>>,
    pub(crate) has_timestamps: bool,
    pub(crate) has_delete_meta: bool,
}

/// The timestamps and delete metadata of a consolidated sparse fragment
/// checked before any file is written: sparse only, one value per cell,
/// condition indexes within `processed`.
fn check_special_fields(input: &FragmentInput, n: usize, processed: &[String]) -> Result<()> {
    let dense = input.subarray.is_some();
    let per_cell = |stem: &str, values: &[u64]| {
        if values.len() != n {
            return Err(usage(format!("one {stem} value per cell is needed")));
        }
        Ok(())
    };
    if let Some(t) = &input.timestamps {
        if dense {
            return Err(usage("dense fragments carry no timestamps"));
        }
        per_cell("t", t)?;
    }
    if let Some(meta) = &input.delete_meta {
        if dense {
            return Err(usage("dense fragments carry no delete metadata"));
        }
        if let Some(&index) = meta
            .condition_indexes
            .iter()
            .find(|&&i| i != u64::MAX && i >= processed.len() as u64)
        {
            return Err(usage(format!(
                "delete condition index {index} beyond the {} processed conditions",
                processed.len()
            )));
        }
        per_cell("dt", &meta.timestamps)?;
        per_cell("dci", &meta.condition_indexes)?;
    }
    Ok(())
}

/// Writes every field's files to `output`.
pub(crate) fn field_tiles(
    schema: &ArraySchema,
    input: &FragmentInput,
    columns: &InputColumns<'_>,
    plan: &TilePlan,
    n: usize,
    processed: &[String],
    output: &Output<'_>,
) -> Result<FragmentFields> {
    let dense = input.subarray.is_some();
    check_special_fields(input, n, processed)?;
    let budget = input.tile_group_bytes.unwrap_or(DEFAULT_GROUP_BYTES).max(1);
    let aux = [&schema.offsets_filters, &schema.validity_filters];
    let mut fields: Vec<Option<FieldFiles>> = Vec::new();
    for (i, (a, col)) in schema.attributes.iter().zip(&columns.attrs).enumerate() {
        let spec = recipe(
            a.datatype,
            a.cell_val_num,
            a.nullable,
            false,
            [&a.filters, aux[0], aux[1]],
            // TileDB pads dense tiles with zero bytes (a var cell is one zero
            // value; validity null), not with the fill value.
            match a.cell_size() {
                Some(size) => vec![0; size as usize],
                None => vec![0; a.datatype.size() as usize],
            },
            false,
            format!("a{i}"),
            input.key,
        );
        fields.push(Some(write_field(&spec, col, plan, output, budget)?));
    }
    fields.push(coords_slot(schema, plan.len()));
    for (j, dim) in schema.dimensions.iter().enumerate() {
        if dense {
            fields.push(None);
            continue;
        }
        let spec = recipe(
            dim.datatype,
            if dim.var { None } else { Some(1) },
            false,
            true,
            [&dim.filters, aux[0], aux[1]],
            Vec::new(),
            true,
            format!("d{j}"),
            input.key,
        );
        fields.push(Some(write_field(
            &spec,
            columns.dims[j],
            plan,
            output,
            budget,
        )?));
    }
    // The special fields of a consolidated sparse fragment, after the
    // dimensions: `t`, then `dt` and `dci`, all u64 cells filtered with the
    // coordinates pipeline.
    let u64_field = |stem: &str, values: &[u64]| -> Result<FieldFiles> {
        let column = Column::from_values(stem, values);
        let spec = recipe(
            Datatype::Uint64,
            Some(1),
            false,
            false,
            [&schema.coords_filters, aux[0], aux[1]],
            Vec::new(),
            true,
            stem.into(),
            input.key,
        );
        write_field(&spec, &column, plan, output, budget)
    };
    let has_timestamps = match &input.timestamps {
        Some(t) => {
            fields.push(Some(u64_field("t", t)?));
            true
        }
        None => false,
    };
    let has_delete_meta = match &input.delete_meta {
        Some(meta) => {
            fields.push(Some(u64_field("dt", &meta.timestamps)?));
            fields.push(Some(u64_field("dci", &meta.condition_indexes)?));
            true
        }
        None => false,
    };
    Ok(FragmentFields {
        fields,
        has_timestamps,
        has_delete_meta,
    })
}
