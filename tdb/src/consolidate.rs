//! `tdb consolidate ARRAY --mode MODE [--config k=v]…` and
//! `tdb vacuum ARRAY --mode MODE`: TileDB's consolidation and vacuum in
//! their four modes (`fragments`, `fragment-meta`, `commits`,
//! `array-meta`), steered by TileDB's `sm.consolidation.*` settings. The
//! names written (consolidate) or the count removed (vacuum) go to
//! standard output; a progress bar to standard error when it is a terminal.
//! A refused setting, mode or key is a usage error (exit 2) with the array
//! untouched: everything is checked before anything is written.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::consolidate::{ConsolidationConfig, ConsolidationMode, Progress};

use crate::key::KeyArgs;
use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    /// The array: a folder or a URL (`s3://bucket/array`, …).
    array: PathBuf,
    /// What to consolidate: fragments, fragment-meta, commits or array-meta
    /// (TileDB's `sm.consolidation.mode`; also spelled with underscores).
    #[arg(long, default_value = "fragments")]
    mode: String,
    /// A TileDB setting `key=value` (repeatable), e.g.
    /// `sm.consolidation.step_min_frags=2`; the `sm.consolidation.` prefix
    /// may be left out. Keys: steps, step_min_frags, step_max_frags,
    /// step_size_ratio, amplification, timestamp_start, timestamp_end,
    /// purge_deleted_cells, max_fragment_size, buffer_size, mode.
    #[arg(long, value_name = "KEY=VALUE")]
    config: Vec<String>,
    #[command(flatten)]
    key: KeyArgs,
}

#[derive(clap::Args)]
pub struct VacuumArgs {
    /// The array: a folder or a URL (`s3://bucket/array`, …).
    array: PathBuf,
    /// What to vacuum: fragments, fragment-meta, commits or array-meta
    /// (TileDB's `sm.vacuum.mode`).
    #[arg(long, default_value = "fragments")]
    mode: String,
    #[command(flatten)]
    key: KeyArgs,
}

/// The settings of the command line, checked as TileDB checks them: an
/// unknown key, a bad value or a mode that contradicts `--mode` is refused.
fn config_from(mode: &str, pairs: &[String]) -> Result<ConsolidationConfig, String> {
    let mode: ConsolidationMode = mode.parse().map_err(|e| format!("--mode: {e}"))?;
    let mut config = ConsolidationConfig::default();
    for pair in pairs {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("--config {pair:?}: expected KEY=VALUE"))?;
        let key = key.trim();
        let key = if key.starts_with("sm.") {
            key.to_string()
        } else {
            format!("sm.consolidation.{key}")
        };
        config
            .set(&key, value)
            .map_err(|e| format!("--config {pair:?}: {e}"))?;
        if key == "sm.consolidation.mode" && config.mode != mode {
            return Err(format!(
                "--config {pair:?} contradicts --mode {}",
                mode.name()
            ));
        }
    }
    config.mode = mode;
    config.validate().map_err(|e| format!("--config: {e}"))?;
    Ok(config)
}

/// A bar on standard error: `[#####·····] 5/10 fragments merged, 2 steps`.
fn draw(progress: Progress) {
    let total = progress.candidates.max(1);
    let done = progress.merged.min(total);
    let width = 30;
    let filled = done * width / total;
    let bar: String = "#".repeat(filled) + &"·".repeat(width - filled);
    let mut err = std::io::stderr();
    let _ = write!(
        err,
        "\r[{bar}] {done}/{total} merged, {} step{}",
        progress.steps,
        if progress.steps == 1 { "" } else { "s" }
    );
    let _ = err.flush();
}

fn open(array: &Path, key: &KeyArgs) -> Result<Array, Failure> {
    let options = OpenOptions {
        key: key.resolve()?,
        ..OpenOptions::default()
    };
    crate::location::open_array(array, options)
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    let config = config_from(&args.mode, &args.config)?;
    let array = open(&args.array, &args.key)?;
    let terminal = std::io::stderr().is_terminal();
    let mut progress = |p: Progress| {
        if terminal {
            draw(p);
        }
    };
    let written = array
        .consolidate_reporting(&config, &mut progress)
        .map_err(|e| format!("{}: {e}", args.array.display()))?;
    if terminal {
        eprintln!();
    }
    let mut out = std::io::stdout().lock();
    for name in &written {
        writeln!(out, "{name}").map_err(crate::output_error)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run_vacuum(args: VacuumArgs) -> Result<ExitCode, Failure> {
    let mode: ConsolidationMode = args.mode.parse().map_err(|e| format!("--mode: {e}"))?;
    let array = open(&args.array, &args.key)?;
    let removed = array
        .vacuum(mode)
        .map_err(|e| format!("{}: {e}", args.array.display()))?;
    writeln!(std::io::stdout(), "{removed}").map_err(crate::output_error)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::config_from;

    #[test]
    fn settings_with_or_without_their_prefix_and_refusals() {
        let config = config_from(
            "fragment-meta",
            &[
                "step_min_frags=2".into(),
                "sm.consolidation.step_max_frags=3".into(),
            ],
        )
        .unwrap();
        assert_eq!((config.step_min_frags, config.step_max_frags), (2, 3));
        assert_eq!(config.mode.name(), "fragment_meta");
        assert!(config_from("everything", &[]).is_err());
        assert!(config_from("fragments", &["steps".into()]).is_err());
        assert!(config_from("fragments", &["mode=commits".into()]).is_err());
        assert!(config_from(
            "fragments",
            &["step_min_frags=3".into(), "step_max_frags=2".into()]
        )
        .is_err());
        assert!(config_from("fragments", &["sm.mem.total_budget=1".into()]).is_err());
    }
}
