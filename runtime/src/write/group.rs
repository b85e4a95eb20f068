//! Writing groups: creating one, and editing its members.
//!
//! A group is `__tiledb_group.tdb` (empty), `__meta/` and `__group/`. An
//! edit is a batch of additions and removals checked as TileDB's
//! `GroupDetails::mark_member_for_addition` / `mark_member_for_removal`
//! check them, committed as one details file `__group/__t_t_<uuid>_2`
//! (group-details version 2) holding only the changes, the last change of
//! each member first-come in reverse, as TileDB's `members_to_serialize`
//! writes them. That one file appears whole or not at all, so an edit is
//! committed entirely or not at all.

use std::collections::BTreeSet;

use crate::directory::group::{object_type_at, GROUP_DETAILS_DIR, GROUP_FILE};
use crate::directory::{ObjectType, TimestampedName, METADATA_DIR};
use crate::error::{Error, Result};
use crate::format::generated as stored;
use crate::format::io::write_to_vec;
use crate::metadata::group_contents::{GroupContents, GroupMember};
use crate::storage::{RelPath, Storage};
use crate::tile::generic::write_generic_tile;

use super::WRITE_VERSION;

/// The group-details version this writer produces (TileDB 2.30's).
const DETAILS_VERSION: u32 = crate::format::generated::GROUP_DETAILS_WRITE_VERSION as u32;

fn usage(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}

/// Creates an empty group rooted at `storage`. Refused, with nothing
/// written, where an array or a group already is (TileDB's `Group::create`
/// refuses an existing group; an array there would be shadowed, so we
/// refuse it too). The folders come first and `__group/` last: before it
/// exists the folder is no TileDB object (unless the marker file is
/// there, which makes an empty group), so a creation cut short leaves
/// nothing a reader takes for a half-made group.
pub fn create_group(storage: &dyn Storage) -> Result<()> {
    let root = RelPath::root();
    match object_type_at(storage, &root)? {
        ObjectType::Invalid => {}
        found => {
            return Err(usage(format!(
                "cannot create a group at {}: {} is already there",
                storage.describe(&root).display(),
                if found == ObjectType::Array {
                    "an array"
                } else {
                    "a group"
                }
            )))
        }
    }
    storage.create_dir(&root)?;
    storage.create_dir(&root.join(METADATA_DIR)?)?;
    storage.write(&root.join(GROUP_FILE)?, &[])?;
    storage.create_dir(&root.join(GROUP_DETAILS_DIR)?)
}

/// Fails unless a group is rooted at `storage`.
pub fn require_group(storage: &dyn Storage) -> Result<()> {
    match object_type_at(storage, &RelPath::root())? {
        ObjectType::Group => Ok(()),
        _ => Err(usage(format!(
            "{} is not a group",
            storage.describe(&RelPath::root()).display()
        ))),
    }
}

/// A batch of member additions and removals of one group, checked as each
/// is asked for and written by [`GroupEdit::commit`].
pub struct GroupEdit<'a> {
    storage: &'a dyn Storage,
    key: Option<[u8; 32]>,
    /// The details version the commit writes: 2, or 1 for a group at version 1.
    details_version: u32,
    /// The members committed when the edit began.
    current: Vec<GroupMember>,
    changes: Vec<stored::GroupMember>,
    keys_added: BTreeSet<String>,
    keys_removed: BTreeSet<String>,
}

/// A member's key: its name when it has one, else its URI (TileDB's
/// `GroupMember::key`).
fn key_of(member: &stored::GroupMember) -> String {
    match &member.name {
        Some(name) if member.name_set => String::from_utf8_lossy(name).into_owned(),
        _ => String::from_utf8_lossy(&member.uri).into_owned(),
    }
}

impl<'a> GroupEdit<'a> {
    /// Begins an edit of the group rooted at `storage`, its members as
    /// committed now.
    pub fn begin(storage: &'a dyn Storage, key: Option<[u8; 32]>) -> Result<GroupEdit<'a>> {
        require_group(storage)?;
        let dir = crate::directory::GroupDirectory::open(storage, 0, u64::MAX)?;
        // A group whose latest details are version 1 stays at version 1, as
        // TileDB keeps it: each commit lists every member.
        let details_version = if dir.latest_is_version_1() {
            1
        } else {
            DETAILS_VERSION
        };
        let current = GroupContents::load(storage, 0, u64::MAX, key.as_ref())?.members;
        Ok(GroupEdit {
            storage,
            key,
            details_version,
            current,
            changes: Vec::new(),
            keys_added: BTreeSet::new(),
            keys_removed: BTreeSet::new(),
        })
    }

    /// Adds the member at `uri` relative to the group's folder (it must
    /// stay inside it), named `name` or, without one, known by its URI. It
    /// must be an array or a group.
    pub fn add_relative(&mut self, uri: &str, name: Option<&str>) -> Result<&mut Self> {
        let at = RelPath::parse(uri).map_err(|e| {
            usage(format!(
                "cannot add group member {uri}: a relative member must be a path inside the group ({e})"
            ))
        })?;
        let found = object_type_at(self.storage, &at)?;
        self.add(uri, true, name, found)
    }

    /// Adds the member at the absolute `uri` (stored as given), whose
    /// folder `member` is rooted at: it must be an array or a group.
    pub fn add_absolute(
        &mut self,
        uri: &str,
        name: Option<&str>,
        member: &dyn Storage,
    ) -> Result<&mut Self> {
        if uri.is_empty() {
            return Err(usage("cannot add group member: an empty URI"));
        }
        let found = object_type_at(member, &RelPath::root())?;
        self.add(uri, false, name, found)
    }

    fn add(
        &mut self,
        uri: &str,
        relative: bool,
        name: Option<&str>,
        found: ObjectType,
    ) -> Result<&mut Self> {
        let object_type = match found {
            ObjectType::Array => stored::ObjectType::Array,
            ObjectType::Group => stored::ObjectType::Group,
            ObjectType::Invalid => {
                return Err(usage(format!(
                    "cannot add group member {uri}: it is neither an array nor a group (the member likely does not exist)"
                )))
            }
        };
        let member = stored::GroupMember {
            version: DETAILS_VERSION,
            object_type,
            relative,
            uri: uri.as_bytes().to_vec(),
            name_set: name.is_some(),
            name: name.map(|n| n.as_bytes().to_vec()),
            deleted: false,
        };
        let key = key_of(&member);
        if !self.keys_added.insert(key.clone()) {
            return Err(usage(format!(
                "cannot add group member {key}: a member with the same name or URI has already been added"
            )));
        }
        self.changes.push(member);
        Ok(self)
    }

    /// Removes the member named `name_or_uri`, or else the one member
    /// whose stored URI it is (refused when several members share it).
    pub fn remove(&mut self, name_or_uri: &str) -> Result<&mut Self> {
        let found = match self.current.iter().find(|m| m.name == name_or_uri) {
            Some(m) => m,
            None => {
                let by_uri: Vec<&GroupMember> = self
                    .current
                    .iter()
                    .filter(|m| m.uri == name_or_uri)
                    .collect();
                match by_uri[..] {
                    [m] => m,
                    [] => {
                        return Err(usage(format!(
                            "cannot remove group member {name_or_uri}: no such member in the group"
                        )))
                    }
                    _ => {
                        return Err(usage(format!(
                            "cannot remove group member {name_or_uri}: several members have this URI, remove them by name"
                        )))
                    }
                }
            }
        };
        let member = stored::GroupMember {
            version: DETAILS_VERSION,
            object_type: if found.is_array {
                stored::ObjectType::Array
            } else {
                stored::ObjectType::Group
            },
            relative: found.relative,
            uri: found.uri.as_bytes().to_vec(),
            name_set: found.name_set,
            name: found.name_set.then(|| found.name.as_bytes().to_vec()),
            deleted: true,
        };
        let key = key_of(&member);
        if self.keys_added.contains(&key) {
            return Err(usage(format!(
                "cannot remove group member {key}: a member with the same name or URI has already been added"
            )));
        }
        if !self.keys_removed.insert(key.clone()) {
            return Err(usage(format!(
                "cannot remove group member {key}: it has already been removed"
            )));
        }
        self.changes.push(member);
        Ok(self)
    }

    /// Version 1: the members as the changes leave them, each a version-1
    /// member (TileDB's `GroupDetailsV1::members_to_serialize`).
    fn every_member_after(&self) -> Vec<stored::GroupMember> {
        let mut members: Vec<stored::GroupMember> = self
            .current
            .iter()
            .map(|m| stored::GroupMember {
                version: 1,
                object_type: if m.is_array {
                    stored::ObjectType::Array
                } else {
                    stored::ObjectType::Group
                },
                relative: m.relative,
                uri: m.uri.as_bytes().to_vec(),
                name_set: m.name_set,
                name: m.name_set.then(|| m.name.as_bytes().to_vec()),
                deleted: false,
            })
            .collect();
        for change in &self.changes {
            let key = key_of(change);
            members.retain(|m| key_of(m) != key);
            if !change.deleted {
                members.push(stored::GroupMember {
                    version: 1,
                    deleted: false,
                    ..change.clone()
                });
            }
        }
        members
    }

    /// Writes the changes as one details file stamped `timestamp`
    /// (milliseconds; 0 means now) and returns its name; `None`, writing
    /// nothing, when there are none.
    pub fn commit(self, timestamp: u64) -> Result<Option<String>> {
        if self.changes.is_empty() {
            return Ok(None);
        }
        let members = if self.details_version == 1 {
            self.every_member_after()
        } else {
            let mut seen = BTreeSet::new();
            let mut members = Vec::new();
            for m in self.changes.iter().rev() {
                if seen.insert(key_of(m)) {
                    members.push(m.clone());
                }
            }
            members
        };
        let details = stored::GroupDetails {
            version: self.details_version,
            members,
        };
        let payload = write_to_vec(&details, (), "GroupDetails")?;
        let tile = write_generic_tile(&payload, WRITE_VERSION, self.key.as_ref())?;
        let name =
            TimestampedName::generate(timestamp, timestamp, Some(self.details_version), None)?;
        let dir = RelPath::root().join(GROUP_DETAILS_DIR)?;
        self.storage.create_dir(&dir)?;
        self.storage.write(&dir.join(name.as_str())?, &tile)?;
        Ok(Some(name.as_str().to_string()))
    }
}
