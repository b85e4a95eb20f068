//! Tiles as the explainers of every file kind see them: a generic tile (its
//! header and chunk framing in file offsets, then its payload), and the data
//! tiles of a data file down to their chunks and filter metadata. Below
//! `files`, `fragment`, `data` and `text`, which all call it.

use super::origin::{place_in_file, stores_as_is, tile_chunk_places};
use super::walker::{Span, Walker};
use super::walkers::*;
use crate::error::{Error, Result};
use crate::filter::datatype::{bit_width_reduction_kind, positive_delta_kind};
use crate::filter::{Datatype, FilterType};
use crate::format::generated::NEWEST_READ_FORMAT_VERSION;
use crate::tile::generic::read_generic_tile;

/// The generic tile at `offset` of `bytes`: its header and chunk framing in
/// file offsets, then its payload walked by `walk` (in payload offsets).
pub fn explain_generic_tile(
    bytes: &[u8],
    offset: u64,
    key: Option<&[u8; 32]>,
    walk: impl FnOnce(&mut Walker<'_>) -> Result<()>,
) -> Result<Span> {
    let (tile, walked) = explain_generic_tile_partly(bytes, offset, key, walk)?;
    walked.map(|()| tile)
}

/// The generic tile at `offset` as [`explain_generic_tile`] explains it,
/// its payload walked as far as the bytes allow: the tile, and why the walk
/// stopped early if it did (the payload bytes after that stay unexplained).
/// The payload of a tile of a format version newer than any this reader
/// knows is not walked: its layout is unknown.
pub(super) fn explain_generic_tile_partly(
    bytes: &[u8],
    offset: u64,
    key: Option<&[u8; 32]>,
    walk: impl FnOnce(&mut Walker<'_>) -> Result<()>,
) -> Result<(Span, Result<()>)> {
    let decoded = read_generic_tile(bytes, offset, key)?;
    let mut w = Walker::new(&bytes[..decoded.end as usize], "generic tile", "file");
    w.seek(offset);
    w.enter_group("GenericTileHeader", "GenericTileHeader");
    let header = walk_generic_tile_header(&mut w)?;
    w.leave();
    let tile_start = w.pos();
    w.enter_group("Tile", "Tile");
    let framing = walk_tile(&mut w)?;
    w.leave();
    let mut tile = w.finish();
    let as_is = stores_as_is(header.pipeline.filters.iter().map(|f| f.filter_type));
    let places = tile_chunk_places(&framing, tile_start, as_is);
    // A generic tile's payload is bytes (CHAR) to every filter.
    let filters = header.pipeline.filters.iter();
    let stages = metadata_stages(filters.map(|f| (f.filter_type, Datatype::Char)), 0, false);
    explain_chunk_metadata(bytes, &mut tile, &stages);
    tile.offset = offset;
    tile.size = decoded.end - offset;
    let payload = &decoded.payload;
    let mut p = Walker::new(payload, "payload", "payload");
    let walked = if header.version > NEWEST_READ_FORMAT_VERSION {
        Err(Error::unsupported(format!(
            "format version {} is newer than any this reader knows ({NEWEST_READ_FORMAT_VERSION}): \
             the loader refuses it, and the layout of its payload is unknown",
            header.version
        )))
    } else {
        walk(&mut p).map_err(|e| decoded.locate(e))
    };
    let mut payload_span = p.finish();
    payload_span.size = payload.len() as u64;
    place_in_file(&mut payload_span, &places);
    tile.children.push(payload_span);
    Ok((tile, walked))
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

/// One filter of a pipeline as a chunk's metadata holds it: a filter that
/// writes metadata for the field (bit-width reduction and positive delta
/// write none for types they pass through), with the bytes of a value it
/// sees and whether it writes the var-sized string form.
#[derive(Debug, Clone, Copy)]
pub(super) struct MetadataStage {
    filter: FilterType,
    value_size: u64,
    var_strings: bool,
}

/// The stages of `filters` (in write order, each with the datatype it
/// sees) that leave metadata in a chunk of a field at format `version`;
/// `var_strings` when the field's var-sized strings are encoded with their
/// offsets (`FilterPipeline::skips_offsets`).
pub(super) fn metadata_stages(
    filters: impl IntoIterator<Item = (FilterType, Datatype)>,
    version: u32,
    var_strings: bool,
) -> Vec<MetadataStage> {
    filters
        .into_iter()
        .filter_map(|(filter, datatype)| {
            let var_strings = var_strings && filter.var_string_chunk_metadata().is_some();
            let value_size = match filter {
                FilterType::BitWidthReduction => {
                    bit_width_reduction_kind(datatype, version)?.size()
                }
                FilterType::PositiveDelta => positive_delta_kind(datatype, version)?.size(),
                _ => datatype.size() as usize,
            };
            let writes = if var_strings {
                filter.var_string_chunk_metadata()
            } else {
                filter.chunk_metadata()
            };
            writes.map(|_| MetadataStage {
                filter,
                value_size: value_size as u64,
                var_strings,
            })
        })
        .collect()
}

/// Walks each chunk's metadata as the structs its filters wrote
/// (spec/enums.toml: `FilterType.chunk_metadata`): the last filter's at the
/// front, then — for a filter that leaves the earlier metadata after its own
/// — the previous filter's, and so on. A compression or encryption filter
/// encloses the earlier metadata in its data, so nothing follows its struct.
/// A chunk whose metadata the stages do not account for byte for byte stays
/// shown as bytes.
pub(super) fn explain_chunk_metadata(bytes: &[u8], span: &mut Span, stages: &[MetadataStage]) {
    if stages.is_empty() {
        return;
    }
    for child in &mut span.children {
        // A chunk's `metadata` bytes (under `Tile.chunks`).
        if child.name.ends_with("Chunk.metadata") && child.size > 0 {
            let end = (child.offset + child.size) as usize;
            let Some(within) = bytes.get(..end) else {
                continue;
            };
            let mut w = Walker::new(within, "metadata", "file");
            w.seek(child.offset);
            if walk_metadata_stages(&mut w, stages).is_ok() && w.remaining() == 0 {
                child.children = w.finish().children;
            }
        } else {
            explain_chunk_metadata(bytes, child, stages);
        }
    }
}

/// The stages' structs from the last filter back, while bytes remain.
fn walk_metadata_stages(w: &mut Walker<'_>, stages: &[MetadataStage]) -> Result<()> {
    for stage in stages.iter().rev() {
        if w.remaining() == 0 {
            break;
        }
        let name = format!("{} filter metadata", stage.filter.name());
        w.enter_group(&name, &name);
        if stage.var_strings {
            walk_filter_type_var_string_chunk_metadata(w, stage.filter)?;
        } else {
            walk_filter_type_chunk_metadata(w, stage.filter, stage.value_size)?;
        }
        w.leave();
    }
    Ok(())
}
