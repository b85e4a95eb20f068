//! The codec's share of a sparse write, measured alone (`kind`
//! `"zstd-sparse-tiles"`): the global-order write workload's input columns
//! (already in global order, so tile `t` is cells `t * capacity ..`) cut into
//! the tiles and 64 KiB chunks the write filters, each chunk compressed by
//! the zstd crate at the field's level (coordinates at TileDB's default
//! -1, the attribute at the workload's level 1), once on one thread and once
//! on every thread of the pool. What the write spends beyond this is what
//! our code can still save; this much TileDB pays too.
//!
//! Run by hand: `target/release/tiledb-bench '{"kind":"zstd-sparse-tiles",
//! "dir":"target/bench-data/write-sparse-global-…","capacity":10000}'`.

use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;
use serde_json::{json, Value};

/// TileDB's `constants::max_tile_chunk_size`.
const CHUNK: usize = 64 << 10;

/// One column's chunks, each of at most [`CHUNK`] bytes, tile by tile.
fn chunks(data: &[u8], tile_bytes: usize) -> Vec<&[u8]> {
    data.chunks(tile_bytes)
        .flat_map(|tile| tile.chunks(CHUNK))
        .collect()
}

fn compress(chunk: &[u8], level: i32, out: &mut Vec<u8>) -> Result<usize, String> {
    thread_local! {
        static CONTEXT: std::cell::RefCell<zstd::zstd_safe::CCtx<'static>> =
            std::cell::RefCell::new(zstd::zstd_safe::CCtx::create());
    }
    out.clear();
    out.reserve(zstd::zstd_safe::compress_bound(chunk.len()));
    CONTEXT
        .with(|c| c.borrow_mut().compress(out, chunk, level))
        .map_err(|code| zstd::zstd_safe::get_error_name(code).to_string())
}

/// Compresses every chunk of `work` (chunk, level) on one thread or on
/// the pool; returns the compressed bytes and the seconds.
fn timed(work: &[(&[u8], i32)], parallel: bool) -> Result<(usize, f64), String> {
    let start = Instant::now();
    let total = if parallel {
        work.par_iter()
            .map_init(Vec::new, |out, (chunk, level)| compress(chunk, *level, out))
            .try_reduce(|| 0, |a, b| Ok(a + b))?
    } else {
        let mut out = Vec::new();
        let mut total = 0;
        for (chunk, level) in work {
            total += compress(chunk, *level, &mut out)?;
        }
        total
    };
    Ok((total, start.elapsed().as_secs_f64()))
}

/// Runs the measurement; see the module comment.
pub fn run(spec: &Value, cpu_seconds: fn() -> f64) -> Result<Value, String> {
    let dir = Path::new(spec["dir"].as_str().ok_or("workload has no dir")?);
    let capacity = spec["capacity"].as_u64().unwrap_or(10_000) as usize;
    let read = |name: &str| {
        let path = dir.join(format!("{name}.bin"));
        std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let (x, y, v) = (read("x")?, read("y")?, read("v")?);
    let mut work: Vec<(&[u8], i32)> = Vec::new();
    let mut fields = Vec::new();
    for (name, data, level) in [("x", &x, -1), ("y", &y, -1), ("v", &v, 1)] {
        let field: Vec<(&[u8], i32)> = chunks(data, capacity * 8)
            .into_iter()
            .map(|c| (c, level))
            .collect();
        let (out, wall) = timed(&field, false)?;
        fields.push(
            json!({ "field": name, "level": level, "one_thread_s": wall, "compressed_bytes": out }),
        );
        work.extend(field);
    }
    let input: usize = work.iter().map(|(c, _)| c.len()).sum();
    let mut rows = Vec::new();
    for parallel in [false, true] {
        let cpu = cpu_seconds();
        let (out, wall) = timed(&work, parallel)?;
        rows.push(json!({
            "threads": if parallel { rayon::current_num_threads() } else { 1 },
            "wall_s": wall,
            "cpu_s": cpu_seconds() - cpu,
            "compressed_bytes": out,
        }));
    }
    Ok(json!({
        "input_bytes": input,
        "chunks": work.len(),
        "tiles": x.len().div_ceil(capacity * 8) * 3,
        "fields": fields,
        "all": rows,
    }))
}
