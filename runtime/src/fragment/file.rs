//! A fragment metadata file (`__fragment_metadata.tdb`: format 10 and
//! later, and 3-9 where spec/ knows the footer's size) held in memory, loaded whole: the footer and every generic tile
//! it points at. `tdb check` and the fuzz targets load it this way; the
//! reader loads the same pieces lazily, through the same parsers
//! ([`parse_footer`], [`parse_rtree`], [`parse_tile_offsets`],
//! [`parse_processed_conditions`]).

use crate::error::{Cause, Error, Result};
use crate::format::generated as stored;
use crate::format::io::{read_exact_from, read_prefix};
use crate::schema::{dimension_shapes, ArraySchema, MAX_SUPPORTED_VERSION};
use crate::tile::generic::{read_generic_tile, GenericTile};

use super::{parse_footer, parse_processed_conditions, parse_rtree, parse_tile_offsets};

/// A fragment's metadata file loaded whole: the footer and every tile it
/// points at (the lazy view readers use is [`super::FragmentMetadata`]).
#[derive(Debug, Clone)]
pub struct FragmentMetadataFile {
    /// The footer: field sizes, the non-empty domain, and the offsets of every table below.
    pub footer: stored::FragmentFooter,
    /// Offset of the footer in the file.
    pub footer_offset: u64,
    /// The R-tree of the tiles' bounding rectangles (sparse fragments; empty for dense).
    pub rtree: stored::RTree,
    /// Per field (index space of the footer): the file offset of each tile.
    pub tile_offsets: Vec<Vec<u64>>,
    /// Per var-sized field: the file offset of each tile of values (the
    /// fuzz corpus seeder, outside the workspace, cuts tiles out with it).
    pub tile_var_offsets: Vec<Vec<u64>>,
    /// Per var-sized field: each tile's size of values, unfiltered.
    pub(crate) tile_var_sizes: Vec<Vec<u64>>,
    /// Per nullable field: the file offset of each validity tile.
    pub(crate) tile_validity_offsets: Vec<Vec<u64>>,
    /// Per field (format 11 and later; empty before): each tile's minimum,
    /// maximum, sum and null count as the footer's generic tiles record them.
    pub tile_mins: Vec<stored::TileMinMax>,
    /// Per field: each tile's maximum (format 11 and later).
    pub tile_maxes: Vec<stored::TileMinMax>,
    /// Per field: each tile's sum, as the 8 bytes read as a `u64` (format 11 and later).
    pub tile_sums: Vec<Vec<u64>>,
    pub(crate) tile_null_counts: Vec<Vec<u64>>,
}

/// The footer's head (format version, schema name) and the offset where the
/// footer starts, from the trailing footer length (format 10 and later
/// always write it).
pub fn footer_region(bytes: &[u8]) -> Result<(stored::FragmentFooterHead, u64)> {
    let len = bytes.len() as u64;
    let trailer = len.checked_sub(8).ok_or_else(|| {
        Error::corrupt(
            0,
            "FooterLength",
            Cause::Truncated {
                needed: 8,
                available: len,
            },
        )
    })?;
    let footer_len =
        read_exact_from::<stored::FooterLength>(&bytes[trailer as usize..], (), "FooterLength")
            .map_err(|e| e.at_base(trailer))?
            .footer_len;
    let start = trailer.checked_sub(footer_len).ok_or_else(|| {
        Error::corrupt(
            trailer,
            "FooterLength.footer_len",
            Cause::OutOfRange {
                value: footer_len,
                limit: trailer,
            },
        )
    })?;
    let region = &bytes[start as usize..trailer as usize];
    let (head, _) = read_prefix::<stored::FragmentFooterHead>(region, (), "FragmentFooterHead")
        .map_err(|e| e.at_base(start))?;
    Ok((head, start))
}

fn tile_at(bytes: &[u8], offset: u64, field: &str, key: Option<&[u8; 32]>) -> Result<GenericTile> {
    read_generic_tile(bytes, offset, key).map_err(|e| e.within(field))
}

fn offsets_tables(
    bytes: &[u8],
    list: &[u64],
    what: &str,
    key: Option<&[u8; 32]>,
) -> Result<Vec<Vec<u64>>> {
    list.iter()
        .enumerate()
        .map(|(i, &offset)| {
            let field = format!("{what}[{i}]");
            let tile = tile_at(bytes, offset, &field, key)?;
            parse_tile_offsets(&tile).map_err(|e| e.within(&field))
        })
        .collect()
}

fn min_max_tables(
    bytes: &[u8],
    list: &Option<Vec<u64>>,
    what: &str,
    key: Option<&[u8; 32]>,
) -> Result<Vec<stored::TileMinMax>> {
    list.iter()
        .flatten()
        .enumerate()
        .map(|(i, &offset)| {
            let field = format!("{what}[{i}]");
            let tile = tile_at(bytes, offset, &field, key)?;
            tile.parse::<stored::TileMinMax>((), "TileMinMax")
                .map_err(|e| e.within(&field))
        })
        .collect()
}

/// The footer's size where spec/ gives it before reading the footer
/// (`FragmentFooter::known_size`: versions 3-9 with fixed dimensions, whose
/// files have no trailing footer length; `schema` is then the array's only
/// schema, `__array_schema.tdb`).
pub fn known_footer_size(version: u32, schema: &ArraySchema) -> Option<u64> {
    let shapes = dimension_shapes(&schema.stored);
    stored::FragmentFooter::known_size(version, schema.attributes.len() as u64, &shapes)
}

/// The first byte of a footer whose size spec/ gives before reading it
/// ([`known_footer_size`]): it is the last `size` bytes of a file of `len`.
pub(crate) fn known_size_footer_start(len: u64, size: u64) -> Result<u64> {
    len.checked_sub(size).ok_or_else(|| {
        Error::corrupt(
            0,
            "FragmentFooter",
            Cause::Truncated {
                needed: size,
                available: len,
            },
        )
    })
}

/// A footer found by its computed size (`size`, from the version the
/// fragment's name implies, `named_version`) must be of a version with that
/// size (`own_size`, from its own `version`), as TileDB's loader requires:
/// a region that only happens to parse is not taken for the footer.
pub(crate) fn require_footer_of_size(
    start: u64,
    size: u64,
    own_size: Option<u64>,
    named_version: u32,
    version: u32,
) -> Result<()> {
    if own_size == Some(size) {
        return Ok(());
    }
    Err(Error::corrupt(
        start,
        "FragmentFooter.version",
        Cause::Inconsistent {
            what: "footer version (its footer size differs from that of the version in the \
                   fragment's name)",
            expected: u64::from(named_version),
            found: u64::from(version),
        },
    ))
}

/// A fragment metadata file against `schema` (the one its footer names),
/// every tile decoded. `version` is the format version the fragment's name
/// implies ([`crate::directory::TimestampedName::format_version`]): the file
/// itself cannot tell it, since formats 3-9 store no trailing footer length
/// and their footer is found only by a size that depends on the version.
/// Where spec/ knows the footer's size for that version (3-9 with fixed
/// dimensions) the footer is the file's last that many bytes, as the loader
/// finds it, and must be of a version with that size; elsewhere the trailing
/// footer length places it and the footer must fill the region it gives.
pub fn parse_metadata_file(
    bytes: &[u8],
    schema: &ArraySchema,
    key: Option<&[u8; 32]>,
    version: u32,
) -> Result<FragmentMetadataFile> {
    let known_size = known_footer_size(version, schema);
    let (start, end) = match known_size {
        Some(size) => {
            let len = bytes.len() as u64;
            (known_size_footer_start(len, size)?, len)
        }
        None => {
            let (head, start) = footer_region(bytes)?;
            if head.version > MAX_SUPPORTED_VERSION {
                return Err(Error::unsupported(format!(
                    "fragment format version {} is newer than {MAX_SUPPORTED_VERSION}",
                    head.version
                )));
            }
            if !stored::footer_length_always_stored(head.version) {
                return Err(Error::unsupported(format!(
                    "fragment format version {} (before 10) has no trailing footer length, \
                     and its footer size is not known before reading it (var-sized dimensions)",
                    head.version
                )));
            }
            (start, bytes.len() as u64 - 8)
        }
    };
    let region = &bytes[start as usize..end as usize];
    let (footer, used) = parse_footer(region, schema).map_err(|e| {
        e.within("footer (its field counts come from the schema)")
            .at_base(start)
    })?;
    if used != region.len() as u64 {
        return Err(Error::corrupt(
            start + used,
            "FragmentFooter",
            Cause::TrailingBytes {
                count: region.len() as u64 - used,
            },
        ));
    }
    if let Some(size) = known_size {
        let own_size = known_footer_size(footer.version, schema);
        require_footer_of_size(start, size, own_size, version, footer.version)?;
    }
    let rtree_tile = tile_at(bytes, footer.rtree_offset, "RTree", key)?;
    let rtree = parse_rtree(&rtree_tile, footer.version, &schema.stored)?;
    let tile_offsets = offsets_tables(bytes, &footer.tile_offsets_offsets, "tile_offsets", key)?;
    let tile_var_offsets = offsets_tables(
        bytes,
        &footer.tile_var_offsets_offsets,
        "tile_var_offsets",
        key,
    )?;
    let tile_var_sizes =
        offsets_tables(bytes, &footer.tile_var_sizes_offsets, "tile_var_sizes", key)?;
    let validity = footer
        .tile_validity_offsets_offsets
        .as_deref()
        .unwrap_or(&[]);
    let tile_validity_offsets = offsets_tables(bytes, validity, "tile_validity_offsets", key)?;
    let null_counts = footer.tile_null_counts_offsets.as_deref().unwrap_or(&[]);
    let tile_null_counts = offsets_tables(bytes, null_counts, "tile_null_counts", key)?;
    let tile_mins = min_max_tables(bytes, &footer.tile_mins_offsets, "tile_mins", key)?;
    let tile_maxes = min_max_tables(bytes, &footer.tile_maxes_offsets, "tile_maxes", key)?;
    let tile_sums = footer
        .tile_sums_offsets
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, &offset)| {
            let field = format!("tile_sums[{i}]");
            let tile = tile_at(bytes, offset, &field, key)?;
            tile.parse::<stored::TileSums>((), "TileSums")
                .map(|s| s.values)
                .map_err(|e| e.within(&field))
        })
        .collect::<Result<Vec<_>>>()?;
    let num_fields = footer.tile_offsets_offsets.len() as u64;
    if let Some(offset) = footer
        .fragment_mmsn_offset
        .filter(|_| stored::fragment_mmsn_read(footer.version))
    {
        let tile = tile_at(bytes, offset, "fragment_mmsn", key)?;
        tile.parse::<stored::FragmentMmsn>(
            stored::FragmentMmsnBinReadArgs::builder()
                .num_fields(num_fields)
                .finalize(),
            "FragmentMmsn",
        )?;
    }
    if let Some(offset) = footer.processed_conditions_offset {
        let tile = tile_at(bytes, offset, "processed_conditions", key)?;
        parse_processed_conditions(&tile)?;
    }
    Ok(FragmentMetadataFile {
        footer,
        footer_offset: start,
        rtree,
        tile_offsets,
        tile_var_offsets,
        tile_var_sizes,
        tile_validity_offsets,
        tile_mins,
        tile_maxes,
        tile_sums,
        tile_null_counts,
    })
}
