//! The streaming writer (`Array::stream_sparse`, `Array::stream_dense`):
//! batches cut into fragments at a size limit, each committed as it is cut.
//! TileDB 2.30 (tiledb-py, in the test; skipped with a printed reason when
//! the oracle venv is absent) reads every result equal to what was written:
//! whole streams, and streams that stop part way (only the fragments cut
//! before, whole).

mod common;

use std::path::Path;

use common::tiledb_python;
use serde_json::{json, Value};
use tiledb_runtime::array::Array;
use tiledb_runtime::column::Column;
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::schema::{AttributeSpec, DimensionSpec, SchemaBuilder};

/// TileDB's reading of the whole array: per field its cells in TileDB's
/// order (dense: row-major over the domain), `null` for a null cell.
fn tiledb_reads(array: &Path) -> Option<serde_json::Map<String, Value>> {
    let Some(python) = tiledb_python() else {
        println!(
            "skipped the TileDB half: no oracle (.venv-tiledb in the workspace, or $TILEDB_PY)"
        );
        return None;
    };
    let script = r#"
import json, sys, numpy as np, tiledb
with tiledb.open(sys.argv[1]) as A:
    out = {}
    for name, arr in A[:].items():
        mask = np.ma.getmaskarray(arr).ravel().tolist()
        values = np.ma.getdata(arr).ravel().tolist()
        out[name] = [None if m else v for v, m in zip(values, mask)]
print(json.dumps(out))
"#;
    let run = std::process::Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(array)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "TileDB failed to read {}: {}",
        array.display(),
        String::from_utf8_lossy(&run.stderr)
    );
    match serde_json::from_slice(&run.stdout).unwrap() {
        Value::Object(m) => Some(m),
        other => panic!("TileDB's answer is no object: {other}"),
    }
}

fn sparse_array(path: &Path) -> Array {
    let schema = SchemaBuilder::sparse()
        .dimension(DimensionSpec::new::<i64>("x", 0, 99_999, Some(1000)))
        .attribute(AttributeSpec::new("v", Datatype::Float64))
        .attribute(
            AttributeSpec::new("s", Datatype::StringUtf8)
                .var()
                .nullable(),
        )
        .capacity(700);
    Array::create_path(path, &schema).unwrap()
}

/// Sparse batch `b` of `n` cells: distinct coordinates scattered over the
/// domain (a multiplicative permutation), every seventh string null.
fn sparse_batch(b: usize, n: usize) -> (Vec<i64>, Vec<f64>, Vec<Option<String>>) {
    let ids = (b * n..(b + 1) * n).map(|i| (i as i64 * 7919) % 100_000);
    let x: Vec<i64> = ids.collect();
    let v = x.iter().map(|&x| x as f64 * 0.5 - 3.25).collect();
    let s = x
        .iter()
        .map(|x| (x % 7 != 0).then(|| format!("cell-{x}")))
        .collect();
    (x, v, s)
}

fn sparse_columns(b: usize, n: usize) -> Vec<Column> {
    let (x, v, s) = sparse_batch(b, n);
    let valid: Vec<bool> = s.iter().map(Option::is_some).collect();
    let strings: Vec<String> = s.into_iter().map(Option::unwrap_or_default).collect();
    vec![
        Column::from_strings("s", Datatype::StringUtf8, &strings).with_validity(&valid),
        Column::from_values("x", &x),
        Column::from_values("v", &v),
    ]
}

/// What TileDB must read after sparse batches `0..batches`: cells sorted by `x`.
fn sparse_expected(batches: usize, n: usize) -> Value {
    let mut cells: Vec<(i64, f64, Option<String>)> = Vec::new();
    for b in 0..batches {
        let (x, v, s) = sparse_batch(b, n);
        cells.extend(x.into_iter().zip(v).zip(s).map(|((x, v), s)| (x, v, s)));
    }
    cells.sort_by_key(|c| c.0);
    json!({
        "x": cells.iter().map(|c| c.0).collect::<Vec<_>>(),
        "v": cells.iter().map(|c| c.1).collect::<Vec<_>>(),
        "s": cells.iter().map(|c| c.2.clone()).collect::<Vec<_>>(),
    })
}

fn assert_tiledb_reads(path: &Path, expected: &Value) {
    if let Some(theirs) = tiledb_reads(path) {
        assert_eq!(&Value::Object(theirs), expected, "TileDB reads otherwise");
    }
}

#[test]
fn sparse_stream_cuts_fragments_tiledb_reads_all_cells() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse");
    let array = sparse_array(&path);
    let (batches, n) = (20, 500);
    // About 15 KB a batch: a fragment every five batches.
    let mut stream = array.stream_sparse(64 * 1024).unwrap();
    let mut cut_after = Vec::new();
    for b in 0..batches {
        stream.push(sparse_columns(b, n)).unwrap();
        cut_after.push(stream.fragments().len());
    }
    let fragments = stream.finish().unwrap();
    assert!(
        fragments.len() > 2 && fragments.len() < batches,
        "{} fragments for {batches} batches",
        fragments.len()
    );
    // Cut as the cells reach the limit, not only at the end.
    assert!(
        cut_after[batches / 2] > 0,
        "no fragment cut part way: {cut_after:?}"
    );
    let reopened = Array::open_path(&path, Default::default()).unwrap();
    assert_eq!(reopened.fragments().len(), fragments.len());
    // Each fragment a later stamp than the one before (the same-millisecond case the writer
    // guards against is not forced here: cuts in a debug build lie further apart).
    let stamps: Vec<u64> = reopened
        .fragments()
        .iter()
        .map(|f| f.name.timestamp_start())
        .collect();
    assert!(stamps.windows(2).all(|w| w[0] < w[1]), "stamps {stamps:?}");
    assert_tiledb_reads(&path, &sparse_expected(batches, n));
}

#[test]
fn a_sparse_stream_stopped_part_way_leaves_whole_fragments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse");
    let array = sparse_array(&path);
    let n = 500;
    let mut stream = array.stream_sparse(40 * 1024).unwrap();
    let mut b = 0;
    while stream.fragments().len() < 2 {
        stream.push(sparse_columns(b, n)).unwrap();
        b += 1;
    }
    // A batch outside the domain: refused when its fragment is cut.
    let mut bad = sparse_columns(b, n);
    bad[1] = Column::from_values("x", &vec![100_000i64; n]);
    stream.push(sparse_columns(b + 1, n)).unwrap();
    let refused = stream.push(bad).and_then(|()| stream.finish().map(|_| ()));
    assert!(
        refused.is_err(),
        "a coordinate outside the domain was written"
    );
    // The batches cut before the failure (0..b) are there, whole; nothing else.
    assert_eq!(
        Array::open_path(&path, Default::default())
            .unwrap()
            .fragments()
            .len(),
        2
    );
    assert_tiledb_reads(&path, &sparse_expected(b, n));
}

fn dense_array(path: &Path) -> Array {
    let schema = SchemaBuilder::dense()
        .dimension(DimensionSpec::new::<i64>("r", 0, 99, Some(10)))
        .dimension(DimensionSpec::new::<i64>("c", 0, 49, Some(25)))
        .attribute(AttributeSpec::new("a", Datatype::Int32))
        .attribute(AttributeSpec::new("f", Datatype::Float64).nullable());
    Array::create_path(path, &schema).unwrap()
}

/// The dense cells `start..end` of the row-major domain.
fn dense_columns(start: usize, end: usize) -> Vec<Column> {
    let a: Vec<i32> = (start..end).map(|i| i as i32 * 3 - 7).collect();
    let f: Vec<f64> = (start..end).map(|i| i as f64 / 4.0).collect();
    let valid: Vec<bool> = (start..end).map(|i| i % 5 != 0).collect();
    vec![
        Column::from_values("a", &a),
        Column::from_values("f", &f).with_validity(&valid),
    ]
}

#[test]
fn dense_stream_cuts_whole_rows_tiledb_reads_the_box() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dense");
    let array = dense_array(&path);
    let cells = 100 * 50;
    // Batches of 333 cells (not whole rows) and a limit of 8 KiB (13 bytes
    // a cell): fragments of whole rows, the rest of a row held over.
    let mut stream = array
        .stream_dense(vec![(0, 99), (0, 49)], 8 * 1024)
        .unwrap();
    let mut at = 0;
    while at < cells {
        let end = (at + 333).min(cells);
        stream.push(dense_columns(at, end)).unwrap();
        at = end;
    }
    let fragments = stream.finish().unwrap();
    assert!(fragments.len() > 5, "{} fragments", fragments.len());
    let reopened = Array::open_path(&path, Default::default()).unwrap();
    assert_eq!(reopened.fragments().len(), fragments.len());
    let expected = json!({
        "a": (0..cells).map(|i| i as i32 * 3 - 7).collect::<Vec<_>>(),
        "f": (0..cells).map(|i| (i % 5 != 0).then_some(i as f64 / 4.0)).collect::<Vec<_>>(),
    });
    assert_tiledb_reads(&path, &expected);
}

#[test]
fn a_dense_stream_ended_early_is_refused_and_keeps_its_fragments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dense");
    let array = dense_array(&path);
    let mut stream = array
        .stream_dense(vec![(0, 99), (0, 49)], 2 * 1024)
        .unwrap();
    // 20 rows and a half: rows 0..20 are cut (whole), the half row is not.
    stream.push(dense_columns(0, 1025)).unwrap();
    let cut = stream.fragments().len();
    assert_eq!(cut, 1);
    assert!(stream.finish().is_err(), "a stream ended within a row");
    // TileDB reads the first 20 rows as written and the rest as fill.
    let rows = 20 * 50;
    let expected = json!({
        "a": (0..5000usize).map(|i| if i < rows { i as i32 * 3 - 7 } else { i32::MIN }).collect::<Vec<_>>(),
        "f": (0..5000).map(|i| (i < rows && i % 5 != 0).then_some(i as f64 / 4.0)).collect::<Vec<_>>(),
    });
    assert_tiledb_reads(&path, &expected);
}

#[test]
fn a_column_major_dense_stream_cuts_slabs_of_the_last_dimension() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dense");
    let array = dense_array(&path);
    let cells = 100 * 50;
    // The cells in column-major order (`r` fastest): cell k is (k % 100,
    // k / 100). Batches of 333 cells, a limit of 8 KiB: fragments of whole
    // columns, the rest of a column held over.
    let mut stream = array
        .stream_dense(vec![(0, 99), (0, 49)], 8 * 1024)
        .unwrap()
        .col_major()
        .unwrap();
    let mut at = 0;
    while at < cells {
        let end = (at + 333).min(cells);
        stream.push(dense_columns(at, end)).unwrap();
        at = end;
    }
    let fragments = stream.finish().unwrap();
    assert!(fragments.len() > 5, "{} fragments", fragments.len());
    // TileDB reads row-major: the cell at (r, c) is stream cell c * 100 + r.
    let k = |i: usize| (i % 50) * 100 + i / 50;
    let expected = json!({
        "a": (0..cells).map(|i| k(i) as i32 * 3 - 7).collect::<Vec<_>>(),
        "f": (0..cells).map(|i| (k(i) % 5 != 0).then_some(k(i) as f64 / 4.0)).collect::<Vec<_>>(),
    });
    assert_tiledb_reads(&path, &expected);
    // The order is set before the first batch, and only on a dense stream.
    let mut late = array.stream_dense(vec![(0, 0), (0, 49)], 1 << 20).unwrap();
    late.push(dense_columns(0, 10)).unwrap();
    assert!(late.col_major().is_err());
    let sparse = sparse_array(&dir.path().join("sparse"));
    assert!(sparse.stream_sparse(1 << 20).unwrap().col_major().is_err());
}
