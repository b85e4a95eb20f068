//! A pure-Rust implementation of the TileDB on-disk array format.
//!
//! The byte layouts come from `spec/` through `tiledb-codegen` (see
//! [`format::generated`]); everything that is behaviour rather than layout —
//! filters, the directory hierarchy, reading and writing — is written here by hand.
//!
//! Reading an array:
//!
//! ```no_run
//! use tiledb_runtime::array::{Array, OpenOptions};
//! use tiledb_runtime::read::{Layout, ReadQuery};
//!
//! // Open as of time 25 (milliseconds); `OpenOptions::default()` opens now.
//! let options = OpenOptions { timestamp_end: 25, ..OpenOptions::default() };
//! let array = Array::open_path("path/to/array", options)?;
//! let query = ReadQuery {
//!     // One list of inclusive ranges per dimension (empty = everything), as
//!     // the dimension's value bytes.
//!     ranges: vec![vec![(1i32.to_le_bytes().to_vec(), 8i32.to_le_bytes().to_vec())]],
//!     layout: Layout::Global,
//!     attributes: None, // every attribute
//!     ..Default::default()
//! };
//! let result = array.read(&query)?;
//! for column in result.dimensions.iter().chain(&result.attributes) {
//!     let (bytes, valid) = column.cell(0);
//!     println!("{}: {bytes:?} valid={valid}", column.name);
//! }
//! # Ok::<(), tiledb_runtime::Error>(())
//! ```
//!
//! Modules by format part: [`tile::generic`] (generic tiles), [`schema`]
//! (array schemas, enumerations, TileDB 1.3 schemas), [`fragment`] (fragment
//! metadata, loaded lazily), [`query`] (delete conditions), [`read`] (dense
//! and sparse reads, dimension labels), [`metadata`] (array and group
//! metadata, group members), [`array`](mod@array) (the folder hierarchy and [`array::Array`]).

pub mod array;
pub mod check;
pub mod consolidate;
pub mod error;
pub mod filter;
pub mod format;
pub mod fragment;
pub mod metadata;
pub mod query;
pub mod read;
pub mod schema;
pub mod tile;
pub mod vacuum;
pub mod write;

pub use error::{Error, ErrorClass, Location, Result};
