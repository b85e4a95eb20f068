//! Array and group folders built by hand in temporary directories, for the
//! cases no single TileDB version writes: both layouts side by side, every
//! `.vac` line form, ignore files, the sparse partial-overlap rule by version,
//! and hostile names that try to leave the folder.

use std::fs;
use std::path::Path;

use tiledb_runtime::directory::group::{resolve_member, GroupDirectory, MemberLocation};
use tiledb_runtime::directory::text_files::encode_consolidated_commits;
use tiledb_runtime::directory::{object_type, ArrayDirectory, ObjectType};
use tiledb_runtime::directory::{CommitSource, ConditionKind, TimeTravelRule};
use tiledb_runtime::storage::{LocalStorage, RelPath, Storage};
use tiledb_runtime::{Error, ErrorClass};

/// Distinct 32-hex labels; `n` also orders them.
fn label(n: u32) -> String {
    format!(
        "{n:08x}{}",
        "0123456789abcdef0123456789abcdef".get(8..).unwrap()
    )
}

fn name(t1: u64, t2: u64, n: u32, version: Option<u32>) -> String {
    match version {
        Some(v) => format!("__{t1}_{t2}_{}_{v}", label(n)),
        None => format!("__{t1}_{t2}_{}", label(n)),
    }
}

struct Folder {
    _tmp: tempfile::TempDir,
    root: std::path::PathBuf,
}

impl Folder {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("array");
        fs::create_dir(&root).unwrap();
        Folder { _tmp: tmp, root }
    }

    fn file(&self, path: &str, data: &[u8]) -> &Self {
        let full = self.root.join(path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        fs::write(full, data).unwrap();
        self
    }

    fn dir(&self, path: &str) -> &Self {
        fs::create_dir_all(self.root.join(path)).unwrap();
        self
    }

    /// A v12+ fragment folder with its `.wrt`.
    fn fragment_v12(&self, fragment: &str) -> &Self {
        self.dir(&format!("__fragments/{fragment}"))
            .file(
                &format!("__fragments/{fragment}/__fragment_metadata.tdb"),
                b"x",
            )
            .file(&format!("__commits/{fragment}.wrt"), b"")
    }

    /// A v5–v11 root fragment with its `.ok`.
    fn fragment_root(&self, fragment: &str) -> &Self {
        self.dir(fragment)
            .file(&format!("{fragment}/__fragment_metadata.tdb"), b"x")
            .file(&format!("{fragment}.ok"), b"")
    }

    fn schema(&self) -> &Self {
        self.file(&format!("__schema/{}", name(1, 1, 0xff, None)), b"schema")
    }

    fn storage(&self) -> LocalStorage {
        LocalStorage::new(&self.root)
    }

    fn open(&self, start: u64, end: u64) -> Result<ArrayDirectory, Error> {
        ArrayDirectory::open(&self.storage(), start, end)
    }
}

fn paths(fragments: &[tiledb_runtime::directory::Fragment]) -> Vec<String> {
    fragments
        .iter()
        .map(|f| f.path.as_str().to_owned())
        .collect()
}

fn assert_corrupt_in(err: Error, file_part: &str) {
    assert_eq!(err.class(), ErrorClass::Corrupt, "{err}");
    match &err {
        Error::Corrupt { at, .. } => assert!(
            at.file.to_string_lossy().contains(file_part),
            "{err} does not name {file_part}"
        ),
        other => panic!("{other}"),
    }
}

#[test]
fn both_layouts_coexist() {
    let f = Folder::new();
    let v2 = format!("__{}_5", label(1));
    let v4 = name(6, 6, 2, None);
    let v4_uncommitted = name(6, 6, 9, None);
    let v10 = name(7, 7, 3, Some(10));
    let v10_uncommitted = name(7, 7, 4, Some(10));
    let v22 = name(7, 7, 5, Some(22));
    let v22_uncommitted = name(8, 8, 6, Some(22));
    f.file("__array_schema.tdb", b"old schema")
        .schema()
        .file(&format!("__schema/{}", name(9, 9, 0xfe, None)), b"newer")
        .dir(&v2)
        .file(&format!("{v2}/__fragment_metadata.tdb"), b"x")
        .dir(&v4)
        .file(&format!("{v4}/__fragment_metadata.tdb"), b"x")
        .dir(&v4_uncommitted)
        .fragment_root(&v10)
        .dir(&v10_uncommitted)
        .fragment_v12(&v22)
        .dir(&format!("__fragments/{v22_uncommitted}"))
        .file("__lock.tdb", b"")
        .file(&format!("{}.meta", name(7, 7, 7, Some(10))), b"m")
        .file(
            &format!("__fragment_meta/{}.meta", name(1, 7, 8, Some(22))),
            b"m",
        )
        .dir("user_folder")
        .file("notes.txt", b"hello");
    let dir = f.open(0, 100).unwrap();

    let schemas: Vec<&str> = dir.schemas().iter().map(|s| s.path.as_str()).collect();
    assert_eq!(schemas[0], "__array_schema.tdb");
    assert_eq!(schemas.len(), 3);
    assert_eq!(
        dir.latest_schema_for_read().path.as_str(),
        format!("__schema/{}", name(9, 9, 0xfe, None))
    );
    // Before 9, the newest schema with t2 <= end is the one at 1.
    let early = f.open(0, 8).unwrap();
    assert_eq!(
        early.latest_schema_for_read().path.as_str(),
        format!("__schema/{}", name(1, 1, 0xff, None))
    );
    // Before any __schema file, the legacy file.
    let earliest = f.open(0, 0).unwrap();
    assert_eq!(
        earliest.latest_schema_for_read().path.as_str(),
        "__array_schema.tdb"
    );
    assert_eq!(
        earliest.latest_schema().path.as_str(),
        format!("__schema/{}", name(9, 9, 0xfe, None))
    );

    // Ordered by t1; the two fragments at t1 = 7 by name.
    let fragments = dir.fragments(TimeTravelRule::FullContainment);
    let mut tie = [v10.clone(), format!("__fragments/{v22}")];
    tie.sort();
    assert_eq!(
        paths(&fragments),
        [v2.clone(), v4.clone(), tie[0].clone(), tie[1].clone()]
    );
    let commits: Vec<&CommitSource> = fragments.iter().map(|f| &f.commit).collect();
    assert_eq!(commits[0], &CommitSource::FragmentMetadata);
    assert_eq!(commits[1], &CommitSource::FragmentMetadata);

    let mut uncommitted: Vec<&str> = dir.uncommitted().iter().map(|u| u.path.as_str()).collect();
    uncommitted.sort();
    let mut want = vec![
        v4_uncommitted.clone(),
        v10_uncommitted.clone(),
        format!("__fragments/{v22_uncommitted}"),
    ];
    want.sort();
    assert_eq!(uncommitted, want);
    assert_eq!(dir.max_named_format_version(), Some(22));
    // Consolidated fragment metadata: root files first, then __fragment_meta.
    let metas: Vec<&str> = dir
        .fragment_meta_files()
        .iter()
        .map(tiledb_runtime::RelPath::as_str)
        .collect();
    assert_eq!(
        metas,
        [
            format!("{}.meta", name(7, 7, 7, Some(10))),
            format!("__fragment_meta/{}.meta", name(1, 7, 8, Some(22)))
        ]
    );
    assert_eq!(
        fragments[0].metadata_path().unwrap().as_str(),
        format!("{v2}/__fragment_metadata.tdb")
    );

    // One probe for __fragment_metadata.tdb per root folder below v5 without
    // a commit marker (v2, v4, v4_uncommitted); nothing opened.
    let storage = f.storage();
    ArrayDirectory::open(&storage, 0, 100).unwrap();
    assert_eq!(storage.counters().probes, 3);
    assert_eq!(storage.counters().files_opened, 0);
}

#[test]
fn time_travel_at_a_point_and_over_a_range() {
    let f = Folder::new();
    f.schema();
    let frags: Vec<String> = (1..=4).map(|t| name(t, t, t as u32, Some(22))).collect();
    for frag in &frags {
        f.fragment_v12(frag);
    }
    let at = |start, end| {
        paths(
            &f.open(start, end)
                .unwrap()
                .fragments(TimeTravelRule::FullContainment),
        )
    };
    let v12 = |i: usize| format!("__fragments/{}", frags[i]);
    assert_eq!(at(0, 2), [v12(0), v12(1)]);
    assert_eq!(at(2, 3), [v12(1), v12(2)]);
    assert_eq!(at(3, 3), [v12(2)]);
    assert!(at(5, 9).is_empty());
    assert_eq!(
        f.open(0, u64::MAX)
            .unwrap()
            .fragments(TimeTravelRule::SparseRead)
            .len(),
        4
    );
    assert_eq!(f.open(3, 1).unwrap_err().class(), ErrorClass::Usage);
}

#[test]
fn sparse_partial_overlap_needs_version_15() {
    let f = Folder::new();
    f.schema();
    let old = name(1, 5, 1, Some(14));
    let new = name(1, 5, 2, Some(15));
    f.fragment_v12(&old).fragment_v12(&new);
    let dir = f.open(3, 10).unwrap();
    assert!(dir.fragments(TimeTravelRule::FullContainment).is_empty());
    assert_eq!(
        paths(&dir.fragments(TimeTravelRule::SparseRead)),
        [format!("__fragments/{new}")]
    );
}

#[test]
fn vacuum_files_of_every_path_form() {
    let f = Folder::new();
    f.schema();
    // Root fragments of v10 consolidated into a v10 root fragment, its .vac
    // holding absolute URIs (as TileDB wrote before v19).
    let r1 = name(1, 1, 1, Some(10));
    let r2 = name(2, 2, 2, Some(10));
    let r12 = name(1, 2, 3, Some(10));
    f.fragment_root(&r1)
        .fragment_root(&r2)
        .fragment_root(&r12)
        .file(
            &format!("{r12}.vac"),
            format!("file:///home/me/array/{r1}\nfile:///home/me/array/{r2}\n").as_bytes(),
        );
    // v12+ fragments: one .vac with old absolute lines, one with relative ones.
    let a = name(3, 3, 4, Some(18));
    let b = name(4, 4, 5, Some(18));
    let ab = name(3, 4, 6, Some(18));
    f.fragment_v12(&a).fragment_v12(&b).fragment_v12(&ab).file(
        &format!("__commits/{ab}.vac"),
        format!("file:///home/me/array/__fragments/{a}\ns3://bucket/array/__fragments/{b}\n")
            .as_bytes(),
    );
    let c = name(5, 5, 7, Some(22));
    let d = name(6, 6, 8, Some(22));
    let cd = name(5, 6, 9, Some(22));
    f.fragment_v12(&c).fragment_v12(&d).fragment_v12(&cd).file(
        &format!("__commits/{cd}.vac"),
        format!("/__fragments/{c}\n/__fragments/{d}\n").as_bytes(),
    );
    let dir = f.open(0, 100).unwrap();
    assert_eq!(
        paths(&dir.fragments(TimeTravelRule::FullContainment)),
        [
            r12.clone(),
            format!("__fragments/{ab}"),
            format!("__fragments/{cd}")
        ]
    );
    let mut vacuumed = paths(&dir.vacuumed_fragments(TimeTravelRule::FullContainment));
    vacuumed.sort();
    let mut want = vec![
        r1.clone(),
        r2.clone(),
        format!("__fragments/{a}"),
        format!("__fragments/{b}"),
        format!("__fragments/{c}"),
        format!("__fragments/{d}"),
    ];
    want.sort();
    assert_eq!(vacuumed, want);

    // Opened at [0, 1] the consolidated [1, 2] is outside: its .vac does not
    // apply, and r1 is seen.
    assert_eq!(
        paths(
            &f.open(0, 1)
                .unwrap()
                .fragments(TimeTravelRule::FullContainment)
        ),
        [r1]
    );
}

#[test]
fn consolidated_commits_with_ignore_file() {
    let f = Folder::new();
    f.schema();
    let a = name(1, 1, 1, Some(22));
    let b = name(2, 2, 2, Some(22));
    let c = name(3, 3, 3, Some(22));
    let root_ok = name(4, 4, 4, Some(11));
    let del = name(5, 5, 5, Some(22));
    let late_del = name(50, 50, 6, Some(22));
    for frag in [&a, &b, &c] {
        f.dir(&format!("__fragments/{frag}"));
    }
    f.dir(&root_ok);
    // c's .wrt exists on its own as well (commits not vacuumed yet).
    f.file(&format!("__commits/{c}.wrt"), b"");
    let p = |s: String| RelPath::parse(&s).unwrap();
    let (pa, pb, pc) = (
        p(format!("__commits/{a}.wrt")),
        p(format!("__commits/{b}.wrt")),
        p(format!("__commits/{c}.wrt")),
    );
    let (pok, pdel, plate) = (
        p(format!("{root_ok}.ok")),
        p(format!("__commits/{del}.del")),
        p(format!("__commits/{late_del}.del")),
    );
    let tile = b"delete\ntile\n".as_slice();
    let con = encode_consolidated_commits([
        (&pa, None),
        (&pb, None),
        (&pc, None),
        (&pok, None),
        (&pdel, Some(tile)),
        (&plate, Some(b"x".as_slice())),
    ])
    .expect("encode");
    let con_name = format!("__commits/{}.con", name(1, 50, 10, Some(22)));
    f.file(&con_name, &con);
    f.file(
        &format!("__commits/{}.ign", name(2, 2, 11, Some(22))),
        format!("{pb}\n").as_bytes(),
    );

    let dir = f.open(0, 10).unwrap();
    let fragments = dir.fragments(TimeTravelRule::FullContainment);
    assert_eq!(
        paths(&fragments),
        [
            format!("__fragments/{a}"),
            format!("__fragments/{c}"),
            root_ok.clone()
        ]
    );
    let con_path = RelPath::parse(&con_name).unwrap();
    assert!(fragments
        .iter()
        .all(|f| f.commit == CommitSource::Consolidated(con_path.clone())));

    // The delete in range is located inside the .con; the later one is not
    // in [0, 10].
    let conditions = dir.condition_commits();
    assert_eq!(conditions.len(), 1);
    assert_eq!(conditions[0].kind, ConditionKind::Delete);
    assert_eq!(conditions[0].file, con_path);
    let storage = f.storage();
    assert_eq!(
        storage
            .read_range(&con_path, conditions[0].offset, conditions[0].size)
            .unwrap(),
        tile
    );
    assert_eq!(f.open(0, 100).unwrap().condition_commits().len(), 2);
}

#[test]
fn standalone_delete_and_update_commits() {
    let f = Folder::new();
    f.schema();
    let del = name(3, 3, 1, Some(22));
    let upd = name(2, 2, 2, Some(22));
    f.file(&format!("__commits/{del}.del"), b"0123456789")
        .file(&format!("__commits/{upd}.upd"), b"abc");
    let dir = f.open(0, 10).unwrap();
    let c = dir.condition_commits();
    assert_eq!(c.len(), 2);
    assert_eq!(
        (c[0].kind, c[0].offset, c[0].size),
        (ConditionKind::Update, 0, 3)
    );
    assert_eq!(
        (c[1].kind, c[1].offset, c[1].size),
        (ConditionKind::Delete, 0, 10)
    );
    assert_eq!(f.open(0, 2).unwrap().condition_commits().len(), 1);
}

#[test]
fn array_metadata_with_vacuum_file() {
    let f = Folder::new();
    f.schema();
    let m1 = name(1, 1, 1, None);
    let m2 = name(2, 2, 2, None);
    let m12 = name(1, 2, 3, None);
    let m3 = name(3, 3, 4, None);
    f.file(&format!("__meta/{m1}"), b"1")
        .file(&format!("__meta/{m2}"), b"2")
        .file(&format!("__meta/{m12}"), b"12")
        .file(&format!("__meta/{m3}"), b"3")
        .file(
            &format!("__meta/{m12}.vac"),
            format!("/__meta/{m1}\nfile:///x/array/__meta/{m2}\n").as_bytes(),
        )
        .file(&format!("__meta/{}.tmp", name(4, 4, 5, None)), b"partial");
    let files = |s, e| -> Vec<String> {
        f.open(s, e)
            .unwrap()
            .metadata()
            .files
            .iter()
            .map(|m| m.path.file_name().unwrap().to_owned())
            .collect()
    };
    assert_eq!(files(0, 10), [m12.clone(), m3.clone()]);
    // The .vac [1, 2] is not inside [2, 3]: m2 is seen, m1 and m12 are not.
    assert_eq!(files(2, 3), [m2.clone(), m3.clone()]);
    assert_eq!(files(0, 1), [m1]);
}

#[test]
fn names_from_files_cannot_escape_the_folder() {
    let frag = name(1, 1, 1, Some(22));
    let vac = format!("__commits/{}.vac", name(1, 2, 2, Some(22)));
    for line in [
        "../../etc/passwd".to_owned(),
        "/etc/passwd".to_owned(),
        format!("/__fragments/../../{frag}"),
    ] {
        let f = Folder::new();
        f.schema()
            .fragment_v12(&frag)
            .file(&vac, format!("{line}\n").as_bytes());
        assert_corrupt_in(f.open(0, 10).unwrap_err(), ".vac");
    }
    let con = format!("__commits/{}.con", name(1, 2, 3, Some(22)));
    for line in [
        "../../etc/passwd".to_owned(),
        "/etc/passwd".to_owned(),
        format!("/__commits/{frag}.wrt"),
        format!("__commits/../../{frag}.wrt"),
        format!("file:///tmp/array/__commits/{frag}.wrt"),
    ] {
        let f = Folder::new();
        f.schema().file(&con, format!("{line}\n").as_bytes());
        assert_corrupt_in(f.open(0, 10).unwrap_err(), ".con");
    }
    let ign = format!("__commits/{}.ign", name(1, 2, 4, Some(22)));
    for line in ["../../etc/passwd", "/etc/passwd"] {
        let f = Folder::new();
        f.schema().file(&ign, format!("{line}\n").as_bytes());
        assert_corrupt_in(f.open(0, 10).unwrap_err(), ".ign");
    }
    let meta_vac = format!("__meta/{}.vac", name(1, 2, 5, None));
    let f = Folder::new();
    f.schema().file(&meta_vac, b"../../etc/passwd\n");
    assert_corrupt_in(f.open(0, 10).unwrap_err(), ".vac");

    // Group members stored as relative must stay inside the group.
    for uri in ["../sibling", "/etc/passwd", "a/../../b", ""] {
        assert_eq!(
            resolve_member(uri, true).unwrap_err().class(),
            ErrorClass::Corrupt,
            "{uri}"
        );
    }
    assert_eq!(
        resolve_member("arrays/a", true).unwrap(),
        MemberLocation::Inside(RelPath::parse("arrays/a").unwrap())
    );
    assert_eq!(
        resolve_member("s3://bucket/a", false).unwrap(),
        MemberLocation::External("s3://bucket/a".into())
    );
}

#[cfg(unix)]
#[test]
fn symbolic_links_out_of_the_folder_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    fs::write(
        &secret,
        format!("__commits/{}.wrt\n", name(1, 1, 1, Some(22))),
    )
    .unwrap();
    let f = Folder::new();
    f.schema().dir("__commits");
    let con = f
        .root
        .join(format!("__commits/{}.con", name(1, 1, 2, Some(22))));
    std::os::unix::fs::symlink(&secret, &con).unwrap();
    let storage = f.storage();
    let err = ArrayDirectory::open(&storage, 0, 10).unwrap_err();
    assert_eq!(err.class(), ErrorClass::Corrupt, "{err}");
    assert!(err.to_string().contains("outside"), "{err}");
    assert_eq!(storage.counters().files_opened, 0);

    // A linked folder is refused the same way.
    let f = Folder::new();
    f.schema();
    fs::create_dir(outside.path().join("commits")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("commits"), f.root.join("__commits")).unwrap();
    assert_eq!(f.open(0, 10).unwrap_err().class(), ErrorClass::Corrupt);
}

#[test]
fn bad_listings_are_errors_that_name_the_file() {
    // A zero-byte file named like an owned folder.
    let f = Folder::new();
    f.schema().file("__commits", b"");
    assert_corrupt_in(f.open(0, 10).unwrap_err(), "__commits");
    // A commit file whose name is not timestamped.
    let f = Folder::new();
    f.schema().file("__commits/not_a_name.wrt", b"");
    assert_corrupt_in(f.open(0, 10).unwrap_err(), "not_a_name.wrt");
    let f = Folder::new();
    f.schema()
        .file(&format!("__commits/{}.wrt", name(5, 4, 1, Some(22))), b"");
    assert_corrupt_in(f.open(0, 10).unwrap_err(), "__5_4_");
    // Unknown files in owned folders are ignored.
    let f = Folder::new();
    f.schema()
        .file("__commits/README", b"x")
        .file(&format!("__commits/{}.tmp", name(1, 1, 1, Some(22))), b"")
        .file("__fragment_meta/notes", b"x");
    assert!(f.open(0, 10).is_ok());
    // No schema: not an array.
    let f = Folder::new();
    f.fragment_v12(&name(1, 1, 1, Some(22)));
    assert_eq!(f.open(0, 10).unwrap_err().class(), ErrorClass::Usage);
    // No folder at all.
    let storage = LocalStorage::new(Path::new("/nonexistent/array/for/test"));
    assert_eq!(
        ArrayDirectory::open(&storage, 0, 1).unwrap_err().class(),
        ErrorClass::Io
    );
    assert_eq!(object_type(&storage).unwrap(), ObjectType::Invalid);
}

#[test]
fn labels_and_enumerations_are_listed() {
    let f = Folder::new();
    f.schema()
        .file(
            "__schema/__enumerations/__0123456789abcdef0123456789abcdef_0",
            b"e",
        )
        .dir("__labels/l0")
        .dir("__labels/l1");
    let dir = f.open(0, 10).unwrap();
    assert_eq!(dir.schemas().len(), 1);
    let enums: Vec<&str> = dir
        .enumeration_files()
        .iter()
        .map(tiledb_runtime::RelPath::as_str)
        .collect();
    assert_eq!(
        enums,
        ["__schema/__enumerations/__0123456789abcdef0123456789abcdef_0"]
    );
    let labels: Vec<&str> = dir
        .dimension_labels()
        .iter()
        .map(tiledb_runtime::RelPath::as_str)
        .collect();
    assert_eq!(labels, ["__labels/l0", "__labels/l1"]);
}

#[test]
fn object_types() {
    let f = Folder::new();
    assert_eq!(object_type(&f.storage()).unwrap(), ObjectType::Invalid);
    f.file("__array_schema.tdb", b"s");
    assert_eq!(object_type(&f.storage()).unwrap(), ObjectType::Array);
    let g = Folder::new();
    g.dir("__group");
    assert_eq!(object_type(&g.storage()).unwrap(), ObjectType::Group);
    let g = Folder::new();
    g.file("__tiledb_group.tdb", b"");
    assert_eq!(object_type(&g.storage()).unwrap(), ObjectType::Group);
    // A schema folder wins over group markers.
    g.dir("__schema");
    assert_eq!(object_type(&g.storage()).unwrap(), ObjectType::Array);
}

#[test]
fn group_details_versions_and_metadata() {
    let g = Folder::new();
    let d1 = name(1, 1, 1, Some(2));
    let d2 = name(2, 2, 2, Some(2));
    let d3 = name(3, 3, 3, Some(2));
    g.file("__tiledb_group.tdb", b"")
        .file(&format!("__group/{d1}"), b"1")
        .file(&format!("__group/{d2}"), b"2")
        .file(&format!("__group/{d3}"), b"3");
    let open = |s, e| GroupDirectory::open(&g.storage(), s, e).unwrap();
    let load = |s, e| -> Vec<String> {
        open(s, e)
            .details_to_load()
            .iter()
            .map(|f| f.path.file_name().unwrap().to_owned())
            .collect()
    };
    // Version 2: every file in range, oldest first.
    assert_eq!(load(0, 10), [d1.clone(), d2.clone(), d3.clone()]);
    assert_eq!(load(2, 3), [d2.clone(), d3.clone()]);
    // A newer version-1 file (suffix `_1`) means only it counts.
    let d4 = name(4, 4, 4, Some(1));
    g.file(&format!("__group/{d4}"), b"4");
    assert_eq!(load(0, 10), [d4]);
    assert_eq!(load(0, 3), [d1.clone(), d2.clone(), d3.clone()]);

    // Group metadata: .vac lines are absolute URIs (TileDB writes group ones
    // so in every version).
    let m1 = name(1, 1, 5, None);
    let m2 = name(2, 2, 6, None);
    let m12 = name(1, 2, 7, None);
    g.file(&format!("__meta/{m1}"), b"a")
        .file(&format!("__meta/{m2}"), b"b")
        .file(&format!("__meta/{m12}"), b"ab")
        .file(
            &format!("__meta/{m12}.vac"),
            format!("file:///data/g/__meta/{m1}\nfile:///data/g/__meta/{m2}\n").as_bytes(),
        );
    let group = open(0, 10);
    let meta: Vec<&str> = group
        .metadata()
        .files
        .iter()
        .map(|m| m.path.as_str())
        .collect();
    assert_eq!(meta, [format!("__meta/{m12}")]);
    assert_eq!(group.metadata().vacuumed.len(), 2);

    // A folder with neither marker is not a group.
    let not_group = Folder::new();
    assert_eq!(
        GroupDirectory::open(&not_group.storage(), 0, 1)
            .unwrap_err()
            .class(),
        ErrorClass::Usage
    );
    // A zero-byte file masking __group.
    let masked = Folder::new();
    masked.file("__tiledb_group.tdb", b"").file("__group", b"");
    assert_eq!(
        GroupDirectory::open(&masked.storage(), 0, 1)
            .unwrap_err()
            .class(),
        ErrorClass::Corrupt
    );
}
