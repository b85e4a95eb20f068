//! `tdb info`.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> Result<ExitCode, String> {
    Err("`tdb info` is not implemented yet".into())
}
