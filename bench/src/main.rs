//! Our side of the benchmark (see `bench/harness.py`): given one workload as
//! JSON, opens the array and times the library's read call in this process,
//! then prints the run times, the result's cell and byte counts and this
//! process's peak RSS as one JSON line.

use std::process::ExitCode;
use std::time::Instant;

use serde_json::{json, Value};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::read::{encode_scalar, Column, Layout, ReadQuery, ReadResult};
use tiledb_runtime::schema::Scalar;

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

/// Cells and result bytes of the fields the workload asked for.
fn measure(result: &ReadResult, spec: &Value) -> (u64, u64) {
    let wanted = |key: &str| -> Vec<String> {
        spec[key]
            .as_array()
            .map(|v| {
                v.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (dims, attrs) = (wanted("dims"), wanted("attrs"));
    let bytes = result
        .dimensions
        .iter()
        .filter(|c| dims.contains(&c.name))
        .chain(result.attributes.iter().filter(|c| attrs.contains(&c.name)))
        .map(column_bytes)
        .sum();
    (result.cell_count() as u64, bytes)
}

fn query(array: &Array, spec: &Value) -> Result<ReadQuery, String> {
    let schema = array.schema();
    let layout = spec["layout"].as_str().unwrap_or("row-major");
    let layout = Layout::parse(layout).ok_or_else(|| format!("layout {layout:?}"))?;
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
    let skip_coordinates = spec["dims"].as_array().is_none_or(|d| d.is_empty());
    Ok(ReadQuery {
        ranges,
        layout,
        attributes,
        skip_coordinates,
    })
}

fn run(spec: &Value) -> Result<Value, String> {
    // Start the decode threads before timing, as TileDB starts its thread
    // pools when its context is created.
    rayon::broadcast(|_| ());
    let path = spec["path"].as_str().ok_or("no path")?;
    let runs = spec["runs"].as_u64().unwrap_or(5);
    let mut times = Vec::new();
    let mut cpu_times = Vec::new();
    let (mut cells, mut bytes) = (0, 0);
    for _ in 0..runs {
        if spec["kind"] == "open" {
            let cpu = cpu_seconds();
            let start = Instant::now();
            let array =
                Array::open_path(path, OpenOptions::default()).map_err(|e| e.to_string())?;
            times.push(start.elapsed().as_secs_f64());
            cpu_times.push(cpu_seconds() - cpu);
            cells = array.schema().dimensions.len() as u64;
            continue;
        }
        let array = Array::open_path(path, OpenOptions::default()).map_err(|e| e.to_string())?;
        let query = query(&array, spec)?;
        let cpu = cpu_seconds();
        let start = Instant::now();
        let result = array.read(&query).map_err(|e| e.to_string())?;
        times.push(start.elapsed().as_secs_f64());
        cpu_times.push(cpu_seconds() - cpu);
        (cells, bytes) = measure(&result, spec);
    }
    Ok(json!({
        "times": times,
        "cpu_times": cpu_times,
        "cells": cells,
        "bytes": bytes,
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
    match run(&spec) {
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
