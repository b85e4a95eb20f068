//! Damaged arrays never make the reader panic: every file of a few corpus
//! arrays (dense, sparse, var-sized, deletes, consolidated) is truncated at
//! several points and has bits flipped, and the array is opened and read in
//! full each time; the outcome must be a result or an error, and an error
//! must name its class.

mod common;

use std::path::{Path, PathBuf};

use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::read::{ReadQuery, ResultOrder};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn read_everything(root: &Path) -> Result<usize, tiledb_runtime::Error> {
    let array = Array::open_path(root, OpenOptions::default())?;
    let mut cells = 0;
    for layout in [ResultOrder::RowMajor, ResultOrder::Global] {
        cells += array
            .read(&ReadQuery {
                layout,
                ..ReadQuery::default()
            })?
            .cell_count();
    }
    array.metadata()?;
    Ok(cells)
}

#[test]
fn damaged_files_give_errors_not_panics() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/corpus/tiledb-2.30");
    let mut outcomes = (0usize, 0usize);
    for case in [
        "sparse.delete.condition",
        "dense.attr.var_nullable",
        "sparse.consolidate.fragment_meta",
        "sparse.consolidate.commits",
        "sparse.filter.rle.strings",
        "dense.fragments.time_travel",
        "array.metadata.basic",
    ] {
        let source = corpus.join(case).join("array");
        let mut list = Vec::new();
        files(&source, &mut list);
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("array");
        common::copy_dir(&source, &root);
        for file in &list {
            let relative = file.strip_prefix(&source).unwrap();
            let target = root.join(relative);
            let original = std::fs::read(file).unwrap();
            let mut variants: Vec<Vec<u8>> = Vec::new();
            for keep in [
                0,
                1,
                7,
                8,
                33,
                original.len() / 2,
                original.len().saturating_sub(9),
                original.len().saturating_sub(1),
            ] {
                if keep < original.len() {
                    variants.push(original[..keep].to_vec());
                }
            }
            let mut seed = 0x9e3779b97f4a7c15u64 ^ original.len() as u64;
            for _ in 0..12 {
                if original.is_empty() {
                    break;
                }
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let mut flipped = original.clone();
                let at = (seed % original.len() as u64) as usize;
                flipped[at] ^= 1 << ((seed >> 32) % 8);
                variants.push(flipped);
            }
            for variant in variants {
                std::fs::write(&target, &variant).unwrap();
                match std::panic::catch_unwind(|| read_everything(&root)) {
                    Ok(Ok(_)) => outcomes.0 += 1,
                    Ok(Err(e)) => {
                        let _ = e.class();
                        outcomes.1 += 1;
                    }
                    Err(_) => panic!(
                        "reading {case} with {} damaged panicked",
                        relative.display()
                    ),
                }
            }
            std::fs::write(&target, &original).unwrap();
        }
    }
    println!(
        "{} damaged reads succeeded, {} failed with an error",
        outcomes.0, outcomes.1
    );
    assert!(outcomes.1 > 0);
}
