//! A pure-Rust implementation of the TileDB on-disk array format.
//!
//! The byte layouts come from `spec/` through `tiledb-codegen` (see
//! [`format::generated`]); everything that is behaviour rather than layout —
//! filters, the directory hierarchy, reading and writing — is written here by hand.
//!
//! Reading an array (a corpus array of `tiledb-conformance`: one `INT32`
//! attribute `a` over a `UINT16` dimension `d`, cells 1 to 5 written):
//!
//! ```
//! use tiledb_runtime::array::{Array, OpenOptions};
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../conformance/corpus/tiledb-2.30/dense.attr.int32/array");
//! let array = Array::open_path(path, OpenOptions::default())?; // as of now
//! // Ranges by dimension name in Rust types, checked against the dimension's datatype.
//! let result = array.query().range("d", 1..=2)?.attributes(["a"]).read()?;
//! // Values as a slice of the attribute's type, borrowed from the result.
//! assert_eq!(*result.values::<i32>("a")?, [i32::MIN, i32::MAX]);
//! # Ok::<(), tiledb_runtime::Error>(())
//! ```
//!
//! Underneath, [`read::ReadQuery`] describes a read as bytes (the ranges as
//! the dimension's value bytes); the conformance kit uses it directly.
//!
//! The public API is what a user of the format needs: the façades
//! [`Array`] and [`Group`], the read and write queries, schemas, errors,
//! [`Storage`] and [`LocalStorage`], `check`, consolidation and vacuum, the
//! generated layouts and the loader of each file kind (which the conformance
//! kit, the fuzz targets, `tdb` and the benchmark call). Helpers of one
//! module are `pub(crate)`; `ARCHITECTURE.md` has the map and the layers.
//!
//! Modules by layer (see `ARCHITECTURE.md`): [`storage`] (confined paths,
//! local files); [`filter`], [`tile`] (generic and data tiles), [`column`](mod@column)
//! (the cells of one field, as reads return them and writes take them);
//! [`directory`] (the folder hierarchy), [`schema`] (array schemas, enumerations, TileDB
//! 1.3 schemas), [`condition`] (delete conditions), [`fragment`] (fragment
//! metadata, loaded lazily), [`metadata`] (array and group metadata, group
//! members); [`snapshot`] (an array opened at a time range); [`read`] (dense
//! and sparse reads, dimension labels, typed reads and, with the `arrow`
//! feature, Arrow record batches), [`write`](mod@write), [`vacuum`],
//! [`consolidate`], [`check`]; and the façades [`array::Array`] and
//! [`group::Group`].

#![warn(missing_docs)]

// The layers, bottom to top (ARCHITECTURE.md; `tests/architecture.rs`
// keeps imports pointing down only).
// 0
pub mod error;
pub mod format;
mod memory;
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
pub mod explain;
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
