//! Dense reads of one box (one range per dimension) in row- or column-major
//! order, without a per-cell plan.
//!
//! The result is cut into bands: the cells whose outermost coordinate (in
//! the result order) falls in one space tile. A band is a contiguous part of
//! every fixed-size result column and needs only the tiles that meet it, so
//! at most one band of tiles is decoded at a time (all of its tiles and
//! chunks in one parallel batch). Inside a band the result is a run of
//! lines (the cells along the innermost dimension); each line is cut into
//! pieces that come from one tile of one fragment, or are fill, and pieces
//! are copied line by line in parallel.

use std::collections::{BTreeSet, HashMap};

use rayon::prelude::*;

use crate::array::Array;
use crate::error::{Error, Result};
use crate::fragment::Field;
use crate::read::dense::Geometry;
use crate::read::dense_geometry::{DenseDimension, Span};
use crate::read::memory;
use crate::read::tiles::{load_tiles_pooled, TileData, TilePool};
use crate::read::{Column, Layout, ReadResult};

/// A run of result cells along a line that share a source.
#[derive(Debug, Clone, Copy)]
struct Piece {
    /// First cell of the piece within its line.
    start: u64,
    count: u64,
    /// Fragment (index into the geometry), tile, first cell position in the
    /// tile and the distance between consecutive cells there; `None` = fill.
    source: Option<(usize, u64, u64, u64)>,
}

/// The coordinates of line `line` of a band: every dimension but `inner`
/// is fixed, counted in the result order (the last of `order` fastest).
fn line_coords(line: u64, band: &[Span], order: &[usize], inner: usize, out: &mut [i128]) {
    let mut rest = line as i128;
    for &d in order.iter().rev() {
        if d == inner {
            out[d] = band[d].0;
            continue;
        }
        let len = band[d].1 - band[d].0 + 1;
        out[d] = band[d].0 + rest % len;
        rest /= len;
    }
}

/// The pieces of one line, newest fragment first wherever they overlap.
fn line_pieces(
    coords: &mut [i128],
    inner_span: Span,
    inner: usize,
    dims: &[DenseDimension],
    geometry: &[Geometry<'_>],
    needed: &mut [BTreeSet<u64>],
) -> Vec<Piece> {
    // The fragments whose non-empty domain holds the line's fixed coordinates.
    let holding: Vec<usize> = (0..geometry.len())
        .filter(|&gi| {
            geometry[gi]
                .ned
                .iter()
                .enumerate()
                .all(|(d, (lo, hi))| d == inner || (*lo <= coords[d] && coords[d] <= *hi))
        })
        .collect();
    let mut cuts = vec![inner_span.0, inner_span.1 + 1];
    let dim = &dims[inner];
    let mut t = dim.tile_low(dim.tile_index(inner_span.0) + 1);
    while t <= inner_span.1 {
        cuts.push(t);
        t += dim.extent;
    }
    for &gi in &holding {
        let (lo, hi) = geometry[gi].ned[inner];
        cuts.extend([lo, hi + 1]);
    }
    cuts.retain(|c| *c >= inner_span.0 && *c <= inner_span.1 + 1);
    cuts.sort_unstable();
    cuts.dedup();
    let mut pieces = Vec::with_capacity(cuts.len());
    for w in cuts.windows(2) {
        let (from, to) = (w[0], w[1]);
        coords[inner] = from;
        let owner = holding.iter().rev().copied().find(|&gi| {
            let (lo, hi) = geometry[gi].ned[inner];
            lo <= from && from <= hi
        });
        let source = owner.map(|gi| {
            let tiling = &geometry[gi].tiling;
            let tile = tiling.tile_position(coords);
            needed[gi].insert(tile);
            (
                gi,
                tile,
                tiling.cell_position(coords),
                tiling.cell_stride(inner),
            )
        });
        pieces.push(Piece {
            start: (from - inner_span.0) as u64,
            count: (to - from) as u64,
            source,
        });
    }
    pieces
}

fn short_tile() -> Error {
    Error::corrupt(0, "tile", "a decoded tile is shorter than its cells")
}

/// Copies the pieces of one line of fixed-size cells into `line`.
fn copy_line(
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
fn coords_line(line: &mut [u8], coords: &[i128], d: usize, inner: usize, size: usize) {
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

/// Reads the box `spans` (one range per dimension) of a dense array.
pub(crate) fn read_box(
    array: &Array,
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
    let outer_dim = &dims[outer];
    let mut band_lo = spans[outer].0;
    let mut done_cells: u64 = 0;
    while band_lo <= spans[outer].1 {
        let band_hi =
            (outer_dim.tile_low(outer_dim.tile_index(band_lo) + 1) - 1).min(spans[outer].1);
        let mut band: Vec<Span> = spans.to_vec();
        band[outer] = (band_lo, band_hi);
        band_lo = band_hi + 1;
        let inner_len = (band[inner].1 - band[inner].0 + 1) as u64;
        let band_cells: u64 = band.iter().map(|(lo, hi)| (hi - lo + 1) as u64).product();
        let lines = band_cells / inner_len;

        // Plan the pieces of every line and the tiles they need.
        let mut needed = vec![BTreeSet::new(); geometry.len()];
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

        for (col, &a) in attr_cols.iter_mut().zip(attributes) {
            let attr = &schema.attributes[a];
            // Decode this band's tiles of the attribute.
            let mut tiles: HashMap<(usize, u64), TileData> = HashMap::new();
            for (gi, g) in geometry.iter().enumerate() {
                let wanted: Vec<u64> = needed[gi].iter().copied().collect();
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
                    &wanted,
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
                    for pieces in &plan {
                        for p in pieces {
                            let tile = p.source.and_then(|(gi, t, pos, stride)| {
                                tiles.get(&(gi, t)).map(|d| (d, pos, stride))
                            });
                            // Consecutive cells of a tile are consecutive bytes:
                            // one copy, and their offsets shifted.
                            if let (Some((tile, pos, 1)), Some(o)) = (tile, &mut col.offsets) {
                                if let Some(starts) = tile
                                    .offsets
                                    .as_deref()
                                    .and_then(|t| t.get(pos as usize..=(pos + p.count) as usize))
                                {
                                    let (first, last) = (starts[0], starts[starts.len() - 1]);
                                    let bytes = usize::try_from(first)
                                        .ok()
                                        .zip(usize::try_from(last).ok())
                                        .and_then(|(a, b)| tile.data.get(a..b))
                                        .ok_or_else(short_tile)?;
                                    let base = col.data.len() as u64;
                                    col.data.extend_from_slice(bytes);
                                    for s in &starts[1..] {
                                        // Offsets past `first` (bytes.get proved the
                                        // span; a smaller one is a broken tile).
                                        let shifted =
                                            s.checked_sub(first).ok_or_else(short_tile)?;
                                        o.push(shifted + base);
                                    }
                                    continue;
                                }
                            }
                            for i in 0..p.count {
                                match tile {
                                    Some((tile, pos, stride)) => {
                                        col.data.extend_from_slice(tile.cell(pos + i * stride))
                                    }
                                    None => col.data.extend_from_slice(&attr.fill),
                                }
                                if let Some(o) = &mut col.offsets {
                                    o.push(col.data.len() as u64);
                                }
                            }
                        }
                    }
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
