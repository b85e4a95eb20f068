//! The `--where` condition of `tdb read` and `tdb agg`: tiledb-py's `cond=`
//! syntax, checked against the array's schema.

use tiledb_runtime::array::Array;
use tiledb_runtime::condition::QueryCondition;
use tiledb_runtime::read::{ReadQuery, ReadResult};

use crate::Failure;

/// The condition `--where` gives, checked against the array's schema.
pub fn parse_where(array: &Array, text: &str) -> Result<QueryCondition, Failure> {
    QueryCondition::parse(text, array.schema())
        .map_err(|e| Failure::Message(format!("--where: {e}")))
}

/// Runs `query`, under `condition` when one is given.
pub fn read_where(
    array: &Array,
    query: &ReadQuery,
    condition: Option<&QueryCondition>,
) -> tiledb_runtime::error::Result<ReadResult> {
    match condition {
        Some(c) => tiledb_runtime::read::read_where(array.snapshot(), query, c),
        None => array.read(query),
    }
}
