//! `tdb write` streams a JSON input (the document `tdb read --format json`
//! prints: one list of cells per field) and a dense input in column-major
//! order, as it streams CSV: the peak resident size of the `tdb` child
//! (`VmHWM`) for an input four times larger stays about the same, the
//! fragments are cut at `--fragment-size`, and TileDB 2.30 (tiledb-py, in
//! the test) reads every array written equal to the input. Without the
//! oracle venv the TileDB half is skipped with a printed reason.
//!
//! Sizes: `WRITE_STREAM_JSON_CELLS` cells for the smaller input (default
//! 150,000), and four times as many.

mod support;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use support::{ok, peak_kib_of_tdb, tdb, tiledb_python};

fn s(path: &Path) -> String {
    path.to_str().unwrap().to_string()
}

fn cells_env() -> u64 {
    std::env::var("WRITE_STREAM_JSON_CELLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150_000)
}

/// TileDB's reading: per field its cells (a sparse array's sorted by `d`,
/// a dense array's `box` in row-major order), and the fragment count.
const TILEDB_READ: &str = r#"
import json, sys, numpy as np, tiledb
def plain(v):
    """A result column as a list, a masked (null) cell as None."""
    data = np.asarray(getattr(v, "data", v), dtype=object).ravel()
    mask = np.ma.getmaskarray(v).ravel() if np.ma.isMaskedArray(v) else [False] * len(data)
    return [None if m else (x.item() if hasattr(x, "item") else x) for x, m in zip(data, mask)]
uri = sys.argv[1]
with tiledb.open(uri) as A:
    if A.schema.sparse:
        r = A.query(order="G")[:]
        order = np.argsort(r["d"], kind="stable")
        out = {k: [c[i] for i in order] for k, c in ((k, plain(v)) for k, v in r.items())}
    else:
        box = json.loads(sys.argv[2])
        out = {k: plain(v) for k, v in A[tuple(slice(lo, hi + 1) for lo, hi in box)].items()}
out["fragments"] = len(tiledb.array_fragments(uri))
print(json.dumps(out))
"#;

fn tiledb_read(python: &Path, array: &Path, dense_box: &Value) -> Value {
    let run = Command::new(python)
        .args(["-c", TILEDB_READ])
        .arg(array)
        .arg(dense_box.to_string())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "TileDB failed to read {}: {}",
        array.display(),
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&run.stdout).unwrap()
}

fn fragments(array: &Path) -> usize {
    std::fs::read_dir(array.join("__fragments"))
        .map(Iterator::count)
        .unwrap_or(0)
}

/// Writes the JSON `doc_of(cells)` into a new array of `schema` with
/// `--fragment-size 1MiB`; the peak resident size (KiB) and the array.
fn write_measured(dir: &Path, name: &str, schema: &str, input: &Path) -> (i64, PathBuf) {
    std::fs::write(dir.join("schema.toml"), schema).unwrap();
    let array = dir.join(name);
    ok(&[
        "create",
        &s(&array),
        "--schema",
        &s(&dir.join("schema.toml")),
    ]);
    let peak = peak_kib_of_tdb(&[
        "write",
        &s(&array),
        "--input",
        &s(input),
        "--fragment-size",
        "1MiB",
    ]);
    println!(
        "{name}: {} MiB of JSON in {} fragments, peak {} MiB",
        std::fs::metadata(input).unwrap().len() >> 20,
        fragments(&array),
        peak >> 10
    );
    (peak, array)
}

/// A sparse cell: `(d, v, s)`.
type SparseCell = (i64, f64, Option<String>);

const SPARSE_SCHEMA: &str = r#"array_type = "sparse"
capacity = 1000
[[dimensions]]
name = "d"
type = "INT64"
domain = [0, 999999999]
tile_extent = 100000
[[attributes]]
name = "v"
type = "FLOAT64"
[[attributes]]
name = "s"
type = "STRING_UTF8"
cell_val_num = "var"
nullable = true
"#;

/// A sparse JSON of `n` cells in scattered order, written field by field
/// as `tdb read --format json` prints it (a string with escapes, `null`
/// every 7th cell); its cells sorted by `d`.
fn sparse_json(path: &Path, n: u64) -> Vec<SparseCell> {
    let mut cells: Vec<SparseCell> = (0..n)
        .map(|i| {
            let d = ((i * 7919) % n) as i64 * 3;
            let s = (d % 7 != 0).then(|| format!("c\"{d}],"));
            (d, d as f64 * 0.5, s)
        })
        .collect();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let list = |out: &mut dyn std::io::Write, values: &mut dyn Iterator<Item = Value>| {
        write!(out, "[").unwrap();
        for (i, v) in values.enumerate() {
            write!(out, "{}{v}", if i == 0 { "" } else { ",\n " }).unwrap();
        }
        write!(out, "]").unwrap();
    };
    write!(out, "{{\"dimensions\": {{\"d\": ").unwrap();
    list(&mut out, &mut cells.iter().map(|c| json!(c.0)));
    write!(out, "}},\n\"attributes\": {{\"v\": ").unwrap();
    list(&mut out, &mut cells.iter().map(|c| json!(c.1)));
    write!(out, ", \"s\": ").unwrap();
    list(&mut out, &mut cells.iter().map(|c| json!(c.2)));
    writeln!(out, "}}}}").unwrap();
    out.flush().unwrap();
    cells.sort_by_key(|c| c.0);
    cells
}

#[test]
fn a_json_input_streams_in_bounded_memory_and_tiledb_reads_it() {
    let n = cells_env();
    let tmp = tempfile::tempdir().unwrap();
    let small = tmp.path().join("small.json");
    sparse_json(&small, n);
    let (small_peak, small_array) = write_measured(tmp.path(), "small", SPARSE_SCHEMA, &small);
    let large = tmp.path().join("large.json");
    let cells = sparse_json(&large, n * 4);
    let (peak, array) = write_measured(tmp.path(), "large", SPARSE_SCHEMA, &large);
    assert!(fragments(&array) > fragments(&small_array));
    // Four times the input, about the same memory: the document is never
    // held whole (read whole, its values alone take several times the file).
    assert!(
        peak < small_peak + small_peak / 4,
        "four times the input took {} MiB, against {} MiB",
        peak >> 10,
        small_peak >> 10
    );
    let Some(python) = tiledb_python() else {
        return;
    };
    let read = tiledb_read(&python, &array, &Value::Null);
    assert_eq!(
        read["fragments"].as_u64().unwrap() as usize,
        fragments(&array)
    );
    // Compared whole, without printing two long lists when they differ.
    let want = |f: &dyn Fn(&SparseCell) -> Value| cells.iter().map(f).collect::<Vec<_>>();
    assert!(
        read["d"] == json!(want(&|c| json!(c.0))),
        "TileDB reads other d"
    );
    assert!(
        read["v"] == json!(want(&|c| json!(c.1))),
        "TileDB reads other v"
    );
    assert!(
        read["s"] == json!(want(&|c| json!(c.2))),
        "TileDB reads other s"
    );
}

const DENSE_SCHEMA: &str = r#"array_type = "dense"
[[dimensions]]
name = "r"
type = "INT32"
domain = [0, 1999]
tile_extent = 100
[[dimensions]]
name = "c"
type = "INT32"
domain = [0, 99999]
tile_extent = 10
[[attributes]]
name = "a"
type = "INT64"
"#;

/// Rows of the dense box: a slab of the last dimension (the unit a
/// column-major stream is cut at) stays this size however large the input.
const DENSE_ROWS: i64 = 2000;

/// A dense JSON of the box `r` in `[0, 2000)` × `c` in `[3, 3 + n/2000)`,
/// its cells in column-major order (`r` fastest) with their coordinates;
/// the box and the values in the box's row-major order.
fn col_major_json(path: &Path, n: u64) -> (Value, Vec<i64>) {
    let cols = n as i64 / DENSE_ROWS;
    let value = |r: i64, c: i64| r * 1_000_000 + c;
    let (mut rs, mut cs, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for c in 3..3 + cols {
        for r in 0..DENSE_ROWS {
            rs.push(r);
            cs.push(c);
            values.push(value(r, c));
        }
    }
    let doc = json!({"dimensions": {"r": rs, "c": cs}, "attributes": {"a": values}});
    std::fs::write(path, doc.to_string()).unwrap();
    let row_major = (0..DENSE_ROWS)
        .flat_map(|r| (3..3 + cols).map(move |c| value(r, c)))
        .collect();
    (json!([[0, DENSE_ROWS - 1], [3, 2 + cols]]), row_major)
}

#[test]
fn a_dense_input_in_column_major_order_streams_as_slabs_of_the_last_dimension() {
    let n = cells_env();
    let tmp = tempfile::tempdir().unwrap();
    let small = tmp.path().join("small.json");
    col_major_json(&small, n);
    let (small_peak, _) = write_measured(tmp.path(), "small", DENSE_SCHEMA, &small);
    let large = tmp.path().join("large.json");
    let (dense_box, row_major) = col_major_json(&large, n * 4);
    let (peak, array) = write_measured(tmp.path(), "large", DENSE_SCHEMA, &large);
    // Read whole, the input would be one write: one fragment.
    assert!(fragments(&array) > 2, "{} fragments", fragments(&array));
    assert!(
        peak < small_peak + small_peak / 4,
        "four times the input took {} MiB, against {} MiB",
        peak >> 10,
        small_peak >> 10
    );
    let Some(python) = tiledb_python() else {
        return;
    };
    let read = tiledb_read(&python, &array, &dense_box);
    assert_eq!(
        read["fragments"].as_u64().unwrap() as usize,
        fragments(&array)
    );
    // Compared whole, without printing two long lists when they differ.
    assert!(read["a"] == json!(row_major), "TileDB reads other cells");
}

#[test]
fn a_bad_json_input_is_refused_with_its_place_and_the_array_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |name: &str| tmp.path().join(name);
    std::fs::write(p("schema.toml"), SPARSE_SCHEMA).unwrap();
    let array = p("array");
    ok(&["create", &s(&array), "--schema", &s(&p("schema.toml"))]);
    // Fragments are cut before the bad cells are reached: they are undone.
    let n = 60_000;
    let cells: Vec<i64> = (0..n).collect();
    let cases = [
        (
            "short.json",
            json!({"dimensions": {"d": cells}, "attributes": {"v": vec![1.0; n as usize - 1], "s": vec!["x"; n as usize]}})
                .to_string(),
            "v has 59999 cells, ",
        ),
        (
            "cell.json",
            json!({"dimensions": {"d": cells}, "attributes": {"v": (0..n).map(|i| if i == n - 1 { json!("x") } else { json!(1.0) }).collect::<Vec<_>>(), "s": vec!["x"; n as usize]}})
                .to_string(),
            "v, cell 59999",
        ),
        (
            "syntax.json",
            r#"{"dimensions": {"d": [1, 2, ]}, "attributes": {"v": [1, 2], "s": ["a", "b"]}}"#
                .to_string(),
            "byte 28: expected a value, found `]`",
        ),
    ];
    for (name, text, why) in cases {
        std::fs::write(p(name), text).unwrap();
        let out = tdb(&[
            "write",
            &s(&array),
            "--input",
            &s(&p(name)),
            "--fragment-size",
            "64KiB",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(why), "{name}: {err}");
        assert_eq!(fragments(&array), 0, "{name} left fragments");
    }
}
