//! The fragment-metadata writer: the non-empty domain and MBRs, then
//! `__fragment_metadata.tdb` — the R-tree, the tile offsets and sizes, the
//! tile minima, maxima, sums and null counts, the fragment-wide ones, the
//! processed conditions, and the footer.

use std::cmp::Ordering;

use crate::error::Result;
use crate::filter::Datatype;
use crate::format::generated as stored;
use crate::format::io::write_to_vec;
use crate::schema::{dimension_shapes, ArraySchema, Scalar};
use crate::tile::generic::write_generic_tile;

use super::field_tiles::{FieldFiles, FragmentFields};
use super::fragment_input::{usage, FragmentInput, InputColumns};
use super::num_key::NumKey;
use super::tile_meta;
use super::tiling::{Cells, TilePlan};
use super::WRITE_VERSION;

/// What the fragment metadata records of a fragment just written.
pub(crate) struct FragmentParts<'a> {
    pub(crate) schema: &'a ArraySchema,
    pub(crate) key: Option<&'a [u8; 32]>,
    pub(crate) fields: &'a FragmentFields,
    /// Each tile's cells, fill included.
    pub(crate) tile_cells: &'a [u64],
    /// Dense: the cells of a space tile.
    pub(crate) cells_per_tile: u64,
    pub(crate) dense: bool,
    pub(crate) ned: &'a [(Scalar, Scalar)],
    pub(crate) mbrs: &'a [Vec<(Scalar, Scalar)>],
    pub(crate) file_sizes: Vec<u64>,
    pub(crate) file_var_sizes: Vec<u64>,
    pub(crate) file_validity_sizes: Vec<u64>,
    pub(crate) processed: &'a [String],
}

/// A range per dimension.
type Domain = Vec<(Scalar, Scalar)>;

/// The non-empty domain and (sparse) each tile's MBR, the tiles' MBRs
/// computed in parallel.
pub(crate) fn bounds(
    schema: &ArraySchema,
    input: &FragmentInput,
    columns: &InputColumns<'_>,
    plan: &TilePlan,
) -> Result<(Domain, Vec<Domain>)> {
    use rayon::prelude::*;
    Ok(if let Some(sub) = &input.subarray {
        let sub = input.non_empty_domain.as_ref().unwrap_or(sub);
        let ned: Vec<(Scalar, Scalar)> = sub
            .iter()
            .map(|(a, b)| (Scalar::Int(*a), Scalar::Int(*b)))
            .collect();
        (ned, Vec::new())
    } else {
        let mbrs: Vec<Domain> = (0..plan.len())
            .into_par_iter()
            .map(|t| mbr(schema, columns, &plan.cells(t)))
            .collect::<Result<_>>()?;
        let first = mbrs.first().ok_or_else(|| usage("an empty tile"))?;
        let mut ned = first.clone();
        for m in &mbrs[1..] {
            for (d, dim) in schema.dimensions.iter().enumerate() {
                ned[d] = union_range(dim.datatype, &ned[d], &m[d]);
            }
        }
        (ned, mbrs)
    })
}

/// The minimum bounding rectangle of a sparse tile's cells.
fn mbr(schema: &ArraySchema, columns: &InputColumns<'_>, cells: &Cells<'_>) -> Result<Domain> {
    let mut mbr: Domain = Vec::with_capacity(schema.dimensions.len());
    for (d, dim) in schema.dimensions.iter().enumerate() {
        let column = columns.dims[d];
        let size = dim.datatype.size() as usize;
        if let Some(kind) = NumKey::of(dim.datatype).filter(|_| column.cell_size() == Some(size)) {
            mbr.push(numeric_range(dim.datatype, kind, column, cells)?);
            continue;
        }
        let mut r: Option<(Scalar, Scalar)> = None;
        let mut bad = false;
        cells.for_each(|c| {
            let Some(i) = c else { return };
            let Some(s) = Scalar::decode(dim.datatype, columns.dims[d].cell_bytes(i)) else {
                bad = true;
                return;
            };
            match &mut r {
                None => r = Some((s.clone(), s)),
                Some((lo, hi)) => {
                    if s.compare(lo) == Ordering::Less {
                        *lo = s.clone();
                    }
                    if s.compare(hi) == Ordering::Greater {
                        *hi = s;
                    }
                }
            }
        });
        if bad {
            return Err(usage("bad coordinate"));
        }
        mbr.push(r.ok_or_else(|| usage("an empty tile"))?);
    }
    Ok(mbr)
}

/// The range of a numeric dimension over a tile's cells, found on the
/// coordinates' keys (which order as `Scalar::compare` does, the first of
/// equal values kept) and decoded once at the end.
fn numeric_range(
    datatype: Datatype,
    kind: NumKey,
    column: &crate::Column,
    cells: &Cells<'_>,
) -> Result<(Scalar, Scalar)> {
    let size = datatype.size() as usize;
    let key = |i: usize| column.data.get(i * size..).map(|b| kind.key(b));
    let mut range: Option<((u64, usize), (u64, usize))> = None;
    let mut bad = false;
    let mut add = |i: usize, k: Option<u64>| {
        let Some(k) = k else {
            bad = true;
            return;
        };
        match &mut range {
            None => range = Some(((k, i), (k, i))),
            Some((lo, hi)) => {
                if k < lo.0 {
                    *lo = (k, i);
                }
                if k > hi.0 {
                    *hi = (k, i);
                }
            }
        }
    };
    match cells {
        // One run of input cells (a global-order write): read in place.
        Cells::Runs(runs) if runs.len() == 1 && runs[0].step == 1 && runs[0].from.is_some() => {
            let from = runs[0].from.unwrap_or(0);
            let flip = match kind {
                NumKey::Signed(8) => Some(1u64 << 63),
                NumKey::Unsigned(8) => Some(0),
                _ => None,
            };
            match column.data.get(from * size..(from + runs[0].len) * size) {
                // 8-byte integers: each word is its key once flipped, read
                // in a plain loop (no per-kind dispatch per cell).
                Some(data) if flip.is_some() && !data.is_empty() => {
                    let flip = flip.unwrap_or(0);
                    let word = |k: usize| {
                        data.get(k * 8..k * 8 + 8)
                            .and_then(|b| b.first_chunk::<8>())
                            .map_or(u64::MAX, |b| u64::from_le_bytes(*b) ^ flip)
                    };
                    let (mut lo, mut hi) = ((word(0), 0), (word(0), 0));
                    for k in 1..data.len() / 8 {
                        let w = word(k);
                        if w < lo.0 {
                            lo = (w, k);
                        }
                        if w > hi.0 {
                            hi = (w, k);
                        }
                    }
                    range = Some(((lo.0, from + lo.1), (hi.0, from + hi.1)));
                }
                Some(data) => data
                    .chunks_exact(size)
                    .enumerate()
                    .for_each(|(k, b)| add(from + k, Some(kind.key(b)))),
                None => bad = true,
            }
        }
        _ => cells.for_each(|c| {
            if let Some(i) = c {
                add(i, key(i));
            }
        }),
    }
    let ((_, lo), (_, hi)) = range
        .filter(|_| !bad)
        .ok_or_else(|| usage("bad coordinate"))?;
    let decode = |i: usize| {
        Scalar::decode(datatype, column.cell_bytes(i)).ok_or_else(|| usage("bad coordinate"))
    };
    Ok((decode(lo)?, decode(hi)?))
}

/// The bytes of `__fragment_metadata.tdb`: the generic tiles, then the
/// footer and its size.
pub(crate) fn fragment_metadata(parts: &FragmentParts<'_>) -> Result<Vec<u8>> {
    let mut meta = Vec::new();
    let rtree_offset = meta.len() as u64;
    meta.extend(rtree(parts)?);
    let offsets = tile_sections(parts, &mut meta)?;
    let mmsn_offset = meta.len() as u64;
    meta.extend(fragment_mmsn_tile(parts)?);
    let processed_offset = meta.len() as u64;
    meta.extend(processed_conditions(parts)?);
    let footer_bytes = footer(parts, rtree_offset, offsets, mmsn_offset, processed_offset)?;
    meta.extend_from_slice(&footer_bytes);
    let length = stored::FooterLength {
        footer_len: footer_bytes.len() as u64,
    };
    meta.extend(write_to_vec(&length, (), "FooterLength")?);
    Ok(meta)
}

/// The R-tree of the MBRs (fanout 10) as a generic tile.
fn rtree(parts: &FragmentParts<'_>) -> Result<Vec<u8>> {
    let FragmentParts {
        schema, key, mbrs, ..
    } = *parts;
    let dims_shape = dimension_shapes(&schema.stored);
    let mut levels = Vec::new();
    if !mbrs.is_empty() {
        let mut level = mbrs.to_vec();
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
        .dims(dims_shape)
        .finalize();
    gt(key, write_to_vec(&rtree, rtree_args, "RTree")?)
}

/// Where the per-field sections of tile metadata start.
struct SectionOffsets {
    tile_offsets: Vec<u64>,
    var_offsets: Vec<u64>,
    var_sizes: Vec<u64>,
    validity_offsets: Vec<u64>,
    mins: Vec<u64>,
    maxes: Vec<u64>,
    sums: Vec<u64>,
    null_counts: Vec<u64>,
}

/// The per-field tile metadata, one generic tile per field and kind: tile
/// offsets, var offsets and sizes, validity offsets, minima, maxima, sums
/// and null counts.
fn tile_sections(parts: &FragmentParts<'_>, meta: &mut Vec<u8>) -> Result<SectionOffsets> {
    let key = parts.key;
    let fields = &parts.fields.fields;
    let tile_num = parts.tile_cells.len() as u64;
    let zeros = vec![0u64; tile_num as usize];
    let list_section = |meta: &mut Vec<u8>,
                        pick: &dyn Fn(&FieldFiles) -> Vec<u64>,
                        unused: &[u64]|
     -> Result<Vec<u64>> {
        let mut offs = Vec::new();
        for f in fields {
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
    let tile_offsets_offsets = list_section(meta, &|f| f.tile_offsets.clone(), &zeros)?;
    let var_offsets_offsets = list_section(meta, &|f| f.var_offsets.clone(), &zeros)?;
    let var_sizes_offsets = list_section(meta, &|f| f.var_sizes.clone(), &zeros)?;
    let validity_offsets_offsets = list_section(meta, &|f| f.validity_offsets.clone(), &zeros)?;

    let min_max = |f: &FieldFiles, want_min: bool| -> stored::TileMinMax {
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
        for f in fields {
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
    for f in fields {
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
    for f in fields {
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
    Ok(SectionOffsets {
        tile_offsets: tile_offsets_offsets,
        var_offsets: var_offsets_offsets,
        var_sizes: var_sizes_offsets,
        validity_offsets: validity_offsets_offsets,
        mins: mins_offsets,
        maxes: maxes_offsets,
        sums: sums_offsets,
        null_counts: null_counts_offsets,
    })
}

/// The fragment-wide min/max/sum/null count of every field.
fn fragment_mmsn_tile(parts: &FragmentParts<'_>) -> Result<Vec<u8>> {
    let FragmentParts {
        key,
        fields,
        tile_cells,
        ..
    } = *parts;
    let n_fields = fields.fields.len();
    let cell_num = |t: usize| tile_cells[t];
    let mmsn_fields = fields
        .fields
        .iter()
        .map(|f| fragment_mmsn(f.as_ref(), &cell_num))
        .collect();
    let mmsn = stored::FragmentMmsn {
        fields: mmsn_fields,
    };
    gt(
        key,
        write_to_vec(
            &mmsn,
            stored::FragmentMmsnBinWriteArgs::builder()
                .num_fields(n_fields as u64)
                .finalize(),
            "FragmentMmsn",
        )?,
    )
}

/// The delete conditions already applied to the fragment's cells.
fn processed_conditions(parts: &FragmentParts<'_>) -> Result<Vec<u8>> {
    let FragmentParts { key, processed, .. } = *parts;
    let conditions = stored::ProcessedConditions {
        conditions: processed
            .iter()
            .map(|p| stored::ProcessedCondition {
                marker: p.as_bytes().to_vec(),
            })
            .collect(),
    };
    gt(key, write_to_vec(&conditions, (), "ProcessedConditions")?)
}

/// The footer: the fragment's shape, its files' sizes and where each
/// section of the metadata starts.
fn footer(
    parts: &FragmentParts<'_>,
    rtree_offset: u64,
    offsets: SectionOffsets,
    mmsn_offset: u64,
    processed_offset: u64,
) -> Result<Vec<u8>> {
    let FragmentParts {
        schema,
        fields,
        tile_cells,
        cells_per_tile,
        dense,
        ned,
        ..
    } = *parts;
    let tile_num = tile_cells.len() as u64;
    let dims_shape = dimension_shapes(&schema.stored);
    let last_tile_cell_num = if dense {
        cells_per_tile
    } else {
        tile_cells.last().copied().unwrap_or(0)
    };
    let footer = stored::FragmentFooter {
        version: WRITE_VERSION,
        schema_name: Some(schema.name.as_bytes().to_vec()),
        dense,
        null_non_empty_domain: false,
        non_empty_domain: to_rect(schema, ned)?,
        sparse_tile_num: if dense { 0 } else { tile_num },
        last_tile_cell_num,
        has_timestamps: fields.has_timestamps,
        has_delete_meta: fields.has_delete_meta,
        file_sizes: parts.file_sizes.clone(),
        file_var_sizes: parts.file_var_sizes.clone(),
        file_validity_sizes: Some(parts.file_validity_sizes.clone()),
        rtree_offset,
        tile_offsets_offsets: offsets.tile_offsets,
        tile_var_offsets_offsets: offsets.var_offsets,
        tile_var_sizes_offsets: offsets.var_sizes,
        tile_validity_offsets_offsets: Some(offsets.validity_offsets),
        tile_mins_offsets: Some(offsets.mins),
        tile_maxes_offsets: Some(offsets.maxes),
        tile_sums_offsets: Some(offsets.sums),
        tile_null_counts_offsets: Some(offsets.null_counts),
        fragment_mmsn_offset: Some(mmsn_offset),
        processed_conditions_offset: Some(processed_offset),
        sections: None,
    };
    let footer_args = stored::FragmentFooterBinWriteArgs::builder()
        .num_attributes(schema.attributes.len() as u64)
        .dims(dims_shape)
        .finalize();
    write_to_vec(&footer, footer_args, "FragmentFooter")
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

fn fragment_mmsn(f: Option<&FieldFiles>, cell_num: &dyn Fn(usize) -> u64) -> stored::FieldMmsn {
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
            let no_cells: &[&[u8]] = &[];
            let probe = tile_meta::fixed_tile(f.datatype, f.kinds, no_cells, None);
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
