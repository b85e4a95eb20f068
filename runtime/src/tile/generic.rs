//! Generic tiles: a header (format version, sizes, encryption type and the
//! filter pipeline) followed by one filtered tile. Schemas, fragment metadata
//! sections, metadata, commits and group details are all stored this way.

use crate::error::{Cause, Error, Result};
use crate::filter::{format_conversion, FilterContext};
use crate::format::generated::{EncryptionType, GenericTileHeader};
use binrw::BinRead;

use crate::format::io::{read_exact_from, read_prefix, write_to_vec};
use crate::storage::{RelPath, Storage};
use crate::tile::{filter_tile, unfilter_tile};

/// Unfiltered generic tiles larger than this are refused before decoding
/// (as unsupported): a forged size must not make us allocate without bound,
/// and few metadata tiles come close (256 MiB of tile offsets would
/// describe 32 million tiles; array metadata holding a value that large
/// would). With the filter stages' own bound (at most 4×
/// their chunk) it keeps the fuzz targets under their 2 GiB allocation cap.
pub const MAX_GENERIC_TILE_SIZE: u64 = 256 << 20;

/// Generic tiles whose filtered body (`persisted_size`) is larger than this
/// are refused (as unsupported) before it is read: the filters of a tile of
/// at most [`MAX_GENERIC_TILE_SIZE`] bytes add a few dozen bytes per chunk
/// (checksums, lengths, an AES tag) and compressors grow incompressible
/// input by well under 1%, so twice that size is more than any tile we
/// accept can need, and a forged size cannot make us read a huge file.
pub const MAX_GENERIC_TILE_PERSISTED_SIZE: u64 = 2 * MAX_GENERIC_TILE_SIZE;

/// The largest generic tile header read from storage: 42 fixed bytes plus
/// the filter pipeline, a few to a few dozen bytes per filter. A header
/// claiming more is refused without reading it.
pub const MAX_GENERIC_TILE_HEADER_SIZE: u64 = 1 << 20;

/// The bytes read first for a generic tile from storage: any header TileDB
/// writes and, for the many small tiles (schemas, commits, tile tables of a
/// few hundred tiles), the body too, so that such a tile costs one read.
const FIRST_READ: u64 = 4096;

/// A decoded generic tile.
#[derive(Debug, Clone)]
pub struct GenericTile {
    /// The header: format version, sizes, the filter pipeline.
    pub header: GenericTileHeader,
    /// The unfiltered payload.
    pub payload: Vec<u8>,
    /// Offset of the header in the buffer it was read from.
    pub offset: u64,
    /// Offset of the filtered tile (just after the header).
    pub body_offset: u64,
    /// The offset just past the tile.
    pub end: u64,
}

/// Reads the generic tile starting at `offset` of `bytes`. `key` is the
/// array's AES-256-GCM key; an encrypted tile without one is `Unsupported`
/// (a key is needed), a key given for a plain tile is a usage error (TileDB
/// refuses the mismatch too). Errors carry offsets within `bytes`.
pub fn read_generic_tile(bytes: &[u8], offset: u64, key: Option<&[u8; 32]>) -> Result<GenericTile> {
    let start = usize::try_from(offset)
        .ok()
        .filter(|s| *s <= bytes.len())
        .ok_or_else(|| {
            Error::corrupt(
                offset,
                "GenericTileHeader",
                Cause::OutOfRange {
                    value: offset,
                    limit: bytes.len() as u64,
                },
            )
        })?;
    let rest = &bytes[start..];
    let (header, header_len): (GenericTileHeader, u64) =
        read_prefix(rest, (), "GenericTileHeader").map_err(|e| e.at_base(offset))?;
    let encrypted = header.encryption_type == EncryptionType::Aes256Gcm;
    let mut ctx = FilterContext::new(
        format_conversion::datatype(header.datatype)?,
        header.cell_size.max(1),
        header.version,
    );
    match (encrypted, key) {
        (true, Some(key)) => ctx = ctx.with_key(*key),
        (true, None) => {
            return Err(Error::unsupported(
                "the array is encrypted with AES-256-GCM; an encryption key is needed",
            ))
        }
        (false, Some(_)) => {
            return Err(Error::Usage(
                "an encryption key was given but the array is not encrypted".into(),
            ))
        }
        (false, None) => {}
    }
    let pipeline = format_conversion::from_stored_at(&header.pipeline, header.version)
        .map_err(|e| e.within("GenericTileHeader.pipeline").at_base(offset))?;
    let body_start = offset + header_len;
    let body_end = check_generic_tile_sizes(&header, offset, header_len, bytes.len() as u64)?;
    let body = &bytes[body_start as usize..body_end as usize];
    let payload = unfilter_tile(body, &pipeline, &ctx, header.tile_size)
        .map_err(|e| e.within("generic tile").at_base(body_start))?;
    Ok(GenericTile {
        header,
        payload,
        offset,
        body_offset: body_start,
        end: body_end,
    })
}

/// The generic tile that is the whole of `bytes` — the strict view `tdb
/// check` takes of a file that should be one tile (a schema, a commit,
/// metadata): bytes after the tile are an error, located where they start.
/// The reader ignores them, as TileDB does ([`load_generic_tile_file`]).
pub fn read_generic_tile_exact(bytes: &[u8], key: Option<&[u8; 32]>) -> Result<GenericTile> {
    let tile = read_generic_tile(bytes, 0, key)?;
    if tile.end != bytes.len() as u64 {
        return Err(Error::corrupt(
            tile.end,
            "file",
            Cause::TrailingBytes {
                count: bytes.len() as u64 - tile.end,
            },
        ));
    }
    Ok(tile)
}

impl GenericTile {
    /// The payload parsed as `T`, all of it. Payload offsets count
    /// unfiltered bytes, which do not map to file bytes: an error points at
    /// the tile's body and names the payload offset in its field.
    pub fn parse<T: BinRead>(&self, args: T::Args<'_>, what: &str) -> Result<T> {
        read_exact_from(&self.payload, args, what).map_err(|e| self.locate(e))
    }

    /// The payload's first bytes parsed as `T`, and how many it took.
    pub fn parse_prefix<T: BinRead>(&self, args: T::Args<'_>, what: &str) -> Result<(T, u64)> {
        read_prefix(&self.payload, args, what).map_err(|e| self.locate(e))
    }

    /// An error located in the payload, relocated as [`Self::parse`] does.
    pub fn locate(&self, mut err: Error) -> Error {
        if let Error::Corrupt { at, .. } = &mut err {
            at.field = if at.field.is_empty() {
                format!("payload byte {}", at.offset)
            } else {
                format!("{} (payload byte {})", at.field, at.offset)
            };
            at.offset = self.body_offset;
        }
        err
    }
}

/// Judges a header's sizes before its body is read or decoded: the tile
/// must unfilter to at most [`MAX_GENERIC_TILE_SIZE`] bytes and its body
/// must lie within the first `available` bytes (of the data or the file)
/// and be at most [`MAX_GENERIC_TILE_PERSISTED_SIZE`]. Returns the
/// offset just past the tile.
pub fn check_generic_tile_sizes(
    header: &GenericTileHeader,
    offset: u64,
    header_len: u64,
    available: u64,
) -> Result<u64> {
    if header.tile_size > MAX_GENERIC_TILE_SIZE {
        // Refused as too large rather than as corrupt: TileDB sets no such
        // limit, and a very large metadata value would make a tile this big.
        return Err(Error::unsupported(format!(
            "the generic tile at byte {offset} unfilters to {} bytes (GenericTileHeader.tile_size \
             at byte {}), more than the {MAX_GENERIC_TILE_SIZE} this reader accepts",
            header.tile_size,
            offset + 12
        )));
    }
    let body_end = (offset + header_len)
        .checked_add(header.persisted_size)
        .filter(|end| *end <= available)
        .ok_or_else(|| {
            Error::corrupt(
                offset + 4,
                "GenericTileHeader.persisted_size",
                Cause::Truncated {
                    needed: header.persisted_size,
                    available: available.saturating_sub(offset + header_len),
                },
            )
        })?;
    if header.persisted_size > MAX_GENERIC_TILE_PERSISTED_SIZE {
        return Err(Error::unsupported(format!(
            "the generic tile at byte {offset} stores {} filtered bytes \
             (GenericTileHeader.persisted_size at byte {}), more than the \
             {MAX_GENERIC_TILE_PERSISTED_SIZE} this reader accepts",
            header.persisted_size,
            offset + 4
        )));
    }
    Ok(body_end)
}

/// [`read_generic_tile`] for the tile at `offset` of `file` (of
/// `file_size` bytes), read by ranged reads: the header first, judged, then
/// exactly the tile's body. Nothing before or after the tile is read, so a
/// file far larger than its tile costs no more than the tile. Errors carry
/// file offsets (the caller names the file).
pub fn load_generic_tile(
    storage: &dyn Storage,
    file: &RelPath,
    file_size: u64,
    offset: u64,
    key: Option<&[u8; 32]>,
) -> Result<GenericTile> {
    let (header, header_len, mut bytes) =
        load_generic_tile_header(storage, file, file_size, offset)?;
    let end = check_generic_tile_sizes(&header, offset, header_len, file_size)?;
    let len = end - offset;
    let have = bytes.len() as u64;
    if have >= len {
        bytes.truncate(len as usize);
    } else {
        let rest = storage.read_range(file, offset + have, len - have)?;
        bytes.extend_from_slice(&rest);
    }
    let mut tile = read_generic_tile(&bytes, 0, key).map_err(|e| e.at_base(offset))?;
    tile.offset += offset;
    tile.body_offset += offset;
    tile.end += offset;
    Ok(tile)
}

/// The header of the generic tile at `offset` of `file` (of `file_size`
/// bytes), its length, and the bytes read from `offset` on: the header and
/// perhaps some of the body. Reads a few KiB, more only for a header with
/// a long pipeline, never more than [`MAX_GENERIC_TILE_HEADER_SIZE`].
pub fn load_generic_tile_header(
    storage: &dyn Storage,
    file: &RelPath,
    file_size: u64,
    offset: u64,
) -> Result<(GenericTileHeader, u64, Vec<u8>)> {
    let remaining = file_size.checked_sub(offset).ok_or_else(|| {
        Error::corrupt(
            offset,
            "GenericTileHeader",
            Cause::OutOfRange {
                value: offset,
                limit: file_size,
            },
        )
    })?;
    let mut bytes = storage.read_range(file, offset, remaining.min(FIRST_READ))?;
    let parsed = match read_prefix::<GenericTileHeader>(&bytes, (), "GenericTileHeader") {
        // A header longer than the first read (a long pipeline): read up
        // to the bound and parse again; still failing, the error stands.
        Err(_) if (bytes.len() as u64) < remaining.min(MAX_GENERIC_TILE_HEADER_SIZE) => {
            bytes =
                storage.read_range(file, offset, remaining.min(MAX_GENERIC_TILE_HEADER_SIZE))?;
            read_prefix::<GenericTileHeader>(&bytes, (), "GenericTileHeader")
        }
        parsed => parsed,
    };
    let (header, header_len) = parsed.map_err(|e| e.at_base(offset))?;
    Ok((header, header_len, bytes))
}

/// Reads a file that is one generic tile at its start ([`load_generic_tile`]),
/// naming the file in errors. Bytes after the tile are not read: the reader
/// ignores them, as TileDB does.
pub fn load_generic_tile_file(
    storage: &dyn Storage,
    file: &RelPath,
    key: Option<&[u8; 32]>,
) -> Result<GenericTile> {
    let describe = storage.describe(file);
    let size = storage.size(file)?;
    load_generic_tile(storage, file, size, 0, key).map_err(|e| e.in_file(&describe))
}

/// Serializes `payload` as a generic tile the way TileDB writes it: header
/// version `version`, CHAR cells of one byte, GZIP level 1, plus AES-256-GCM
/// when `key` is given.
pub fn write_generic_tile(payload: &[u8], version: u32, key: Option<&[u8; 32]>) -> Result<Vec<u8>> {
    let pipeline = crate::filter::FilterPipeline::generic_tile(key.is_some());
    let mut ctx = FilterContext::generic_tile(version);
    if let Some(key) = key {
        ctx = ctx.with_key(*key);
    }
    let body = filter_tile(payload, &pipeline, &ctx)?;
    let header = GenericTileHeader {
        version,
        persisted_size: body.len() as u64,
        tile_size: payload.len() as u64,
        datatype: crate::format::generated::Datatype::Char,
        cell_size: 1,
        encryption_type: if key.is_some() {
            EncryptionType::Aes256Gcm
        } else {
            EncryptionType::NoEncryption
        },
        pipeline: format_conversion::to_stored(&pipeline)?,
    };
    let mut out = write_to_vec(&header, (), "GenericTileHeader")?;
    out.extend_from_slice(&body);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_plain_and_encrypted() {
        let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let key = [7u8; 32];
        for key in [None, Some(&key)] {
            let bytes = write_generic_tile(&payload, 22, key).unwrap();
            let tile = read_generic_tile(&bytes, 0, key).unwrap();
            assert_eq!(tile.payload, payload);
            assert_eq!(tile.end, bytes.len() as u64);
        }
        let encrypted = write_generic_tile(&payload, 22, Some(&key)).unwrap();
        let err = read_generic_tile(&encrypted, 0, None).unwrap_err();
        assert_eq!(err.class(), crate::ErrorClass::Unsupported);
    }

    /// Faults in the header name the field at its own offset (version u32,
    /// then persisted_size u64 at 4, tile_size u64 at 12).
    #[test]
    fn header_faults_name_the_field_at_its_offset() {
        let mut bytes = vec![0u8; 3];
        bytes.extend(write_generic_tile(b"hello world", 22, None).unwrap());
        let mut long = bytes.clone();
        long[3 + 4..3 + 12].copy_from_slice(&u64::MAX.to_le_bytes());
        let err = read_generic_tile(&long, 3, None).unwrap_err().to_string();
        assert!(
            err.contains("byte 7") && err.contains("persisted_size"),
            "{err}"
        );
        let mut huge = bytes.clone();
        huge[3 + 12..3 + 20].copy_from_slice(&(MAX_GENERIC_TILE_SIZE + 1).to_le_bytes());
        let err = read_generic_tile(&huge, 3, None).unwrap_err();
        assert_eq!(err.class(), crate::ErrorClass::Unsupported);
        let err = err.to_string();
        assert!(
            err.contains("byte 15") && err.contains("tile_size"),
            "{err}"
        );
        let tile = read_generic_tile(&bytes, 3, None).unwrap();
        assert_eq!((tile.offset, tile.end), (3, bytes.len() as u64));
        assert_eq!(tile.body_offset, tile.end - tile.header.persisted_size);
    }

    #[test]
    fn truncated_tiles_are_corrupt() {
        let bytes = write_generic_tile(b"hello world", 22, None).unwrap();
        for cut in 0..bytes.len() {
            let err = read_generic_tile(&bytes[..cut], 0, None).unwrap_err();
            assert_eq!(err.class(), crate::ErrorClass::Corrupt, "cut at {cut}");
        }
    }
}
