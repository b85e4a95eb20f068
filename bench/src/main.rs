//! Our side of the benchmark (see `bench/harness.py`): given one workload as
//! JSON, opens the array and times the library's read call in this process,
//! then prints the run times, the result's cell and byte counts and this
//! process's peak RSS as one JSON line. Write workloads (`kind` starting
//! with `write-`) time a write or a consolidation instead ([`mod@write`]).
#![allow(
    unsafe_code,
    reason = "the getrusage FFI call; its block states its SAFETY"
)]

mod codec;
mod codec_floor;
mod write;

use std::process::ExitCode;
use std::time::Instant;

use serde_json::{json, Value};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::filter::{Filter, FilterContext, FilterPipeline};
use tiledb_runtime::fragment::Field;
use tiledb_runtime::read::{encode_scalar, Column, ReadQuery, ReadResult, ResultOrder};
use tiledb_runtime::schema::Scalar;
use tiledb_runtime::tile::{parse_chunks, unfilter_tiles_into, TileJob};

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// CPU time (user + system, all threads) this process has used, in
/// seconds, at the kernel's tick resolution.
fn cpu_seconds() -> f64 {
    let ticks = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Fields after the parenthesised command name; utime and stime
            // are the 14th and 15th fields of the whole line.
            let rest = s.rsplit_once(')')?.1;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let utime: u64 = fields.get(11)?.parse().ok()?;
            let stime: u64 = fields.get(12)?.parse().ok()?;
            Some(utime + stime)
        })
        .unwrap_or(0);
    // USER_HZ is 100 on every Linux configuration that matters here.
    ticks as f64 / 100.0
}

fn column_bytes(c: &Column) -> u64 {
    let offsets = c
        .offsets
        .as_ref()
        .map_or(0, |o| o.len().saturating_sub(1) * 8);
    let validity = c.validity.as_ref().map_or(0, Vec::len);
    (c.data.len() + offsets + validity) as u64
}

/// Whether the workload's result order is fixed by the query, so that both
/// sides return the same cells in the same order.
fn ordered(spec: &Value) -> bool {
    matches!(spec["layout"].as_str(), Some("row-major" | "col-major"))
}

/// The fields the workload asked for, dimensions first, each in the order
/// the workload names them (as the TileDB side hashes them).
fn asked_columns<'r>(result: &'r ReadResult, spec: &Value) -> Vec<&'r Column> {
    let names = |key: &str| -> Vec<String> {
        spec[key]
            .as_array()
            .map(|v| {
                v.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut columns = Vec::new();
    for name in names("dims") {
        columns.extend(result.dimensions.iter().find(|c| c.name == name));
    }
    for name in names("attrs") {
        columns.extend(result.attributes.iter().find(|c| c.name == name));
    }
    columns
}

/// SHA-256 over every asked field: its data bytes, then for a var-sized
/// field each cell's length as a little-endian u64, then its validity
/// bytes. `bench/tiledb_side.py` computes the same from TileDB's buffers.
fn result_digest(result: &ReadResult, spec: &Value) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for column in asked_columns(result, spec) {
        hash.update(&column.data);
        if let Some(offsets) = &column.offsets {
            for w in offsets.windows(2) {
                hash.update((w[1] - w[0]).to_le_bytes());
            }
        }
        if let Some(validity) = &column.validity {
            hash.update(validity);
        }
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Cells and result bytes of the fields the workload asked for.
fn measure(result: &ReadResult, spec: &Value) -> (u64, u64) {
    let bytes = asked_columns(result, spec)
        .into_iter()
        .map(column_bytes)
        .sum();
    (result.cell_count() as u64, bytes)
}

fn query(array: &Array, spec: &Value) -> Result<ReadQuery, String> {
    let schema = array.schema();
    let layout = spec["layout"].as_str().unwrap_or("row-major");
    let layout = ResultOrder::parse(layout).ok_or_else(|| format!("layout {layout:?}"))?;
    let mut ranges = vec![Vec::new(); schema.dimensions.len()];
    match spec["subarray"].as_array() {
        Some(subarray) => {
            for (d, r) in subarray.iter().enumerate() {
                let dim = schema.dimensions.get(d).ok_or("too many ranges")?;
                let bound = |i: usize| {
                    r[i].as_i64()
                        .and_then(|v| encode_scalar(dim.datatype, &Scalar::Int(v.into())))
                        .ok_or_else(|| format!("bad range {r}"))
                };
                ranges[d].push((bound(0)?, bound(1)?));
            }
        }
        // TileDB reads a dense array's whole domain; ask for the same.
        None if schema.is_dense() => {
            for (d, dim) in schema.dimensions.iter().enumerate() {
                let (lo, hi) = dim.domain_scalars().ok_or("no domain")?;
                let enc = |s: &Scalar| encode_scalar(dim.datatype, s).unwrap_or_default();
                ranges[d].push((enc(&lo), enc(&hi)));
            }
        }
        None => {}
    }
    let attributes = spec["attrs"].as_array().map(|v| {
        v.iter()
            .filter_map(|s| s.as_str().map(String::from))
            .collect()
    });
    // Coordinates only when the workload asks for them, as from TileDB.
    let skip_coordinates = spec["dims"].as_array().is_none_or(std::vec::Vec::is_empty);
    Ok(ReadQuery {
        ranges,
        layout,
        attributes,
        skip_coordinates,
    })
}

/// Opens the workload's array: a local folder, or a URL (`s3://…`, with
/// the `config` pairs of `bench/run --s3`).
fn open(spec: &Value) -> Result<Array, String> {
    let path = spec["path"].as_str().ok_or("no path")?;
    let config: Vec<(String, String)> = spec["config"]
        .as_array()
        .map(|pairs| {
            pairs
                .iter()
                .filter_map(|p| Some((p[0].as_str()?.to_owned(), p[1].as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    Array::open_url(path, &config, OpenOptions::default()).map_err(|e| e.to_string())
}

fn run(spec: &Value) -> Result<Value, String> {
    // Start the decode threads before timing, as TileDB starts its thread
    // pools when its context is created.
    rayon::broadcast(|_| ());
    let runs = spec["runs"].as_u64().unwrap_or(5);
    let mut times = Vec::new();
    let mut cpu_times = Vec::new();
    let (mut cells, mut bytes) = (0, 0);
    let mut digest = Value::Null;
    for _ in 0..runs {
        if spec["kind"] == "open" {
            let cpu = cpu_seconds();
            let start = Instant::now();
            let array = open(spec)?;
            times.push(start.elapsed().as_secs_f64());
            cpu_times.push(cpu_seconds() - cpu);
            cells = array.schema().dimensions.len() as u64;
            continue;
        }
        let array = open(spec)?;
        let query = query(&array, spec)?;
        let cpu = cpu_seconds();
        let start = Instant::now();
        let result = array.read(&query).map_err(|e| e.to_string())?;
        times.push(start.elapsed().as_secs_f64());
        cpu_times.push(cpu_seconds() - cpu);
        (cells, bytes) = measure(&result, spec);
        if ordered(spec) && digest.is_null() {
            digest = json!(result_digest(&result, spec));
        }
    }
    Ok(json!({
        "times": times,
        "cpu_times": cpu_times,
        "cells": cells,
        "bytes": bytes,
        "digest": digest,
        "peak_rss_kib": peak_rss_kib(),
    }))
}

/// The stored tiles of one attribute of every fragment.
struct StoredTiles {
    tiles: Vec<(Vec<u8>, u64)>,
    pipeline: FilterPipeline,
    context: FilterContext,
}

fn stored_tiles(array: &Array, attribute: &str) -> Result<StoredTiles, String> {
    let storage = array.storage();
    let mut tiles = Vec::new();
    let mut shape = None;
    for fragment in array.fragments() {
        let (index, attr) = fragment
            .schema
            .attribute(attribute)
            .ok_or_else(|| format!("no attribute {attribute}"))?;
        let field = Field::Attribute(index);
        let offsets = fragment
            .field_tiles(storage, field)
            .map_err(|e| e.to_string())?
            .offsets
            .clone();
        let (size, _, _) = fragment.file_sizes(field);
        let path = fragment.data_path(field, "").map_err(|e| e.to_string())?;
        let file = storage.read(&path).map_err(|e| e.to_string())?;
        for (t, &start) in offsets.iter().enumerate() {
            let end = offsets.get(t + 1).copied().unwrap_or(size);
            let bytes = file
                .get(start as usize..end as usize)
                .ok_or("tile offsets past the file")?
                .to_vec();
            let len = parse_chunks(&bytes)
                .map_err(|e| e.to_string())?
                .iter()
                .map(|c| c.original_len as u64)
                .sum();
            tiles.push((bytes, len));
        }
        let cell_size = attr.datatype.size() * attr.cell_val_num.ok_or("var-sized")? as u64;
        shape = Some((
            attr.filters.clone(),
            FilterContext::new(attr.datatype, cell_size, fragment.version),
        ));
    }
    let (pipeline, context) = shape.ok_or("no fragments")?;
    Ok(StoredTiles {
        tiles,
        pipeline,
        context,
    })
}

/// The compressor's parts of one chunk whose last filter is that
/// compressor: its metadata is first in the chunk's (count of metadata and
/// data parts, then each part's original and compressed size), and its
/// parts are the chunk's data.
/// The first parts hold the metadata of the filters before the compressor
/// (a byteshuffle's part sizes, say), flagged `true`; the rest the cells.
fn compressed_parts<'a>(metadata: &[u8], data: &'a [u8]) -> Option<Vec<Part<'a>>> {
    let u32_at = |at: usize| -> Option<usize> {
        Some(u32::from_le_bytes(metadata.get(at..at + 4)?.try_into().ok()?) as usize)
    };
    let metadata_parts = u32_at(0)?;
    let parts = metadata_parts + u32_at(4)?;
    let mut out = Vec::with_capacity(parts);
    let mut at = 0;
    for i in 0..parts {
        let (original, compressed) = (u32_at(8 + 8 * i)?, u32_at(12 + 8 * i)?);
        out.push((i < metadata_parts, original, data.get(at..at + compressed)?));
        at += compressed;
    }
    Some(out)
}

/// One compressed part: whether it holds metadata, its original size, its
/// compressed bytes.
type Part<'a> = (bool, usize, &'a [u8]);

/// Decode throughput on one thread: the whole pipeline (ours) against the
/// raw codec alone, decompressing the same stored bytes.
fn decode(spec: &Value) -> Result<Value, String> {
    let path = spec["path"].as_str().ok_or("no path")?;
    let runs = spec["runs"].as_u64().unwrap_or(5);
    let attribute = spec["attrs"][0].as_str().ok_or("no attribute")?;
    let array = Array::open_path(path, OpenOptions::default()).map_err(|e| e.to_string())?;
    let stored = stored_tiles(&array, attribute)?;
    let codec = match stored.pipeline.filters.last() {
        Some(Filter::Zstd { .. }) => "zstd",
        Some(Filter::Lz4 { .. }) => "lz4",
        other => return Err(format!("the last filter is {other:?}, not ZSTD or LZ4")),
    };
    let jobs: Vec<TileJob<'_>> = stored
        .tiles
        .iter()
        .enumerate()
        .map(|(i, (bytes, len))| TileJob {
            bytes,
            file_offset: 0,
            index: i as u64,
            expected_len: *len,
            wanted: None,
        })
        .collect();
    let mut outputs: Vec<Vec<u8>> = stored
        .tiles
        .iter()
        .map(|(_, len)| vec![0u8; *len as usize])
        .collect();
    let chunks: Vec<Vec<Part<'_>>> = stored
        .tiles
        .iter()
        .map(|(bytes, _)| {
            let chunks = parse_chunks(bytes).map_err(|e| e.to_string())?;
            let mut parts = Vec::new();
            for c in chunks {
                parts.extend(compressed_parts(c.metadata, c.data).ok_or("bad chunk")?);
            }
            Ok(parts)
        })
        .collect::<Result<_, String>>()?;
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| e.to_string())?;
    let bytes: u64 = stored.tiles.iter().map(|(_, len)| len).sum();
    let (mut ours, mut raw) = (Vec::new(), Vec::new());
    let mut zstd = zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?;
    // One untimed pass of each side first: both then decode into tile
    // buffers already faulted in, with warm caches.
    for run in 0..=runs {
        let start = Instant::now();
        one_thread
            .install(|| {
                let mut slices: Vec<&mut [u8]> = outputs
                    .iter_mut()
                    .map(std::vec::Vec::as_mut_slice)
                    .collect();
                unfilter_tiles_into(&jobs, &stored.pipeline, &stored.context, &mut slices)
            })
            .map_err(|e| e.to_string())?;
        if run > 0 {
            ours.push(start.elapsed().as_secs_f64());
        }

        // The raw codec decompresses into the same tile buffers, chunk
        // after chunk, as the pipeline does.
        let mut metadata = Vec::new();
        let start = Instant::now();
        for (parts, tile) in chunks.iter().zip(outputs.iter_mut()) {
            let mut rest = tile.as_mut_slice();
            for &(is_metadata, original, part) in parts {
                let out = if is_metadata {
                    metadata.resize(original, 0);
                    metadata.as_mut_slice()
                } else {
                    let (out, tail) = std::mem::take(&mut rest).split_at_mut(original);
                    rest = tail;
                    out
                };
                let n = if codec == "zstd" {
                    zstd.decompress_to_buffer(part, out)
                        .map_err(|e| e.to_string())?
                } else {
                    // SAFETY: both pointers are valid for the lengths passed;
                    // liblz4's safe decoder writes at most `out.len()` bytes.
                    let n = unsafe {
                        lz4_sys::LZ4_decompress_safe(
                            part.as_ptr().cast(),
                            out.as_mut_ptr().cast(),
                            part.len() as i32,
                            out.len() as i32,
                        )
                    };
                    usize::try_from(n).map_err(|_| "lz4 error")?
                };
                std::hint::black_box(n);
            }
        }
        if run > 0 {
            raw.push(start.elapsed().as_secs_f64());
        }
    }
    Ok(json!({
        "codec": codec,
        "bytes": bytes,
        "tiles": stored.tiles.len(),
        "ours_times": ours,
        "raw_times": raw,
        "peak_rss_kib": peak_rss_kib(),
    }))
}

fn main() -> ExitCode {
    let Some(text) = std::env::args().nth(1) else {
        eprintln!("usage: tiledb-bench WORKLOAD_JSON (normally run by bench/run)");
        return ExitCode::from(2);
    };
    let spec: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("tiledb-bench: bad workload: {e}");
            return ExitCode::from(2);
        }
    };
    let outcome = if spec["kind"] == "decode" {
        decode(&spec)
    } else if spec["kind"] == "zstd-sparse-tiles" {
        codec_floor::run(&spec, cpu_seconds)
    } else if spec["kind"] == "codec" {
        codec::run(&spec)
    } else if spec["kind"]
        .as_str()
        .is_some_and(|k| k.starts_with("write-"))
    {
        write::run(&spec, peak_rss_kib, cpu_seconds)
    } else {
        run(&spec)
    };
    match outcome {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tiledb-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
