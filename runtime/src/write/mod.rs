//! Writing arrays that TileDB 2.30 reads: array creation (the schema as a
//! generic tile under `__schema/`), fragments (dense and sparse, format 22),
//! commit markers, array and group metadata (`metadata`), delete commits,
//! groups (`group`), schema evolution (`evolve`) and streamed writes cut
//! into fragments at a size limit (`stream`).
//!
//! Crash safety comes from two rules. Every file appears whole or not at
//! all: [`Storage::write`] is atomic (locally a temporary file, flushed, then
//! renamed into place). And the write order: a fragment's data files, then
//! its `__fragment_metadata.tdb`, then its commit marker
//! `__commits/<name>.wrt`. Readers ignore a fragment folder without a
//! marker, so a write that stops part way leaves the array as it was.

#[cfg(feature = "arrow")]
pub mod arrow;
mod cell_order;
mod coordinates;
pub mod evolve;
mod field_tiles;
pub mod fragment;
mod fragment_input;
mod fragment_meta;
mod global_dense;
pub mod group;
mod labels;
pub mod metadata;
mod num_key;
pub mod stream;
mod tile_build;
pub(crate) mod tile_meta;
mod tile_meta_typed;
mod tile_rank;
mod tiling;
mod validate;

use crate::directory::{Extension, TimestampedName};
use crate::directory::{ENUMERATIONS_DIR, SCHEMA_DIR};
use crate::error::{Error, Result};
use crate::format::generated as stored;
use crate::format::io::write_to_vec;
use crate::schema::{ArraySchema, SchemaBuilder};
use crate::storage::{RelPath, Storage};
use crate::tile::generic::write_generic_tile;

use crate::format::generated::{COMMITS_DIR, METADATA_DIR};
pub use coordinates::dense_from_coordinates;
pub use evolve::SchemaEvolution;
pub use fragment::{write_fragment, Column, FragmentInput};
pub use group::{create_group, GroupEdit};
pub use metadata::{write_metadata_changes, MetadataChange};
pub use stream::StreamWriter;
pub use validate::{validate, Write, WriteLayout};

/// The format version this writer produces (TileDB 2.30's): `writes` in `spec/format.toml`.
pub const WRITE_VERSION: u32 = crate::format::generated::WRITE_FORMAT_VERSION;

/// The folders of an array (format 12 and later), from spec/directory.toml.
pub use crate::format::generated::ARRAY_FOLDERS as ARRAY_DIRS;

fn path(text: &str) -> Result<RelPath> {
    RelPath::parse(text)
}

/// Creates an array: its folders and the schema file stamped `timestamp`
/// (milliseconds; 0 means now). Returns the loaded schema as readers see it.
/// Refused, with nothing written, where a schema file already is
/// (`Array::create` in TileDB's `array.cc` refuses any `__schema` folder;
/// the recipe replay writes the enumeration files first).
pub fn create_array(
    storage: &dyn Storage,
    schema: &stored::ArraySchema,
    timestamp: u64,
    key: Option<&[u8; 32]>,
) -> Result<ArraySchema> {
    refuse_existing(storage, &RelPath::root(), false)?;
    create_at(storage, &RelPath::root(), schema, timestamp, key)
}

/// Creates an array from a [`SchemaBuilder`]: the schema checked as TileDB
/// checks it, then, where no array is yet, the folders, the enumeration
/// files, the arrays of the dimension labels and last the schema file.
/// A refusal writes nothing.
pub fn create_array_from(
    storage: &dyn Storage,
    builder: &SchemaBuilder,
    timestamp: u64,
) -> Result<ArraySchema> {
    let built = builder.build()?;
    let key = builder.encryption_key.as_ref();
    refuse_existing(storage, &RelPath::root(), true)?;
    for &dir in ARRAY_DIRS {
        storage.create_dir(&path(dir)?)?;
    }
    storage.create_dir(&path(SCHEMA_DIR)?.join(ENUMERATIONS_DIR)?)?;
    for e in &built.enumerations {
        write_enumeration(storage, &String::from_utf8_lossy(&e.path), e, key)?;
    }
    for (uri, label_schema) in &built.label_arrays {
        let root = RelPath::parse(uri)?;
        refuse_existing(storage, &root, true)?;
        create_at(storage, &root, label_schema, timestamp, key)?;
    }
    let created = write_schema(storage, &built.schema, timestamp, key)?;
    ArraySchema::load(storage, &path(SCHEMA_DIR)?.join(&created.name)?, key)
}

/// TileDB's `is_array` (`object.cc`): a `__schema` folder or a legacy
/// `__array_schema.tdb` file under `root` means an array is there. Unless
/// `folder_counts`, only a schema file in `__schema` counts (the recipe
/// replay writes enumeration files before the schema).
fn refuse_existing(storage: &dyn Storage, root: &RelPath, folder_counts: bool) -> Result<()> {
    let schema_dir = root.join(SCHEMA_DIR)?;
    let exists = if folder_counts {
        storage.kind(&schema_dir)?.is_some()
    } else {
        storage
            .list(&schema_dir)?
            .is_some_and(|entries| entries.iter().any(crate::storage::DirEntry::is_file))
    };
    if exists
        || storage
            .kind(&root.join(crate::directory::ARRAY_SCHEMA_FILE)?)?
            .is_some()
    {
        return Err(Error::Usage(format!(
            "an array already exists at {}",
            storage.describe(root).display()
        )));
    }
    Ok(())
}

fn create_at(
    storage: &dyn Storage,
    root: &RelPath,
    schema: &stored::ArraySchema,
    timestamp: u64,
    key: Option<&[u8; 32]>,
) -> Result<ArraySchema> {
    let under = |dir: &str| root.join(dir);
    let mut at = RelPath::root();
    for c in root.components() {
        at = at.join(c)?;
        storage.create_dir(&at)?;
    }
    for &dir in ARRAY_DIRS {
        storage.create_dir(&under(dir)?)?;
    }
    storage.create_dir(&under(SCHEMA_DIR)?.join(ENUMERATIONS_DIR)?)?;
    let payload = write_to_vec(schema, (), "ArraySchema")?;
    let name = TimestampedName::generate(timestamp, timestamp, None, None)?;
    let tile = write_generic_tile(&payload, schema.version, key)?;
    storage.write(&under(SCHEMA_DIR)?.join(name.as_str())?, &tile)?;
    ArraySchema::from_payload(name.as_str(), &payload)
}

/// Checks `write` as TileDB checks a write query ([`validate`]) and writes
/// its fragment; `None` when it has no cells. Columns named after
/// dimension labels become fragments of the label arrays (dense writes,
/// written first). A refused write writes nothing.
pub fn write_checked(
    storage: &dyn Storage,
    schema: &ArraySchema,
    write: &Write,
    key: Option<&[u8; 32]>,
) -> Result<Option<String>> {
    // Label columns go to the label arrays (checked here, written first).
    let (main, label_fragments) = labels::split_labels(storage, schema, write, key)?;
    let Some(mut checked) = validate::validate_ordered(schema, &main)? else {
        return Ok(None);
    };
    checked.input.key = key.copied();
    labels::write_labels(storage, &label_fragments)?;
    fragment::write_fragment_in_order(
        storage,
        schema,
        &checked.input,
        &checked.columns,
        checked.order,
    )
    .map(Some)
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
    let dir = path(METADATA_DIR)?;
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
    let dir = path(COMMITS_DIR)?;
    storage.create_dir(&dir)?;
    storage.write(&dir.join(name.as_str())?, &tile)?;
    Ok(name.as_str().to_string())
}
