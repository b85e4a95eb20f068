//! `tdb explain` over TileDB's legacy test arrays (`../shared/tiledb-test-arrays`,
//! skipped with a message when absent): every file is explained with 100%
//! of its bytes attributed — TileDB 1.3's data files too, and the files of
//! format version u32::MAX (an experimental build's), which the loader
//! refuses as TileDB does but which are explained in the layout spec/
//! gives them (spec/format.toml, facts `experimental_format_version` and
//! `experimental_format_layout`).

use std::path::{Path, PathBuf};

use tiledb_runtime::explain::{coverage, explain_file, Span};

/// The array whose files carry the experimental format version.
const EXPERIMENTAL: &str = "experimental_array_vUINT32_MAX";

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
    let (mut explained, mut experimental, mut legacy13_data) = (0, 0, 0);
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
        let result =
            explain_file(&path, &bytes, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            result.incomplete.is_none(),
            "{}: {:?}",
            path.display(),
            result.incomplete
        );
        assert!(
            whole(&result.root, bytes.len() as u64),
            "{}: not explained whole",
            path.display()
        );
        if result.layout == "Legacy13DataTile" {
            legacy13_data += 1;
        }
        if array == EXPERIMENTAL && bytes.len() > 100 {
            check_experimental(&path, &result.root);
            experimental += 1;
        }
        explained += 1;
    }
    println!(
        "{explained} legacy files explained whole, {experimental} of the experimental version"
    );
    // The schema and the fragment metadata (the data tile has no version).
    assert_eq!(experimental, 2);
    assert_eq!(
        legacy13_data, 1,
        "dense_array_v1_3_0/…/a.tdb, TileDB 1.3's data file"
    );
    assert!(explained >= 10);
}

/// Every version field a walker found in `span`, with its value as shown.
fn versions<'a>(span: &'a Span, out: &mut Vec<&'a Span>) {
    if span.name.ends_with(".version") {
        out.push(span);
    }
    for child in &span.children {
        versions(child, out);
    }
}

fn field<'a>(span: &'a Span, name: &str) -> Option<&'a Span> {
    if span.name == name {
        return Some(span);
    }
    span.children.iter().find_map(|c| field(c, name))
}

/// A file of the experimental version: its stored version shown as it is,
/// with the layout it was explained in; the fragment footer has version
/// 14's `has_timestamps` and not version 15's `has_delete_meta` (whose byte
/// there is the first file size: reading it as a flag would fail).
fn check_experimental(path: &Path, root: &Span) {
    let mut found = Vec::new();
    versions(root, &mut found);
    assert!(!found.is_empty(), "{}", path.display());
    for version in found {
        assert_eq!(
            version.value.as_deref(),
            Some("4294967295 (experimental build: laid out as version 14)"),
            "{}: {}",
            path.display(),
            version.name
        );
    }
    if path.ends_with("__fragment_metadata.tdb") {
        let has_timestamps = field(root, "FragmentFooter.has_timestamps").unwrap();
        assert!(has_timestamps.present);
        let has_delete_meta = field(root, "FragmentFooter.has_delete_meta").unwrap();
        assert!(!has_delete_meta.present);
        let sizes = field(root, "FragmentFooter.file_sizes").unwrap();
        assert_eq!(
            sizes.children[0].value.as_deref(),
            Some("36"),
            "a0.tdb's size"
        );
    }
}
