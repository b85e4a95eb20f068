//! The file kinds `tdb explain` knows, and how each is walked: which
//! generated walker reads which bytes, and which spans are in file offsets
//! and which in the offsets of an unfiltered payload.

use std::path::Path;

use super::walker::{Span, Walker};
use super::walkers::*;
use crate::error::{Error, Result};
use crate::format::generated::FilterType;
use crate::tile::generic::read_generic_tile;

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

/// The generic tile at `offset` of `bytes`: its header and chunk framing in
/// file offsets, then its payload walked by `walk` (in payload offsets).
pub fn explain_generic_tile(
    bytes: &[u8],
    offset: u64,
    key: Option<&[u8; 32]>,
    walk: impl FnOnce(&mut Walker<'_>) -> Result<()>,
) -> Result<Span> {
    let decoded = read_generic_tile(bytes, offset, key)?;
    let mut w = Walker::new(&bytes[..decoded.end as usize], "generic tile", "file");
    w.seek(offset);
    w.enter_group("GenericTileHeader", "GenericTileHeader");
    let header = walk_generic_tile_header(&mut w)?;
    w.leave();
    w.enter_group("Tile", "Tile");
    walk_tile(&mut w)?;
    w.leave();
    let mut tile = w.finish();
    if let Some(last) = header.pipeline.filters.last() {
        explain_chunk_metadata(bytes, &mut tile, last.filter_type);
    }
    tile.offset = offset;
    tile.size = decoded.end - offset;
    let payload = &decoded.payload;
    let mut p = Walker::new(payload, "payload", "payload");
    walk(&mut p).map_err(|e| decoded.locate(e))?;
    let mut payload_span = p.finish();
    payload_span.size = payload.len() as u64;
    tile.children.push(payload_span);
    Ok(tile)
}

/// A data file: filtered tiles one after another to the end of the file,
/// each walked down to its chunks' lengths, filter metadata and data, with
/// a summary of the tile (chunks, bytes before and after filtering).
pub(super) fn explain_data_tiles(bytes: &[u8]) -> Result<Vec<Span>> {
    let mut spans = Vec::new();
    let mut pos = 0u64;
    let mut index = 0u64;
    while pos < bytes.len() as u64 {
        let mut w = Walker::new(bytes, "tile", "file");
        w.seek(pos);
        w.enter_group(&format!("tile {index}"), "Tile");
        let tile = walk_tile(&mut w)?;
        w.leave();
        let end = w.pos();
        let mut span = w.finish().children.remove(0);
        let unfiltered: u64 = tile.chunks.iter().map(|c| u64::from(c.orig_len)).sum();
        let metadata: u64 = tile.chunks.iter().map(|c| c.metadata.len() as u64).sum();
        span.value = Some(format!(
            "{} chunk(s); {unfiltered} bytes unfiltered, {} filtered, {metadata} of filter metadata",
            tile.chunks.len(),
            end - pos
        ));
        spans.push(span);
        pos = end;
        index += 1;
    }
    Ok(spans)
}

/// Walks the filter metadata at the front of each chunk's metadata: that of
/// the pipeline's last filter (spec/filter_metadata.toml: each filter
/// prepends its own). A compression or encryption filter carries the earlier
/// filters' metadata inside its data, so its struct is all there is; for any
/// other last filter the metadata stays shown as bytes.
pub fn explain_chunk_metadata(bytes: &[u8], span: &mut Span, last: FilterType) {
    use FilterType as F;
    let walk: fn(&mut Walker<'_>) -> Result<()> = match last {
        // The filters spec/filter_metadata.toml lists for the compression metadata struct.
        F::Gzip
        | F::Zstd
        | F::Lz4
        | F::Rle
        | F::Bzip2
        | F::DoubleDelta
        | F::Delta
        | F::Dictionary => |w| walk_compression_chunk_metadata(w).map(drop),
        F::Aes256Gcm => |w| walk_aes256_gcm_metadata(w).map(drop),
        _ => return,
    };
    for child in &mut span.children {
        // A chunk's `metadata` bytes (under `Tile.chunks`).
        if child.name.ends_with("Chunk.metadata") && child.size > 0 {
            let end = (child.offset + child.size) as usize;
            let Some(within) = bytes.get(..end) else {
                continue;
            };
            let mut w = Walker::new(within, "metadata", "file");
            w.seek(child.offset);
            let name = format!("{} filter metadata", last.name());
            w.enter_group(&name, &name);
            if walk(&mut w).is_ok() && w.remaining() == 0 {
                w.leave();
                child.children = w.finish().children;
            }
        } else {
            explain_chunk_metadata(bytes, child, last);
        }
    }
}
