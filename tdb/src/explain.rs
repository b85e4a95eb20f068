//! `tdb explain`: a file, or every file of an array or group folder,
//! explained field by field from spec/ — an indented tree for a person,
//! JSON for a program, or with `--coverage` the share of each file's bytes
//! that some field claims.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tiledb_runtime::explain::{coverage, explain_file, Coverage, Explained, FileKind, Span};

use crate::key::KeyArgs;
use crate::{output_error, Failure};

#[derive(clap::Args)]
pub struct Args {
    /// A file of an array or group, or the folder itself (every file in
    /// it); a URL (`s3://bucket/array`, …) is copied to a temporary folder
    /// first.
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

/// Every file under `path` (or `path` itself) that `tdb explain` knows, and the ones it skips.
pub fn files_of(path: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut all = Vec::new();
    collect_files(path, &mut all);
    all.sort();
    all.into_iter().partition(|p| FileKind::of(p).is_some())
}

fn collect_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        if let Ok(entries) = std::fs::read_dir(path) {
            for entry in entries.flatten() {
                collect_files(&entry.path(), out);
            }
        }
    } else {
        out.push(path.to_path_buf());
    }
}

/// Explains one file.
pub fn explain_path(path: &Path, key: Option<&[u8; 32]>) -> Result<Explained, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    explain_file(path, &bytes, key).map_err(|e| format!("{}: {e}", path.display()))
}

/// A copy on disk of what an object-store URL names, for the explainers
/// (which look at a data file's neighbours: its fragment's metadata and the
/// schema): a folder's every file, or one file, at its key's path below a
/// temporary folder. `tdb explain` reads every byte of what it explains, so
/// the copy costs no more requests than explaining in place would.
struct Mirror {
    folder: tempfile::TempDir,
    /// The copy of what the URL names.
    local: PathBuf,
    url: String,
}

impl Mirror {
    fn fetch(url: &Path) -> Result<Mirror, Failure> {
        use tiledb_runtime::storage::RelPath;
        let text = url.to_string_lossy().trim_end_matches('/').to_owned();
        let folder = tempfile::tempdir().map_err(|e| format!("a temporary folder: {e}"))?;
        // The key's path below the temporary folder keeps the names the
        // explainers go by (`__fragments/<name>/a0.tdb`).
        let below = text
            .split_once("://")
            .map_or(text.as_str(), |(_, rest)| rest);
        let local = folder.path().join(below);
        let storage = crate::location::storage(url)?;
        let at = |e: tiledb_runtime::Error| format!("{text}: {e}");
        let copy = |storage: &dyn tiledb_runtime::storage::Storage,
                    file: &RelPath,
                    to: &Path|
         -> Result<(), Failure> {
            let bytes = storage.read(file).map_err(at)?;
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            std::fs::write(to, bytes).map_err(|e| format!("{}: {e}", to.display()))?;
            Ok(())
        };
        if storage.list(&RelPath::root()).map_err(at)?.is_some() {
            let mut folders = vec![RelPath::root()];
            while let Some(dir) = folders.pop() {
                for entry in storage.list(&dir).map_err(at)?.unwrap_or_default() {
                    let path = dir.join(&entry.name).map_err(at)?;
                    if entry.is_dir() {
                        folders.push(path);
                    } else {
                        copy(storage.as_ref(), &path, &local.join(path.as_str()))?;
                    }
                }
            }
        } else {
            // Not a folder: a file, read through the storage of its folder.
            let (parent, name) = text
                .rsplit_once('/')
                .ok_or_else(|| format!("{text}: no such file or folder"))?;
            let parent = crate::location::storage(Path::new(parent))?;
            let name = RelPath::parse(name).map_err(at)?;
            copy(parent.as_ref(), &name, &local)?;
        }
        Ok(Mirror {
            folder,
            local,
            url: text,
        })
    }

    /// The URL of a path of the copy.
    fn url_of(&self, copy: &Path) -> PathBuf {
        match copy.strip_prefix(&self.local) {
            Ok(rest) if rest.as_os_str().is_empty() => PathBuf::from(&self.url),
            Ok(rest) => PathBuf::from(format!("{}/{}", self.url, rest.display())),
            Err(_) => copy
                .strip_prefix(self.folder.path())
                .unwrap_or(copy)
                .to_path_buf(),
        }
    }
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    let key = args.key.resolve()?;
    let mirror = if crate::location::is_remote(&args.path) {
        Some(Mirror::fetch(&args.path)?)
    } else {
        None
    };
    let path = mirror.as_ref().map_or(&args.path, |m| &m.local);
    let (known, skipped) = if path.is_dir() {
        files_of(path)
    } else {
        (vec![path.clone()], vec![])
    };
    let shown = |p: PathBuf| match &mirror {
        Some(m) => m.url_of(&p),
        None => p,
    };
    let skipped: Vec<PathBuf> = skipped.into_iter().map(shown).collect();
    let results: Vec<FileResult> = known
        .into_iter()
        .map(|path| {
            let outcome = explain_path(&path, key.as_ref())
                .map(|mut e| {
                    if let Some(m) = &mirror {
                        // The tree's root is named by the file: its URL.
                        if Path::new(&e.root.name) == path {
                            e.root.name = m.url_of(&path).display().to_string();
                        }
                    }
                    let c = coverages(&e);
                    (e, c)
                })
                .map_err(|e| match &mirror {
                    Some(m) => e.replace(
                        &path.display().to_string(),
                        &m.url_of(&path).display().to_string(),
                    ),
                    None => e,
                });
            FileResult {
                path: shown(path),
                outcome,
            }
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
