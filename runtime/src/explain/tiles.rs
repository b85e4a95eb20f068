//! Tiles as the explainers of every file kind see them: a generic tile (its
//! header and chunk framing in file offsets, then its payload), and the data
//! tiles of a data file down to their chunks and filter metadata. Below
//! `files`, `fragment`, `data` and `text`, which all call it.

use super::walker::{Span, Walker};
use super::walkers::*;
use crate::error::Result;
use crate::format::generated::FilterType;
use crate::tile::generic::read_generic_tile;

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
