//! A group's members and metadata at an open range.

use crate::directory::GroupDirectory;

use crate::error::Result;
use crate::format::generated as stored;
use crate::metadata::Metadata;
use crate::storage::Storage;
use crate::tile::generic::{load_generic_tile_file, GenericTile};

/// A member of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// The member's name (its URI when no name was set).
    pub name: String,
    /// The name was given explicitly (else it is derived from the URI).
    pub name_set: bool,
    /// As stored: relative to the group when `relative`.
    pub uri: String,
    /// `uri` is relative to the group's folder (else absolute).
    pub relative: bool,
    /// `true` for an array, `false` for a group.
    pub is_array: bool,
}

/// A group's members and metadata.
#[derive(Debug, Clone, Default)]
pub struct GroupContents {
    /// The members, as the latest details file that lists them leaves them.
    pub members: Vec<GroupMember>,
    /// The group's metadata, merged from its metadata files in time order.
    pub metadata: Metadata,
}

/// A group details file's tile (`__group/*`): the one loader of group
/// details, which the reader ([`GroupContents::load`]), `tdb check` and the
/// fuzz targets call.
pub fn parse_group_details(tile: &GenericTile) -> Result<stored::GroupDetails> {
    tile.parse((), "GroupDetails")
}

impl GroupContents {
    /// Loads the group rooted at `storage` at `[start, end]`: group details
    /// (the latest file for details v1, every file in time order for v2,
    /// where a deleted member removes the entry) and the group metadata.
    pub fn load(
        storage: &dyn Storage,
        start: u64,
        end: u64,
        key: Option<&[u8; 32]>,
    ) -> Result<GroupContents> {
        let dir = GroupDirectory::open(storage, start, end)?;
        let mut members: Vec<GroupMember> = Vec::new();
        for file in dir.details_to_load() {
            let describe = storage.describe(&file.path);
            let tile = load_generic_tile_file(storage, &file.path, key)?;
            let details = parse_group_details(&tile).map_err(|e| e.in_file(&describe))?;
            for m in details.members {
                let uri = String::from_utf8_lossy(&m.uri).into_owned();
                let name = match &m.name {
                    Some(n) if m.name_set => String::from_utf8_lossy(n).into_owned(),
                    _ => uri.clone(),
                };
                members.retain(|x| x.name != name);
                if !m.deleted {
                    members.push(GroupMember {
                        name,
                        name_set: m.name_set,
                        uri,
                        relative: m.relative,
                        is_array: m.object_type == stored::ObjectType::Array,
                    });
                }
            }
        }
        members.sort_by(|a, b| a.name.cmp(&b.name));
        let metadata = Metadata::load(storage, &dir.metadata().files, key)?;
        Ok(GroupContents { members, metadata })
    }
}
