//! `tdb write` through the streaming writer: inputs larger than a fragment
//! are cut into fragments of `--fragment-size`, `--timestamp T` stamps every
//! one of them T, `--subarray` places a dense input without coordinates,
//! and the memory a write takes stays bounded by the fragment size, not the
//! input's (the peak resident size of the `tdb` child, its `VmHWM`).
//! TileDB 2.30 (tiledb-py, in the test) reads every array written here
//! equal to the input and reports each fragment's time stamp; without the
//! oracle venv that half is skipped with a printed reason.
//!
//! Sizes: `WRITE_STREAM_ROWS` rows for the memory test (default 150,000, and four times
//! as many;
//! the longer run in README.md).

mod support;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use support::{ok, peak_kib_of_tdb, tdb, tiledb_python};

/// TileDB's reading of the array: per field its cells (sparse sorted by the
/// dimension `d`), and each fragment's `[t1, t2]`.
const TILEDB_READ: &str = r#"
import json, sys, numpy as np, tiledb
uri = sys.argv[1]
with tiledb.open(uri) as A:
    if A.schema.sparse:
        r = A.query(order="G")[:]
        order = np.argsort(r["d"], kind="stable")
        out = {k: [v[i] for i in order] for k, v in r.items()}
    else:
        out = dict(A[:])
    out = {k: [x.item() if hasattr(x, "item") else x for x in np.asarray(v, dtype=object).ravel()] for k, v in out.items()}
out["fragments"] = [list(f.timestamp_range) for f in tiledb.array_fragments(uri)]
print(json.dumps(out))
"#;

fn tiledb_read(python: &Path, array: &Path) -> Value {
    let run = Command::new(python)
        .args(["-c", TILEDB_READ])
        .arg(array)
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

const SPARSE_SCHEMA: &str = r#"array_type = "sparse"
capacity = 1000
[[dimensions]]
name = "d"
type = "INT64"
domain = [0, 99999999]
tile_extent = 100000
[[attributes]]
name = "v"
type = "FLOAT64"
[[attributes]]
name = "s"
type = "STRING_UTF8"
cell_val_num = "var"
"#;

/// A sparse CSV of `rows` cells in scattered order: `d,v,s`.
fn sparse_csv(path: &Path, rows: u64) -> Vec<(i64, f64, String)> {
    let mut cells: Vec<(i64, f64, String)> = (0..rows)
        .map(|i| {
            let d = ((i * 7919) % rows) as i64 * 3;
            (d, d as f64 * 0.5, format!("c{d}"))
        })
        .collect();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(out, "d,v,s").unwrap();
    for (d, v, s) in &cells {
        writeln!(out, "{d},{v},{s}").unwrap();
    }
    out.flush().unwrap();
    cells.sort_by_key(|c| c.0);
    cells
}

#[test]
fn a_large_csv_is_cut_into_fragments_stamped_the_given_time_and_tiledb_reads_them() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |name: &str| tmp.path().join(name);
    std::fs::write(p("schema.toml"), SPARSE_SCHEMA).unwrap();
    let cells = sparse_csv(&p("in.csv"), 40_000);
    let s = |path: PathBuf| path.to_str().unwrap().to_string();
    for (name, stamp, expected_ms) in [
        ("ms", "1700000000123", 1_700_000_000_123u64),
        ("iso", "2024-03-01T12:00:00", 1_709_294_400_000),
    ] {
        let array = p(name);
        ok(&[
            "create",
            &s(array.clone()),
            "--schema",
            &s(p("schema.toml")),
        ]);
        ok(&[
            "write",
            &s(array.clone()),
            "--input",
            &s(p("in.csv")),
            "--fragment-size",
            "64KiB",
            "--timestamp",
            stamp,
        ]);
        let fragments = std::fs::read_dir(array.join("__fragments"))
            .unwrap()
            .count();
        assert!(
            fragments > 3,
            "{fragments} fragments for a 1 MiB input cut at 64 KiB"
        );
        let Some(python) = tiledb_python() else {
            continue;
        };
        let read = tiledb_read(&python, &array);
        assert_eq!(
            read["fragments"],
            json!(vec![[expected_ms, expected_ms]; fragments]),
            "--timestamp {stamp}: every fragment stamped it"
        );
        assert_eq!(
            read["d"],
            json!(cells.iter().map(|c| c.0).collect::<Vec<_>>())
        );
        assert_eq!(
            read["v"],
            json!(cells.iter().map(|c| c.1).collect::<Vec<_>>())
        );
        assert_eq!(
            read["s"],
            json!(cells.iter().map(|c| &c.2).collect::<Vec<_>>())
        );
    }
}

#[test]
fn a_dense_input_without_coordinates_fills_the_subarray() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |name: &str| tmp.path().join(name);
    let s = |path: PathBuf| path.to_str().unwrap().to_string();
    std::fs::write(
        p("schema.toml"),
        r#"array_type = "dense"
[[dimensions]]
name = "r"
type = "INT32"
domain = [0, 9999]
tile_extent = 100
[[dimensions]]
name = "c"
type = "INT32"
domain = [0, 9]
tile_extent = 5
[[attributes]]
name = "a"
type = "INT64"
"#,
    )
    .unwrap();
    let array = p("dense");
    ok(&[
        "create",
        &s(array.clone()),
        "--schema",
        &s(p("schema.toml")),
    ]);
    // Rows 2000..=7999, all ten columns, row-major, no coordinates: a CSV
    // of the attribute alone, read in chunks.
    let values: Vec<i64> = (0..60_000).map(|i| i * 11 - 7).collect();
    let text: String = std::iter::once("a".to_string())
        .chain(values.iter().map(i64::to_string))
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(p("in.csv"), text + "\n").unwrap();
    ok(&[
        "write",
        &s(array.clone()),
        "--input",
        &s(p("in.csv")),
        "--subarray",
        "r=2000:7999",
        "--subarray",
        "c=0:9",
        "--fragment-size",
        "100KiB",
        "--timestamp",
        "5",
    ]);
    let fragments = std::fs::read_dir(array.join("__fragments"))
        .unwrap()
        .count();
    assert!(
        fragments > 2,
        "{fragments} fragments for 480 KB cut at 100 KiB"
    );
    // Too few cells for the box: refused, the array untouched.
    let before = std::fs::read_dir(array.join("__fragments"))
        .unwrap()
        .count();
    std::fs::write(
        p("short.json"),
        json!({"dimensions": {}, "attributes": {"a": [1, 2, 3]}}).to_string(),
    )
    .unwrap();
    let out = tdb(&[
        "write",
        &s(array.clone()),
        "--input",
        &s(p("short.json")),
        "--subarray",
        "r=0:0",
        "--subarray",
        "c=0:9",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("3 cells for a box of 10"));
    assert_eq!(
        std::fs::read_dir(array.join("__fragments"))
            .unwrap()
            .count(),
        before
    );
    let Some(python) = tiledb_python() else {
        return;
    };
    let read = tiledb_read(&python, &array);
    // TileDB reads the whole domain: fill values outside rows 20..=79.
    let fill = i64::MIN;
    let want: Vec<i64> = (0..100_000)
        .map(|i| {
            if (20_000..80_000).contains(&i) {
                values[i - 20_000]
            } else {
                fill
            }
        })
        .collect();
    assert_eq!(read["a"], json!(want));
    assert_eq!(read["fragments"], json!(vec![[5, 5]; fragments]));
}

#[test]
fn a_refused_chunk_late_in_the_input_leaves_the_array_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |name: &str| tmp.path().join(name);
    let s = |path: PathBuf| path.to_str().unwrap().to_string();
    std::fs::write(p("schema.toml"), SPARSE_SCHEMA).unwrap();
    let array = p("array");
    ok(&[
        "create",
        &s(array.clone()),
        "--schema",
        &s(p("schema.toml")),
    ]);
    sparse_csv(&p("in.csv"), 30_000);
    // The last row lies outside the domain: by then fragments were cut.
    let mut text = std::fs::read_to_string(p("in.csv")).unwrap();
    text.push_str("100000000,1.0,late\n");
    std::fs::write(p("in.csv"), text).unwrap();
    let out = tdb(&[
        "write",
        &s(array.clone()),
        "--input",
        &s(p("in.csv")),
        "--fragment-size",
        "64KiB",
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left: Vec<_> = ["__fragments", "__commits"]
        .iter()
        .flat_map(|d| {
            std::fs::read_dir(array.join(d))
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "the refused write left {left:?}");
}

/// Writes a sparse CSV of `rows` cells with `--fragment-size 2MiB`; the
/// peak resident size (KiB), the fragment count, the array and its cells.
fn write_measured(dir: &Path, rows: u64) -> (i64, usize, PathBuf, Vec<(i64, f64, String)>) {
    let s = |path: &Path| path.to_str().unwrap().to_string();
    std::fs::write(dir.join("schema.toml"), SPARSE_SCHEMA).unwrap();
    let input = dir.join(format!("in{rows}.csv"));
    let cells = sparse_csv(&input, rows);
    let array = dir.join(format!("array{rows}"));
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
        &s(&input),
        "--fragment-size",
        "2MiB",
    ]);
    let fragments = std::fs::read_dir(array.join("__fragments"))
        .unwrap()
        .count();
    println!(
        "{rows} rows ({} MiB of CSV) in {fragments} fragments, peak {} MiB",
        std::fs::metadata(&input).unwrap().len() >> 20,
        peak >> 10
    );
    (peak, fragments, array, cells)
}

#[test]
fn memory_stays_bounded_by_the_fragment_size_not_the_input() {
    let rows: u64 = std::env::var("WRITE_STREAM_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150_000);
    let tmp = tempfile::tempdir().unwrap();
    let (small_peak, small_fragments, _, _) = write_measured(tmp.path(), rows);
    let (peak, fragments, array, cells) = write_measured(tmp.path(), rows * 4);
    assert!(
        fragments > small_fragments,
        "{fragments} vs {small_fragments}"
    );
    // Four times the input, about the same memory: what grows with the
    // input is never held whole.
    assert!(
        peak < small_peak + small_peak / 4,
        "four times the input took {} MiB, against {} MiB",
        peak >> 10,
        small_peak >> 10
    );
    assert!(peak < 128 << 10, "peak {} MiB", peak >> 10);
    if let Some(python) = tiledb_python() {
        let read = tiledb_read(&python, &array);
        let d = read["d"].as_array().unwrap();
        assert_eq!(d.len() as u64, rows * 4, "TileDB reads every cell");
        assert_eq!(
            d.iter().map(|v| v.as_i64().unwrap()).collect::<Vec<_>>(),
            cells.iter().map(|c| c.0).collect::<Vec<_>>()
        );
    }
}
