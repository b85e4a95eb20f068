//! Where the bytes of an unfiltered payload come from in the file: each
//! payload span gets the file range of the chunk(s) holding it — the exact
//! bytes when the chunk is stored as is (no filter, or checksums only, which
//! leave the data unchanged), else the chunk's filtered data, which the
//! field's bytes are decoded from.

use super::walker::{FileOrigin, Span};
use crate::format::generated::{FilterType, Legacy13Chunks, Tile};

/// One chunk: the payload bytes it unfilters to and the file bytes that
/// hold its (filtered) data.
#[derive(Debug, Clone, Copy)]
pub(super) struct ChunkPlace {
    payload_start: u64,
    payload_len: u64,
    file_start: u64,
    file_len: u64,
    /// The file bytes are the payload bytes themselves.
    as_is: bool,
}

/// Whether a pipeline of these filters stores a chunk's data unchanged.
pub(super) fn stores_as_is(filters: impl IntoIterator<Item = FilterType>) -> bool {
    filters.into_iter().all(|f| {
        matches!(
            f,
            FilterType::None | FilterType::ChecksumMd5 | FilterType::ChecksumSha256
        )
    })
}

/// The chunks of a modern tile whose framing starts at `tile_start` in the
/// file (`Tile.n_chunks`, then per chunk three u32 lengths, the metadata
/// and the data).
pub(super) fn tile_chunk_places(tile: &Tile, tile_start: u64, as_is: bool) -> Vec<ChunkPlace> {
    let (mut file, mut payload) = (tile_start + 8, 0u64);
    tile.chunks
        .iter()
        .map(|chunk| {
            let file_start = file + 12 + chunk.metadata.len() as u64;
            let place = ChunkPlace {
                payload_start: payload,
                payload_len: u64::from(chunk.orig_len),
                file_start,
                file_len: chunk.data.len() as u64,
                as_is,
            };
            file = file_start + place.file_len;
            payload += place.payload_len;
            place
        })
        .collect()
}

/// The chunks of a TileDB 1.3 compressed body starting at `body_start`
/// (`n_chunks`, then per chunk two u64 sizes and the data).
pub(super) fn legacy13_chunk_places(chunks: &Legacy13Chunks, body_start: u64) -> Vec<ChunkPlace> {
    let (mut file, mut payload) = (body_start + 8, 0u64);
    chunks
        .chunks
        .iter()
        .map(|chunk| {
            let place = ChunkPlace {
                payload_start: payload,
                payload_len: chunk.original_size,
                file_start: file + 16,
                file_len: chunk.data.len() as u64,
                as_is: false,
            };
            file = place.file_start + place.file_len;
            payload += place.payload_len;
            place
        })
        .collect()
}

/// An uncompressed body: the payload itself, at `body_start`.
pub(super) fn whole_body_place(body_start: u64, len: u64) -> Vec<ChunkPlace> {
    vec![ChunkPlace {
        payload_start: 0,
        payload_len: len,
        file_start: body_start,
        file_len: len,
        as_is: true,
    }]
}

/// Gives every present payload span under `span` (itself included) the
/// file bytes it comes from.
pub(super) fn place_in_file(span: &mut Span, chunks: &[ChunkPlace]) {
    if span.space == "payload" && span.present {
        span.file = origin(span.offset, span.size, chunks);
    }
    for child in &mut span.children {
        place_in_file(child, chunks);
    }
}

fn origin(offset: u64, size: u64, chunks: &[ChunkPlace]) -> Option<FileOrigin> {
    let end = offset + size.max(1);
    let overlapping: Vec<&ChunkPlace> = chunks
        .iter()
        .filter(|c| c.payload_start < end && offset < c.payload_start + c.payload_len)
        .collect();
    let (first, last) = (overlapping.first()?, overlapping.last()?);
    if overlapping.len() == 1 && first.as_is {
        let start = first.file_start + (offset - first.payload_start);
        return Some(FileOrigin {
            start,
            end: start + size,
            exact: true,
        });
    }
    Some(FileOrigin {
        start: first.file_start,
        end: last.file_start + last.file_len,
        exact: false,
    })
}
