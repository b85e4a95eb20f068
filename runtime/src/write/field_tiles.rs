//! The tile buffers of a fragment: the cells cut into tiles (dense: by
//! space tile; sparse: in global order, by capacity), then each field's
//! tiles filtered with its pipeline into the bytes of its files, with each
//! tile's metadata (min, max, sum, null count).

use std::cmp::Ordering;

use crate::error::{Error, Result};
use crate::filter::{Datatype, FilterContext, FilterPipeline};
use crate::read::order::GlobalOrder;
use crate::schema::{ArraySchema, Scalar};
use crate::tile::{filter_tile, filter_var_tile, SKIPPED_OFFSETS_TILE};

use super::fragment_input::{usage, Column, FragmentInput};
use super::tile_meta::{self, MetaKinds, TileMeta};
use super::WRITE_VERSION;

/// Where one tile's cells come from: an input cell, or a fill cell.
pub(crate) type TileCells = Vec<Option<usize>>;

fn int_of(s: &Scalar) -> Option<i128> {
    match s {
        Scalar::Int(i) => Some(*i),
        _ => None,
    }
}

/// Calls `f` with every index of the box `ranges`, the last dimension
/// varying fastest (or the first, when `col_major`).
fn for_each_index(ranges: &[(i128, i128)], col_major: bool, f: &mut dyn FnMut(&[i128])) {
    if ranges.iter().any(|(lo, hi)| lo > hi) {
        return;
    }
    let mut idx: Vec<i128> = ranges.iter().map(|r| r.0).collect();
    let order: Vec<usize> = if col_major {
        (0..ranges.len()).collect()
    } else {
        (0..ranges.len()).rev().collect()
    };
    loop {
        f(&idx);
        let mut carried = true;
        for &d in &order {
            if idx[d] < ranges[d].1 {
                idx[d] += 1;
                carried = false;
                break;
            }
            idx[d] = ranges[d].0;
        }
        if carried {
            return;
        }
    }
}

/// The tiles of a dense write: the subarray expanded to whole space tiles,
/// tiles in tile order, cells in cell order.
pub(crate) fn dense_tiles(
    schema: &ArraySchema,
    subarray: &[(i128, i128)],
    col_major_input: bool,
) -> Result<(Vec<TileCells>, u64)> {
    let mut geometry = Vec::new();
    for (d, dim) in schema.dimensions.iter().enumerate() {
        let (lo, hi) = dim
            .domain_scalars()
            .ok_or_else(|| usage(format!("dimension {} has no domain", dim.name)))?;
        let (lo, hi) = (int_of(&lo), int_of(&hi));
        let ext = dim.extent_scalar().as_ref().and_then(int_of);
        let (Some(lo), Some(hi), Some(ext)) = (lo, hi, ext) else {
            return Err(Error::Unsupported {
                file: Default::default(),
                what: format!(
                    "dense writes need integer dimensions with tile extents ({})",
                    dim.name
                ),
            });
        };
        let (s_lo, s_hi) = subarray[d];
        if ext <= 0 || s_lo < lo || s_hi > hi || s_lo > s_hi {
            return Err(usage(format!(
                "subarray [{s_lo}, {s_hi}] outside domain [{lo}, {hi}]"
            )));
        }
        geometry.push((lo, ext, (s_lo - lo) / ext, (s_hi - lo) / ext));
    }
    let lens: Vec<i128> = subarray.iter().map(|(a, b)| b - a + 1).collect();
    let mut strides = vec![1i128; lens.len()];
    if col_major_input {
        for d in 1..lens.len() {
            strides[d] = strides[d - 1] * lens[d - 1];
        }
    } else {
        for d in (0..lens.len().saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * lens[d + 1];
        }
    }
    let tile_ranges: Vec<(i128, i128)> = geometry.iter().map(|g| (g.2, g.3)).collect();
    let tile_col = schema.tile_order == crate::schema::SchemaOrder::ColMajor;
    let cell_col = schema.cell_order == crate::schema::SchemaOrder::ColMajor;
    let mut tiles = Vec::new();
    let cells_per_tile: i128 = geometry.iter().map(|g| g.1).product();
    for_each_index(&tile_ranges, tile_col, &mut |t| {
        let cell_ranges: Vec<(i128, i128)> = geometry
            .iter()
            .zip(t)
            .map(|(g, ti)| (g.0 + ti * g.1, g.0 + (ti + 1) * g.1 - 1))
            .collect();
        let mut cells = Vec::new();
        for_each_index(&cell_ranges, cell_col, &mut |c| {
            let inside = c
                .iter()
                .zip(subarray)
                .all(|(x, (lo, hi))| x >= lo && x <= hi);
            cells.push(inside.then(|| {
                c.iter()
                    .zip(subarray)
                    .zip(&strides)
                    .map(|((x, (lo, _)), s)| (x - lo) * s)
                    .sum::<i128>() as usize
            }));
        });
        tiles.push(cells);
    });
    Ok((tiles, cells_per_tile as u64))
}

/// The tiles of a sparse write: cells sorted in global order, `capacity`
/// per tile.
pub(crate) fn sparse_tiles(
    schema: &ArraySchema,
    dims: &[Column],
    n: usize,
    timestamps: Option<&[u64]>,
) -> Result<Vec<TileCells>> {
    let mut coords: Vec<Vec<Scalar>> = Vec::with_capacity(n);
    for i in 0..n {
        let mut c = Vec::with_capacity(dims.len());
        for (dim, col) in schema.dimensions.iter().zip(dims) {
            let bytes = col.cell_bytes(i);
            c.push(
                Scalar::decode(dim.datatype, bytes)
                    .ok_or_else(|| usage(format!("bad coordinate of {}", dim.name)))?,
            );
        }
        coords.push(c);
    }
    let order = GlobalOrder::new(schema);
    let keys: Vec<_> = coords.iter().map(|c| order.key(c)).collect();
    let mut perm: Vec<usize> = (0..n).collect();
    perm.sort_by(|&a, &b| {
        order
            .compare(&keys[a], &coords[a], &keys[b], &coords[b])
            .then_with(|| match timestamps {
                Some(t) => t[b].cmp(&t[a]),
                None => Ordering::Equal,
            })
    });
    let capacity = schema.capacity.max(1) as usize;
    Ok(perm
        .chunks(capacity)
        .map(|c| c.iter().map(|&i| Some(i)).collect())
        .collect())
}

/// One field being written: its files and per-tile metadata.
pub(crate) struct FieldFiles {
    pub(crate) fixed: Vec<u8>,
    pub(crate) var: Vec<u8>,
    pub(crate) validity: Vec<u8>,
    pub(crate) tile_offsets: Vec<u64>,
    pub(crate) var_offsets: Vec<u64>,
    pub(crate) var_sizes: Vec<u64>,
    pub(crate) validity_offsets: Vec<u64>,
    pub(crate) metas: Vec<TileMeta>,
    pub(crate) kinds: MetaKinds,
    pub(crate) datatype: Datatype,
    pub(crate) var_sized: bool,
    pub(crate) nullable: bool,
    pub(crate) stem: String,
    /// The `__coords` slot of format 5+: no files, zeroed tile metadata.
    pub(crate) coords_slot: bool,
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
        fixed: Vec::new(),
        var: Vec::new(),
        validity: Vec::new(),
        tile_offsets: zeros.clone(),
        var_offsets: zeros.clone(),
        var_sizes: zeros.clone(),
        validity_offsets: zeros,
        metas: vec![meta; tile_num],
        kinds,
        datatype,
        var_sized: false,
        nullable: false,
        stem: String::new(),
        coords_slot: true,
    })
}

struct FieldSpec<'a> {
    datatype: Datatype,
    cell_val_num: Option<u32>,
    nullable: bool,
    is_dim: bool,
    pipeline: &'a FilterPipeline,
    fill: Vec<u8>,
    fill_validity: bool,
    stem: String,
    key: Option<[u8; 32]>,
}

/// The pipeline as applied: TileDB appends AES-256-GCM to every pipeline of
/// an encrypted array.
fn applied(pipeline: &FilterPipeline, key: Option<[u8; 32]>) -> FilterPipeline {
    let mut p = pipeline.clone();
    if key.is_some() {
        p.filters.push(crate::filter::Filter::Aes256Gcm);
    }
    p
}

fn write_field(
    spec: &FieldSpec<'_>,
    column: &Column,
    tiles: &[TileCells],
    schema: &ArraySchema,
) -> Result<FieldFiles> {
    let var_sized = spec.cell_val_num.is_none();
    let type_size = spec.datatype.size();
    let cell_size = spec
        .cell_val_num
        .map(|n| type_size * n as u64)
        .unwrap_or(type_size);
    let kinds = tile_meta::kinds(
        spec.datatype,
        spec.is_dim,
        var_sized,
        spec.cell_val_num.unwrap_or(u32::MAX),
    );
    let mut out = FieldFiles {
        fixed: Vec::new(),
        var: Vec::new(),
        validity: Vec::new(),
        tile_offsets: Vec::new(),
        var_offsets: Vec::new(),
        var_sizes: Vec::new(),
        validity_offsets: Vec::new(),
        metas: Vec::new(),
        kinds,
        datatype: spec.datatype,
        var_sized,
        nullable: spec.nullable,
        stem: spec.stem.clone(),
        coords_slot: false,
    };
    let keyed = |ctx: FilterContext| match spec.key {
        Some(k) => ctx.with_key(k),
        None => ctx,
    };
    let data_ctx = keyed(FilterContext::new(spec.datatype, cell_size, WRITE_VERSION));
    let offsets_ctx = keyed(FilterContext::new(Datatype::Uint64, 8, WRITE_VERSION));
    let validity_ctx = keyed(FilterContext::new(Datatype::Uint8, 1, WRITE_VERSION));
    let pipeline = applied(spec.pipeline, spec.key);
    let offsets_pipeline = applied(&schema.offsets_filters, spec.key);
    let validity_pipeline = applied(&schema.validity_filters, spec.key);
    for tile in tiles {
        let cells: Vec<&[u8]> = tile
            .iter()
            .map(|c| match c {
                Some(i) => column.cell_bytes(*i),
                None => spec.fill.as_slice(),
            })
            .collect();
        let validity: Vec<bool> = tile
            .iter()
            .map(|c| match c {
                Some(i) => column.is_valid(*i),
                None => spec.fill_validity,
            })
            .collect();
        // Tile metadata covers the written cells only, never dense padding.
        let written: Vec<&[u8]> = cells
            .iter()
            .zip(tile)
            .filter(|(_, c)| c.is_some())
            .map(|(b, _)| *b)
            .collect();
        let written_validity: Vec<bool> = validity
            .iter()
            .zip(tile)
            .filter(|(_, c)| c.is_some())
            .map(|(v, _)| *v)
            .collect();
        let validity_arg = spec.nullable.then_some(written_validity.as_slice());
        if var_sized {
            let mut data = Vec::new();
            let mut starts = Vec::with_capacity(cells.len());
            for c in &cells {
                starts.push(data.len() as u64);
                data.extend_from_slice(c);
            }
            out.var_offsets.push(out.var.len() as u64);
            out.var_sizes.push(data.len() as u64);
            out.var
                .extend(filter_var_tile(&data, &starts, &pipeline, &data_ctx)?);
            out.tile_offsets.push(out.fixed.len() as u64);
            if spec.pipeline.skips_offsets(spec.datatype, WRITE_VERSION) {
                out.fixed.extend_from_slice(&SKIPPED_OFFSETS_TILE);
            } else {
                let bytes: Vec<u8> = starts.iter().flat_map(|s| s.to_le_bytes()).collect();
                out.fixed
                    .extend(filter_tile(&bytes, &offsets_pipeline, &offsets_ctx)?);
            }
            out.metas.push(
                tile_meta::var_tile(kinds, &written, validity_arg).into_recorded(
                    spec.nullable,
                    tile.len() as u64,
                    true,
                ),
            );
        } else {
            if cells.iter().any(|c| c.len() as u64 != cell_size) {
                return Err(usage(format!(
                    "a cell of {} is not {cell_size} bytes",
                    spec.stem
                )));
            }
            let data: Vec<u8> = cells.concat();
            out.tile_offsets.push(out.fixed.len() as u64);
            out.var_offsets.push(0);
            out.var_sizes.push(0);
            out.fixed.extend(filter_tile(&data, &pipeline, &data_ctx)?);
            out.metas.push(
                tile_meta::fixed_tile(spec.datatype, kinds, &written, validity_arg).into_recorded(
                    spec.nullable,
                    tile.len() as u64,
                    false,
                ),
            );
        }
        if spec.nullable {
            let bytes: Vec<u8> = validity.iter().map(|v| *v as u8).collect();
            out.validity_offsets.push(out.validity.len() as u64);
            out.validity
                .extend(filter_tile(&bytes, &validity_pipeline, &validity_ctx)?);
        } else {
            out.validity_offsets.push(0);
        }
    }
    Ok(out)
}

/// The fields of a fragment, in footer order (attributes, the `__coords`
/// slot, dimensions, then `t`, `dt`, `dci`; `None` where a field has no
/// data), and which special fields it has.
pub(crate) struct FragmentFields {
    pub(crate) fields: Vec<Option<FieldFiles>>,
    pub(crate) has_timestamps: bool,
    pub(crate) has_delete_meta: bool,
}

/// Filters every field's tiles into its buffers.
pub(crate) fn field_tiles(
    schema: &ArraySchema,
    input: &FragmentInput,
    tiles: &[TileCells],
    n: usize,
    processed: &[String],
) -> Result<FragmentFields> {
    let dense = input.subarray.is_some();
    // Field data.
    let mut fields: Vec<Option<FieldFiles>> = Vec::new();
    for (i, (a, col)) in schema.attributes.iter().zip(&input.attrs).enumerate() {
        let spec = FieldSpec {
            datatype: a.datatype,
            cell_val_num: a.cell_val_num,
            nullable: a.nullable,
            is_dim: false,
            pipeline: &a.filters,
            // TileDB pads dense tiles with zero bytes (a var cell is one zero
            // value; validity null), not with the fill value.
            fill: match a.cell_size() {
                Some(size) => vec![0; size as usize],
                None => vec![0; a.datatype.size() as usize],
            },
            fill_validity: false,
            stem: format!("a{i}"),
            key: input.key,
        };
        fields.push(Some(write_field(&spec, col, tiles, schema)?));
    }
    fields.push(coords_slot(schema, tiles.len()));
    for (j, dim) in schema.dimensions.iter().enumerate() {
        if dense {
            fields.push(None);
            continue;
        }
        let spec = FieldSpec {
            datatype: dim.datatype,
            cell_val_num: if dim.var { None } else { Some(1) },
            nullable: false,
            is_dim: true,
            pipeline: &dim.filters,
            fill: Vec::new(),
            fill_validity: true,
            stem: format!("d{j}"),
            key: input.key,
        };
        fields.push(Some(write_field(&spec, &input.dims[j], tiles, schema)?));
    }
    // The special fields of a consolidated sparse fragment, after the
    // dimensions: `t`, then `dt` and `dci`, all u64 cells filtered with the
    // coordinates pipeline.
    let u64_field = |stem: &str, values: &[u64]| -> Result<FieldFiles> {
        if values.len() != n {
            return Err(usage(format!("one {stem} value per cell is needed")));
        }
        let column = Column::from_values(stem, values);
        let spec = FieldSpec {
            datatype: Datatype::Uint64,
            cell_val_num: Some(1),
            nullable: false,
            is_dim: false,
            pipeline: &schema.coords_filters,
            fill: Vec::new(),
            fill_validity: true,
            stem: stem.into(),
            key: input.key,
        };
        write_field(&spec, &column, tiles, schema)
    };
    let has_timestamps = match &input.timestamps {
        Some(t) if !dense => {
            fields.push(Some(u64_field("t", t)?));
            true
        }
        Some(_) => return Err(usage("dense fragments carry no timestamps")),
        None => false,
    };
    let has_delete_meta = match &input.delete_meta {
        Some(meta) if !dense => {
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
            fields.push(Some(u64_field("dt", &meta.timestamps)?));
            fields.push(Some(u64_field("dci", &meta.condition_indexes)?));
            true
        }
        Some(_) => return Err(usage("dense fragments carry no delete metadata")),
        None => false,
    };
    Ok(FragmentFields {
        fields,
        has_timestamps,
        has_delete_meta,
    })
}
