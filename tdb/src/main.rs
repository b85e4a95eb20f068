//! `tdb`: inspect, read, check and test TileDB arrays without the C++ library.
//!
//! Every subcommand lives in its own module; this file only parses the
//! command line and maps errors to exit codes (0 success, 1 a finding or a
//! failed run, 2 bad input or bad usage).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod check;
mod conformance;
mod info;
mod read;
mod values;

#[derive(Parser)]
#[command(
    name = "tdb",
    version,
    about = "Read, inspect, check and test TileDB arrays in pure Rust"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Schema, fragments and metadata of an array or group.
    Info(info::Args),
    /// Read cells of an array.
    Read(read::Args),
    /// Validate every file of an array and report each problem.
    Check(check::Args),
    /// Run the conformance matrix (with no arguments: the shipped corpus).
    Conformance(conformance::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Info(args) => info::run(args),
        Command::Read(args) => read::run(args),
        Command::Check(args) => check::run(args),
        Command::Conformance(args) => conformance::run(args),
    };
    match outcome {
        Ok(code) => code,
        Err(message) => {
            eprintln!("tdb: {message}");
            ExitCode::from(2)
        }
    }
}
