//! tiledb-codegen: reads `spec/` (the TileDB format as TOML), validates it and
//! emits the binrw structures of tiledb-runtime plus Markdown tables.
//!
//! Three stages, as in binrw_derive: `raw` (the TOML as serde reads it),
//! [`validate`] (a typed, checked [`model`]; every error names the file and
//! key), then `emit` and `emit::tables`.

pub(crate) mod emit;
pub mod error;
pub mod export;
pub mod expr;
pub mod model;
pub(crate) mod naming;
pub(crate) mod raw;
pub mod unused;
pub mod validate;

use std::path::{Path, PathBuf};

use emit::format::{emit_format, emit_mod};
use emit::tables;
pub use error::{SpecError, SpecErrorKind};

/// Where the generated Rust goes, relative to the workspace root.
pub const GENERATED_DIR: &str = "runtime/src/format/generated";
/// Where the Markdown tables go, relative to the workspace root.
pub const TABLES_DIR: &str = "spec/tables";

/// Every file the codegen produces, with paths relative to the workspace root.
#[derive(Debug, Clone, Default)]
pub struct GeneratedFiles {
    /// (path, text) pairs, sorted by path.
    pub files: Vec<(PathBuf, String)>,
}

impl GeneratedFiles {
    /// The text produced for `relative`, if the codegen produces that file.
    pub fn get(&self, relative: impl AsRef<Path>) -> Option<&str> {
        self.files
            .iter()
            .find(|(path, _)| path == relative.as_ref())
            .map(|(_, text)| text.as_str())
    }
}

/// Reads and validates `spec_dir` into the model.
pub fn load_spec(spec_dir: &Path) -> Result<model::Spec, SpecError> {
    validate::load(spec_dir).map(|(spec, _)| spec)
}

/// Reads and validates `spec_dir`, then renders every output in memory.
pub fn generate(spec_dir: &Path) -> Result<GeneratedFiles, SpecError> {
    let (spec, table) = validate::load(spec_dir)?;
    let mut emitter = emit::Emitter::new(&spec, &table);
    let mut out = GeneratedFiles::default();
    let generated = PathBuf::from(GENERATED_DIR);
    let tables_dir = PathBuf::from(TABLES_DIR);
    for file in &spec.files {
        out.files.push((
            generated.join(format!("{}.rs", file.module)),
            emitter.emit_file(file),
        ));
        out.files.push((
            tables_dir.join(format!("{}.md", file.stem)),
            tables::render_file(file, &table),
        ));
    }
    out.files.push((
        generated.join(format!("{}.rs", spec.format_module)),
        emit_format(&spec),
    ));
    out.files
        .push((tables_dir.join("format.md"), tables::render_format(&spec)));
    out.files.push((generated.join("mod.rs"), emit_mod(&spec)));
    out.files.push((
        PathBuf::from(emit::explain::EXPLAIN_PATH),
        emit::explain::emit_walkers(&spec, &table),
    ));
    out.files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// One difference between the checked-in outputs and what the spec produces.
#[derive(Debug, Clone)]
pub struct Drift {
    /// The file that differs, relative to the workspace root.
    pub path: PathBuf,
    /// A unified diff, or a note that the file is missing or stale.
    pub diff: String,
}

/// Compares generated outputs with the files under `root`, including stale
/// files in the output directories that the spec no longer produces.
pub fn check(root: &Path, generated: &GeneratedFiles) -> Vec<Drift> {
    let mut drifts = Vec::new();
    for (path, text) in &generated.files {
        let on_disk = std::fs::read_to_string(root.join(path)).unwrap_or_default();
        if &on_disk != text {
            let diff = similar::TextDiff::from_lines(on_disk.as_str(), text.as_str())
                .unified_diff()
                .context_radius(3)
                .header(
                    &format!("a/{} (checked in)", path.display()),
                    &format!("b/{} (from spec/)", path.display()),
                )
                .to_string();
            drifts.push(Drift {
                path: path.clone(),
                diff,
            });
        }
    }
    for stale in stale_files(root, generated) {
        drifts.push(Drift {
            diff: format!("{} is no longer generated from spec/\n", stale.display()),
            path: stale,
        });
    }
    drifts
}

/// Files in the output directories that the spec does not produce.
pub fn stale_files(root: &Path, generated: &GeneratedFiles) -> Vec<PathBuf> {
    let mut stale = Vec::new();
    for (dir, ext) in [(GENERATED_DIR, "rs"), (TABLES_DIR, "md")] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let relative = PathBuf::from(dir).join(entry.file_name());
            if relative.extension().is_some_and(|e| e == ext) && generated.get(&relative).is_none()
            {
                stale.push(relative);
            }
        }
    }
    stale.sort();
    stale
}

/// Writes every output under `root` and removes stale ones; returns the paths changed.
pub fn write(root: &Path, generated: &GeneratedFiles) -> std::io::Result<Vec<PathBuf>> {
    let mut changed = Vec::new();
    for (path, text) in &generated.files {
        let full = root.join(path);
        if std::fs::read_to_string(&full).ok().as_deref() != Some(text.as_str()) {
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&full, text)?;
            changed.push(path.clone());
        }
    }
    for stale in stale_files(root, generated) {
        std::fs::remove_file(root.join(&stale))?;
        changed.push(stale);
    }
    Ok(changed)
}

/// What `--emit` can write outside Rust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmitKind {
    /// `tiledb-format.json` and its JSON Schema.
    Json,
    /// One Kaitai Struct `.ksy` per file kind, and `UNSUPPORTED.md`.
    Ksy,
}

impl EmitKind {
    /// The kind `--emit` names (`json`, `ksy`); `None` for anything else.
    pub fn parse(name: &str) -> Option<EmitKind> {
        match name {
            "json" => Some(EmitKind::Json),
            "ksy" => Some(EmitKind::Ksy),
            _ => None,
        }
    }
}

/// Reads and validates `spec_dir`, then renders the `kind` export in memory
/// as (file name, text) pairs.
pub fn export(spec_dir: &Path, kind: EmitKind) -> Result<Vec<(String, String)>, SpecError> {
    let (spec, table) = validate::load(spec_dir)?;
    Ok(match kind {
        EmitKind::Json => export::json::render(&spec),
        EmitKind::Ksy => export::ksy::render(&spec, &table),
    })
}
