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
//! Modules by layer (see `ARCHITECTURE.md`): [`storage`] (confined paths,
//! local files); [`filter`], [`tile`] (generic and data tiles), [`column`]
//! (the cells of one field, as reads return them and writes take them);
//! [`directory`] (the folder hierarchy), [`schema`] (array schemas, enumerations, TileDB
//! 1.3 schemas), [`condition`] (delete conditions), [`fragment`] (fragment
//! metadata, loaded lazily), [`metadata`] (array and group metadata, group
//! members); [`snapshot`] (an array opened at a time range); [`read`] (dense
//! and sparse reads, dimension labels), [`write`], [`vacuum`],
//! [`consolidate`], [`check`]; and the façades [`array::Array`] and
//! [`group::Group`].

// The layers, bottom to top (ARCHITECTURE.md; `tests/architecture.rs`
// keeps imports pointing down only).
// 0
pub mod error;
pub mod format;
// 1
pub mod storage;
// 2
pub mod column;
pub mod filter;
pub mod tile;
// 3
pub mod condition;
pub mod directory;
pub mod fragment;
pub mod metadata;
pub mod schema;
// 4
pub mod snapshot;
// 5
pub mod check;
pub mod consolidate;
pub mod read;
pub mod vacuum;
pub mod write;
// 6
pub mod array;
pub mod group;

pub use array::{Array, OpenOptions};
pub use column::Column;
pub use error::{Cause, Error, ErrorClass, Location, Result};
pub use group::Group;
pub use snapshot::Snapshot;
pub use storage::{LocalStorage, RelPath, Storage};
