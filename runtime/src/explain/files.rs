//! The file kinds `tdb explain` knows, and how each is walked: which
//! generated walker reads which bytes, and which spans are in file offsets
//! and which in the offsets of an unfiltered payload.

use std::path::Path;

use super::tiles::explain_generic_tile;
use super::walker::{Span, Walker};
use super::walkers::*;
use crate::error::{Error, Result};

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
    /// The kind of the file at `path`, or `None` for a kind not explained yet.
    pub fn of(path: &Path) -> Option<FileKind> {
        let name = path.file_name()?.to_str()?;
        let parent = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|p| p.to_str())
            .unwrap_or("");
        if name.ends_with(".vac") || name.ends_with(".ign") {
            return Some(FileKind::TextLines);
        }
        let grandparent = path
            .parent()
            .and_then(|p| p.parent())
            .and_then(|p| p.file_name())
            .and_then(|p| p.to_str())
            .unwrap_or("");
        Some(match parent {
            _ if name == "__array_schema.tdb" => FileKind::ArraySchema,
            _ if name == "__fragment_metadata.tdb" => FileKind::FragmentMetadata,
            _ if name.ends_with(".wrt")
                || name.ends_with(".ok")
                || name == "__tiledb_group.tdb"
                || name == "__lock.tdb" =>
            {
                FileKind::Marker
            }
            // A fragment folder: under __fragments/ (v12+), or beside the
            // schema before, known by its metadata file.
            _ if name.ends_with(".tdb")
                && (grandparent == "__fragments"
                    || path.with_file_name("__fragment_metadata.tdb").is_file()) =>
            {
                FileKind::DataTiles
            }
            "__enumerations" => FileKind::Enumeration,
            "__schema" => FileKind::ArraySchema,
            "__meta" => FileKind::Metadata,
            "__group" => FileKind::GroupDetails,
            "__commits" if name.ends_with(".del") => FileKind::DeleteCommit,
            "__commits" if name.ends_with(".con") => FileKind::ConsolidatedCommits,
            "__commits" if name.ends_with(".upd") => FileKind::UpdateCommit,
            "__fragment_meta" if name.ends_with(".meta") => FileKind::ConsolidatedFragmentMetadata,
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
    /// The file's size in bytes.
    pub file_size: u64,
    /// The file, in file offsets; payload spans (in payload offsets) hang
    /// under the generic tile whose payload they are.
    pub root: Span,
}

impl Explained {
    /// The spec struct the file holds, for a one-line summary: its kind's
    /// payload struct, except for fragment metadata of formats 1-2 and of
    /// TileDB 1.3, whose one generic tile holds an older layout, not a footer.
    pub fn payload_struct(&self) -> &'static str {
        // TileDB 1.3's layout holds the v1-v2 one: looked for first.
        const OLDER_LAYOUTS: [&str; 2] = ["Legacy13FragmentMetadata", "FragmentMetadataV1V2"];
        fn holds(span: &Span, spec_type: &str) -> bool {
            span.spec_type == spec_type || span.children.iter().any(|c| holds(c, spec_type))
        }
        if self.kind == FileKind::FragmentMetadata {
            if let Some(layout) = OLDER_LAYOUTS.iter().find(|l| holds(&self.root, l)) {
                return layout;
            }
        }
        self.kind.payload_struct()
    }
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

/// The coverage of `[0, size)` by the leaves of `root` in `space`.
pub fn coverage(root: &Span, space: &str, size: u64) -> Coverage {
    let mut leaves = Vec::new();
    root.leaves(space, &mut leaves);
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

/// Explains the file at `path` (its bytes `bytes`); `key` decrypts an encrypted array's tiles.
pub fn explain_file(path: &Path, bytes: &[u8], key: Option<&[u8; 32]>) -> Result<Explained> {
    let kind = FileKind::of(path).ok_or_else(|| {
        Error::unsupported(format!(
            "{}: tdb explain does not know this kind of file yet",
            path.display()
        ))
    })?;
    let mut root = Span::group(path.display().to_string(), "file", 0, bytes.len() as u64);
    if kind == FileKind::FragmentMetadata {
        root.children = super::fragment::explain_fragment_metadata(path, bytes, key)?;
    } else if kind == FileKind::DataTiles {
        root.children = super::data::explain_data_file(path, bytes, key)?;
    } else if matches!(kind, FileKind::TextLines | FileKind::ConsolidatedCommits) {
        root.children =
            super::text::explain_lines(bytes, key, kind == FileKind::ConsolidatedCommits)?;
    } else if kind == FileKind::Marker {
        if !bytes.is_empty() {
            return Err(Error::corrupt(
                0,
                "marker file",
                "a marker file holds no bytes",
            ));
        }
    } else if kind == FileKind::ArraySchema && super::legacy13::is_legacy13_tile(bytes, key) {
        root.children
            .push(super::legacy13::explain_legacy13_tile(bytes, |p| {
                p.enter_group("Legacy13ArraySchema", "Legacy13ArraySchema");
                walk_legacy13_array_schema(p)?;
                p.leave();
                Ok(())
            })?);
    } else {
        root.children.push(explain_generic_tile(bytes, 0, key, |p| {
            walk_payload(kind, p)
        })?);
    }
    Ok(Explained {
        kind,
        file_size: bytes.len() as u64,
        root,
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
