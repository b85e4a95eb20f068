//! Extending an enumeration by schema evolution: the replay of
//! `sparse.enumeration.extended` must leave the original enumeration file in
//! place and point the evolved schema at a second file holding every value,
//! and the reader must refuse an enumeration file that records another path
//! than its own name (TileDB 2.30 refuses it: "Path name mismatch").

use std::path::{Path, PathBuf};

use tiledb_runtime::array::{Array, OpenOptions};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Replays the case into a fresh folder; returns it and the array's
/// enumeration files, smallest first.
fn replay_extended() -> (tempfile::TempDir, Vec<PathBuf>) {
    let case = workspace().join("conformance/cases/sparse.enumeration.extended.toml");
    let text = std::fs::read_to_string(&case).unwrap();
    let out = tempfile::tempdir().unwrap();
    tiledb_conformance::recipe::replay_case(&text, out.path()).unwrap();
    let dir = out.path().join("array/__schema/__enumerations");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort_by_key(|p| std::fs::metadata(p).unwrap().len());
    (out, files)
}

#[test]
fn an_extension_writes_a_second_file_with_every_value() {
    let (out, files) = replay_extended();
    assert_eq!(files.len(), 2, "the original file and the extended one");
    let array = Array::open_path(out.path().join("array"), OpenOptions::default()).unwrap();
    let fruits = array.schema().enumeration("fruits").unwrap();
    // The recipe's values ["apple", "pear"] followed by the extension's
    // ["plum", "fig"].
    let expected: Vec<&[u8]> = vec![b"apple", b"pear", b"plum", b"fig"];
    assert_eq!(fruits.values, expected);
}

#[test]
fn a_file_recording_another_path_is_refused() {
    let (out, files) = replay_extended();
    // The evolved schema names the larger (extended) file; give it the bytes
    // of the original one, which record the original path.
    std::fs::copy(&files[0], &files[1]).unwrap();
    let Err(err) = Array::open_path(out.path().join("array"), OpenOptions::default()) else {
        panic!("an enumeration file recording another path was accepted")
    };
    assert_eq!(err.class().name(), "corrupt", "{err}");
    assert!(err.to_string().contains("Enumeration.path"), "{err}");
}
