//! The directory hierarchy of TileDB's own legacy test arrays and groups
//! (formats 1–11, and one of an unsupported version), read from
//! `../shared/` beside the workspace (or `$TILEDB_SHARED_DIR`, for a
//! checkout elsewhere); skipped with a message when absent.

use std::path::PathBuf;

use tiledb_runtime::directory::group::GroupDirectory;
use tiledb_runtime::directory::timestamped_name::NameForm;
use tiledb_runtime::directory::{object_type, ArrayDirectory, ObjectType};
use tiledb_runtime::directory::{CommitSource, TimeTravelRule};
use tiledb_runtime::storage::{LocalStorage, Storage};

fn shared(sub: &str) -> Option<PathBuf> {
    let base = match std::env::var_os("TILEDB_SHARED_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    };
    let path = base.join(sub);
    if path.is_dir() {
        Some(path)
    } else {
        println!("skipped: {} is absent", path.display());
        None
    }
}

const NOW: u64 = u64::MAX;

#[test]
fn dense_array_v1_3_0() {
    let Some(root) = shared("tiledb-test-arrays/dense_array_v1_3_0") else {
        return;
    };
    let storage = LocalStorage::new(&root);
    assert_eq!(object_type(&storage).unwrap(), ObjectType::Array);
    let dir = ArrayDirectory::open(&storage, 0, NOW).unwrap();
    assert_eq!(dir.schemas().len(), 1);
    assert_eq!(dir.schemas()[0].path.as_str(), "__array_schema.tdb");
    assert!(dir.schemas()[0].name.is_none());
    assert_eq!(
        dir.latest_schema_for_read().path.as_str(),
        "__array_schema.tdb"
    );

    let fragments = dir.fragments(TimeTravelRule::FullContainment);
    assert_eq!(fragments.len(), 1);
    let f = &fragments[0];
    assert_eq!(
        f.path.as_str(),
        "__b4cae15e1a294904a1296510c34f19ec_1538747712566"
    );
    assert_eq!(f.name.form(), NameForm::UuidTimestamp);
    assert_eq!(f.name.timestamp_range(), (1538747712566, 1538747712566));
    assert_eq!(f.format_version(), 2);
    // No .ok below v5: the fragment metadata file commits it.
    assert_eq!(f.commit, CommitSource::FragmentMetadata);
    // `__lock.tdb` matches no rule and is ignored.
    assert!(dir.uncommitted().is_empty());

    // One millisecond before its write, the fragment is not visible.
    let before = ArrayDirectory::open(&storage, 0, 1538747712565).unwrap();
    assert!(before.fragments(TimeTravelRule::FullContainment).is_empty());
    assert!(before.fragments(TimeTravelRule::SparseRead).is_empty());
}

#[test]
fn non_split_coords_v1_4_0() {
    let Some(root) = shared("tiledb-test-arrays/non_split_coords_v1_4_0") else {
        return;
    };
    let storage = LocalStorage::new(&root);
    let dir = ArrayDirectory::open(&storage, 0, NOW).unwrap();
    let fragments = dir.fragments(TimeTravelRule::SparseRead);
    assert_eq!(fragments.len(), 1);
    assert_eq!(
        fragments[0].path.as_str(),
        "__5dc2cc9cce204a189f825fd4919d0c55_1541540586869"
    );
    assert_eq!(fragments[0].commit, CommitSource::FragmentMetadata);
    // The probe for __fragment_metadata.tdb is the only per-fragment access,
    // and it reads nothing.
    let io = storage.counters();
    assert_eq!(io.files_opened, 0);
    assert_eq!(io.probes, 1);
}

#[test]
fn zero_var_chunks_v10() {
    let Some(root) = shared("tiledb-test-arrays/zero_var_chunks_v10") else {
        return;
    };
    let storage = LocalStorage::new(&root);
    let dir = ArrayDirectory::open(&storage, 0, NOW).unwrap();
    assert_eq!(dir.schemas().len(), 1);
    assert_eq!(
        dir.latest_schema_for_read().path.as_str(),
        "__schema/__1693562063520_1693562063520_87f6551825c94139b3000f0d6b7c0ac0"
    );
    let fragments = dir.fragments(TimeTravelRule::FullContainment);
    assert_eq!(fragments.len(), 1);
    assert_eq!(
        fragments[0].path.as_str(),
        "__1693562063524_1693562063524_0fcdefaa40d34ff2a4b09153472fbdc2_10"
    );
    assert_eq!(fragments[0].format_version(), 10);
    assert_eq!(fragments[0].commit, CommitSource::OkFile);

    // Opened before its schema existed, the first schema is still used.
    let early = ArrayDirectory::open(&storage, 0, 5).unwrap();
    assert_eq!(early.latest_schema_for_read(), dir.latest_schema_for_read());
    assert!(early.fragments(TimeTravelRule::FullContainment).is_empty());
}

#[test]
fn sparse_array_v11_has_a_schema_and_no_fragment() {
    let Some(root) = shared("tiledb-test-arrays/sparse_array_v11") else {
        return;
    };
    let storage = LocalStorage::new(&root);
    let dir = ArrayDirectory::open(&storage, 0, NOW).unwrap();
    assert_eq!(dir.schemas().len(), 1);
    assert!(dir.committed_fragments().is_empty());
    assert!(dir.fragments(TimeTravelRule::SparseRead).is_empty());
    assert_eq!(dir.max_named_format_version(), None);
}

#[test]
fn experimental_array_shows_its_version() {
    let Some(root) = shared("tiledb-test-arrays/experimental_array_vUINT32_MAX") else {
        return;
    };
    let storage = LocalStorage::new(&root);
    let dir = ArrayDirectory::open(&storage, 0, NOW).unwrap();
    // Its only commit marker is `__fragments/<name>.ok`, which no version of
    // the layout recognizes (v12+ commits are `__commits/*.wrt`), so TileDB
    // 2.30 sees no fragment either; the folder is reported as uncommitted.
    assert!(dir.committed_fragments().is_empty());
    let name = "__1657562300109_1657562300109_8dc3a927a28e445080d5dfd288825e1d_4294967295";
    let uncommitted: Vec<&str> = dir.uncommitted().iter().map(|u| u.path.as_str()).collect();
    assert_eq!(
        uncommitted,
        [
            format!("__fragments/{name}"),
            format!("__fragments/{name}.ok")
        ]
    );
    assert!(dir
        .uncommitted()
        .iter()
        .all(|u| u.name.format_version() == u32::MAX));
    assert_eq!(dir.max_named_format_version(), Some(4294967295));
}

#[test]
fn group_v1() {
    let Some(root) = shared("tiledb-test-groups/group_v1") else {
        return;
    };
    let storage = LocalStorage::new(&root);
    assert_eq!(object_type(&storage).unwrap(), ObjectType::Group);
    let group = GroupDirectory::open(&storage, 0, NOW).unwrap();
    assert!(group.has_group_file());
    let details: Vec<&str> = group
        .details_files()
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(
        details,
        ["__group/__1708362383727_1708362383727_a464f3a3a7e740c8856a476ee4c66ce1"]
    );
    // No version suffix: group details v1, only the latest file counts.
    assert_eq!(group.details_files()[0].name.form(), NameForm::Range);
    assert_eq!(group.details_to_load().len(), 1);
    assert!(group.metadata().files.is_empty());

    // Before its only details file, the group has no details.
    let early = GroupDirectory::open(&storage, 0, 1708362383726).unwrap();
    assert!(early.details_to_load().is_empty());

    let sub = LocalStorage::new(root.join("subgroup1"));
    assert_eq!(object_type(&sub).unwrap(), ObjectType::Group);
    let subgroup = GroupDirectory::open(&sub, 0, NOW).unwrap();
    assert!(subgroup.has_group_file());
    assert!(subgroup.details_files().is_empty());

    // A group is not an array.
    assert!(ArrayDirectory::open(&storage, 0, NOW).is_err());
}
