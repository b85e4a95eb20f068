//! Arrays written by TileDB 1.3, before format versions existed. Their
//! generic tiles have a 30-byte header (`compressed_size u64, tile_size u64,
//! datatype u8, cell_size u64, compressor u8, level i32`) and a body that is
//! either raw or `n_chunks u64` then `{original u64, compressed u64, data}`
//! per chunk; each field has one compressor instead of a filter pipeline.
//! TileDB 2.x no longer reads them. They are read here as format version 0:
//! the schema is mapped onto the stored schema model with one compression
//! filter per field, and 1.3 tiles are re-framed as modern tiles.

use crate::error::{Cause, Error, Result};
use crate::format::generated as stored;

/// The size of a TileDB 1.3 generic tile header.
pub const HEADER_SIZE: u64 = 30;

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

/// The runtime filter for a 1.3 compressor id (`None` = no compression).
fn compressor_filter(id: u8, level: i32) -> Result<Option<stored::Filter>> {
    use stored::{Compressor as C, FilterType as T};
    let (kind, compressor) = match id {
        0 => return Ok(None),
        1 => (T::Gzip, C::Gzip),
        2 => (T::Zstd, C::Zstd),
        3 => (T::Lz4, C::Lz4),
        10 => (T::Rle, C::Rle),
        11 => (T::Bzip2, C::Bzip2),
        12 => {
            return Ok(Some(stored::Filter {
                filter_type: T::DoubleDelta,
                options: stored::FilterOptions::DoubleDeltaOptions(stored::DoubleDeltaOptions {
                    compressor: C::DoubleDelta,
                    level,
                    reinterpret_type: stored::Datatype::Any,
                }),
            }))
        }
        4..=9 => return Err(Error::unsupported("TileDB 1.3 Blosc compression")),
        other => {
            return Err(Error::corrupt(
                0,
                "compressor",
                format!("unknown TileDB 1.3 compressor {other}"),
            ))
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

fn pipeline(id: u8, level: i32) -> Result<stored::FilterPipeline> {
    Ok(stored::FilterPipeline {
        max_chunk_size: crate::filter::DEFAULT_MAX_CHUNK_SIZE,
        filters: compressor_filter(id, level)?.into_iter().collect(),
    })
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize, field: &str) -> Result<&[u8]> {
        let out = self
            .at
            .checked_add(n)
            .and_then(|end| self.bytes.get(self.at..end))
            .ok_or_else(|| {
                Error::corrupt(
                    self.at as u64,
                    field.to_string(),
                    Cause::Truncated {
                        needed: n as u64,
                        available: self.bytes.len().saturating_sub(self.at) as u64,
                    },
                )
            })?;
        self.at += n;
        Ok(out)
    }
    fn u8(&mut self, field: &str) -> Result<u8> {
        Ok(self.take(1, field)?[0])
    }
    fn u32(&mut self, field: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4, field)?.try_into().unwrap_or([0; 4]),
        ))
    }
    fn i32(&mut self, field: &str) -> Result<i32> {
        Ok(i32::from_le_bytes(
            self.take(4, field)?.try_into().unwrap_or([0; 4]),
        ))
    }
    fn u64(&mut self, field: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8, field)?.try_into().unwrap_or([0; 8]),
        ))
    }
}

fn datatype(v: u8) -> Result<stored::Datatype> {
    stored::Datatype::from_value(v)
        .ok_or_else(|| Error::corrupt(0, "datatype", bad_value("Datatype", v)))
}

fn layout(v: u8) -> Result<stored::Layout> {
    stored::Layout::from_value(v).ok_or_else(|| Error::corrupt(0, "layout", bad_value("Layout", v)))
}

fn bad_value(enum_name: &'static str, value: u8) -> Cause {
    Cause::BadEnumValue {
        enum_name,
        value: value.into(),
    }
}

/// Decodes a TileDB 1.3 schema payload into the stored schema model
/// (version 0).
pub fn parse_schema(payload: &[u8]) -> Result<stored::ArraySchema> {
    let mut r = Reader {
        bytes: payload,
        at: 0,
    };
    // The library version that wrote it: major, minor, revision.
    r.take(12, "version")?;
    let array_type = match r.u8("array_type")? {
        0 => stored::ArrayType::Dense,
        1 => stored::ArrayType::Sparse,
        other => {
            return Err(Error::corrupt(
                12,
                "array_type",
                format!("unknown array type {other}"),
            ))
        }
    };
    let tile_order = layout(r.u8("tile_order")?)?;
    let cell_order = layout(r.u8("cell_order")?)?;
    let capacity = r.u64("capacity")?;
    let coords = (r.u8("coords compressor")?, r.i32("coords level")?);
    let offsets = (r.u8("offsets compressor")?, r.i32("offsets level")?);
    let dim_type = datatype(r.u8("domain type")?)?;
    let dim_num = r.u32("dim_num")?;
    let mut dimensions = Vec::new();
    for _ in 0..dim_num {
        let name_len = r.u32("dimension name size")? as usize;
        let name = r.take(name_len, "dimension name")?.to_vec();
        let size = dim_type.size() as usize;
        let domain = r.take(2 * size, "dimension domain")?.to_vec();
        let null_extent = r.u8("null tile extent")?;
        let extent = if null_extent == 0 {
            Some(r.take(size, "tile extent")?.to_vec())
        } else {
            None
        };
        dimensions.push(stored::Dimension {
            name,
            datatype: dim_type,
            cell_val_num: 1,
            domain,
            null_extent,
            extent,
            // Later versions' fields take their defaults.
            ..Default::default()
        });
    }
    let attribute_num = r.u32("attribute_num")?;
    let mut attributes = Vec::new();
    for _ in 0..attribute_num {
        let name_len = r.u32("attribute name size")? as usize;
        let name = r.take(name_len, "attribute name")?.to_vec();
        let dt = datatype(r.u8("attribute type")?)?;
        let compressor = (r.u8("attribute compressor")?, r.i32("attribute level")?);
        let cell_val_num = r.u32("cell_val_num")?;
        attributes.push(stored::Attribute {
            name,
            datatype: dt,
            cell_val_num,
            filters: pipeline(compressor.0, compressor.1)?,
            // Later versions' fields take their defaults.
            ..Default::default()
        });
    }
    if r.at != payload.len() {
        return Err(Error::corrupt(
            r.at as u64,
            "ArraySchema",
            "bytes after the TileDB 1.3 schema",
        ));
    }
    Ok(stored::ArraySchema {
        version: 0,
        array_type,
        tile_order,
        cell_order,
        capacity,
        coords_filters: pipeline(coords.0, coords.1)?,
        offsets_filters: pipeline(offsets.0, offsets.1)?,
        domain: stored::Domain {
            datatype: Some(dim_type),
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
    let mut r = Reader { bytes, at: 0 };
    let compressed = r.u64("compressed_size")?;
    let tile_size = r.u64("tile_size")?;
    let datatype = datatype(r.u8("datatype")?)?;
    let cell_size = r.u64("cell_size")?;
    let compressor = r.u8("compressor")?;
    let level = r.i32("compression_level")?;
    let body = r.take(compressed as usize, "tile")?;
    decode_tile(body, compressor, level, datatype, cell_size, tile_size)
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
    let mut r = Reader { bytes: body, at: 0 };
    let chunks = r.u64("chunk_num")?;
    if chunks == 0 || chunks > body.len() as u64 / 16 {
        return Err(Error::corrupt(
            0,
            "chunk_num",
            format!("{chunks} chunks in {} bytes", body.len()),
        ));
    }
    out.extend_from_slice(&chunks.to_le_bytes());
    for _ in 0..chunks {
        let original = u32::try_from(r.u64("chunk size")?)
            .map_err(|_| Error::corrupt(r.at as u64, "chunk size", "too large"))?;
        let size64 = r.u64("compressed chunk size")?;
        let size = u32::try_from(size64)
            .map_err(|_| Error::corrupt(r.at as u64, "compressed chunk size", "too large"))?;
        let data = r.take(size as usize, "chunk")?;
        // Compression metadata: no metadata parts, one data part.
        let metadata: Vec<u8> = [0u32, 1, original, size]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        out.extend_from_slice(&original.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&(metadata.len() as u32).to_le_bytes());
        out.extend_from_slice(&metadata);
        out.extend_from_slice(data);
    }
    if r.at != body.len() {
        return Err(Error::corrupt(
            r.at as u64,
            "tile",
            "bytes after the last chunk",
        ));
    }
    Ok(out)
}

fn decode_tile(
    body: &[u8],
    compressor: u8,
    level: i32,
    datatype: stored::Datatype,
    cell_size: u64,
    tile_size: u64,
) -> Result<Vec<u8>> {
    let stored_pipeline = pipeline(compressor, level)?;
    let runtime = crate::filter::format_conversion::from_stored(&stored_pipeline)?;
    let ctx = crate::filter::FilterContext::new(
        crate::filter::format_conversion::datatype(datatype)?,
        cell_size.max(1),
        1,
    );
    let tile = reframe(body, compressor != 0)?;
    crate::tile::unfilter_tile(&tile, &runtime, &ctx, tile_size)
}
