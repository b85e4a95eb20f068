//! `tdb explain`: every byte of a file attributed to a field of spec/.
//!
//! The walkers are generated from spec/ (`walkers.rs`, by tiledb-codegen);
//! this module composes them per file kind: the generic tile envelope (its
//! header and chunk framing, in file offsets), then the unfiltered payload
//! (in payload offsets) walked as the struct the file kind holds.

mod body;
mod data;
mod files;
mod fragment;
mod fragment_folder;
mod legacy13;
mod origin;
mod text;
mod tiles;
pub mod walker;
#[rustfmt::skip]
#[allow(missing_docs)]
pub mod walkers;

pub use files::{coverage, explain_file, explain_in, Coverage, Explained, FileKind};
pub use tiles::explain_generic_tile;
pub use walker::{FieldInfo, FileOrigin, Span, Walker};
