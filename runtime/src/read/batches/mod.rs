//! Reads under a memory budget: [`Batches`], an iterator of results whose
//! buffers each hold at most the budget, in the query's result order —
//! what TileDB's incomplete queries give, without resizing buffers.
//!
//! The read is cut into parts that are contiguous in the result order
//! (`plan`: boxes of ranges chosen by the dimensions' coordinates, or
//! space tiles in global order, sized from the cell counts of the
//! subarray (dense) or of the tiles' MBRs (sparse)); each part is read by
//! the whole-result readers, so only one part's tiles and cells are in
//! memory at once, and parts are joined or cut into batches of at most the
//! budget. A part larger than estimated is cut further and read again.
//!
//! One sparse dimension read with overlapping or unsorted ranges in row-
//! or column-major order is cut by positions in the ranges as given when
//! TileDB returns it in range order (its cells from one fragment), by
//! coordinates otherwise (`plan::range_order` finds which first).
//!
//! A string dimension is cut like a number, its strings numbered by their
//! rank among the bounds of the tiles' MBRs and the query's ranges
//! (`strings`): exact however long the start strings share, and with
//! several ranges cut as numbers are (merged first in global and
//! unordered order, as the sparse reader merges them).
//!
//! Hilbert order is cut into runs of Hilbert values: over the bounds each
//! tile's MBR gives its values (`plan`), or, where the MBRs give none (a
//! string dimension), by opening the fragments' tiles in order as a merge
//! does (`hilbert_runs`).

mod estimate;
mod hilbert_runs;
mod key;
mod plan;
mod strings;

use crate::error::{Error, Result};
use crate::read::query::ReadQuery;
use crate::read::result::{Column, ReadResult};
use crate::read::sparse::{read_part, RangeOrder};
use crate::snapshot::Snapshot;

use estimate::result_bytes;
use hilbert_runs::HilbertRuns;
use plan::Plan;

/// The results of a read in batches of at most a budget of bytes, in the
/// query's result order (made by [`batches`]). Each item is the next batch
/// (never empty) or the error that ended the read; after an error the
/// iterator ends.
pub struct Batches<'a> {
    snapshot: &'a Snapshot,
    budget: u64,
    plan: Option<Plan>,
    /// A Hilbert-ordered read the plan cannot cut (its tiles' MBRs do not
    /// bound their Hilbert values): cut into runs of values instead.
    runs: Option<HilbertRuns<'a>>,
    /// Cells read but not yet handed out, joined until the budget.
    pending: Option<ReadResult>,
    /// A part larger than the budget that cannot be cut by coordinates,
    /// handed out in slices: the result and the next cell.
    oversized: Option<(ReadResult, usize)>,
    /// A condition the caller applies to the batches: tiles that cannot
    /// pass it may be left out (see [`crate::read::skip`]).
    prune: Option<crate::condition::QueryCondition>,
}

impl std::fmt::Debug for Batches<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batches")
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

/// Reads `query` in batches whose buffers (values, offsets and validity
/// of every field) hold at most `budget` bytes each. Batches concatenated
/// are what [`read`](crate::read::read) returns for the same query. A
/// budget of 0 is a usage error, and so, when it is met, is a single cell
/// larger than the budget (as TileDB's query stays incomplete when its
/// buffers cannot hold one cell).
pub fn batches<'a>(snapshot: &'a Snapshot, query: &ReadQuery, budget: u64) -> Result<Batches<'a>> {
    if budget == 0 {
        return Err(Error::Usage("a memory budget of 0 bytes".into()));
    }
    let plan = Plan::new(snapshot, query, budget)?;
    let runs = if plan.reads_whole() {
        HilbertRuns::new(snapshot, query)?
    } else {
        None
    };
    Ok(Batches {
        snapshot,
        budget,
        plan: Some(plan),
        runs,
        pending: None,
        oversized: None,
        prune: None,
    })
}

impl Batches<'_> {
    /// Lets the reads leave out tiles no cell of which passes `condition`
    /// (which the caller applies to the batches).
    pub(crate) fn prune_by(&mut self, condition: &crate::condition::QueryCondition) {
        self.prune = Some(condition.clone());
    }
}

impl Iterator for Batches<'_> {
    type Item = Result<ReadResult>;

    fn next(&mut self) -> Option<Result<ReadResult>> {
        match self.advance() {
            Ok(batch) => batch.map(Ok),
            Err(e) => {
                self.finish();
                Some(Err(e))
            }
        }
    }
}

impl Batches<'_> {
    /// Ends the read: the iterator returns nothing more.
    pub fn finish(&mut self) {
        self.plan = None;
        self.runs = None;
        self.pending = None;
        self.oversized = None;
    }

    /// The next batch, `None` at the end.
    fn advance(&mut self) -> Result<Option<ReadResult>> {
        loop {
            if let Some((result, at)) = self.oversized.take() {
                if let Some(pending) = self.pending.take() {
                    self.oversized = Some((result, at));
                    return Ok(Some(pending));
                }
                let end = cells_within(&result, at, self.budget)?;
                let slice = result.slice(at..end);
                if end < result.cell_count() {
                    self.oversized = Some((result, end));
                }
                return Ok(Some(slice));
            }
            // Parts aim at half the budget, so that two join into a batch
            // and an estimate that falls short still fits; sparse parts at
            // an eighth: merging fragments takes several times a part's
            // cells in working memory.
            let target = if self.snapshot.schema().is_dense() {
                self.budget / 2
            } else {
                self.budget / 8
            };
            let Some(plan) = self.plan.as_mut() else {
                return Ok(self.pending.take());
            };
            let prune = crate::read::skip::Prune {
                condition: self.prune.as_ref(),
                answered: None,
                only: None,
            };
            let (result, part) = if let Some(runs) = self.runs.as_mut() {
                // A run is read from the tiles the runs hold, each decoded
                // once (none left out by the condition: the caller applies
                // it to the batches).
                let Some(values) = runs.next_part(self.snapshot, plan.cell_bytes(), target)? else {
                    self.plan = None;
                    return Ok(self.pending.take());
                };
                (runs.read(self.snapshot, values)?, None)
            } else {
                let Some(next) = plan.next_part(target) else {
                    self.plan = None;
                    return Ok(self.pending.take());
                };
                let result = if let Some((values, tiles)) = &next.hilbert {
                    hilbert_part(self.snapshot, &next.query, prune, *values, tiles)?
                } else {
                    match plan.range_order() {
                        RangeOrder::ByFragments => {
                            crate::read::read_pruned(self.snapshot, &next.query, prune)?
                        }
                        order => {
                            let mut result = read_part(self.snapshot, &next.query, prune, order)?;
                            if next.query.skip_coordinates {
                                result.dimensions.clear();
                            }
                            result
                        }
                    }
                };
                (result, next.part)
            };
            plan.cell_bytes().observe(&result);
            let bytes = result_bytes(&result);
            if result.cell_count() == 0 {
                continue;
            }
            if bytes > self.budget {
                if let Some(part) = &part {
                    if plan.split(part) {
                        continue;
                    }
                }
                self.oversized = Some((result, 0));
                continue;
            }
            match self.pending.take() {
                None => self.pending = Some(result),
                Some(mut pending) => {
                    if result_bytes(&pending) + bytes <= self.budget {
                        append_result(&mut pending, result);
                        self.pending = Some(pending);
                    } else {
                        self.pending = Some(result);
                        return Ok(Some(pending));
                    }
                }
            }
        }
    }
}

/// The cells of a part of a Hilbert-ordered read: `query` read in `tiles`
/// only, then the run of cells whose Hilbert values are within `values`
/// (the result is in Hilbert order, so they are one run). A tile left out
/// hides no duplicate of these cells: a newer cell at the same coordinates
/// has the same Hilbert value, so its tile meets `values` too.
fn hilbert_part(
    snapshot: &Snapshot,
    query: &ReadQuery,
    prune: crate::read::skip::Prune<'_>,
    (from, to): (i128, i128),
    tiles: &plan::TileSet,
) -> Result<ReadResult> {
    let prune = crate::read::skip::Prune {
        only: Some(tiles),
        ..prune
    };
    let result = crate::read::sparse::read_part(snapshot, query, prune, RangeOrder::ByFragments)?;
    let order = crate::read::order::GlobalOrder::new(snapshot.schema());
    let value = |i: usize| -> i128 {
        let coords: Vec<crate::schema::Scalar> = result
            .dimensions
            .iter()
            .map(|c| {
                crate::schema::Scalar::decode(c.datatype, c.cell(i).0)
                    .unwrap_or(crate::schema::Scalar::Int(0))
            })
            .collect();
        i128::from(crate::read::order::GlobalOrder::hilbert_of(
            &order.key(&coords),
        ))
    };
    let cells = result.cell_count();
    let first = partition(cells, |i| value(i) < from);
    let end = partition(cells, |i| value(i) <= to);
    let mut part = result.slice(first..end.max(first));
    if query.skip_coordinates {
        part.dimensions.clear();
    }
    Ok(part)
}

/// The first of `0..n` where `before` no longer holds (it holds on a
/// prefix).
fn partition(n: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The end of the batch starting at cell `from` of `result`: as many cells
/// as fit in `budget` bytes; a usage error when the first does not.
fn cells_within(result: &ReadResult, from: usize, budget: u64) -> Result<usize> {
    let columns: Vec<&Column> = result.dimensions.iter().chain(&result.attributes).collect();
    let cell_bytes = |i: usize| -> u64 {
        columns
            .iter()
            .map(|c| {
                let values = match (&c.offsets, c.cell_size()) {
                    (Some(o), _) => o[i + 1].saturating_sub(o[i]) + 8,
                    (None, Some(size)) => size as u64,
                    (None, None) => 0,
                };
                values + u64::from(c.validity.is_some())
            })
            .sum()
    };
    let total = result.cell_count();
    // A var-sized column keeps one offset more than its cells: the end.
    let ends = columns.iter().filter(|c| c.offsets.is_some()).count() as u64 * 8;
    let mut used = ends;
    let mut end = from;
    while end < total {
        let bytes = cell_bytes(end);
        if used + bytes > budget {
            break;
        }
        used += bytes;
        end += 1;
    }
    if end == from && from < total {
        return Err(Error::Usage(format!(
            "a cell of {} bytes is larger than the memory budget of {budget} bytes",
            cell_bytes(from) + ends
        )));
    }
    Ok(end)
}

/// Appends the cells of `part` (the same fields) to `into`.
fn append_result(into: &mut ReadResult, part: ReadResult) {
    let pairs = into
        .dimensions
        .iter_mut()
        .zip(part.dimensions)
        .chain(into.attributes.iter_mut().zip(part.attributes));
    for (col, add) in pairs {
        let base = col.data.len() as u64;
        // Exactly: a large buffer then grows in place (no doubling, no
        // second copy of the batch alive while it moves).
        col.data.reserve_exact(add.data.len());
        col.data.extend_from_slice(&add.data);
        if let (Some(o), Some(add)) = (col.offsets.as_mut(), add.offsets) {
            o.extend(add.iter().skip(1).map(|x| base + x));
        }
        if let (Some(v), Some(add)) = (col.validity.as_mut(), add.validity) {
            v.extend_from_slice(&add);
        }
    }
}
