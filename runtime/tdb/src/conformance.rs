//! `tdb conformance`.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> Result<ExitCode, String> {
    Err("`tdb conformance` is not implemented yet".into())
}
