//! Metadata puts and deletes, for arrays and groups alike: one batch of
//! changes becomes one `__meta/__t_t_<uuid>` file, as TileDB writes the
//! changes of one open-for-write session when it closes.
//!
//! TileDB's rules (`Array::put_metadata`, `Group::put_metadata`,
//! `Metadata::put` and `Metadata::del`): a key is a C string (so it holds no
//! NUL byte; the empty key is allowed), a value is not of type `ANY` (checked
//! when the [`MetadataValue`] is made), and a later change of the same key in
//! one batch replaces the earlier one. The file appears whole or not at all
//! ([`Storage::write`]), so a batch is committed entirely or not at all.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::format::generated as stored;
use crate::metadata::MetadataValue;
use crate::storage::Storage;

/// One change of metadata.
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataChange {
    /// Sets `key` to a value.
    Put(String, MetadataValue),
    /// Removes `key` (a key that is not there is no error, as in TileDB).
    Delete(String),
}

impl MetadataChange {
    fn key(&self) -> &str {
        match self {
            MetadataChange::Put(k, _) | MetadataChange::Delete(k) => k,
        }
    }
}

/// The stored entries of `changes`, checked: one per key (the last change
/// wins), in key order as TileDB's `std::map` serializes them.
pub fn metadata_entries(changes: &[MetadataChange]) -> Result<Vec<stored::MetadataEntry>> {
    let mut by_key: BTreeMap<&str, &MetadataChange> = BTreeMap::new();
    for change in changes {
        let key = change.key();
        if key.contains('\0') {
            return Err(Error::Usage(format!(
                "the metadata key {key:?} holds a NUL byte (TileDB keys are C strings)"
            )));
        }
        if let MetadataChange::Put(_, value) = change {
            // A value made field by field is checked as `MetadataValue::new` checks it.
            MetadataValue::new(value.datatype, value.bytes.clone())?;
        }
        by_key.insert(key, change);
    }
    Ok(by_key
        .into_iter()
        .map(|(key, change)| match change {
            MetadataChange::Put(_, v) => stored::MetadataEntry {
                key: key.as_bytes().to_vec(),
                deleted: false,
                value_type: v.datatype,
                value_num: v.value_num,
                value: Some(v.bytes.clone()),
            },
            MetadataChange::Delete(_) => stored::MetadataEntry {
                key: key.as_bytes().to_vec(),
                deleted: true,
                value_type: stored::Datatype::Any,
                value_num: 0,
                value: None,
            },
        })
        .collect())
}

/// Checks `changes` and writes them as one metadata file under `__meta/`
/// of the array or group rooted at `storage`, stamped `timestamp`
/// (milliseconds; 0 means now). Returns the file's name, or `None` when
/// there are no changes (TileDB writes no file then). A refused batch
/// writes nothing.
pub fn write_metadata_changes(
    storage: &dyn Storage,
    changes: &[MetadataChange],
    timestamp: u64,
    key: Option<&[u8; 32]>,
) -> Result<Option<String>> {
    let entries = metadata_entries(changes)?;
    if entries.is_empty() {
        return Ok(None);
    }
    super::write_metadata(storage, entries, timestamp, key).map(Some)
}
