//! TileDB's legacy test arrays (`../shared/tiledb-test-arrays`, when
//! present): clean or refused as unsupported, and their fragments checked
//! file by file where the check reads their footers.

use std::path::PathBuf;

use tiledb_runtime::check::{check_array, CheckOptions};
use tiledb_runtime::ErrorClass;

use crate::{copy_dir, shared_dir, show};

#[test]
fn legacy_test_arrays_check_clean_or_unsupported() {
    let legacy = shared_dir().join("tiledb-test-arrays");
    let Ok(entries) = std::fs::read_dir(&legacy) else {
        println!(
            "skipped: TileDB's legacy test arrays are not at {}",
            legacy.display()
        );
        return;
    };
    let mut arrays: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    arrays.sort();
    let mut checked = 0;
    for array in arrays.iter().filter(|a| a.is_dir()) {
        let report = check_array(array, &CheckOptions::default());
        let name = array.file_name().unwrap_or_default().to_string_lossy();
        if name.contains("vUINT32_MAX") {
            // A format version no release can read: TileDB refuses it too.
            assert!(
                report
                    .findings
                    .iter()
                    .any(|f| f.class == ErrorClass::Unsupported),
                "{name}: expected an unsupported finding, got:\n{}",
                show(&report)
            );
        } else {
            assert!(report.is_clean(), "{name}:\n{}", show(&report));
        }
        checked += 1;
    }
    println!("{checked} legacy arrays checked");
    assert!(checked > 0, "no legacy arrays under {}", legacy.display());
}

/// Legacy hierarchies (fragment folders in the array's root, format 1-11)
/// are checked file by file where the check reads their footers (format 10
/// on), and named in a note otherwise: a byte appended to a data file of
/// TileDB's format-10 test array, which the full read alone never notices,
/// is reported against the footer's recorded file size.
#[test]
fn legacy_fragments_are_checked_file_by_file() {
    let source = shared_dir().join("tiledb-test-arrays/zero_var_chunks_v10");
    if !source.is_dir() {
        println!("skipped: {} is not there", source.display());
        return;
    }
    let clean = check_array(&source, &CheckOptions::default());
    assert!(clean.is_clean(), "{}", show(&clean));
    assert!(
        clean.files_checked > 1 && clean.tiles_checked > 0,
        "the format-10 fragment's files were not checked:\n{}",
        show(&clean)
    );
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("array");
    copy_dir(&source, &copy);
    let fragment = std::fs::read_dir(&copy)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir() && p.join("__fragment_metadata.tdb").is_file())
        .expect("a fragment folder in the root");
    let data = fragment.join("a0.tdb");
    let mut bytes = std::fs::read(&data).unwrap();
    bytes.push(0x58);
    std::fs::write(&data, &bytes).unwrap();
    let report = check_array(&copy, &CheckOptions::default());
    let name = fragment.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.file == format!("{name}/a0.tdb") && f.field == "file size"),
        "the appended byte was not reported:\n{}",
        show(&report)
    );

    // Format 1-9 fragments are named in a note, never passed over silently.
    let old = shared_dir().join("tiledb-test-arrays/dense_array_v1_3_0");
    if old.is_dir() {
        let report = check_array(&old, &CheckOptions::default());
        assert!(report.is_clean(), "{}", show(&report));
        assert!(
            report
                .notes
                .iter()
                .any(|n| n.message.contains("format 2 fragment")),
            "no note on the format 2 fragment:\n{}",
            show(&report)
        );
    }
}
