//! Byte layouts of the format: the structures generated from `spec/` and the
//! small bounded I/O helpers they call.
//!
//! `generated/` is written by `cargo run -p tiledb-codegen`; never edit it by
//! hand. Lints that fire on its mechanical shape are allowed here, not in the
//! generated files.

#[rustfmt::skip]
pub mod generated;
pub mod io;
