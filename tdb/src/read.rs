//! `tdb read`: reads cells and prints them as JSON, CSV, a table, or only
//! their count, or writes them as an Arrow IPC stream or a Parquet file.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::read::typed::{empty_result, fill_dense_ranges};
use tiledb_runtime::read::{Column, ReadQuery, ReadResult, ResultOrder};

use crate::datetime;
use crate::key::KeyArgs;
use crate::values::{parse_bound, Render};
use crate::{output_error, Failure};

/// What `tdb read` prints.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// One JSON object: fields in schema order, one value per cell.
    Json,
    /// A header line, then one line per cell; null is an empty field.
    Csv,
    /// Aligned columns for a person.
    Table,
    /// Decode everything, print only the number of cells.
    Null,
    /// An Arrow IPC stream (one record batch), TileDB's types mapped as
    /// tiledb-py's `return_arrow=True` maps them.
    Arrow,
    /// A Parquet file (zstd-compressed; needs --output), the same Arrow
    /// columns.
    Parquet,
}

/// The order of the result cells.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutArg {
    RowMajor,
    ColMajor,
    /// Tile order, then cell order (Hilbert order on Hilbert arrays).
    Global,
    Unordered,
}

impl From<LayoutArg> for ResultOrder {
    fn from(layout: LayoutArg) -> Self {
        match layout {
            LayoutArg::RowMajor => ResultOrder::RowMajor,
            LayoutArg::ColMajor => ResultOrder::ColMajor,
            LayoutArg::Global => ResultOrder::Global,
            LayoutArg::Unordered => ResultOrder::Unordered,
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// The array folder, or a URL (`s3://bucket/array`, …).
    array: PathBuf,
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    format: OutputFormat,
    #[arg(long, value_enum, default_value_t = LayoutArg::RowMajor)]
    layout: LayoutArg,
    /// A range `DIM=LO:HI` or `DIM=LO..HI` (inclusive; `..` where a bound
    /// holds `:`); repeat it, several for one dimension make a multi-range
    /// read. Date and time dimensions take ISO-8601 bounds (`2020-01-01`,
    /// `2020-01-01T12:00:00.5`) or the stored integers.
    #[arg(long = "subarray", value_name = "DIM=LO:HI")]
    subarray: Vec<String>,
    /// Open the array at time T, or over the range START..END (inclusive):
    /// milliseconds since the epoch or ISO-8601 text (UTC).
    #[arg(long, value_name = "T|START..END")]
    at: Option<String>,
    /// The attributes to read, comma-separated (default: all).
    #[arg(long)]
    attrs: Option<String>,
    /// Return the attributes only, without the coordinates of the cells
    /// (what tiledb-py returns for a dense `A[...]`; the benchmark's reads).
    #[arg(long)]
    no_coordinates: bool,
    /// Only the cells satisfying this condition (tiledb-py's `cond=` syntax:
    /// `a > 5 and s == 'x'`); on a dense array the others read as fill values.
    #[arg(long = "where", value_name = "EXPR")]
    condition: Option<String>,
    /// Print at most N cells (the first N of the result order).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Print stored values: dates and times as integers, enumerated
    /// attributes as their indexes (json, csv and table output).
    #[arg(long)]
    raw: bool,
    /// Write to this file instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    key: KeyArgs,
}

/// `--at`: `T` opens at time T (from 0), `START..END` over that range.
pub fn open_range(text: &str) -> Result<(u64, u64), String> {
    let at = |t: &str| datetime::parse_timestamp_ms(t).map_err(|e| format!("--at: {e}"));
    match text.split_once("..") {
        Some((start, end)) => {
            let (start, end) = (at(start)?, at(end)?);
            if start > end {
                return Err(format!("--at {text:?}: the start is after the end"));
            }
            Ok((start, end))
        }
        None => Ok((0, at(text)?)),
    }
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    let layout = ResultOrder::from(args.layout);
    let mut options = OpenOptions {
        key: args.key.resolve()?,
        ..OpenOptions::default()
    };
    if let Some(at) = &args.at {
        (options.timestamp_start, options.timestamp_end) = open_range(at)?;
    }
    let array = crate::location::open_array(&args.array, options)?;
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
                return Err(format!("--attrs: the array has no attribute {n:?}").into());
            }
        }
    }
    for spec in &args.subarray {
        let (dim, range) = spec
            .split_once('=')
            .ok_or_else(|| format!("--subarray {spec:?}: expected DIM=LO:HI"))?;
        // `LO..HI` where a bound holds `:` itself (ISO-8601 times).
        let (lo, hi) = range
            .split_once("..")
            .or_else(|| range.split_once(':'))
            .ok_or_else(|| format!("--subarray {spec:?}: expected DIM=LO:HI or DIM=LO..HI"))?;
        let (d, dimension) = schema
            .dimension(dim)
            .ok_or_else(|| format!("--subarray {spec:?}: the array has no dimension {dim:?}"))?;
        let lo =
            parse_bound(dimension.datatype, lo).map_err(|e| format!("--subarray {spec:?}: {e}"))?;
        let hi =
            parse_bound(dimension.datatype, hi).map_err(|e| format!("--subarray {spec:?}: {e}"))?;
        query.ranges[d].push((lo, hi));
    }
    let condition = args
        .condition
        .as_deref()
        .map(|c| crate::condition::parse_where(&array, c))
        .transpose()?;
    // A dense read without ranges covers the non-empty domain.
    let result = if fill_dense_ranges(array.snapshot(), &mut query) {
        crate::condition::read_where(&array, &query, condition.as_ref())
            .map_err(|e| format!("{}: {e}", args.array.display()))?
    } else {
        empty_result(array.snapshot(), &query)
    };
    match &args.output {
        Some(path) => {
            let file = std::fs::File::create(path)
                .map_err(|e| format!("--output {}: {e}", path.display()))?;
            let mut out = std::io::BufWriter::new(file);
            write_result(&args, &array, result, &mut out)?;
            out.flush()
                .map_err(|e| format!("--output {}: {e}", path.display()))?;
        }
        None => {
            // Not locked: the Parquet writer wants a writer it could send.
            let mut out = std::io::BufWriter::new(std::io::stdout());
            write_result(&args, &array, result, &mut out)?;
            out.flush().map_err(output_error)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the result in the format asked for.
fn write_result(
    args: &Args,
    array: &Array,
    result: ReadResult,
    out: &mut (impl Write + Send),
) -> Result<(), Failure> {
    if !matches!(args.format, OutputFormat::Arrow | OutputFormat::Parquet) {
        return print(args, array, &result, out);
    }
    if args.raw {
        return Err("--raw applies to json, csv and table output".into());
    }
    let parquet = args.format == OutputFormat::Parquet;
    if parquet && args.output.is_none() {
        return Err("--format parquet writes a file: give --output FILE".into());
    }
    let batch = tiledb_runtime::read::arrow::record_batch(array.schema(), result)
        .map_err(|e| format!("{}: {e}", args.array.display()))?;
    let batch = match args.limit {
        Some(limit) => batch.slice(0, limit.min(batch.num_rows())),
        None => batch,
    };
    crate::arrow_out::write(parquet, &batch, out).map_err(|e| match (e, &args.output) {
        (crate::arrow_out::WriteError::Io(e), None) => output_error(e),
        (e, Some(path)) => Failure::Message(format!("writing {}: {e}", path.display())),
        (e, None) => Failure::Message(format!("writing the output: {e}")),
    })
}

fn print(
    args: &Args,
    array: &Array,
    result: &ReadResult,
    mut out: &mut impl Write,
) -> Result<(), Failure> {
    let columns: Vec<_> = result.dimensions.iter().chain(&result.attributes).collect();
    let total = result.cell_count();
    let n = args.limit.map_or(total, |limit| limit.min(total));
    let render = Render::new(array.schema(), args.raw);
    match args.format {
        OutputFormat::Null => {
            // The read has decoded every tile and gathered every cell into
            // the result columns; print only the count, so that timing this
            // command times the read (no text formatting).
            std::hint::black_box(&columns);
            writeln!(out, "{n}").map_err(output_error)?;
        }
        OutputFormat::Json => {
            // Written by hand so that fields keep the schema's order.
            let group = |cols: &[Column]| -> String {
                let parts: Vec<String> = cols
                    .iter()
                    .map(|c| {
                        let values = Value::Array((0..n).map(|i| render.cell_json(c, i)).collect());
                        format!("{}:{values}", Value::String(c.name.clone()))
                    })
                    .collect();
                format!("{{{}}}", parts.join(","))
            };
            writeln!(
                out,
                "{{\"dimensions\":{},\"attributes\":{}}}",
                group(&result.dimensions),
                group(&result.attributes)
            )
            .map_err(output_error)?;
        }
        OutputFormat::Csv => {
            let mut csv = csv::Writer::from_writer(&mut out);
            let csv_error = |e: csv::Error| match e.into_kind() {
                csv::ErrorKind::Io(e) => output_error(e),
                other => Failure::Message(format!("writing CSV: {other:?}")),
            };
            csv.write_record(columns.iter().map(|c| c.name.as_str()))
                .map_err(csv_error)?;
            for i in 0..n {
                let row = columns
                    .iter()
                    .map(|c| render.cell_text(c, i).unwrap_or_default());
                csv.write_record(row).map_err(csv_error)?;
            }
            csv.flush().map_err(output_error)?;
        }
        OutputFormat::Table => print_table(&mut out, &columns, &render, n, total)?,
        OutputFormat::Arrow | OutputFormat::Parquet => unreachable!("written by write_result"),
    }
    Ok(())
}

/// Aligned columns, a rule under the header, and the cell count.
fn print_table(
    out: &mut impl Write,
    columns: &[&Column],
    render: &Render,
    n: usize,
    total: usize,
) -> Result<(), Failure> {
    let rows: Vec<Vec<String>> = (0..n)
        .map(|i| {
            columns
                .iter()
                .map(|c| render.cell_text(c, i).unwrap_or_else(|| "null".to_string()))
                .collect()
        })
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
    let header = line(columns.iter().map(|c| c.name.as_str()).collect());
    let rule = widths
        .iter()
        .map(|w| "-".repeat(*w))
        .collect::<Vec<_>>()
        .join("-+-");
    writeln!(out, "{header}\n{rule}").map_err(output_error)?;
    for row in &rows {
        writeln!(out, "{}", line(row.iter().map(String::as_str).collect()))
            .map_err(output_error)?;
    }
    if n < total {
        writeln!(out, "(first {n} of {total} cells)").map_err(output_error)?;
    } else {
        writeln!(out, "({n} cells)").map_err(output_error)?;
    }
    Ok(())
}
