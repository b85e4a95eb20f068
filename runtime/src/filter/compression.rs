//! The compression filters: GZIP, ZSTD, LZ4, BZIP2, numeric RLE, DELTA and
//! DOUBLE_DELTA (TileDB's `CompressionFilter`; DICTIONARY and the string form
//! of RLE live in [`super::var_string`]).
//!
//! Chunk metadata: `n_metadata_parts u32, n_data_parts u32`, then for every
//! metadata part and then every data part `{original u32, compressed u32}`
//! (`CompressionChunkMetadata` in spec/filter_metadata.toml, read and
//! written through its generated view).
//! Chunk data: the compressed metadata parts, then the compressed data parts.
//! A compressor consumes the metadata of the filters before it, so on the way
//! back its output metadata is exactly the decompressed metadata parts.
#![allow(unsafe_code, reason = "liblz4 FFI; each block states its SAFETY")]

use super::datatype::delta_int_kind;
use super::stage::{
    codec_fault, corrupt, corrupt_part, recycle_parts, scratch, write_fault, Cursor, Fault,
    MetadataOut, OutBuf, Parts, StageEnv, StageResult,
};
use super::{delta, double_delta, rle, Filter};
use crate::error::Cause;
use crate::format::generated::{CompressedPart, CompressionChunkMetadataView};

/// One codec applied to one part.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Codec {
    Gzip {
        level: i32,
    },
    Zstd {
        level: i32,
    },
    Lz4,
    Bzip2 {
        level: i32,
    },
    Rle {
        cell_size: usize,
    },
    Delta {
        width: usize,
    },
    DoubleDelta {
        kind: super::datatype::IntKind,
        /// Whether the first delta counts towards the bit size (see
        /// [`double_delta::encode`]).
        count_first_delta: bool,
    },
}

impl Codec {
    /// The codec of a compression filter, or `None` for other filters.
    pub fn of(env: &StageEnv<'_>) -> StageResult<Option<Codec>> {
        let cell_size = env.ctx.cell_size;
        let int_kind = |reinterpret: &Option<super::Datatype>| {
            let seen = reinterpret.unwrap_or(env.datatype);
            delta_int_kind(seen).ok_or_else(|| {
                Fault::Usage(format!(
                    "{} does not apply to {} values",
                    env.filter.name(),
                    seen.name()
                ))
            })
        };
        Ok(Some(match env.filter {
            Filter::Gzip { level } => Codec::Gzip { level: *level },
            Filter::Zstd { level } => Codec::Zstd { level: *level },
            Filter::Lz4 { .. } => Codec::Lz4,
            Filter::Bzip2 { level } => Codec::Bzip2 { level: *level },
            Filter::Rle { .. } => {
                if cell_size == 0 || cell_size > u32::MAX as u64 {
                    return Err(Fault::Usage(format!(
                        "RLE needs a cell size, got {cell_size}"
                    )));
                }
                Codec::Rle {
                    cell_size: cell_size as usize,
                }
            }
            Filter::Delta { reinterpret, .. } => Codec::Delta {
                width: int_kind(reinterpret)?.size(),
            },
            Filter::DoubleDelta { reinterpret, .. } => Codec::DoubleDelta {
                kind: int_kind(reinterpret)?,
                count_first_delta: crate::format::generated::double_delta_counts_first_delta(
                    env.ctx.version,
                ),
            },
            _ => return Ok(None),
        }))
    }

    fn compress(self, input: &[u8], out: &mut Vec<u8>) -> StageResult<()> {
        match self {
            Codec::Gzip { level } => gzip_compress(level, input, out),
            Codec::Zstd { level } => zstd_compress(level, input, out),
            Codec::Lz4 => lz4_compress(input, out),
            Codec::Bzip2 { level } => bzip2_compress(level, input, out),
            Codec::Rle { cell_size } => rle::encode(cell_size, input, out),
            Codec::Delta { width } => delta::encode(width, input, out),
            Codec::DoubleDelta {
                kind,
                count_first_delta,
            } => double_delta::encode(kind, count_first_delta, input, out),
        }
    }

    /// Decompresses `input` into `out`, which is exactly the declared
    /// original size; producing more or less is an error.
    pub fn decompress(self, input: &[u8], out: &mut [u8]) -> StageResult<()> {
        match self {
            Codec::Gzip { .. } => gzip_decompress(input, out),
            Codec::Zstd { .. } => zstd_decompress(input, out),
            Codec::Lz4 => lz4_decompress(input, out),
            Codec::Bzip2 { .. } => bzip2_decompress(input, out),
            Codec::Rle { cell_size } => rle::decode(cell_size, input, out),
            Codec::Delta { width } => delta::decode(width, input, out),
            Codec::DoubleDelta { kind, .. } => double_delta::decode(kind, input, out),
        }
    }
}

pub(crate) fn forward<'a>(codec: Codec, input: Parts<'a>) -> StageResult<Parts<'a>> {
    let mut sizes = Vec::with_capacity(input.metadata.len() + input.data.len());
    // Room for the usual case without growing: the input's size and a
    // little (LZ4's and zstd's bounds on incompressible bytes).
    let mut out = scratch(input.data_len() + input.data_len() / 128 + 1024);
    for part in input.all_slices() {
        let orig_len = u32::try_from(part.len())
            .map_err(|_| Fault::Usage("a part exceeds 4 GiB and cannot be compressed".into()))?;
        let start = out.len();
        codec.compress(part, &mut out)?;
        let compressed_len = u32::try_from(out.len() - start)
            .map_err(|_| Fault::Usage("compressed part exceeds 4 GiB".into()))?;
        sizes.push(CompressedPart {
            orig_len,
            compressed_len,
        });
    }
    let (md_parts, data_parts) = sizes.split_at(input.metadata.len());
    let mut header = Vec::with_capacity(8 + 8 * sizes.len());
    CompressionChunkMetadataView::write(&mut header, md_parts, data_parts).map_err(write_fault)?;
    recycle_parts(input);
    Ok(Parts {
        metadata: vec![header],
        data: vec![out.into()],
    })
}

pub(crate) fn reverse(
    codec: Codec,
    md: &mut Cursor<'_>,
    data: &[u8],
    out: &mut OutBuf<'_>,
) -> StageResult<MetadataOut> {
    let (header, start) = md.read_view::<CompressionChunkMetadataView<'_>>(())?;
    let (md_parts, data_parts) = (header.md_parts(), header.data_parts());
    let sizes = || {
        md_parts.iter().chain(data_parts.iter()).map(|part| {
            part.map(|p| (p.orig_len() as usize, p.compressed_len() as usize))
                .map_err(|e| md.fault(start, e))
        })
    };
    let n_metadata = md_parts.len();
    let limit = out.limit();
    let mut metadata_len = 0usize;
    let mut data_len = 0usize;
    let mut compressed_len = 0usize;
    for (i, part) in sizes().enumerate() {
        let (original, compressed) = part?;
        if i < n_metadata {
            metadata_len = metadata_len.saturating_add(original);
        } else {
            data_len = data_len.saturating_add(original);
        }
        compressed_len = compressed_len.saturating_add(compressed);
    }
    if compressed_len > data.len() {
        return corrupt_part(
            "compressed parts",
            Cause::Truncated {
                needed: compressed_len as u64,
                available: data.len() as u64,
            },
        );
    }
    if metadata_len > limit {
        return corrupt_part(
            "metadata parts",
            Cause::OutOfRange {
                value: metadata_len as u64,
                limit: limit as u64,
            },
        );
    }
    let mut metadata = vec![0u8; metadata_len];
    let output = out.alloc(data_len)?;
    let (mut input_pos, mut md_pos, mut data_pos) = (0usize, 0usize, 0usize);
    for (i, part) in sizes().enumerate() {
        let (original, compressed) = part?;
        let input = &data[input_pos..input_pos + compressed];
        input_pos += compressed;
        let target = if i < n_metadata {
            let t = &mut metadata[md_pos..md_pos + original];
            md_pos += original;
            t
        } else {
            let t = &mut output[data_pos..data_pos + original];
            data_pos += original;
            t
        };
        codec.decompress(input, target)?;
    }
    Ok(MetadataOut::New(metadata))
}

fn gzip_compress(level: i32, input: &[u8], out: &mut Vec<u8>) -> StageResult<()> {
    // TileDB: level < 0 means zlib's default (Z_DEFAULT_COMPRESSION = 6);
    // deflateInit refuses levels above 9.
    let level = if level < 0 { 6 } else { level as u32 };
    if level > 9 {
        return Err(Fault::Usage(format!(
            "GZIP level {level} is out of range 0..=9"
        )));
    }
    let mut z = flate2::Compress::new(flate2::Compression::new(level), true);
    // zlib's deflateBound for a one-shot stream, plus slack.
    out.reserve(input.len() + input.len() / 1000 + 64);
    loop {
        let before_in = z.total_in() as usize;
        let status = z
            .compress_vec(&input[before_in..], out, flate2::FlushCompress::Finish)
            .map_err(|e| Fault::Usage(format!("zlib: {e}")))?;
        match status {
            flate2::Status::StreamEnd => return Ok(()),
            _ => out.reserve(out.capacity().max(64)),
        }
    }
}

fn gzip_decompress(input: &[u8], out: &mut [u8]) -> StageResult<()> {
    let mut z = flate2::Decompress::new(true);
    let status = z
        .decompress(input, out, flate2::FlushDecompress::Finish)
        .map_err(|e| codec_fault("zlib", e.to_string()))?;
    if status != flate2::Status::StreamEnd {
        return Err(codec_fault(
            "zlib",
            format!(
                "the stream does not end within the declared {} bytes",
                out.len()
            ),
        ));
    }
    if z.total_out() as usize != out.len() {
        return corrupt(Cause::Inconsistent {
            what: "the zlib stream's decompressed size",
            expected: out.len() as u64,
            found: z.total_out(),
        });
    }
    Ok(())
}

fn zstd_compress(level: i32, input: &[u8], out: &mut Vec<u8>) -> StageResult<()> {
    // TileDB: levels below -7 mean the default, 3.
    let level = if level < -7 { 3 } else { level };
    let start = out.len();
    // The frame goes into the spare capacity after `start`, not zeroed
    // first: the cursor sets the length to what zstd wrote.
    out.reserve(zstd::zstd_safe::compress_bound(input.len()));
    thread_local! {
        // One compression context per thread, reused for every chunk:
        // creating one per 64 KiB chunk costs a few percent of the
        // compression. `ZSTD_compressCCtx` sets the level's parameters on
        // each call, so the frame is the one `ZSTD_compress` makes.
        static CONTEXT: std::cell::RefCell<zstd::zstd_safe::CCtx<'static>> =
            std::cell::RefCell::new(zstd::zstd_safe::CCtx::create());
    }
    let mut cursor = std::io::Cursor::new(&mut *out);
    cursor.set_position(start as u64);
    CONTEXT
        .with(|c| c.borrow_mut().compress(&mut cursor, input, level))
        .map_err(|code| Fault::Usage(format!("zstd: {}", zstd::zstd_safe::get_error_name(code))))?;
    Ok(())
}

fn zstd_decompress(input: &[u8], out: &mut [u8]) -> StageResult<()> {
    // Decompressing into a slice of the declared size: a frame that would
    // produce more fails instead of allocating.
    thread_local! {
        // One decompression context per thread, reused for every chunk
        // (creating one per call costs about as much as a small chunk).
        static CONTEXT: std::cell::RefCell<zstd::zstd_safe::DCtx<'static>> =
            std::cell::RefCell::new(zstd::zstd_safe::DCtx::create());
    }
    let n = CONTEXT
        .with(|c| c.borrow_mut().decompress(out, input))
        .map_err(|code| codec_fault("zstd", zstd::zstd_safe::get_error_name(code).to_string()))?;
    if n != out.len() {
        return corrupt(Cause::Inconsistent {
            what: "the zstd frame's decompressed size",
            expected: out.len() as u64,
            found: n as u64,
        });
    }
    Ok(())
}

/// liblz4's `LZ4_compress_default`, as TileDB calls it: the same raw block,
/// byte for byte.
fn lz4_compress(input: &[u8], out: &mut Vec<u8>) -> StageResult<()> {
    let len =
        i32::try_from(input.len()).map_err(|_| Fault::Usage("LZ4 input exceeds 2 GiB".into()))?;
    // SAFETY: LZ4_compressBound only computes a size from an integer.
    let bound = unsafe { lz4_sys::LZ4_compressBound(len) };
    if bound <= 0 {
        return Err(Fault::Usage("LZ4 input too large".into()));
    }
    let start = out.len();
    // The block goes into the spare capacity, not zeroed first.
    out.reserve(bound as usize);
    // SAFETY: `input` is valid for `len` bytes and the spare capacity for
    // at least `bound` bytes, the most LZ4_compress_default writes.
    let written = unsafe {
        lz4_sys::LZ4_compress_default(
            input.as_ptr().cast(),
            out.spare_capacity_mut().as_mut_ptr().cast(),
            len,
            bound,
        )
    };
    if written <= 0 && !input.is_empty() {
        return Err(Fault::Usage("LZ4 compression failed".into()));
    }
    // SAFETY: LZ4 initialised the first `written` bytes (at most `bound`,
    // within the capacity reserved) of the spare capacity.
    unsafe { out.set_len(start + written.max(0) as usize) };
    Ok(())
}

fn lz4_decompress(input: &[u8], out: &mut [u8]) -> StageResult<()> {
    let (Ok(input_len), Ok(capacity)) = (i32::try_from(input.len()), i32::try_from(out.len()))
    else {
        return corrupt(Cause::OutOfRange {
            value: input.len().max(out.len()) as u64,
            limit: i32::MAX as u64,
        });
    };
    // liblz4's bounds-checked decoder (faster than lz4_flex's): it reads at
    // most `input_len` bytes from `input` and writes at most `capacity`
    // bytes into `out`, returning a negative number for a malformed block.
    // SAFETY: both pointers are valid for the lengths passed.
    let n = unsafe {
        lz4_sys::LZ4_decompress_safe(
            input.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            input_len,
            capacity,
        )
    };
    if n < 0 {
        return Err(codec_fault(
            "lz4",
            format!("malformed block (liblz4 error {n})"),
        ));
    }
    if n as usize != out.len() {
        return corrupt(Cause::Inconsistent {
            what: "the lz4 block's decompressed size",
            expected: out.len() as u64,
            found: n as u64,
        });
    }
    Ok(())
}

fn bzip2_compress(level: i32, input: &[u8], out: &mut Vec<u8>) -> StageResult<()> {
    // TileDB: block size (the level) below 1 means 1; above 9 bzip2 refuses.
    let level = if level < 1 { 1 } else { level as u32 };
    if level > 9 {
        return Err(Fault::Usage(format!(
            "BZIP2 level {level} is out of range 1..=9"
        )));
    }
    // Work factor 0 as in BZ2_bzBuffToBuffCompress.
    let mut z = bzip2::Compress::new(bzip2::Compression::new(level), 0);
    out.reserve(input.len() + input.len() / 100 + 600);
    loop {
        let before_in = z.total_in() as usize;
        let status = z
            .compress_vec(&input[before_in..], out, bzip2::Action::Finish)
            .map_err(|e| Fault::Usage(format!("bzip2: {e}")))?;
        match status {
            bzip2::Status::StreamEnd => return Ok(()),
            _ => out.reserve(out.capacity().max(64)),
        }
    }
}

fn bzip2_decompress(input: &[u8], out: &mut [u8]) -> StageResult<()> {
    let mut z = bzip2::Decompress::new(false);
    let status = z
        .decompress(input, out)
        .map_err(|e| codec_fault("bzip2", e.to_string()))?;
    if status != bzip2::Status::StreamEnd {
        return Err(codec_fault(
            "bzip2",
            format!(
                "the stream does not end within the declared {} bytes",
                out.len()
            ),
        ));
    }
    if z.total_out() as usize != out.len() {
        return corrupt(Cause::Inconsistent {
            what: "the bzip2 stream's decompressed size",
            expected: out.len() as u64,
            found: z.total_out(),
        });
    }
    Ok(())
}
