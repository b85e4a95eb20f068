//! `tdb read --format arrow` (an IPC stream on standard output) and
//! `--format parquet --output FILE` must hold tiledb-py's `return_arrow=True`
//! table for the same read: pyarrow reads both outputs and compares each
//! column with tiledb-py's (`runtime/tests/arrow/oracle.py` reads it) by
//! Arrow equality — type and values.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn tiledb_python() -> Option<PathBuf> {
    [
        Some(workspace().join(".venv-tiledb/bin/python")),
        std::env::var_os("TILEDB_PY").map(PathBuf::from),
    ]
    .into_iter()
    .flatten()
    .find(|p| p.is_file())
}

/// Compares OUT.arrow (a stream) and OUT.parquet with tiledb-py's table of ARRAY.
const COMPARE: &str = r#"
import sys
sys.path.insert(0, sys.argv[1])
import oracle  # installs the pandas stand-in the .df indexer wants
import pyarrow as pa, pyarrow.parquet as pq
array, stream, parquet = sys.argv[2:5]
theirs, spec = oracle.table_for(array)
assert theirs is not None, spec
for what, ours in [("arrow", pa.ipc.open_stream(stream).read_all()), ("parquet", pq.read_table(parquet))]:
    assert ours.num_rows == theirs.num_rows, (what, ours.num_rows, theirs.num_rows)
    for name in theirs.column_names:
        a, b = ours.column(name).combine_chunks(), theirs.column(name).combine_chunks()
        if what == "parquet" and pa.types.is_dictionary(b.type):
            # Parquet keeps a dictionary's values, not the dictionary itself (pyarrow
            # reads string ones back as dictionaries, integer ones decoded).
            if pa.types.is_dictionary(a.type):
                a = a.dictionary_decode()
            b = b.dictionary_decode()
        assert a.equals(b), f"{what} {name}: {a.type} {a.to_pylist()} != TileDB {b.type} {b.to_pylist()}"
    print(what, array, theirs.column_names)
"#;

#[test]
fn arrow_and_parquet_output_equal_tiledb_py() {
    let Some(python) = tiledb_python() else {
        println!("skipped: no TileDB oracle (.venv-tiledb in the workspace, or $TILEDB_PY)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let corpus = workspace().join("conformance/corpus/tiledb-2.30");
    for case in [
        "sparse.enumeration",
        "sparse.attr.var_utf8.nullable.zstd",
        "sparse.attr.datetime_ns",
        "sparse.dim.string_ascii",
        "dense.basic.int32",
        "dense.attr.bool",
        "sparse.attr.char",
    ] {
        let array = corpus.join(case).join("array");
        let stream = dir.path().join(format!("{case}.arrow"));
        let parquet = dir.path().join(format!("{case}.parquet"));
        // tiledb-py reads sparse arrays in global order, dense ones row-major.
        let layout = if case.starts_with("sparse") {
            "global"
        } else {
            "row-major"
        };
        let out = Command::new(env!("CARGO_BIN_EXE_tdb"))
            .args(["read", "--format", "arrow", "--layout", layout])
            .arg(&array)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{case}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(&stream, &out.stdout).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_tdb"))
            .args([
                "read", "--format", "parquet", "--layout", layout, "--output",
            ])
            .arg(&parquet)
            .arg(&array)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{case}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let check = Command::new(&python)
            .args(["-c", COMPARE])
            .arg(workspace().join("runtime/tests/arrow"))
            .args([&array, &stream, &parquet])
            .env("PYTHONWARNINGS", "ignore")
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{case}: {}{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
    }
}

#[test]
fn parquet_needs_an_output_file() {
    let array = workspace().join("conformance/corpus/tiledb-2.30/dense.basic.int32/array");
    let out = Command::new(env!("CARGO_BIN_EXE_tdb"))
        .args(["read", "--format", "parquet"])
        .arg(&array)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("give --output FILE"));
}
