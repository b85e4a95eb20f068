//! Tests of paths and local storage.

use super::*;
use std::fs;

#[test]
fn relpath_accepts_plain_relative_paths() {
    let p = RelPath::parse("__commits/__1_1_0123456789abcdef0123456789abcdef_22.wrt").unwrap();
    assert_eq!(
        p.file_name(),
        Some("__1_1_0123456789abcdef0123456789abcdef_22.wrt")
    );
    assert_eq!(p.parent().as_str(), "__commits");
    assert_eq!(p.parent().parent(), RelPath::root());
    assert_eq!(
        RelPath::root()
            .join("a")
            .unwrap()
            .join("b")
            .unwrap()
            .as_str(),
        "a/b"
    );
}

#[test]
fn relpath_refuses_escapes() {
    for text in [
        "",
        "/etc/passwd",
        "../../etc/passwd",
        "__fragments/../../x",
        "a//b",
        "a/./b",
        "a/",
        "file:///etc/passwd",
        "C:\\Windows",
        "a\\..\\b",
        "a\0b",
        "..",
    ] {
        let err = RelPath::parse(text).expect_err(text);
        assert_eq!(err.class(), crate::ErrorClass::Corrupt, "{text}");
    }
    assert!(RelPath::root().join("..").is_err());
    assert!(RelPath::root().join("a/b").is_err());
}

#[test]
fn writes_replace_files_whole_through_a_root_temporary() {
    for sync in [true, false] {
        let tmp = tempfile::tempdir().unwrap();
        let storage = LocalStorage::new(tmp.path()).with_sync(sync);
        let file = RelPath::parse("__meta/__1_1_x").unwrap();
        storage.create_dir(&file.parent()).unwrap();
        storage.write(&file, b"first").unwrap();
        storage.write(&file, b"second, longer").unwrap();
        assert_eq!(storage.read(&file).unwrap(), b"second, longer");
        // Nothing is left beside the file, nor in the root.
        let names = |dir: &RelPath| -> Vec<String> {
            storage
                .list(dir)
                .unwrap()
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .collect()
        };
        assert_eq!(names(&file.parent()), ["__1_1_x"]);
        assert_eq!(names(&RelPath::root()), ["__meta"]);
        // A write that cannot be renamed into place (its folder is missing) leaves
        // neither the file nor its temporary behind.
        let orphan = RelPath::parse("__missing/__2_2_y").unwrap();
        assert!(storage.write(&orphan, b"lost").is_err());
        assert_eq!(names(&RelPath::root()), ["__meta"]);
    }
}

#[test]
fn temporary_names_record_when_they_were_started() {
    assert_eq!(
        temp_file_started_ms(".a0.tdb.1795611130141_3f4e0eb345921e33d560d5a5d26a95a1.tmp"),
        Some(1795611130141)
    );
    assert_eq!(
        temp_file_started_ms(".__1_1_ab_22.wrt.17_0123456789abcdef.tmp"),
        Some(17)
    );
    for other in [
        "__1_1_ab.tmp",
        ".x.tmp",
        ".x.12_.tmp",
        ".x.ab_cd.tmp",
        "x.12_ab.tmp",
    ] {
        assert_eq!(temp_file_started_ms(other), None, "{other}");
    }
    assert!(is_temp_file_name(".x.tmp") && !is_temp_file_name("x.tdb"));
}

#[test]
fn local_storage_reads_writes_and_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let storage = LocalStorage::new(tmp.path());
    let dir = RelPath::parse("__commits").unwrap();
    let file = dir.join("x.wrt").unwrap();
    assert_eq!(storage.list(&dir).unwrap(), None);
    assert_eq!(storage.kind(&file).unwrap(), None);
    storage.create_dir(&dir).unwrap();
    storage.write(&file, b"0123456789").unwrap();
    assert_eq!(storage.kind(&file).unwrap(), Some(EntryKind::File));
    assert_eq!(storage.kind(&dir).unwrap(), Some(EntryKind::Dir));
    assert_eq!(storage.size(&file).unwrap(), 10);
    assert_eq!(storage.read(&file).unwrap(), b"0123456789");
    assert_eq!(storage.read_range(&file, 3, 4).unwrap(), b"3456");
    assert_eq!(storage.read_range(&file, 10, 0).unwrap(), b"");
    for (offset, len) in [(7, 4), (11, 0), (u64::MAX, 2), (0, u64::MAX)] {
        let err = storage.read_range(&file, offset, len).unwrap_err();
        assert_eq!(err.class(), crate::ErrorClass::Corrupt, "{offset}+{len}");
    }
    let listed = storage.list(&dir).unwrap().unwrap();
    assert_eq!(
        listed,
        [DirEntry {
            name: "x.wrt".into(),
            kind: EntryKind::File,
            size: Some(10)
        }]
    );
    let renamed = dir.join("y.wrt").unwrap();
    storage.rename(&file, &renamed).unwrap();
    storage.remove_file(&renamed).unwrap();
    storage.remove_dir(&dir).unwrap();
    assert!(storage.remove_dir(&RelPath::root()).is_err());
    let io = storage.counters();
    assert_eq!(io.listings, 2);
    // read, read_range ×2 that succeed, 4 that fail after opening.
    assert_eq!(io.files_opened, 7);
    assert_eq!(io.bytes_read, 14);
    assert_eq!(io.files_written, 1);
    assert_eq!(io.bytes_written, 10);
    assert_eq!(io.changes, 4);
}

/// Folders are confirmed once and remembered; that must never let a
/// link through: not a linked file in a confirmed folder, and not a
/// folder replaced by a link after it was confirmed.
#[cfg(unix)]
#[test]
fn confirmed_folders_never_let_a_link_escape() {
    use std::os::unix::fs::symlink;
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret"), b"secret").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let storage = LocalStorage::new(tmp.path());
    let dir = RelPath::parse("__fragments").unwrap();
    storage.create_dir(&dir).unwrap();
    storage.write(&dir.join("ok").unwrap(), b"ok").unwrap();
    // Confirms the folder.
    assert_eq!(storage.read(&dir.join("ok").unwrap()).unwrap(), b"ok");
    assert_eq!(storage.list(&dir).unwrap().unwrap().len(), 1);

    // A link inside the confirmed folder, leading out: refused by every call.
    symlink(
        outside.path().join("secret"),
        tmp.path().join("__fragments/out"),
    )
    .unwrap();
    let out = dir.join("out").unwrap();
    for err in [
        storage.read(&out).unwrap_err(),
        storage.read_range(&out, 0, 1).unwrap_err(),
        storage.size(&out).unwrap_err(),
        storage.kind(&out).unwrap_err(),
    ] {
        assert!(err.to_string().contains("outside"), "{err}");
    }
    // A link leading to a file inside the root is followed.
    symlink(
        tmp.path().join("__fragments/ok"),
        tmp.path().join("__fragments/in"),
    )
    .unwrap();
    assert_eq!(storage.read(&dir.join("in").unwrap()).unwrap(), b"ok");
    assert_eq!(storage.size(&dir.join("in").unwrap()).unwrap(), 2);

    // A folder inside the confirmed one is confirmed by its listing or
    // by its own lstat, but only when it is a real folder: a linked
    // folder leading out is refused, listed first or not.
    fs::create_dir(outside.path().join("frag")).unwrap();
    fs::write(outside.path().join("frag/meta"), b"outside").unwrap();
    symlink(
        outside.path().join("frag"),
        tmp.path().join("__fragments/linked"),
    )
    .unwrap();
    storage.create_dir(&dir.join("real").unwrap()).unwrap();
    storage
        .write(&RelPath::parse("__fragments/real/meta").unwrap(), b"in")
        .unwrap();
    let linked_file = RelPath::parse("__fragments/linked/meta").unwrap();
    let err = storage.read(&linked_file).unwrap_err();
    assert!(err.to_string().contains("outside"), "{err}");
    assert_eq!(storage.list(&dir).unwrap().unwrap().len(), 5);
    let err = storage.read(&linked_file).unwrap_err();
    assert!(err.to_string().contains("outside"), "{err}");
    assert!(storage.list(&dir.join("linked").unwrap()).is_err());
    assert_eq!(
        storage
            .read(&RelPath::parse("__fragments/real/meta").unwrap())
            .unwrap(),
        b"in"
    );
    storage.remove_dir(&dir.join("real").unwrap()).unwrap();
    fs::remove_file(tmp.path().join("__fragments/linked")).unwrap();

    // The confirmed folder removed and replaced by a link leading out.
    storage.remove_dir(&dir).unwrap();
    fs::create_dir(outside.path().join("fragments")).unwrap();
    fs::write(outside.path().join("fragments/ok"), b"outside").unwrap();
    symlink(
        outside.path().join("fragments"),
        tmp.path().join("__fragments"),
    )
    .unwrap();
    let err = storage.read(&dir.join("ok").unwrap()).unwrap_err();
    assert!(err.to_string().contains("outside"), "{err}");
    assert!(storage.list(&dir).is_err());
}

/// Temporary files go to the root because spec/directory.toml says TileDB
/// does not list it whole, for arrays and groups alike; the folders it does
/// list whole are the ones `tdb check` and vacuum treat as such.
#[test]
fn temporary_files_stay_out_of_the_folders_tiledb_lists_whole() {
    use crate::format::generated::{listed_whole_folder, FOLDERS, LISTED_WHOLE_FOLDERS};
    assert!(listed_whole_folder("", false).is_none() && listed_whole_folder("", true).is_none());
    for folder in FOLDERS.iter().filter(|f| f.listed_whole) {
        assert!(LISTED_WHOLE_FOLDERS.contains(&folder.path), "{folder:?}");
        assert!(!folder.loaded_as.is_empty() && !folder.refusal.is_empty());
    }
    let tmp = tempfile::tempdir().unwrap();
    let storage = LocalStorage::new(tmp.path());
    for dir in LISTED_WHOLE_FOLDERS {
        storage.create_dir(&RelPath::parse(dir).unwrap()).unwrap();
        let file = RelPath::parse(dir).unwrap().join("x.tdb").unwrap();
        storage.write(&file, b"data").unwrap();
        let names: Vec<String> = std::fs::read_dir(tmp.path().join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["x.tdb"], "{dir}");
    }
}
