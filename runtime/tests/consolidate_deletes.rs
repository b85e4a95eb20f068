//! Sparse consolidation with deletes, checked at the level of the stored
//! delete metadata: the consolidated fragment's cells (coordinates, values,
//! `t`, `dt`, `dci`, in stored order) and its processed conditions must be
//! what TileDB stores for the same recipe.
//!
//! 1. For each delete-and-consolidate case, our replay is compared with
//!    TileDB's arrays of the corpus (2.30, format 22; 2.13, format 16).
//! 2. Live, when the oracle venv is present: TileDB 2.30 finishes a recipe
//!    on an array whose consolidated fragment (with delete metadata) our
//!    writer made. Its second consolidation reads our `dt`/`dci` as an input
//!    fragment's delete metadata (keeping our `dt`, renumbering our `dci`
//!    through our processed conditions), so a wrong value of ours would show
//!    in its output, which must equal ours for the whole recipe. Without the
//!    venv that half prints why it skips.

mod common;

use common::{tiledb_python, workspace};

use std::path::Path;
use std::process::Command;

use tiledb_runtime::array::{Array, OpenOptions};

use tiledb_runtime::storage::LocalStorage;

use tiledb_runtime::directory::TimestampedName;
use tiledb_runtime::fragment::Field;
use tiledb_runtime::read::tiles::load_tiles;
use tiledb_runtime::write::fragment::{write_fragment_named, Column, DeleteMeta, FragmentInput};

const CASES: &[&str] = &[
    "sparse.delete.consolidated",
    "sparse.delete.consolidated.two_deletes",
    "sparse.delete.consolidated.twice",
];

/// A commit marker without its random label: `__commits/<t1>_<t2>.<ext>`.
fn unlabelled(marker: &str) -> String {
    let (dir, file) = marker.rsplit_once('/').unwrap_or(("", marker));
    let (stem, ext) = file.split_once('.').unwrap_or((file, ""));
    let parts: Vec<&str> = stem.trim_start_matches("__").split('_').collect();
    format!("{dir}/{}_{}.{ext}", parts[0], parts[1])
}

/// What the consolidated fragment with delete metadata stores.
#[derive(Debug, PartialEq)]
struct DeleteMetaFragment {
    /// Its name's `t1_t2`.
    span: String,
    processed: Vec<String>,
    /// Per cell in stored order: coordinate bytes, attribute bytes, t, dt, dci.
    cells: Vec<(String, String, u64, u64, u64)>,
}

fn u64_of(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().unwrap())
}

/// The fragments of `root` that have delete metadata, newest last.
fn delete_meta_fragments(root: &Path) -> Vec<DeleteMetaFragment> {
    let array = Array::open_path(
        root,
        OpenOptions {
            timestamp_start: 0,
            timestamp_end: u64::MAX,
            key: None,
        },
    )
    .unwrap();
    let storage = array.storage();
    let mut out = Vec::new();
    for f in array.fragments().iter().filter(|f| f.has_delete_meta) {
        let tiles: Vec<u64> = (0..f.tile_num).collect();
        let load = |field| load_tiles(storage, f, field, &tiles, 0, None).unwrap();
        let (d, x, t, dt, dci) = (
            load(Field::Dimension(0)),
            load(Field::Attribute(0)),
            load(Field::Timestamps),
            load(Field::DeleteTimestamps),
            load(Field::DeleteConditionIndex),
        );
        let mut cells = Vec::new();
        for (slot, &tile) in tiles.iter().enumerate() {
            for c in 0..f.cell_num(tile, 0) {
                cells.push((
                    hex(d[slot].cell(c)),
                    hex(x[slot].cell(c)),
                    u64_of(t[slot].cell(c)),
                    u64_of(dt[slot].cell(c)),
                    u64_of(dci[slot].cell(c)),
                ));
            }
        }
        let (t1, t2) = f.name.timestamp_range();
        out.push(DeleteMetaFragment {
            span: format!("{t1}_{t2}"),
            processed: f
                .processed_conditions(storage)
                .unwrap()
                .iter()
                .map(|m| unlabelled(m))
                .collect(),
            cells,
        });
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn replay_ours(id: &str, steps: Option<usize>, out: &Path) {
    let text =
        std::fs::read_to_string(workspace().join(format!("conformance/cases/{id}.toml"))).unwrap();
    let text = match steps {
        None => text,
        Some(n) => {
            let mut case: toml::Table = toml::from_str(&text).unwrap();
            if let Some(toml::Value::Array(s)) = case.get_mut("steps") {
                s.truncate(n);
            }
            toml::to_string(&case).unwrap()
        }
    };
    tiledb_conformance::recipe::replay_case(&text, out).unwrap();
}

#[test]
fn consolidated_delete_metadata_matches_tiledbs_corpus() {
    let ws = workspace();
    let mut compared = 0;
    for id in CASES {
        let out = tempfile::tempdir().unwrap();
        replay_ours(id, None, out.path());
        let ours = delete_meta_fragments(&out.path().join("array"));
        assert!(!ours.is_empty(), "{id}: no fragment with delete metadata");
        // `tdb check` finds nothing wrong in our array (dt/dci included).
        let report = tiledb_runtime::check::check_array(
            &out.path().join("array"),
            &tiledb_runtime::check::CheckOptions::default(),
        );
        assert!(report.is_clean(), "{id}: {:?}", report.findings);
        assert!(report.files_checked > 0 && report.cells_read > 0, "{id}");
        for producer in ["tiledb-2.30", "tiledb-2.13"] {
            let theirs_root = ws.join(format!("conformance/corpus/{producer}/{id}/array"));
            if !theirs_root.is_dir() {
                println!("{id}: no {producer} array in the corpus");
                continue;
            }
            let theirs = delete_meta_fragments(&theirs_root);
            println!("{id} ({producer}): {theirs:?}");
            assert_eq!(ours, theirs, "{id}: ours vs {producer}");
            compared += 1;
        }
    }
    assert_eq!(compared, 2 * CASES.len());
}

/// The steps of `sparse.delete.consolidated.twice` up to its first
/// consolidation and vacuum.
const TWICE_FIRST_ROUND: usize = 5;

#[test]
fn tiledb_consolidates_our_delete_metadata_as_its_own() {
    let Some(python) = tiledb_python() else {
        println!("skipped: no TileDB oracle (.venv-tiledb in the workspace, or $TILEDB_PY)");
        return;
    };
    let id = "sparse.delete.consolidated.twice";
    let ws = workspace();
    let ours = tempfile::tempdir().unwrap();
    replay_ours(id, None, ours.path());
    let ours = delete_meta_fragments(&ours.path().join("array"));

    // Our writer up to the first consolidation, then TileDB for the rest.
    let mixed = tempfile::tempdir().unwrap();
    replay_ours(id, Some(TWICE_FIRST_ROUND), mixed.path());
    let first = delete_meta_fragments(&mixed.path().join("array"));
    assert_eq!(
        first.len(),
        1,
        "one consolidated fragment after the first round"
    );
    let script = format!(
        r#"
import sys, tomllib
sys.path.insert(0, {scripts:?})
import tdbcase, tiledb
with open({case:?}, "rb") as f:
    case = tomllib.load(f)
case["steps"] = case["steps"][{skip}:]
# The array exists already: our writer made it.
tiledb.Array.create = lambda *args, **kwargs: None
tdbcase.replay(case, {out:?})
"#,
        scripts = ws.join("conformance/scripts").to_string_lossy(),
        case = ws
            .join(format!("conformance/cases/{id}.toml"))
            .to_string_lossy(),
        skip = TWICE_FIRST_ROUND,
        out = mixed.path().to_string_lossy(),
    );
    let run = Command::new(&python)
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "TileDB failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let theirs = delete_meta_fragments(&mixed.path().join("array"));
    println!("ours:  {ours:?}\nmixed: {theirs:?}");
    assert_eq!(ours, theirs);
    // The second round did renumber: the back-dated delete comes first.
    let last = theirs.last().unwrap();
    assert_eq!(last.processed.len(), first[0].processed.len() + 2);
    assert!(last.cells.iter().any(|c| c.4 != u64::MAX && c.4 > 0));
}

/// An array from the first write of `sparse.delete.consolidated`, and its
/// schema.
fn one_write() -> (tempfile::TempDir, tiledb_runtime::schema::ArraySchema) {
    let out = tempfile::tempdir().unwrap();
    replay_ours("sparse.delete.consolidated", Some(1), out.path());
    let array = Array::open_path(out.path().join("array"), OpenOptions::default()).unwrap();
    let schema = array.schema().clone();
    (out, schema)
}

fn two_cells(dt: Vec<u64>, dci: Vec<u64>) -> FragmentInput {
    FragmentInput {
        dims: vec![Column::from_values("d", &[40i32, 41])],
        attrs: vec![Column::from_values("a", &[40f64, 41.0])],
        timestamps: Some(vec![40, 41]),
        delete_meta: Some(DeleteMeta {
            timestamps: dt,
            condition_indexes: dci,
        }),
        ..Default::default()
    }
}

#[test]
fn the_writer_refuses_delete_metadata_that_does_not_fit() {
    let (out, schema) = one_write();
    let storage = LocalStorage::new(out.path().join("array"));
    let name = TimestampedName::generate(40, 41, Some(22), None).unwrap();
    let marker = ["__commits/__30_30_0123456789abcdef0123456789abcdef_22.del".to_string()];
    let cases = [
        // An index past the processed conditions.
        (
            two_cells(vec![30, u64::MAX], vec![1, u64::MAX]),
            &marker[..],
        ),
        // No processed conditions at all.
        (two_cells(vec![30, u64::MAX], vec![0, u64::MAX]), &[][..]),
        // One dt value for two cells.
        (two_cells(vec![30], vec![0, u64::MAX]), &marker[..]),
    ];
    for (input, processed) in cases {
        let err = write_fragment_named(&storage, &schema, &input, &name, processed).unwrap_err();
        assert_eq!(err.class().name(), "usage", "{err}");
    }
    let mut dense = two_cells(vec![u64::MAX, u64::MAX], vec![u64::MAX, u64::MAX]);
    dense.timestamps = None;
    dense.dims.clear();
    dense.subarray = Some(vec![(40, 41)]);
    let err = write_fragment_named(&storage, &schema, &dense, &name, &marker).unwrap_err();
    assert_eq!(err.class().name(), "usage", "{err}");
}

/// An input whose delete metadata names a delete commit the array does not
/// hold: TileDB would renumber it to index 0 (a lookup that inserts a
/// default); here consolidation stops with an error naming the marker.
#[test]
fn consolidation_refuses_an_input_naming_an_unknown_delete() {
    let (out, schema) = one_write();
    let root = out.path().join("array");
    let storage = LocalStorage::new(&root);
    let name = TimestampedName::generate(40, 41, Some(22), None).unwrap();
    let marker = "__commits/__30_30_0123456789abcdef0123456789abcdef_22.del".to_string();
    let input = two_cells(vec![30, u64::MAX], vec![0, u64::MAX]);
    write_fragment_named(&storage, &schema, &input, &name, &[marker]).unwrap();
    let shared: std::sync::Arc<dyn tiledb_runtime::storage::Storage> = std::sync::Arc::new(storage);
    let err = tiledb_runtime::consolidate::consolidate_fragments(shared, &Default::default(), None)
        .unwrap_err();
    assert_eq!(err.class().name(), "corrupt", "{err}");
    assert!(err.to_string().contains("__30_30_0123"), "{err}");
}
