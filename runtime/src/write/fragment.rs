//! One fragment, format 22: cells put in global order and cut into tiles,
//! every tile filtered with its field's pipeline (the special fields `t`,
//! `dt` and `dci` of consolidated sparse fragments use the coordinates
//! pipeline, as TileDB's `ArraySchema::filters` gives them), then the fragment metadata
//! (R-tree, tile offsets, var sizes, validity offsets, tile and fragment
//! min/max/sum/null count, processed conditions, footer) and last the commit
//! marker.

use std::cmp::Ordering;

use crate::directory::{Extension, TimestampedName};
use crate::directory::{COMMITS_DIR, FRAGMENTS_DIR, FRAGMENT_METADATA_FILE};
use crate::error::{Error, Result};
use crate::filter::{Datatype, FilterContext, FilterPipeline};
use crate::format::generated as stored;
use crate::format::io::write_to_vec;
use crate::read::order::GlobalOrder;
use crate::schema::{dimension_shapes, ArraySchema, Scalar};
use crate::storage::{RelPath, Storage};
use crate::tile::generic::write_generic_tile;
use crate::tile::{filter_tile, filter_var_tile, SKIPPED_OFFSETS_TILE};

use super::tile_meta::{self, MetaKinds, TileMeta};
use super::WRITE_VERSION;

/// The values of one field, one entry per cell, in the write's cell order.
#[derive(Debug, Clone, Default)]
pub struct Column {
    /// Each cell's bytes (a fixed cell, or a var cell's values).
    pub cells: Vec<Vec<u8>>,
    /// Nullable attributes: one flag per cell (true = valid).
    pub validity: Option<Vec<bool>>,
}

/// What one write puts in a fragment.
#[derive(Debug, Clone, Default)]
pub struct FragmentInput {
    /// `t1 = t2` of the fragment's name, in milliseconds (0 means now).
    pub timestamp: u64,
    /// Sparse: one column per dimension, cells in any order.
    pub dims: Vec<Column>,
    /// One column per attribute of the schema, in schema order.
    pub attrs: Vec<Column>,
    /// Dense: the inclusive `[lo, hi]` written, per dimension.
    pub subarray: Option<Vec<(i128, i128)>>,
    /// Dense: the cells are given in column-major order of the subarray.
    pub col_major: bool,
    /// Sparse, consolidation: each cell's write timestamp, stored as the
    /// `t` field (`has_timestamps`). Equal coordinates are then kept, newest
    /// first.
    pub timestamps: Option<Vec<u64>>,
    /// Sparse, consolidation: per-cell delete metadata, stored as the `dt`
    /// and `dci` fields (`has_delete_meta`). The indexes refer to the
    /// `processed` list given to [`write_fragment_named`].
    pub delete_meta: Option<DeleteMeta>,
    /// Dense, consolidation: the non-empty domain to record when it is
    /// smaller than the subarray written (TileDB rewrites whole tiles but
    /// keeps the union of the inputs' domains).
    pub non_empty_domain: Option<Vec<(i128, i128)>>,
    /// The AES-256-GCM key of an encrypted array: every tile and generic
    /// tile is then encrypted (the footer never is).
    pub key: Option<[u8; 32]>,
}

/// The delete metadata of a consolidated sparse fragment, one entry per cell
/// (in the input's cell order).
#[derive(Debug, Clone, Default)]
pub struct DeleteMeta {
    /// The timestamp of the delete that removed the cell, `u64::MAX` when
    /// none did.
    pub timestamps: Vec<u64>,
    /// The index of that delete in the fragment's processed conditions,
    /// `u64::MAX` when none did.
    pub condition_indexes: Vec<u64>,
}

/// Where one tile's cells come from: an input cell, or a fill cell.
type TileCells = Vec<Option<usize>>;

fn usage(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}

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
fn dense_tiles(
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
    let tile_col = schema.tile_order == crate::schema::CellOrder::ColMajor;
    let cell_col = schema.cell_order == crate::schema::CellOrder::ColMajor;
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
fn sparse_tiles(
    schema: &ArraySchema,
    dims: &[Column],
    n: usize,
    timestamps: Option<&[u64]>,
) -> Result<Vec<TileCells>> {
    let mut coords: Vec<Vec<Scalar>> = Vec::with_capacity(n);
    for i in 0..n {
        let mut c = Vec::with_capacity(dims.len());
        for (dim, col) in schema.dimensions.iter().zip(dims) {
            let bytes = &col.cells[i];
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
struct FieldOut {
    fixed: Vec<u8>,
    var: Vec<u8>,
    validity: Vec<u8>,
    tile_offsets: Vec<u64>,
    var_offsets: Vec<u64>,
    var_sizes: Vec<u64>,
    validity_offsets: Vec<u64>,
    metas: Vec<TileMeta>,
    kinds: MetaKinds,
    datatype: Datatype,
    var_sized: bool,
    nullable: bool,
    stem: String,
    /// The `__coords` slot of format 5+: no files, zeroed tile metadata.
    coords_slot: bool,
}

/// The `__coords` slot: TileDB keeps it (typed as the first dimension, one
/// value per cell, `dim_num` coordinates wide) with zero-filled tile minima,
/// maxima and sums though it writes no file for it.
fn coords_slot(schema: &ArraySchema, tile_num: usize) -> Option<FieldOut> {
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
    Some(FieldOut {
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
) -> Result<FieldOut> {
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
    let mut out = FieldOut {
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
                Some(i) => column.cells[*i].as_slice(),
                None => spec.fill.as_slice(),
            })
            .collect();
        let validity: Vec<bool> = tile
            .iter()
            .map(|c| match (c, &column.validity) {
                (Some(i), Some(v)) => v[*i],
                (Some(_), None) => true,
                (None, _) => spec.fill_validity,
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
                tile_meta::var_tile(kinds, &written, validity_arg).as_recorded(
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
                tile_meta::fixed_tile(spec.datatype, kinds, &written, validity_arg).as_recorded(
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

fn union_range(datatype: Datatype, a: &(Scalar, Scalar), b: &(Scalar, Scalar)) -> (Scalar, Scalar) {
    let _ = datatype;
    let lo = if b.0.compare(&a.0) == Ordering::Less {
        b.0.clone()
    } else {
        a.0.clone()
    };
    let hi = if b.1.compare(&a.1) == Ordering::Greater {
        b.1.clone()
    } else {
        a.1.clone()
    };
    (lo, hi)
}

fn scalar_bytes(datatype: Datatype, s: &Scalar) -> Result<Vec<u8>> {
    crate::read::encode_scalar(datatype, s).ok_or_else(|| usage("cannot encode a coordinate"))
}

fn to_range(schema: &ArraySchema, d: usize, r: &(Scalar, Scalar)) -> Result<stored::Range> {
    let dim = &schema.dimensions[d];
    let lo = scalar_bytes(dim.datatype, &r.0)?;
    let hi = scalar_bytes(dim.datatype, &r.1)?;
    let start_size = lo.len() as u64;
    let mut data = lo;
    data.extend(hi);
    Ok(stored::Range { start_size, data })
}

fn to_rect(schema: &ArraySchema, ranges: &[(Scalar, Scalar)]) -> Result<stored::NDRectangle> {
    Ok(stored::NDRectangle {
        ranges: ranges
            .iter()
            .enumerate()
            .map(|(d, r)| to_range(schema, d, r))
            .collect::<Result<_>>()?,
    })
}

fn gt(key: Option<&[u8; 32]>, payload: Vec<u8>) -> Result<Vec<u8>> {
    write_generic_tile(&payload, WRITE_VERSION, key)
}

/// Writes one fragment and commits it; returns the fragment's name.
pub fn write_fragment(
    storage: &dyn Storage,
    schema: &ArraySchema,
    input: &FragmentInput,
) -> Result<String> {
    let name =
        TimestampedName::generate(input.timestamp, input.timestamp, Some(WRITE_VERSION), None)?;
    write_fragment_named(storage, schema, input, &name, &[])
}

/// Writes one fragment under `name` and commits it; `processed` lists the
/// delete commits (array-relative paths) already applied to its cells.
pub fn write_fragment_named(
    storage: &dyn Storage,
    schema: &ArraySchema,
    input: &FragmentInput,
    name: &TimestampedName,
    processed: &[String],
) -> Result<String> {
    if input.attrs.len() != schema.attributes.len() {
        return Err(usage("one column per attribute is needed"));
    }
    let n = input.attrs.first().map(|c| c.cells.len()).unwrap_or(0);
    let dense = input.subarray.is_some();
    if !dense && input.dims.len() != schema.dimensions.len() {
        return Err(usage("a sparse write needs one column per dimension"));
    }
    for c in input.attrs.iter().chain(&input.dims) {
        if c.cells.len() != n || c.validity.as_ref().is_some_and(|v| v.len() != n) {
            return Err(usage("columns of different lengths"));
        }
    }
    for (a, c) in schema.attributes.iter().zip(&input.attrs) {
        if a.nullable != c.validity.is_some() {
            return Err(usage(format!("validity of {} missing or extra", a.name)));
        }
    }
    if n == 0 {
        return Err(usage("a write needs at least one cell"));
    }
    if input.timestamps.as_ref().is_some_and(|t| t.len() != n) {
        return Err(usage("one timestamp per cell is needed"));
    }
    let (tiles, cells_per_tile) = match &input.subarray {
        Some(sub) => {
            if sub.len() != schema.dimensions.len() {
                return Err(usage("a subarray needs one range per dimension"));
            }
            let expect: i128 = sub.iter().map(|(a, b)| b - a + 1).product();
            if expect != n as i128 {
                return Err(usage(format!("the subarray holds {expect} cells, not {n}")));
            }
            dense_tiles(schema, sub, input.col_major)?
        }
        None => (
            sparse_tiles(schema, &input.dims, n, input.timestamps.as_deref())?,
            0,
        ),
    };
    let tile_num = tiles.len() as u64;

    // Field data.
    let mut fields: Vec<Option<FieldOut>> = Vec::new();
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
        fields.push(Some(write_field(&spec, col, &tiles, schema)?));
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
        fields.push(Some(write_field(&spec, &input.dims[j], &tiles, schema)?));
    }
    // The special fields of a consolidated sparse fragment, after the
    // dimensions: `t`, then `dt` and `dci`, all u64 cells filtered with the
    // coordinates pipeline.
    let u64_field = |stem: &str, values: &[u64]| -> Result<FieldOut> {
        if values.len() != n {
            return Err(usage(format!("one {stem} value per cell is needed")));
        }
        let column = Column {
            cells: values.iter().map(|x| x.to_le_bytes().to_vec()).collect(),
            validity: None,
        };
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
        write_field(&spec, &column, &tiles, schema)
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

    // Non-empty domain and MBRs.
    let (ned, mbrs) = if let Some(sub) = &input.subarray {
        let sub = input.non_empty_domain.as_ref().unwrap_or(sub);
        let ned: Vec<(Scalar, Scalar)> = sub
            .iter()
            .map(|(a, b)| (Scalar::Int(*a), Scalar::Int(*b)))
            .collect();
        (ned, Vec::new())
    } else {
        let mut mbrs: Vec<Vec<(Scalar, Scalar)>> = Vec::new();
        for tile in &tiles {
            let mut mbr: Vec<(Scalar, Scalar)> = Vec::new();
            for (d, dim) in schema.dimensions.iter().enumerate() {
                let mut r: Option<(Scalar, Scalar)> = None;
                for i in tile.iter().flatten() {
                    let s = Scalar::decode(dim.datatype, &input.dims[d].cells[*i])
                        .ok_or_else(|| usage("bad coordinate"))?;
                    let p = (s.clone(), s);
                    r = Some(match r {
                        None => p,
                        Some(r) => union_range(dim.datatype, &r, &p),
                    });
                }
                mbr.push(r.ok_or_else(|| usage("an empty tile"))?);
            }
            mbrs.push(mbr);
        }
        let mut ned = mbrs[0].clone();
        for m in &mbrs[1..] {
            for (d, dim) in schema.dimensions.iter().enumerate() {
                ned[d] = union_range(dim.datatype, &ned[d], &m[d]);
            }
        }
        (ned, mbrs)
    };

    let dir = RelPath::parse(FRAGMENTS_DIR)?.join(name.as_str())?;
    storage.create_dir(&dir)?;
    let n_fields = fields.len();
    let mut file_sizes = vec![0u64; n_fields];
    let mut file_var_sizes = vec![0u64; n_fields];
    let mut file_validity_sizes = vec![0u64; n_fields];
    for (i, f) in fields.iter().enumerate() {
        let Some(f) = f.as_ref().filter(|f| !f.coords_slot) else {
            continue;
        };
        storage.write(&dir.join(&format!("{}.tdb", f.stem))?, &f.fixed)?;
        file_sizes[i] = f.fixed.len() as u64;
        if f.var_sized {
            storage.write(&dir.join(&format!("{}_var.tdb", f.stem))?, &f.var)?;
            file_var_sizes[i] = f.var.len() as u64;
        }
        if f.nullable {
            storage.write(&dir.join(&format!("{}_validity.tdb", f.stem))?, &f.validity)?;
            file_validity_sizes[i] = f.validity.len() as u64;
        }
    }

    let key = input.key.as_ref();
    // Fragment metadata: the generic tiles, then the footer.
    let dims_shape = dimension_shapes(&schema.stored);
    let mut meta = Vec::new();
    let rtree_offset = 0u64;
    let mut levels = Vec::new();
    if !mbrs.is_empty() {
        let mut level = mbrs.clone();
        levels.push(level.clone());
        while level.len() > 1 {
            level = level
                .chunks(10)
                .map(|group| {
                    let mut u = group[0].clone();
                    for m in &group[1..] {
                        for (d, dim) in schema.dimensions.iter().enumerate() {
                            u[d] = union_range(dim.datatype, &u[d], &m[d]);
                        }
                    }
                    u
                })
                .collect();
            levels.push(level.clone());
        }
        levels.reverse();
    }
    let rtree = stored::RTree {
        dim_num: None,
        fanout: 10,
        datatype: None,
        levels: levels
            .iter()
            .map(|l| {
                Ok(stored::RTreeLevel {
                    mbrs: l
                        .iter()
                        .map(|m| to_rect(schema, m))
                        .collect::<Result<_>>()?,
                })
            })
            .collect::<Result<_>>()?,
    };
    let rtree_args = stored::RTreeBinWriteArgs::builder()
        .version(WRITE_VERSION)
        .dims(dims_shape.clone())
        .finalize();
    meta.extend(gt(key, write_to_vec(&rtree, rtree_args, "RTree")?)?);

    let zeros = vec![0u64; tile_num as usize];
    let list_section = |meta: &mut Vec<u8>,
                        pick: &dyn Fn(&FieldOut) -> Vec<u64>,
                        unused: &[u64]|
     -> Result<Vec<u64>> {
        let mut offs = Vec::new();
        for f in &fields {
            offs.push(meta.len() as u64);
            let values = match f {
                Some(f) => pick(f),
                None => unused.to_vec(),
            };
            meta.extend(gt(
                key,
                write_to_vec(&stored::TileOffsets { values }, (), "TileOffsets")?,
            )?);
        }
        Ok(offs)
    };
    let tile_offsets_offsets = list_section(&mut meta, &|f| f.tile_offsets.clone(), &zeros)?;
    let var_offsets_offsets = list_section(&mut meta, &|f| f.var_offsets.clone(), &zeros)?;
    let var_sizes_offsets = list_section(&mut meta, &|f| f.var_sizes.clone(), &zeros)?;
    let validity_offsets_offsets =
        list_section(&mut meta, &|f| f.validity_offsets.clone(), &zeros)?;

    let min_max = |f: &FieldOut, want_min: bool| -> stored::TileMinMax {
        if !f.kinds.min_max {
            return stored::TileMinMax {
                fixed: Vec::new(),
                var: Vec::new(),
            };
        }
        let values = f.metas.iter().map(|m| {
            if want_min {
                m.min.clone()
            } else {
                m.max.clone()
            }
            .unwrap_or_default()
        });
        if f.var_sized {
            let mut fixed = Vec::new();
            let mut var = Vec::new();
            for v in values {
                fixed.extend((var.len() as u64).to_le_bytes());
                var.extend(v);
            }
            stored::TileMinMax { fixed, var }
        } else {
            stored::TileMinMax {
                fixed: values.flatten().collect(),
                var: Vec::new(),
            }
        }
    };
    let mut mins_offsets = Vec::new();
    let mut maxes_offsets = Vec::new();
    for want_min in [true, false] {
        for f in &fields {
            let mm = match f {
                Some(f) => min_max(f, want_min),
                None => stored::TileMinMax {
                    fixed: Vec::new(),
                    var: Vec::new(),
                },
            };
            if want_min {
                &mut mins_offsets
            } else {
                &mut maxes_offsets
            }
            .push(meta.len() as u64);
            meta.extend(gt(key, write_to_vec(&mm, (), "TileMinMax")?)?);
        }
    }
    let mut sums_offsets = Vec::new();
    for f in &fields {
        sums_offsets.push(meta.len() as u64);
        let values = match f {
            Some(f) if f.kinds.sum => f.metas.iter().map(|m| u64::from_le_bytes(m.sum)).collect(),
            _ => Vec::new(),
        };
        meta.extend(gt(
            key,
            write_to_vec(&stored::TileSums { values }, (), "TileSums")?,
        )?);
    }
    let mut null_counts_offsets = Vec::new();
    for f in &fields {
        null_counts_offsets.push(meta.len() as u64);
        let values = match f {
            Some(f) if f.nullable => f.metas.iter().map(|m| m.null_count).collect(),
            _ => Vec::new(),
        };
        meta.extend(gt(
            key,
            write_to_vec(&stored::TileOffsets { values }, (), "TileNullCounts")?,
        )?);
    }

    // Fragment-wide min/max/sum/null count.
    let cell_num = |t: usize| tiles[t].len() as u64;
    let mmsn_fields = fields
        .iter()
        .map(|f| fragment_mmsn(f.as_ref(), &cell_num))
        .collect();
    let mmsn_offset = meta.len() as u64;
    let mmsn = stored::FragmentMmsn {
        fields: mmsn_fields,
    };
    meta.extend(gt(
        key,
        write_to_vec(
            &mmsn,
            stored::FragmentMmsnBinWriteArgs::builder()
                .num_fields(n_fields as u64)
                .finalize(),
            "FragmentMmsn",
        )?,
    )?);
    let processed_offset = meta.len() as u64;
    let conditions = stored::ProcessedConditions {
        conditions: processed
            .iter()
            .map(|p| stored::ProcessedCondition {
                marker: p.as_bytes().to_vec(),
            })
            .collect(),
    };
    meta.extend(gt(
        key,
        write_to_vec(&conditions, (), "ProcessedConditions")?,
    )?);

    let last_tile_cell_num = if dense {
        cells_per_tile
    } else {
        tiles.last().map(|t| t.len() as u64).unwrap_or(0)
    };
    let footer = stored::FragmentFooter {
        version: WRITE_VERSION,
        schema_name: Some(schema.name.as_bytes().to_vec()),
        dense,
        null_non_empty_domain: false,
        non_empty_domain: to_rect(schema, &ned)?,
        sparse_tile_num: if dense { 0 } else { tile_num },
        last_tile_cell_num,
        has_timestamps,
        has_delete_meta,
        file_sizes,
        file_var_sizes,
        file_validity_sizes: Some(file_validity_sizes),
        rtree_offset,
        tile_offsets_offsets,
        tile_var_offsets_offsets: var_offsets_offsets,
        tile_var_sizes_offsets: var_sizes_offsets,
        tile_validity_offsets_offsets: Some(validity_offsets_offsets),
        tile_mins_offsets: Some(mins_offsets),
        tile_maxes_offsets: Some(maxes_offsets),
        tile_sums_offsets: Some(sums_offsets),
        tile_null_counts_offsets: Some(null_counts_offsets),
        fragment_mmsn_offset: Some(mmsn_offset),
        processed_conditions_offset: Some(processed_offset),
        sections: None,
    };
    let footer_args = stored::FragmentFooterBinWriteArgs::builder()
        .num_attributes(schema.attributes.len() as u64)
        .dims(dims_shape)
        .finalize();
    let footer_bytes = write_to_vec(&footer, footer_args, "FragmentFooter")?;
    meta.extend_from_slice(&footer_bytes);
    meta.extend((footer_bytes.len() as u64).to_le_bytes());
    storage.write(&dir.join(FRAGMENT_METADATA_FILE)?, &meta)?;

    // Last: the commit marker.
    commit(storage, name)?;
    Ok(name.as_str().to_string())
}

/// Writes the empty commit marker `__commits/<name>.wrt`.
pub fn commit(storage: &dyn Storage, name: &TimestampedName) -> Result<()> {
    let commits = RelPath::parse(COMMITS_DIR)?;
    storage.create_dir(&commits)?;
    let marker = name.with_extension(Some(Extension::Wrt));
    storage.write(&commits.join(marker.as_str())?, &[])
}

fn fragment_mmsn(f: Option<&FieldOut>, cell_num: &dyn Fn(usize) -> u64) -> stored::FieldMmsn {
    let empty = stored::FieldMmsn {
        min: Vec::new(),
        max: Vec::new(),
        sum: 0,
        null_count: 0,
    };
    let Some(f) = f else { return empty };
    if f.coords_slot {
        // TileDB reduces the zeroed tile minima as values of the first
        // dimension's type: the fragment minimum and maximum are one zero.
        let zero = if f.kinds.min_max {
            vec![0; f.datatype.size() as usize]
        } else {
            Vec::new()
        };
        return stored::FieldMmsn {
            min: zero.clone(),
            max: zero,
            sum: 0,
            null_count: 0,
        };
    }
    let all_null = |t: usize| f.nullable && f.metas[t].null_count == cell_num(t);
    let null_count = if f.nullable {
        f.metas.iter().map(|m| m.null_count).sum()
    } else {
        0
    };
    let (mut min, mut max) = (Vec::new(), Vec::new());
    if f.kinds.min_max {
        let char_like = matches!(f.datatype, Datatype::Char | Datatype::StringAscii);
        let mut lo: Option<Vec<u8>> = None;
        let mut hi: Option<Vec<u8>> = None;
        // TileDB's reduction of fixed CHAR / STRING_ASCII minima steps its
        // cursor through the tile minima only for tiles it does not skip,
        // so the k-th tile with a non-null cell is compared through the
        // k-th tile's stored values (the zeros of an all-null tile, say).
        let mut char_cursor = 0;
        for (t, m) in f.metas.iter().enumerate() {
            if all_null(t) {
                continue;
            }
            let m = if char_like && !f.var_sized {
                char_cursor += 1;
                &f.metas[char_cursor - 1]
            } else {
                m
            };
            let (Some(tmin), Some(tmax)) = (&m.min, &m.max) else {
                continue;
            };
            if f.var_sized {
                lo = Some(match lo {
                    None => tmin.clone(),
                    Some(l) => tile_meta::var_min(&l, tmin).to_vec(),
                });
                hi = Some(match hi {
                    None => tmax.clone(),
                    Some(h) => tile_meta::var_max(&h, tmax).to_vec(),
                });
            } else if char_like {
                lo = Some(match lo {
                    None => tmin.clone(),
                    Some(l) => tile_meta::fixed_min_max(f.datatype, &l, tmin, true),
                });
                hi = Some(match hi {
                    None => tmax.clone(),
                    Some(h) => tile_meta::fixed_min_max(f.datatype, &h, tmax, false),
                });
            }
        }
        if !f.var_sized && !char_like {
            // Numeric fields start from the type's extremes and keep the
            // current value only when it compares strictly better.
            let probe = tile_meta::fixed_tile(f.datatype, f.kinds, &[], None);
            let (mut l, mut h) = (probe.min.unwrap_or_default(), probe.max.unwrap_or_default());
            for (t, m) in f.metas.iter().enumerate() {
                if all_null(t) {
                    continue;
                }
                if let (Some(tmin), Some(tmax)) = (&m.min, &m.max) {
                    l = tile_meta::fixed_min_max(f.datatype, &l, tmin, true);
                    h = tile_meta::fixed_min_max(f.datatype, &h, tmax, false);
                }
            }
            lo = Some(l);
            hi = Some(h);
        }
        min = lo.unwrap_or_default();
        max = hi.unwrap_or_default();
    }
    let mut sum = [0u8; 8];
    if f.kinds.sum {
        for (t, m) in f.metas.iter().enumerate() {
            if !all_null(t) && tile_meta::add_sums(f.datatype, &mut sum, m.sum) {
                break;
            }
        }
    }
    stored::FieldMmsn {
        min,
        max,
        sum: u64::from_le_bytes(sum),
        null_count,
    }
}
