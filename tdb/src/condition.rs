//! The `--where` condition of `tdb read` and `tdb agg`: tiledb-py's `cond=`
//! syntax, checked against the array's schema.

use tiledb_runtime::array::Array;
use tiledb_runtime::condition::QueryCondition;

use crate::Failure;

/// The condition `--where` gives, checked against the array's schema.
pub fn parse_where(array: &Array, text: &str) -> Result<QueryCondition, Failure> {
    QueryCondition::parse(text, array.schema())
        .map_err(|e| Failure::Message(format!("--where: {e}")))
}
