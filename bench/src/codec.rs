//! The codecs alone on one tile of a dense write's input, on one thread
//! (`{"kind": "codec", "input": "…/a.bin", "runs": 5}`): the floor under the
//! filtered dense write rows. For each codec, the raw library (zstd level 1;
//! liblz4 on chunks byte-shuffled beforehand; a plain scalar byte shuffle)
//! over the tile's 64 KiB chunks, and our whole pipeline on the same tile
//! (chunking, SIMD shuffle, framing) in a one-thread pool.
#![allow(unsafe_code, reason = "liblz4 FFI, as the runtime calls it")]

use std::time::Instant;

use serde_json::{json, Value};
use tiledb_runtime::filter::{Datatype, Filter, FilterContext, FilterPipeline};
use tiledb_runtime::tile::filter_tile;

/// TileDB's chunk size for a fixed-size tile.
const CHUNK: usize = 64 << 10;
/// One 1024² tile of INT64 cells.
const TILE: usize = 8 << 20;

/// The best of `runs` timings of `f`, in seconds.
fn best(runs: u64, mut f: impl FnMut()) -> f64 {
    (0..runs.max(1))
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// A plain byte shuffle of 8-byte values: byte `b` of every value together.
fn shuffle8(input: &[u8], out: &mut [u8]) {
    let n = input.len() / 8;
    for (i, value) in input.chunks_exact(8).enumerate() {
        for (b, &byte) in value.iter().enumerate() {
            out[b * n + i] = byte;
        }
    }
}

fn lz4(input: &[u8], out: &mut [u8]) -> usize {
    // SAFETY: `input` is valid for its length and `out` for its length,
    // which is at least LZ4_compressBound(input.len()).
    unsafe {
        lz4_sys::LZ4_compress_default(
            input.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            input.len() as i32,
            out.len() as i32,
        ) as usize
    }
}

pub fn run(spec: &Value) -> Result<Value, String> {
    let path = spec["input"].as_str().ok_or("no input")?;
    let runs = spec["runs"].as_u64().unwrap_or(5);
    let data = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let tile = data.get(..TILE).ok_or("the input is smaller than a tile")?;
    let mb = TILE as f64 / 1e6;
    let mut out = vec![0u8; CHUNK * 2];
    let mut shuffled = vec![0u8; CHUNK];
    let mut cctx = zstd::zstd_safe::CCtx::create();
    let mut zstd_bytes = 0;
    let zstd_s = best(runs, || {
        zstd_bytes = 0;
        for chunk in tile.chunks(CHUNK) {
            zstd_bytes += cctx.compress(&mut out[..], chunk, 1).unwrap_or(0);
        }
    });
    let shuffle_s = best(runs, || {
        for chunk in tile.chunks(CHUNK) {
            shuffle8(chunk, &mut shuffled);
        }
    });
    // LZ4 alone, on the chunks shuffled beforehand.
    let mut shuffled_tile = vec![0u8; TILE];
    for (chunk, to) in tile.chunks(CHUNK).zip(shuffled_tile.chunks_mut(CHUNK)) {
        shuffle8(chunk, to);
    }
    let mut lz4_bytes = 0;
    let lz4_s = best(runs, || {
        lz4_bytes = 0;
        for chunk in shuffled_tile.chunks(CHUNK) {
            lz4_bytes += lz4(chunk, &mut out);
        }
    });
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| e.to_string())?;
    let ctx = FilterContext::new(Datatype::Int64, 8, 22);
    let ours = |filters: Vec<Filter>| {
        let pipeline = FilterPipeline::new(filters);
        one_thread.install(|| best(runs, || drop(filter_tile(tile, &pipeline, &ctx))))
    };
    let ours_zstd_s = ours(vec![Filter::Zstd { level: 1 }]);
    let ours_lz4_s = ours(vec![Filter::ByteShuffle, Filter::Lz4 { level: 0 }]);
    let rate = |s: f64| mb / s;
    Ok(json!({
        "tile_mb": mb,
        "zstd1_raw_mb_s": rate(zstd_s),
        "zstd1_ours_mb_s": rate(ours_zstd_s),
        "zstd1_ratio": TILE as f64 / zstd_bytes as f64,
        "shuffle_raw_mb_s": rate(shuffle_s),
        "lz4_raw_mb_s": rate(lz4_s),
        "shuffle_lz4_ours_mb_s": rate(ours_lz4_s),
        "lz4_ratio": TILE as f64 / lz4_bytes as f64,
    }))
}
