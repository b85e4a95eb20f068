//! Array and group metadata (`__meta/`): key → typed values, applied file by
//! file in time order; a later entry (or deletion) replaces an earlier one.

pub mod group_contents;

use std::collections::BTreeMap;

use crate::directory::TimestampedFile;
use crate::error::Result;
use crate::filter::{format_conversion, Datatype};
use crate::format::generated as stored;
use crate::storage::Storage;
use crate::tile::generic::{load_generic_tile_file, GenericTile};

/// One metadata value: its type and the raw little-endian values.
#[derive(Debug, Clone, PartialEq)]
pub struct MetadataValue {
    /// The type of each value.
    pub datatype: Datatype,
    /// The number of values.
    pub value_num: u32,
    /// The values, little-endian, `value_num` times the type's size.
    pub bytes: Vec<u8>,
}

/// Metadata, keyed by the key's bytes as text (keys are UTF-8 in practice).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    /// Every live key (deleted keys removed), sorted.
    pub entries: BTreeMap<String, MetadataValue>,
}

/// An array or group metadata file's tile (`__meta/*`): the one loader of
/// metadata files, which the reader ([`Metadata::load`]), `tdb check` and
/// the fuzz targets call.
pub fn parse_metadata_tile(tile: &GenericTile) -> Result<stored::Metadata> {
    tile.parse((), "Metadata")
}

impl Metadata {
    /// Applies `files` in the order given (time order).
    pub fn load(
        storage: &dyn Storage,
        files: &[TimestampedFile],
        key: Option<&[u8; 32]>,
    ) -> Result<Metadata> {
        let mut meta = Metadata::default();
        for file in files {
            let describe = storage.describe(&file.path);
            let tile = load_generic_tile_file(storage, &file.path, key)?;
            let parsed = parse_metadata_tile(&tile).map_err(|e| e.in_file(&describe))?;
            for entry in parsed.entries {
                let name = String::from_utf8_lossy(&entry.key).into_owned();
                if entry.deleted {
                    meta.entries.remove(&name);
                } else {
                    meta.entries.insert(
                        name,
                        MetadataValue {
                            datatype: format_conversion::datatype(entry.value_type)
                                .map_err(|e| e.in_file(&describe))?,
                            value_num: entry.value_num,
                            bytes: entry.value.unwrap_or_default(),
                        },
                    );
                }
            }
        }
        Ok(meta)
    }
}
