//! A fragment metadata file explained: the footer at its end (walked
//! against the schema it names, which gives the field counts and dimension
//! shapes), the trailing footer length (absent in formats 3-9 with
//! fixed-sized dimensions, whose footer size spec/ computes), and every
//! generic tile the footer's offsets point at, each payload walked as the
//! struct the footer says.

use super::body::Body;
use super::fragment_folder::array_dir;
use super::tiles::{explain_generic_tile, explain_generic_tile_partly};
use super::walker::{layout_of_version, Walker};
use super::walkers::*;
use crate::directory::TimestampedName;
use crate::error::{Error, Result};
use crate::format::generated::{
    footer_after_tiles, footer_length_always_stored, fragment_mmsn_read, FragmentFooter,
    FragmentFooterHead, NEWEST_READ_FORMAT_VERSION,
};
use crate::format::io::read_prefix;
use crate::fragment::{footer_region, footer_schema_name};
use crate::fragment::{known_size_footer_start, require_footer_of_size};
use crate::schema::{dimension_shapes, ArraySchema};
use crate::storage::{RelPath, Storage, SubStorage};
use crate::tile::generic::{load_generic_tile, read_generic_tile};

/// The usage error for a fragment metadata file explained outside its array.
fn in_array_only(storage: &dyn Storage, file: &RelPath) -> Error {
    Error::Usage(format!(
        "{}: a fragment metadata file is explained inside its array (…/__fragments/<fragment>/ \
         or, before format 12, …/<fragment>/)",
        storage.describe(file).display()
    ))
}

/// Where a fragment metadata file's footer lies: `start..end`, with the
/// `FooterLength` trailer after it when `end` is not the file's end.
pub(super) struct FooterPlace {
    /// The footer's format version.
    pub(super) version: u32,
    /// The footer's first byte.
    pub(super) start: u64,
    /// The byte after the footer.
    pub(super) end: u64,
}

impl FooterPlace {
    /// The version whose layout the footer has (spec/format.toml: the
    /// experimental version stands for another).
    pub(super) fn layout_version(&self) -> u32 {
        layout_of_version(self.version).unwrap_or(self.version)
    }
}

/// The schema a fragment of format version `fragment_version` names
/// (`None`: `__array_schema.tdb`), as the loader gives it. A fragment of
/// the experimental format version gets a schema of that version too,
/// which the loader refuses as TileDB does, decoded with the layout that
/// version stands for (spec/format.toml, `experimental_format_layout`), so
/// the experimental build's fragments can be explained; any other fragment
/// naming such a schema (a released version's, the schema's version
/// field changed) gets the loader's refusal.
pub(super) fn schema_of_fragment(
    storage: &dyn Storage,
    dir: RelPath,
    name: Option<&str>,
    fragment_version: u32,
    key: Option<&[u8; 32]>,
) -> Result<ArraySchema> {
    let storage = SubStorage::new(storage, dir);
    let path = ArraySchema::path_for(name)?;
    let refused = match ArraySchema::load(&storage, &path, key) {
        Ok(schema) => return Ok(schema),
        Err(e) => e,
    };
    if layout_of_version(fragment_version).is_none() {
        return Err(refused);
    }
    let size = storage.size(&path)?;
    let tile = load_generic_tile(&storage, &path, size, 0, key)?;
    let stored = tile
        .payload
        .get(..4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("a four-byte slice")));
    let Some(layout) = stored.and_then(layout_of_version) else {
        return Err(refused);
    };
    let mut payload = tile.payload;
    payload[..4].copy_from_slice(&layout.to_le_bytes());
    ArraySchema::from_payload(name.unwrap_or_default(), &payload)
        .map_err(|e| e.in_file(storage.describe(&path)))
}

/// Finds the footer as the loader does: where spec/ gives its size before
/// reading it (`FragmentFooter::known_size`: formats 3-9 with fixed-sized
/// dimensions, by the version the fragment's folder name implies, against
/// `__array_schema.tdb`), it is the file's last that many bytes and has no
/// trailer; elsewhere the trailing `FooterLength` measures it.
pub(super) fn locate_footer(
    storage: &dyn Storage,
    file: &RelPath,
    bytes: &[u8],
    key: Option<&[u8; 32]>,
) -> Result<FooterPlace> {
    let len = bytes.len() as u64;
    let named_version = file
        .parent()
        .file_name()
        .and_then(|n| TimestampedName::parse(n).ok())
        .map(|n| n.format_version())
        .filter(|&v| !footer_length_always_stored(v));
    if let Some(named_version) = named_version {
        let dir = array_dir(file).ok_or_else(|| in_array_only(storage, file))?;
        let schema = ArraySchema::load(
            &SubStorage::new(storage, dir),
            &ArraySchema::path_for(None)?,
            key,
        )?;
        let attributes = schema.attributes.len() as u64;
        let shapes = dimension_shapes(&schema.stored);
        if let Some(size) = FragmentFooter::known_size(named_version, attributes, &shapes) {
            let start = known_size_footer_start(len, size)?;
            let (head, _) = read_prefix::<FragmentFooterHead>(
                &bytes[start as usize..],
                (),
                "FragmentFooterHead",
            )
            .map_err(|e| e.at_base(start))?;
            // As the loader.
            let own_size = FragmentFooter::known_size(head.version, attributes, &shapes);
            require_footer_of_size(start, size, own_size, named_version, head.version)?;
            return Ok(FooterPlace {
                version: head.version,
                start,
                end: len,
            });
        }
    }
    let (head, start) = footer_region(bytes)?;
    Ok(FooterPlace {
        version: head.version,
        start,
        end: len - 8,
    })
}

/// A format 1-2 fragment metadata file: one generic tile whose payload is
/// `FragmentMetadataV1V2`, against the array's only schema; or TileDB 1.3's,
/// a 1.3 generic tile whose payload is `Legacy13FragmentMetadata`.
fn explain_v1_v2(
    storage: &dyn Storage,
    file: &RelPath,
    bytes: &[u8],
    key: Option<&[u8; 32]>,
    legacy13: bool,
) -> Result<Body> {
    let dir = array_dir(file).ok_or_else(|| {
        Error::Usage(format!(
            "{}: a fragment metadata file is explained inside its array (…/<fragment>/)",
            storage.describe(file).display()
        ))
    })?;
    let schema = ArraySchema::load(
        &SubStorage::new(storage, dir),
        &ArraySchema::path_for(None)?,
        key,
    )?;
    let dims = dimension_shapes(&schema.stored);
    let num_attributes = schema.attributes.len() as u64;
    if legacy13 {
        let mut tile = super::legacy13::explain_legacy13_tile(bytes, |p| {
            p.enter_group("Legacy13FragmentMetadata", "Legacy13FragmentMetadata");
            walk_legacy13_fragment_metadata(p, num_attributes, dims.clone())?;
            p.leave();
            Ok(())
        })?;
        tile.name = "fragment metadata (TileDB 1.3): generic tile".into();
        return Ok(Body::whole(vec![tile], "Legacy13FragmentMetadata"));
    }
    let mut tile = explain_generic_tile(bytes, 0, key, |p| {
        p.enter_group("FragmentMetadataV1V2", "FragmentMetadataV1V2");
        walk_fragment_metadata_v1_v2(p, num_attributes, dims.clone())?;
        p.leave();
        Ok(())
    })?;
    tile.name = "fragment metadata (formats 1-2): generic tile".into();
    Ok(Body::whole(vec![tile], "FragmentMetadataV1V2"))
}

/// The spans of a `__fragment_metadata.tdb` file, in file order.
pub fn explain_fragment_metadata(
    storage: &dyn Storage,
    file: &RelPath,
    bytes: &[u8],
    key: Option<&[u8; 32]>,
) -> Result<Body> {
    // Formats 1-2: the whole file is one generic tile holding the
    // v1-v2 layout, read against `__array_schema.tdb` (as the loader does).
    if let Ok(tile) = read_generic_tile(bytes, 0, key) {
        if !footer_after_tiles(tile.header.version) && tile.end == bytes.len() as u64 {
            return explain_v1_v2(storage, file, bytes, key, false);
        }
    }
    if super::legacy13::is_legacy13_tile(bytes, key) {
        return explain_v1_v2(storage, file, bytes, key, true);
    }
    let place = locate_footer(storage, file, bytes, key)?;
    if place.layout_version() > NEWEST_READ_FORMAT_VERSION {
        return explain_unknown_version(bytes, place.start, key, place.version);
    }
    let (start, end) = (place.start, place.end);
    let name = footer_schema_name(&bytes[start as usize..end as usize])?;
    let dir = array_dir(file).ok_or_else(|| in_array_only(storage, file))?;
    let schema = schema_of_fragment(storage, dir, name.as_deref(), place.version, key)?;
    let dims = dimension_shapes(&schema.stored);

    let mut w = Walker::new(&bytes[..end as usize], "footer", "file");
    w.seek(start);
    w.enter_group("FragmentFooter", "FragmentFooter");
    let footer = walk_fragment_footer(&mut w, schema.attributes.len() as u64, dims.clone())?;
    w.leave();
    let mut spans = w.finish().children;
    // Formats 3-9 with fixed-sized dimensions end with the footer: no trailer.
    if end < bytes.len() as u64 {
        let mut w = Walker::new(bytes, "footer length", "file");
        w.seek(end);
        w.enter_group("FooterLength", "FooterLength");
        walk_footer_length(&mut w)?;
        w.leave();
        spans.extend(w.finish().children);
    }

    let tile = |what: String, offset: u64, walk: &dyn Fn(&mut Walker<'_>) -> Result<()>| {
        explain_generic_tile(bytes, offset, key, |p| walk(p))
            .map(|mut span| {
                span.name = format!("{what}: generic tile");
                span
            })
            .map_err(|e| e.within(&what))
    };
    let version = footer.version;
    spans.push(tile("rtree".into(), footer.rtree_offset, &|p| {
        walk_r_tree(p, version, dims.clone()).map(drop)
    })?);
    let offsets_tables: [(&str, &[u64]); 5] = [
        ("tile_offsets", &footer.tile_offsets_offsets),
        ("tile_var_offsets", &footer.tile_var_offsets_offsets),
        ("tile_var_sizes", &footer.tile_var_sizes_offsets),
        (
            "tile_validity_offsets",
            footer
                .tile_validity_offsets_offsets
                .as_deref()
                .unwrap_or(&[]),
        ),
        (
            "tile_null_counts",
            footer.tile_null_counts_offsets.as_deref().unwrap_or(&[]),
        ),
    ];
    for (what, list) in offsets_tables {
        for (i, &offset) in list.iter().enumerate() {
            spans.push(tile(format!("{what}[{i}]"), offset, &|p| {
                walk_tile_offsets(p).map(drop)
            })?);
        }
    }
    for (what, list) in [
        ("tile_mins", &footer.tile_mins_offsets),
        ("tile_maxes", &footer.tile_maxes_offsets),
    ] {
        for (i, &offset) in list.iter().flatten().enumerate() {
            spans.push(tile(format!("{what}[{i}]"), offset, &|p| {
                walk_tile_min_max(p).map(drop)
            })?);
        }
    }
    for (i, &offset) in footer.tile_sums_offsets.iter().flatten().enumerate() {
        spans.push(tile(format!("tile_sums[{i}]"), offset, &|p| {
            walk_tile_sums(p).map(drop)
        })?);
    }
    let num_fields = footer.tile_offsets_offsets.len() as u64;
    if let Some(offset) = footer
        .fragment_mmsn_offset
        .filter(|_| fragment_mmsn_read(version))
    {
        spans.push(tile("fragment_mmsn".into(), offset, &|p| {
            walk_fragment_mmsn(p, num_fields).map(drop)
        })?);
    }
    if let Some(offset) = footer.processed_conditions_offset {
        spans.push(tile("processed_conditions".into(), offset, &|p| {
            walk_processed_conditions(p).map(drop)
        })?);
    }
    spans.sort_by_key(|s| s.offset);
    Ok(Body::whole(spans, "FragmentFooter"))
}

/// A fragment metadata file of a format version newer than any this reader
/// knows (the loader refuses it): its generic tiles, one after another up to
/// the footer, their envelopes explained; the footer's first fields (the
/// version and the schema's name) and the footer length. The tiles'
/// payloads and the rest of the footer have no known layout.
fn explain_unknown_version(
    bytes: &[u8],
    footer_start: u64,
    key: Option<&[u8; 32]>,
    version: u32,
) -> Result<Body> {
    let mut spans = Vec::new();
    let mut pos = 0;
    while pos < footer_start {
        let Ok((tile, _)) =
            explain_generic_tile_partly(&bytes[..footer_start as usize], pos, key, |_| Ok(()))
        else {
            break;
        };
        pos = tile.offset + tile.size;
        spans.push(tile);
    }
    let trailer = bytes.len() as u64 - 8;
    let mut w = Walker::new(&bytes[..trailer as usize], "footer", "file");
    w.seek(footer_start);
    w.enter_group("FragmentFooterHead", "FragmentFooterHead");
    let head = walk_fragment_footer_head(&mut w);
    w.leave();
    spans.extend(w.finish().children);
    let mut w = Walker::new(bytes, "footer length", "file");
    w.seek(trailer);
    w.enter_group("FooterLength", "FooterLength");
    walk_footer_length(&mut w)?;
    w.leave();
    spans.extend(w.finish().children);
    let mut reason = format!(
        "format version {version} is newer than any this reader knows \
         ({NEWEST_READ_FORMAT_VERSION}): the loader refuses it; the footer after its first \
         fields and the tiles' payloads have no known layout"
    );
    if let Err(e) = head {
        reason.push_str(&format!(" (the footer's first fields: {e})"));
    }
    Ok(Body {
        children: spans,
        layout: "FragmentFooter",
        incomplete: Some(reason),
    })
}
