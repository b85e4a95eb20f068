//! `tdb explain`: a file, or every file of an array or group folder,
//! explained field by field from spec/ — an indented tree for a person,
//! JSON for a program, or with `--coverage` the share of each file's bytes
//! that some field claims.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tiledb_runtime::explain::{coverage, explain_in, Coverage, Explained, FileKind, Span};
use tiledb_runtime::storage::{EntryKind, RelPath, Storage};

use crate::key::KeyArgs;
use crate::{output_error, Failure};

#[derive(clap::Args)]
pub struct Args {
    /// A file of an array or group, or the folder itself (every file in
    /// it); a path or a URL (`s3://bucket/array`, …), read in place.
    path: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Print only, per file, the share of bytes attributed to fields
    /// (and the ranges none claims); exit 1 when a file is below 100%.
    #[arg(long)]
    coverage: bool,
    #[command(flatten)]
    key: KeyArgs,
}

/// One file's outcome.
struct FileResult {
    path: PathBuf,
    outcome: Result<(Explained, Vec<(String, Coverage)>), String>,
}

/// The coverage of every byte space of an explained file: the file, then
/// each generic tile's payload.
pub fn coverages(explained: &Explained) -> Vec<(String, Coverage)> {
    let mut out = vec![(
        "file".to_string(),
        coverage(&explained.root, "file", explained.file_size),
    )];
    collect_payloads(&explained.root, &mut out);
    out
}

fn collect_payloads(span: &Span, out: &mut Vec<(String, Coverage)>) {
    for child in &span.children {
        if child.space == "payload" && child.name == "payload" {
            let name = format!("payload of the tile at byte {}", span.offset);
            out.push((name, coverage(child, "payload", child.size)));
        } else {
            collect_payloads(child, out);
        }
    }
}

/// What the argument names, reached through a storage rooted up to three
/// folders above it: the explainers read a file's neighbours (its
/// fragment's metadata, its array's schema) through the same storage, so a
/// local folder and an object store are explained alike, in place.
struct Target {
    storage: Box<dyn Storage>,
    /// What the argument names, below the storage's root.
    at: RelPath,
    /// The argument as given, which names the files below it.
    shown: String,
}

impl Target {
    fn open(path: &Path) -> Result<Target, Failure> {
        let shown = path.to_string_lossy().trim_end_matches('/').to_owned();
        let full = if crate::location::is_remote(path) {
            shown.clone()
        } else {
            let full = std::fs::canonicalize(path).map_err(|e| format!("{shown}: {e}"))?;
            full.to_string_lossy().into_owned()
        };
        // The first part (a URL's bucket, or the empty name before a local
        // path's first `/`) always stays in the root.
        let (scheme, rest) = match full.split_once("://") {
            Some((scheme, rest)) => (Some(scheme), rest.trim_end_matches('/')),
            None => (None, full.as_str()),
        };
        let parts: Vec<&str> = rest.split('/').collect();
        let below = parts.len().saturating_sub(1).min(3);
        let (root, at) = parts.split_at(parts.len() - below);
        let root = match scheme {
            Some(scheme) => format!("{scheme}://{}", root.join("/")),
            None if root.len() == 1 => "/".to_owned(),
            None => root.join("/"),
        };
        let at = at
            .iter()
            .try_fold(RelPath::root(), |dir, part| dir.join(part));
        Ok(Target {
            storage: crate::location::storage(Path::new(&root))?,
            at: at.map_err(|e| format!("{shown}: {e}"))?,
            shown,
        })
    }

    /// How the file `file` (below `at`) is named: by the argument as given.
    fn shown(&self, file: &RelPath) -> PathBuf {
        let rest = file.as_str()[self.at.as_str().len()..].trim_start_matches('/');
        if rest.is_empty() {
            PathBuf::from(&self.shown)
        } else {
            PathBuf::from(format!("{}/{rest}", self.shown))
        }
    }

    /// Every file the argument names (itself, or every file below it),
    /// sorted: the ones `tdb explain` knows, and the ones it skips.
    fn files(&self) -> Result<(Vec<RelPath>, Vec<RelPath>), Failure> {
        let at = |e: tiledb_runtime::Error| format!("{}: {e}", self.shown);
        let mut all = Vec::new();
        match self.storage.kind(&self.at).map_err(at)? {
            None => return Err(format!("{}: no such file or folder", self.shown).into()),
            Some(EntryKind::File) => all.push(self.at.clone()),
            Some(EntryKind::Dir) => {
                let mut folders = vec![self.at.clone()];
                while let Some(dir) = folders.pop() {
                    for entry in self.storage.list(&dir).map_err(at)?.unwrap_or_default() {
                        let path = dir.join(&entry.name).map_err(at)?;
                        if entry.is_dir() {
                            folders.push(path);
                        } else {
                            all.push(path);
                        }
                    }
                }
            }
        }
        all.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        Ok(all
            .into_iter()
            .partition(|f| FileKind::in_storage(self.storage.as_ref(), f).is_some()))
    }

    /// Explains one file, named as the argument names it.
    fn explain(&self, file: &RelPath, key: Option<&[u8; 32]>) -> Result<Explained, String> {
        let shown = self.shown(file).display().to_string();
        let described = self.storage.describe(file).display().to_string();
        let named = |e: String| e.replace(&described, &shown);
        let bytes = self
            .storage
            .read(file)
            .map_err(|e| format!("{shown}: {}", named(e.to_string())))?;
        let mut explained = explain_in(self.storage.as_ref(), file, &bytes, key)
            .map_err(|e| format!("{shown}: {}", named(e.to_string())))?;
        explained.root.name = shown;
        Ok(explained)
    }
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    let key = args.key.resolve()?;
    let target = Target::open(&args.path)?;
    let (known, skipped) = target.files()?;
    let skipped: Vec<PathBuf> = skipped.iter().map(|f| target.shown(f)).collect();
    let results: Vec<FileResult> = known
        .iter()
        .map(|file| FileResult {
            path: target.shown(file),
            outcome: target.explain(file, key.as_ref()).map(|e| {
                let c = coverages(&e);
                (e, c)
            }),
        })
        .collect();
    let complete = results.iter().all(|r| {
        r.outcome.as_ref().is_ok_and(|(e, c)| {
            e.incomplete.is_none() && c.iter().all(|(_, c)| c.covered == c.size)
        })
    });
    let mut out = std::io::stdout().lock();
    if args.json {
        print_json(&mut out, &results, &skipped, args.coverage)?;
    } else {
        for result in &results {
            print_text(&mut out, result, args.coverage).map_err(output_error)?;
        }
        for path in &skipped {
            writeln!(
                out,
                "{}: not explained yet (a kind of file tdb explain does not know)",
                path.display()
            )
            .map_err(output_error)?;
        }
    }
    Ok(if complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_json(
    out: &mut impl Write,
    results: &[FileResult],
    skipped: &[PathBuf],
    coverage_only: bool,
) -> Result<(), Failure> {
    let files: Vec<serde_json::Value> = results
        .iter()
        .map(|r| match &r.outcome {
            Ok((explained, coverages)) => {
                let coverage: Vec<serde_json::Value> = coverages
                    .iter()
                    .map(|(space, c)| {
                        serde_json::json!({
                            "space": space, "covered": c.covered, "size": c.size,
                            "percent": c.percent(), "unexplained": c.unexplained,
                        })
                    })
                    .collect();
                let mut value = serde_json::json!({
                    "path": r.path, "kind": explained.kind, "layout": explained.layout,
                    "size": explained.file_size, "coverage": coverage,
                });
                if let Some(reason) = &explained.incomplete {
                    value["incomplete"] = serde_json::json!(reason);
                }
                if !coverage_only {
                    value["tree"] = serde_json::to_value(&explained.root).unwrap_or_default();
                }
                value
            }
            Err(e) => serde_json::json!({ "path": r.path, "error": e }),
        })
        .collect();
    let value = serde_json::json!({ "files": files, "not_explained": skipped });
    serde_json::to_writer_pretty(&mut *out, &value)
        .map_err(|e| Failure::Message(format!("writing JSON: {e}")))?;
    writeln!(out).map_err(output_error)
}

fn print_text(
    out: &mut impl Write,
    result: &FileResult,
    coverage_only: bool,
) -> std::io::Result<()> {
    let (explained, coverages) = match &result.outcome {
        Ok(ok) => ok,
        Err(e) => return writeln!(out, "error: {e}"),
    };
    if coverage_only {
        let (file, payloads) = coverages
            .split_first()
            .expect("the file's coverage comes first");
        let file = &file.1;
        let covered: u64 = payloads.iter().map(|(_, c)| c.covered).sum();
        let size: u64 = payloads.iter().map(|(_, c)| c.size).sum();
        let whole = file.covered == file.size && covered == size && explained.incomplete.is_none();
        writeln!(
            out,
            "{:.2}% {} ({}: file {} of {} bytes; {} unfiltered payload(s) {} of {} bytes){}",
            if whole {
                100.0
            } else {
                file.percent().min(
                    Coverage {
                        covered,
                        size,
                        unexplained: vec![],
                    }
                    .percent(),
                )
            },
            result.path.display(),
            explained.layout,
            file.covered,
            file.size,
            payloads.len(),
            covered,
            size,
            if whole { "" } else { " INCOMPLETE" },
        )?;
        for (space, c) in coverages {
            for (start, end) in &c.unexplained {
                writeln!(out, "    unexplained in the {space}: bytes {start}..{end}")?;
            }
        }
        if let Some(reason) = &explained.incomplete {
            writeln!(out, "    explained up to where it stops: {reason}")?;
        }
        return Ok(());
    }
    write_span(out, &explained.root, 0)?;
    if let Some(reason) = &explained.incomplete {
        writeln!(out, "explained up to where it stops: {reason}")?;
    }
    for (space, c) in coverages {
        writeln!(
            out,
            "coverage of the {space}: {:.2}% ({} of {} bytes)",
            c.percent(),
            c.covered,
            c.size
        )?;
        for (start, end) in &c.unexplained {
            writeln!(out, "    unexplained: bytes {start}..{end}")?;
        }
    }
    Ok(())
}

fn write_span(out: &mut impl Write, span: &Span, depth: usize) -> std::io::Result<()> {
    let indent = "  ".repeat(depth);
    let mut line = format!("{indent}{}", span.name);
    if !span.spec_type.is_empty() && span.spec_type != span.name {
        line.push_str(&format!(": {}", span.spec_type));
    }
    if span.present {
        line.push_str(&format!(
            " @{}{} +{}",
            space_prefix(span.space),
            span.offset,
            span.size
        ));
        match span.file {
            Some(origin) if origin.exact => {
                line.push_str(&format!(" (file @{} +{})", origin.start, span.size));
            }
            Some(origin) => line.push_str(&format!(
                " (from file bytes {}..{}, filtered)",
                origin.start, origin.end
            )),
            None => {}
        }
    } else {
        line.push_str(" absent");
    }
    if let Some(value) = &span.value {
        line.push_str(&format!(" = {value}"));
    }
    if let Some(name) = &span.enum_name {
        line.push_str(&format!(" ({name})"));
    }
    if !span.hex.is_empty() {
        line.push_str(&format!(" [{}]", span.hex));
    }
    if let Some(gate) = &span.gate {
        let held = if span.present { "held" } else { "did not hold" };
        line.push_str(&format!(" {{gate {gate}: {held}}}"));
    }
    if !span.spec_file.is_empty() {
        line.push_str(&format!(" <{} § {}>", span.spec_file, span.source));
    }
    if let Some(erratum) = &span.erratum {
        line.push_str(&format!(" erratum: {erratum}"));
    }
    writeln!(out, "{line}")?;
    for child in &span.children {
        write_span(out, child, depth + 1)?;
    }
    Ok(())
}

fn space_prefix(space: &str) -> &'static str {
    if space == "payload" {
        "payload "
    } else {
        ""
    }
}
