//! Writing arrays that TileDB 2.30 reads: array creation (the schema as a
//! generic tile under `__schema/`), fragments (dense and sparse, format 22),
//! commit markers, array metadata and delete commits.
//!
//! Crash safety comes from two rules. Every file appears whole or not at
//! all: [`Storage::write`] is atomic (locally a temporary file, flushed, then
//! renamed into place). And the write order: a fragment's data files, then
//! its `__fragment_metadata.tdb`, then its commit marker
//! `__commits/<name>.wrt`. Readers ignore a fragment folder without a
//! marker, so a write that stops part way leaves the array as it was.

mod field_tiles;
pub mod fragment;
mod fragment_input;
mod fragment_meta;
pub(crate) mod tile_meta;

use crate::directory::{Extension, TimestampedName};
use crate::directory::{ENUMERATIONS_DIR, SCHEMA_DIR};
use crate::error::Result;
use crate::format::generated as stored;
use crate::format::io::write_to_vec;
use crate::schema::ArraySchema;
use crate::storage::{RelPath, Storage};
use crate::tile::generic::write_generic_tile;

pub use fragment::{write_fragment, Column, FragmentInput};

/// The format version this writer produces (TileDB 2.30's): `writes` in `spec/format.toml`.
pub const WRITE_VERSION: u32 = crate::format::generated::WRITE_FORMAT_VERSION;

/// The folders of an array (format 12 and later).
pub const ARRAY_DIRS: [&str; 6] = [
    "__schema",
    "__fragments",
    "__commits",
    "__fragment_meta",
    "__meta",
    "__labels",
];

fn path(text: &str) -> Result<RelPath> {
    RelPath::parse(text)
}

/// Creates an array: its folders and the schema file stamped `timestamp`
/// (milliseconds; 0 means now). Returns the loaded schema as readers see it.
pub fn create_array(
    storage: &dyn Storage,
    schema: &stored::ArraySchema,
    timestamp: u64,
    key: Option<&[u8; 32]>,
) -> Result<ArraySchema> {
    for dir in ARRAY_DIRS {
        storage.create_dir(&path(dir)?)?;
    }
    storage.create_dir(&path(SCHEMA_DIR)?.join(ENUMERATIONS_DIR)?)?;
    write_schema(storage, schema, timestamp, key)
}

/// Writes a schema file (creation or evolution) and returns it loaded.
pub fn write_schema(
    storage: &dyn Storage,
    schema: &stored::ArraySchema,
    timestamp: u64,
    key: Option<&[u8; 32]>,
) -> Result<ArraySchema> {
    let payload = write_to_vec(schema, (), "ArraySchema")?;
    let name = TimestampedName::generate(timestamp, timestamp, None, None)?;
    let tile = write_generic_tile(&payload, schema.version, key)?;
    storage.write(&path(SCHEMA_DIR)?.join(name.as_str())?, &tile)?;
    ArraySchema::from_payload(name.as_str(), &payload)
}

/// Writes an enumeration file `__schema/__enumerations/<path>`.
pub fn write_enumeration(
    storage: &dyn Storage,
    file_name: &str,
    enumeration: &stored::Enumeration,
    key: Option<&[u8; 32]>,
) -> Result<()> {
    let payload = write_to_vec(enumeration, (), "Enumeration")?;
    let tile = write_generic_tile(&payload, WRITE_VERSION, key)?;
    let file = path(SCHEMA_DIR)?.join(ENUMERATIONS_DIR)?.join(file_name)?;
    storage.write(&file, &tile)
}

/// Writes one array metadata file `__meta/__t_t_label` holding `entries`
/// (puts, and deletes with `deleted = true`).
pub fn write_metadata(
    storage: &dyn Storage,
    entries: Vec<stored::MetadataEntry>,
    timestamp: u64,
    key: Option<&[u8; 32]>,
) -> Result<String> {
    let meta = stored::Metadata { entries };
    let payload = write_to_vec(&meta, (), "Metadata")?;
    let tile = write_generic_tile(&payload, WRITE_VERSION, key)?;
    let name = TimestampedName::generate(timestamp, timestamp, None, None)?;
    let dir = path("__meta")?;
    storage.create_dir(&dir)?;
    storage.write(&dir.join(name.as_str())?, &tile)?;
    Ok(name.as_str().to_string())
}

/// Writes a delete commit `__commits/__t_t_label_22.del` whose condition is
/// `condition` (already negated, as TileDB stores it).
pub fn write_delete(
    storage: &dyn Storage,
    condition: stored::AstNode,
    timestamp: u64,
    key: Option<&[u8; 32]>,
) -> Result<String> {
    let commit = stored::DeleteCommit { condition };
    let payload = write_to_vec(&commit, (), "DeleteCommit")?;
    let tile = write_generic_tile(&payload, WRITE_VERSION, key)?;
    let name = TimestampedName::generate(
        timestamp,
        timestamp,
        Some(WRITE_VERSION),
        Some(Extension::Del),
    )?;
    let dir = path("__commits")?;
    storage.create_dir(&dir)?;
    storage.write(&dir.join(name.as_str())?, &tile)?;
    Ok(name.as_str().to_string())
}
