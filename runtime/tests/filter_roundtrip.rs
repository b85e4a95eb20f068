//! Round trips through the filter pipeline: values filtered and unfiltered
//! must come back byte for byte, for every filter, on every datatype the
//! filter accepts, and for chains of filters.

use proptest::prelude::*;
use tiledb_runtime::filter::{Datatype, Filter, FilterContext, FilterPipeline, WebpFormat};
use tiledb_runtime::tile::{
    filter_tile, filter_var_tile, parse_chunks, unfilter_tile, unfilter_var_string_tile,
    SKIPPED_OFFSETS_TILE,
};

const KEY: [u8; 32] = *b"0123456789abcdef0123456789abcdef";

fn all_datatypes() -> Vec<Datatype> {
    (0u8..=43).filter_map(Datatype::from_value).collect()
}

fn ctx(datatype: Datatype, cell_size: u64) -> FilterContext {
    FilterContext::new(datatype, cell_size, 22).with_key(KEY)
}

/// Writes TileDB refuses too: double deltas beyond 64 bits, and a filter
/// that needs whole values placed after one that changed the size.
fn refused(e: &tiledb_runtime::Error) -> bool {
    let text = e.to_string();
    matches!(e, tiledb_runtime::Error::Usage(_))
        && (text.contains("exceeds the range of int64")
            || text.contains("is not a whole number of"))
}

fn roundtrip_with(
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    data: &[u8],
) -> Result<(), TestCaseError> {
    let filtered = match filter_tile(data, pipeline, ctx) {
        Ok(f) => f,
        Err(e) if refused(&e) => return Ok(()),
        Err(e) => {
            return Err(TestCaseError::fail(format!(
                "filter {pipeline:?} on {:?}: {e}",
                ctx.datatype
            )))
        }
    };
    let back = unfilter_tile(&filtered, pipeline, ctx, data.len() as u64).map_err(|e| {
        TestCaseError::fail(format!("unfilter {pipeline:?} on {:?}: {e}", ctx.datatype))
    })?;
    prop_assert_eq!(back, data, "{:?} on {:?}", pipeline, ctx.datatype);
    Ok(())
}

/// Filters that accept any input (or pass it through), with options.
fn general_filters() -> Vec<Filter> {
    vec![
        Filter::None,
        Filter::Gzip { level: -1 },
        Filter::Gzip { level: 1 },
        Filter::Zstd { level: 3 },
        Filter::Zstd { level: -8 },
        Filter::Lz4 { level: 0 },
        Filter::Bzip2 { level: 9 },
        Filter::Rle { level: -1 },
        Filter::BitShuffle,
        Filter::ByteShuffle,
        Filter::ChecksumMd5,
        Filter::ChecksumSha256,
        Filter::Xor,
        Filter::Aes256Gcm,
        Filter::BitWidthReduction { max_window: 256 },
        Filter::BitWidthReduction { max_window: 7 },
        Filter::DoubleDelta {
            level: 0,
            reinterpret: None,
        },
        Filter::Delta {
            level: 0,
            reinterpret: None,
        },
        Filter::DoubleDelta {
            level: 0,
            reinterpret: Some(Datatype::Uint8),
        },
        Filter::Delta {
            level: 0,
            reinterpret: Some(Datatype::Int8),
        },
    ]
}

/// Values of `datatype`, `cells` cells of `cell_val_num` values each, from
/// a seed of random bytes (mixing runs in, so RLE and the deltas see both).
fn values(seed: &[u8], datatype: Datatype, cell_val_num: usize) -> Vec<u8> {
    let cell = datatype.size() as usize * cell_val_num;
    let n = seed.len() / cell * cell;
    let mut out = seed[..n].to_vec();
    // Make every fourth cell a repeat of its predecessor.
    for c in (4..n / cell).step_by(4) {
        let (a, b) = out.split_at_mut(c * cell);
        b[..cell].copy_from_slice(&a[(c - 1) * cell..]);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_filter_on_every_accepted_type(seed in proptest::collection::vec(any::<u8>(), 0..2048), cvn in 1usize..4) {
        for datatype in all_datatypes() {
            let data = values(&seed, datatype, cvn);
            let cell_size = datatype.size() * cvn as u64;
            for filter in general_filters() {
                if !filter.accepts(datatype) {
                    continue;
                }
                roundtrip_with(&FilterPipeline::new(vec![filter]), &ctx(datatype, cell_size), &data)?;
            }
        }
    }

    #[test]
    fn chains_of_filters(seed in proptest::collection::vec(any::<u8>(), 0..4096), picks in proptest::collection::vec(0usize..20, 1..5), type_pick in 0usize..44) {
        let types = all_datatypes();
        let datatype = types[type_pick % types.len()];
        let pool = general_filters();
        let mut filters = Vec::new();
        let mut current = datatype;
        for p in picks {
            let f = pool[p % pool.len()].clone();
            if f.accepts(current) {
                current = f.output_datatype(current);
                filters.push(f);
            }
        }
        let data = values(&seed, datatype, 1);
        roundtrip_with(&FilterPipeline::new(filters), &ctx(datatype, datatype.size()), &data)?;
    }

    #[test]
    fn positive_delta_on_ascending_values(mut seed in proptest::collection::vec(any::<u64>(), 0..600), window in 1u32..300) {
        seed.sort_unstable();
        for datatype in all_datatypes() {
            let filter = Filter::PositiveDelta { max_window: window };
            if !filter.accepts(datatype) {
                continue;
            }
            let w = datatype.size() as usize;
            // Ascending as the type sees them: small non-negative values.
            let data: Vec<u8> = seed.iter().flat_map(|v| {
                let v = v >> (64 - 8 * w as u32 + 1);
                v.to_le_bytes()[..w].to_vec()
            }).collect();
            let chain = FilterPipeline::new(vec![filter, Filter::Zstd { level: 1 }]);
            roundtrip_with(&chain, &ctx(datatype, w as u64), &data)?;
        }
    }

    #[test]
    fn scale_float_on_representable_values(ks in proptest::collection::vec(-100i32..100, 0..500), width in prop::sample::select(vec![1u64, 2, 4, 8])) {
        let filter = Filter::ScaleFloat { scale: 0.5, offset: 1.0, byte_width: width };
        let f32s: Vec<u8> = ks.iter().flat_map(|&k| (k as f32 * 0.5 + 1.0).to_le_bytes()).collect();
        let f64s: Vec<u8> = ks.iter().flat_map(|&k| (k as f64 * 0.5 + 1.0).to_le_bytes()).collect();
        let chain = FilterPipeline::new(vec![filter, Filter::ByteShuffle, Filter::Lz4 { level: 0 }]);
        roundtrip_with(&chain, &ctx(Datatype::Float32, 4), &f32s)?;
        roundtrip_with(&chain, &ctx(Datatype::Float64, 8), &f64s)?;
    }

    #[test]
    fn var_strings(strings in proptest::collection::vec(prop::sample::select(vec!["", "a", "bb", "tiledb", "a much longer string value"]), 1..300), pick in 0usize..6) {
        let pipelines = [
            vec![Filter::Rle { level: 0 }],
            vec![Filter::Dictionary { level: 0 }],
            vec![Filter::Rle { level: 0 }, Filter::Zstd { level: 1 }],
            vec![Filter::Dictionary { level: 0 }, Filter::Gzip { level: 6 }, Filter::ChecksumSha256],
            vec![Filter::Zstd { level: 1 }],
            vec![Filter::Dictionary { level: 0 }, Filter::Aes256Gcm],
        ];
        let pipeline = FilterPipeline::new(pipelines[pick].clone());
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        for s in &strings {
            offsets.push(data.len() as u64);
            data.extend_from_slice(s.as_bytes());
        }
        for datatype in [Datatype::StringAscii, Datatype::StringUtf8] {
            let c = ctx(datatype, 1);
            let filtered = filter_var_tile(&data, &offsets, &pipeline, &c).map_err(|e| TestCaseError::fail(e.to_string()))?;
            if pipeline.skips_offsets(datatype, c.version) {
                let (back, back_offsets) = unfilter_var_string_tile(&filtered, &pipeline, &c, data.len() as u64, offsets.len() as u64)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(&back, &data);
                prop_assert_eq!(&back_offsets, &offsets);
                prop_assert_eq!(SKIPPED_OFFSETS_TILE, [0u8; 8]);
            } else {
                let back = unfilter_tile(&filtered, &pipeline, &c, data.len() as u64).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(&back, &data);
            }
        }
    }

    /// Whatever bytes a tile holds, unfiltering returns a value or an error.
    #[test]
    fn mutated_tiles_never_panic(seed in proptest::collection::vec(any::<u8>(), 1..2000), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8), cut in any::<usize>(), pick in 0usize..20) {
        let pool = general_filters();
        let filter = pool[pick % pool.len()].clone();
        let datatype = Datatype::Int32;
        if !filter.accepts(datatype) {
            return Ok(());
        }
        let data = values(&seed, datatype, 1);
        let pipeline = FilterPipeline::new(vec![filter, Filter::ByteShuffle, Filter::Zstd { level: 1 }]);
        let c = ctx(datatype, 4);
        let mut filtered = filter_tile(&data, &pipeline, &c).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for (at, byte) in flips {
            let len = filtered.len();
            filtered[at % len] ^= byte;
        }
        let truncated = &filtered[..cut % (filtered.len() + 1)];
        let _ = unfilter_tile(&filtered, &pipeline, &c, data.len() as u64);
        let _ = unfilter_tile(truncated, &pipeline, &c, data.len() as u64);
    }

    /// The same for whole-string encodings, whose metadata carries the
    /// dictionary and the widths.
    #[test]
    fn mutated_string_tiles_never_panic(strings in proptest::collection::vec("[a-c]{0,5}", 1..60), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6), dictionary in any::<bool>(), cells_delta in -2i64..3) {
        let first = if dictionary { Filter::Dictionary { level: 0 } } else { Filter::Rle { level: 0 } };
        let pipeline = FilterPipeline::new(vec![first]);
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        for s in &strings {
            offsets.push(data.len() as u64);
            data.extend_from_slice(s.as_bytes());
        }
        let c = ctx(Datatype::StringUtf8, 1);
        let mut filtered = filter_var_tile(&data, &offsets, &pipeline, &c).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for (at, byte) in flips {
            let len = filtered.len();
            filtered[at % len] ^= byte;
        }
        let cells = (offsets.len() as i64 + cells_delta).max(0) as u64;
        let _ = unfilter_var_string_tile(&filtered, &pipeline, &c, data.len() as u64, cells);
    }
}

#[test]
fn compressors_roundtrip_across_chunks() {
    // 200 KiB: four chunks of 64 KiB and a partial one.
    let data: Vec<u8> = (0..200 * 1024u32)
        .map(|i| {
            if i % 3 == 0 {
                (i.wrapping_mul(7919) >> 5) as u8
            } else {
                0
            }
        })
        .collect();
    for f in general_filters() {
        let pipeline = FilterPipeline::new(vec![f]);
        let c = ctx(Datatype::Int32, 4);
        let filtered = filter_tile(&data, &pipeline, &c).unwrap();
        assert_eq!(parse_chunks(&filtered).unwrap().len(), 4);
        assert_eq!(
            unfilter_tile(&filtered, &pipeline, &c, data.len() as u64).unwrap(),
            data
        );
    }
}

#[test]
fn empty_pipeline_frames_chunks() {
    let data: Vec<u8> = (0..70_000u32).map(|i| i as u8).collect();
    let pipeline = FilterPipeline::default();
    let c = ctx(Datatype::Uint8, 1);
    let filtered = filter_tile(&data, &pipeline, &c).unwrap();
    // Two chunks of 65536 and 4464 bytes, each with a 12-byte header.
    assert_eq!(filtered.len(), 8 + 2 * 12 + data.len());
    assert_eq!(&filtered[..8], &2u64.to_le_bytes());
    assert_eq!(&filtered[8..12], &65536u32.to_le_bytes());
    assert_eq!(&filtered[12..16], &65536u32.to_le_bytes());
    assert_eq!(&filtered[16..20], &0u32.to_le_bytes());
    assert_eq!(
        unfilter_tile(&filtered, &pipeline, &c, data.len() as u64).unwrap(),
        data
    );
}

#[test]
fn webp_lossless_roundtrip() {
    for (format, depth) in [
        (WebpFormat::Rgb, 3usize),
        (WebpFormat::Bgr, 3),
        (WebpFormat::Rgba, 4),
        (WebpFormat::Bgra, 4),
    ] {
        let (h, w) = (9usize, 7usize);
        let pixels: Vec<u8> = (0..h * w * depth).map(|i| (i * 37 % 251) as u8).collect();
        let pipeline = FilterPipeline::new(vec![Filter::Webp {
            quality: 100.0,
            format,
            lossless: true,
            y_extent: h as u16,
            x_extent: (w * depth) as u16,
        }]);
        let c = ctx(Datatype::Uint8, 1);
        assert!(!pipeline.uses_chunking(false, 22, Datatype::Uint8));
        let filtered = filter_tile(&pixels, &pipeline, &c).unwrap();
        assert_eq!(
            unfilter_tile(&filtered, &pipeline, &c, pixels.len() as u64).unwrap(),
            pixels
        );
    }
}

#[test]
fn var_tiles_chunk_without_splitting_cells() {
    // 300 cells of 1000 bytes: chunks close at whole cells.
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let offsets: Vec<u64> = (0..300).map(|c| c * 1000).collect();
    let pipeline = FilterPipeline::new(vec![Filter::Lz4 { level: 0 }]);
    let c = ctx(Datatype::Uint8, 1);
    let filtered = filter_var_tile(&data, &offsets, &pipeline, &c).unwrap();
    for chunk in parse_chunks(&filtered).unwrap() {
        assert_eq!(chunk.original_len % 1000, 0, "a cell was split");
    }
    assert_eq!(
        unfilter_tile(&filtered, &pipeline, &c, data.len() as u64).unwrap(),
        data
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Random bytes under random pipelines, framed as one chunk so that the
    /// filters (not just the framing) see them.
    #[test]
    fn random_chunks_never_panic(md in proptest::collection::vec(any::<u8>(), 0..200), data in proptest::collection::vec(any::<u8>(), 0..400), picks in proptest::collection::vec(0usize..20, 1..4), original in 0u32..2000, type_pick in 0usize..44) {
        let types = all_datatypes();
        let datatype = types[type_pick % types.len()];
        let pool = general_filters();
        let pipeline = FilterPipeline::new(picks.iter().map(|p| pool[p % pool.len()].clone()).collect());
        let mut tile = 1u64.to_le_bytes().to_vec();
        tile.extend_from_slice(&original.to_le_bytes());
        tile.extend_from_slice(&(data.len() as u32).to_le_bytes());
        tile.extend_from_slice(&(md.len() as u32).to_le_bytes());
        tile.extend_from_slice(&md);
        tile.extend_from_slice(&data);
        let _ = unfilter_tile(&tile, &pipeline, &ctx(datatype, datatype.size()), original as u64);
    }
}
