//! The write workloads (see `bench/write_workloads.py`): load the input
//! columns TileDB's side prepared as raw little-endian files, then per run
//! copy the empty template array to the output folder (not timed) and time
//! the library's write (or consolidation) alone.

use std::path::Path;
use std::time::Instant;

use serde_json::{json, Value};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::consolidate::ConsolidationConfig;
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::write::{Write, WriteLayout};
use tiledb_runtime::Column;

fn read_input(dir: &Path, name: &str) -> Result<Vec<u8>, String> {
    let path = dir.join(format!("{name}.bin"));
    std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))
}

fn fixed_column(dir: &Path, name: &str, datatype: Datatype) -> Result<Column, String> {
    let mut column = Column::new(name, datatype, Some(1), false);
    column.data = read_input(dir, name)?;
    Ok(column)
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

fn number(spec: &Value, key: &str) -> Result<i128, String> {
    spec[key]
        .as_u64()
        .map(i128::from)
        .ok_or_else(|| format!("workload has no number {key:?}"))
}

/// The write a workload makes, built from its input files before timing
/// (`None` for a consolidation).
fn prepared_write(spec: &Value, dir: &Path) -> Result<Option<Write>, String> {
    Ok(match spec["kind"].as_str() {
        Some("write-dense") => {
            let n = number(spec, "side")?;
            let a = fixed_column(dir, "a", Datatype::Int64)?;
            Some(Write::dense(vec![(0, n - 1), (0, n - 1)], vec![a]))
        }
        Some("write-sparse") => {
            let columns = vec![
                fixed_column(dir, "x", Datatype::Int64)?,
                fixed_column(dir, "y", Datatype::Int64)?,
                fixed_column(dir, "v", Datatype::Float64)?,
            ];
            let layout = if spec["order"] == "global" {
                WriteLayout::GlobalOrder
            } else {
                WriteLayout::Unordered
            };
            Some(Write::sparse(columns).with_layout(layout))
        }
        Some("write-strings") => {
            let n = number(spec, "cells")?;
            let mut s = Column::new("s", Datatype::StringAscii, None, false);
            s.data = read_input(dir, "s")?;
            let starts = read_input(dir, "s.offsets")?;
            let mut offsets: Vec<u64> = starts
                .chunks_exact(8)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                .collect();
            // Our columns carry the end offset too.
            offsets.push(s.data.len() as u64);
            s.offsets = Some(offsets);
            Some(Write::dense(vec![(0, n - 1)], vec![s]))
        }
        Some("write-consolidate") => None,
        other => return Err(format!("unknown write workload {other:?}")),
    })
}

/// Runs one write workload: its run times, the CPU seconds (every thread)
/// of each run, and this process's peak RSS.
pub fn run(
    spec: &Value,
    peak_rss_kib: fn() -> u64,
    cpu_seconds: fn() -> f64,
) -> Result<Value, String> {
    let dir = Path::new(spec["dir"].as_str().ok_or("workload has no dir")?);
    let out = Path::new(spec["out"].as_str().ok_or("workload has no out")?);
    let runs = spec["runs"].as_u64().unwrap_or(1);
    let write = prepared_write(spec, dir)?;
    let mut times = Vec::new();
    let mut cpu_times = Vec::new();
    for _ in 0..runs {
        if out.exists() {
            std::fs::remove_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
        }
        copy_dir(&dir.join("template"), out).map_err(|e| format!("{}: {e}", out.display()))?;
        let array = Array::open_path(out, OpenOptions::default()).map_err(|e| e.to_string())?;
        let (start, cpu) = (Instant::now(), cpu_seconds());
        match &write {
            Some(write) => array.write(write).map(drop),
            None => array.consolidate(&ConsolidationConfig::default()).map(drop),
        }
        .map_err(|e| e.to_string())?;
        times.push(start.elapsed().as_secs_f64());
        cpu_times.push(cpu_seconds() - cpu);
    }
    Ok(json!({ "times": times, "cpu_times": cpu_times, "peak_rss_kib": peak_rss_kib() }))
}
