//! The orders a plan cuts in ways of their own: Hilbert order (one digit,
//! the Hilbert value) and one sparse dimension read with overlapping or
//! unsorted ranges (range order or coordinate order, as TileDB chooses).

use crate::error::Result;
use crate::filter::Datatype;
use crate::read::batches::estimate::{CellBytes, SparseTiles};
use crate::read::batches::key::Scale;
use crate::read::query::{decode_ranges, ReadQuery, ResultOrder};
use crate::read::sparse::{result_fragments, RangeOrder};
use crate::schema::ArraySchema;
use crate::snapshot::Snapshot;

use super::{Axis, Digit, Plan, TileSet, Unit};

/// The order of a one-dimensional sparse row- or column-major read of
/// overlapping or unsorted ranges, as TileDB chooses it for the whole read
/// (`sparse::merge`): range order when its results (duplicates resolved,
/// deleted cells counted) all come from one fragment, coordinate order —
/// each cell once per range holding it — otherwise. A part cannot tell on
/// its own, so the fragments are found first: from the tiles the ranges
/// touch when at most one fragment has any; else from the coordinates of
/// the fragments other than the largest, when few and none in the ranges;
/// else by reading the coordinates in parts in coordinate order until a
/// second fragment shows.
pub(super) fn range_order(
    snapshot: &Snapshot,
    query: &ReadQuery,
    axes: &[Option<Axis>],
    digits: &[Digit],
) -> Result<RangeOrder> {
    let ranges = decode_ranges(snapshot.schema(), query)?;
    // Per fragment whose tiles the ranges touch: its tiles and their cells.
    let mut touched = Vec::new();
    crate::read::sparse::ranges::load_rtrees(snapshot);
    for fragment in snapshot.fragments() {
        if fragment.dense || fragment.non_empty_domain.is_none() {
            continue;
        }
        let tiles = crate::read::sparse::ranges::touched_tiles(snapshot, fragment, &ranges)?;
        if !tiles.is_empty() {
            let cells: u64 = tiles.iter().map(|&t| fragment.cell_num(t, 0)).sum();
            touched.push((fragment, tiles, cells));
        }
    }
    if touched.len() <= 1 {
        return Ok(RangeOrder::ByFragments);
    }
    // The fragments other than the largest, when small: if none of their
    // cells is in the ranges, every result comes from the largest (a
    // fragment whose tiles merely meet the ranges, the common case), found
    // without reading the largest. (Deduplication among them never leaves
    // none of their cells, so none found means none there.)
    let largest = (0..touched.len())
        .max_by_key(|&i| touched[i].2)
        .unwrap_or(0);
    let others: u64 = touched.iter().map(|t| t.2).sum::<u64>() - touched[largest].2;
    if others <= SCAN_OTHER_CELLS {
        let only: TileSet = touched
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != largest)
            .flat_map(|(_, (fragment, tiles, _))| tiles.iter().map(|&t| (fragment.path.clone(), t)))
            .collect();
        let coordinates = ReadQuery {
            attributes: Some(Vec::new()),
            ..query.clone()
        };
        if result_fragments(snapshot, &coordinates, Some(&only))?.is_empty() {
            return Ok(RangeOrder::ByFragments);
        }
    }
    // Coordinates only: the fragments are all that is wanted.
    let base = ReadQuery {
        attributes: Some(Vec::new()),
        ..query.clone()
    };
    let mut scan = Plan {
        cell_bytes: CellBytes::new(snapshot, &base)?,
        base,
        axes: axes.to_vec(),
        digits: digits.to_vec(),
        dense: false,
        tile_digits: 0,
        cell_layout: ResultOrder::RowMajor,
        sparse: Some(SparseTiles::new(snapshot, query)?),
        stack: Vec::new(),
        whole: None,
        range_order: RangeOrder::Coordinates,
        hilbert: false,
    };
    scan.stack.extend(scan.first_part());
    let mut seen = Vec::new();
    while let Some(part) = scan.next_part(SCAN_PART_BYTES) {
        for name in result_fragments(snapshot, &part.query, None)? {
            if !seen.contains(&name) {
                seen.push(name);
            }
        }
        if seen.len() > 1 {
            return Ok(RangeOrder::Coordinates);
        }
    }
    Ok(RangeOrder::ByFragments)
}

/// A Hilbert-ordered sparse read's tiles, axis and digit: one digit, the
/// Hilbert value of the cells (TileDB's global order: Hilbert values, ties
/// in row-major order), over the bounds each tile's MBR gives its values.
/// A part is then the cells of some values, in the tiles whose bounds
/// meet them. No digit (the read whole) when the values cannot be bounded
/// (a string dimension, a tile without an MBR).
pub(super) fn hilbert_plan(
    schema: &ArraySchema,
    sparse: Option<SparseTiles>,
) -> (Option<SparseTiles>, Vec<Option<Axis>>, Vec<Digit>) {
    let Some(tiles) = sparse.and_then(|s| s.hilbert(schema)) else {
        return (None, Vec::new(), Vec::new());
    };
    let n = schema.dimensions.len() as u32;
    let value_bits = n * crate::read::hilbert::bits_per_dim(n as usize);
    let axis = Axis {
        spans: vec![(0, (1i128 << value_bits) - 1)],
        low: 0,
        extent: 1,
        datatype: Datatype::Uint64,
        scale: Scale::Int,
        float_tiles: None,
        strings: None,
    };
    let digit = Digit {
        dim: 0,
        unit: Unit::Value,
    };
    (Some(tiles), vec![Some(axis)], vec![digit])
}

/// The estimated bytes of the parts read to find the fragments a
/// multi-range read's results come from (`range_order`): small, since the
/// merge holds each candidate cell with its coordinates (about 32,000
/// cells of one coordinate).
const SCAN_PART_BYTES: u64 = 256 << 10;

/// The most cells of the fragments other than the largest that
/// `range_order` reads to find that none is in the ranges (their
/// candidates are held at once).
const SCAN_OTHER_CELLS: u64 = 64 << 10;
