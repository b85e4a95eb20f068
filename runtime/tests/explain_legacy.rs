//! `tdb explain` over TileDB's legacy test arrays (`../shared/tiledb-test-arrays`,
//! skipped with a message when absent): every file is explained with 100%
//! of its bytes attributed, except the ones listed in `NOT_YET` with why —
//! those must not be claimed whole (the test fails once they are, so the
//! list stays true).

use std::path::{Path, PathBuf};

use tiledb_runtime::explain::{coverage, explain_file, Span};

/// Files not explained yet, by array and file name, with the reason.
const NOT_YET: &[(&str, &str, &str)] = &[
    ("dense_array_v1_3_0", "a.tdb", "a format 1–2 data file: read as chunk framing it gives a chunk count of 8589934593, so its tiles are laid out otherwise (not looked into yet)"),
    ("experimental_array_vUINT32_MAX", "__fragment_metadata.tdb", "format version 4294967295: refused, as the loader refuses it"),
    ("experimental_array_vUINT32_MAX", "__1657562300107_1657562300107_634feb310ce6426796198decd5dbddbf", "format version 4294967295: refused, as the loader refuses it"),
];

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

fn whole(root: &Span, size: u64) -> bool {
    if coverage(root, "file", size).covered != size {
        return false;
    }
    let mut payloads = Vec::new();
    collect_payloads(root, &mut payloads);
    payloads
        .iter()
        .all(|p| coverage(p, "payload", p.size).covered == p.size)
}

fn collect_payloads<'a>(span: &'a Span, out: &mut Vec<&'a Span>) {
    if span.name == "payload" && span.space == "payload" {
        out.push(span);
    }
    for child in &span.children {
        collect_payloads(child, out);
    }
}

#[test]
fn legacy_arrays_are_explained_whole_but_the_listed_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/tiledb-test-arrays");
    if !root.is_dir() {
        println!("skipped: {} is absent", root.display());
        return;
    }
    let mut all = Vec::new();
    files(&root, &mut all);
    all.sort();
    let (mut explained, mut not_yet) = (0, 0);
    for path in all {
        let bytes = std::fs::read(&path).unwrap();
        let array = path
            .strip_prefix(&root)
            .unwrap()
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .to_string();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let is_whole =
            explain_file(&path, &bytes, None).is_ok_and(|e| whole(&e.root, bytes.len() as u64));
        match NOT_YET.iter().find(|(a, n, _)| *a == array && *n == name) {
            Some((_, _, why)) => {
                assert!(
                    !is_whole,
                    "{}: now explained whole; drop it from NOT_YET",
                    path.display()
                );
                println!("not yet: {} ({why})", path.display());
                not_yet += 1;
            }
            None => {
                assert!(is_whole, "{}: not explained whole", path.display());
                explained += 1;
            }
        }
    }
    println!("{explained} legacy files explained whole, {not_yet} not yet");
    assert_eq!(not_yet, NOT_YET.len());
    assert!(explained >= 10);
}
