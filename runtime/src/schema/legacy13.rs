//! Arrays written by TileDB 1.3, before format versions existed. Their
//! layouts are in spec/legacy13.toml: a 30-byte generic tile header
//! (`Legacy13GenericTileHeader`), a body that is raw or chunked
//! (`Legacy13Chunks`), and a schema with one compressor per field instead
//! of a filter pipeline (`Legacy13ArraySchema`). TileDB 2.x no longer reads
//! them. They are read here as format version 0: the schema is mapped onto
//! the stored schema model with one compression filter per field, and 1.3
//! tiles are re-framed as modern tiles.

use crate::error::{Cause, Error, Result};
use crate::format::generated as stored;
use crate::format::io::{read_exact_from, read_prefix};

/// The size of a TileDB 1.3 generic tile header.
pub const HEADER_SIZE: u64 = stored::Legacy13GenericTileHeader::MIN_SIZE;

/// The largest legacy file (a TileDB 1.3 or format 1-2 schema or fragment
/// metadata file: one generic tile filling the file) read whole. A 1.3
/// tile's header cannot be told from a modern one's before the whole file's
/// size is compared with it, so such files are read whole, and only below
/// this size: their payloads are a schema, or a fragment's compressed tile
/// offsets and MBRs (a few u64 per tile and field), kilobytes in practice,
/// while a file grown to gigabytes must not be read into memory to be
/// judged. Larger files are judged as modern generic tiles, from the header.
pub const MAX_LEGACY_FILE_SIZE: u64 = 64 << 20;

/// Whether `bytes` is one TileDB 1.3 generic tile (the test TileDB 1.4
/// itself used: the header's compressed size plus the header is the file).
pub fn is_v13_generic_tile(bytes: &[u8]) -> bool {
    bytes
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .is_some_and(|size| size.checked_add(HEADER_SIZE) == Some(bytes.len() as u64))
}

/// The stored filter for a 1.3 compressor (`None` = no compression).
fn compressor_filter(
    compressor: stored::Legacy13Compressor,
    level: i32,
) -> Result<Option<stored::Filter>> {
    use stored::{Compressor as C, FilterType as T, Legacy13Compressor as L};
    let (kind, compressor) = match compressor {
        L::NoCompression => return Ok(None),
        L::Gzip => (T::Gzip, C::Gzip),
        L::Zstd => (T::Zstd, C::Zstd),
        L::Lz4 => (T::Lz4, C::Lz4),
        L::Rle => (T::Rle, C::Rle),
        L::Bzip2 => (T::Bzip2, C::Bzip2),
        L::DoubleDelta => {
            return Ok(Some(stored::Filter {
                filter_type: T::DoubleDelta,
                options: stored::FilterOptions::DoubleDeltaOptions(stored::DoubleDeltaOptions {
                    compressor: C::DoubleDelta,
                    level,
                    reinterpret_type: stored::Datatype::Any,
                }),
            }))
        }
        L::BloscLz | L::BloscLz4 | L::BloscLz4hc | L::BloscSnappy | L::BloscZlib | L::BloscZstd => {
            return Err(Error::unsupported("TileDB 1.3 Blosc compression"))
        }
    };
    Ok(Some(stored::Filter {
        filter_type: kind,
        options: stored::FilterOptions::CompressionOptions(stored::CompressionOptions {
            compressor,
            level,
        }),
    }))
}

fn pipeline(compressor: stored::Legacy13Compressor, level: i32) -> Result<stored::FilterPipeline> {
    Ok(stored::FilterPipeline {
        max_chunk_size: crate::filter::DEFAULT_MAX_CHUNK_SIZE,
        filters: compressor_filter(compressor, level)?.into_iter().collect(),
    })
}

/// A 1.3 dimension as a stored one: every dimension has the domain's type.
fn dimension(d: stored::Legacy13Dimension, datatype: stored::Datatype) -> stored::Dimension {
    stored::Dimension {
        name: d.name,
        datatype,
        cell_val_num: 1,
        domain: d.domain,
        null_extent: d.null_extent,
        extent: d.extent,
        // Later versions' fields take their defaults.
        ..Default::default()
    }
}

/// A 1.3 attribute as a stored one, its compressor as a one-filter pipeline.
fn attribute(a: stored::Legacy13Attribute) -> Result<stored::Attribute> {
    Ok(stored::Attribute {
        name: a.name,
        datatype: a.datatype,
        cell_val_num: a.cell_val_num,
        filters: pipeline(a.compressor, a.level)?,
        // Later versions' fields take their defaults.
        ..Default::default()
    })
}

/// Decodes a TileDB 1.3 schema payload (`Legacy13ArraySchema`) into the
/// stored schema model (version 0).
pub fn parse_schema(payload: &[u8]) -> Result<stored::ArraySchema> {
    let legacy: stored::Legacy13ArraySchema = read_exact_from(payload, (), "Legacy13ArraySchema")?;
    let datatype = legacy.domain_datatype;
    let dimensions = legacy
        .dimensions
        .into_iter()
        .map(|d| dimension(d, datatype))
        .collect();
    let attributes = legacy
        .attributes
        .into_iter()
        .map(attribute)
        .collect::<Result<Vec<_>>>()?;
    Ok(stored::ArraySchema {
        version: 0,
        array_type: legacy.array_type,
        tile_order: legacy.tile_order,
        cell_order: legacy.cell_order,
        capacity: legacy.capacity,
        coords_filters: pipeline(legacy.coords_compressor, legacy.coords_level)?,
        offsets_filters: pipeline(legacy.offsets_compressor, legacy.offsets_level)?,
        domain: stored::Domain {
            datatype: Some(legacy.domain_datatype),
            dimensions,
        },
        attributes,
        // Every field a later version added (validity filters, labels,
        // enumerations, the current domain, …) takes its default.
        ..Default::default()
    })
}

/// The payload of a TileDB 1.3 generic tile (the whole file).
pub fn read_generic_tile(bytes: &[u8]) -> Result<Vec<u8>> {
    let (header, used): (stored::Legacy13GenericTileHeader, u64) =
        read_prefix(bytes, (), "Legacy13GenericTileHeader")?;
    let body = usize::try_from(header.compressed_size)
        .ok()
        .and_then(|size| bytes.get(used as usize..(used as usize).checked_add(size)?))
        .ok_or_else(|| {
            Error::corrupt(
                used,
                "Legacy13GenericTileHeader.compressed_size",
                Cause::Truncated {
                    needed: header.compressed_size,
                    available: bytes.len() as u64 - used,
                },
            )
        })?;
    decode_tile(body, &header)
}

/// A chunk size as the u32 a modern chunk stores, or the error naming `field`.
fn u32_or(value: u64, field: &str) -> Result<u32> {
    u32::try_from(value).map_err(|_| {
        Error::corrupt(
            0,
            field,
            Cause::OutOfRange {
                value,
                limit: u64::from(u32::MAX),
            },
        )
    })
}

/// Re-frames a 1.3 tile body as a modern tile (chunks with compression
/// metadata) so that the filter pipeline decodes it.
pub fn reframe(body: &[u8], compressed: bool) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    if !compressed {
        let len = u32::try_from(body.len())
            .map_err(|_| Error::unsupported("a TileDB 1.3 tile over 4 GiB"))?;
        out.extend_from_slice(&1u64.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(body);
        return Ok(out);
    }
    let legacy: stored::Legacy13Chunks = read_exact_from(body, (), "Legacy13Chunks")?;
    if legacy.chunks.is_empty() {
        return Err(Error::corrupt(
            0,
            "Legacy13Chunks.n_chunks",
            Cause::Empty {
                what: "the chunk list",
            },
        ));
    }
    out.extend_from_slice(&(legacy.chunks.len() as u64).to_le_bytes());
    for chunk in &legacy.chunks {
        let original = u32_or(chunk.original_size, "Legacy13Chunk.original_size")?;
        let size = u32_or(chunk.data.len() as u64, "Legacy13Chunk.compressed_size")?;
        // Compression metadata: no metadata parts, one data part.
        let metadata: Vec<u8> = [0u32, 1, original, size]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        out.extend_from_slice(&original.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&(metadata.len() as u32).to_le_bytes());
        out.extend_from_slice(&metadata);
        out.extend_from_slice(&chunk.data);
    }
    Ok(out)
}

fn decode_tile(body: &[u8], header: &stored::Legacy13GenericTileHeader) -> Result<Vec<u8>> {
    let stored_pipeline = pipeline(header.compressor, header.level)?;
    let runtime = crate::filter::format_conversion::from_stored(&stored_pipeline)?;
    let ctx = crate::filter::FilterContext::new(
        crate::filter::format_conversion::datatype(header.datatype)?,
        header.cell_size.max(1),
        1,
    );
    let compressed = header.compressor != stored::Legacy13Compressor::NoCompression;
    let tile = reframe(body, compressed)?;
    crate::tile::unfilter_tile(&tile, &runtime, &ctx, header.tile_size)
}
