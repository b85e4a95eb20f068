//! The orders a plan cuts in ways of their own: Hilbert order (one digit,
//! the Hilbert value) and one sparse dimension read with overlapping or
//! unsorted ranges (range order or coordinate order, as TileDB chooses).

use crate::error::Result;
use crate::filter::Datatype;
use crate::read::batches::estimate::{CellBytes, SparseTiles};
use crate::read::batches::key::Scale;
use crate::read::query::{ReadQuery, ResultOrder};
use crate::read::sparse::{result_fragments, results_from_one_fragment, RangeOrder};
use crate::schema::ArraySchema;
use crate::snapshot::Snapshot;

use super::{Axis, Digit, Plan, Unit};

/// The order of a one-dimensional sparse row- or column-major read of
/// overlapping or unsorted ranges, as TileDB chooses it for the whole read
/// (`sparse::merge`): range order when its results (duplicates resolved,
/// deleted cells counted) all come from one fragment, coordinate order —
/// each cell once per range holding it — otherwise. A part cannot tell on
/// its own, so the fragments are found first, by a streaming pass over the
/// touched tiles' coordinates (`sparse::results_from_one_fragment`), about
/// `chunk_bytes` of them decoded at a time per fragment, merged in the
/// global order (Hilbert order included). Should a fragment's cells be
/// found out of that order (not as TileDB writes them), the coordinates
/// are read in parts in coordinate order until a second fragment shows.
pub(super) fn range_order(
    snapshot: &Snapshot,
    query: &ReadQuery,
    axes: &[Option<Axis>],
    digits: &[Digit],
    chunk_bytes: u64,
) -> Result<RangeOrder> {
    crate::read::sparse::ranges::load_rtrees(snapshot);
    match results_from_one_fragment(snapshot, query, chunk_bytes)? {
        Some(true) => return Ok(RangeOrder::ByFragments),
        Some(false) => return Ok(RangeOrder::Coordinates),
        None => {}
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
        for name in result_fragments(snapshot, &part.query)? {
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
