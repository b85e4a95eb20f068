//! Hostile tiles: every malformed chunk is a `Corrupt` error that locates
//! the fault, never a panic and never an allocation sized by the attacker.

use tiledb_runtime::filter::{Datatype, Filter, FilterContext, FilterPipeline};
use tiledb_runtime::tile::{
    filter_tile, filter_var_tile, unfilter_tile, unfilter_tiles, unfilter_var_string_tile, TileJob,
};
use tiledb_runtime::{Cause, Error, ErrorClass};

fn ctx() -> FilterContext {
    FilterContext::new(Datatype::Uint8, 1, 22)
}

/// A tile of one chunk with the given header fields and body.
fn tile(original: u32, metadata: &[u8], data: &[u8]) -> Vec<u8> {
    let mut t = 1u64.to_le_bytes().to_vec();
    t.extend_from_slice(&original.to_le_bytes());
    t.extend_from_slice(&(data.len() as u32).to_le_bytes());
    t.extend_from_slice(&(metadata.len() as u32).to_le_bytes());
    t.extend_from_slice(metadata);
    t.extend_from_slice(data);
    t
}

/// Compression-filter metadata for one data part.
fn compression_md(original: u32, compressed: u32) -> Vec<u8> {
    [0u32, 1, original, compressed]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

fn corrupt_field(e: &Error) -> String {
    match e {
        Error::Corrupt { at, .. } => at.field.clone(),
        other => panic!("expected a corrupt error, got {other:?}"),
    }
}

#[test]
fn a_chunk_count_beyond_the_bytes_is_refused_before_allocating() {
    let mut t = u64::MAX.to_le_bytes().to_vec();
    t.extend_from_slice(&[0u8; 40]);
    let e = unfilter_tile(&t, &FilterPipeline::default(), &ctx(), 0).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Corrupt);
    assert_eq!(corrupt_field(&e), "Tile.chunks");
}

#[test]
fn chunk_lengths_beyond_the_tile_are_corrupt() {
    let mut t = tile(4, &[], b"abcd");
    // filtered_len claims more than is present.
    t[12..16].copy_from_slice(&1000u32.to_le_bytes());
    let e = unfilter_tile(&t, &FilterPipeline::default(), &ctx(), 4).unwrap_err();
    assert_eq!(corrupt_field(&e), "Tile.chunks[0], TileChunk.data");
    assert_eq!(e.class(), ErrorClass::Corrupt);
}

#[test]
fn the_sum_of_original_lengths_must_match() {
    let t = tile(4, &[], b"abcd");
    let e = unfilter_tile(&t, &FilterPipeline::default(), &ctx(), 5).unwrap_err();
    assert_eq!(corrupt_field(&e), "chunks");
}

#[test]
fn a_decompression_bomb_is_an_error() {
    // A zstd frame of 1 MiB of zeros declared as 100 bytes.
    let bomb = zstd::bulk::compress(&vec![0u8; 1 << 20], 3).unwrap();
    let pipeline = FilterPipeline::new(vec![Filter::Zstd { level: 3 }]);
    let t = tile(100, &compression_md(100, bomb.len() as u32), &bomb);
    let e = unfilter_tile(&t, &pipeline, &ctx(), 100).unwrap_err();
    assert_eq!(corrupt_field(&e), "chunk 0, ZSTD");
    // The same frame, declared as 1 MiB in the part but 100 bytes in the
    // chunk: the part size disagrees with the chunk.
    let t = tile(100, &compression_md(1 << 20, bomb.len() as u32), &bomb);
    assert_eq!(
        corrupt_field(&unfilter_tile(&t, &pipeline, &ctx(), 100).unwrap_err()),
        "chunk 0, ZSTD"
    );
    // Same for the other codecs.
    for (filter, payload) in [
        (Filter::Gzip { level: 6 }, {
            use std::io::Write;
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
            z.write_all(&vec![0u8; 1 << 20]).unwrap();
            z.finish().unwrap()
        }),
        (
            Filter::Lz4 { level: 0 },
            lz4_flex::block::compress(&vec![0u8; 1 << 20]),
        ),
    ] {
        let pipeline = FilterPipeline::new(vec![filter.clone()]);
        let t = tile(100, &compression_md(100, payload.len() as u32), &payload);
        let e = unfilter_tile(&t, &pipeline, &ctx(), 100).unwrap_err();
        assert_eq!(corrupt_field(&e), format!("chunk 0, {}", filter.name()));
    }
}

#[test]
fn an_intermediate_stage_cannot_claim_unbounded_output() {
    // BYTESHUFFLE then ZSTD: the ZSTD stage claims 3 GiB for a 16-byte chunk.
    let pipeline = FilterPipeline::new(vec![Filter::ByteShuffle, Filter::Zstd { level: 1 }]);
    let md = compression_md(3 << 30, 10);
    let t = tile(16, &md, &[0u8; 10]);
    let e = unfilter_tile(&t, &pipeline, &ctx(), 16).unwrap_err();
    assert_eq!(corrupt_field(&e), "chunk 0, ZSTD");
}

#[test]
fn a_checksum_mismatch_names_tile_chunk_and_filter() {
    let data: Vec<u8> = (0..1000u32).map(|i| (i % 7) as u8).collect();
    for filter in [Filter::ChecksumMd5, Filter::ChecksumSha256] {
        let pipeline = FilterPipeline::new(vec![filter.clone()]);
        let mut t = filter_tile(&data, &pipeline, &ctx()).unwrap();
        let last = t.len() - 1;
        t[last] ^= 1;
        let job = TileJob {
            bytes: &t,
            file_offset: 4096,
            index: 3,
            expected_len: data.len() as u64,
            wanted: None,
        };
        let e = unfilter_tiles(&[job], &pipeline, &ctx()).unwrap_err();
        let Error::Corrupt { at, cause } = &e else {
            panic!("expected corrupt, got {e:?}")
        };
        assert_eq!(
            at.field,
            format!("tile 3, chunk 0, {}, data part 0", filter.name())
        );
        assert_eq!(
            at.offset,
            4096 + 8,
            "the chunk starts after the chunk count"
        );
        let Cause::ChecksumMismatch {
            algorithm,
            expected,
            actual,
        } = cause
        else {
            panic!("expected a checksum mismatch, got {cause:?}")
        };
        assert_eq!(*algorithm, filter.name());
        assert_ne!(expected, actual);
        assert_eq!(expected.len(), actual.len());
    }
}

#[test]
fn an_encrypted_tile_needs_its_key() {
    let data = vec![5u8; 100];
    let pipeline = FilterPipeline::new(vec![Filter::Zstd { level: 1 }, Filter::Aes256Gcm]);
    let with_key = ctx().with_key([7; 32]);
    let t = filter_tile(&data, &pipeline, &with_key).unwrap();
    assert_eq!(unfilter_tile(&t, &pipeline, &with_key, 100).unwrap(), data);
    let e = unfilter_tile(&t, &pipeline, &ctx(), 100).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Usage);
    let wrong = ctx().with_key([8; 32]);
    assert_eq!(
        corrupt_field(&unfilter_tile(&t, &pipeline, &wrong, 100).unwrap_err()),
        "chunk 0, AES_256_GCM"
    );
}

#[test]
#[cfg(not(feature = "libwebp"))]
fn lossy_webp_encoding_is_unsupported_not_wrong() {
    let pipeline = FilterPipeline::new(vec![Filter::Webp {
        quality: 50.0,
        format: tiledb_runtime::filter::WebpFormat::Rgb,
        lossless: false,
        y_extent: 2,
        x_extent: 6,
    }]);
    let e = filter_tile(&[0u8; 12], &pipeline, &ctx()).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Unsupported);
}

#[test]
#[cfg(feature = "libwebp")]
fn lossy_webp_encoding_reads_back_close() {
    let (h, w) = (16usize, 16usize);
    let pixels: Vec<u8> = (0..h * w * 3).map(|i| (i / 3 % 16 * 8) as u8).collect();
    let pipeline = FilterPipeline::new(vec![Filter::Webp {
        quality: 90.0,
        format: tiledb_runtime::filter::WebpFormat::Rgb,
        lossless: false,
        y_extent: h as u16,
        x_extent: (w * 3) as u16,
    }]);
    let t = filter_tile(&pixels, &pipeline, &ctx()).unwrap();
    let back = unfilter_tile(&t, &pipeline, &ctx(), pixels.len() as u64).unwrap();
    let worst = pixels
        .iter()
        .zip(&back)
        .map(|(a, b)| a.abs_diff(*b))
        .max()
        .unwrap();
    assert!(worst < 40, "lossy WebP strayed by {worst}");
}

// Each filter family's faults, pinned to their exact error: the offset of
// the chunk, the field (tile, chunk, filter and part) and the cause as data,
// so that a cause turned back into text fails here.

/// A context for `n`-byte values.
fn ctx_of(datatype: Datatype) -> FilterContext {
    FilterContext::new(datatype, datatype.size(), 22)
}

/// The bytes of `values` as little-endian u32s.
fn u32s(values: impl IntoIterator<Item = u32>) -> Vec<u8> {
    values.into_iter().flat_map(u32::to_le_bytes).collect()
}

/// A one-chunk tile's byte offsets: the chunk's metadata starts at 20, and
/// a compression filter's data after its 16 metadata bytes.
const METADATA: usize = 20;
const COMPRESSED_DATA: usize = METADATA + 16;

#[test]
fn a_compressed_size_that_disagrees_with_the_frame_is_inconsistent() {
    let pipeline = FilterPipeline::new(vec![Filter::Zstd { level: 1 }]);
    let mut t = filter_tile(b"abcd", &pipeline, &ctx()).unwrap();
    // Declare 8 bytes where the frame holds 4, in the chunk and in the part.
    t[8..12].copy_from_slice(&8u32.to_le_bytes());
    t[METADATA + 8..METADATA + 12].copy_from_slice(&8u32.to_le_bytes());
    let e = unfilter_tile(&t, &pipeline, &ctx(), 8).unwrap_err();
    let expected = Cause::Inconsistent {
        what: "the zstd frame's decompressed size",
        expected: 8,
        found: 4,
    };
    assert_eq!(e, Error::corrupt(8, "chunk 0, ZSTD", expected));
}

#[test]
fn a_codec_refusal_names_the_codec_as_data() {
    for (filter, codec) in [
        (Filter::Gzip { level: 6 }, "zlib"),
        (Filter::Zstd { level: 1 }, "zstd"),
        (Filter::Lz4 { level: 1 }, "lz4"),
        (Filter::Bzip2 { level: 1 }, "bzip2"),
    ] {
        let pipeline = FilterPipeline::new(vec![filter.clone()]);
        let t = tile(8, &compression_md(8, 10), &[0xff; 10]);
        let e = unfilter_tile(&t, &pipeline, &ctx(), 8).unwrap_err();
        let Error::Corrupt { at, cause } = &e else {
            panic!("expected corrupt, got {e:?}")
        };
        assert_eq!(
            (at.offset, at.field.as_str()),
            (8, &*format!("chunk 0, {}", filter.name()))
        );
        match cause {
            Cause::Codec { codec: c, detail } => {
                assert_eq!(*c, codec);
                assert!(!detail.is_empty(), "{codec} gave no detail");
            }
            other => panic!("{codec}: expected a codec cause, got {other:?}"),
        }
    }
}

#[test]
fn a_delta_value_count_that_disagrees_with_the_chunk_is_inconsistent() {
    let data: Vec<u8> = (1..=8).collect();
    for (filter, header_at, name) in [
        (
            Filter::Delta {
                level: 0,
                reinterpret: None,
            },
            COMPRESSED_DATA,
            "DELTA",
        ),
        // DOUBLE_DELTA's header starts with its bit size.
        (
            Filter::DoubleDelta {
                level: 0,
                reinterpret: None,
            },
            COMPRESSED_DATA + 1,
            "DOUBLE_DELTA",
        ),
    ] {
        let pipeline = FilterPipeline::new(vec![filter]);
        let mut t = filter_tile(&data, &pipeline, &ctx()).unwrap();
        t[header_at..header_at + 8].copy_from_slice(&9u64.to_le_bytes());
        let e = unfilter_tile(&t, &pipeline, &ctx(), 8).unwrap_err();
        let what = if name == "DELTA" {
            "the DELTA value count"
        } else {
            "the DOUBLE_DELTA value count"
        };
        let cause = Cause::Inconsistent {
            what,
            expected: 8,
            found: 9,
        };
        assert_eq!(e, Error::corrupt(8, format!("chunk 0, {name}"), cause));
    }
}

#[test]
fn a_bit_width_window_of_an_odd_width_is_not_one_of_the_widths() {
    let pipeline = FilterPipeline::new(vec![Filter::BitWidthReduction { max_window: 256 }]);
    let data = u32s(0..16);
    let ctx = ctx_of(Datatype::Uint32);
    let mut t = filter_tile(&data, &pipeline, &ctx).unwrap();
    // orig_len, n_windows, then the first window's 4-byte offset and its bits.
    let bits_at = METADATA + 12;
    assert_eq!(t[bits_at], 8, "16 small values reduce to 8 bits");
    t[bits_at] = 7;
    let e = unfilter_tile(&t, &pipeline, &ctx, data.len() as u64).unwrap_err();
    let cause = Cause::NotOneOf {
        what: "the bit width of a window",
        value: 7,
        allowed: &[8, 16, 32],
    };
    assert_eq!(
        e,
        Error::corrupt(8, "chunk 0, BIT_WIDTH_REDUCTION, windows", cause)
    );
}

#[test]
fn part_sizes_that_do_not_cover_the_data_are_inconsistent() {
    let pipeline = FilterPipeline::new(vec![Filter::ByteShuffle]);
    let data = u32s(0..8);
    let ctx = ctx_of(Datatype::Uint32);
    let mut t = filter_tile(&data, &pipeline, &ctx).unwrap();
    // n_parts, then the one part's size.
    t[METADATA + 4..METADATA + 8].copy_from_slice(&31u32.to_le_bytes());
    let e = unfilter_tile(&t, &pipeline, &ctx, 32).unwrap_err();
    let cause = Cause::Inconsistent {
        what: "the total of the part sizes",
        expected: 32,
        found: 31,
    };
    assert_eq!(e, Error::corrupt(8, "chunk 0, BYTESHUFFLE", cause));
}

#[test]
fn an_xor_part_of_partial_values_is_not_a_multiple() {
    let pipeline = FilterPipeline::new(vec![Filter::Xor]);
    let t = tile(6, &u32s([1, 6]), &[0; 6]);
    let e = unfilter_tile(&t, &pipeline, &ctx_of(Datatype::Int32), 6).unwrap_err();
    let cause = Cause::NotMultiple { size: 6, unit: 4 };
    assert_eq!(e, Error::corrupt(8, "chunk 0, XOR", cause));
}

#[test]
fn rle_runs_must_be_whole_and_fill_the_chunk() {
    let pipeline = FilterPipeline::new(vec![Filter::Rle { level: 0 }]);
    // A run is a 1-byte value and a 2-byte count: 4 bytes are not whole runs.
    let t = tile(2, &compression_md(2, 4), &[0; 4]);
    let e = unfilter_tile(&t, &pipeline, &ctx(), 2).unwrap_err();
    let cause = Cause::NotMultiple { size: 4, unit: 3 };
    assert_eq!(e, Error::corrupt(8, "chunk 0, RLE", cause));
    // One run of 5 values where 2 are declared.
    let t = tile(2, &compression_md(2, 3), &[9, 0, 5]);
    let e = unfilter_tile(&t, &pipeline, &ctx(), 2).unwrap_err();
    let cause = Cause::OutOfRange { value: 5, limit: 2 };
    assert_eq!(e, Error::corrupt(8, "chunk 0, RLE, runs", cause));
}

#[test]
fn a_wrong_key_fails_authentication_of_the_first_part() {
    let pipeline = FilterPipeline::new(vec![Filter::Zstd { level: 1 }, Filter::Aes256Gcm]);
    let t = filter_tile(&[5u8; 100], &pipeline, &ctx().with_key([7; 32])).unwrap();
    let e = unfilter_tile(&t, &pipeline, &ctx().with_key([8; 32]), 100).unwrap_err();
    let cause = Cause::Unauthentic {
        algorithm: "AES-256-GCM",
        part: 0,
    };
    assert_eq!(e, Error::corrupt(8, "chunk 0, AES_256_GCM", cause));
}

#[test]
fn string_encodings_state_a_cell_count_that_disagrees() {
    let (data, offsets) = (b"abba".to_vec(), vec![0u64, 1, 3]);
    let ctx = FilterContext::new(Datatype::StringUtf8, 1, 22);
    for filter in [Filter::Rle { level: 0 }, Filter::Dictionary { level: 0 }] {
        let pipeline = FilterPipeline::new(vec![filter.clone()]);
        let t = filter_var_tile(&data, &offsets, &pipeline, &ctx).unwrap();
        // The fragment says 4 cells; the chunk's offsets size is for 3.
        let e = unfilter_var_string_tile(&t, &pipeline, &ctx, 4, 4).unwrap_err();
        let cause = Cause::Inconsistent {
            what: "the offsets size",
            expected: 32,
            found: 24,
        };
        let field = format!("chunk 0, {}", filter.name());
        assert_eq!(e, Error::corrupt(8, field, cause));
    }
}

#[test]
fn a_width_outside_the_allowed_set_names_the_set() {
    let pipeline = FilterPipeline::new(vec![Filter::ScaleFloat {
        scale: 1.0,
        offset: 0.0,
        byte_width: 4,
    }]);
    // SCALE_FLOAT over 2-byte values: the schema gives no float to restore.
    let t = tile(4, &u32s([1, 4]), &[0; 4]);
    let e = unfilter_tile(&t, &pipeline, &ctx_of(Datatype::Int16), 4).unwrap_err();
    let cause = Cause::NotOneOf {
        what: "the size of the values SCALE_FLOAT reads (a float)",
        value: 2,
        allowed: &[4, 8],
    };
    assert_eq!(e, Error::corrupt(8, "chunk 0, SCALE_FLOAT", cause));
    assert!(e.to_string().ends_with("is 2, not one of 4, 8"), "{e}");
}
