//! `tdb read`.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> Result<ExitCode, String> {
    Err("`tdb read` is not implemented yet".into())
}
