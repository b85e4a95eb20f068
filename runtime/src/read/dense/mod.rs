//! Dense reads: every cell of the subarray, taken from the newest fragment
//! whose non-empty domain holds it, or the fill value where none does.

pub(crate) mod answered;
mod coordinates;
mod copy;
mod copy_var;
mod fragments;
pub mod geometry;
mod pieces;
mod transpose;

use std::collections::{BTreeSet, HashMap};

use crate::error::{Cause, Error, Result};
use crate::fragment::Field;
use crate::read::dense::fragments::{fragment_geometry, skip_tiles, Geometry};
use crate::read::dense::geometry::{DenseDimension, Span};
use crate::read::query::{decode_ranges, output_attributes, ReadQuery, ResultOrder};
use crate::read::result::{Column, ReadResult};
use crate::read::skip::Prune;
use crate::read::tiles::{load_tiles, prefetch_tiles, TileData, WantedTiles};
use crate::schema::{ArraySchema, Scalar, SchemaOrder};
use crate::snapshot::Snapshot;

/// The most cells a dense read materializes.
pub const MAX_DENSE_CELLS: u128 = 1 << 28;

/// Where each cell comes from: a fragment (index into the geometry), a tile
/// and the cell's position in it; `None` for fill (no fragment holds the
/// cell, or its tile was left out: see `read`).
type Owner = Option<(usize, u64, u64)>;

/// Runs a dense read. The tiles `prune` leaves out are not decoded: their
/// cells read as fill — under its condition (which the caller then
/// applies), those of tiles no cell of which passes, which is what the
/// condition makes of them; and those of tiles it says the caller already
/// has (aggregates answered from tile metadata), which the caller leaves
/// out ([`left_out`]).
pub(crate) fn read(array: &Snapshot, query: &ReadQuery, prune: Prune<'_>) -> Result<ReadResult> {
    let schema = array.schema();
    let ranges = decode_ranges(schema, query)?;
    let attributes = output_attributes(schema, query)?;
    let dims = dense_dimensions(schema)?;
    let (all_spans, boxed, total) = query_spans(schema, &dims, &ranges, MAX_DENSE_CELLS)?;
    let mut geometry = fragment_geometry(array, &dims)?;
    skip_tiles(array, &mut geometry, prune)?;

    // One box in row- or column-major order: copied tile by tile.
    let fills_are_cells = attributes.iter().all(|&a| {
        let a = &schema.attributes[a];
        a.cell_val_num
            .is_none_or(|v| a.fill.len() as u64 == v as u64 * a.datatype.size())
    });
    // With one dimension the global order is the row-major one.
    let layout = match query.layout {
        ResultOrder::Global | ResultOrder::Unordered if dims.len() == 1 => ResultOrder::RowMajor,
        other => other,
    };
    if boxed.len() == dims.len()
        && matches!(layout, ResultOrder::RowMajor | ResultOrder::ColMajor)
        && fills_are_cells
    {
        return copy::read_box(
            array,
            layout,
            &dims,
            &boxed,
            &geometry,
            &attributes,
            !query.skip_coordinates,
        );
    }
    let cells = cells_in_order(schema, &dims, &all_spans, query.layout, total);
    let (owner, needed) = owners(&cells, dims.len(), &geometry);
    let decoded = decode_owned_tiles(array, &attributes, &geometry, &needed)?;
    Ok(gather(
        schema,
        &attributes,
        &cells,
        dims.len(),
        &owner,
        &decoded,
        !query.skip_coordinates,
    ))
}

/// Which cells of `result` (a dense read pruned by `prune`, with its
/// coordinates) come from a tile it left out: they read as fill, and fail
/// its condition whatever the fill values would say.
pub(crate) fn left_out(
    array: &Snapshot,
    prune: Prune<'_>,
    result: &ReadResult,
) -> Result<Vec<bool>> {
    let count = result.cell_count();
    let dims = dense_dimensions(array.schema())?;
    let mut geometry = fragment_geometry(array, &dims)?;
    skip_tiles(array, &mut geometry, prune)?;
    if geometry.iter().all(|g| g.skipped.is_empty()) || result.dimensions.len() != dims.len() {
        return Ok(vec![false; count]);
    }
    let mut coords = vec![0i128; dims.len()];
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        for (x, column) in coords.iter_mut().zip(&result.dimensions) {
            let value = Scalar::decode(column.datatype, column.cell(i).0).and_then(|v| v.as_int());
            *x = value.ok_or_else(|| Error::corrupt(0, "coordinates", "not integral"))?;
        }
        let owner = geometry.iter().rev().find(|g| {
            g.ned
                .iter()
                .zip(&coords)
                .all(|((lo, hi), x)| lo <= x && x <= hi)
        });
        out.push(owner.is_some_and(|g| g.skipped.contains(&g.tiling.tile_position(&coords))));
    }
    Ok(out)
}

/// The schema's dimensions as dense dimensions (integral, with a domain).
pub(crate) fn dense_dimensions(schema: &ArraySchema) -> Result<Vec<DenseDimension>> {
    let mut dims = Vec::new();
    for dim in &schema.dimensions {
        let (lo, hi) = dim.domain_scalars().ok_or_else(|| {
            let what = "the domain of a dense dimension";
            Error::corrupt(0, "Dimension.domain", Cause::Missing { what })
                .within(format!("dimension {}", dim.name))
        })?;
        let (Some(lo), Some(hi)) = (lo.as_int(), hi.as_int()) else {
            return Err(Error::unsupported(format!(
                "dense dimension {} is not integral",
                dim.name
            )));
        };
        let extent = dim
            .extent_scalar()
            .and_then(|e| e.as_int())
            .filter(|e| *e > 0)
            .unwrap_or(hi - lo + 1);
        dims.push(DenseDimension {
            low: lo,
            high: hi,
            extent,
        });
    }
    Ok(dims)
}

/// Per dimension the spans read; the box (one span per dimension) when
/// there is one; the number of cells.
type QuerySpans = (Vec<Vec<Span>>, Vec<Span>, u128);

/// The spans the query reads per dimension (the current domain, else the
/// whole domain, where it gives none), the box when every dimension has
/// one span, and the number of cells.
pub(crate) fn query_spans(
    schema: &ArraySchema,
    dims: &[DenseDimension],
    ranges: &[Vec<(Scalar, Scalar)>],
    limit: u128,
) -> Result<QuerySpans> {
    let mut boxed: Vec<(i128, i128)> = Vec::new();
    let mut all_spans: Vec<Vec<(i128, i128)>> = Vec::new();
    let mut total: u128 = 1;
    for (d, dim) in dims.iter().enumerate() {
        let spans: Vec<(i128, i128)> = if ranges[d].is_empty() {
            match &schema.current_domain {
                Some(cd) if d < cd.len() => {
                    let (lo, hi) = &cd[d];
                    let dt = schema.dimensions[d].datatype;
                    vec![(
                        Scalar::decode(dt, lo)
                            .and_then(|s| s.as_int())
                            .unwrap_or(dim.low),
                        Scalar::decode(dt, hi)
                            .and_then(|s| s.as_int())
                            .unwrap_or(dim.high),
                    )]
                }
                _ => vec![(dim.low, dim.high)],
            }
        } else {
            ranges[d]
                .iter()
                .map(|(lo, hi)| match (lo.as_int(), hi.as_int()) {
                    (Some(lo), Some(hi)) => Ok((lo, hi)),
                    _ => Err(Error::Usage("dense ranges must be integers".into())),
                })
                .collect::<Result<_>>()?
        };
        if let [one] = spans.as_slice() {
            boxed.push(*one);
        }
        for &(lo, hi) in &spans {
            if lo > hi || lo < dim.low || hi > dim.high {
                return Err(Error::Usage(format!(
                    "range [{lo}, {hi}] of dimension {} is outside its domain [{}, {}]",
                    schema.dimensions[d].name, dim.low, dim.high
                )));
            }
            total = total.saturating_mul((hi - lo + 1) as u128);
            if total > limit {
                return Err(Error::Usage(format!(
                    "the subarray has more than {limit} cells (read it in batches)"
                )));
            }
        }
        all_spans.push(spans);
    }
    Ok((all_spans, boxed, total))
}

/// The coordinates of every cell of the spans (`n` per cell, flat), in the
/// layout's order.
fn cells_in_order(
    schema: &ArraySchema,
    dims: &[DenseDimension],
    all_spans: &[Vec<Span>],
    layout: ResultOrder,
    total: u128,
) -> Vec<i128> {
    // The coordinates of each dimension, in query order.
    let mut axes: Vec<Vec<i128>> = Vec::new();
    for spans in all_spans {
        let mut axis = Vec::new();
        for &(lo, hi) in spans {
            axis.extend(lo..=hi);
        }
        axes.push(axis);
    }

    // Every cell of the subarray in the requested order.
    let n = dims.len();
    // Coordinates of every cell, `n` per cell, flat.
    let mut cells: Vec<i128> = Vec::with_capacity(total as usize * n);
    let mut index = vec![0usize; n];
    if n > 0 && axes.iter().all(|a| !a.is_empty()) {
        let step: Vec<usize> = if layout == ResultOrder::ColMajor {
            (0..n).collect()
        } else {
            (0..n).rev().collect()
        };
        'outer: loop {
            cells.extend((0..n).map(|d| axes[d][index[d]]));
            for &d in &step {
                index[d] += 1;
                if index[d] < axes[d].len() {
                    continue 'outer;
                }
                index[d] = 0;
            }
            break;
        }
    }
    if n > 0 && matches!(layout, ResultOrder::Global | ResultOrder::Unordered) {
        // Global order: the space tile's position in tile order, then the
        // cell's position inside its tile in cell order.
        let linear = |values: &mut dyn Iterator<Item = (i128, i128)>, col: bool| -> i128 {
            let mut v: Vec<(i128, i128)> = values.collect();
            if col {
                v.reverse();
            }
            v.iter().fold(0i128, |acc, (i, len)| {
                acc.saturating_mul(*len).saturating_add(*i)
            })
        };
        let tile_col = schema.tile_order == SchemaOrder::ColMajor;
        let cell_col = schema.cell_order == SchemaOrder::ColMajor;
        let key = |c: &[i128]| -> (i128, i128) {
            let tile = linear(
                &mut c
                    .iter()
                    .zip(dims)
                    .map(|(x, d)| (d.tile_index(*x), d.tile_index(d.high) + 1)),
                tile_col,
            );
            let cell = linear(
                &mut c
                    .iter()
                    .zip(dims)
                    .map(|(x, d)| ((x - d.low).rem_euclid(d.extent), d.extent)),
                cell_col,
            );
            (tile, cell)
        };
        let mut order: Vec<usize> = (0..cells.len() / n).collect();
        order.sort_by_cached_key(|&i| key(&cells[i * n..(i + 1) * n]));
        let mut sorted = Vec::with_capacity(cells.len());
        for i in order {
            sorted.extend_from_slice(&cells[i * n..(i + 1) * n]);
        }
        cells = sorted;
    }
    cells
}

/// Which fragment holds each cell (the newest whose non-empty domain holds
/// it), and the tiles each fragment must decode.
fn owners(cells: &[i128], n: usize, geometry: &[Geometry<'_>]) -> (Vec<Owner>, Vec<BTreeSet<u64>>) {
    // Which fragment holds each cell.
    let mut owner: Vec<Owner> = Vec::with_capacity(cells.len());
    let mut needed: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); geometry.len()];
    for c in cells.chunks_exact(n.max(1)) {
        let hit = geometry
            .iter()
            .enumerate()
            .rev()
            .find(|(_, g)| g.ned.iter().zip(c).all(|((lo, hi), x)| lo <= x && x <= hi));
        owner.push(hit.and_then(|(gi, g)| {
            let tile = g.tiling.tile_position(c);
            if g.skipped.contains(&tile) {
                // Left out (no cell passes, or answered): read as fill.
                return None;
            }
            needed[gi].insert(tile);
            Some((gi, tile, g.tiling.cell_position(c)))
        }));
    }
    (owner, needed)
}

/// Decodes the tiles each fragment contributes, per output attribute, by
/// (fragment, tile).
fn decode_owned_tiles(
    array: &Snapshot,
    attributes: &[usize],
    geometry: &[Geometry<'_>],
    needed: &[BTreeSet<u64>],
) -> Result<Vec<HashMap<(usize, u64), TileData>>> {
    let schema = array.schema();
    let storage = array.storage();
    let key = array.options().key;
    // Decode the tiles each fragment contributes.
    let mut decoded: Vec<HashMap<(usize, u64), TileData>> = vec![HashMap::new(); attributes.len()];
    let tiles: Vec<Vec<u64>> = needed.iter().map(|n| n.iter().copied().collect()).collect();
    let mut wanted = Vec::new();
    for (g, tiles) in geometry.iter().zip(&tiles) {
        for &a in attributes {
            if let Some((fa, _)) = g.fragment.schema.attribute(&schema.attributes[a].name) {
                let field = Field::Attribute(fa);
                let fragment = g.fragment;
                wanted.push(WantedTiles {
                    fragment,
                    field,
                    tiles,
                });
            }
        }
    }
    prefetch_tiles(storage, &wanted);
    for (gi, g) in geometry.iter().enumerate() {
        let tiles: Vec<u64> = needed[gi].iter().copied().collect();
        if tiles.is_empty() {
            continue;
        }
        if let Some(&bad) = tiles.iter().find(|t| **t >= g.fragment.tile_num) {
            return Err(crate::read::tiles::no_such_tile(g.fragment, bad));
        }
        for (ai, &a) in attributes.iter().enumerate() {
            let name = &schema.attributes[a].name;
            let Some((fa, _)) = g.fragment.schema.attribute(name) else {
                continue;
            };
            let data = load_tiles(
                storage,
                g.fragment,
                Field::Attribute(fa),
                &tiles,
                g.tiling.cells_per_tile(),
                key.as_ref(),
            )?;
            for (t, d) in tiles.iter().zip(data) {
                decoded[ai].insert((gi, *t), d);
            }
        }
    }
    Ok(decoded)
}

/// The result columns: each cell's coordinates (when asked for), and its
/// attribute values from its owner's tile or the fill value.
fn gather(
    schema: &ArraySchema,
    attributes: &[usize],
    cells: &[i128],
    n: usize,
    owner: &[Owner],
    decoded: &[HashMap<(usize, u64), TileData>],
    with_coordinates: bool,
) -> ReadResult {
    let count = cells.len() / n.max(1);
    let mut dim_cols: Vec<Column> = if with_coordinates {
        schema
            .dimensions
            .iter()
            .map(|d| {
                let mut c = Column::new(&d.name, d.datatype, Some(1), false);
                c.data.reserve(count * d.datatype.size() as usize);
                c
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut attr_cols: Vec<Column> = attributes
        .iter()
        .map(|&a| {
            let a = &schema.attributes[a];
            Column::new(&a.name, a.datatype, a.cell_val_num, a.nullable)
        })
        .collect();
    for (c, own) in cells.chunks_exact(n.max(1)).zip(owner) {
        for (col, x) in dim_cols.iter_mut().zip(c) {
            // Dense dimensions are integral, and the cell is in the domain:
            // its little-endian two's complement, cut to the datatype's
            // width, is its encoding.
            let size = col.datatype.size() as usize;
            col.data.extend_from_slice(&x.to_le_bytes()[..size]);
        }
        for (ai, (col, &a)) in attr_cols.iter_mut().zip(attributes).enumerate() {
            let attr = &schema.attributes[a];
            match own.and_then(|(gi, t, pos)| decoded[ai].get(&(gi, t)).map(|d| (d, pos))) {
                Some((tile, pos)) => col.push(tile.cell(pos), tile.valid(pos)),
                None => col.push(&attr.fill, attr.fill_validity),
            }
        }
    }
    ReadResult {
        dimensions: dim_cols,
        attributes: attr_cols,
    }
}
