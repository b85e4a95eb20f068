//! `tdb conformance`: the conformance matrix (with no arguments, the shipped corpus, every
//! reader, and every live writer). Exit status 0 only when no result is unexpected.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use tiledb_conformance::adapter::tiledb_py_command;
use tiledb_conformance::case::Level;
use tiledb_conformance::{Adapter, ProcessAdapter, Progress, RunConfig, RuntimeAdapter, Selection};

use crate::{output_error, Failure};

/// The oracle: TileDB through tiledb-py.
const DEFAULT_ORACLE: &str = "tiledb-py";

#[derive(clap::Args)]
pub struct Args {
    // Boxed: the options are many and `tdb`'s subcommand enum keeps its variants small.
    #[command(flatten)]
    options: Box<Options>,
}

#[derive(clap::Args)]
struct Options {
    /// Only this case (repeatable); `prefix*` selects every case whose id starts with prefix.
    #[arg(long = "case", value_name = "ID")]
    cases: Vec<String>,
    /// Only this read of the selected cases (repeatable), e.g. all.
    #[arg(long = "read", value_name = "ID")]
    reads: Vec<String>,
    /// Only cases carrying every given tag: array kind, feature, datatype, filter or level.
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// Only this reader (repeatable), e.g. tiledb-runtime, tiledb-py.
    #[arg(long = "reader", value_name = "NAME")]
    readers: Vec<String>,
    /// Only this live writer (repeatable).
    #[arg(long = "writer", value_name = "NAME")]
    writers: Vec<String>,
    /// Only this producer (repeatable): a corpus producer such as tiledb-2.30, or live:WRITER.
    #[arg(long = "producer", value_name = "NAME")]
    producers: Vec<String>,
    /// Frozen corpus only: no live replays.
    #[arg(long)]
    no_live: bool,
    /// The corpus folder (holding MANIFEST.json); default: the shipped corpus.
    #[arg(long, value_name = "DIR")]
    corpus: Option<PathBuf>,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write the matrix as a self-contained web page to FILE: filters by status,
    /// level, tag, producer and implementation; each failing check with its diff, reason
    /// and repro.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Another implementation: an executable speaking the adapter contract, with its leading
    /// arguments separated by spaces, optionally named: [NAME=]COMMAND (repeatable), e.g.
    /// "tiledb-2.13=/work/.venv-tiledb-0.19/bin/python conformance/adapters/tiledb_py_adapter.py".
    #[arg(long = "adapter", value_name = "COMMAND")]
    adapters: Vec<String>,
    /// The reader whose live reads are the expected results.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_ORACLE)]
    oracle: String,
    /// Seconds an adapter may take over one request before it is stopped.
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    timeout: u64,
    /// Only cases up to this level apply: required, recommended or optional.
    #[arg(long, value_name = "LEVEL")]
    level: Option<String>,
    /// No progress lines on standard error.
    #[arg(long, short)]
    quiet: bool,
}

/// `[NAME=]COMMAND`: the chosen name, if any, and the command split at spaces.
fn split_adapter_arg(text: &str) -> (Option<String>, Vec<String>) {
    let (name, command) = match text.split_once('=') {
        Some((name, rest))
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) =>
        {
            (Some(name.to_string()), rest)
        }
        _ => (None, text),
    };
    let command = command.split_whitespace().map(str::to_string).collect();
    (name, command)
}

pub fn workspace_root() -> PathBuf {
    // The conformance kit's parent: the workspace root in a checkout (where
    // `.venv-tiledb` and `target/` are); the kit itself is found by its own path.
    tiledb_conformance::kit_dir().join("..")
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    let args = *args.options;
    let root = workspace_root();
    let conformance_dir = tiledb_conformance::kit_dir().to_path_buf();
    let timeout = Duration::from_secs(args.timeout.max(1));
    let max_level = match &args.level {
        Some(text) => Some(Level::parse(text).ok_or_else(|| {
            format!("--level {text:?}: expected required, recommended or optional")
        })?),
        None => None,
    };

    let mut notes = Vec::new();
    let mut adapters: Vec<Box<dyn Adapter>> = vec![Box::new(RuntimeAdapter::with_timeout(timeout))];
    match tiledb_py_command(&root, &conformance_dir) {
        Some(command) => match ProcessAdapter::start(command, timeout) {
            Ok(a) => adapters.push(Box::new(a)),
            Err(e) => notes.push(format!("the tiledb-py adapter did not start: {e}")),
        },
        None => notes.push(
            "TileDB is not in this run: no .venv-tiledb/bin/python in the workspace and no \
             $TILEDB_PY; run scripts/test once (it installs tiledb-py 0.36.1 there) to add the \
             tiledb-py reader and the live producers (README.md, Conformance)"
                .to_string(),
        ),
    }
    for command_text in &args.adapters {
        let (chosen_name, command) = split_adapter_arg(command_text);
        let adapter = ProcessAdapter::start(command, timeout)
            .map_err(|e| format!("--adapter {command_text:?}: {e}"))?;
        let mut adapter =
            adapter.with_command_line(vec!["--adapter".to_string(), command_text.clone()]);
        let given = adapter.info().name.clone();
        let base = chosen_name.unwrap_or_else(|| given.clone());
        let mut name = base.clone();
        let mut n = 2;
        while adapters.iter().any(|a| a.info().name == name) {
            name = format!("{base}-{n}");
            n += 1;
        }
        if name != base {
            notes.push(format!(
                "{command_text:?} is named {base:?}, taken already; {name:?} in this run"
            ));
        }
        if name != given {
            adapter.rename(name);
        }
        adapters.push(Box::new(adapter));
    }

    let mut repro_args = Vec::new();
    let corpus_dir = match &args.corpus {
        Some(dir) => {
            repro_args.push("--corpus".to_string());
            repro_args.push(dir.display().to_string());
            dir.clone()
        }
        None => conformance_dir.join("corpus"),
    };
    if args.oracle != DEFAULT_ORACLE {
        repro_args.push("--oracle".to_string());
        repro_args.push(args.oracle.clone());
    }
    // TileDB's legacy test arrays join the matrix when they are beside the
    // workspace (or under $TILEDB_SHARED_DIR).
    let legacy_arrays = tiledb_conformance::corpus::legacy_arrays_dir(&root);
    if legacy_arrays.is_none() {
        notes.push(
            "TileDB's legacy test arrays are not in this run: no tiledb-test-arrays/ in \
             ../shared beside the workspace or in $TILEDB_SHARED_DIR (the legacy.* producers, \
             arrays of TileDB 1.x and 2.x releases, are missing from the matrix)"
                .to_string(),
        );
    }
    let config = RunConfig {
        conformance_dir,
        corpus_dir,
        legacy_arrays,
        selection: Selection {
            cases: args.cases,
            tags: args.tags,
            reads: args.reads,
            readers: args.readers,
            writers: args.writers,
            producers: args.producers,
            live: !args.no_live,
            max_level,
        },
        oracle: args.oracle,
        repro_prefix: "cargo run --release --bin tdb -- conformance".to_string(),
        repro_args,
    };

    let quiet = args.quiet;
    let mut show = |p: Progress| {
        if quiet {
            return;
        }
        let mut err = std::io::stderr();
        let _ = match p {
            Progress::Producer { name, cases } => {
                writeln!(err, "conformance: {name}: {cases} cases")
            }
            Progress::Case {
                producer, index, ..
            } if index > 0 && index % 50 == 0 => {
                writeln!(err, "conformance: {producer}: {index} cases done")
            }
            Progress::Case { .. } => Ok(()),
        };
    };
    let mut report = tiledb_conformance::run(&config, &mut adapters, &mut show)?;
    drop(adapters);
    notes.append(&mut report.notes);
    report.notes = notes;

    std::io::stdout()
        .write_all(report.render_text().as_bytes())
        .map_err(output_error)?;
    if let Some(path) = &args.html {
        std::fs::write(path, report.render_html())
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    if let Some(path) = &args.json {
        std::fs::write(path, report.to_json())
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(if report.succeeded() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::split_adapter_arg;

    #[test]
    fn adapter_arguments_may_name_the_implementation() {
        let (name, command) = split_adapter_arg("tiledb-2.13=/venv/bin/python adapter.py");
        assert_eq!(name.as_deref(), Some("tiledb-2.13"));
        assert_eq!(command, ["/venv/bin/python", "adapter.py"]);
        let (name, command) = split_adapter_arg("python3 a.py --opt=x");
        assert_eq!(name, None);
        assert_eq!(command, ["python3", "a.py", "--opt=x"]);
    }
}
