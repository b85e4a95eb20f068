//! Two writers at once lose nothing. Into the same array, at the same time:
//! two of our writers (threads, each with its own `Array` handle), TileDB
//! 2.30 in a child process (tiledb-py), each writing its own fragments and
//! metadata keys, while (on the sparse array) a consolidator consolidates
//! and vacuums fragments and array metadata over and over. Afterwards our
//! reader and TileDB's both read every cell of every writer's fragments and
//! every metadata key, equal to what the test wrote.
//!
//! Each writer's cells are its own (the writers' coordinates are disjoint),
//! so no answer depends on which of two racing fragments is newer: what is
//! checked is that nothing is lost or torn.
//!
//! The consolidation races only the sparse writers: a dense consolidation
//! fills the gaps of the union box of its fragments, so a dense fragment
//! stamped inside that time span but committed after the consolidation
//! listed the folder would lie under fill values — with TileDB's
//! consolidator as with ours (TileDB's docs ask for no writes inside the
//! consolidated time span). The dense array is consolidated once at the
//! end, and read again.
//!
//! Sizes: `WRITE_CONCURRENT_FRAGMENTS` fragments per writer (default 12) and
//! `WRITE_CONCURRENT_ROUNDS` repetitions (default 1); the longer run is in
//! README.md. Without the oracle venv only our two writers and our reader
//! run, and the test says so.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use common::tiledb_python;
use serde_json::{json, Value};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::consolidate::{ConsolidationConfig, ConsolidationMode};
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::metadata::MetadataValue;
use tiledb_runtime::schema::{AttributeSpec, DimensionSpec, SchemaBuilder};
use tiledb_runtime::write::{Column, Write};

/// Cells per fragment (dense: one tile).
const CELLS: usize = 16;
/// The writers: two of ours, then TileDB.
const WRITERS: usize = 3;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The first coordinate of writer `w`'s fragment `f`: fragments of all
/// writers interleave tile by tile.
fn start(w: usize, f: usize) -> i64 {
    ((f * WRITERS + w) * CELLS) as i64
}

/// The cells of writer `w`'s fragment `f`: coordinates, `a`, `s`.
fn cells(w: usize, f: usize) -> Vec<(i64, i64, String)> {
    (0..CELLS)
        .map(|i| {
            let d = start(w, f) + i as i64;
            (d, d * 3 + w as i64, format!("w{w}f{f}c{i}"))
        })
        .collect()
}

fn create(path: &Path, dense: bool, fragments: usize) -> Array {
    let hi = start(WRITERS - 1, fragments - 1) + CELLS as i64 - 1;
    let dim = DimensionSpec::new::<i64>("d", 0, hi, Some(CELLS as i64));
    let builder = if dense {
        SchemaBuilder::dense()
    } else {
        SchemaBuilder::sparse().capacity(8)
    };
    let builder = builder
        .dimension(dim)
        .attribute(AttributeSpec::new("a", Datatype::Int64))
        .attribute(AttributeSpec::new("s", Datatype::StringUtf8).var());
    Array::create_path(path, &builder).unwrap()
}

/// One of our writers: its own handle, a fragment then a metadata key each
/// time.
fn our_writer(path: &Path, dense: bool, w: usize, fragments: usize) {
    let array = Array::open_path(path, OpenOptions::default()).unwrap();
    for f in 0..fragments {
        let c = cells(w, f);
        let a: Vec<i64> = c.iter().map(|c| c.1).collect();
        let s: Vec<String> = c.iter().map(|c| c.2.clone()).collect();
        let mut columns = vec![
            Column::from_values("a", &a),
            Column::from_strings("s", Datatype::StringUtf8, &s),
        ];
        let write = if dense {
            let lo = i128::from(start(w, f));
            Write::dense(vec![(lo, lo + CELLS as i128 - 1)], columns)
        } else {
            let d: Vec<i64> = c.iter().map(|c| c.0).collect();
            columns.push(Column::from_values("d", &d));
            Write::sparse(columns)
        };
        array
            .write(&write)
            .unwrap_or_else(|e| panic!("writer {w}, fragment {f}: {e}"));
        array
            .put_metadata(
                &format!("w{w}_{f}"),
                MetadataValue::from_values(&[f as i64]).unwrap(),
            )
            .unwrap();
    }
}

/// TileDB's writer: waits for `go` on stdin (so the import is not raced),
/// then writes its fragments and metadata keys as ours do.
const TILEDB_WRITER: &str = r#"
import sys, numpy as np, tiledb
uri, dense, w, fragments, cells, writers = sys.argv[1], sys.argv[2] == "dense", *map(int, sys.argv[3:])
print("ready", flush=True)
sys.stdin.readline()
for f in range(fragments):
    lo = (f * writers + w) * cells
    d = np.arange(lo, lo + cells, dtype=np.int64)
    a = d * 3 + w
    s = np.array([f"w{w}f{f}c{i}" for i in range(cells)], dtype=object)
    with tiledb.open(uri, "w") as A:
        if dense:
            A[lo:lo + cells] = {"a": a, "s": s}
        else:
            A[d] = {"a": a, "s": s}
    with tiledb.open(uri, "w") as A:
        A.meta[f"w{w}_{f}"] = np.int64(f)
print("done", flush=True)
"#;

/// TileDB's reading: cells sorted by `d`, and the metadata.
const TILEDB_READER: &str = r#"
import json, sys, numpy as np, tiledb
with tiledb.open(sys.argv[1]) as A:
    if A.schema.sparse:
        r = A[:]
        order = np.argsort(r["d"], kind="stable")
        d = r["d"][order].tolist(); a = r["a"][order].tolist(); s = [r["s"][i] for i in order]
    else:
        ned = A.nonempty_domain()[0]
        r = A[ned[0]:ned[1] + 1]
        d = list(range(int(ned[0]), int(ned[1]) + 1)); a = r["a"].tolist(); s = list(r["s"])
    meta = {k: [int(v)] if not isinstance(v, tuple) else [int(x) for x in v] for k, v in A.meta.items()}
print(json.dumps({"d": d, "a": a, "s": [str(x) for x in s], "meta": meta}))
"#;

fn expected(fragments: usize, writers: &[usize]) -> Value {
    let mut all: Vec<(i64, i64, String)> = writers
        .iter()
        .flat_map(|&w| (0..fragments).flat_map(move |f| cells(w, f)))
        .collect();
    all.sort_by_key(|c| c.0);
    let meta: BTreeMap<String, Vec<i64>> = writers
        .iter()
        .flat_map(|&w| (0..fragments).map(move |f| (format!("w{w}_{f}"), vec![f as i64])))
        .collect();
    json!({
        "d": all.iter().map(|c| c.0).collect::<Vec<_>>(),
        "a": all.iter().map(|c| c.1).collect::<Vec<_>>(),
        "s": all.iter().map(|c| c.2.clone()).collect::<Vec<_>>(),
        "meta": meta,
    })
}

/// Our reading, shaped as TileDB's: sparse cells sorted by `d`; dense over
/// the non-empty domain (every cell was written, so no fill values).
fn our_read(path: &Path) -> Value {
    let array = Array::open_path(path, OpenOptions::default()).unwrap();
    let result = array.query().read().unwrap();
    let d = result.values::<i64>("d").unwrap();
    let a = result.values::<i64>("a").unwrap();
    let s: Vec<String> = result
        .strings("s")
        .unwrap()
        .map(|s| s.unwrap_or("<null>").to_string())
        .collect();
    let mut all: Vec<(i64, i64, String)> = d
        .iter()
        .zip(a.iter())
        .zip(s)
        .map(|((&d, &a), s)| (d, a, s))
        .collect();
    all.sort_by_key(|c| c.0);
    let meta: BTreeMap<String, Vec<i64>> = array
        .metadata()
        .unwrap()
        .entries
        .into_iter()
        .map(|(k, v)| {
            assert_eq!(v.datatype, Datatype::Int64, "metadata {k}");
            let values = v
                .bytes
                .chunks_exact(8)
                .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
                .collect();
            (k, values)
        })
        .collect();
    json!({
        "d": all.iter().map(|c| c.0).collect::<Vec<_>>(),
        "a": all.iter().map(|c| c.1).collect::<Vec<_>>(),
        "s": all.iter().map(|c| c.2.clone()).collect::<Vec<_>>(),
        "meta": meta,
    })
}

fn tiledb_read(python: &Path, path: &Path) -> Value {
    let run = Command::new(python)
        .args(["-c", TILEDB_READER])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "TileDB failed to read {}: {}",
        path.display(),
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&run.stdout).unwrap()
}

/// Consolidates and vacuums fragments, commits and array metadata until
/// `stop`; returns how many passes ran.
fn consolidator(path: &Path, stop: &AtomicBool) -> usize {
    let mut passes = 0;
    while !stop.load(Ordering::SeqCst) {
        for mode in [
            ConsolidationMode::Fragments,
            ConsolidationMode::ArrayMeta,
            ConsolidationMode::Commits,
        ] {
            let array = Array::open_path(path, OpenOptions::default()).unwrap();
            let config = ConsolidationConfig {
                mode,
                ..Default::default()
            };
            array
                .consolidate(&config)
                .unwrap_or_else(|e| panic!("consolidating {mode:?} during writes: {e}"));
            array
                .vacuum(mode)
                .unwrap_or_else(|e| panic!("vacuuming {mode:?} during writes: {e}"));
        }
        passes += 1;
    }
    passes
}

/// One round on one array kind: every writer at once, then both readers.
fn round(dense: bool, fragments: usize, python: Option<&Path>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("array");
    create(&path, dense, fragments);
    let mut tiledb = python.map(|python| {
        let mut child = Command::new(python)
            .args(["-c", TILEDB_WRITER])
            .arg(&path)
            .arg(if dense { "dense" } else { "sparse" })
            .args([2, fragments, CELLS, WRITERS].map(|n| n.to_string()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "ready");
        (child, lines)
    });
    let stop = AtomicBool::new(false);
    let passes = std::thread::scope(|scope| {
        let consolidating = (!dense).then(|| scope.spawn(|| consolidator(&path, &stop)));
        let ours: Vec<_> = (0..2)
            .map(|w| {
                let path = &path;
                scope.spawn(move || our_writer(path, dense, w, fragments))
            })
            .collect();
        if let Some((child, lines)) = tiledb.as_mut() {
            writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
            let done = lines.next().map(Result::unwrap_or_default);
            let status = child.wait().unwrap();
            assert!(
                status.success() && done.as_deref() == Some("done"),
                "TileDB's writer failed beside ours: {status}"
            );
        }
        for writer in ours {
            writer.join().expect("our writer");
        }
        stop.store(true, Ordering::SeqCst);
        consolidating.map(|c| c.join().expect("the consolidator"))
    });
    let writers: Vec<usize> = if python.is_some() {
        (0..WRITERS).collect()
    } else {
        vec![0, 1]
    };
    let want = expected(fragments, &writers);
    let kind = if dense { "dense" } else { "sparse" };
    let check = |when: &str| {
        assert_eq!(
            our_read(&path),
            want,
            "{kind} {when}: our reader misses cells or keys"
        );
        if let Some(python) = python {
            assert_eq!(
                tiledb_read(python, &path),
                want,
                "{kind} {when}: TileDB misses cells or keys"
            );
        }
    };
    check("after the concurrent writes");
    // Whatever the racing consolidations left, a last consolidation and
    // vacuum (of everything now committed) keeps every cell.
    let array = Array::open_path(&path, OpenOptions::default()).unwrap();
    for mode in ConsolidationMode::ALL {
        let config = ConsolidationConfig {
            mode,
            ..Default::default()
        };
        array.consolidate(&config).unwrap();
        array.vacuum(mode).unwrap();
    }
    check("consolidated and vacuumed afterwards");
    println!(
        "{kind}: {} writers × {fragments} fragments and metadata keys, {} consolidation passes \
         racing them; every cell and key read back by ours{}",
        writers.len(),
        passes.unwrap_or(0),
        if python.is_some() { " and TileDB" } else { "" }
    );
}

#[test]
fn two_writers_at_once_lose_nothing() {
    let fragments = env_number("WRITE_CONCURRENT_FRAGMENTS", 12).max(1);
    let rounds = env_number("WRITE_CONCURRENT_ROUNDS", 1);
    let python = tiledb_python();
    if python.is_none() {
        println!(
            "TileDB neither writes beside ours nor reads back: no oracle (.venv-tiledb in the \
             workspace, or $TILEDB_PY)"
        );
    }
    for _ in 0..rounds {
        for dense in [false, true] {
            round(dense, fragments, python.as_deref());
        }
    }
}
