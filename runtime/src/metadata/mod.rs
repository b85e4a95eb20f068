//! Array and group metadata (`__meta/`): key → typed values, applied file by
//! file in time order; a later entry (or deletion) replaces an earlier one.

pub mod group_contents;

use std::collections::BTreeMap;

use crate::column::CellValue;
use crate::directory::TimestampedFile;
use crate::error::{Error, Result};
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

impl MetadataValue {
    /// A value of `datatype` holding `bytes` (little-endian, a whole number
    /// of values). Refused, as TileDB's `put_metadata` refuses it, for the
    /// type `ANY`; and when `bytes` is not a whole number of values.
    pub fn new(datatype: Datatype, bytes: Vec<u8>) -> Result<MetadataValue> {
        if datatype == Datatype::Any {
            return Err(Error::Usage(
                "a metadata value cannot be of type ANY".to_string(),
            ));
        }
        let size = datatype.size().max(1);
        if !(bytes.len() as u64).is_multiple_of(size) {
            return Err(Error::Usage(format!(
                "{} bytes are not a whole number of {} values ({size} bytes each)",
                bytes.len(),
                datatype.name()
            )));
        }
        let value_num = u32::try_from(bytes.len() as u64 / size).map_err(|_| {
            Error::Usage(format!(
                "a metadata value of {} bytes holds more than 2^32 - 1 values",
                bytes.len()
            ))
        })?;
        Ok(MetadataValue {
            datatype,
            value_num,
            bytes,
        })
    }

    /// Numbers typed by `T` (`i32` → `INT32`, `f64` → `FLOAT64`, …).
    pub fn from_values<T: CellValue>(values: &[T]) -> Result<MetadataValue> {
        let mut bytes = Vec::with_capacity(std::mem::size_of_val(values));
        for v in values {
            v.put_le(&mut bytes);
        }
        Self::new(T::DATATYPE, bytes)
    }

    /// A UTF-8 string (`STRING_UTF8`, one value per byte), as tiledb-py
    /// stores a `str`.
    pub fn string(text: &str) -> Result<MetadataValue> {
        Self::new(Datatype::StringUtf8, text.as_bytes().to_vec())
    }

    /// Raw bytes (`BLOB`), as tiledb-py stores `bytes`.
    pub fn blob(bytes: &[u8]) -> Result<MetadataValue> {
        Self::new(Datatype::Blob, bytes.to_vec())
    }
}
