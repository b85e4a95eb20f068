//! The façade over a group: [`Group`], its members and metadata at an open
//! range (loaded by [`crate::metadata::group_contents`] from the folder
//! [`crate::directory::group`] lists).

use std::path::Path;

use crate::error::Result;
use crate::metadata::Metadata;
use crate::snapshot::OpenOptions;
use crate::storage::{LocalStorage, Storage};

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
}
