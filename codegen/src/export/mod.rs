//! The spec outside Rust: the validated model as JSON with a JSON Schema
//! ([`json`]), and Kaitai Struct descriptions of the file kinds ([`ksy`]).
//! `cargo run -p tiledb-codegen -- --emit json DIR` / `--emit ksy DIR`.

pub mod json;
pub mod ksy;

use std::path::{Path, PathBuf};

/// Writes `files` (name, text) into `dir`, creating it; returns the paths written.
pub fn write_all(dir: &Path, files: &[(String, String)]) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        written.push(path);
    }
    Ok(written)
}
