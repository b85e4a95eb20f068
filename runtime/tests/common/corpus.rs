//! The TileDB 2.30 corpus as the format tests walk it: its case folders in
//! order and the first schema of an array, decoded as the generated
//! `ArraySchema`. Included by path (`#[path = "common/corpus.rs"]`) by the
//! tests that need only this, so they do not link the conformance kit.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use tiledb_runtime::format::generated::ArraySchema;
use tiledb_runtime::format::io::read_exact_from;

/// The folder of the TileDB 2.30 corpus.
pub fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/corpus/tiledb-2.30")
}

/// The entries of `dir`, sorted; none when it cannot be listed.
pub fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    entries.sort();
    entries
}

/// The first schema file of `array` (in name order), decoded; `None` when
/// there is none or it does not decode (an encrypted array's, say).
pub fn first_schema(array: &Path) -> Option<ArraySchema> {
    let file = sorted_entries(&array.join("__schema"))
        .into_iter()
        .find(|p| p.is_file())?;
    let bytes = std::fs::read(file).ok()?;
    let tile = tiledb_runtime::tile::generic::read_generic_tile_exact(&bytes, None).ok()?;
    read_exact_from(&tile.payload, (), "ArraySchema").ok()
}
