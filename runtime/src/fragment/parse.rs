//! The parsers of fragment metadata pieces, shared by the lazy
//! [`FragmentMetadata`] and the whole-file [`FragmentMetadataFile`]: the
//! footer, tile offset tables, the R-tree, processed conditions, the
//! footers of consolidated `.meta` files; and the schemas footers name.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::{Cause, Error, Result};
use crate::format::generated as stored;
use crate::format::io::read_prefix;
use crate::schema::{dimension_shapes, split_range, ArraySchema};
use crate::storage::{RelPath, Storage};
use crate::tile::generic::{load_generic_tile_file, GenericTile};

use super::Rectangle;

/// Parses a footer at the front of `bytes`, against the schema its head
/// names (the field counts come from it); returns it and its length.
pub fn parse_footer(bytes: &[u8], schema: &ArraySchema) -> Result<(stored::FragmentFooter, u64)> {
    let dims = dimension_shapes(&schema.stored);
    let (footer, used): (stored::FragmentFooter, u64) = read_prefix(
        bytes,
        stored::FragmentFooterBinReadArgs::builder()
            .num_attributes(schema.attributes.len() as u64)
            .dims(dims)
            .finalize(),
        "FragmentFooter",
    )?;
    global_order_bounds(&footer)?;
    Ok((footer, used))
}

/// The footer's global-order tile bounds (section TILE_GLOBAL_ORDER_BOUNDS,
/// format 23 on), if it has them: the offsets of the generic tiles holding
/// each dimension's first and last coordinate of every tile. The generated
/// footer already typed each section by its id (an open switch: ids this
/// version does not know stay bytes and are skipped, as TileDB skips them;
/// a bounds section whose size is not 16 bytes per dimension failed there);
/// here a known id is checked against the versions that may carry it.
pub fn global_order_bounds(
    footer: &stored::FragmentFooter,
) -> Result<Option<stored::GlobalOrderBoundsSection>> {
    let mut found = None;
    for section in footer.sections.iter().flatten() {
        let Some(id) = stored::FragmentSectionId::from_value(section.id) else {
            continue;
        };
        crate::format::check_in_version(
            "footer section",
            id.name(),
            section.id,
            (id.since(), id.until()),
            footer.version,
        )?;
        // Sections the runtime has no use for are skipped like unknown ones
        // (a new section id needs no code here).
        if let Some(bounds) = bounds_of(section) {
            found = Some(bounds.clone());
        }
    }
    Ok(found)
}

/// The global-order bounds a section holds, if the open switch on its id
/// typed it as such. Every other id, known or not, holds something else;
/// not matching them by name keeps a new section id free of Rust edits.
fn bounds_of(section: &stored::FooterSection) -> Option<&stored::GlobalOrderBoundsSection> {
    if let stored::FooterSectionData::GlobalOrderBoundsSection(bounds) = &section.data {
        Some(bounds)
    } else {
        None
    }
}

/// The schema name a footer names (v10+), from its first bytes.
pub fn footer_schema_name(bytes: &[u8]) -> Result<Option<String>> {
    let (head, _): (stored::FragmentFooterHead, u64) =
        read_prefix(bytes, (), "FragmentFooterHead")?;
    Ok(match head.schema_name {
        Some(name) => Some(
            String::from_utf8(name)
                .map_err(|_| Error::corrupt(4, "FragmentFooter.schema_name", Cause::NotUtf8))?,
        ),
        None => None,
    })
}

/// Loads schemas by file name, each once.
pub struct SchemaCache<'a> {
    storage: &'a dyn Storage,
    key: Option<[u8; 32]>,
    loaded: Mutex<HashMap<Option<String>, Arc<ArraySchema>>>,
}

impl<'a> SchemaCache<'a> {
    /// A cache reading schemas from `storage`, decrypting them with `key` when the array is encrypted.
    pub fn new(storage: &'a dyn Storage, key: Option<[u8; 32]>) -> Self {
        SchemaCache {
            storage,
            key,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    /// Seeds the cache with an already loaded schema.
    pub fn insert(&self, name: Option<String>, schema: Arc<ArraySchema>) {
        if let Ok(mut map) = self.loaded.lock() {
            map.insert(name, schema);
        }
    }

    /// The schema `__schema/<name>`, or `__array_schema.tdb` for `None`.
    pub fn get(&self, name: Option<&str>) -> Result<Arc<ArraySchema>> {
        let key = name.map(str::to_string);
        if let Some(s) = self.loaded.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(s);
        }
        let path = ArraySchema::path_for(name)?;
        let schema = Arc::new(ArraySchema::load(self.storage, &path, self.key.as_ref())?);
        self.insert(key, schema.clone());
        Ok(schema)
    }
}

/// The footers of consolidated fragment metadata files, by fragment name.
pub fn load_consolidated_footers(
    storage: &dyn Storage,
    meta_files: &[RelPath],
    key: Option<&[u8; 32]>,
) -> Result<HashMap<String, Vec<u8>>> {
    let mut footers = HashMap::new();
    for path in meta_files {
        let file = storage.describe(path);
        let tile = load_generic_tile_file(storage, path, key)?;
        for (name, region) in consolidated_footer_regions(&tile).map_err(|e| e.in_file(&file))? {
            let name = String::from_utf8_lossy(&name).into_owned();
            // Names are fragment folder names (v9+) or absolute URIs.
            let name = name
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_string();
            footers.entry(name).or_insert(region);
        }
    }
    Ok(footers)
}

/// A tile offsets table (tile offsets, var offsets, var sizes, validity
/// offsets, null counts): one generic tile of the metadata file.
pub fn parse_tile_offsets(tile: &GenericTile) -> Result<Vec<u64>> {
    tile.parse::<stored::TileOffsets>((), "TileOffsets")
        .map(|l| l.values)
}

/// The R-tree tile of a format `version` fragment of `schema`.
pub fn parse_rtree(
    tile: &GenericTile,
    version: u32,
    schema: &stored::ArraySchema,
) -> Result<stored::RTree> {
    tile.parse(
        stored::RTreeBinReadArgs::builder()
            .version(version)
            .dims(dimension_shapes(schema))
            .finalize(),
        "RTree",
    )
}

/// The processed-conditions tile (format 16 on).
pub fn parse_processed_conditions(tile: &GenericTile) -> Result<stored::ProcessedConditions> {
    tile.parse((), "ProcessedConditions")
}

/// The footers of one consolidated fragment metadata file's tile
/// (`__fragment_meta/*.meta`): each entry's stored name and its footer's
/// bytes, in the file's order. Entry offsets count from the start of the
/// payload; each footer runs to the next entry's offset or the end.
pub fn consolidated_footer_regions(tile: &GenericTile) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let meta: stored::ConsolidatedFragmentMetadata =
        tile.parse((), "ConsolidatedFragmentMetadata")?;
    let payload_len = tile.payload.len() as u64;
    let mut out = Vec::with_capacity(meta.entries.len());
    for (i, entry) in meta.entries.iter().enumerate() {
        let end = meta.entries.get(i + 1).map_or(payload_len, |e| e.offset);
        let region = usize::try_from(entry.offset)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(s, e)| tile.payload.get(s..e))
            .ok_or_else(|| {
                // The entries' footers follow each other within the payload.
                let cause = if end > payload_len || entry.offset > payload_len {
                    Cause::OutOfRange {
                        value: end.max(entry.offset),
                        limit: payload_len,
                    }
                } else {
                    Cause::NotAscending {
                        previous: entry.offset,
                        value: end,
                    }
                };
                tile.locate(Error::corrupt(
                    entry.offset,
                    format!("ConsolidatedFragmentMetadata.entries[{i}].offset"),
                    cause,
                ))
            })?;
        out.push((entry.name.clone(), region.to_vec()));
    }
    Ok(out)
}

pub(super) fn rect_from_stored(
    rect: &stored::NDRectangle,
    schema: &ArraySchema,
) -> Result<Rectangle> {
    rect.ranges
        .iter()
        .zip(&schema.dimensions)
        .map(|(r, d)| split_range(r, (!d.var).then(|| d.coord_size())))
        .collect()
}

pub(super) fn legacy_rect(bytes: &[u8], schema: &ArraySchema) -> Result<Rectangle> {
    let mut out = Vec::new();
    let mut at = 0usize;
    for d in &schema.dimensions {
        let size = d.coord_size() as usize;
        let lo = bytes.get(at..at + size);
        let hi = bytes.get(at + size..at + 2 * size);
        match (lo, hi) {
            (Some(lo), Some(hi)) => out.push((lo.to_vec(), hi.to_vec())),
            _ => {
                let cause = Cause::Truncated {
                    needed: 2 * size as u64,
                    available: bytes.len().saturating_sub(at) as u64,
                };
                return Err(Error::corrupt(at as u64, "non_empty_domain", cause));
            }
        }
        at += 2 * size;
    }
    Ok(out)
}
