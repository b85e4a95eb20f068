//! Reading cells: a [`ReadQuery`] (ranges per dimension, layout, fields) run
//! against a [`Snapshot`] of an array, producing columnar results.
//!
//! The query and result types (`query`, `result`) sit below both
//! readers (`dense`, [`sparse`]), which load tiles through [`tiles`].
//! [`typed`] is the API in Rust types over them (`Array::query`), and
//! `arrow` (the `arrow` feature) turns results into Arrow record batches.
//! [`conditioned`] reads under a query condition, [`aggregate`] computes
//! TileDB's aggregates.

pub mod aggregate;
#[cfg(feature = "arrow")]
pub mod arrow;
pub mod batches;
pub mod conditioned;
pub(crate) mod dense;
pub(crate) mod hilbert;
pub mod labels;
pub(crate) mod order;
pub(crate) mod query;
pub(crate) mod result;
pub(crate) mod skip;
pub mod sparse;
pub(crate) mod tile_aggregates;
pub mod tiles;
pub mod typed;

pub use aggregate::{Aggregate, AggregateOp, AggregateValue};
pub use batches::{batches, Batches};
pub use conditioned::{batches_where, read_where, BatchesWhere};
pub use query::{encode_scalar, Range, ReadQuery, ResultOrder};
pub use result::{Column, ReadResult};
pub use typed::{QueryBuilder, RangeValue, TypedBatches, TypedResult};

use crate::error::Result;
use crate::snapshot::Snapshot;

/// [`read`], started again on the array opened anew (same storage, same
/// options) when a file the snapshot listed was removed meanwhile by a
/// concurrent vacuum: what a consolidation merged is still there in its
/// consolidated form, so the result is the same. The façades' reads
/// ([`crate::array::Array::read`], [`QueryBuilder::read`]) go through here.
pub fn read_retrying(snapshot: &Snapshot, query: &ReadQuery) -> Result<ReadResult> {
    let mut result = read(snapshot, query);
    let mut attempt = 0;
    while result.as_ref().is_err_and(crate::snapshot::vanished)
        && attempt < crate::snapshot::VANISHED_RETRIES
    {
        attempt += 1;
        let fresh = Snapshot::open_shared(snapshot.shared_storage(), *snapshot.options())?;
        result = read(&fresh, query);
    }
    result
}

/// Runs a read: the dense or the sparse reader, by the schema.
pub fn read(snapshot: &Snapshot, query: &ReadQuery) -> Result<ReadResult> {
    read_pruned(snapshot, query, skip::Prune::default())
}

/// [`read`], free to leave out the cells of the sparse tiles `prune`
/// names, and to read as fill the dense ones (see `skip`).
pub(crate) fn read_pruned(
    snapshot: &Snapshot,
    query: &ReadQuery,
    prune: skip::Prune<'_>,
) -> Result<ReadResult> {
    let mut result = if snapshot.schema().is_dense() {
        dense::read(snapshot, query, prune)?
    } else {
        sparse::read_pruned(snapshot, query, prune)?
    };
    if query.skip_coordinates {
        result.dimensions.clear();
    }
    Ok(result)
}
