//! The targets over filters: one filter's decoding from a header of
//! options, and an arbitrary stored pipeline; each tile decoded whole and
//! scattered, which must agree.

use tiledb_runtime::filter::{self, Datatype, Filter, FilterContext, FilterPipeline, WebpFormat};
use tiledb_runtime::format::generated as g;
use tiledb_runtime::format::io::read_exact_from;
use tiledb_runtime::schema::MAX_SUPPORTED_VERSION;
use tiledb_runtime::tile::{
    parse_chunks, unfilter_tile, unfilter_tile_scattered, unfilter_var_string_tile,
    unfilter_var_string_tile_in_place, Across, ScatterRun, TileJob,
};

use crate::{split_pair, FUZZ_KEY, MAX_FUZZ_TILE};

/// The filter a `filter_*` target decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterKind {
    /// No filter: the tile is stored as is.
    None,
    /// GZIP compression.
    Gzip,
    /// Zstandard compression.
    Zstd,
    /// LZ4 compression.
    Lz4,
    /// Run-length encoding.
    Rle,
    /// BZIP2 compression.
    Bzip2,
    /// Double-delta encoding of integers.
    DoubleDelta,
    /// Delta encoding of integers.
    Delta,
    /// Dictionary encoding of strings.
    Dictionary,
    /// Bit-width reduction of integers.
    BitWidthReduction,
    /// Positive-delta encoding of integers.
    PositiveDelta,
    /// Bit shuffling.
    BitShuffle,
    /// Byte shuffling.
    ByteShuffle,
    /// An MD5 checksum over the tile.
    Md5,
    /// A SHA-256 checksum over the tile.
    Sha256,
    /// Floats stored as scaled, offset integers.
    ScaleFloat,
    /// XOR of each value with the previous one.
    Xor,
    /// WebP image compression.
    Webp,
    /// AES-256-GCM encryption (with the fuzz key).
    Aes,
}

/// The bytes before the tile in a `filter_*` input: datatype, version, cell
/// value count, then 29 bytes of filter options.
pub const FILTER_HEADER: usize = 32;

fn le_u32(bytes: &[u8], at: usize) -> u32 {
    let mut raw = [0u8; 4];
    if let Some(src) = bytes.get(at..at + 4) {
        raw.copy_from_slice(src);
    }
    u32::from_le_bytes(raw)
}

fn le_f64(bytes: &[u8], at: usize) -> f64 {
    let mut raw = [0u8; 8];
    if let Some(src) = bytes.get(at..at + 8) {
        raw.copy_from_slice(src);
    }
    f64::from_le_bytes(raw)
}

fn reinterpret(byte: u8) -> Option<Datatype> {
    if byte == 0xFF {
        None
    } else {
        Datatype::from_value(byte)
    }
}

/// The filter a header describes.
pub fn filter_from_options(kind: FilterKind, o: &[u8]) -> Filter {
    let level = le_u32(o, 0) as i32;
    match kind {
        FilterKind::None => Filter::None,
        FilterKind::Gzip => Filter::Gzip { level },
        FilterKind::Zstd => Filter::Zstd { level },
        FilterKind::Lz4 => Filter::Lz4 { level },
        FilterKind::Rle => Filter::Rle { level },
        FilterKind::Bzip2 => Filter::Bzip2 { level },
        FilterKind::DoubleDelta => Filter::DoubleDelta {
            level,
            reinterpret: reinterpret(o.get(4).copied().unwrap_or(0xFF)),
        },
        FilterKind::Delta => Filter::Delta {
            level,
            reinterpret: reinterpret(o.get(4).copied().unwrap_or(0xFF)),
        },
        FilterKind::Dictionary => Filter::Dictionary { level },
        FilterKind::BitWidthReduction => Filter::BitWidthReduction {
            max_window: le_u32(o, 0),
        },
        FilterKind::PositiveDelta => Filter::PositiveDelta {
            max_window: le_u32(o, 0),
        },
        FilterKind::BitShuffle => Filter::BitShuffle,
        FilterKind::ByteShuffle => Filter::ByteShuffle,
        FilterKind::Md5 => Filter::ChecksumMd5,
        FilterKind::Sha256 => Filter::ChecksumSha256,
        FilterKind::ScaleFloat => Filter::ScaleFloat {
            scale: le_f64(o, 0),
            offset: le_f64(o, 8),
            byte_width: u64::from(o.get(16).copied().unwrap_or(0)),
        },
        FilterKind::Xor => Filter::Xor,
        FilterKind::Webp => Filter::Webp {
            quality: f32::from_bits(le_u32(o, 0)),
            format: WebpFormat::from_value(o.get(4).copied().unwrap_or(0) % 5)
                .unwrap_or(WebpFormat::Rgb),
            lossless: o.get(5).is_some_and(|b| b & 1 == 1),
            y_extent: u16::from_le_bytes([
                o.get(6).copied().unwrap_or(0),
                o.get(7).copied().unwrap_or(0),
            ]),
            x_extent: u16::from_le_bytes([
                o.get(8).copied().unwrap_or(0),
                o.get(9).copied().unwrap_or(0),
            ]),
        },
        FilterKind::Aes => Filter::Aes256Gcm,
    }
}

/// Decodes `tile` with `pipeline` as a fixed tile and, for string types, as
/// a whole-string var tile.
fn decode_tile(tile: &[u8], pipeline: &FilterPipeline, ctx: &FilterContext, cells: u64) {
    let Ok(chunks) = parse_chunks(tile) else {
        return;
    };
    let expected: u64 = chunks.iter().map(|c| c.original_len as u64).sum();
    if expected > MAX_FUZZ_TILE {
        return;
    }
    let whole = unfilter_tile(tile, pipeline, ctx, expected);
    // The dense read's path: the same tile decoded chunk by chunk into
    // runs that cut across chunks at odd places. It must agree with the
    // whole decode: the same bytes, and no failure the whole decode does
    // not have (it may succeed where the whole decode fails: a chunk of no
    // bytes holds no run and is not decoded).
    let mut scattered = vec![0u8; expected as usize];
    let mut runs = Vec::new();
    let mut rest = scattered.as_mut_slice();
    let mut at = 0u64;
    let mut step = 1 + (tile.len() % 97);
    while !rest.is_empty() {
        let take = step.min(rest.len());
        let (run, tail) = std::mem::take(&mut rest).split_at_mut(take);
        runs.push(ScatterRun {
            tile_offset: at,
            dest: run,
            across: None,
        });
        at += take as u64;
        rest = tail;
        step = step * 7 % 65_521 + 1;
    }
    let job = TileJob {
        bytes: tile,
        file_offset: 0,
        index: 0,
        expected_len: expected,
        wanted: None,
    };
    let outcome = unfilter_tile_scattered(&job, pipeline, ctx, runs);
    match (&whole, outcome) {
        (Ok(bytes), Ok(())) => assert!(
            *bytes == scattered,
            "a scattered decode differs from the whole tile's"
        ),
        (Err(_), _) => {}
        (Ok(_), Err(e)) => panic!("the whole tile decodes, the scattered decode fails: {e}"),
    }
    if let Ok(bytes) = &whole {
        scatter_across_agrees(&job, pipeline, ctx, bytes);
    }
    if filter::datatype::is_ascii_or_utf8(ctx.datatype) {
        if let Ok((data, starts)) = unfilter_var_string_tile(tile, pipeline, ctx, expected, cells) {
            strings_in_place_agree(tile, pipeline, ctx, &data, &starts);
        }
    }
}

/// The dense read's path for strings encoded whole: the tile decoded in
/// the place a result gives it, its cells' ends shifted by where its bytes
/// start there. It must give the strings and offsets of the decode on its
/// own (`data`, and `starts`, one per cell).
fn strings_in_place_agree(
    tile: &[u8],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    data: &[u8],
    starts: &[u64],
) {
    let base = 3 * data.len() as u64 + 1;
    let mut placed = vec![0u8; data.len()];
    let mut ends = vec![0u64; starts.len()];
    if let Err(e) =
        unfilter_var_string_tile_in_place(tile, pipeline, ctx, &mut placed, &mut ends, base)
    {
        panic!("the string tile decodes on its own, in place it fails: {e}");
    }
    assert!(placed == data, "strings decoded in place differ");
    for (i, end) in ends.iter().enumerate() {
        let own = starts.get(i + 1).copied().unwrap_or(data.len() as u64);
        assert_eq!(*end, base + own, "the end of cell {i} decoded in place");
    }
}

/// The column-major read's path: the tile decoded into runs that each take
/// one cell every `every` bytes (the tile's columns, in a shape taken from
/// its size). Each must receive those cells of the whole decode, `whole`.
fn scatter_across_agrees(
    job: &TileJob<'_>,
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    whole: &[u8],
) {
    let cell = 1 + job.bytes.len() % 9;
    let every = cell * (1 + job.bytes.len() % 61);
    if whole.len() < cell {
        return;
    }
    let columns = (every / cell).min(whole.len() / cell);
    let mut outputs: Vec<Vec<u8>> = (0..columns)
        .map(|j| vec![0u8; ((whole.len() - cell - j * cell) / every + 1) * cell])
        .collect();
    let runs = outputs
        .iter_mut()
        .enumerate()
        .map(|(j, dest)| ScatterRun {
            tile_offset: (j * cell) as u64,
            dest,
            across: Some(Across {
                cell: cell as u64,
                every: every as u64,
            }),
        })
        .collect();
    if let Err(e) = unfilter_tile_scattered(job, pipeline, ctx, runs) {
        panic!("the whole tile decodes, a decode across it fails: {e}");
    }
    for (j, got) in outputs.iter().enumerate() {
        for (i, cell_bytes) in got.chunks_exact(cell).enumerate() {
            let at = j * cell + i * every;
            assert!(
                cell_bytes == &whole[at..at + cell],
                "a decode across the tile differs from the whole tile's"
            );
        }
    }
}

/// One filter's decoding: `[FILTER_HEADER bytes][tile]`.
pub fn filter_one(data: &[u8], kind: FilterKind) {
    let Some((header, tile)) = data.split_first_chunk::<FILTER_HEADER>() else {
        return;
    };
    let datatype = Datatype::from_value(header[0]).unwrap_or(Datatype::Uint8);
    let version = 1 + u32::from(header[1]) % MAX_SUPPORTED_VERSION;
    let cell_val_num = 1 + u64::from(header[2] % 8);
    let pipeline = FilterPipeline::new(vec![filter_from_options(kind, &header[3..])]);
    let mut ctx = FilterContext::new(datatype, datatype.size() * cell_val_num, version);
    if kind == FilterKind::Aes {
        ctx = ctx.with_key(FUZZ_KEY);
    }
    decode_tile(tile, &pipeline, &ctx, u64::from(header[2]));
}

/// An arbitrary stored pipeline and a tile: `[version u8][datatype u8]
/// [cells u8][len u32][pipeline][tile]`.
pub fn pipeline(data: &[u8]) {
    let Some((head, rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let Some((stored, tile)) = split_pair(rest) else {
        return;
    };
    let version = 1 + u32::from(head[0]) % MAX_SUPPORTED_VERSION;
    let Ok(stored) = read_exact_from::<g::FilterPipeline>(
        stored,
        g::FilterPipelineBinReadArgs::builder()
            .version(version)
            .finalize(),
        "FilterPipeline",
    ) else {
        return;
    };
    let Ok(pipeline) = FilterPipeline::from_stored(&stored) else {
        return;
    };
    let datatype = Datatype::from_value(head[1]).unwrap_or(Datatype::Uint8);
    let ctx = FilterContext::new(datatype, datatype.size(), version).with_key(FUZZ_KEY);
    decode_tile(tile, &pipeline, &ctx, u64::from(head[2]));
}
