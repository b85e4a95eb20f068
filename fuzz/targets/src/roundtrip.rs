//! The structure-aware round trip: cells through an arbitrary lossless
//! pipeline and back.

use arbitrary::{Arbitrary, Unstructured};

use tiledb_runtime::filter::{Datatype, Filter, FilterContext, FilterPipeline};
use tiledb_runtime::schema::MAX_SUPPORTED_VERSION;
use tiledb_runtime::tile::{filter_tile, filter_var_tile, unfilter_tile, unfilter_var_string_tile};

use crate::FUZZ_KEY;

/// A filter the round trip may put in a pipeline: every lossless filter.
#[derive(Debug, Clone, Arbitrary)]
enum LosslessFilter {
    None,
    Gzip(u8),
    Zstd(u8),
    Lz4,
    Rle,
    Bzip2(u8),
    DoubleDelta(Option<u8>),
    Delta(Option<u8>),
    Dictionary,
    BitWidthReduction(u16),
    PositiveDelta(u16),
    BitShuffle,
    ByteShuffle,
    Md5,
    Sha256,
    Xor,
    Aes,
}

impl LosslessFilter {
    fn filter(&self) -> Filter {
        let pick = |t: &Option<u8>| t.and_then(Datatype::from_value);
        match self {
            LosslessFilter::None => Filter::None,
            LosslessFilter::Gzip(l) => Filter::Gzip {
                level: i32::from(*l % 10),
            },
            LosslessFilter::Zstd(l) => Filter::Zstd {
                level: 1 + i32::from(*l % 5),
            },
            LosslessFilter::Lz4 => Filter::Lz4 { level: 1 },
            LosslessFilter::Rle => Filter::Rle { level: 0 },
            LosslessFilter::Bzip2(l) => Filter::Bzip2 {
                level: 1 + i32::from(*l % 9),
            },
            LosslessFilter::DoubleDelta(t) => Filter::DoubleDelta {
                level: 0,
                reinterpret: pick(t),
            },
            LosslessFilter::Delta(t) => Filter::Delta {
                level: 0,
                reinterpret: pick(t),
            },
            LosslessFilter::Dictionary => Filter::Dictionary { level: 0 },
            LosslessFilter::BitWidthReduction(w) => Filter::BitWidthReduction {
                max_window: u32::from(*w),
            },
            LosslessFilter::PositiveDelta(w) => Filter::PositiveDelta {
                max_window: u32::from(*w),
            },
            LosslessFilter::BitShuffle => Filter::BitShuffle,
            LosslessFilter::ByteShuffle => Filter::ByteShuffle,
            LosslessFilter::Md5 => Filter::ChecksumMd5,
            LosslessFilter::Sha256 => Filter::ChecksumSha256,
            LosslessFilter::Xor => Filter::Xor,
            LosslessFilter::Aes => Filter::Aes256Gcm,
        }
    }
}

/// A tile context and cells, built by `arbitrary` from the input.
#[derive(Debug, Arbitrary)]
struct RoundTripCase {
    datatype: u8,
    cell_val_num: u8,
    var: bool,
    filters: Vec<LosslessFilter>,
    /// Cell lengths of a var tile (taken modulo the data left).
    cell_lengths: Vec<u8>,
    cells: Vec<u8>,
}

/// Structure-aware round trip: cells → filtered tile → cells, through an
/// arbitrary lossless pipeline; what comes back must equal what went in.
pub fn roundtrip(data: &[u8]) {
    let mut input = Unstructured::new(data);
    let Ok(case) = RoundTripCase::arbitrary(&mut input) else {
        return;
    };
    let Some(datatype) = Datatype::from_value(case.datatype) else {
        return;
    };
    let filters: Vec<Filter> = case
        .filters
        .iter()
        .take(4)
        .map(LosslessFilter::filter)
        .collect();
    let pipeline = FilterPipeline::new(filters);
    // Only pipelines TileDB would accept on this type.
    let types = pipeline.input_types(datatype);
    if pipeline
        .filters
        .iter()
        .zip(&types)
        .any(|(f, &t)| !f.accepts(t))
    {
        return;
    }
    let version = MAX_SUPPORTED_VERSION;
    let type_size = datatype.size() as usize;
    if type_size == 0 {
        return;
    }
    let mut cells = case.cells;
    cells.truncate(256 * 1024);
    if case.var {
        cells.truncate(cells.len() / type_size * type_size);
        let mut offsets = Vec::new();
        let mut at = 0usize;
        for len in &case.cell_lengths {
            if at > cells.len() {
                break;
            }
            offsets.push(at as u64);
            at += usize::from(*len) * type_size;
        }
        if offsets.is_empty() {
            offsets.push(0);
        }
        let ctx = FilterContext::new(datatype, type_size as u64, version).with_key(FUZZ_KEY);
        let Ok(tile) = filter_var_tile(&cells, &offsets, &pipeline, &ctx) else {
            return;
        };
        if pipeline.skips_offsets(datatype, version) {
            let (back, back_offsets) = unfilter_var_string_tile(
                &tile,
                &pipeline,
                &ctx,
                cells.len() as u64,
                offsets.len() as u64,
            )
            .unwrap_or_else(|e| panic!("a tile we filtered does not unfilter: {e}"));
            assert_eq!(back, cells, "var string data changed in the round trip");
            assert_eq!(back_offsets, offsets, "offsets changed in the round trip");
        } else {
            let back = unfilter_tile(&tile, &pipeline, &ctx, cells.len() as u64)
                .unwrap_or_else(|e| panic!("a tile we filtered does not unfilter: {e}"));
            assert_eq!(back, cells, "var data changed in the round trip");
        }
    } else {
        let cell_size = type_size * (1 + usize::from(case.cell_val_num % 4));
        cells.truncate(cells.len() / cell_size * cell_size);
        let ctx = FilterContext::new(datatype, cell_size as u64, version).with_key(FUZZ_KEY);
        let Ok(tile) = filter_tile(&cells, &pipeline, &ctx) else {
            return;
        };
        let back = unfilter_tile(&tile, &pipeline, &ctx, cells.len() as u64)
            .unwrap_or_else(|e| panic!("a tile we filtered does not unfilter: {e}"));
        assert_eq!(back, cells, "cells changed in the round trip");
        // The unfiltered tile is the same as with no filters at all.
        let plain = filter_tile(&cells, &FilterPipeline::default(), &ctx)
            .unwrap_or_else(|e| panic!("an unfiltered tile cannot be framed: {e}"));
        let plain_back =
            unfilter_tile(&plain, &FilterPipeline::default(), &ctx, cells.len() as u64)
                .unwrap_or_else(|e| panic!("an unfiltered tile does not read back: {e}"));
        assert_eq!(plain_back, back, "filtered and unfiltered tiles differ");
    }
}
