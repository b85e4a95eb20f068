//! `tdb write --input` from Arrow IPC and Parquet files written by pyarrow
//! from TileDB's own Arrow tables (tiledb-py `return_arrow=True`), and
//! from our CSV and JSON: TileDB reads back what it gave; and bad Arrow
//! and CSV input exits 2 with the array untouched. (The corpus round trip through our own Arrow and Parquet
//! output is in `create_write.rs`.)

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use arrow_array::types::Int8Type;
use arrow_array::{ArrayRef, DictionaryArray, Float64Array, Int16Array, Int32Array, RecordBatch};
use arrow_array::{StringArray, UInt8Array};
use support::{corpus_array, files, ok, tdb, tiledb_python, workspace};

/// A fresh array at `new` with the schema of `array` (`info → create`).
fn create_like(array: &Path, new: &Path, dir: &Path) {
    let info = ok(&[Path::new("info"), Path::new("--json"), array]);
    let doc = dir.join(format!(
        "{}.schema.json",
        new.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&doc, info).unwrap();
    ok(&[Path::new("create"), new, Path::new("--schema"), &doc]);
}

/// `export ARRAY STREAM PARQUET`: TileDB's Arrow table of ARRAY written by
/// pyarrow as an IPC file and a Parquet file. `compare A B`: TileDB's
/// tables of A and B are equal.
const ORACLE: &str = r#"
import sys
sys.path.insert(0, sys.argv[1])
import oracle
import pyarrow as pa, pyarrow.parquet as pq
mode, a, b = sys.argv[2], sys.argv[3], sys.argv[4]
table, spec = oracle.table_for(a)
assert table is not None and not spec["dropped"], spec
if mode == "export":
    with pa.ipc.new_file(b, table.schema) as w:
        w.write_table(table)
    pq.write_table(table, sys.argv[5])
else:
    theirs, _ = oracle.table_for(b)
    assert theirs.num_rows == table.num_rows, (theirs.num_rows, table.num_rows)
    for name in table.column_names:
        x, y = table.column(name).combine_chunks(), theirs.column(name).combine_chunks()
        assert x.equals(y), f"{name}: {x.to_pylist()} != {y.to_pylist()}"
    print("equal", a, b, table.column_names)
"#;

fn oracle(python: &Path, args: &[&Path]) {
    let out = Command::new(python)
        .args(["-c", ORACLE])
        .arg(workspace().join("runtime/tests/arrow"))
        .args(args)
        .env("PYTHONWARNINGS", "ignore")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn pyarrow_files_of_tiledb_tables_written_through_tdb_read_back_equal_by_tiledb() {
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
    ] {
        let array = corpus_array(case);
        let ipc = dir.path().join(format!("{case}.arrow"));
        let parquet = dir.path().join(format!("{case}.parquet"));
        oracle(&python, &[Path::new("export"), &array, &ipc, &parquet]);
        // And our own CSV and JSON of the array (no pyarrow form of TileDB's table).
        let csv = dir.path().join(format!("{case}.csv"));
        let text = ok(&[
            Path::new("read"),
            &array,
            Path::new("--format"),
            Path::new("csv"),
        ]);
        std::fs::write(&csv, text).unwrap();
        let json = dir.path().join(format!("{case}.json"));
        let text = ok(&[
            Path::new("read"),
            &array,
            Path::new("--format"),
            Path::new("json"),
        ]);
        std::fs::write(&json, text).unwrap();
        // CSV cannot tell an empty string from a null (an empty field of a
        // nullable attribute is null): this case has both, so not via CSV.
        let inputs = if case == "sparse.attr.var_utf8.nullable.zstd" {
            vec![&ipc, &parquet, &json]
        } else {
            vec![&ipc, &parquet, &csv, &json]
        };
        for input in inputs {
            let new = dir.path().join(format!(
                "{case}.{}.new",
                input.extension().unwrap().to_string_lossy()
            ));
            create_like(&array, &new, dir.path());
            ok(&[Path::new("write"), &new, Path::new("--input"), input]);
            oracle(&python, &[Path::new("compare"), &array, &new]);
        }
    }
}

/// Named Arrow columns.
type Columns = Vec<(&'static str, ArrayRef)>;

fn ipc_file(path: &Path, columns: Columns) {
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let mut w = arrow_ipc::writer::FileWriter::try_new(
        std::fs::File::create(path).unwrap(),
        &batch.schema(),
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
}

fn colors(values: &[&str], keys: Vec<Option<i8>>) -> ArrayRef {
    Arc::new(DictionaryArray::<Int8Type>::new(
        keys.into_iter().collect(),
        Arc::new(StringArray::from(values.to_vec())),
    ))
}

#[test]
fn bad_arrow_input_exits_2_and_leaves_the_array_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = corpus_array("sparse.enumeration");
    let array = dir.path().join("sparse.enumeration");
    create_like(&corpus, &array, dir.path());
    let d = || -> ArrayRef { Arc::new(Int32Array::from(vec![5, 6])) };
    let size = || -> ArrayRef { Arc::new(Int16Array::from(vec![0, 2])) };
    let good = || colors(&["blue", "red"], vec![Some(0), Some(1)]);
    let cases: Vec<(&str, Columns, &str)> = vec![
        (
            "wrong type",
            vec![
                ("d", Arc::new(Float64Array::from(vec![5.0, 6.0]))),
                ("color", good()),
                ("size", size()),
            ],
            "column d: Arrow type Float64",
        ),
        (
            "null in a non-nullable column",
            vec![
                ("d", d()),
                ("color", colors(&["blue"], vec![Some(0), None])),
                ("size", size()),
            ],
            "column color, row 1: null, but the field is not nullable",
        ),
        (
            "unknown column",
            vec![
                ("d", d()),
                ("color", good()),
                ("size", size()),
                ("nope", size()),
            ],
            "column nope: the array has no dimension or attribute",
        ),
        (
            "enumeration value missing",
            vec![
                ("d", d()),
                ("color", colors(&["blue", "purple"], vec![Some(0), Some(1)])),
                ("size", size()),
            ],
            "\"purple\" is not a value of enumeration colors",
        ),
        (
            "enumeration index of the wrong type",
            vec![
                ("d", d()),
                ("color", Arc::new(Int32Array::from(vec![0, 1]))),
                ("size", size()),
            ],
            "column color: Arrow type Int32 does not fit UINT8",
        ),
    ];
    for (what, columns, needle) in cases {
        let input = dir.path().join(format!("{what}.arrow"));
        ipc_file(&input, columns);
        let before = files(&array);
        let out = tdb(&[Path::new("write"), &array, Path::new("--input"), &input]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{what}: {stderr:?} does not say {needle:?}"
        );
        assert_eq!(files(&array), before, "{what} changed the array");
    }
    // CSV: an unknown column, a null (empty field) on a non-nullable field,
    // a value not in the enumeration, a value of the wrong type.
    for (what, text, needle) in [
        (
            "csv unknown",
            "d,color,size,nope\n5,red,10,1\n",
            "no field nope",
        ),
        ("csv null", "d,color,size\n5,red,\n", "size, cell 0"),
        (
            "csv enumeration",
            "d,color,size\n5,purple,10\n",
            "not a value of enumeration colors",
        ),
        ("csv type", "d,color,size\nfive,red,10\n", "d, cell 0"),
    ] {
        let input = dir.path().join(format!("{what}.csv"));
        std::fs::write(&input, text).unwrap();
        let before = files(&array);
        let out = tdb(&[Path::new("write"), &array, Path::new("--input"), &input]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{what}: {stderr:?} does not say {needle:?}"
        );
        assert_eq!(files(&array), before, "{what} changed the array");
    }
    // The same columns, well typed, are written: the refusals above are the input's.
    let input = dir.path().join("good.arrow");
    let indexes: ArrayRef = Arc::new(UInt8Array::from(vec![1, 3]));
    ipc_file(
        &input,
        vec![("d", d()), ("color", indexes), ("size", size())],
    );
    ok(&[Path::new("write"), &array, Path::new("--input"), &input]);
    let read = ok(&[
        Path::new("read"),
        &array,
        Path::new("--format"),
        Path::new("json"),
    ]);
    assert_eq!(
        String::from_utf8_lossy(&read),
        r#"{"dimensions":{"d":[5,6]},"attributes":{"color":["green",""],"size":[10,30]}}
"#
    );
}
