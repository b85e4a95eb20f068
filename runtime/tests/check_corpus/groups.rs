//! Groups checked as groups: their own files, then every member inside.

use tiledb_runtime::check::{check_array, CheckOptions};

use crate::{copy_dir, corpus, files_of, shared_dir, show};

/// Groups are checked as groups: their own files, then every member inside
/// the folder in turn, findings named by their path from the group.
#[test]
fn groups_check_their_files_and_every_member_inside() {
    for producer in ["tiledb-2.13", "tiledb-2.30"] {
        let group = corpus(producer).join("group.members").join("group");
        let report = check_array(&group, &CheckOptions::default());
        assert!(report.is_clean(), "{}: {}", group.display(), show(&report));
        // The member array `first` was read to its last cell.
        assert!(
            report.cells_read > 0,
            "{}: members not read",
            group.display()
        );

        let scratch = tempfile::tempdir().expect("a scratch folder");
        // A bit flipped in a group details file.
        let copy = scratch.path().join("details");
        copy_dir(&group, &copy);
        let mut files = Vec::new();
        files_of(&copy, &copy, &mut files);
        let details = files
            .iter()
            .find(|f| f.starts_with("__group/"))
            .expect("a details file");
        let path = copy.join(details);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x40;
        std::fs::write(&path, bytes).unwrap();
        let report = check_array(&copy, &CheckOptions::default());
        assert!(
            report.findings.iter().any(|f| &f.file == details),
            "{producer}: the flipped details file is not reported:\n{}",
            show(&report)
        );

        // A member array's data file cut short.
        let copy = scratch.path().join("member");
        copy_dir(&group, &copy);
        let mut files = Vec::new();
        files_of(&copy, &copy, &mut files);
        let data = files
            .iter()
            .find(|f| f.starts_with("first/") && f.ends_with("/a0.tdb"))
            .expect("the member's a0.tdb");
        let path = copy.join(data);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let report = check_array(&copy, &CheckOptions::default());
        assert!(
            report.findings.iter().any(|f| f.file.starts_with("first/")),
            "{producer}: the member's truncated file is not reported:\n{}",
            show(&report)
        );
        // A member folder removed.
        std::fs::remove_dir_all(copy.join("second")).unwrap();
        let report = check_array(&copy, &CheckOptions::default());
        assert!(
            report.findings.iter().any(|f| f.field.contains("second")),
            "{producer}: the missing member is not reported:\n{}",
            show(&report)
        );
    }
    // TileDB's own test group (format 1 group details), when present.
    let group = shared_dir().join("tiledb-test-groups/group_v1");
    if group.is_dir() {
        let report = check_array(&group, &CheckOptions::default());
        assert!(report.is_clean(), "{}: {}", group.display(), show(&report));
        assert!(report.files_checked > 0);
    } else {
        println!("skipped group_v1: ../shared/tiledb-test-groups is absent");
    }
}
