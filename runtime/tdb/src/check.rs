//! `tdb check`.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> Result<ExitCode, String> {
    Err("`tdb check` is not implemented yet".into())
}
