//! Dense reads of one box (one range per dimension) in row- or column-major
//! order, without a per-cell plan.
//!
//! The result is cut into bands: the cells whose outermost coordinate (in
//! the result order) falls in one row of space tiles, or in a few rows when
//! a row holds too few tiles to keep every thread busy (see
//! [`rows_per_band`]). A band is a contiguous part of every result column
//! and needs only the tiles that meet it. Inside a band the result is a run
//! of lines (the cells along the innermost dimension); each line is cut
//! into pieces that come from one tile of one fragment, or are fill.
//!
//! When every piece reads consecutive cells of its tile (the result order
//! is the tiles' cell order along the line), the band is decoded straight
//! into the result: each piece's place is cut out of the result column and
//! handed to its tile, and each tile's chunks are decoded into a small
//! buffer and copied to those places ([`scatter_band`]; var-sized cells are
//! sized and placed from the band's offsets tiles first,
//! [`scatter_var_band`]). No decoded tile is assembled, and memory holds
//! the result plus one stored tile per thread.
//!
//! Otherwise (a column-major result of row-major tiles, strings encoded
//! whole) the band's tiles are decoded whole, all tiles and chunks in one
//! parallel batch and of each tile only the chunks holding cells the band
//! reads; fixed-size pieces are then copied line by line in parallel, and
//! var-sized ones sized first, then copied in parallel into their places.
use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::fragment::Field;
use crate::read::dense::copy_var::*;
use crate::read::dense::fragments::Geometry;
use crate::read::dense::geometry::{DenseDimension, Span};
use crate::read::dense::pieces::*;
use crate::read::memory;
use crate::read::query::Layout;
use crate::read::result::{Column, ReadResult};
use crate::read::tiles::{
    load_tiles_pooled, StoredBuffers, TileData, TilePart, TilePool, TileSelection, TileSource,
};
use crate::snapshot::Snapshot;

/// Copies the pieces of one line of fixed-size cells into `line`.
pub(crate) fn copy_line(
    line: &mut [u8],
    pieces: &[Piece],
    tiles: &HashMap<(usize, u64), TileData>,
    cell_size: usize,
    fill: &[u8],
    validity: bool,
) -> Result<()> {
    for p in pieces {
        let dst = line
            .get_mut(p.start as usize * cell_size..(p.start + p.count) as usize * cell_size)
            .ok_or_else(short_tile)?;
        let tile = p
            .source
            .and_then(|(gi, t, pos, stride)| tiles.get(&(gi, t)).map(|d| (d, pos, stride)));
        let Some((tile, pos, stride)) = tile else {
            for cell in dst.chunks_exact_mut(cell_size) {
                cell.copy_from_slice(fill);
            }
            continue;
        };
        let src: &[u8] = if validity {
            match &tile.validity {
                Some(v) => v,
                None => {
                    dst.fill(1);
                    continue;
                }
            }
        } else {
            &tile.data
        };
        if stride == 1 {
            let from = pos as usize * cell_size;
            dst.copy_from_slice(src.get(from..from + dst.len()).ok_or_else(short_tile)?);
        } else {
            for (i, cell) in dst.chunks_exact_mut(cell_size).enumerate() {
                let from = (pos + i as u64 * stride) as usize * cell_size;
                cell.copy_from_slice(src.get(from..from + cell_size).ok_or_else(short_tile)?);
            }
        }
    }
    Ok(())
}

/// Writes the coordinates of dimension `d` for one line.
pub(crate) fn coords_line(line: &mut [u8], coords: &[i128], d: usize, inner: usize, size: usize) {
    for (i, cell) in line.chunks_exact_mut(size).enumerate() {
        let x = if d == inner {
            coords[d] + i as i128
        } else {
            coords[d]
        };
        // Little-endian two's complement, cut to the coordinate's width,
        // is the value's encoding for every integral datatype.
        cell.copy_from_slice(&x.to_le_bytes()[..size]);
    }
}

/// Decodes one band of a fixed-size attribute (its cells, or its
/// validity bytes) straight into the result: every tile's chunks are
/// decoded into a small buffer and their cells copied to where the result
/// wants them, without assembling the tile (see
/// [`crate::tile::unfilter_tile_scattered`]). Needs every piece of the band
/// to read consecutive cells of its tile (stride 1).
#[allow(clippy::too_many_arguments)]
pub(crate) fn scatter_band(
    array: &Snapshot,
    geometry: &[Geometry<'_>],
    attr: &crate::schema::Attribute,
    part: TilePart,
    region: &mut [u8],
    plan: &[Vec<Piece>],
    line_len: u64,
    buffers: &StoredBuffers,
) -> Result<()> {
    let storage = array.storage();
    let key = array.options().key;
    let (cell_size, fill) = match part {
        TilePart::Cells => (attr.fill.len(), attr.fill.clone()),
        TilePart::Validity => (1, vec![u8::from(attr.fill_validity)]),
        TilePart::VarData => {
            return Err(Error::Usage(
                "var-sized cells are scattered by scatter_var_band".into(),
            ))
        }
    };
    let (per_tile, fills) = band_runs(region, plan, line_len, cell_size, geometry.len())?;
    fill_cells(fills, &fill);
    let mut jobs = Vec::new();
    for (g, tiles) in geometry.iter().zip(per_tile) {
        if tiles.is_empty() {
            continue;
        }
        let source = match g.fragment.schema.attribute(&attr.name) {
            Some((fa, _)) => TileSource::new(
                storage,
                g.fragment,
                Field::Attribute(fa),
                part,
                g.tiling.cells_per_tile(),
                key.as_ref(),
            )?,
            None => None,
        };
        match source {
            Some(source) => {
                let source = std::sync::Arc::new(source);
                jobs.extend(
                    tiles
                        .into_iter()
                        .map(|(tile, runs)| (source.clone(), tile, runs)),
                );
            }
            None => {
                // A fragment without the attribute (written before it was
                // added) holds its fill; one without validity, valid cells.
                let value = match part {
                    TilePart::Cells | TilePart::VarData => fill.clone(),
                    TilePart::Validity if g.fragment.schema.attribute(&attr.name).is_some() => {
                        vec![1]
                    }
                    TilePart::Validity => fill.clone(),
                };
                let places = tiles.into_values().flatten().map(|r| r.dest).collect();
                fill_cells(places, &value);
            }
        }
    }
    jobs.into_par_iter()
        .try_for_each(|(source, tile, runs)| source.scatter(storage, tile, runs, buffers))
}

/// After the first band of a var-sized column, room for the rest of its
/// data, estimated from that band (reserved, not touched: see `memory`).
pub(crate) fn reserve_for_rest(
    col: &mut Column,
    added: u64,
    band_start: u64,
    band_cells: u64,
    total: u64,
) {
    if band_start == 0 && band_cells < total {
        let estimate = (added as u128 * (total - band_cells) as u128 / band_cells.max(1) as u128)
            .min(usize::MAX as u128) as usize;
        memory::reserve_hint(&mut col.data, estimate);
    }
}

pub(crate) fn read_box(
    array: &Snapshot,
    layout: Layout,
    dims: &[DenseDimension],
    spans: &[Span],
    geometry: &[Geometry<'_>],
    attributes: &[usize],
    with_coordinates: bool,
) -> Result<ReadResult> {
    let schema = array.schema();
    let storage = array.storage();
    let key = array.options().key;
    let n = dims.len();
    // Dimensions from slowest to fastest in the result.
    let order: Vec<usize> = match layout {
        Layout::ColMajor => (0..n).rev().collect(),
        _ => (0..n).collect(),
    };
    let (outer, inner) = (order[0], order[n - 1]);
    let total: u64 = spans.iter().map(|(lo, hi)| (hi - lo + 1) as u64).product();

    let mut dim_cols: Vec<Column> = if with_coordinates {
        schema
            .dimensions
            .iter()
            .map(|d| {
                let mut c = Column::new(&d.name, d.datatype, Some(1), false);
                c.data = memory::zeroed_bytes((total * d.datatype.size()) as usize);
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
            let mut c = Column::new(&a.name, a.datatype, a.cell_val_num, a.nullable);
            if let Some(v) = a.cell_val_num {
                c.data = memory::zeroed_bytes((total * v as u64 * a.datatype.size()) as usize);
            } else if let Some(o) = &mut c.offsets {
                memory::reserve(o, total as usize);
            }
            if let Some(v) = &mut c.validity {
                *v = memory::zeroed_bytes(total as usize);
            }
            c
        })
        .collect();

    // Tile buffers of the previous band, decoded into again.
    let mut pool = TilePool::default();
    // Stored tiles of the bands decoded straight into the result.
    let stored = StoredBuffers::default();
    let outer_dim = &dims[outer];
    let rows = rows_per_band(dims, spans, outer, schema, attributes);
    let mut band_lo = spans[outer].0;
    let mut done_cells: u64 = 0;
    while band_lo <= spans[outer].1 {
        let band_hi = (outer_dim.tile_low(outer_dim.tile_index(band_lo) + rows as i128) - 1)
            .min(spans[outer].1);
        let mut band: Vec<Span> = spans.to_vec();
        band[outer] = (band_lo, band_hi);
        band_lo = band_hi + 1;
        let inner_len = (band[inner].1 - band[inner].0 + 1) as u64;
        let band_cells: u64 = band.iter().map(|(lo, hi)| (hi - lo + 1) as u64).product();
        let lines = band_cells / inner_len;

        // Plan the pieces of every line and the tiles they need.
        let mut needed = vec![BTreeMap::new(); geometry.len()];
        let mut coords = vec![0i128; n];
        let mut plan: Vec<Vec<Piece>> = Vec::with_capacity(lines as usize);
        for line in 0..lines {
            line_coords(line, &band, &order, inner, &mut coords);
            plan.push(line_pieces(
                &mut coords,
                band[inner],
                inner,
                dims,
                geometry,
                &mut needed,
            ));
        }

        let band_start = done_cells;
        done_cells += band_cells;
        let range = |size: u64| (band_start * size) as usize..(done_cells * size) as usize;

        if with_coordinates {
            for (d, col) in dim_cols.iter_mut().enumerate() {
                let size = col.datatype.size() as usize;
                let region = col
                    .data
                    .get_mut(range(size as u64))
                    .ok_or_else(short_tile)?;
                region
                    .par_chunks_mut(inner_len as usize * size)
                    .enumerate()
                    .for_each(|(line, out)| {
                        let mut c = vec![0i128; n];
                        line_coords(line as u64, &band, &order, inner, &mut c);
                        coords_line(out, &c, d, inner, size);
                    });
            }
        }

        // Every piece reads consecutive cells of its tile: fixed-size cells
        // are decoded straight into the result.
        let direct = plan
            .iter()
            .flatten()
            .all(|p| p.source.is_none_or(|(_, _, _, stride)| stride == 1));
        for (col, &a) in attr_cols.iter_mut().zip(attributes) {
            let attr = &schema.attributes[a];
            if let (true, Some(v)) = (direct, attr.cell_val_num) {
                let cell_size = v as u64 * attr.datatype.size();
                if attr.fill.len() as u64 != cell_size {
                    return Err(Error::corrupt(
                        0,
                        "fill",
                        format!("the fill value of {} is not one cell", attr.name),
                    ));
                }
                let region = col.data.get_mut(range(cell_size)).ok_or_else(short_tile)?;
                scatter_band(
                    array,
                    geometry,
                    attr,
                    TilePart::Cells,
                    region,
                    &plan,
                    inner_len,
                    &stored,
                )?;
                if let Some(validity) = &mut col.validity {
                    let region = validity.get_mut(range(1)).ok_or_else(short_tile)?;
                    scatter_band(
                        array,
                        geometry,
                        attr,
                        TilePart::Validity,
                        region,
                        &plan,
                        inner_len,
                        &stored,
                    )?;
                }
                continue;
            }
            if direct && attr.cell_val_num.is_none() {
                if let Some(added) = scatter_var_band(array, geometry, attr, col, &plan, &stored)? {
                    if let Some(validity) = &mut col.validity {
                        let region = validity.get_mut(range(1)).ok_or_else(short_tile)?;
                        scatter_band(
                            array,
                            geometry,
                            attr,
                            TilePart::Validity,
                            region,
                            &plan,
                            inner_len,
                            &stored,
                        )?;
                    }
                    reserve_for_rest(col, added, band_start, band_cells, total);
                    continue;
                }
            }
            // Decode this band's tiles of the attribute.
            let mut tiles: HashMap<(usize, u64), TileData> = HashMap::new();
            for (gi, g) in geometry.iter().enumerate() {
                let wanted: Vec<u64> = needed[gi].keys().copied().collect();
                let wanted_cells: Vec<(u64, u64)> = needed[gi].values().copied().collect();
                if wanted.is_empty() {
                    continue;
                }
                if let Some(&bad) = wanted.iter().find(|t| **t >= g.fragment.tile_num) {
                    return Err(Error::corrupt(
                        0,
                        "tile offsets",
                        format!("fragment {} has no tile {bad}", g.fragment.name),
                    ));
                }
                let Some((fa, _)) = g.fragment.schema.attribute(&attr.name) else {
                    continue;
                };
                let data = load_tiles_pooled(
                    storage,
                    g.fragment,
                    Field::Attribute(fa),
                    TileSelection {
                        tiles: &wanted,
                        cells: Some(&wanted_cells),
                    },
                    g.tiling.cells_per_tile(),
                    key.as_ref(),
                    &mut pool,
                )?;
                for (t, d) in wanted.iter().zip(data) {
                    tiles.insert((gi, *t), d);
                }
            }
            match attr.cell_val_num {
                Some(v) => {
                    let cell_size = (v as u64 * attr.datatype.size()) as usize;
                    if attr.fill.len() != cell_size {
                        return Err(Error::corrupt(
                            0,
                            "fill",
                            format!("the fill value of {} is not one cell", attr.name),
                        ));
                    }
                    let region = col
                        .data
                        .get_mut(range(cell_size as u64))
                        .ok_or_else(short_tile)?;
                    region
                        .par_chunks_mut(inner_len as usize * cell_size)
                        .zip(&plan)
                        .try_for_each(|(out, pieces)| {
                            copy_line(out, pieces, &tiles, cell_size, &attr.fill, false)
                        })?;
                }
                None => {
                    let added = copy_var_band(col, &plan, &tiles, &attr.fill)?;
                    reserve_for_rest(col, added, band_start, band_cells, total);
                }
            }
            if let Some(validity) = &mut col.validity {
                let fill = [u8::from(attr.fill_validity)];
                let region = validity.get_mut(range(1)).ok_or_else(short_tile)?;
                region
                    .par_chunks_mut(inner_len as usize)
                    .zip(&plan)
                    .try_for_each(|(out, pieces)| copy_line(out, pieces, &tiles, 1, &fill, true))?;
            }
            pool.recycle(tiles.into_values());
        }
    }
    Ok(ReadResult {
        dimensions: dim_cols,
        attributes: attr_cols,
    })
}
