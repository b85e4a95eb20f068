//! `tdb read`: reads cells and prints them as JSON, CSV, a table, or only
//! their count.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::read::{Layout, ReadQuery, ReadResult};

use crate::values::{cell_json, cell_text, parse_bound};

#[derive(clap::Args)]
pub struct Args {
    /// The array folder.
    array: PathBuf,
    /// Output: json, csv, table (default) or null (decode everything, print the count).
    #[arg(long, default_value = "table")]
    format: String,
    /// Result order: row-major (default), col-major, global or unordered.
    #[arg(long, default_value = "row-major")]
    layout: String,
    /// A range `DIM=LO:HI` (inclusive); repeat it, several for one dimension
    /// make a multi-range read.
    #[arg(long = "subarray", value_name = "DIM=LO:HI")]
    subarray: Vec<String>,
    /// Open the array at this time (milliseconds since the epoch).
    #[arg(long)]
    at: Option<u64>,
    /// The attributes to read, comma-separated (default: all).
    #[arg(long)]
    attrs: Option<String>,
    /// Return the attributes only, without the coordinates of the cells
    /// (what tiledb-py returns for a dense `A[...]`; the benchmark's reads).
    #[arg(long)]
    no_coordinates: bool,
    /// The 32-byte AES-256-GCM key of an encrypted array.
    #[arg(long)]
    key: Option<String>,
}

pub fn key(text: &Option<String>) -> Result<Option<[u8; 32]>, String> {
    match text {
        None => Ok(None),
        Some(k) => k
            .as_bytes()
            .try_into()
            .map(Some)
            .map_err(|_| format!("--key must be exactly 32 bytes, got {}", k.len())),
    }
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    let layout = Layout::parse(&args.layout).ok_or_else(|| {
        format!(
            "--layout {:?}: use row-major, col-major, global or unordered",
            args.layout
        )
    })?;
    if !["json", "csv", "table", "null"].contains(&args.format.as_str()) {
        return Err(format!(
            "--format {:?}: use json, csv, table or null",
            args.format
        ));
    }
    let mut options = OpenOptions {
        key: key(&args.key)?,
        ..OpenOptions::default()
    };
    if let Some(at) = args.at {
        options.timestamp_end = at;
    }
    let array = Array::open_path(&args.array, options)
        .map_err(|e| format!("{}: {e}", args.array.display()))?;
    let schema = array.schema();
    let mut query = ReadQuery {
        layout,
        ranges: vec![Vec::new(); schema.dimensions.len()],
        attributes: args.attrs.as_ref().map(|a| {
            a.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        }),
        skip_coordinates: args.no_coordinates,
    };
    if let Some(names) = &query.attributes {
        for n in names {
            if schema.attribute(n).is_none() {
                return Err(format!("--attrs: the array has no attribute {n:?}"));
            }
        }
    }
    for spec in &args.subarray {
        let (dim, range) = spec
            .split_once('=')
            .ok_or_else(|| format!("--subarray {spec:?}: expected DIM=LO:HI"))?;
        let (lo, hi) = range
            .split_once(':')
            .ok_or_else(|| format!("--subarray {spec:?}: expected DIM=LO:HI"))?;
        let (d, dimension) = schema
            .dimension(dim)
            .ok_or_else(|| format!("--subarray {spec:?}: the array has no dimension {dim:?}"))?;
        let lo =
            parse_bound(dimension.datatype, lo).map_err(|e| format!("--subarray {spec:?}: {e}"))?;
        let hi =
            parse_bound(dimension.datatype, hi).map_err(|e| format!("--subarray {spec:?}: {e}"))?;
        query.ranges[d].push((lo, hi));
    }
    // A dense read without ranges covers the non-empty domain.
    if schema.is_dense() {
        if let Some(ned) = array.non_empty_domain() {
            for (d, (lo, hi)) in ned.iter().enumerate() {
                if query.ranges[d].is_empty() {
                    let dt = schema.dimensions[d].datatype;
                    let enc = |s| tiledb_runtime::read::encode_scalar(dt, s).unwrap_or_default();
                    query.ranges[d].push((enc(lo), enc(hi)));
                }
            }
        } else {
            return print(&args.format, &empty_result(&array, &query));
        }
    }
    let result = array
        .read(&query)
        .map_err(|e| format!("{}: {e}", args.array.display()))?;
    print(&args.format, &result)
}

fn empty_result(array: &Array, query: &ReadQuery) -> ReadResult {
    use tiledb_runtime::read::Column;
    let schema = array.schema();
    ReadResult {
        dimensions: schema
            .dimensions
            .iter()
            .filter(|_| !query.skip_coordinates)
            .map(|d| {
                Column::new(
                    &d.name,
                    d.datatype,
                    if d.var { None } else { Some(1) },
                    false,
                )
            })
            .collect(),
        attributes: schema
            .attributes
            .iter()
            .filter(|a| {
                query
                    .attributes
                    .as_ref()
                    .is_none_or(|n| n.contains(&a.name))
            })
            .map(|a| Column::new(&a.name, a.datatype, a.cell_val_num, a.nullable))
            .collect(),
    }
}

fn print(format: &str, result: &ReadResult) -> Result<ExitCode, String> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let columns: Vec<_> = result.dimensions.iter().chain(&result.attributes).collect();
    let n = result.cell_count();
    let io = |e: std::io::Error| format!("writing the output: {e}");
    match format {
        "null" => {
            // The read has decoded every tile and gathered every cell into
            // the result columns; print only the count, so that timing this
            // command times the read (no text formatting).
            std::hint::black_box(&columns);
            writeln!(out, "{n}").map_err(io)?;
        }
        "json" => {
            // Written by hand so that fields keep the schema's order.
            let group = |cols: &[tiledb_runtime::read::Column]| -> Result<String, String> {
                let mut parts = Vec::new();
                for c in cols {
                    let values = Value::Array((0..n).map(|i| cell_json(c, i)).collect());
                    let name = serde_json::to_string(&c.name).map_err(|e| e.to_string())?;
                    parts.push(format!("{name}:{values}"));
                }
                Ok(format!("{{{}}}", parts.join(",")))
            };
            writeln!(
                out,
                "{{\"dimensions\":{},\"attributes\":{}}}",
                group(&result.dimensions)?,
                group(&result.attributes)?
            )
            .map_err(io)?;
        }
        "csv" => {
            let quote = |s: &str| {
                if s.contains([',', '"', '\n', '\r']) {
                    format!("\"{}\"", s.replace('"', "\"\""))
                } else {
                    s.to_string()
                }
            };
            let header: Vec<String> = columns.iter().map(|c| quote(&c.name)).collect();
            writeln!(out, "{}", header.join(",")).map_err(io)?;
            for i in 0..n {
                let row: Vec<String> = columns.iter().map(|c| quote(&cell_text(c, i))).collect();
                writeln!(out, "{}", row.join(",")).map_err(io)?;
            }
        }
        _ => {
            let rows: Vec<Vec<String>> = (0..n)
                .map(|i| columns.iter().map(|c| cell_text(c, i)).collect())
                .collect();
            let mut widths: Vec<usize> = columns.iter().map(|c| c.name.chars().count()).collect();
            for row in &rows {
                for (w, v) in widths.iter_mut().zip(row) {
                    *w = (*w).max(v.chars().count());
                }
            }
            let line = |cells: Vec<&str>| -> String {
                cells
                    .iter()
                    .zip(&widths)
                    .map(|(c, w)| format!("{c:<w$}"))
                    .collect::<Vec<_>>()
                    .join(" | ")
                    .trim_end()
                    .to_string()
            };
            writeln!(
                out,
                "{}",
                line(columns.iter().map(|c| c.name.as_str()).collect())
            )
            .map_err(io)?;
            writeln!(
                out,
                "{}",
                widths
                    .iter()
                    .map(|w| "-".repeat(*w))
                    .collect::<Vec<_>>()
                    .join("-+-")
            )
            .map_err(io)?;
            for row in &rows {
                writeln!(out, "{}", line(row.iter().map(String::as_str).collect())).map_err(io)?;
            }
            writeln!(out, "({n} cells)").map_err(io)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
