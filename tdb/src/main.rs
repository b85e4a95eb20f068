//! `tdb`: inspect, read, check and test TileDB arrays without the C++ library.
//!
//! Every subcommand lives in its own module; this file only parses the
//! command line and maps errors to exit codes (0 success, 1 a finding or a
//! failed run, 2 bad input or bad usage). Output into a pipe that closes
//! early (`tdb read … | head`) ends the command quietly with 0.

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod agg;
mod arrow_out;
mod cells;
mod check;
mod condition;
mod conformance;
mod consolidate;
mod create;
mod csv_text;
mod datetime;
mod delete;
mod differential;
mod evolve;
mod explain;
mod group;
mod info;
mod json_input;
mod key;
mod location;
mod meta;
mod progress;
mod read;
mod read_out;
mod schema_doc;
mod values;
mod write;
mod write_input;

/// Why a command stopped early.
#[derive(Debug)]
pub enum Failure {
    /// Bad input or usage: the message names what is wrong (exit 2).
    Message(String),
    /// The reader of our standard output went away; nothing more to say.
    ClosedPipe,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::Message(message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Self {
        Failure::Message(message.to_string())
    }
}

/// A failed write to standard output: a closed pipe ends quietly.
pub fn output_error(e: std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Failure::ClosedPipe
    } else {
        Failure::Message(format!("writing the output: {e}"))
    }
}

#[derive(Parser)]
#[command(
    name = "tdb",
    version,
    about = "Create, write, read, inspect, check and test TileDB arrays in pure Rust"
)]
struct Cli {
    /// Object-store configuration, `key=value`, repeatable: `aws_endpoint`,
    /// `aws_region`, `aws_access_key_id`, `allow_http`, `retry_max`,
    /// `retry_timeout_secs`, `max_in_flight`, … (the environment's
    /// `AWS_*`, `GOOGLE_*`, `AZURE_*` variables apply first). Given before
    /// the command: `tdb --config aws_region=eu-west-1 read s3://…`.
    #[arg(long = "config", value_name = "KEY=VALUE")]
    config: Vec<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Schema, fragments and metadata of an array or group.
    Info(info::Args),
    /// Read cells of an array.
    Read(read::Args),
    /// Create an array from a schema document (`tdb info --json`, JSON or TOML).
    Create(create::Args),
    /// Write cells from JSON, CSV, Arrow IPC or Parquet (as `tdb read`
    /// prints them), streamed into fragments of a bounded size.
    Write(write::Args),
    /// Delete the cells that satisfy a condition (`--where`), as TileDB's delete query.
    Delete(delete::Args),
    /// Aggregates (count, sum, min, max, mean, null_count) over a subarray and a condition.
    Agg(agg::Args),
    /// Validate every file of an array and report each problem.
    Check(check::Args),
    /// Consolidate fragments, fragment metadata, commits or array metadata (TileDB's modes).
    Consolidate(consolidate::Args),
    /// Remove what a consolidation made obsolete, in the same modes.
    Vacuum(consolidate::VacuumArgs),
    /// Run the conformance matrix (with no arguments: the shipped corpus).
    Conformance(conformance::Args),
    /// Differential fuzzing: mutated case recipes written by either side, read by our
    /// runtime and by TileDB, which must agree.
    Differential(differential::Args),
    /// Every byte of a file (or of every file of a folder) explained field by field from spec/.
    Explain(explain::Args),
    /// Get, set or delete metadata of an array or a group.
    Meta(meta::Args),
    /// Create a group, add or remove members, list them.
    Group(group::Args),
    /// Evolve an array's schema (attributes, enumerations, current domain).
    Evolve(evolve::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = location::set_config(&cli.config).and_then(|()| match cli.command {
        Command::Info(args) => info::run(args),
        Command::Read(args) => read::run(args),
        Command::Create(args) => create::run(args),
        Command::Write(args) => write::run(args),
        Command::Delete(args) => delete::run(args),
        Command::Agg(args) => agg::run(args),
        Command::Check(args) => check::run(args),
        Command::Consolidate(args) => consolidate::run(args),
        Command::Vacuum(args) => consolidate::run_vacuum(args),
        Command::Conformance(args) => conformance::run(args),
        Command::Differential(args) => differential::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Meta(args) => meta::run(args),
        Command::Group(args) => group::run(args),
        Command::Evolve(args) => evolve::run(args),
    });
    match outcome {
        Ok(code) => code,
        Err(Failure::ClosedPipe) => ExitCode::SUCCESS,
        Err(Failure::Message(message)) => {
            // Standard error may be the closed pipe too (`2>&1 | head`).
            let _ = writeln!(std::io::stderr(), "tdb: {message}");
            ExitCode::from(2)
        }
    }
}
