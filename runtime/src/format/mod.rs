//! Byte layouts of the format: the structures generated from `spec/` and the
//! small bounded I/O helpers they call.
//!
//! `generated/` is written by `cargo run -p tiledb-codegen`; never edit it by
//! hand. Lints that fire on its mechanical shape are allowed here, not in the
//! generated files.

#[rustfmt::skip]
pub mod generated;
pub mod io;
pub mod view;

use crate::error::{Error, Result};

/// An enum value read from a file of format `version` must exist in that
/// version (its `since`/`until` in `spec/enums.toml`): outside them the file
/// is `unsupported` (a writer this library does not know produced it), never
/// corrupt and never accepted. `what` names the enum (`filter type`),
/// `name` and `value` the value read.
pub fn check_in_version(
    what: &str,
    name: &str,
    value: u64,
    (since, until): (Option<u32>, Option<u32>),
    version: u32,
) -> Result<()> {
    let gate = match (since, until) {
        (Some(since), _) if version < since => format!("exists from format version {since}"),
        (_, Some(until)) if version >= until => format!("was removed in format version {until}"),
        _ => return Ok(()),
    };
    Err(Error::unsupported(format!(
        "{what} {name} ({value}) {gate}, but the file is format version {version}"
    )))
}
