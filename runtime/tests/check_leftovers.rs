//! `tdb check` judges what interrupted work leaves as readers do: a vacuum
//! stopped part way, temporary files of a killed write, a fragment folder
//! that is a link leading outside the array; and the tile metadata of
//! TileDB's lossy SCALE_FLOAT fields. Where TileDB's own reading decides
//! (it opens the array or it does not), tiledb-py is asked; those parts
//! skip with a printed reason when the oracle venv is absent.

mod common;
#[path = "common/stopped.rs"]
mod stopped;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{copy_dir, tiledb_python, workspace};
use stopped::{input, StoppingStorage, SCHEMA};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::check::{check_array, CheckOptions, Report};
use tiledb_runtime::consolidate::{
    consolidate_commits, consolidate_fragment_meta, consolidate_fragments,
};
use tiledb_runtime::read::{ReadQuery, ResultOrder};
use tiledb_runtime::storage::LocalStorage;
use tiledb_runtime::vacuum::{vacuum_commits, vacuum_fragments};
use tiledb_runtime::write::{create_array, write_fragment, write_metadata};
use tiledb_runtime::ErrorClass;

/// An array of our writer with one fragment per entry of `writes`.
fn write_array(root: &Path, writes: &[(u64, &[i32], &[i32])]) {
    let table: toml::Value = toml::from_str(SCHEMA).unwrap();
    let stored = tiledb_conformance::recipe::stored_schema(&table).unwrap();
    let storage = LocalStorage::new(root);
    let schema = create_array(&storage, &stored, 1, None).unwrap();
    for (t, coords, values) in writes {
        write_fragment(
            &storage,
            &schema,
            &input(*t, coords, values, |v| v % 20 == 0),
        )
        .unwrap();
    }
}

const WRITES: [(u64, &[i32], &[i32]); 3] = [
    (10, &[5, 1, 9], &[50, 10, 90]),
    (20, &[2, 7], &[20, 70]),
    (30, &[3], &[30]),
];

/// Every cell as `(d, a)` by our reader, sorted.
fn cells(root: &Path) -> Vec<(i32, i32)> {
    let array = Array::open_path(root, OpenOptions::default()).expect("the array opens");
    let query = ReadQuery {
        layout: ResultOrder::Global,
        ..ReadQuery::default()
    };
    let result = array.read(&query).expect("the array reads");
    let col = |name: &str| {
        result
            .dimensions
            .iter()
            .chain(&result.attributes)
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no column {name}"))
    };
    let (d, a) = (col("d"), col("a"));
    let mut out: Vec<(i32, i32)> = (0..d.len())
        .map(|i| {
            let v = |c: &tiledb_runtime::read::Column| {
                i32::from_le_bytes(c.cell(i).0.try_into().expect("4 bytes"))
            };
            (v(d), v(a))
        })
        .collect();
    out.sort();
    out
}

/// TileDB's reading of one folder: its sorted `(d, a)` cells, or the
/// error it raised.
type Reading = std::result::Result<Vec<(i32, i32)>, String>;

/// TileDB's reading of each folder (cells and metadata). `None` when the
/// oracle is absent.
fn tiledb_cells(dirs: &[PathBuf]) -> Option<Vec<Reading>> {
    let python = tiledb_python()?;
    let script = r#"
import sys, json, tiledb
out = []
for path in sys.argv[1:]:
    try:
        with tiledb.open(path) as A:
            r = A.query(attrs=["a"])[:]
            dict(A.meta.items())
            out.append({"ok": sorted([int(d), int(a)] for d, a in zip(r["d"], r["a"]))})
    except Exception as e:
        out.append({"err": str(e)})
print(json.dumps(out))
"#;
    let run = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(dirs)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "tiledb-py failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let answers: Vec<serde_json::Value> = serde_json::from_slice(&run.stdout).unwrap();
    Some(
        answers
            .into_iter()
            .map(|a| match a.get("ok") {
                Some(cells) => Ok(cells
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| (p[0].as_i64().unwrap() as i32, p[1].as_i64().unwrap() as i32))
                    .collect()),
                None => Err(a["err"].as_str().unwrap_or_default().to_string()),
            })
            .collect(),
    )
}

fn show(report: &Report) -> String {
    let mut s = String::new();
    for f in &report.findings {
        s += &format!("  finding {f}\n");
    }
    for n in &report.notes {
        s += &format!("  note    {n}\n");
    }
    s
}

/// Three fragments consolidated into one, commits consolidated (and, with
/// `commits_vacuumed`, the single commit files removed, so that only the
/// `.con` file commits them); the cells before any vacuum.
fn consolidated_array(root: &Path, commits_vacuumed: bool) -> Vec<(i32, i32)> {
    write_array(root, &WRITES);
    let shared: std::sync::Arc<dyn tiledb_runtime::storage::Storage> =
        std::sync::Arc::new(LocalStorage::new(root));
    let written = consolidate_fragments(shared, &Default::default(), None).unwrap();
    assert!(!written.is_empty(), "a consolidation");
    let storage = LocalStorage::new(root);
    consolidate_commits(&storage).unwrap().expect("a .con file");
    if commits_vacuumed {
        vacuum_commits(&storage).unwrap();
    }
    cells(root)
}

#[test]
fn a_vacuum_stopped_part_way_leaves_notes_that_readers_agree_with() {
    let work = tempfile::tempdir().unwrap();
    let mut states = Vec::new();
    let mut expected = Vec::new();
    for commits_vacuumed in [true, false] {
        // How many changes the whole vacuum makes.
        let full = work.path().join(format!("full-{commits_vacuumed}"));
        consolidated_array(&full, commits_vacuumed);
        let counting = StoppingStorage::new(&full, u64::MAX, true);
        assert_eq!(vacuum_fragments(&counting).unwrap(), 3);
        let changes = counting.changes();
        let report = check_array(&full, &CheckOptions::default());
        assert!(report.is_clean(), "full vacuum:\n{}", show(&report));

        for budget in 0..changes {
            let root = work
                .path()
                .join(format!("stopped-{commits_vacuumed}-{budget}"));
            let before = consolidated_array(&root, commits_vacuumed);
            let stopping = StoppingStorage::new(&root, budget, true);
            let err = vacuum_fragments(&stopping).expect_err("the vacuum must stop");
            assert!(err.to_string().contains("simulated crash"), "{err}");
            let what = format!("commits vacuumed {commits_vacuumed}, stopped after {budget}");
            assert_eq!(cells(&root), before, "{what}: our reader");
            let report = check_array(&root, &CheckOptions::default());
            println!("{what}:\n{}", show(&report));
            assert!(report.is_clean(), "{what}:\n{}", show(&report));
            assert!(report.cells_read > 0, "{what}: the full read ran");
            states.push(root);
            expected.push(before);
        }
    }
    // What the stops leave, among them: a half-removed fragment folder
    // whose commit an `.ign` file drops, and `.vac` files listing
    // fragments already gone.
    let notes: Vec<String> = states
        .iter()
        .flat_map(|root| check_array(root, &CheckOptions::default()).notes)
        .map(|n| n.to_string())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains(".ign") && n.contains("uncommitted")),
        "{notes:#?}"
    );
    assert!(notes.iter().any(|n| n.contains("are gone")), "{notes:#?}");
    let Some(theirs) = tiledb_cells(&states) else {
        println!("skipped TileDB's reading: no TileDB oracle (.venv-tiledb in the workspace, or $TILEDB_PY)");
        return;
    };
    for ((root, ours), theirs) in states.iter().zip(&expected).zip(theirs) {
        assert_eq!(
            theirs.as_ref(),
            Ok(ours),
            "TileDB reading {}",
            root.display()
        );
    }
}

/// The first fragment folder of `__fragments/`.
fn fragment_dirs(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join("__fragments"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn temporary_files_are_notes_where_tiledb_ignores_them_and_findings_where_it_cannot_open() {
    let work = tempfile::tempdir().unwrap();
    let base = work.path().join("base");
    write_array(&base, &WRITES[..2]);
    let storage = LocalStorage::new(&base);
    write_metadata(&storage, Vec::new(), 40, None).unwrap();
    consolidate_fragment_meta(&storage, None).unwrap();
    let before = cells(&base);
    let fragment = fragment_dirs(&base)[0].clone();
    let tmp = ".__5_5_0123456789abcdef0123456789abcdef_22.wrt.1a2b3c.tmp";
    // (place, TileDB opens the array)
    let places: Vec<(String, bool)> = vec![
        (tmp.to_string(), true),
        (format!("__commits/{tmp}"), true),
        (format!("__fragments/{tmp}"), true),
        (format!("__fragments/{fragment}/.a0.tdb.1a2b3c.tmp"), true),
        (format!("__schema/__enumerations/{tmp}"), true),
        (
            "__schema/__5_5_0123456789abcdef0123456789abcdef.tmp".into(),
            false,
        ),
        (format!("__meta/{tmp}"), false),
        (format!("__fragment_meta/{tmp}"), false),
    ];
    let mut dirs = Vec::new();
    for (i, (place, opens)) in places.iter().enumerate() {
        let root = work.path().join(format!("tmp-{i}"));
        copy_dir(&base, &root);
        std::fs::write(root.join(place), b"partial").unwrap();
        let report = check_array(&root, &CheckOptions::default());
        println!("{place}:\n{}", show(&report));
        if *opens {
            assert!(report.is_clean(), "{place}:\n{}", show(&report));
            assert!(
                report
                    .notes
                    .iter()
                    .any(|n| n.file == *place && n.message.contains("temporary")),
                "{place}: a note names the file\n{}",
                show(&report)
            );
            assert_eq!(cells(&root), before, "{place}: our reader");
        } else {
            assert_eq!(report.findings.len(), 1, "{place}:\n{}", show(&report));
            let f = &report.findings[0];
            assert_eq!(f.file, *place);
            assert_eq!(f.class, ErrorClass::Corrupt);
            assert_eq!(f.field, "file name");
            assert!(f.message.contains("TileDB cannot"), "{f}");
        }
        dirs.push(root);
    }
    let Some(theirs) = tiledb_cells(&dirs) else {
        println!("skipped TileDB's reading: no TileDB oracle (.venv-tiledb in the workspace, or $TILEDB_PY)");
        return;
    };
    for ((place, opens), theirs) in places.iter().zip(theirs) {
        if *opens {
            assert_eq!(theirs, Ok(before.clone()), "TileDB with {place}");
        } else {
            assert!(theirs.is_err(), "TileDB opens the array with {place}");
        }
    }
}

#[test]
fn a_fragment_linked_from_outside_is_one_finding_and_the_rest_is_checked() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("array");
    write_array(&root, &WRITES[..2]);
    let names = fragment_dirs(&root);
    let (kept, linked) = (&names[0], &names[1]);
    // The second fragment moves out and a link leads back to it.
    let outside = work.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let moved = outside.join(linked);
    std::fs::rename(root.join("__fragments").join(linked), &moved).unwrap();
    std::os::unix::fs::symlink(&moved, root.join("__fragments").join(linked)).unwrap();
    // A byte of the other fragment's data flipped: its tile metadata
    // no longer agrees.
    let data = root.join("__fragments").join(kept).join("a0.tdb");
    let mut bytes = std::fs::read(&data).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&data, bytes).unwrap();

    let report = check_array(&root, &CheckOptions::default());
    println!("{}", show(&report));
    let escapes: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.message.contains("outside"))
        .collect();
    assert_eq!(escapes.len(), 1, "{}", show(&report));
    assert_eq!(escapes[0].file, format!("__fragments/{linked}"));
    assert_eq!(escapes[0].class, ErrorClass::Corrupt);
    assert_eq!(escapes[0].field, "path");
    // The tile whose cells disagree with their record names the data file.
    let kept_data = format!("__fragments/{kept}/a0.tdb");
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.file == kept_data && f.field.starts_with("tile_")),
        "the flipped byte of the other fragment is found\n{}",
        show(&report)
    );
    // Nothing else: the escape is not also a missing fragment.
    assert_eq!(report.findings.len(), 2, "{}", show(&report));
    // Nothing outside was read or changed.
    assert!(moved.join("__fragment_metadata.tdb").is_file());
    // Readers refuse the array.
    assert!(Array::open_path(&root, OpenOptions::default())
        .and_then(|a| a.read(&ReadQuery::default()))
        .is_err());
}

/// Arrays TileDB writes with SCALE_FLOAT on float attributes, whose values
/// the filter rounds: `<name>` → folder.
fn scale_float_arrays(python: &Path, out: &Path) -> BTreeMap<String, PathBuf> {
    let script = r#"
import sys, os, numpy as np, tiledb
out = sys.argv[1]
rng = np.random.default_rng(7)
cases = {
    # name: (sparse, factor, offset, bytewidth, compressed)
    "dense_w2": (False, 0.1, 0.5, 2, False),
    "sparse_w4": (True, 0.1, 0.5, 4, False),
    "dense_w8_zstd": (False, 0.003, -1.0, 8, True),
    "sparse_w1": (True, 0.1, 0.5, 1, False),
    # Values past what one byte holds at this step: TileDB stores them
    # wrapped; their tiles' min, max and sum cannot be compared.
    "sparse_w1_out_of_range": (True, 0.01, 0.0, 1, False),
}
for name, (sparse, factor, offset, width, zstd) in cases.items():
    path = os.path.join(out, name)
    filters = [tiledb.FloatScaleFilter(factor, offset, width)]
    if zstd:
        filters.append(tiledb.ZstdFilter())
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 99), tile=10, dtype=np.int32))
    attrs = [
        tiledb.Attr("a", dtype=np.float64, filters=tiledb.FilterList(filters)),
        tiledb.Attr("b", dtype=np.float32, nullable=True,
                    filters=tiledb.FilterList([tiledb.FloatScaleFilter(0.25, 0.0, width)])),
    ]
    tiledb.Array.create(path, tiledb.ArraySchema(domain=dom, sparse=sparse, attrs=attrs, capacity=7))
    for t, (lo, hi) in enumerate([(3, 40), (35, 61)], start=1):
        n = hi - lo
        a = rng.uniform(-10, 10, n)
        b = np.ma.masked_array(rng.uniform(-8, 8, n).astype(np.float32), mask=rng.random(n) < 0.3)
        with tiledb.open(path, "w", timestamp=t) as A:
            if sparse:
                A[np.arange(lo, hi, dtype=np.int32)] = {"a": a, "b": b}
            else:
                A[lo:hi] = {"a": a, "b": b}
        with tiledb.open(path) as A:
            back = A.multi_index[lo:hi - 1]["a"]
        assert not np.array_equal(back, a), "the filter must round"
    print(name)
"#;
    let run = Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "tiledb-py failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(|name| (name.to_string(), out.join(name)))
        .collect()
}

#[test]
fn scale_float_arrays_of_tiledb_check_clean_and_flipped_cells_are_still_found() {
    let Some(python) = tiledb_python() else {
        println!("skipped: no TileDB oracle (.venv-tiledb in the workspace, or $TILEDB_PY)");
        return;
    };
    let _ = workspace();
    let work = tempfile::tempdir().unwrap();
    let arrays = scale_float_arrays(&python, work.path());
    assert_eq!(arrays.len(), 5);
    for (name, root) in &arrays {
        let report = check_array(root, &CheckOptions::default());
        println!("{name}:\n{}", show(&report));
        assert!(report.is_clean(), "{name}:\n{}", show(&report));
        assert!(
            report.tile_metadata_checked > 0 && report.cells_read > 0,
            "{name}"
        );
        // Each lossy field is named in a note saying how it is compared.
        assert!(
            report
                .notes
                .iter()
                .filter(|n| n.message.contains("SCALE_FLOAT"))
                .count()
                >= 2,
            "{name}:\n{}",
            show(&report)
        );
        if name.contains("out_of_range") {
            assert!(
                report
                    .notes
                    .iter()
                    .any(|n| n.message.contains("not compared")),
                "{name}:\n{}",
                show(&report)
            );
        }
    }
    // A flipped bit in an unchecksummed, uncompressed SCALE_FLOAT tile: the
    // cell read back moves by many steps, past what rounding explains.
    for name in ["dense_w2", "sparse_w4"] {
        let copy = work.path().join(format!("{name}-flipped"));
        copy_dir(&arrays[name], &copy);
        let fragment = fragment_dirs(&copy)[0].clone();
        let data = copy.join("__fragments").join(&fragment).join("a0.tdb");
        let mut bytes = std::fs::read(&data).unwrap();
        // The high byte of the last quantized cell.
        let last = bytes.len() - 1;
        bytes[last] ^= 0x40;
        std::fs::write(&data, bytes).unwrap();
        let report = check_array(&copy, &CheckOptions::default());
        println!("{name} flipped:\n{}", show(&report));
        let data = format!("__fragments/{fragment}/a0.tdb");
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.file == data && f.field.starts_with("tile_") && f.field.contains("[0]")),
            "{name}: the flip is found\n{}",
            show(&report)
        );
    }
}

#[test]
fn temporary_files_of_a_group_are_judged_as_tiledb_opens_it() {
    let work = tempfile::tempdir().unwrap();
    let case = workspace().join("conformance/cases/group.members.toml");
    let base_out = work.path().join("base");
    tiledb_conformance::recipe::replay_case(&std::fs::read_to_string(case).unwrap(), &base_out)
        .unwrap();
    let tmp = ".__5_5_0123456789abcdef0123456789abcdef_2.1a2b3c.tmp";
    // (place inside the group folder, TileDB opens the group)
    let places = [(tmp.to_string(), true), (format!("__group/{tmp}"), false)];
    let mut groups = Vec::new();
    for (i, (place, opens)) in places.iter().enumerate() {
        let out = work.path().join(format!("tmp-{i}"));
        copy_dir(&base_out, &out);
        let group = out.join("group");
        std::fs::write(group.join(place), b"partial").unwrap();
        let report = check_array(&group, &CheckOptions::default());
        if *opens {
            assert!(report.is_clean(), "{place}:\n{}", show(&report));
            assert!(
                report.notes.iter().any(|n| n.file == *place),
                "{place}: a note names the file\n{}",
                show(&report)
            );
        } else {
            assert_eq!(report.findings.len(), 1, "{place}:\n{}", show(&report));
            assert_eq!(report.findings[0].file, *place);
            assert!(report.findings[0]
                .message
                .contains("TileDB cannot open the group"));
        }
        groups.push(group);
    }
    let Some(python) = tiledb_python() else {
        println!("skipped TileDB's reading: no TileDB oracle (.venv-tiledb in the workspace, or $TILEDB_PY)");
        return;
    };
    let script = r#"
import sys, tiledb
for path in sys.argv[1:]:
    try:
        with tiledb.Group(path) as g:
            print(len(list(g)))
    except Exception as e:
        print("err")
"#;
    let run = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(&groups)
        .output()
        .unwrap();
    let answers = String::from_utf8_lossy(&run.stdout).to_string();
    let answers: Vec<&str> = answers.lines().collect();
    for ((place, opens), answer) in places.iter().zip(answers) {
        assert_eq!(
            answer != "err",
            *opens,
            "TileDB opens the group with {place}: {answer}"
        );
    }
}
