//! The file kinds `tdb explain` knows, and how each is walked: which
//! generated walker reads which bytes, and which spans are in file offsets
//! and which in the offsets of an unfiltered payload.

use std::path::Path;

use super::body::Body;
use super::tiles::explain_generic_tile_partly;
use super::walker::{Span, Walker};
use super::walkers::*;
use crate::error::{Error, Result};
use crate::format::generated::{
    Extension, ARRAY_SCHEMA_FILE, COMMITS_DIR, DATA_FILE_SUFFIX, ENUMERATIONS_DIR, FRAGMENTS_DIR,
    FRAGMENT_METADATA_FILE, FRAGMENT_META_DIR, GROUP_DETAILS_DIR, GROUP_FILE, LOCK_FILE,
    METADATA_DIR, SCHEMA_DIR,
};
use crate::storage::{EntryKind, LocalStorage, RelPath, Storage};

/// The kind of a file, from its place in the array or group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum FileKind {
    /// `__schema/<name>` or `__array_schema.tdb`.
    ArraySchema,
    /// `__schema/__enumerations/<name>`.
    Enumeration,
    /// `__meta/<name>` of an array or a group.
    Metadata,
    /// `__group/<name>`.
    GroupDetails,
    /// `__commits/<name>.del`.
    DeleteCommit,
    /// `__commits/<name>.upd`.
    UpdateCommit,
    /// `__fragment_meta/<name>.meta`.
    ConsolidatedFragmentMetadata,
    /// `__fragments/<fragment>/__fragment_metadata.tdb` (format 10 and later):
    /// generic tiles, then the footer that points at them.
    FragmentMetadata,
    /// `__fragments/<fragment>/<field>[_var|_validity].tdb`: filtered data
    /// tiles, one after another.
    DataTiles,
    /// `.vac` and `.ign` files: newline-separated paths.
    TextLines,
    /// `__commits/*.con`: newline-separated commit paths, a `.del` line
    /// followed by its size and the delete commit's whole generic tile.
    ConsolidatedCommits,
    /// An empty marker file (`__commits/*.wrt`, `*.ok`, `__tiledb_group.tdb`).
    Marker,
}

impl FileKind {
    /// The kind of the local file at `path`, or `None` for a kind not explained yet.
    pub fn of(path: &Path) -> Option<FileKind> {
        fn name(p: Option<&Path>) -> Option<&str> {
            p.and_then(Path::file_name).and_then(|n| n.to_str())
        }
        let parent = path.parent();
        Self::named(
            name(Some(path))?,
            name(parent).unwrap_or(""),
            name(parent.and_then(Path::parent)).unwrap_or(""),
            || path.with_file_name(FRAGMENT_METADATA_FILE).is_file(),
        )
    }

    /// The kind of the file `file` of `storage`, or `None` for a kind not explained yet.
    pub fn in_storage(storage: &dyn Storage, file: &RelPath) -> Option<FileKind> {
        let parent = file.parent();
        let beside_metadata = || {
            let metadata = parent.join(FRAGMENT_METADATA_FILE);
            metadata.is_ok_and(|m| matches!(storage.kind(&m), Ok(Some(EntryKind::File))))
        };
        Self::named(
            file.file_name()?,
            parent.file_name().unwrap_or(""),
            parent.parent().file_name().unwrap_or(""),
            beside_metadata,
        )
    }

    /// The kind of a file by its name and its folders' (`""` above the
    /// top); `beside_metadata` tells whether a fragment metadata file lies
    /// beside it (how a data file of a fragment before format 12 is known).
    fn named(
        name: &str,
        parent: &str,
        grandparent: &str,
        beside_metadata: impl FnOnce() -> bool,
    ) -> Option<FileKind> {
        if name.ends_with(Extension::Vac.suffix()) || name.ends_with(Extension::Ign.suffix()) {
            return Some(FileKind::TextLines);
        }
        Some(match parent {
            _ if name == ARRAY_SCHEMA_FILE => FileKind::ArraySchema,
            _ if name == FRAGMENT_METADATA_FILE => FileKind::FragmentMetadata,
            _ if name.ends_with(Extension::Wrt.suffix())
                || name.ends_with(Extension::Ok.suffix())
                || name == GROUP_FILE
                || name == LOCK_FILE =>
            {
                FileKind::Marker
            }
            // A fragment folder: under __fragments/ (v12+), or beside the
            // schema before, known by its metadata file.
            _ if name.ends_with(DATA_FILE_SUFFIX)
                && (grandparent == FRAGMENTS_DIR || beside_metadata()) =>
            {
                FileKind::DataTiles
            }
            ENUMERATIONS_DIR => FileKind::Enumeration,
            SCHEMA_DIR => FileKind::ArraySchema,
            METADATA_DIR => FileKind::Metadata,
            GROUP_DETAILS_DIR => FileKind::GroupDetails,
            COMMITS_DIR if name.ends_with(Extension::Del.suffix()) => FileKind::DeleteCommit,
            COMMITS_DIR if name.ends_with(Extension::Con.suffix()) => FileKind::ConsolidatedCommits,
            COMMITS_DIR if name.ends_with(Extension::Upd.suffix()) => FileKind::UpdateCommit,
            FRAGMENT_META_DIR if name.ends_with(Extension::Meta.suffix()) => {
                FileKind::ConsolidatedFragmentMetadata
            }
            _ => return None,
        })
    }

    /// The spec struct the generic tile's payload holds.
    pub fn payload_struct(self) -> &'static str {
        match self {
            FileKind::ArraySchema => "ArraySchema",
            FileKind::Enumeration => "Enumeration",
            FileKind::Metadata => "Metadata",
            FileKind::GroupDetails => "GroupDetails",
            FileKind::DeleteCommit => "DeleteCommit",
            FileKind::UpdateCommit => "UpdateCommit",
            FileKind::ConsolidatedFragmentMetadata => "ConsolidatedFragmentMetadata",
            FileKind::FragmentMetadata => "FragmentFooter",
            FileKind::DataTiles => "Tile",
            FileKind::Marker => "marker",
            FileKind::TextLines => "text lines",
            FileKind::ConsolidatedCommits => "consolidated commits",
        }
    }
}

/// A file explained: spans over its bytes, and over each unfiltered payload.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Explained {
    /// What the file is.
    pub kind: FileKind,
    /// The spec struct the file (or its generic tile's payload) holds:
    /// `FragmentFooter`, `FragmentMetadataV1V2`, `Legacy13ArraySchema`, ….
    pub layout: &'static str,
    /// The file's size in bytes.
    pub file_size: u64,
    /// The file, in file offsets; payload spans (in payload offsets) hang
    /// under the generic tile whose payload they are.
    pub root: Span,
    /// Why the explanation stopped before the end (a file the loader
    /// refuses, explained as far as its bytes allow): the bytes after that
    /// point are listed as unexplained.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
}

/// How many bytes of one range the spans attribute to fields.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Coverage {
    /// Bytes some field claims.
    pub covered: u64,
    /// Bytes in all.
    pub size: u64,
    /// The ranges no field claims, `[start, end)`.
    pub unexplained: Vec<(u64, u64)>,
}

impl Coverage {
    /// The share covered, as a percentage (100 for an empty range).
    pub fn percent(&self) -> f64 {
        if self.size == 0 {
            100.0
        } else {
            self.covered as f64 * 100.0 / self.size as f64
        }
    }
}

/// The coverage of `[0, size)` by the leaves under `root` in `space` (a
/// root with no parts, such as a payload left unwalked, claims nothing).
pub fn coverage(root: &Span, space: &str, size: u64) -> Coverage {
    let mut leaves = Vec::new();
    for child in &root.children {
        child.leaves(space, &mut leaves);
    }
    leaves.sort_unstable();
    let (mut covered, mut at, mut unexplained) = (0u64, 0u64, Vec::new());
    for (start, end) in leaves {
        let (start, end) = (start.min(size), end.min(size));
        if start > at {
            unexplained.push((at, start));
        }
        if end > at {
            covered += end - start.max(at);
            at = end;
        }
    }
    if at < size {
        unexplained.push((at, size));
    }
    Coverage {
        covered,
        size,
        unexplained,
    }
}

/// Explains the local file at `path` (its bytes `bytes`): [`explain_in`]
/// through a storage rooted three folders above it, which reaches the
/// neighbours the explainers read (`<array>/__fragments/<fragment>/a0.tdb`
/// is explained with its fragment's metadata and its array's schema).
pub fn explain_file(path: &Path, bytes: &[u8], key: Option<&[u8; 32]>) -> Result<Explained> {
    let at = |e: std::io::Error| Error::Usage(format!("{}: {e}", path.display()));
    let full = std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .map_err(at)?;
    let root = full.ancestors().nth(3).or_else(|| full.ancestors().last());
    let root = root.unwrap_or(&full);
    let relative = full.strip_prefix(root).unwrap_or(&full);
    let file = RelPath::parse(&relative.to_string_lossy())?;
    let mut explained = explain_in(&LocalStorage::new(root), &file, bytes, key)?;
    explained.root.name = path.display().to_string();
    Ok(explained)
}

/// Explains the file `file` of `storage` (its bytes `bytes`), reading
/// what else it needs (its fragment's metadata, its array's schema) through
/// the same storage; `key` decrypts an encrypted array's tiles.
pub fn explain_in(
    storage: &dyn Storage,
    file: &RelPath,
    bytes: &[u8],
    key: Option<&[u8; 32]>,
) -> Result<Explained> {
    let kind = FileKind::in_storage(storage, file).ok_or_else(|| {
        Error::unsupported(format!(
            "{}: tdb explain does not know this kind of file yet",
            storage.describe(file).display()
        ))
    })?;
    let body = match kind {
        FileKind::FragmentMetadata => {
            super::fragment::explain_fragment_metadata(storage, file, bytes, key)?
        }
        FileKind::DataTiles => super::data::explain_data_file(storage, file, bytes, key)?,
        FileKind::TextLines | FileKind::ConsolidatedCommits => Body::whole(
            super::text::explain_lines(bytes, key, kind == FileKind::ConsolidatedCommits)?,
            kind.payload_struct(),
        ),
        FileKind::Marker if !bytes.is_empty() => {
            return Err(Error::corrupt(
                0,
                "marker file",
                "a marker file holds no bytes",
            ))
        }
        FileKind::Marker => Body::whole(Vec::new(), kind.payload_struct()),
        FileKind::ArraySchema if super::legacy13::is_legacy13_tile(bytes, key) => {
            let tile = super::legacy13::explain_legacy13_tile(bytes, |p| {
                p.enter_group("Legacy13ArraySchema", "Legacy13ArraySchema");
                walk_legacy13_array_schema(p)?;
                p.leave();
                Ok(())
            })?;
            Body::whole(vec![tile], "Legacy13ArraySchema")
        }
        _ => {
            // Walked as far as the bytes allow: a payload the loader
            // refuses is explained up to the field it stops at.
            let (tile, walked) =
                explain_generic_tile_partly(bytes, 0, key, |p| walk_payload(kind, p))?;
            Body {
                children: vec![tile],
                layout: kind.payload_struct(),
                incomplete: walked.err().map(|e| e.to_string()),
            }
        }
    };
    let name = storage.describe(file).display().to_string();
    let mut root = Span::group(name, "file", 0, bytes.len() as u64);
    root.children = body.children;
    Ok(Explained {
        kind,
        layout: body.layout,
        file_size: bytes.len() as u64,
        root,
        incomplete: body.incomplete,
    })
}

/// Walks a payload of `kind`'s struct.
fn walk_payload(kind: FileKind, p: &mut Walker<'_>) -> Result<()> {
    p.enter_group(kind.payload_struct(), kind.payload_struct());
    match kind {
        FileKind::ArraySchema => walk_array_schema(p).map(drop),
        FileKind::Enumeration => walk_enumeration(p).map(drop),
        FileKind::Metadata => walk_metadata(p).map(drop),
        FileKind::GroupDetails => walk_group_details(p).map(drop),
        FileKind::DeleteCommit => walk_delete_commit(p).map(drop),
        FileKind::UpdateCommit => walk_update_commit(p).map(drop),
        FileKind::ConsolidatedFragmentMetadata => walk_consolidated_fragment_metadata(p).map(drop),
        FileKind::FragmentMetadata
        | FileKind::DataTiles
        | FileKind::Marker
        | FileKind::TextLines
        | FileKind::ConsolidatedCommits => Err(p.unsupported()),
    }?;
    p.leave();
    Ok(())
}
