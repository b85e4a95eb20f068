//! Groups, and telling an array from a group.
//!
//! ```text
//! G/__tiledb_group.tdb      empty marker (every version)
//! G/__group/<ts>[_<gv>]     group details files (generic tiles)
//! G/__meta/<ts>[.vac]       group metadata, like array metadata
//! ```
//!
//! Details files carry the group-details version as their suffix (`_1` or
//! `_2`); version-1 files written before TileDB 2.19 have none. If the latest
//! details file is version 1, it alone describes the members; from version 2
//! every details file in the open range is applied in time order (later files
//! add members or mark them deleted).

use crate::directory::listing::list_checked;
use crate::directory::timestamped_name::NameForm;
use crate::directory::{
    TimestampedFile, TimestampedSet, ARRAY_SCHEMA_FILE, METADATA_DIR, SCHEMA_DIR,
};
use crate::error::{Cause, Error, Result};
use crate::storage::{EntryKind, RelPath, Storage};

pub(crate) use crate::format::generated::{GROUP_DETAILS_DIR, GROUP_FILE};

/// The folders a group owns.
pub use crate::format::generated::GROUP_FOLDERS as GROUP_DIR_NAMES;

/// What a folder holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectType {
    /// A TileDB array: it has a schema.
    Array,
    /// A TileDB group: it has a group file or `__group` folder.
    Group,
    /// Neither: not a TileDB object.
    Invalid,
}

/// An array if `__schema/` is a folder or `__array_schema.tdb` a file;
/// otherwise a group if `__group/` is a folder or `__tiledb_group.tdb` a file.
pub fn object_type(storage: &dyn Storage) -> Result<ObjectType> {
    object_type_at(storage, &RelPath::root())
}

/// [`object_type`] of the folder `root` inside `storage` (a group member).
pub fn object_type_at(storage: &dyn Storage, root: &RelPath) -> Result<ObjectType> {
    let root = root.clone();
    if storage.kind(&root)? != Some(EntryKind::Dir) {
        return Ok(ObjectType::Invalid);
    }
    let is = |name: &str, kind: EntryKind| -> Result<bool> {
        Ok(storage.kind(&root.join(name)?)? == Some(kind))
    };
    if is(SCHEMA_DIR, EntryKind::Dir)? || is(ARRAY_SCHEMA_FILE, EntryKind::File)? {
        return Ok(ObjectType::Array);
    }
    if is(GROUP_DETAILS_DIR, EntryKind::Dir)? || is(GROUP_FILE, EntryKind::File)? {
        return Ok(ObjectType::Group);
    }
    Ok(ObjectType::Invalid)
}

/// Where a group member lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberLocation {
    /// Inside the group's folder (a member stored with `relative = 1`).
    Inside(RelPath),
    /// Any URI (a member stored with `relative = 0`). It is not opened
    /// through the group's storage; the caller decides whether to follow it.
    External(String),
}

/// Resolves a member URI read from a details file. A relative member must
/// stay inside the group: absolute paths and `..` are errors (class corrupt).
pub fn resolve_member(uri: &str, relative: bool) -> Result<MemberLocation> {
    if relative {
        RelPath::parse(uri)
            .map(MemberLocation::Inside)
            .map_err(|e| e.within("group member"))
    } else if uri.is_empty() {
        let what = "the member URI";
        Err(Error::corrupt(0, "group member", Cause::Empty { what }))
    } else {
        Ok(MemberLocation::External(uri.to_owned()))
    }
}

/// The files of a group at one open range.
#[derive(Debug, Clone)]
pub struct GroupDirectory {
    has_group_file: bool,
    details: TimestampedSet,
    metadata: TimestampedSet,
}

impl GroupDirectory {
    /// Lists the group in `storage` (rooted at the group folder).
    pub fn open(storage: &dyn Storage, timestamp_start: u64, timestamp_end: u64) -> Result<Self> {
        if timestamp_start > timestamp_end {
            return Err(Error::Usage(format!(
                "open range start {timestamp_start} is after its end {timestamp_end}"
            )));
        }
        let root = RelPath::root();
        let entries = list_checked(storage, &root, GROUP_DIR_NAMES)?.ok_or_else(|| Error::Io {
            file: storage.describe(&root),
            kind: std::io::ErrorKind::NotFound,
            message: "no such folder".into(),
        })?;
        let has_group_file = entries.iter().any(|e| e.name == GROUP_FILE);
        let has_details_dir = entries
            .iter()
            .any(|e| e.is_dir() && e.name == GROUP_DETAILS_DIR);
        if !has_group_file && !has_details_dir {
            return Err(Error::Usage(format!(
                "{}: not a group (no {GROUP_FILE} and no {GROUP_DETAILS_DIR}/)",
                storage.describe(&root).display()
            )));
        }
        let has_meta_dir = entries.iter().any(|e| e.is_dir() && e.name == METADATA_DIR);
        let details = if has_details_dir {
            TimestampedSet::load(
                storage,
                &root.join(GROUP_DETAILS_DIR)?,
                GROUP_DIR_NAMES,
                &[GROUP_DETAILS_DIR],
                timestamp_start,
                timestamp_end,
            )?
        } else {
            TimestampedSet::default()
        };
        let metadata = if has_meta_dir {
            TimestampedSet::load(
                storage,
                &root.join(METADATA_DIR)?,
                GROUP_DIR_NAMES,
                &[METADATA_DIR],
                timestamp_start,
                timestamp_end,
            )?
        } else {
            TimestampedSet::default()
        };
        Ok(GroupDirectory {
            has_group_file,
            details,
            metadata,
        })
    }

    /// Whether the legacy marker `__tiledb_group.tdb` is present.
    pub fn has_group_file(&self) -> bool {
        self.has_group_file
    }

    /// Every details file in the open range, in time order.
    pub fn details_files(&self) -> &[TimestampedFile] {
        &self.details.files
    }

    /// The newest details file in range.
    pub fn latest_details(&self) -> Option<&TimestampedFile> {
        self.details.files.last()
    }

    /// The details files that describe the members: the latest alone when it
    /// is group-details version 1 (no suffix, or `_1`), else all in range.
    pub fn details_to_load(&self) -> &[TimestampedFile] {
        let files = &self.details.files;
        match files.split_last() {
            Some((latest, _)) if is_details_v1(latest) => std::slice::from_ref(latest),
            _ => files,
        }
    }

    /// The newest details file in range is group-details version 1 (which a
    /// version-2 file after it cannot extend).
    pub fn latest_is_version_1(&self) -> bool {
        self.details.files.last().is_some_and(is_details_v1)
    }

    /// Group metadata files to apply, in time order, `.vac` applied.
    pub fn metadata(&self) -> &TimestampedSet {
        &self.metadata
    }
}

fn is_details_v1(file: &TimestampedFile) -> bool {
    match file.name.form() {
        NameForm::Range => true,
        NameForm::Versioned => file.name.version() == Some(1),
        NameForm::UuidTimestamp => false,
    }
}
