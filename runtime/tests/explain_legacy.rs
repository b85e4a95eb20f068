//! `tdb explain` over TileDB's legacy test arrays (`../shared/tiledb-test-arrays`,
//! skipped with a message when absent): every file is explained with 100%
//! of its bytes attributed — TileDB 1.3's data files too —, except the two
//! files of a format version the loader refuses (`REFUSED`), which are
//! explained as far as their bytes allow: the bytes left unexplained are
//! exactly the ones listed, with the reason given.

use std::path::{Path, PathBuf};

use tiledb_runtime::explain::{coverage, explain_file, Span};

/// Files of format version u32::MAX (an experimental build's): the loader
/// refuses them, so their payloads (whose layout is unknown) and the
/// footer after its first fields stay unexplained. By array and file name:
/// the file bytes left unexplained, and whether every payload is left
/// unexplained (the generic tiles' envelopes are explained).
/// `(array, file name, file bytes left unexplained as [start, end) ranges)`.
type Refused = (&'static str, &'static str, &'static [(u64, u64)]);

const REFUSED: &[Refused] = &[
    // The footer after its version and schema name, up to the footer length.
    (
        "experimental_array_vUINT32_MAX",
        "__fragment_metadata.tdb",
        &[(2678, 2985)],
    ),
    // The envelope is explained whole; its 149-byte payload is not.
    (
        "experimental_array_vUINT32_MAX",
        "__1657562300107_1657562300107_634feb310ce6426796198decd5dbddbf",
        &[],
    ),
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
fn legacy_arrays_are_explained_whole_but_the_refused_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/tiledb-test-arrays");
    if !root.is_dir() {
        println!("skipped: {} is absent", root.display());
        return;
    }
    let mut all = Vec::new();
    files(&root, &mut all);
    all.sort();
    let (mut explained, mut refused, mut legacy13_data) = (0, 0, 0);
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
        let result =
            explain_file(&path, &bytes, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        match REFUSED.iter().find(|(a, n, _)| *a == array && *n == name) {
            Some((_, _, left)) => {
                let reason = result.incomplete.as_deref().unwrap_or_default();
                assert!(
                    reason.contains("4294967295") && reason.contains("newer than any"),
                    "{}: {reason:?}",
                    path.display()
                );
                let file = coverage(&result.root, "file", bytes.len() as u64);
                assert_eq!(file.unexplained, *left, "{}", path.display());
                let mut payloads = Vec::new();
                collect_payloads(&result.root, &mut payloads);
                assert!(!payloads.is_empty());
                for p in payloads {
                    assert_eq!(coverage(p, "payload", p.size).covered, 0);
                }
                println!(
                    "refused: {} ({reason}); file bytes left: {left:?}",
                    path.display()
                );
                refused += 1;
            }
            None => {
                assert!(result.incomplete.is_none(), "{}", path.display());
                assert!(
                    whole(&result.root, bytes.len() as u64),
                    "{}: not explained whole",
                    path.display()
                );
                if result.layout == "Legacy13DataTile" {
                    legacy13_data += 1;
                }
                explained += 1;
            }
        }
    }
    println!("{explained} legacy files explained whole, {refused} explained up to a refusal");
    assert_eq!(refused, REFUSED.len());
    assert_eq!(
        legacy13_data, 1,
        "dense_array_v1_3_0/…/a.tdb, TileDB 1.3's data file"
    );
    assert!(explained >= 10);
}
