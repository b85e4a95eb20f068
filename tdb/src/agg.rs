//! `tdb agg ARRAY --op OP[:ATTR] …`: TileDB's aggregates (count, sum, min,
//! max, mean, null_count) over the cells a subarray and a condition select,
//! and the `--where` condition `tdb read` takes.

use std::path::PathBuf;
use std::process::ExitCode;

use tiledb_runtime::array::OpenOptions;
use tiledb_runtime::read::{Aggregate, AggregateValue, ReadQuery};

use crate::key::KeyArgs;
use crate::values::parse_bound;
use crate::{output_error, Failure};

#[derive(clap::Args)]
pub struct Args {
    /// The array: a folder or a URL (`s3://bucket/array`, …).
    array: PathBuf,
    /// An aggregate: `count`, or `sum:ATTR`, `min:ATTR`, `max:ATTR`,
    /// `mean:ATTR`, `null_count:ATTR`; repeat it for several.
    #[arg(long = "op", value_name = "OP[:ATTR]", required = true)]
    ops: Vec<String>,
    /// Only the cells satisfying this condition (tiledb-py's `cond=`
    /// syntax: `a > 5 and s == 'x'`).
    #[arg(long = "where", value_name = "EXPR")]
    condition: Option<String>,
    /// A range `DIM=LO:HI` (inclusive); repeat it.
    #[arg(long = "subarray", value_name = "DIM=LO:HI")]
    subarray: Vec<String>,
    /// Open the array at time T, or over START..END.
    #[arg(long, value_name = "T|START..END")]
    at: Option<String>,
    /// Print one JSON object (`{"sum(a)": 14, …}`) instead of lines.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    key: KeyArgs,
}

fn render(value: &AggregateValue) -> serde_json::Value {
    match value {
        AggregateValue::Null => serde_json::Value::Null,
        AggregateValue::UInt(v) => (*v).into(),
        AggregateValue::Int(v) => (*v).into(),
        AggregateValue::Float(v) if v.is_finite() => (*v).into(),
        AggregateValue::Float(v) => v.to_string().into(),
        AggregateValue::Bytes(b) => String::from_utf8_lossy(b).into_owned().into(),
    }
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    let mut options = OpenOptions {
        key: args.key.resolve()?,
        ..OpenOptions::default()
    };
    if let Some(at) = &args.at {
        (options.timestamp_start, options.timestamp_end) = crate::read::open_range(at)?;
    }
    let array = crate::location::open_array(&args.array, options)?;
    let schema = array.schema();
    let aggregates = args
        .ops
        .iter()
        .map(|op| Aggregate::parse(op).map_err(|e| format!("--op {op:?}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let mut query = ReadQuery {
        ranges: vec![Vec::new(); schema.dimensions.len()],
        ..ReadQuery::default()
    };
    for spec in &args.subarray {
        let bad = |why: String| format!("--subarray {spec:?}: {why}");
        let (dim, range) = spec
            .split_once('=')
            .ok_or_else(|| bad("expected DIM=LO:HI".into()))?;
        let (lo, hi) = range
            .split_once("..")
            .or_else(|| range.split_once(':'))
            .ok_or_else(|| bad("expected DIM=LO:HI".into()))?;
        let (d, dimension) = schema
            .dimension(dim)
            .ok_or_else(|| bad(format!("no dimension {dim:?}")))?;
        let lo = parse_bound(dimension.datatype, lo).map_err(bad)?;
        let hi = parse_bound(dimension.datatype, hi).map_err(bad)?;
        query.ranges[d].push((lo, hi));
    }
    let condition = args
        .condition
        .as_deref()
        .map(|c| crate::condition::parse_where(&array, c))
        .transpose()?;
    let values = tiledb_runtime::read::aggregate::aggregate(
        array.snapshot(),
        &query,
        condition.as_ref(),
        &aggregates,
    )
    .map_err(|e| format!("{}: {e}", args.array.display()))?;
    let names: Vec<String> = aggregates
        .iter()
        .map(|a| {
            let op = format!("{:?}", a.op)
                .to_lowercase()
                .replace("nullcount", "null_count");
            match &a.attribute {
                Some(attr) => format!("{op}({attr})"),
                None => op,
            }
        })
        .collect();
    let mut out = std::io::stdout().lock();
    use std::io::Write;
    if args.json {
        // Written by hand so that the aggregates keep the order asked.
        let fields: Vec<String> = names
            .into_iter()
            .zip(values.iter().map(render))
            .map(|(name, value)| format!("{}:{value}", serde_json::Value::String(name)))
            .collect();
        writeln!(out, "{{{}}}", fields.join(",")).map_err(output_error)?;
    } else {
        for (name, value) in names.iter().zip(&values) {
            writeln!(out, "{name} = {}", render(value)).map_err(output_error)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
