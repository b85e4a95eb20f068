//! `tdb read`: reads cells and prints them as JSON, CSV, a table, or only
//! their count, or writes them as an Arrow IPC stream or a Parquet file.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use tiledb_runtime::array::OpenOptions;
use tiledb_runtime::read::typed::fill_dense_ranges;
use tiledb_runtime::read::{ReadQuery, ResultOrder};

use crate::datetime;
use crate::key::KeyArgs;
use crate::read_out::OutputFormat;
use crate::values::parse_bound;
use crate::{output_error, Failure};

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
    /// Print at most N cells (the first N of the result order); the read
    /// stops once it has them.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// The most memory one batch of cells may take (the read goes batch by
    /// batch, in the result order): bytes, or with a suffix (`64MiB`,
    /// `1GiB`, `500MB`, `512k`).
    #[arg(long, value_name = "BYTES", default_value = "256MiB", value_parser = parse_bytes)]
    memory_budget: u64,
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
    let has_cells = fill_dense_ranges(array.snapshot(), &mut query);
    let output = crate::read_out::Output {
        array: &array,
        name: args.array.display().to_string(),
        query,
        condition,
        has_cells,
        budget: args.memory_budget,
        format: args.format,
        limit: args.limit,
        raw: args.raw,
        to_file: args.output.as_ref().map(|p| p.display().to_string()),
    };
    match &args.output {
        Some(path) => {
            let file = std::fs::File::create(path)
                .map_err(|e| format!("--output {}: {e}", path.display()))?;
            let mut out = std::io::BufWriter::new(file);
            output.write(&mut out)?;
            out.flush()
                .map_err(|e| format!("--output {}: {e}", path.display()))?;
        }
        None => {
            // Not locked: the Parquet writer wants a writer it could send.
            let mut out = std::io::BufWriter::new(std::io::stdout());
            output.write(&mut out)?;
            out.flush().map_err(output_error)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A byte count: digits, optionally followed by a unit (`k`/`KiB` = 1024,
/// `KB` = 1000, `M`/`MiB`, `MB`, `G`/`GiB`, `GB`, `T`/`TiB`, `TB`; any
/// case, a space allowed).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a number of bytes (e.g. 268435456 or 256MiB)"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "kb" => 1_000,
        "m" | "mib" => 1 << 20,
        "mb" => 1_000_000,
        "g" | "gib" => 1 << 30,
        "gb" => 1_000_000_000,
        "t" | "tib" => 1 << 40,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(format!(
                "{other:?} is not a unit of bytes (KiB, MiB, GiB, KB, MB, GB)"
            ))
        }
    };
    let bytes = number
        .checked_mul(scale)
        .ok_or_else(|| format!("{text:?} is more bytes than this machine counts"))?;
    if bytes == 0 {
        return Err("a memory budget of 0 bytes".into());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn byte_counts_take_units() {
        assert_eq!(parse_bytes("1234"), Ok(1234));
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("64 mib"), Ok(64 << 20));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        assert_eq!(parse_bytes("500MB"), Ok(500_000_000));
        assert_eq!(parse_bytes("512k"), Ok(512 << 10));
        for bad in ["", "MiB", "12 parsecs", "0", "-5", "99999999999999999999"] {
            assert!(parse_bytes(bad).is_err(), "{bad:?}");
        }
    }
}
