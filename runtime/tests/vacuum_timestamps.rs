//! Vacuum takes no time range, as in TileDB 2.30. TileDB once had
//! `sm.vacuum.timestamp_start` / `_end`; it removed them (TileDB pull
//! request 3214, 2022: every vacuum mode now lists the array over all time,
//! `FragmentConsolidator::vacuum` opening its `ArrayDirectory` over
//! `[0, UINT64_MAX]`), and a config still carrying them is not refused but
//! has no effect. So our `Array::vacuum` has no range either; this test
//! holds the two to it: four fragments consolidated as two time ranges,
//! then TileDB vacuums its copy with `sm.vacuum.timestamp_start/end`
//! covering only the first range, and we vacuum ours — both remove all four
//! consolidated fragments, and keep the same two, read the same by TileDB.
//! Without the oracle venv the test says so and checks our side only.

mod common;

use std::path::Path;

use common::tiledb_python;
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::consolidate::{ConsolidationConfig, ConsolidationMode};
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::schema::{AttributeSpec, DimensionSpec, SchemaBuilder};
use tiledb_runtime::write::{Column, Write};

/// The fragments' time spans, sorted: `[(t1, t2)]` from their names.
fn spans(array: &Path) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = std::fs::read_dir(array.join("__fragments"))
        .unwrap()
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let mut parts = name.trim_start_matches("__").split('_');
            let t1 = parts.next().unwrap().parse().unwrap();
            let t2 = parts.next().unwrap().parse().unwrap();
            (t1, t2)
        })
        .collect();
    out.sort_unstable();
    out
}

const TILEDB: &str = r#"
import json, sys, numpy as np, tiledb
uri = sys.argv[1]
dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 99), tile=10, dtype=np.int32))
tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=True, attrs=[tiledb.Attr("v", dtype=np.int32)]))
for t in (1, 2, 3, 4):
    with tiledb.open(uri, "w", timestamp=t) as A:
        A[np.array([t], dtype=np.int32)] = {"v": np.array([t * 10], dtype=np.int32)}
for lo, hi in ((1, 2), (3, 4)):
    tiledb.consolidate(uri, config=tiledb.Config({
        "sm.consolidation.timestamp_start": str(lo), "sm.consolidation.timestamp_end": str(hi)}))
tiledb.vacuum(uri, config=tiledb.Config({
    "sm.vacuum.mode": "fragments", "sm.vacuum.timestamp_start": "1", "sm.vacuum.timestamp_end": "2"}))
"#;

const TILEDB_READ: &str = r#"
import json, sys, tiledb
with tiledb.open(sys.argv[1]) as A:
    r = A[:]
    print(json.dumps({"d": r["d"].tolist(), "v": r["v"].tolist()}))
"#;

#[test]
fn vacuum_removes_every_consolidated_fragment_whatever_the_time_range() {
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("ours");
    let schema = SchemaBuilder::sparse()
        .dimension(DimensionSpec::new::<i32>("d", 0, 99, Some(10)))
        .attribute(AttributeSpec::new("v", Datatype::Int32));
    let array = Array::create_path(&ours, &schema).unwrap();
    for t in 1..=4i32 {
        let write = Write::sparse(vec![
            Column::from_values("d", &[t]),
            Column::from_values("v", &[t * 10]),
        ])
        .at(t as u64);
        array.write(&write).unwrap();
    }
    for (lo, hi) in [(1, 2), (3, 4)] {
        let config = ConsolidationConfig {
            timestamp_start: lo,
            timestamp_end: hi,
            ..Default::default()
        };
        Array::open_path(&ours, OpenOptions::default())
            .unwrap()
            .consolidate(&config)
            .unwrap();
    }
    assert_eq!(spans(&ours).len(), 6, "four fragments and two consolidated");
    Array::open_path(&ours, OpenOptions::default())
        .unwrap()
        .vacuum(ConsolidationMode::Fragments)
        .unwrap();
    assert_eq!(spans(&ours), vec![(1, 2), (3, 4)]);
    let Some(python) = tiledb_python() else {
        println!(
            "skipped the TileDB half: no oracle (.venv-tiledb in the workspace, or $TILEDB_PY)"
        );
        return;
    };
    let theirs = dir.path().join("theirs");
    let run = std::process::Command::new(&python)
        .args(["-c", TILEDB])
        .arg(&theirs)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(
        spans(&theirs),
        spans(&ours),
        "TileDB vacuumed with sm.vacuum.timestamp_start/end = [1, 2]"
    );
    let read = |array: &Path| {
        let out = std::process::Command::new(&python)
            .args(["-c", TILEDB_READ])
            .arg(array)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(read(&ours), read(&theirs));
}
