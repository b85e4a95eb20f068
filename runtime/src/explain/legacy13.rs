//! TileDB 1.3's files explained (spec/legacy13.toml): a 1.3 generic tile —
//! its header and compressed chunks in file offsets, then its decompressed
//! payload walked as the struct the file holds (the schema, or the fragment
//! metadata behind the library's version); and its data files, tile by
//! tile at the offsets the fragment metadata gives, each raw or in 1.3's
//! own chunk framing by the field's compressor.

use super::body::Body;
use super::fragment_folder::{array_dir, beside, file_stem};
use super::origin::{legacy13_chunk_places, place_in_file, whole_body_place};
use super::walker::{Span, Walker};
use super::walkers::*;
use crate::error::{Error, Result};
use crate::format::generated::{
    Legacy13Compressor, Legacy13DataTile, Legacy13FragmentMetadata,
    Legacy13FragmentMetadataBinReadArgs, FRAGMENT_METADATA_FILE,
};
use crate::format::io::read_exact_from;
use crate::schema::legacy13::{is_v13_generic_tile, read_generic_tile};
use crate::schema::{dimension_shapes, ArraySchema};
use crate::storage::{RelPath, Storage, SubStorage};

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
    let body_start = w.pos();
    let places = if header.compressor != Legacy13Compressor::NoCompression {
        w.enter_group("Legacy13Chunks", "Legacy13Chunks");
        let chunks = walk_legacy13_chunks(&mut w)?;
        w.leave();
        legacy13_chunk_places(&chunks, body_start)
    } else {
        whole_body_place(body_start, header.compressed_size)
    };
    let mut tile = w.finish();
    tile.offset = 0;
    tile.size = bytes.len() as u64;
    let mut p = Walker::new(&payload, "payload", "payload");
    walk(&mut p)?;
    let mut payload_span = p.finish();
    payload_span.size = payload.len() as u64;
    place_in_file(&mut payload_span, &places);
    tile.children.push(payload_span);
    Ok(tile)
}

/// A data file of a TileDB 1.3 fragment (known by its fragment metadata, a
/// 1.3 generic tile), or `None` for any other data file. Its tiles start
/// at the field's `tile_offsets`; each is the field's cells, raw when the
/// field is not compressed, else `Legacy13Chunks` (no header: the schema
/// gives the compressor).
pub(super) fn explain_legacy13_data_file(
    storage: &dyn Storage,
    file: &RelPath,
    bytes: &[u8],
) -> Result<Option<Body>> {
    let Ok(metadata) = beside(file, FRAGMENT_METADATA_FILE).and_then(|m| storage.read(&m)) else {
        return Ok(None);
    };
    if !is_legacy13_tile(&metadata, None) {
        return Ok(None);
    }
    let usage = || {
        Error::Usage(format!(
            "{}: a TileDB 1.3 data file is explained inside its array (…/<fragment>/)",
            storage.describe(file).display()
        ))
    };
    let array = array_dir(file).ok_or_else(usage)?;
    let schema = ArraySchema::load(
        &SubStorage::new(storage, array),
        &ArraySchema::path_for(None)?,
        None,
    )?;
    let fragment: Legacy13FragmentMetadata = read_exact_from(
        &read_generic_tile(&metadata)?,
        Legacy13FragmentMetadataBinReadArgs::builder()
            .num_attributes(schema.attributes.len() as u64)
            .dims(dimension_shapes(&schema.stored))
            .finalize(),
        "Legacy13FragmentMetadata",
    )?;
    // `<attribute>.tdb` (its fixed cells or var offsets), `<attribute>_var.tdb`, `__coords.tdb`.
    let stem = file_stem(file).ok_or_else(usage)?;
    let (field, var) = match stem.strip_suffix("_var") {
        Some(field) => (field, true),
        None => (stem, false),
    };
    let metadata = &fragment.metadata;
    let (offsets, compressed) = if field == "__coords" {
        (
            metadata.tile_offsets.last(),
            !schema.coords_filters.filters.is_empty(),
        )
    } else {
        let index = schema
            .attributes
            .iter()
            .position(|a| a.name == field)
            .ok_or_else(usage)?;
        let attribute = &schema.attributes[index];
        if var {
            let compressed = !attribute.filters.filters.is_empty();
            (metadata.tile_var_offsets.get(index), compressed)
        } else if attribute.cell_size().is_none() {
            let compressed = !schema.offsets_filters.filters.is_empty();
            (metadata.tile_offsets.get(index), compressed)
        } else {
            let compressed = !attribute.filters.filters.is_empty();
            (metadata.tile_offsets.get(index), compressed)
        }
    };
    let offsets = offsets.map(|list| list.values.as_slice()).unwrap_or(&[]);
    let mut spans = Vec::new();
    for (i, &start) in offsets.iter().enumerate() {
        let end = offsets.get(i + 1).copied().unwrap_or(bytes.len() as u64);
        let window = bytes
            .get(..end as usize)
            .filter(|_| start <= end)
            .ok_or_else(|| {
                Error::corrupt(
                    start,
                    "FragmentMetadataV1V2.tile_offsets",
                    format!(
                        "tile {i} ends at {end}, past the file's {} bytes",
                        bytes.len()
                    ),
                )
            })?;
        let mut w = Walker::new(window, "tile", "file");
        w.seek(start);
        w.enter_group(&format!("tile {i} (TileDB 1.3)"), "Legacy13DataTile");
        if compressed {
            w.enter_group("Legacy13Chunks", "Legacy13Chunks");
            walk_legacy13_chunks(&mut w)?;
            w.leave();
        } else {
            let _: Legacy13DataTile = walk_legacy13_data_tile(&mut w)?;
        }
        w.leave();
        if w.remaining() > 0 {
            return Err(Error::corrupt(
                w.pos(),
                "Legacy13Chunks",
                format!("{} bytes before the next tile", w.remaining()),
            ));
        }
        spans.extend(w.finish().children);
    }
    Ok(Some(Body::whole(spans, "Legacy13DataTile")))
}
