//! Loaders for the files `tdb check` and the fuzz targets look at: each takes
//! a file's bytes, parses them with the structures generated from `spec/`,
//! decodes generic tiles with the real filter pipeline, and returns a located
//! [`Error`] (byte offset within the file, structure and field) on bad input.
//!
//! They are deliberately the same functions the fuzz targets call, so what
//! the fuzzer proves about them holds for `tdb check`.

use binrw::BinRead;

use crate::filter;
use crate::format::generated::{self as g, DimensionShape};
use crate::format::io::{read_exact_from, read_prefix};
use crate::tile::generic::read_generic_tile;
use crate::{Error, Result};

/// The newest format version this implementation reads: the reader's
/// (`schema::MAX_SUPPORTED_VERSION`, the newest version spec/ describes),
/// so that `tdb check` accepts every array the reader opens.
pub const MAX_FORMAT_VERSION: u32 = crate::schema::MAX_SUPPORTED_VERSION;

pub use crate::tile::generic::{GenericTile, MAX_GENERIC_TILE_SIZE};

/// The runtime pipeline for a stored one. Filters that cannot be decoded
/// (the retired id 17, an unknown reinterpret type) are errors located at
/// `field`.
pub fn runtime_pipeline(stored: &g::FilterPipeline, field: &str) -> Result<filter::FilterPipeline> {
    let mut filters = Vec::with_capacity(stored.filters.len());
    for (i, f) in stored.filters.iter().enumerate() {
        let bad = |reason: String| Error::corrupt(0, format!("{field}.filters[{i}]"), reason);
        let level = match &f.options {
            g::FilterOptions::CompressionOptions(o) => o.level,
            g::FilterOptions::DeltaOptions(o) => o.level,
            g::FilterOptions::DoubleDeltaOptions(o) => o.level,
            _ => 0,
        };
        let reinterpret = |t: g::Datatype| -> Result<Option<filter::Datatype>> {
            if t == g::Datatype::Any {
                return Ok(None);
            }
            filter::Datatype::from_value(t.value())
                .map(Some)
                .ok_or_else(|| bad(format!("reinterpret type {t} is not known to the filters")))
        };
        let runtime = match (&f.filter_type, &f.options) {
            (g::FilterType::None, _) => filter::Filter::None,
            (g::FilterType::Gzip, _) => filter::Filter::Gzip { level },
            (g::FilterType::Zstd, _) => filter::Filter::Zstd { level },
            (g::FilterType::Lz4, _) => filter::Filter::Lz4 { level },
            (g::FilterType::Rle, _) => filter::Filter::Rle { level },
            (g::FilterType::Bzip2, _) => filter::Filter::Bzip2 { level },
            (g::FilterType::Dictionary, _) => filter::Filter::Dictionary { level },
            (g::FilterType::DoubleDelta, g::FilterOptions::DoubleDeltaOptions(o)) => {
                filter::Filter::DoubleDelta {
                    level,
                    reinterpret: reinterpret(o.reinterpret_type)?,
                }
            }
            (g::FilterType::Delta, g::FilterOptions::DeltaOptions(o)) => filter::Filter::Delta {
                level,
                reinterpret: reinterpret(o.reinterpret_type)?,
            },
            (g::FilterType::BitWidthReduction, g::FilterOptions::BitWidthReductionOptions(o)) => {
                filter::Filter::BitWidthReduction {
                    max_window: o.max_window,
                }
            }
            (g::FilterType::PositiveDelta, g::FilterOptions::PositiveDeltaOptions(o)) => {
                filter::Filter::PositiveDelta {
                    max_window: o.max_window,
                }
            }
            (g::FilterType::Bitshuffle, _) => filter::Filter::BitShuffle,
            (g::FilterType::Byteshuffle, _) => filter::Filter::ByteShuffle,
            (g::FilterType::ChecksumMd5, _) => filter::Filter::ChecksumMd5,
            (g::FilterType::ChecksumSha256, _) => filter::Filter::ChecksumSha256,
            (g::FilterType::ScaleFloat, g::FilterOptions::ScaleFloatOptions(o)) => {
                filter::Filter::ScaleFloat {
                    scale: o.scale,
                    offset: o.offset,
                    byte_width: o.byte_width,
                }
            }
            (g::FilterType::Xor, _) => filter::Filter::Xor,
            (g::FilterType::Webp, g::FilterOptions::WebpOptions(o)) => filter::Filter::Webp {
                quality: o.quality,
                format: filter::WebpFormat::from_value(o.format.value())
                    .ok_or_else(|| bad(format!("WebP format {} is unknown", o.format)))?,
                lossless: o.lossless,
                y_extent: o.y_extent,
                x_extent: o.x_extent,
            },
            (g::FilterType::Aes256Gcm, _) => filter::Filter::Aes256Gcm,
            (other, _) => return Err(bad(format!("filter {other} cannot be decoded"))),
        };
        filters.push(runtime);
    }
    Ok(filter::FilterPipeline {
        max_chunk_size: stored.max_chunk_size,
        filters,
    })
}

/// The runtime datatype of a stored one.
pub fn runtime_datatype(t: g::Datatype) -> Result<filter::Datatype> {
    filter::Datatype::from_value(t.value())
        .ok_or_else(|| Error::unsupported(format!("datatype {t} is not known to the filters")))
}

/// The generic tile at `offset` of `bytes`: header, framing and payload,
/// read as the reader reads it ([`read_generic_tile`]), from format
/// versions this implementation knows. `key` is the array's AES-256-GCM
/// key, when it has one; it is used for the tiles that are encrypted.
pub fn generic_tile(bytes: &[u8], offset: u64, key: Option<[u8; 32]>) -> Result<GenericTile> {
    let rest = usize::try_from(offset)
        .ok()
        .and_then(|o| bytes.get(o..))
        .ok_or_else(|| {
            Error::corrupt(
                offset,
                "GenericTileHeader",
                format!("offset is past the end of the {} byte file", bytes.len()),
            )
        })?;
    let (header, _): (g::GenericTileHeader, u64) =
        read_prefix(rest, (), "GenericTileHeader").map_err(|e| e.at_base(offset))?;
    if header.version > MAX_FORMAT_VERSION {
        return Err(Error::unsupported(format!(
            "generic tile at byte {offset} has format version {}, newer than {MAX_FORMAT_VERSION}",
            header.version
        )));
    }
    let encrypted = header.encryption_type != g::EncryptionType::NoEncryption;
    read_generic_tile(bytes, offset, key.as_ref().filter(|_| encrypted))
}

/// A file that is exactly one generic tile.
pub fn single_tile(bytes: &[u8], key: Option<[u8; 32]>) -> Result<GenericTile> {
    let tile = generic_tile(bytes, 0, key)?;
    if tile.end != bytes.len() as u64 {
        return Err(Error::corrupt(
            tile.end,
            "file",
            format!(
                "{} byte(s) after the generic tile",
                bytes.len() as u64 - tile.end
            ),
        ));
    }
    Ok(tile)
}

/// Parses a payload as `T`, locating errors in the file (the payload is
/// unfiltered, so the location is the tile's body and the payload offset).
pub fn payload<T>(tile: &GenericTile, args: T::Args<'_>, what: &str) -> Result<T>
where
    T: BinRead,
{
    read_exact_from(&tile.payload, args, what).map_err(|e| in_payload(e, tile))
}

/// Payload offsets count unfiltered bytes, which do not map to file bytes:
/// the error points at the tile's body and names the payload offset in its
/// field instead.
fn in_payload(mut err: Error, tile: &GenericTile) -> Error {
    if let Error::Corrupt { at, .. } = &mut err {
        at.field = format!("{} (payload byte {})", at.field, at.offset);
        at.offset = tile.body_offset;
    }
    err
}

/// An array schema file: checks the version before the layout.
pub fn schema(bytes: &[u8], key: Option<[u8; 32]>) -> Result<g::ArraySchema> {
    let tile = single_tile(bytes, key)?;
    let version = tile
        .payload
        .first_chunk::<4>()
        .map(|v| u32::from_le_bytes(*v))
        .ok_or_else(|| {
            Error::corrupt(
                tile.body_offset,
                "ArraySchema.version",
                "the schema is empty",
            )
        })?;
    if version > MAX_FORMAT_VERSION {
        return Err(Error::unsupported(format!(
            "array schema format version {version} is newer than {MAX_FORMAT_VERSION}"
        )));
    }
    let schema: g::ArraySchema = payload(&tile, (), "ArraySchema")?;
    if let Some(current) = schema.current_domain.as_ref().filter(|c| !c.is_empty()) {
        read_exact_from::<g::CurrentDomain>(
            current,
            g::CurrentDomainBinReadArgs::builder()
                .dims(shapes(&schema))
                .finalize(),
            "CurrentDomain",
        )
        .map_err(|e| {
            e.within("ArraySchema.current_domain")
                .at_base(tile.body_offset)
        })?;
    }
    Ok(schema)
}

/// The shape of every dimension, as fragment structures need it.
pub fn shapes(schema: &g::ArraySchema) -> Vec<DimensionShape> {
    schema
        .domain
        .dimensions
        .iter()
        .map(|d| DimensionShape {
            var: d.cell_val_num == u32::MAX,
            coord_size: d.datatype.size(),
        })
        .collect()
}

/// A fragment's metadata file (format 3 and later): the footer and every
/// generic tile it points at.
#[derive(Debug, Clone)]
pub struct FragmentMetadata {
    pub footer: g::FragmentFooter,
    /// Offset of the footer in the file.
    pub footer_offset: u64,
    pub rtree: g::RTree,
    /// Per field (index space of the footer): the tile offsets, var offsets,
    /// var sizes and validity offsets.
    pub tile_offsets: Vec<Vec<u64>>,
    pub tile_var_offsets: Vec<Vec<u64>>,
    pub tile_var_sizes: Vec<Vec<u64>>,
    pub tile_validity_offsets: Vec<Vec<u64>>,
    /// Per field (format 11 and later; empty before): each tile's minimum,
    /// maximum, sum and null count as the footer's generic tiles record them.
    pub tile_mins: Vec<g::TileMinMax>,
    pub tile_maxes: Vec<g::TileMinMax>,
    pub tile_sums: Vec<Vec<u64>>,
    pub tile_null_counts: Vec<Vec<u64>>,
}

/// The footer's format version and schema name, read from the trailing
/// length (format 10 and later always write it).
pub fn footer_head(bytes: &[u8]) -> Result<(g::FragmentFooterHead, u64)> {
    let len = bytes.len() as u64;
    let trailer = len.checked_sub(8).ok_or_else(|| {
        Error::corrupt(
            0,
            "FooterLength",
            format!("a {len} byte file has no footer length"),
        )
    })?;
    let footer_len = bytes
        .last_chunk::<8>()
        .map(|b| u64::from_le_bytes(*b))
        .unwrap_or(0);
    let start = trailer.checked_sub(footer_len).ok_or_else(|| {
        Error::corrupt(
            trailer,
            "FooterLength.footer_len",
            format!("a {footer_len} byte footer does not fit before byte {trailer}"),
        )
    })?;
    let region = bytes
        .get(start as usize..trailer as usize)
        .unwrap_or_default();
    let (head, _) = read_prefix::<g::FragmentFooterHead>(region, (), "FragmentFooterHead")
        .map_err(|e| e.at_base(start))?;
    Ok((head, start))
}

/// The footer arguments for a schema.
pub fn footer_args(schema: &g::ArraySchema) -> g::FragmentFooterBinReadArgs {
    g::FragmentFooterBinReadArgs::builder()
        .num_attributes(schema.attributes.len() as u64)
        .dims(shapes(schema))
        .finalize()
}

fn offsets_tile(bytes: &[u8], offset: u64, field: &str, key: Option<[u8; 32]>) -> Result<Vec<u64>> {
    let tile = generic_tile(bytes, offset, key).map_err(|e| e.within(field))?;
    let values: g::TileOffsets = payload(&tile, (), "TileOffsets").map_err(|e| e.within(field))?;
    Ok(values.values)
}

/// A fragment metadata file of format 10 or later, against its schema.
pub fn fragment_metadata(
    bytes: &[u8],
    schema: &g::ArraySchema,
    key: Option<[u8; 32]>,
) -> Result<FragmentMetadata> {
    let (head, start) = footer_head(bytes)?;
    if head.version > MAX_FORMAT_VERSION {
        return Err(Error::unsupported(format!(
            "fragment format version {} is newer than {MAX_FORMAT_VERSION}",
            head.version
        )));
    }
    if head.version < 10 {
        return Err(Error::unsupported(format!(
            "fragment format version {} (before 10) is not checked",
            head.version
        )));
    }
    let trailer = bytes.len() as u64 - 8;
    let region = bytes
        .get(start as usize..trailer as usize)
        .unwrap_or_default();
    let footer: g::FragmentFooter = read_exact_from(region, footer_args(schema), "FragmentFooter")
        .map_err(|e| {
            e.within("footer (its field counts come from the schema)")
                .at_base(start)
        })?;
    let dims = shapes(schema);
    let rtree_tile =
        generic_tile(bytes, footer.rtree_offset, key).map_err(|e| e.within("RTree"))?;
    let rtree: g::RTree = payload(
        &rtree_tile,
        g::RTreeBinReadArgs::builder()
            .version(footer.version)
            .dims(dims.clone())
            .finalize(),
        "RTree",
    )?;
    let load_all = |list: &[u64], what: &str| -> Result<Vec<Vec<u64>>> {
        list.iter()
            .enumerate()
            .map(|(i, &offset)| offsets_tile(bytes, offset, &format!("{what}[{i}]"), key))
            .collect()
    };
    let tile_offsets = load_all(&footer.tile_offsets_offsets, "tile_offsets")?;
    let tile_var_offsets = load_all(&footer.tile_var_offsets_offsets, "tile_var_offsets")?;
    let tile_var_sizes = load_all(&footer.tile_var_sizes_offsets, "tile_var_sizes")?;
    let tile_validity_offsets = load_all(
        footer
            .tile_validity_offsets_offsets
            .as_deref()
            .unwrap_or(&[]),
        "tile_validity_offsets",
    )?;
    let tile_null_counts = load_all(
        footer.tile_null_counts_offsets.as_deref().unwrap_or(&[]),
        "tile_null_counts",
    )?;
    let min_max = |list: &Option<Vec<u64>>, what: &str| -> Result<Vec<g::TileMinMax>> {
        list.iter()
            .flatten()
            .enumerate()
            .map(|(i, &offset)| {
                let field = format!("{what}[{i}]");
                let tile = generic_tile(bytes, offset, key).map_err(|e| e.within(&field))?;
                payload::<g::TileMinMax>(&tile, (), "TileMinMax").map_err(|e| e.within(&field))
            })
            .collect()
    };
    let tile_mins = min_max(&footer.tile_mins_offsets, "tile_mins")?;
    let tile_maxes = min_max(&footer.tile_maxes_offsets, "tile_maxes")?;
    let tile_sums = footer
        .tile_sums_offsets
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, &offset)| {
            let field = format!("tile_sums[{i}]");
            let tile = generic_tile(bytes, offset, key).map_err(|e| e.within(&field))?;
            payload::<g::TileSums>(&tile, (), "TileSums")
                .map(|s| s.values)
                .map_err(|e| e.within(&field))
        })
        .collect::<Result<Vec<_>>>()?;
    let num_fields = footer.tile_offsets_offsets.len() as u64;
    if let Some(offset) = footer.fragment_mmsn_offset.filter(|_| footer.version >= 12) {
        let tile = generic_tile(bytes, offset, key).map_err(|e| e.within("fragment_mmsn"))?;
        payload::<g::FragmentMmsn>(
            &tile,
            g::FragmentMmsnBinReadArgs::builder()
                .num_fields(num_fields)
                .finalize(),
            "FragmentMmsn",
        )?;
    }
    if let Some(offset) = footer.processed_conditions_offset {
        let tile =
            generic_tile(bytes, offset, key).map_err(|e| e.within("processed_conditions"))?;
        payload::<g::ProcessedConditions>(&tile, (), "ProcessedConditions")?;
    }
    Ok(FragmentMetadata {
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

/// A consolidated fragment metadata file (`__fragment_meta/*.meta`): the
/// list of fragments and one footer per fragment, each parsed against the
/// schema `schema_of` returns for its name.
pub fn consolidated_fragment_metadata<'s>(
    bytes: &[u8],
    key: Option<[u8; 32]>,
    mut schema_of: impl FnMut(&[u8]) -> Option<&'s g::ArraySchema>,
) -> Result<Vec<(Vec<u8>, g::FragmentFooter)>> {
    let tile = single_tile(bytes, key)?;
    let meta: g::ConsolidatedFragmentMetadata = payload(&tile, (), "ConsolidatedFragmentMetadata")?;
    let payload_len = tile.payload.len() as u64;
    let mut out = Vec::with_capacity(meta.entries.len());
    for (i, entry) in meta.entries.iter().enumerate() {
        let field = format!("ConsolidatedFragmentMetadata.entries[{i}]");
        let end = meta.entries.get(i + 1).map_or(payload_len, |e| e.offset);
        let region = usize::try_from(entry.offset)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(s, e)| tile.payload.get(s..e))
            .ok_or_else(|| {
                Error::corrupt(
                    tile.body_offset,
                    field.clone(),
                    format!(
                        "footer bytes {}..{end} are not within the {payload_len} byte payload",
                        entry.offset
                    ),
                )
            })?;
        let (head, _) = read_prefix::<g::FragmentFooterHead>(region, (), "FragmentFooterHead")
            .map_err(|e| e.within(&field).at_base(tile.body_offset))?;
        let name = head.schema_name.clone().unwrap_or_default();
        let Some(schema) = schema_of(&name) else {
            return Err(Error::corrupt(
                tile.body_offset,
                field,
                format!(
                    "footer names schema {:?}, which is not in the array",
                    String::from_utf8_lossy(&name)
                ),
            ));
        };
        let footer: g::FragmentFooter =
            read_exact_from(region, footer_args(schema), "FragmentFooter")
                .map_err(|e| e.within(&field).at_base(tile.body_offset))?;
        out.push((entry.name.clone(), footer));
    }
    Ok(out)
}

/// A delete commit (`.del`) or the generic tile embedded in a `.con` file.
pub fn delete_commit(bytes: &[u8], key: Option<[u8; 32]>) -> Result<g::DeleteCommit> {
    let tile = single_tile(bytes, key)?;
    payload(&tile, (), "DeleteCommit")
}

/// An update commit (`.upd`).
pub fn update_commit(bytes: &[u8], key: Option<[u8; 32]>) -> Result<g::UpdateCommit> {
    let tile = single_tile(bytes, key)?;
    payload(&tile, (), "UpdateCommit")
}

/// An array or group metadata file (`__meta/*`).
pub fn metadata(bytes: &[u8], key: Option<[u8; 32]>) -> Result<g::Metadata> {
    let tile = single_tile(bytes, key)?;
    payload(&tile, (), "Metadata")
}

/// An enumeration file (`__schema/__enumerations/*`).
pub fn enumeration(bytes: &[u8], key: Option<[u8; 32]>) -> Result<g::Enumeration> {
    let tile = single_tile(bytes, key)?;
    let enumeration: g::Enumeration = payload(&tile, (), "Enumeration")?;
    if let Some(offsets) = &enumeration.offsets {
        check_offsets_bytes(offsets, enumeration.data.len() as u64)
            .map_err(|e| e.within("Enumeration.offsets").at_base(tile.body_offset))?;
    }
    Ok(enumeration)
}

/// Var-sized offsets stored as raw little-endian u64s: a whole number of
/// them, ascending, each within the data.
pub fn check_offsets_bytes(offsets: &[u8], data_len: u64) -> Result<()> {
    if !offsets.len().is_multiple_of(8) {
        return Err(Error::corrupt(
            0,
            "offsets",
            format!(
                "{} bytes is not a whole number of u64 offsets",
                offsets.len()
            ),
        ));
    }
    let mut previous = 0u64;
    for (i, chunk) in offsets.chunks_exact(8).enumerate() {
        let mut raw = [0u8; 8];
        raw.copy_from_slice(chunk);
        let value = u64::from_le_bytes(raw);
        if value < previous || value > data_len {
            return Err(Error::corrupt(
                (i * 8) as u64,
                format!("offsets[{i}]"),
                format!("{value} is not ascending within {data_len} bytes of data"),
            ));
        }
        previous = value;
    }
    Ok(())
}

/// A group details file (`__group/*`).
pub fn group_details(bytes: &[u8], key: Option<[u8; 32]>) -> Result<g::GroupDetails> {
    let tile = single_tile(bytes, key)?;
    let details: g::GroupDetails = payload(&tile, (), "GroupDetails")?;
    for (i, member) in details.members.iter().enumerate() {
        let uri = std::str::from_utf8(&member.uri).map_err(|_| {
            Error::corrupt(
                tile.body_offset,
                format!("GroupDetails.members[{i}].uri"),
                "not UTF-8",
            )
        })?;
        crate::directory::group::resolve_member(uri, member.relative).map_err(|e| {
            e.within(format!("GroupDetails.members[{i}]"))
                .at_base(tile.body_offset)
        })?;
    }
    Ok(details)
}
