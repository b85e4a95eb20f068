//! `tdb check` against arrays written by TileDB: every unmutated corpus
//! array is clean; every negative case of the corpus (mutated by the
//! corpus generator, and refused by TileDB itself) gets a finding of the
//! expected class in the mutated file (but one whose premise, a format version
//! newer than this implementation knows, does not hold here: check then agrees
//! with the reader); and arrays mutated here (each file
//! type truncated, bit-flipped, removed) each get their finding.

use std::path::{Path, PathBuf};

use tiledb_runtime::check::{check_array, CheckOptions, Finding, Report};
use tiledb_runtime::ErrorClass;

fn corpus(producer: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/corpus")
        .join(producer)
}

fn cases(producer: &str) -> Vec<PathBuf> {
    let root = corpus(producer);
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("the corpus at {} is missing: {e}", root.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("array").is_dir())
        .collect();
    cases.sort();
    cases
}

fn expected(case: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(case.join("expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("expected.json parses")
}

/// The key of an encrypted case, from its recipe (`encryption = { ..., key = "…" }`).
fn options_for(case: &Path) -> CheckOptions {
    let name = case.file_name().unwrap_or_default().to_string_lossy();
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/cases")
        .join(format!("{name}.toml"));
    let text = std::fs::read_to_string(recipe).unwrap_or_default();
    let key = text
        .lines()
        .find(|l| l.trim_start().starts_with("encryption"))
        .and_then(|l| l.split("key = \"").nth(1))
        .and_then(|rest| rest.split('"').next())
        .and_then(|k| <[u8; 32]>::try_from(k.as_bytes()).ok());
    CheckOptions {
        encryption_key: key,
        ..Default::default()
    }
}

fn show(report: &Report) -> String {
    report
        .findings
        .iter()
        .map(|f| format!("  {f}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `at_least`: how many arrays the producer's corpus holds at the least
/// (the releases between 2.13 and 2.30 replay a selection of the cases).
fn clean_cases_check_clean(producer: &str, at_least: usize) {
    let mut checked = 0;
    let mut read = 0;
    let mut failures = Vec::new();
    for case in cases(producer) {
        if expected(&case)["negative"] == serde_json::Value::Bool(true) {
            continue;
        }
        let report = check_array(&case.join("array"), &options_for(&case));
        assert!(
            report.files_checked > 0,
            "{}: nothing checked",
            case.display()
        );
        if !report.is_clean() {
            failures.push(format!("{}:\n{}", case.display(), show(&report)));
        }
        if report.cells_read > 0 {
            read += 1;
        }
        checked += 1;
    }
    println!("{checked} {producer} arrays checked, {read} of them read to the last cell");
    // The full read runs on every clean array; only empty arrays return no cells.
    assert!(
        read * 10 >= checked * 9,
        "only {read} of {checked} arrays were read"
    );
    assert!(checked >= at_least, "too few {producer} arrays: {checked}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_tiledb_2_30_array_checks_clean() {
    clean_cases_check_clean("tiledb-2.30", 150);
}

#[test]
fn every_array_of_the_releases_between_checks_clean() {
    for producer in [
        "tiledb-2.14",
        "tiledb-2.15",
        "tiledb-2.16",
        "tiledb-2.17",
        "tiledb-2.19",
    ] {
        clean_cases_check_clean(producer, 10);
    }
}

#[test]
fn every_tiledb_2_13_array_checks_clean() {
    clean_cases_check_clean("tiledb-2.13", 100);
}

fn negative_cases_are_diagnosed(producer: &str) {
    let mut checked = 0;
    for case in cases(producer) {
        let expected = expected(&case);
        if expected["negative"] != serde_json::Value::Bool(true) {
            continue;
        }
        let class = expected["reads"][0]["error"].as_str().expect("error class");
        let file = expected["mutations"][0]["file"]
            .as_str()
            .expect("mutated file");
        let report = check_array(&case.join("array"), &options_for(&case));
        if case.ends_with("negative.schema.version_too_new") {
            // The case writes format version 23 into the schema, which
            // TileDB 2.30 (newest 22) refuses; this implementation knows
            // version 23 (spec/), so what the schema says is not "too new"
            // here (the conformance matrix lists the same case as a known
            // failure of the reader). Check must then agree with the
            // reader: clean where it reads the array, a finding of the
            // reader's error class in the schema where it does not.
            let read = tiledb_runtime::array::Array::open_path(
                case.join("array"),
                tiledb_runtime::array::OpenOptions::default(),
            )
            .and_then(|array| array.read(&Default::default()));
            match read {
                Ok(_) => assert!(
                    report.is_clean(),
                    "{}: the reader reads it, yet check reports:\n{}",
                    case.display(),
                    show(&report)
                ),
                Err(e) => assert!(
                    report
                        .findings
                        .iter()
                        .any(|f| f.class == e.class() && f.file == file),
                    "{}: the reader reports {e}, check reports:\n{}",
                    case.display(),
                    show(&report)
                ),
            }
            checked += 1;
            continue;
        }
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.class.name() == class && f.file == file),
            "{}: expected a {class} finding in {file}, got:\n{}",
            case.display(),
            show(&report)
        );
        checked += 1;
    }
    println!("{checked} negative {producer} cases diagnosed");
    assert!(checked >= 10, "too few negative cases: {checked}");
}

#[test]
fn tiledb_2_30_negative_cases_are_diagnosed() {
    negative_cases_are_diagnosed("tiledb-2.30");
}

#[test]
fn tiledb_2_13_negative_cases_are_diagnosed() {
    negative_cases_are_diagnosed("tiledb-2.13");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create a copy folder");
    for entry in std::fs::read_dir(from).expect("list").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

fn files_of(dir: &Path, root: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("list")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_of(&path, root, out);
        } else {
            let rel = path.strip_prefix(root).expect("inside the root");
            out.push(rel.to_string_lossy().into_owned());
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mutation {
    /// Keep the first half.
    Truncate,
    /// Flip the top bit of a byte inside the file's first compressed or
    /// checksummed region (see `flip_offset`).
    BitFlip,
    Remove,
}

/// What kind of file a path is, for choosing mutations and expectations.
fn file_kind(path: &str) -> &'static str {
    let name = path.rsplit('/').next().unwrap_or(path);
    if path.starts_with("__schema/__enumerations/") {
        "enumeration"
    } else if path.starts_with("__schema/") {
        "schema"
    } else if name == "__fragment_metadata.tdb" {
        "fragment metadata"
    } else if path.starts_with("__fragments/") {
        "data"
    } else if name.ends_with(".wrt") {
        "write commit"
    } else if name.ends_with(".del") {
        "delete commit"
    } else if name.ends_with(".con") {
        "consolidated commits"
    } else if name.ends_with(".vac") {
        "vacuum"
    } else if name.ends_with(".meta") {
        "consolidated fragment metadata"
    } else if path.starts_with("__meta/") {
        "metadata"
    } else {
        "other"
    }
}

/// Where a bit flip is certain to be caught: inside the body of the first
/// generic tile (GZIP carries an Adler-32 of its output), inside a
/// checksummed data tile, or in the text of a commit list (the top bit
/// makes it invalid UTF-8).
fn flip_offset(kind: &str, bytes: &[u8]) -> Option<usize> {
    match kind {
        // Generic tiles: the header and GZIP pipeline take 60 bytes; the
        // chunk framing 20 more; flip a byte inside the deflate stream.
        "schema"
        | "enumeration"
        | "fragment metadata"
        | "delete commit"
        | "metadata"
        | "consolidated fragment metadata" => (bytes.len() > 90).then_some(84),
        // Data tiles of an array whose pipeline ends in a checksum: flip the
        // last byte of the first tile's data.
        "data" => (bytes.len() > 40).then(|| bytes.len() - 3),
        "consolidated commits" | "vacuum" => (!bytes.is_empty()).then_some(2),
        _ => None,
    }
}

/// The file a finding must name after `mutation` of `path`.
fn expected_file(
    path: &str,
    kind: &str,
    mutation: Mutation,
    fragment_schema_users: &[String],
    consolidated_commits: &str,
) -> Option<Vec<String>> {
    let fragment_dir = || {
        let mut parts = path.split('/');
        let first = parts.next().unwrap_or_default();
        let second = parts.next().unwrap_or_default();
        format!("{first}/{second}")
    };
    match mutation {
        Mutation::Truncate | Mutation::BitFlip => Some(vec![path.to_string()]),
        Mutation::Remove => match kind {
            "data" => Some(vec![path.to_string()]),
            "fragment metadata" => Some(vec![fragment_dir()]),
            "write commit" => {
                let stem = path
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches(".wrt");
                // A commit that a .con file repeats is still committed.
                (!consolidated_commits.contains(stem)).then(|| vec![format!("__fragments/{stem}")])
            }
            // The fragments that name the schema report it missing.
            "schema" => Some(fragment_schema_users.to_vec()),
            // The schema that names the enumeration reports it missing.
            "enumeration" => Some(vec![]),
            // Removing a delete, a vacuum list, metadata or consolidated
            // fragment metadata leaves a valid (different) array.
            _ => None,
        },
    }
}

fn mutate(root: &Path, path: &str, mutation: Mutation, bytes: &[u8], kind: &str) -> bool {
    let full = root.join(path);
    match mutation {
        Mutation::Truncate => {
            if bytes.len() < 2 {
                return false;
            }
            std::fs::write(&full, &bytes[..bytes.len() / 2]).expect("truncate");
        }
        Mutation::BitFlip => {
            let Some(at) = flip_offset(kind, bytes) else {
                return false;
            };
            let mut copy = bytes.to_vec();
            copy[at] ^= 0x80;
            std::fs::write(&full, copy).expect("flip");
        }
        Mutation::Remove => std::fs::remove_file(&full).expect("remove"),
    }
    true
}

#[test]
fn mutated_corpus_arrays_are_diagnosed() {
    // Arrays that between them hold every kind of file; checksummed data
    // tiles so that flipped data bits are detectable.
    let bases = [
        "sparse.filter.checksum_md5",
        "dense.filter.checksum_sha256",
        "sparse.attr.var_utf8.nullable.zstd",
        "sparse.delete.condition",
        "sparse.consolidate.commits",
        "sparse.consolidate.fragment_meta",
        "sparse.consolidate.fragments.vacuum",
        "sparse.enumeration",
        "array.metadata.basic",
    ];
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let mut diagnosed = std::collections::BTreeMap::<(String, String), usize>::new();
    let mut failures = Vec::new();
    for base in bases {
        let source = corpus("tiledb-2.30").join(base).join("array");
        assert!(source.is_dir(), "{} is missing", source.display());
        let mut files = Vec::new();
        files_of(&source, &source, &mut files);
        let schema_users: Vec<String> = files
            .iter()
            .filter(|f| f.ends_with("__fragment_metadata.tdb"))
            .cloned()
            .collect();
        // The text of the array's .con files (their lines name commits).
        let con_text: String = files
            .iter()
            .filter(|f| f.ends_with(".con"))
            .map(|f| {
                String::from_utf8_lossy(&std::fs::read(source.join(f)).unwrap_or_default())
                    .into_owned()
            })
            .collect();
        for path in &files {
            let kind = file_kind(path);
            let bytes = std::fs::read(source.join(path)).expect("read");
            for mutation in [Mutation::Truncate, Mutation::BitFlip, Mutation::Remove] {
                let Some(expected) = expected_file(path, kind, mutation, &schema_users, &con_text)
                else {
                    continue;
                };
                if kind == "data" && mutation == Mutation::BitFlip && !base.contains("checksum") {
                    continue;
                }
                let copy = scratch
                    .path()
                    .join(format!("{base}-{}", diagnosed.len() + failures.len()));
                copy_dir(&source, &copy);
                if !mutate(&copy, path, mutation, &bytes, kind) {
                    let _ = std::fs::remove_dir_all(&copy);
                    continue;
                }
                let report = check_array(&copy, &CheckOptions::default());
                let ok = |f: &Finding| {
                    f.class == ErrorClass::Corrupt
                        && (expected.contains(&f.file)
                            || (kind == "enumeration" && f.file.starts_with("__schema/"))
                            || (kind == "schema" && f.file.starts_with("__schema")))
                };
                // Without its commit marker a fragment is what an interrupted
                // write leaves: not corruption (readers skip it), but reported
                // as a note naming the fragment.
                let uncommitted = mutation == Mutation::Remove && path.ends_with(".wrt");
                let diagnosed_here = if uncommitted {
                    report.notes.iter().any(|n| expected.contains(&n.file))
                } else {
                    report.findings.iter().any(ok)
                };
                if diagnosed_here {
                    *diagnosed
                        .entry((kind.to_string(), format!("{mutation:?}")))
                        .or_default() += 1;
                } else {
                    failures.push(format!(
                        "{base}: {mutation:?} {path} ({kind}): expected a corrupt finding in {expected:?}, got:\n{}",
                        show(&report)
                    ));
                }
                let _ = std::fs::remove_dir_all(&copy);
            }
        }
    }
    for ((kind, mutation), count) in &diagnosed {
        println!("{kind:>32} {mutation:<9} {count} diagnosed");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for kind in [
        "schema",
        "enumeration",
        "fragment metadata",
        "data",
        "delete commit",
        "consolidated commits",
        "consolidated fragment metadata",
        "metadata",
        "write commit",
    ] {
        assert!(
            diagnosed.keys().any(|(k, _)| k == kind),
            "no mutation of a {kind} file was tried"
        );
    }
}

#[test]
fn findings_locate_a_truncated_data_file() {
    let case = corpus("tiledb-2.30").join("negative.tile.truncated");
    let report = check_array(&case.join("array"), &CheckOptions::default());
    let finding = report
        .findings
        .iter()
        .find(|f| f.file.ends_with("a0.tdb"))
        .expect("a finding in a0.tdb");
    // The file keeps 30 of its 60 bytes (the mutation in expected.json).
    assert_eq!(finding.offset, 30);
    assert_eq!(finding.field, "file size");
}

/// `../shared` beside the checkout, or `$TILEDB_SHARED_DIR`.
fn shared_dir() -> PathBuf {
    std::env::var_os("TILEDB_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"))
}

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

/// A bit flipped in an unfiltered data tile leaves every file well formed
/// (no checksum, no compressor to notice); only the tile metadata the
/// fragment records (min, max, sum, null count) can tell. The check
/// recomputes it from the cells and must name the disagreeing tile.
/// Every release whose corpus replays the core cases (formats 16–22).
const RELEASES: [&str; 7] = [
    "tiledb-2.13",
    "tiledb-2.14",
    "tiledb-2.15",
    "tiledb-2.16",
    "tiledb-2.17",
    "tiledb-2.19",
    "tiledb-2.30",
];

#[test]
fn unchecksummed_data_bit_flips_are_caught_by_tile_metadata() {
    let mut arrays: Vec<PathBuf> = [
        "sparse.attr.int8",
        "sparse.attr.uint16",
        "sparse.attr.int64",
        "sparse.attr.float32",
        "sparse.attr.float64",
    ]
    .iter()
    .map(|case| corpus("tiledb-2.30").join(case).join("array"))
    .collect();
    // The same recipe as written by every release of the corpus (formats 16-22).
    for producer in RELEASES {
        arrays.push(corpus(producer).join("sparse.basic.int32").join("array"));
    }
    let scratch = tempfile::tempdir().expect("a scratch folder");
    for (n, source) in arrays.iter().enumerate() {
        // The last byte is the top byte of the last cell's value.
        let (data, report) = flip_data_byte(source, &scratch.path().join(n.to_string()), 0);
        assert!(
            tile_metadata_reported(&data, &report),
            "{}: the flipped value is not reported:\n{}",
            source.display(),
            show(&report)
        );
    }
}

/// Copies `source` to `copy`, checks it is clean with tile metadata
/// compared, flips the top bit of the byte `from_end` bytes before the end
/// of its `a0.tdb` (one unfiltered, unchecksummed data file) and checks it
/// again. Returns the data file's path and the report.
fn flip_data_byte(source: &Path, copy: &Path, from_end: usize) -> (String, Report) {
    assert!(source.is_dir(), "{} is missing", source.display());
    copy_dir(source, copy);
    let clean = check_array(copy, &CheckOptions::default());
    assert!(clean.is_clean(), "{}: {}", source.display(), show(&clean));
    assert!(
        clean.tile_metadata_checked > 0,
        "{}: no tile metadata was compared",
        source.display()
    );
    let mut files = Vec::new();
    files_of(copy, copy, &mut files);
    let data = files
        .iter()
        .find(|f| f.ends_with("/a0.tdb"))
        .unwrap_or_else(|| panic!("{}: no a0.tdb", source.display()));
    let path = copy.join(data);
    let mut bytes = std::fs::read(&path).expect("read a0.tdb");
    let at = bytes.len() - 1 - from_end;
    bytes[at] ^= 0x80;
    std::fs::write(&path, bytes).expect("write a0.tdb");
    (data.clone(), check_array(copy, &CheckOptions::default()))
}

/// Whether `report` finds a tile of `data` (attribute 0's data file) whose
/// cells disagree with the min, max or sum its fragment metadata records:
/// the data file is named, not the metadata.
fn tile_metadata_reported(data: &str, report: &Report) -> bool {
    report.findings.iter().any(|f| {
        f.class == ErrorClass::Corrupt
            && f.file == data
            && (f.field.starts_with("tile_maxes[0] tile ")
                || f.field.starts_with("tile_mins[0] tile ")
                || f.field.starts_with("tile_sums[0] tile "))
    })
}

/// Dense tiles too: their metadata covers the cells inside the fragment's
/// non-empty domain, so a flipped written cell is reported and a flipped
/// padding cell (outside it, never read) is not.
#[test]
fn dense_bit_flips_in_written_cells_are_caught_and_padding_is_not_reported() {
    // Domain [0, 7], tiles of 4, cells 1..=5 written: the last tile holds
    // cells 4 and 5, then padding 6 and 7 at the end of the file.
    let padded: Vec<(PathBuf, usize)> = [
        ("dense.attr.int8", 1),
        ("dense.attr.int16", 2),
        ("dense.attr.int32", 4),
        ("dense.attr.int64", 8),
        ("dense.attr.float32", 4),
        ("dense.attr.float64", 8),
    ]
    .iter()
    .map(|(case, size)| (corpus("tiledb-2.30").join(case).join("array"), *size))
    .collect();
    // Rows 1-2 of a 4×4 domain in 2×2 tiles: the last byte is written data.
    let full: Vec<PathBuf> = RELEASES
        .iter()
        .map(|p| corpus(p).join("dense.basic.int32").join("array"))
        .collect();
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let mut n = 0;
    let mut flipped = |source: &Path, from_end: usize| {
        n += 1;
        flip_data_byte(source, &scratch.path().join(n.to_string()), from_end)
    };
    for (source, size) in &padded {
        // The top byte of cell 5, before the two padding cells.
        let (data, report) = flipped(source, 2 * size);
        assert!(
            tile_metadata_reported(&data, &report),
            "{}: the flipped cell 5 is not reported:\n{}",
            source.display(),
            show(&report)
        );
        // The top byte of padding cell 7.
        let (_, report) = flipped(source, 0);
        assert!(
            report.is_clean(),
            "{}: a flipped padding cell is reported:\n{}",
            source.display(),
            show(&report)
        );
    }
    for source in &full {
        let (data, report) = flipped(source, 0);
        assert!(
            tile_metadata_reported(&data, &report),
            "{}: the flipped last cell is not reported:\n{}",
            source.display(),
            show(&report)
        );
    }
}

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

/// A byte flipped inside a filtered data tile (bit width reduction, delta,
/// double delta: filters that decode whatever they are given) names the
/// data file and the tile's offset, never `__fragment_metadata.tdb`, whose
/// tiles are intact: whether the tile fails to decode or decodes to cells
/// that disagree with the min, max or sum recorded for them.
#[test]
fn a_flipped_byte_in_a_filtered_data_tile_names_the_data_file() {
    use tiledb_runtime::fragment::{footer_region, parse_metadata_file};
    use tiledb_runtime::schema::ArraySchema;
    let scratch = tempfile::tempdir().expect("a scratch folder");
    for (n, case) in [
        "sparse.filter.bit_width_reduction",
        "sparse.filter.double_delta",
        "sparse.filter.delta",
        "sparse.filter.zstd",
        "dense.filter.zstd",
    ]
    .iter()
    .enumerate()
    {
        let copy = scratch.path().join(n.to_string());
        copy_dir(&corpus("tiledb-2.30").join(case).join("array"), &copy);
        let mut files = Vec::new();
        files_of(&copy, &copy, &mut files);
        let data = files
            .iter()
            .find(|f| f.ends_with("/a0.tdb"))
            .expect("an a0.tdb")
            .clone();
        let meta = data.replace("a0.tdb", "__fragment_metadata.tdb");
        // The tiles of a0.tdb, from its fragment's metadata.
        let meta_bytes = std::fs::read(copy.join(&meta)).unwrap();
        let (head, _) = footer_region(&meta_bytes).unwrap();
        let schema_name = String::from_utf8(head.schema_name.unwrap()).unwrap();
        let schema_bytes = std::fs::read(copy.join("__schema").join(&schema_name)).unwrap();
        let schema = ArraySchema::from_file_bytes(&schema_name, &schema_bytes, None, true).unwrap();
        let fm = parse_metadata_file(&meta_bytes, &schema, None).unwrap();
        let offsets = &fm.tile_offsets[0];
        let path = copy.join(&data);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() - 5;
        bytes[at] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        let t = offsets.iter().rposition(|&o| o <= at as u64).unwrap();
        let (start, end) = (
            offsets[t],
            offsets.get(t + 1).copied().unwrap_or(bytes.len() as u64),
        );
        let report = check_array(&copy, &CheckOptions::default());
        assert!(
            report.findings.iter().all(|f| f.file != meta),
            "{case}: the fragment metadata is blamed for a data byte:\n{}",
            show(&report)
        );
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.class == ErrorClass::Corrupt
                    && f.file == data
                    && (start..end).contains(&f.offset)
                    && f.field.contains(&format!("tile {t}"))),
            "{case}: no finding in tile {t} of {data} (bytes {start}..{end}):\n{}",
            show(&report)
        );
        // Cells that decode but disagree with their record name the tile's start.
        for f in report
            .findings
            .iter()
            .filter(|f| f.field.starts_with("tile_m"))
        {
            assert_eq!(f.offset, start, "{case}: {f}");
        }
    }
}

/// TileDB builds a compression filter from the compressor byte of its
/// options, not from its filter type (`FilterCreate::deserialize`,
/// tiledb/sm/filter/filter_create.cc): a schema whose ZSTD filter is
/// stored under the GZIP type decodes as ZSTD. Check and the reader load
/// pipelines with the same function, so both read such an array.
#[test]
fn the_compressor_byte_picks_the_codec_for_check_and_reader() {
    use tiledb_runtime::format::generated as g;
    use tiledb_runtime::format::io::write_to_vec;
    use tiledb_runtime::tile::generic::{read_generic_tile, write_generic_tile};
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let copy = scratch.path().join("array");
    copy_dir(
        &corpus("tiledb-2.30")
            .join("sparse.filter.zstd")
            .join("array"),
        &copy,
    );
    let schema_dir = copy.join("__schema");
    let schema_path = std::fs::read_dir(&schema_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_file())
        .expect("a schema file");
    let bytes = std::fs::read(&schema_path).unwrap();
    let tile = read_generic_tile(&bytes, 0, None).unwrap();
    let mut stored: g::ArraySchema =
        tiledb_runtime::format::io::read_exact_from(&tile.payload, (), "ArraySchema").unwrap();
    let mut retyped = 0;
    for attribute in &mut stored.attributes {
        for f in &mut attribute.filters.filters {
            if let g::FilterOptions::CompressionOptions(o) = &f.options {
                assert_eq!(o.compressor, g::Compressor::Zstd);
                f.filter_type = g::FilterType::Gzip;
                retyped += 1;
            }
        }
    }
    assert!(retyped > 0, "no ZSTD filter to retype");
    let payload = write_to_vec(&stored, (), "ArraySchema").unwrap();
    let rewritten = write_generic_tile(&payload, tile.header.version, None).unwrap();
    std::fs::write(&schema_path, rewritten).unwrap();
    let report = check_array(&copy, &CheckOptions::default());
    assert!(report.is_clean(), "{}", show(&report));
    assert!(report.cells_read > 0, "the reader read nothing");
}
