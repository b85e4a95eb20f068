//! TileDB 1.3's files explained (spec/legacy13.toml): a 1.3 generic tile —
//! its header and compressed chunks in file offsets, then its decompressed
//! payload walked as the struct the file holds (the schema, or the fragment
//! metadata behind the library's version). Its data files are not explained
//! yet.

use super::walker::{Span, Walker};
use super::walkers::*;
use crate::error::Result;
use crate::format::generated::Legacy13Compressor;
use crate::schema::legacy13::{is_v13_generic_tile, read_generic_tile};

/// Whether `bytes` is a TileDB 1.3 generic tile and not a modern one.
pub(super) fn is_legacy13_tile(bytes: &[u8], key: Option<&[u8; 32]>) -> bool {
    is_v13_generic_tile(bytes) && crate::tile::generic::read_generic_tile(bytes, 0, key).is_err()
}

/// The 1.3 generic tile that is the whole of `bytes`, its payload walked by `walk`.
pub(super) fn explain_legacy13_tile(
    bytes: &[u8],
    walk: impl FnOnce(&mut Walker<'_>) -> Result<()>,
) -> Result<Span> {
    let payload = read_generic_tile(bytes)?;
    let mut w = Walker::new(bytes, "generic tile (TileDB 1.3)", "file");
    w.enter_group("Legacy13GenericTileHeader", "Legacy13GenericTileHeader");
    let header = walk_legacy13_generic_tile_header(&mut w)?;
    w.leave();
    // An uncompressed body is the payload itself: left to the payload's walk
    // (these bytes stay unexplained in file offsets; TileDB 1.3 compressed
    // its schemas and fragment metadata with GZIP).
    if header.compressor != Legacy13Compressor::NoCompression {
        w.enter_group("Legacy13Chunks", "Legacy13Chunks");
        walk_legacy13_chunks(&mut w)?;
        w.leave();
    }
    let mut tile = w.finish();
    tile.offset = 0;
    tile.size = bytes.len() as u64;
    let mut p = Walker::new(&payload, "payload", "payload");
    walk(&mut p)?;
    let mut payload_span = p.finish();
    payload_span.size = payload.len() as u64;
    tile.children.push(payload_span);
    Ok(tile)
}
