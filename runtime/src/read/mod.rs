//! Reading cells: a [`ReadQuery`] (ranges per dimension, layout, fields) run
//! against a [`Snapshot`] of an array, producing columnar results.
//!
//! The query and result types (`query`, `result`) sit below both
//! readers (`dense`, [`sparse`]), which load tiles through [`tiles`].
//! [`typed`] is the API in Rust types over them (`Array::query`), and
//! `arrow` (the `arrow` feature) turns results into Arrow record batches.

#[cfg(feature = "arrow")]
pub mod arrow;
pub mod batches;
pub(crate) mod dense;
pub(crate) mod hilbert;
pub mod labels;
mod memory;
pub(crate) mod order;
pub(crate) mod query;
pub(crate) mod result;
pub mod sparse;
pub mod tiles;
pub mod typed;

pub use batches::{batches, Batches};
pub use query::{encode_scalar, Range, ReadQuery, ResultOrder};
pub use result::{Column, ReadResult};
pub use typed::{QueryBuilder, RangeValue, TypedBatches, TypedResult};

use crate::error::Result;
use crate::snapshot::Snapshot;

/// Runs a read: the dense or the sparse reader, by the schema.
pub fn read(snapshot: &Snapshot, query: &ReadQuery) -> Result<ReadResult> {
    let mut result = if snapshot.schema().is_dense() {
        dense::read(snapshot, query)?
    } else {
        sparse::read(snapshot, query)?
    };
    if query.skip_coordinates {
        result.dimensions.clear();
    }
    Ok(result)
}
