//! The façade over a group: [`Group`], its members and metadata at an open
//! range (loaded by [`crate::metadata::group_contents`] from the folder
//! [`crate::directory::group`] lists).

use std::path::Path;

use crate::error::Result;
use crate::metadata::{Metadata, MetadataValue};
use crate::snapshot::OpenOptions;
use crate::storage::{LocalStorage, Storage};
use crate::write::{GroupEdit, MetadataChange};

pub use crate::metadata::group_contents::{GroupContents, GroupMember};

/// A group opened at a time range.
pub struct Group {
    contents: GroupContents,
}

impl Group {
    /// Opens the group in the local folder `path`.
    pub fn open_path(path: impl AsRef<Path>, options: OpenOptions) -> Result<Group> {
        Self::open(&LocalStorage::new(path.as_ref()), options)
    }

    /// Opens the group at `location`: a local path or an object-store URL
    /// (see [`crate::storage::open_url`]).
    pub fn open_url(
        location: &str,
        config: &[(String, String)],
        options: OpenOptions,
    ) -> Result<Group> {
        Self::open(
            crate::storage::open_url(location, config)?.as_ref(),
            options,
        )
    }

    /// Opens the group rooted at `storage`: its members and metadata at the
    /// open range.
    pub fn open(storage: &dyn Storage, options: OpenOptions) -> Result<Group> {
        let contents = GroupContents::load(
            storage,
            options.timestamp_start,
            options.timestamp_end,
            options.key.as_ref(),
        )?;
        Ok(Group { contents })
    }

    /// The members, by name.
    pub fn members(&self) -> &[GroupMember] {
        &self.contents.members
    }

    /// The group metadata visible at the open range.
    pub fn metadata(&self) -> &Metadata {
        &self.contents.metadata
    }

    /// Members and metadata together.
    pub fn contents(&self) -> &GroupContents {
        &self.contents
    }

    /// Creates an empty group rooted at `storage` (refused where an array
    /// or a group already is; see [`crate::write::create_group`]).
    pub fn create(storage: &dyn Storage) -> Result<()> {
        crate::write::create_group(storage)
    }

    /// Begins a batch of member additions and removals of the group rooted
    /// at `storage`, each checked as TileDB checks it; nothing is written
    /// until [`GroupEdit::commit`].
    pub fn edit<'a>(storage: &'a dyn Storage, options: &OpenOptions) -> Result<GroupEdit<'a>> {
        GroupEdit::begin(storage, options.key)
    }

    /// Writes a batch of group metadata puts and deletes as one file
    /// stamped `timestamp` (milliseconds; 0 means now), checked as TileDB
    /// checks them; a refused batch writes nothing. Returns the file's
    /// name (`None` for no changes).
    pub fn update_metadata(
        storage: &dyn Storage,
        options: &OpenOptions,
        changes: &[MetadataChange],
        timestamp: u64,
    ) -> Result<Option<String>> {
        crate::write::group::require_group(storage)?;
        crate::write::write_metadata_changes(storage, changes, timestamp, options.key.as_ref())
    }

    /// Puts one group metadata value under `key`, now.
    pub fn put_metadata(storage: &dyn Storage, key: &str, value: MetadataValue) -> Result<()> {
        let change = MetadataChange::Put(key.to_string(), value);
        Self::update_metadata(storage, &OpenOptions::default(), &[change], 0).map(drop)
    }

    /// Deletes the group metadata `key`, now.
    pub fn delete_metadata(storage: &dyn Storage, key: &str) -> Result<()> {
        let change = MetadataChange::Delete(key.to_string());
        Self::update_metadata(storage, &OpenOptions::default(), &[change], 0).map(drop)
    }
}
