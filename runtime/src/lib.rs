//! A pure-Rust implementation of the TileDB on-disk array format.
//!
//! The byte layouts come from `spec/` through `tiledb-codegen` (see
//! [`format::generated`]); everything that is behaviour rather than layout —
//! filters, the directory hierarchy, reading and writing — is written here by hand.

pub mod array;
pub mod check;
pub mod error;
pub mod filter;
pub mod format;
pub mod fragment;
pub mod metadata;
pub mod query;
pub mod read;
pub mod schema;
pub mod tile;

pub use error::{Error, ErrorClass, Location, Result};
