//! Consolidation and vacuum leave the array in the shape TileDB leaves it:
//! for each consolidation case, after replaying it with our writer, every
//! folder of the array holds the same kinds of files as TileDB's array of
//! the corpus: the same count per extension, with the same timestamp spans
//! (labels differ; schema files carry the creation clock and are skipped),
//! and each fragment folder with the same files.
//! The spans of the fragments left show which fragments each consolidation
//! step merged: the cases with a consolidation `config` or
//! `timestamp_range` check that we choose TileDB's runs.
//! The reads themselves are checked by `write_roundtrip.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const CASES: &[&str] = &[
    "array.metadata.consolidate",
    "dense.consolidate.amplification",
    "dense.consolidate.amplification.config",
    "dense.consolidate.amplification.min_frags",
    "dense.consolidate.amplification.prefix",
    "dense.consolidate.fragments.vacuum",
    "dense.consolidate.timestamp_range",
    "sparse.consolidate.commits",
    "sparse.consolidate.commits.vacuum",
    "sparse.consolidate.fragment_meta",
    "sparse.consolidate.fragments",
    "sparse.consolidate.fragments.vacuum",
    "sparse.consolidate.size_ratio",
    "sparse.consolidate.steps",
    "sparse.consolidate.steps.delete_meta",
    "sparse.consolidate.timestamp_range",
    "sparse.delete.consolidated",
    "sparse.delete.consolidated.two_deletes",
    "sparse.delete.consolidated.twice",
    "sparse.delete.older_than_consolidated",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `folder → sorted list of "t1_t2.ext"` for the timestamped entries.
fn shape(array: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for folder in ["__fragments", "__commits", "__fragment_meta", "__meta"] {
        let mut items: Vec<String> = std::fs::read_dir(array.join(folder))
            .map(|r| r.flatten().collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let (stem, ext) = match name.split_once('.') {
                    Some((s, x)) => (s.to_string(), x.to_string()),
                    None => (name.clone(), String::new()),
                };
                let parts: Vec<&str> = stem.trim_start_matches("__").split('_').collect();
                let span = format!(
                    "{}_{}.{ext}",
                    parts.first().unwrap_or(&""),
                    parts.get(1).unwrap_or(&"")
                );
                // A fragment folder: its files too (which fields it stores,
                // e.g. whether a consolidated fragment has `t`, `dt`, `dci`).
                if e.path().is_dir() {
                    let mut files: Vec<String> = std::fs::read_dir(e.path())
                        .unwrap()
                        .flatten()
                        .map(|f| f.file_name().to_string_lossy().into_owned())
                        .collect();
                    files.sort();
                    format!("{span}[{}]", files.join(" "))
                } else {
                    span
                }
            })
            .collect();
        items.sort();
        out.insert(folder.to_string(), items);
    }
    out
}

#[test]
fn consolidation_and_vacuum_leave_tiledbs_layout() {
    let ws = workspace();
    let mut failures = Vec::new();
    for id in CASES {
        let text =
            std::fs::read_to_string(ws.join(format!("conformance/cases/{id}.toml"))).unwrap();
        let out = tempfile::tempdir().unwrap();
        tiledb_runtime::recipe::replay_case(&text, out.path()).unwrap();
        let ours = shape(&out.path().join("array"));
        let theirs = shape(&ws.join(format!("conformance/corpus/tiledb-2.30/{id}/array")));
        println!("{id}: {ours:?}");
        if ours != theirs {
            failures.push(format!("{id}:\n  ours   {ours:?}\n  TileDB {theirs:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
