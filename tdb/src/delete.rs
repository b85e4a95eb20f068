//! `tdb delete ARRAY --where EXPR [--timestamp T]`: deletes the cells that
//! satisfy a condition, by writing a delete commit as TileDB does. A
//! condition that does not fit the schema, or a dense array, is refused
//! with exit 2 and nothing written.

use std::path::PathBuf;
use std::process::ExitCode;

use tiledb_runtime::array::OpenOptions;
use tiledb_runtime::format::generated::COMMITS_DIR;

use crate::key::KeyArgs;
use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    /// The array: a folder or a URL (`s3://bucket/array`, …).
    array: PathBuf,
    /// The cells to delete (tiledb-py's `cond=` syntax: `a > 5 and s == 'x'`).
    #[arg(long = "where", value_name = "EXPR")]
    condition: String,
    /// The time of the delete: milliseconds since the epoch or ISO-8601
    /// text (UTC); now by default.
    #[arg(long, value_name = "T")]
    timestamp: Option<String>,
    #[command(flatten)]
    key: KeyArgs,
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    let timestamp = args
        .timestamp
        .as_deref()
        .map(|t| crate::datetime::parse_timestamp_ms(t).map_err(|e| format!("--timestamp: {e}")))
        .transpose()?;
    let options = OpenOptions {
        key: args.key.resolve()?,
        ..OpenOptions::default()
    };
    let array = crate::location::open_array(&args.array, options)?;
    let name = array
        .delete(&args.condition, timestamp)
        .map_err(|e| format!("{}: {e}", args.array.display()))?;
    eprintln!("wrote {COMMITS_DIR}/{name}");
    Ok(ExitCode::SUCCESS)
}
