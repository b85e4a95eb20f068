//! Our directory computation against what TileDB 2.30 reports for arrays it
//! wrote: `runtime/tests/data/hierarchy/`, made by
//! `conformance/scripts/hierarchy_arrays.py`, whose `oracle.json` records
//! TileDB's fragment lists per open range.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;
use tiledb_runtime::directory::ArrayDirectory;
use tiledb_runtime::directory::{CommitSource, ConditionKind, TimeTravelRule};
use tiledb_runtime::storage::{LocalStorage, RelPath, Storage};

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/hierarchy")
}

fn oracle() -> Value {
    let text = std::fs::read_to_string(corpus().join("oracle.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

fn names(fragments: &[tiledb_runtime::directory::Fragment]) -> Vec<String> {
    fragments
        .iter()
        .map(|f| f.name.as_str().to_owned())
        .collect()
}

#[test]
fn fragment_lists_match_tiledb_for_every_open_range() {
    let oracle = oracle();
    let arrays = oracle["arrays"].as_object().unwrap();
    assert!(arrays.len() >= 8);
    let mut checked = 0;
    for (array, expected) in arrays {
        let storage = LocalStorage::new(corpus().join(array));
        let rule = TimeTravelRule::for_read(expected["sparse"].as_bool().unwrap());
        for open in expected["opens"].as_array().unwrap() {
            let (start, end) = (u64_of(&open["range"][0]), u64_of(&open["range"][1]));
            let dir = ArrayDirectory::open(&storage, start, end).unwrap();
            let ours = names(&dir.fragments(rule));
            // TileDB's list came out of a plan and is sorted by name; ours is
            // in read order (t1, then name), which must also hold.
            let mut sorted = ours.clone();
            sorted.sort();
            let theirs: Vec<String> = strings(&open["fragments"]).into_iter().collect();
            assert_eq!(sorted, theirs, "{array} at [{start}, {end}]");
            let t1s: Vec<u64> = dir
                .fragments(rule)
                .iter()
                .map(|f| f.name.timestamp_start())
                .collect();
            assert!(
                t1s.windows(2).all(|w| w[0] <= w[1]),
                "{array}: not in t1 order"
            );
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} open ranges checked");
}

#[test]
fn fragment_info_matches_tiledb() {
    // FragmentInfo loads [0, now] with the reader's rule, then keeps the
    // fragments wholly inside the range; its to_vacuum list uses the
    // full-containment rule.
    for (array, expected) in oracle()["arrays"].as_object().unwrap() {
        let storage = LocalStorage::new(corpus().join(array));
        let dir = ArrayDirectory::open(&storage, 0, u64::MAX).unwrap();
        let rule = TimeTravelRule::for_read(expected["sparse"].as_bool().unwrap());
        let ours: BTreeSet<String> = dir
            .fragments(rule)
            .iter()
            .map(|f| f.path.as_str().to_owned())
            .collect();
        let theirs: BTreeSet<String> = expected["fragment_info"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(ours, theirs, "{array}");
        for f in expected["fragment_info"].as_array().unwrap() {
            let path = f["path"].as_str().unwrap();
            let ours = dir
                .fragments(rule)
                .into_iter()
                .find(|g| g.path.as_str() == path)
                .unwrap();
            assert_eq!(
                ours.name.timestamp_range(),
                (
                    u64_of(&f["timestamp_range"][0]),
                    u64_of(&f["timestamp_range"][1])
                ),
                "{array}/{path}"
            );
            assert_eq!(u64::from(ours.format_version()), u64_of(&f["version"]));
        }
        let vacuumed: BTreeSet<String> = dir
            .vacuumed_fragments(TimeTravelRule::FullContainment)
            .iter()
            .map(|f| f.path.as_str().to_owned())
            .collect();
        assert_eq!(vacuumed, strings(&expected["to_vacuum"]), "{array}");

        let schemas: BTreeSet<String> = dir
            .schemas()
            .iter()
            .map(|s| s.path.file_name().unwrap().to_owned())
            .collect();
        assert_eq!(schemas, strings(&expected["schema_files"]), "{array}");
        // Every schema a fragment names is one we list.
        for f in expected["fragment_info"].as_array().unwrap() {
            assert!(schemas.contains(f["schema"].as_str().unwrap()), "{array}");
        }
    }
}

#[test]
fn schema_selection_matches_tiledb() {
    let oracle = oracle();
    let expected = &oracle["arrays"]["schema_evolution"];
    // The fragment written before the evolution names the one-attribute
    // schema, the one after it the two-attribute schema.
    let info = expected["fragment_info"].as_array().unwrap();
    let schema_of = |t: u64| {
        info.iter()
            .find(|f| u64_of(&f["timestamp_range"][0]) == t)
            .map(|f| f["schema"].as_str().unwrap().to_owned())
            .unwrap()
    };
    let (one_attr, two_attrs) = (schema_of(1), schema_of(3));
    assert_ne!(one_attr, two_attrs);
    let storage = LocalStorage::new(corpus().join("schema_evolution"));
    for open in expected["opens"].as_array().unwrap() {
        let (start, end) = (u64_of(&open["range"][0]), u64_of(&open["range"][1]));
        let dir = ArrayDirectory::open(&storage, start, end).unwrap();
        let picked = dir
            .latest_schema_for_read()
            .path
            .file_name()
            .unwrap()
            .to_owned();
        let want = if u64_of(&open["nattr"]) == 1 {
            &one_attr
        } else {
            &two_attrs
        };
        assert_eq!(&picked, want, "at [{start}, {end}]");
    }
}

#[test]
fn array_metadata_files_match_tiledb() {
    // Each write at time t set k = t, and consolidation kept the newest k,
    // so TileDB's value of k at a range is the end timestamp of the last
    // metadata file that range sees (none: no value).
    let oracle = oracle();
    let expected = &oracle["arrays"]["array_metadata"];
    let storage = LocalStorage::new(corpus().join("array_metadata"));
    for m in expected["metadata"].as_array().unwrap() {
        let (start, end) = (u64_of(&m["range"][0]), u64_of(&m["range"][1]));
        let dir = ArrayDirectory::open(&storage, start, end).unwrap();
        let last = dir.metadata().files.last().map(|f| f.name.timestamp_end());
        assert_eq!(last, m["k"].as_u64(), "at [{start}, {end}]");
    }
    // At the widest range the consolidated file alone is visible; the three
    // it replaced are listed by its .vac.
    let dir = ArrayDirectory::open(&storage, 0, 1000).unwrap();
    let meta = dir.metadata();
    assert_eq!(meta.files.len(), 1);
    assert_eq!(meta.files[0].name.timestamp_range(), (2, 4));
    assert_eq!(meta.vacuumed.len(), 3);
    assert_eq!(meta.vacuum_files.len(), 1);
}

#[test]
fn consolidated_commits_locate_the_delete_tile() {
    let root = corpus().join("sparse_commits");
    let storage = LocalStorage::new(&root);
    let dir = ArrayDirectory::open(&storage, 0, 1000).unwrap();
    assert_eq!(dir.consolidated_commit_files().len(), 1);
    let con = &dir.consolidated_commit_files()[0];
    // Fragments 1, 2 and 4 are committed by the .con, 5 by its own .wrt.
    let sources: Vec<(u64, bool)> = dir
        .fragments(TimeTravelRule::SparseRead)
        .iter()
        .map(|f| {
            (
                f.name.timestamp_start(),
                matches!(&f.commit, CommitSource::Consolidated(c) if c == con),
            )
        })
        .collect();
    assert_eq!(sources, [(1, true), (2, true), (4, true), (5, false)]);

    // The delete at t = 3 is found once, inside the .con; the standalone
    // .del (not vacuumed) holds the same bytes.
    let conditions = dir.condition_commits();
    assert_eq!(conditions.len(), 1);
    let delete = &conditions[0];
    assert_eq!(delete.kind, ConditionKind::Delete);
    assert_eq!(delete.name.timestamp_range(), (3, 3));
    assert_eq!(&delete.file, con);
    let embedded = storage
        .read_range(&delete.file, delete.offset, delete.size)
        .unwrap();
    let standalone = RelPath::parse(&format!("__commits/{}", delete.name)).unwrap();
    assert_eq!(embedded, storage.read(&standalone).unwrap());

    // Deletes must lie wholly inside the range.
    assert!(ArrayDirectory::open(&storage, 0, 2)
        .unwrap()
        .condition_commits()
        .is_empty());
    assert_eq!(
        ArrayDirectory::open(&storage, 3, 5)
            .unwrap()
            .condition_commits()
            .len(),
        1
    );
}

#[test]
fn ignored_commits_drop_out_of_the_consolidated_list() {
    let storage = LocalStorage::new(corpus().join("vacuumed_with_ignore"));
    let dir = ArrayDirectory::open(&storage, 0, 1000).unwrap();
    assert_eq!(dir.ignore_files().len(), 1);
    assert_eq!(dir.consolidated_commit_files().len(), 1);
    // Every line of the .con is ignored, so nothing is committed by it, and
    // the vacuumed fragments are not resurrected.
    let committed = dir.committed_fragments();
    assert_eq!(committed.len(), 2);
    assert!(committed.iter().all(|f| f.commit == CommitSource::WrtFile));
}

#[test]
fn fragment_meta_files_are_listed() {
    let storage = LocalStorage::new(corpus().join("fragment_meta"));
    let dir = ArrayDirectory::open(&storage, 0, 1000).unwrap();
    let files: Vec<&str> = dir
        .fragment_meta_files()
        .iter()
        .map(tiledb_runtime::RelPath::as_str)
        .collect();
    assert_eq!(files.len(), 1);
    assert!(files[0].starts_with("__fragment_meta/__1_2_") && files[0].ends_with("_22.meta"));
}

/// The owned folders TileDB creates empty; git keeps no empty folder, so
/// whether they exist depends on the checkout.
fn present_optional_dirs(root: &std::path::Path) -> u64 {
    [
        "__fragment_meta",
        "__meta",
        "__labels",
        "__schema/__enumerations",
    ]
    .iter()
    .filter(|d| root.join(d).is_dir())
    .count() as u64
}

#[test]
fn opening_reads_only_listings_and_commit_files() {
    // sparse_commits: root, __schema, __commits and __fragments listed;
    // the one .con read; no fragment file opened.
    let root = corpus().join("sparse_commits");
    let storage = LocalStorage::new(&root);
    let dir = ArrayDirectory::open(&storage, 0, 1000).unwrap();
    let io = storage.counters();
    let con_size = storage.size(&dir.consolidated_commit_files()[0]).unwrap();
    assert_eq!(io.listings, 4 + present_optional_dirs(&root));
    assert_eq!(io.files_opened, 1);
    assert_eq!(io.bytes_read, con_size);
    assert_eq!(io.probes, 0);
    assert_eq!(io.files_written + io.changes, 0);

    // sparse_consolidated: its .vac is read only when it may apply.
    let root = corpus().join("sparse_consolidated");
    let storage = LocalStorage::new(&root);
    let dir = ArrayDirectory::open(&storage, 0, 2).unwrap();
    let vac = dir.fragment_vacuum_files()[0].path.clone();
    assert_eq!(storage.counters().files_opened, 1);
    assert_eq!(storage.counters().bytes_read, storage.size(&vac).unwrap());
    let storage = LocalStorage::new(&root);
    ArrayDirectory::open(&storage, 4, 4).unwrap();
    assert_eq!(storage.counters().files_opened, 0);
    assert_eq!(
        storage.counters().listings,
        4 + present_optional_dirs(&root)
    );
}

#[test]
fn a_reader_does_not_list_the_fragments_folder() {
    // The same fragments from the commits, one listing fewer: `__fragments/`
    // (uncommitted folders are a vacuum's and `check`'s concern).
    let root = corpus().join("sparse_commits");
    assert!(root.join("__fragments").is_dir());
    let full = LocalStorage::new(&root);
    let all = ArrayDirectory::open(&full, 0, 1000).unwrap();
    let reader = LocalStorage::new(&root);
    let read = ArrayDirectory::open_for_read(&reader, 0, 1000).unwrap();
    let names = |d: &ArrayDirectory| -> Vec<String> {
        d.committed_fragments()
            .iter()
            .map(|f| f.path.as_str().to_owned())
            .collect()
    };
    assert!(!names(&all).is_empty());
    assert_eq!(names(&read), names(&all));
    assert_eq!(
        reader.counters().listings + 1,
        full.counters().listings,
        "all but __fragments/"
    );
    assert!(read.uncommitted().is_empty());
}

#[test]
fn schema_choice_follows_name_order_like_tiledb() {
    // The generator evolved the schema at t = 5 (two attributes) and t = 10
    // (three); the creation schema (one attribute) is named by the clock.
    // TileDB takes the last schema in *name* order whose end is <= the open
    // end, else the first in name order, so "__10_10_…" (first by name) is
    // chosen only when nothing qualifies, and "__5_5_…" beats it otherwise.
    let oracle = oracle();
    let expected = &oracle["arrays"]["schema_name_order"];
    let nattr_of = |file: &str| {
        if file.starts_with("__5_5_") {
            2
        } else if file.starts_with("__10_10_") {
            3
        } else {
            1
        }
    };
    let storage = LocalStorage::new(corpus().join("schema_name_order"));
    let opens = expected["opens"].as_array().unwrap();
    assert!(opens.iter().any(|o| u64_of(&o["nattr"]) == 3));
    assert!(opens.iter().any(|o| u64_of(&o["nattr"]) == 2));
    for open in opens {
        let (start, end) = (u64_of(&open["range"][0]), u64_of(&open["range"][1]));
        let dir = ArrayDirectory::open(&storage, start, end).unwrap();
        let picked = dir
            .latest_schema_for_read()
            .path
            .file_name()
            .unwrap()
            .to_owned();
        assert_eq!(
            nattr_of(&picked),
            u64_of(&open["nattr"]),
            "at [{start}, {end}]: {picked}"
        );
    }
}

#[test]
fn group_details_and_metadata_match_tiledb() {
    use tiledb_runtime::directory::group::GroupDirectory;
    use tiledb_runtime::directory::timestamped_name::NameForm;
    let oracle = oracle();
    let storage = LocalStorage::new(corpus().join("group_v2"));
    let mut previous_members: Option<Vec<Value>> = None;
    for open in oracle["groups"]["group_v2"]["opens"].as_array().unwrap() {
        let end = u64_of(&open["range"][1]);
        let group = GroupDirectory::open(&storage, 0, end).unwrap();
        // Version-2 details: every file up to the end applies, in time order.
        let loaded: Vec<u64> = group
            .details_to_load()
            .iter()
            .map(|f| f.name.timestamp_end())
            .collect();
        let in_range: Vec<u64> = [1, 2, 3].into_iter().filter(|&t| t <= end).collect();
        assert_eq!(loaded, in_range, "at [0, {end}]");
        assert!(group
            .details_to_load()
            .iter()
            .all(|f| f.name.form() == NameForm::Versioned && f.name.version() == Some(2)));
        // TileDB's member list changes with each of those files (add, add,
        // remove), so none of them may be skipped.
        let members = open["members"].as_array().unwrap().clone();
        if end <= 3 {
            assert_ne!(previous_members.as_ref(), Some(&members), "at [0, {end}]");
        }
        previous_members = Some(members);
        // Metadata: k was set to the write time; the consolidated file holds
        // the newest value, and its .vac (absolute URIs of another folder)
        // still removes the three files it merged.
        let last = group
            .metadata()
            .files
            .last()
            .map(|f| f.name.timestamp_end());
        assert_eq!(last, open["k"].as_u64(), "at [0, {end}]");
    }
    let group = GroupDirectory::open(&storage, 0, 1000).unwrap();
    assert_eq!(group.metadata().files.len(), 1);
    assert_eq!(group.metadata().vacuumed.len(), 3);
}
