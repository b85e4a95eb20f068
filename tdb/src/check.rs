//! `tdb check ARRAY`: validate every file of an array and report each
//! problem with its file, byte offset and field. Exit code 0 when clean, 1
//! when there are findings, 2 for usage errors.

use std::path::PathBuf;
use std::process::ExitCode;

use tiledb_runtime::check::{check_array, CheckOptions};

#[derive(clap::Args)]
pub struct Args {
    /// The array folder.
    pub array: PathBuf,
    /// The AES-256-GCM key of an encrypted array, as 32 characters or 64
    /// hexadecimal digits.
    #[arg(long)]
    pub key: Option<String>,
    /// Print one JSON object per finding instead of text.
    #[arg(long)]
    pub json: bool,
}

fn parse_key(text: &str) -> Result<[u8; 32], String> {
    let bytes = text.as_bytes();
    if bytes.len() == 32 {
        let mut key = [0u8; 32];
        key.copy_from_slice(bytes);
        return Ok(key);
    }
    if bytes.len() == 64 {
        let mut key = [0u8; 32];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            let hex = std::str::from_utf8(pair).map_err(|_| "the key is not hexadecimal")?;
            key[i] = u8::from_str_radix(hex, 16).map_err(|_| "the key is not hexadecimal")?;
        }
        return Ok(key);
    }
    Err(format!(
        "the key must be 32 characters or 64 hexadecimal digits, not {}",
        bytes.len()
    ))
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    if !args.array.is_dir() {
        return Err(format!("{} is not a folder", args.array.display()));
    }
    let options = CheckOptions {
        encryption_key: args.key.as_deref().map(parse_key).transpose()?,
        ..Default::default()
    };
    let report = check_array(&args.array, &options);
    for finding in &report.findings {
        if args.json {
            println!(
                "{}",
                serde_json::json!({
                    "class": finding.class.name(),
                    "file": finding.file,
                    "offset": finding.offset,
                    "field": finding.field,
                    "message": finding.message,
                })
            );
        } else {
            println!("{finding}");
        }
    }
    for note in &report.notes {
        eprintln!("note: {}: {}: {}", note.file, note.field, note.message);
    }
    eprintln!(
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
