//! `tdb check ARRAY`: validate every file of an array and report each
//! problem with its file, byte offset and field. Exit code 0 when clean, 1
//! when there are findings, 2 for usage errors.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use tiledb_runtime::check::{check_storage, CheckOptions};

use crate::key::KeyArgs;
use crate::{output_error, Failure};

#[derive(clap::Args)]
pub struct Args {
    /// The array: a folder or a URL (`s3://bucket/array`, …).
    pub array: PathBuf,
    #[command(flatten)]
    pub key: KeyArgs,
    /// Print one JSON object per finding instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    crate::location::require_folder(&args.array)?;
    let storage = crate::location::storage(&args.array)?;
    let options = CheckOptions {
        encryption_key: args.key.resolve()?,
        ..Default::default()
    };
    let progress =
        crate::progress::Progress::spinner(&format!("checking {}", args.array.display()));
    let report = check_storage(storage.into(), &options);
    drop(progress);
    let mut out = std::io::stdout().lock();
    for finding in &report.findings {
        if args.json {
            writeln!(
                out,
                "{}",
                serde_json::json!({
                    "class": finding.class.name(),
                    "file": finding.file,
                    "offset": finding.offset,
                    "field": finding.field,
                    "message": finding.message,
                })
            )
            .map_err(output_error)?;
        } else {
            writeln!(out, "{finding}").map_err(output_error)?;
        }
    }
    for note in &report.notes {
        let _ = writeln!(
            std::io::stderr(),
            "note: {}: {}: {}",
            note.file,
            note.field,
            note.message
        );
    }
    let _ = writeln!(
        std::io::stderr(),
        "{}: {} file(s), {} tile(s) checked ({} with their min/max/sum/null count), {} cell(s) read, {} finding(s)",
        args.array.display(),
        report.files_checked,
        report.tiles_checked,
        report.tile_metadata_checked,
        report.cells_read,
        report.findings.len()
    );
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
