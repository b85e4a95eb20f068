//! `tdb read --format arrow` (an IPC stream on standard output) and
//! `--format parquet --output FILE` must hold tiledb-py's `return_arrow=True`
//! table for the same read: pyarrow reads both outputs and compares each
//! column with tiledb-py's (`runtime/tests/arrow/oracle.py` reads it) by
//! Arrow equality — type and values.

mod support;

use std::process::Command;
use support::{corpus_array, tdb_command, tiledb_python, workspace};

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
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for case in [
        "sparse.enumeration",
        "sparse.attr.var_utf8.nullable.zstd",
        "sparse.attr.datetime_ns",
        "sparse.dim.string_ascii",
        "dense.basic.int32",
        "dense.attr.bool",
        "sparse.attr.char",
    ] {
        let array = corpus_array(case);
        let stream = dir.path().join(format!("{case}.arrow"));
        let parquet = dir.path().join(format!("{case}.parquet"));
        // tiledb-py reads sparse arrays in global order, dense ones row-major.
        let layout = if case.starts_with("sparse") {
            "global"
        } else {
            "row-major"
        };
        let out = tdb_command()
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
        let out = tdb_command()
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
    let array = corpus_array("dense.basic.int32");
    let out = tdb_command()
        .args(["read", "--format", "parquet"])
        .arg(&array)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("give --output FILE"));
}
