//! `tdb explain` on damaged input: it explains or refuses with an error,
//! never panics and never loops.

mod common;

use std::path::{Path, PathBuf};

use tiledb_runtime::explain::explain_file;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Damaged input never panics: every truncation and every single-byte
/// change of a schema, a fragment metadata file and a data file is
/// explained or refused with an error.
#[test]
fn damaged_files_are_refused_without_panics() {
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/corpus/tiledb-2.30/sparse.read.multi_range/array");
    let mut all = Vec::new();
    files(&case, &mut all);
    let picks: Vec<&PathBuf> = all
        .iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            p.parent().unwrap().ends_with("__schema")
                || name == "__fragment_metadata.tdb"
                || name == "a0.tdb"
        })
        .collect();
    assert_eq!(picks.len(), 3, "{picks:?}");
    let scratch = tempfile::tempdir().unwrap();
    for original in picks {
        // Explained in a copy of the array, so the fragment's schema is found.
        let copy = scratch.path().join(original.strip_prefix(&case).unwrap());
        let bytes = std::fs::read(original).unwrap();
        common::copy_dir(&case, scratch.path());
        for len in 0..bytes.len() {
            let _ = explain_file(&copy, &bytes[..len], None);
        }
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0xa5;
            let _ = explain_file(&copy, &damaged, None);
        }
    }
}
