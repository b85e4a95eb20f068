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
//! Fixed-size cells are decoded straight into the result: each piece's
//! place is cut out of the result column and handed to its tile, and each
//! tile's chunks are decoded and copied to those places ([`scatter_band`]).
//! No decoded tile is kept, and memory holds the result plus a stored tile
//! (and, for a line that reads its tile across, a decoded one) per thread.
//! Where the line runs along the tile's cell order, a piece is consecutive
//! bytes of a chunk; where it runs across it (a column-major result of
//! row-major tiles), one cell every tile row, taken from the tile decoded
//! into a buffer that stays in cache ([`crate::tile::Across`]).
//!
//! Var-sized cells whose pieces read consecutive cells are sized and placed
//! from the band's offsets tiles first, then scattered the same way
//! ([`scatter_var_band`]). Strings encoded whole (RLE, dictionary) have no
//! offsets tiles: where every piece reads a whole tile, each is sized from
//! the fragment metadata and its tile decoded in its place, strings and
//! offsets ([`scatter_strings_band`]). Otherwise (var-sized cells read
//! across, parts of string tiles) the band's tiles are decoded whole, all
//! tiles and chunks in one parallel batch and of each tile only the chunks
//! holding cells the band reads; the cells are then sized, and copied in
//! parallel into their places.
use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;

use crate::error::{Cause, Error, Result};
use crate::fragment::Field;
use crate::memory;
use crate::read::dense::coordinates;
use crate::read::dense::copy_var::*;
use crate::read::dense::fragments::Geometry;
use crate::read::dense::geometry::{DenseDimension, Span};
use crate::read::dense::pieces::*;
use crate::read::dense::transpose::copy_lines;
use crate::read::query::ResultOrder;
use crate::read::result::{Column, ReadResult};
use crate::read::tiles::{
    load_tiles_pooled, prefetch_tile_parts, StoredBuffers, TileData, TilePart, TilePool,
    TileSelection, TileSource, WantedCells, WantedTiles,
};
use crate::schema::Attribute;
use crate::snapshot::Snapshot;

/// Decodes one band of a fixed-size attribute (its cells, or its
/// validity bytes) straight into the result: every tile's chunks are
/// decoded into a small buffer and their cells copied to where the result
/// wants them (see [`crate::tile::unfilter_tile_scattered`]); a piece that
/// reads its tile across takes one cell every `stride`.
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
        TilePart::VarData | TilePart::Strings => {
            return Err(Error::Usage(
                "var-sized cells are scattered by scatter_var_band or scatter_strings_band".into(),
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
                    TilePart::Cells | TilePart::VarData | TilePart::Strings => fill.clone(),
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

/// One band of a box read: its spans, the pieces of each of its lines, the
/// tiles of each fragment those need (with the cells read from each), and
/// its place in the result.
struct BandPlan {
    spans: Vec<Span>,
    plan: Vec<Vec<Piece>>,
    needed: Vec<BTreeMap<u64, (u64, u64)>>,
    /// Cells per line (along the innermost dimension).
    inner_len: u64,
    /// The band's cells in the result: `start..end`.
    start: u64,
    end: u64,
}

impl BandPlan {
    fn cells(&self) -> u64 {
        self.end - self.start
    }

    /// The band's bytes in a result column of `size`-byte cells.
    fn range(&self, size: u64) -> std::ops::Range<usize> {
        (self.start * size) as usize..(self.end * size) as usize
    }
}

pub(crate) fn read_box(
    array: &Snapshot,
    layout: ResultOrder,
    dims: &[DenseDimension],
    spans: &[Span],
    geometry: &[Geometry<'_>],
    attributes: &[usize],
    with_coordinates: bool,
) -> Result<ReadResult> {
    let schema = array.schema();
    let n = dims.len();
    // Dimensions from slowest to fastest in the result.
    let order: Vec<usize> = match layout {
        ResultOrder::ColMajor => (0..n).rev().collect(),
        _ => (0..n).collect(),
    };
    let outer = order[0];
    let total: u64 = spans.iter().map(|(lo, hi)| (hi - lo + 1) as u64).product();
    let (mut dim_cols, mut attr_cols) = result_columns(array, attributes, total, with_coordinates);

    // Tile buffers of the previous band, decoded into again.
    let mut pool = TilePool::default();
    // Stored tiles of the bands decoded straight into the result.
    let stored = StoredBuffers::default();
    let outer_dim = &dims[outer];
    let rows = rows_per_band(dims, spans, outer, schema, attributes);
    let mut bands: Vec<Vec<Span>> = Vec::new();
    let mut band_lo = spans[outer].0;
    while band_lo <= spans[outer].1 {
        let band_hi = (outer_dim.tile_low(outer_dim.tile_index(band_lo) + rows as i128) - 1)
            .min(spans[outer].1);
        let mut band_spans: Vec<Span> = spans.to_vec();
        band_spans[outer] = (band_lo, band_hi);
        band_lo = band_hi + 1;
        bands.push(band_spans);
    }
    prefetch_read(array, geometry, attributes, &bands, &order, dims);
    let mut done_cells: u64 = 0;
    for band_spans in bands {
        let band = plan_band(band_spans, &order, dims, geometry, done_cells);
        done_cells = band.end;

        if with_coordinates {
            write_coordinates(&mut dim_cols, &band, &order)?;
        }

        // Fixed-size cells are decoded straight into the result, and
        // var-sized ones when every piece reads consecutive cells of its
        // tile.
        let consecutive = consecutive_cells(&band);
        for (col, &a) in attr_cols.iter_mut().zip(attributes) {
            let attr = &schema.attributes[a];
            let direct = consecutive || attr.cell_val_num.is_some();
            if direct && scatter_attribute(array, geometry, attr, col, &band, &stored, total)? {
                continue;
            }
            let tiles = decode_band_tiles(array, geometry, attr, &band, &mut pool)?;
            copy_var_attribute(attr, col, &band, &tiles, total)?;
            pool.recycle(tiles.into_values());
        }
    }
    Ok(ReadResult {
        dimensions: dim_cols,
        attributes: attr_cols,
    })
}

/// The result columns of a box of `total` cells, allocated untouched: the
/// coordinates (when asked for) and the attributes.
fn result_columns(
    array: &Snapshot,
    attributes: &[usize],
    total: u64,
    with_coordinates: bool,
) -> (Vec<Column>, Vec<Column>) {
    let schema = array.schema();
    let dim_cols: Vec<Column> = if with_coordinates {
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
    let attr_cols: Vec<Column> = attributes
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
    (dim_cols, attr_cols)
}

/// Plans the pieces of every line of the band `spans` and the tiles they
/// need; the band starts at cell `start` of the result.
fn plan_band(
    spans: Vec<Span>,
    order: &[usize],
    dims: &[DenseDimension],
    geometry: &[Geometry<'_>],
    start: u64,
) -> BandPlan {
    let inner = order[order.len() - 1];
    let inner_len = (spans[inner].1 - spans[inner].0 + 1) as u64;
    let band_cells: u64 = spans.iter().map(|(lo, hi)| (hi - lo + 1) as u64).product();
    let lines = band_cells / inner_len;
    let mut needed = vec![BTreeMap::new(); geometry.len()];
    let mut coords = vec![0i128; dims.len()];
    let mut plan: Vec<Vec<Piece>> = Vec::with_capacity(lines as usize);
    for line in 0..lines {
        line_coords(line, &spans, order, inner, &mut coords);
        plan.push(line_pieces(
            &mut coords,
            spans[inner],
            inner,
            dims,
            geometry,
            &mut needed,
        ));
    }
    BandPlan {
        spans,
        plan,
        needed,
        inner_len,
        start,
        end: start + band_cells,
    }
}

/// Whether every piece of the band reads consecutive cells of its tile.
fn consecutive_cells(band: &BandPlan) -> bool {
    band.plan
        .iter()
        .flatten()
        .all(|p| p.source.is_none_or(|(_, _, _, stride)| stride == 1))
}

/// Writes the coordinates of the band's cells (see [`coordinates`]).
fn write_coordinates(dim_cols: &mut [Column], band: &BandPlan, order: &[usize]) -> Result<()> {
    for (d, col) in dim_cols.iter_mut().enumerate() {
        let size = col.datatype.size() as usize;
        let region = col
            .data
            .get_mut(band.range(size as u64))
            .ok_or_else(short_tile)?;
        coordinates::write_band(region, &band.spans, order, d, band.inner_len as usize, size);
    }
    Ok(())
}

/// Decodes the band's cells of `attr` straight from the chunks into the
/// result (fixed-size cells always; var-sized ones where the offsets tiles
/// allow): `false` when the band's tiles must be decoded whole instead.
fn scatter_attribute(
    array: &Snapshot,
    geometry: &[Geometry<'_>],
    attr: &Attribute,
    col: &mut Column,
    band: &BandPlan,
    stored: &StoredBuffers,
    total: u64,
) -> Result<bool> {
    prefetch_band(array, geometry, attr, band, true);
    let scatter_validity = |col: &mut Column| -> Result<()> {
        if let Some(validity) = &mut col.validity {
            let region = validity.get_mut(band.range(1)).ok_or_else(short_tile)?;
            scatter_band(
                array,
                geometry,
                attr,
                TilePart::Validity,
                region,
                &band.plan,
                band.inner_len,
                stored,
            )?;
        }
        Ok(())
    };
    match attr.cell_val_num {
        Some(v) => {
            let cell_size = v as u64 * attr.datatype.size();
            if attr.fill.len() as u64 != cell_size {
                return Err(fill_not_one_cell(attr, cell_size));
            }
            let region = col
                .data
                .get_mut(band.range(cell_size))
                .ok_or_else(short_tile)?;
            scatter_band(
                array,
                geometry,
                attr,
                TilePart::Cells,
                region,
                &band.plan,
                band.inner_len,
                stored,
            )?;
            scatter_validity(col)?;
            Ok(true)
        }
        None => {
            let added = match scatter_var_band(array, geometry, attr, col, &band.plan, stored)? {
                Some(added) => added,
                None => match scatter_strings_band(array, geometry, attr, col, &band.plan, stored)?
                {
                    Some(added) => added,
                    None => return Ok(false),
                },
            };
            scatter_validity(col)?;
            reserve_for_rest(col, added, band.start, band.cells(), total);
            Ok(true)
        }
    }
}

/// One fragment's tiles a band needs, and the cells it reads of each
/// (first and last, in the tile's cell order).
type TilesAndCells = (Vec<u64>, Vec<(u64, u64)>);

/// The band's [`TilesAndCells`], per fragment of the geometry.
fn tiles_and_cells(band: &BandPlan) -> Vec<TilesAndCells> {
    band.needed
        .iter()
        .map(|n| n.iter().map(|(t, c)| (*t, *c)).unzip())
        .collect()
}

/// Plans the whole read's tiles with an object store (band after band,
/// attribute after attribute), so that it fetches them ahead across bands,
/// many tiles a request; each band's own prefetch then finds them planned.
/// A band decoded straight into the result ([`scatter_band`]) reads of a
/// fixed-size attribute's plainly stored tiles only the chunks holding its
/// cells: those are what is planned.
fn prefetch_read(
    array: &Snapshot,
    geometry: &[Geometry<'_>],
    attributes: &[usize],
    bands: &[Vec<Span>],
    order: &[usize],
    dims: &[DenseDimension],
) {
    if array.storage().concurrent_reads() == 0 {
        return;
    }
    let schema = array.schema();
    // Per band: per fragment its tiles and their cells read.
    let needed: Vec<Vec<TilesAndCells>> = bands
        .iter()
        .map(|spans| tiles_and_cells(&plan_band(spans.clone(), order, dims, geometry, 0)))
        .collect();
    let (mut ahead, mut cells) = (Vec::new(), Vec::new());
    for band in &needed {
        for &a in attributes {
            let attribute = &schema.attributes[a];
            let in_part = attribute.cell_val_num.is_some();
            for (g, (tiles, taken)) in geometry.iter().zip(band) {
                if let Some((fa, _)) = g.fragment.schema.attribute(&attribute.name) {
                    ahead.push(WantedTiles {
                        fragment: g.fragment,
                        field: Field::Attribute(fa),
                        tiles,
                    });
                    cells.push(in_part.then(|| WantedCells {
                        cells: taken,
                        cells_per_dense_tile: g.tiling.cells_per_tile(),
                    }));
                }
            }
        }
    }
    prefetch_tile_parts(array.storage(), &ahead, &cells);
}

/// Fetches ahead the band's tiles of `attr` in every fragment at once
/// (its cells, var data and validity), which the band then decodes: when
/// `scattered` (decoded straight into the result, [`scatter_band`]), of a
/// fixed-size attribute's plainly stored tiles only the chunks holding the
/// band's cells, as [`prefetch_read`] planned them.
fn prefetch_band(
    array: &Snapshot,
    geometry: &[Geometry<'_>],
    attr: &Attribute,
    band: &BandPlan,
    scattered: bool,
) {
    let needed = tiles_and_cells(band);
    let in_part = scattered && attr.cell_val_num.is_some();
    let (mut ahead, mut cells) = (Vec::new(), Vec::new());
    for (g, (tiles, taken)) in geometry.iter().zip(&needed) {
        if let Some((fa, _)) = g.fragment.schema.attribute(&attr.name) {
            let (fragment, field) = (g.fragment, Field::Attribute(fa));
            ahead.push(WantedTiles {
                fragment,
                field,
                tiles,
            });
            cells.push(in_part.then(|| WantedCells {
                cells: taken,
                cells_per_dense_tile: g.tiling.cells_per_tile(),
            }));
        }
    }
    prefetch_tile_parts(array.storage(), &ahead, &cells);
}

/// Decodes the band's tiles of `attr`, of each tile only the chunks holding
/// cells the band reads, by (fragment, tile).
fn decode_band_tiles(
    array: &Snapshot,
    geometry: &[Geometry<'_>],
    attr: &Attribute,
    band: &BandPlan,
    pool: &mut TilePool,
) -> Result<HashMap<(usize, u64), TileData>> {
    let storage = array.storage();
    let key = array.options().key;
    let mut tiles: HashMap<(usize, u64), TileData> = HashMap::new();
    prefetch_band(array, geometry, attr, band, false);
    for (gi, g) in geometry.iter().enumerate() {
        let wanted: Vec<u64> = band.needed[gi].keys().copied().collect();
        let wanted_cells: Vec<(u64, u64)> = band.needed[gi].values().copied().collect();
        if wanted.is_empty() {
            continue;
        }
        if let Some(&bad) = wanted.iter().find(|t| **t >= g.fragment.tile_num) {
            return Err(crate::read::tiles::no_such_tile(g.fragment, bad));
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
            pool,
        )?;
        for (t, d) in wanted.iter().zip(data) {
            tiles.insert((gi, *t), d);
        }
    }
    Ok(tiles)
}

/// Copies the band's cells of the var-sized `attr` from its decoded tiles
/// (fill where no fragment holds a cell): the cells sized first, then
/// copied in parallel into their places; then validity. Fixed-size cells
/// never come here: they are decoded straight into the result
/// ([`scatter_attribute`]).
fn copy_var_attribute(
    attr: &Attribute,
    col: &mut Column,
    band: &BandPlan,
    tiles: &HashMap<(usize, u64), TileData>,
    total: u64,
) -> Result<()> {
    if attr.cell_val_num.is_some() {
        return Err(Error::Usage(
            "fixed-size cells are decoded straight into the result".into(),
        ));
    }
    let added = copy_var_band(col, &band.plan, tiles, &attr.fill)?;
    reserve_for_rest(col, added, band.start, band.cells(), total);
    if let Some(validity) = &mut col.validity {
        let fill = [u8::from(attr.fill_validity)];
        let region = validity.get_mut(band.range(1)).ok_or_else(short_tile)?;
        copy_lines(region, &band.plan, band.inner_len, tiles, 1, &fill, true)?;
    }
    Ok(())
}

/// An attribute whose fill value is not one cell long.
fn fill_not_one_cell(attr: &crate::schema::Attribute, cell_size: u64) -> Error {
    let cause = Cause::Inconsistent {
        what: "the fill value's byte length (one cell)",
        expected: cell_size,
        found: attr.fill.len() as u64,
    };
    Error::corrupt(0, "fill", cause).within(format!("attribute {}", attr.name))
}
