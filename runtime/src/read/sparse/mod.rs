//! Sparse reads: find the tiles whose MBR meets the query, decode them,
//! keep the cells inside the ranges, the open time range and every delete
//! condition, resolve duplicates (unless the array allows them) and sort.
//!
//! Fragment consolidation reads through the same path
//! (`read_for_consolidation`): no deduplication and no cell dropped;
//! instead each cell comes with its timestamp and the first delete that
//! removed it, merged with the fragment's own delete metadata.

mod bands;
mod cells;
pub(crate) mod fragment_tiles;
mod held;
mod merge;
pub(crate) mod ranges;
mod sorted;
mod stream;
mod winners;

use crate::error::Result;
use crate::read::query::{ReadQuery, ResultOrder};
use crate::read::result::ReadResult;
use crate::read::skip::Prune;
use crate::read::sparse::bands::{read_in_bands, BAND_CELLS};
pub use crate::read::sparse::bands::{sorted_bands, Band};
pub(crate) use crate::read::sparse::held::{read_run, HeldTiles};
pub(crate) use crate::read::sparse::merge::{result_fragments, RangeOrder};
use crate::read::sparse::merge::{run, run_ordered};
use crate::read::sparse::ranges::merge_string_ranges;
pub(crate) use crate::read::sparse::winners::results_from_one_fragment;
use crate::snapshot::Snapshot;

/// Every cell of every visible fragment as fragment consolidation reads
/// them (TileDB's reader "with timestamps" and without purging deletes): no
/// deduplication, no cell dropped by a delete; instead each cell carries its
/// timestamp and the delete that removed it.
pub(crate) struct TimedCells {
    /// The cells, in global order (equal coordinates newest first).
    pub(crate) result: ReadResult,
    /// Each cell's write timestamp (its `t`, else its fragment's t1).
    pub(crate) timestamps: Vec<u64>,
    /// The delete that removed each cell: its timestamp and its index in
    /// [`Snapshot::conditions`].
    pub(crate) deleted_by: Vec<Option<(u64, u64)>>,
}

/// Runs a sparse read.
pub fn read(array: &Snapshot, query: &ReadQuery) -> Result<ReadResult> {
    read_pruned(array, query, Prune::default())
}

/// [`read`], leaving out the tiles whose metadata shows that no cell
/// passes `prune`'s condition (which the caller applies to what is
/// returned) or that `prune` says the caller already has.
pub(crate) fn read_pruned(
    array: &Snapshot,
    query: &ReadQuery,
    prune: Prune<'_>,
) -> Result<ReadResult> {
    let merged;
    let query = if matches!(query.layout, ResultOrder::Global | ResultOrder::Unordered)
        && query.ranges.iter().any(|r| r.len() > 1)
    {
        let mut q = query.clone();
        for (ranges, dim) in q.ranges.iter_mut().zip(&array.schema().dimensions) {
            if dim.var {
                *ranges = merge_string_ranges(ranges);
            }
        }
        merged = q;
        &merged
    } else {
        query
    };
    read_banded(array, query, BAND_CELLS, prune)
}

/// A part of a read in batches (`read::batches`): [`read_pruned`], with a
/// one-dimensional multi-range row- or column-major part kept in
/// coordinate order when `range_order` says the whole read is (its cells
/// come from several fragments, though the part's may not).
pub(crate) fn read_part(
    array: &Snapshot,
    query: &ReadQuery,
    prune: Prune<'_>,
    range_order: RangeOrder,
) -> Result<ReadResult> {
    if range_order == RangeOrder::ByFragments {
        return read_pruned(array, query, prune);
    }
    run_ordered(array, query, false, prune, range_order).map(|(result, _)| result)
}

/// [`read`] with bands of about `budget` cells instead of the built-in size
/// (see [`sorted_bands`]): the same result, cut where the budget says.
/// Public so that tests can cut a small array into several bands.
pub fn read_with_band_budget(
    array: &Snapshot,
    query: &ReadQuery,
    budget: u64,
) -> Result<ReadResult> {
    read_banded(array, query, budget, Prune::default())
}

fn read_banded(
    array: &Snapshot,
    query: &ReadQuery,
    budget: u64,
    prune: Prune<'_>,
) -> Result<ReadResult> {
    if let Some((outer, bands)) = sorted_bands(array, query, budget)? {
        return read_in_bands(array, query, outer, &bands, prune);
    }
    run(array, query, false, prune).map(|(result, _)| result)
}

/// Reads every cell for consolidation (see [`TimedCells`]).
pub(crate) fn read_for_consolidation(array: &Snapshot) -> Result<TimedCells> {
    let query = ReadQuery {
        layout: ResultOrder::Global,
        ..Default::default()
    };
    let (result, cells) = run(array, &query, true, Prune::default())?;
    Ok(TimedCells {
        result,
        timestamps: cells.iter().map(|c| c.0).collect(),
        deleted_by: cells.into_iter().map(|c| c.1).collect(),
    })
}
