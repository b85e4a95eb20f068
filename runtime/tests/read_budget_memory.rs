//! A read under a memory budget holds one batch, not the result: a dense
//! read whose result is 4 GiB (a domain of 2^30 cells, nearly all
//! unwritten, so they read as the fill value — as TileDB reads them,
//! checked against tiledb-py below) is read in batches under a 64 MiB
//! budget, and sparse reads (row-major and global, an integer and a float
//! dimension) of two fragments of 600,000 cells each under a 2 MiB budget,
//! and likewise reads in the orders cut their own way (a string dimension
//! leading row-major order, Hilbert order, two overlapping ranges of one
//! dimension); each runs in a child process (this test binary again,
//! running the ignored `child` test) whose peak resident size
//! (`VmHWM`) is measured. The child checks every cell it is given.
//!
//! The sizes keep a debug build near half a minute on two cores;
//! `BUDGET_TEST_CELLS_LOG2=33` (a 32 GiB result) makes a longer run.

mod common;

use std::path::Path;
use std::process::Command;

use common::child::{resident_kib, run_child_test};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::read::{batches, ReadQuery, ResultOrder};
use tiledb_runtime::schema::{AttributeSpec, DimensionSpec, SchemaBuilder, SchemaOrder};
use tiledb_runtime::write::{Column, Write};

const WRITTEN: i64 = 1000;
const SPARSE_CELLS: i64 = 600_000;
/// The float array's coordinates are shifted down by this (half below 0).
const FLOAT_SHIFT: i64 = 600_000_000;

fn dense_cells() -> i64 {
    let log2 = std::env::var("BUDGET_TEST_CELLS_LOG2")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(30);
    1i64 << log2
}

/// A dense array over `0..cells` (INT32 `a`, fill -7) with `WRITTEN`
/// cells written at its start (`a = 3 * d`).
fn dense_array(path: &Path) {
    let cells = dense_cells();
    let schema = SchemaBuilder::dense()
        .dimension(DimensionSpec::new::<i64>("d", 0, cells - 1, Some(1 << 20)))
        .attribute(
            AttributeSpec::new("a", Datatype::Int32)
                .with_fill((-7i32).to_le_bytes().to_vec(), false),
        );
    let array = Array::create_path(path, &schema).unwrap();
    let values: Vec<i32> = (0..WRITTEN as i32).map(|i| 3 * i).collect();
    let write = Write::dense(
        vec![(0, i128::from(WRITTEN) - 1)],
        vec![Column::from_values("a", &values)],
    );
    array.write(&write).unwrap();
}

/// A sparse array (INT64 `d` over a wide domain, or FLOAT64 `d` half below
/// zero, and INT64 `v = d + 1`) of two fragments whose coordinates
/// interleave: even and odd multiples of 1000.
fn sparse_array(path: &Path, float: bool) {
    let dimension = if float {
        DimensionSpec::new::<f64>("d", -1e12, 1e12, None)
    } else {
        DimensionSpec::new::<i64>("d", 0, 1 << 40, Some(1 << 20))
    };
    let schema = SchemaBuilder::sparse()
        .dimension(dimension)
        .attribute(AttributeSpec::new("v", Datatype::Int64))
        .capacity(10_000);
    let array = Array::create_path(path, &schema).unwrap();
    let shift = if float { FLOAT_SHIFT } else { 0 };
    for (parity, at) in [(0i64, 1u64), (1, 2)] {
        let d: Vec<i64> = (0..SPARSE_CELLS)
            .map(|i| (2 * i + parity) * 1000 - shift)
            .collect();
        let v: Vec<i64> = d.iter().map(|x| x + 1).collect();
        let d = if float {
            let d: Vec<f64> = d.iter().map(|&x| x as f64).collect();
            Column::from_values("d", &d)
        } else {
            Column::from_values("d", &d)
        };
        let write = Write::sparse(vec![d, Column::from_values("v", &v)]).at(at);
        array.write(&write).unwrap();
    }
}

/// Run by the tests below in a child process: reads the array named by
/// `BUDGET_CHILD` in batches, checks every cell, and prints what it saw
/// and its peak resident size.
#[test]
#[ignore = "run in a child process by the memory tests"]
fn child() {
    let spec = std::env::var("BUDGET_CHILD").expect("BUDGET_CHILD names the read");
    let mut parts = spec.split(';');
    let (kind, path, budget) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap().parse::<u64>().unwrap(),
    );
    let array = Array::open_path(path, OpenOptions::default()).unwrap();
    let (mut cells, mut batch_count, mut largest) = (0u64, 0u64, 0usize);
    let fill: Vec<u8> = (-7i32).to_le_bytes().repeat(1 << 18);
    match kind {
        "dense" => {
            let query = ReadQuery {
                ranges: vec![vec![(
                    0i64.to_le_bytes().to_vec(),
                    (dense_cells() - 1).to_le_bytes().to_vec(),
                )]],
                skip_coordinates: true,
                ..ReadQuery::default()
            };
            for batch in batches(array.snapshot(), &query, budget).unwrap() {
                let batch = batch.unwrap();
                let a = &batch.attributes[0];
                largest = largest.max(a.data.len());
                // Written cells one by one; the fill as one comparison
                // (a debug build checks 2^30 cells in little time).
                let first = cells as i64;
                let written = (WRITTEN - first).clamp(0, a.data.len() as i64 / 4) as usize;
                for (i, v) in a.data[..written * 4].chunks_exact(4).enumerate() {
                    let v = i32::from_le_bytes(v.try_into().unwrap());
                    assert_eq!(
                        v,
                        3 * (first as i32 + i as i32),
                        "cell {}",
                        first + i as i64
                    );
                }
                for rest in a.data[written * 4..].chunks(fill.len()) {
                    assert!(
                        rest == &fill[..rest.len()],
                        "a cell after {first} is not the fill value"
                    );
                }
                cells += batch.cell_count() as u64;
                batch_count += 1;
            }
        }
        "strings" | "hilbert" | "ranges" => {
            (cells, batch_count, largest) = read_other_orders(kind, &array, budget);
        }
        "long-strings" | "string-ranges" | "hilbert-strings" => {
            (cells, batch_count, largest) = read_string_orders(kind, &array, budget);
        }
        "overwritten" | "overwritten-hilbert" => {
            (cells, batch_count, largest) = read_overwritten(&array, budget);
        }
        sparse => {
            let float = sparse.starts_with("sparse-float");
            let shift = if float { FLOAT_SHIFT } else { 0 };
            let layout = if sparse.ends_with("global") {
                ResultOrder::Global
            } else {
                ResultOrder::RowMajor
            };
            let query = ReadQuery {
                layout,
                ..ReadQuery::default()
            };
            for batch in batches(array.snapshot(), &query, budget).unwrap() {
                let batch = batch.unwrap();
                largest = largest.max(batch.dimensions[0].data.len() * 2);
                let d = batch.dimensions[0].data.chunks_exact(8);
                let v = batch.attributes[0].data.chunks_exact(8);
                for (i, (d, v)) in d.zip(v).enumerate() {
                    let d = match float {
                        true => f64::from_le_bytes(d.try_into().unwrap()) as i64,
                        false => i64::from_le_bytes(d.try_into().unwrap()),
                    };
                    let v = i64::from_le_bytes(v.try_into().unwrap());
                    // Both fragments merged: every multiple of 1000, in order.
                    assert_eq!(d, (cells as i64 + i as i64) * 1000 - shift);
                    assert_eq!(v, d + 1);
                }
                cells += batch.cell_count() as u64;
                batch_count += 1;
            }
        }
    }
    println!(
        "RESULT cells={cells} batches={batch_count} largest={largest} peak_kib={}",
        resident_kib("VmHWM:")
    );
}

/// Cells of the arrays in other orders: 300,000 per fragment.
const OTHER_CELLS: i64 = 300_000;

/// The string of cell `j` of the string array: runs of 50 cells.
fn word(j: i64) -> String {
    format!("k{:07}", j / 50)
}

/// The `hilbert` array, of two fragments whose cells interleave (even and
/// odd `j`): INT64 `r`, `c` in Hilbert order, cell `j` is
/// `(j / 1000, j % 1000)` with INT64 `v = j`.
fn hilbert_array(path: &Path) {
    let schema = SchemaBuilder::sparse()
        .dimension(DimensionSpec::new::<i64>("r", 0, 599, Some(100)))
        .dimension(DimensionSpec::new::<i64>("c", 0, 999, Some(100)))
        .orders(SchemaOrder::RowMajor, SchemaOrder::Hilbert)
        .attribute(AttributeSpec::new("v", Datatype::Int64))
        .capacity(10_000);
    let array = Array::create_path(path, &schema).unwrap();
    for (parity, at) in [(0i64, 1u64), (1, 2)] {
        let j: Vec<i64> = (0..OTHER_CELLS).map(|i| 2 * i + parity).collect();
        let r: Vec<i64> = j.iter().map(|j| j / 1000).collect();
        let c: Vec<i64> = j.iter().map(|j| j % 1000).collect();
        let columns = vec![
            Column::from_values("r", &r),
            Column::from_values("c", &c),
            Column::from_values("v", &j),
        ];
        array.write(&Write::sparse(columns).at(at)).unwrap();
    }
}

/// The child's read of `strings` (row-major), `hilbert` (global) or
/// `ranges` (the integer sparse array, row-major, with two overlapping
/// ranges): every cell checked; (cells, batches, largest batch bytes).
fn read_other_orders(kind: &str, array: &Array, budget: u64) -> (u64, u64, usize) {
    let int = |b: &[u8]| i64::from_le_bytes(b.try_into().unwrap());
    let (low, high) = (400_000_000i64, 799_999_999i64);
    let query = match kind {
        "hilbert" => ReadQuery {
            layout: ResultOrder::Global,
            ..ReadQuery::default()
        },
        "ranges" => ReadQuery {
            ranges: vec![vec![
                (0i64.to_le_bytes().to_vec(), high.to_le_bytes().to_vec()),
                (
                    low.to_le_bytes().to_vec(),
                    (3 * low - 1).to_le_bytes().to_vec(),
                ),
            ]],
            ..ReadQuery::default()
        },
        _ => ReadQuery::default(),
    };
    let (mut cells, mut batch_count, mut largest) = (0u64, 0u64, 0usize);
    let mut seen = vec![false; 2 * OTHER_CELLS as usize];
    // The ranges read: in coordinate order, a cell once per range holding it.
    let mut expected = (0i64..2 * SPARSE_CELLS).flat_map(|k| {
        let d = k * 1000;
        let copies = usize::from(d <= high) + usize::from(d >= low);
        std::iter::repeat_n(d, copies)
    });
    for batch in batches(array.snapshot(), &query, budget).unwrap() {
        let batch = batch.unwrap();
        largest = largest.max(common::result_bytes(&batch) as usize);
        let v = &batch.attributes[0];
        for i in 0..batch.cell_count() {
            let value = int(v.cell(i).0);
            match kind {
                "ranges" => {
                    let d = int(batch.dimensions[0].cell(i).0);
                    assert_eq!(Some(d), expected.next(), "cell {}", cells + i as u64);
                    assert_eq!(value, d + 1);
                }
                "strings" => {
                    // Row-major over (s, x) is the order of j.
                    let j = (cells + i as u64) as i64;
                    assert_eq!(value, j);
                    assert_eq!(batch.dimensions[0].cell(i).0, word(j).as_bytes());
                    assert_eq!(int(batch.dimensions[1].cell(i).0), j % 50);
                }
                _ => {
                    let (r, c) = (
                        int(batch.dimensions[0].cell(i).0),
                        int(batch.dimensions[1].cell(i).0),
                    );
                    assert_eq!(value, r * 1000 + c);
                    assert!(!std::mem::replace(&mut seen[value as usize], true));
                }
            }
        }
        cells += batch.cell_count() as u64;
        batch_count += 1;
    }
    if kind == "ranges" {
        assert_eq!(expected.next(), None, "cells missing at the end");
    }
    (cells, batch_count, largest)
}

/// What a read in the child must show: all its cells, in at least
/// `min_batches` batches, with a peak resident size under `bound_kib`.
struct Expected {
    cells: u64,
    min_batches: u64,
    bound_kib: u64,
}

/// Runs the child on `kind;path;budget`: the cells and batches it read
/// and its peak, in KiB.
fn run_child(kind: &str, path: &Path, budget: u64) -> (u64, u64, u64) {
    let result = run_child_test(
        "BUDGET_CHILD",
        &format!("{kind};{};{budget}", path.display()),
    );
    println!("{kind}: {}", result.line);
    (
        result.field("cells"),
        result.field("batches"),
        result.field("peak_kib"),
    )
}

/// Runs the child on `kind;path;budget` and checks what it reports
/// against `expected`; the peak, in KiB.
fn assert_child_keeps_to(kind: &str, path: &Path, budget: u64, expected: Expected) -> u64 {
    let (cells, batch_count, peak) = run_child(kind, path, budget);
    assert_eq!(cells, expected.cells, "{kind}: cells");
    assert!(
        batch_count >= expected.min_batches,
        "{kind}: {batch_count} batches"
    );
    assert!(
        peak < expected.bound_kib,
        "{kind}: peak {peak} KiB over {} KiB under a {budget}-byte budget",
        expected.bound_kib
    );
    peak
}

#[test]
fn a_multi_gigabyte_dense_read_stays_in_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dense");
    dense_array(&path);
    let budget: u64 = 64 << 20;
    let result_bytes = dense_cells() as u64 * 4;
    // The process holds a few batches' worth (the batch handed out, the
    // next being joined, a part being read), never the 4 GiB result.
    let bound_kib = 3 * budget / 1024;
    assert!(result_bytes / 1024 > 10 * bound_kib);
    let expected = Expected {
        cells: dense_cells() as u64,
        min_batches: result_bytes / budget,
        bound_kib,
    };
    assert_child_keeps_to("dense", &path, budget, expected);

    // TileDB reads the unwritten cells as the fill value too.
    let Some(python) = common::tiledb_python() else {
        println!("skipped the TileDB comparison: no tiledb-py venv");
        return;
    };
    let far = dense_cells() / 2;
    let script = format!(
        "import tiledb\nA = tiledb.open({:?})\nprint(list(A[{}:{}]['a']) + list(A[{far}:{}]['a']))",
        path.display(),
        WRITTEN - 2,
        WRITTEN + 2,
        far + 2
    );
    let out = Command::new(python).args(["-c", &script]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tiledb = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let ours = format!(
        "[{}, {}, -7, -7, -7, -7]",
        3 * (WRITTEN - 2),
        3 * (WRITTEN - 1)
    );
    assert_eq!(
        tiledb, ours,
        "TileDB's cells around the written ones and far from them"
    );
}

#[test]
fn a_sparse_read_of_merged_fragments_stays_in_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse");
    sparse_array(&path, false);
    let float_path = dir.path().join("sparse-float");
    sparse_array(&float_path, true);
    let budget: u64 = 2 << 20;
    let result_bytes = 2 * SPARSE_CELLS as u64 * 16;
    for (kind, path) in [
        ("sparse-row", &path),
        ("sparse-global", &path),
        ("sparse-float-row", &float_path),
        ("sparse-float-global", &float_path),
    ] {
        // Reading this array whole (the merge of two fragments) peaks
        // near 400 MiB; in batches it stays near the 18 MiB result's
        // batches plus the process's own.
        let expected = Expected {
            cells: 2 * SPARSE_CELLS as u64,
            min_batches: result_bytes / budget,
            bound_kib: 32 << 10,
        };
        let peak = assert_child_keeps_to(kind, path, budget, expected);
        println!("{kind}: peak {peak} KiB for a {result_bytes}-byte result");
    }
}

#[test]
fn strings_hilbert_and_overlapping_ranges_stay_in_their_budget() {
    let dir = tempfile::tempdir().unwrap();
    let ints = dir.path().join("sparse");
    sparse_array(&ints, false);
    let budget: u64 = 2 << 20;
    for (kind, cells) in [
        ("strings", 2 * OTHER_CELLS as u64),
        ("hilbert", 2 * OTHER_CELLS as u64),
        ("ranges", 2 * SPARSE_CELLS as u64 * 4 / 3),
    ] {
        let path = if kind == "ranges" {
            ints.clone()
        } else {
            let path = dir.path().join(kind);
            match kind {
                "strings" => string_array(&path, kind),
                _ => hilbert_array(&path),
            }
            path
        };
        // As the sparse reads above: batches, a part being read and the
        // process's own, never the whole result (14 to 26 MiB here, and
        // several times that while fragments are merged whole). A Hilbert
        // part reads every tile whose MBR may hold its values: here 2 to 6
        // tiles of 10,000 cells, merged cell by cell, for parts of about
        // 8,000 cells, so it peaks higher (near 36 MiB).
        let bound_kib = if kind == "hilbert" {
            56 << 10
        } else {
            32 << 10
        };
        let expected = Expected {
            cells,
            min_batches: 8,
            bound_kib,
        };
        assert_child_keeps_to(kind, &path, budget, expected);
    }
}

/// The string of cell `j` of the `long-strings` array: runs of 50 cells
/// whose strings share their first 26 bytes.
fn long_word(j: i64) -> String {
    format!("sample/2024/run-0001/cell-{:07}", j / 50)
}

/// The string of cell `j` of the `hilbert-strings` array: runs of 50
/// cells, the runs out of order.
fn scrambled_word(j: i64) -> String {
    format!("{:07}", (j / 50) * 7919 % 12_007)
}

/// The ranges of the `string-ranges` read: overlapping, unsorted.
const STRING_RANGES: [(&str, &str); 3] = [
    ("k0004000", "k0009000"),
    ("k0000100", "k0005000"),
    ("k0010000", "k0011000"),
];

/// Arrays of a string `s` and an INT64 `x` of one space tile, two
/// fragments whose cells interleave (even and odd `j`), cell `j` with
/// INT64 `v = j`: `strings` (`(word(j), j % 50)`, row-major),
/// `long-strings` (`(long_word(j), j % 50)`, row-major) and
/// `hilbert-strings` (`(scrambled_word(j), j % 50)`, Hilbert order).
fn string_array(path: &Path, kind: &str) {
    let mut schema = SchemaBuilder::sparse()
        .dimension(DimensionSpec::string("s"))
        .dimension(DimensionSpec::new::<i64>("x", 0, 99, Some(100)));
    if kind == "hilbert-strings" {
        schema = schema.orders(SchemaOrder::RowMajor, SchemaOrder::Hilbert);
    }
    let schema = schema
        .attribute(AttributeSpec::new("v", Datatype::Int64))
        .capacity(10_000);
    let array = Array::create_path(path, &schema).unwrap();
    let word = match kind {
        "hilbert-strings" => scrambled_word,
        "long-strings" => long_word,
        _ => word,
    };
    for (parity, at) in [(0i64, 1u64), (1, 2)] {
        let j: Vec<i64> = (0..OTHER_CELLS).map(|i| 2 * i + parity).collect();
        let s: Vec<String> = j.iter().map(|&j| word(j)).collect();
        let x: Vec<i64> = j.iter().map(|j| j % 50).collect();
        let columns = vec![
            Column::from_strings("s", Datatype::StringAscii, &s),
            Column::from_values("x", &x),
            Column::from_values("v", &j),
        ];
        array.write(&Write::sparse(columns).at(at)).unwrap();
    }
}

/// The child's read of `long-strings` (row-major), `string-ranges` (the
/// `strings` array, row-major, with `STRING_RANGES`: in coordinate order,
/// a cell once per range holding it) or `hilbert-strings` (global): every
/// cell checked; (cells, batches, largest batch bytes).
fn read_string_orders(kind: &str, array: &Array, budget: u64) -> (u64, u64, usize) {
    let int = |b: &[u8]| i64::from_le_bytes(b.try_into().unwrap());
    let mut query = ReadQuery::default();
    if kind == "string-ranges" {
        let ranges = STRING_RANGES.iter();
        let ranges = ranges.map(|(a, b)| (a.as_bytes().to_vec(), b.as_bytes().to_vec()));
        query.ranges = vec![ranges.collect(), Vec::new()];
    }
    if kind == "hilbert-strings" {
        query.layout = ResultOrder::Global;
    }
    let mut expected = (0..2 * OTHER_CELLS).flat_map(|j| {
        let copies = match kind {
            "string-ranges" => {
                let w = word(j);
                let held = STRING_RANGES
                    .iter()
                    .filter(|(a, b)| *a <= w.as_str() && w.as_str() <= *b);
                held.count()
            }
            _ => 1,
        };
        std::iter::repeat_n(j, copies)
    });
    let mut seen = vec![false; 2 * OTHER_CELLS as usize];
    let (mut cells, mut batch_count, mut largest) = (0u64, 0u64, 0usize);
    for batch in batches(array.snapshot(), &query, budget).unwrap() {
        let batch = batch.unwrap();
        largest = largest.max(common::result_bytes(&batch) as usize);
        for i in 0..batch.cell_count() {
            let j = int(batch.attributes[0].cell(i).0);
            let s = batch.dimensions[0].cell(i).0;
            assert_eq!(int(batch.dimensions[1].cell(i).0), j % 50);
            if kind == "hilbert-strings" {
                assert_eq!(s, scrambled_word(j).as_bytes());
                assert!(!std::mem::replace(&mut seen[j as usize], true));
            } else {
                // Row-major over (s, x) is the order of j.
                assert_eq!(Some(j), expected.next(), "cell {}", cells + i as u64);
                let w = if kind == "long-strings" {
                    long_word(j)
                } else {
                    word(j)
                };
                assert_eq!(s, w.as_bytes());
            }
        }
        cells += batch.cell_count() as u64;
        batch_count += 1;
    }
    if kind != "hilbert-strings" {
        assert_eq!(expected.next(), None, "cells missing at the end");
    }
    (cells, batch_count, largest)
}

#[test]
fn string_ranges_long_shared_starts_and_hilbert_strings_stay_in_their_budget() {
    let dir = tempfile::tempdir().unwrap();
    let budget: u64 = 2 << 20;
    let in_ranges = (0..2 * OTHER_CELLS)
        .map(|j| {
            let w = word(j);
            STRING_RANGES
                .iter()
                .filter(|(a, b)| *a <= w.as_str() && w.as_str() <= *b)
                .count() as u64
        })
        .sum::<u64>();
    for (kind, cells) in [
        ("long-strings", 2 * OTHER_CELLS as u64),
        ("string-ranges", in_ranges),
        ("hilbert-strings", 2 * OTHER_CELLS as u64),
    ] {
        let path = dir.path().join(kind);
        match kind {
            "string-ranges" => string_array(&path, "strings"),
            _ => string_array(&path, kind),
        }
        // As the reads above: read whole, these merge 600,000 cells at
        // once (near 100 MiB and more); in batches, a part's tiles. A
        // Hilbert part reads the tiles opened for it: one or two of
        // 10,000 cells per fragment (near 27 MiB).
        let bound_kib = if kind == "hilbert-strings" {
            40 << 10
        } else {
            32 << 10
        };
        let expected = Expected {
            cells,
            min_batches: 8,
            bound_kib,
        };
        assert_child_keeps_to(kind, &path, budget, expected);
    }
}

/// The overwritten array's ranges, unsorted and overlapping: `k * 1000`
/// for `k` in `OVERWRITTEN_RANGES[0]`, then in `[1]` (its range order).
const OVERWRITTEN_RANGES: [(i64, i64); 2] = [(200_000, 599_999), (0, 399_999)];

/// An INT64 `d` and `v = d + 1` in two fragments: the later holds
/// `k * 1000` for every `k < SPARSE_CELLS`, the earlier the even `k`
/// alone, all overwritten by the later. Row-major cells, or Hilbert.
fn overwritten_array(path: &Path, cell_order: SchemaOrder) {
    let schema = SchemaBuilder::sparse()
        .dimension(DimensionSpec::new::<i64>("d", 0, 1 << 40, Some(1 << 20)))
        .attribute(AttributeSpec::new("v", Datatype::Int64))
        .orders(SchemaOrder::RowMajor, cell_order)
        .capacity(10_000);
    let array = Array::create_path(path, &schema).unwrap();
    for (step, at) in [(2usize, 1u64), (1, 2)] {
        let d: Vec<i64> = (0..SPARSE_CELLS).step_by(step).map(|k| k * 1000).collect();
        let v: Vec<i64> = d.iter().map(|x| x + 1).collect();
        let columns = vec![Column::from_values("d", &d), Column::from_values("v", &v)];
        array.write(&Write::sparse(columns).at(at)).unwrap();
    }
}

/// The child's read of the overwritten array with `OVERWRITTEN_RANGES`,
/// row-major: every result from the later fragment, so in range order
/// (each range's cells in coordinate order, one range after the other);
/// every cell checked; (cells, batches, largest batch bytes).
fn read_overwritten(array: &Array, budget: u64) -> (u64, u64, usize) {
    let int = |b: &[u8]| i64::from_le_bytes(b.try_into().unwrap());
    let bound = |k: i64| (k * 1000).to_le_bytes().to_vec();
    let query = ReadQuery {
        ranges: vec![OVERWRITTEN_RANGES
            .iter()
            .map(|&(a, b)| (bound(a), bound(b)))
            .collect()],
        ..ReadQuery::default()
    };
    let mut expected = OVERWRITTEN_RANGES
        .iter()
        .flat_map(|&(a, b)| (a..=b).map(|k| k * 1000));
    // The peak from here on: the process's own (near 12 MiB, the array
    // open) left out.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = resident_kib("VmRSS:");
    let (mut cells, mut batch_count, mut largest) = (0u64, 0u64, 0usize);
    for batch in batches(array.snapshot(), &query, budget).unwrap() {
        let batch = batch.unwrap();
        largest = largest.max(batch.dimensions[0].data.len() * 2);
        for i in 0..batch.cell_count() {
            let d = int(batch.dimensions[0].cell(i).0);
            assert_eq!(Some(d), expected.next(), "cell {}", cells + i as u64);
            assert_eq!(int(batch.attributes[0].cell(i).0), d + 1);
        }
        cells += batch.cell_count() as u64;
        batch_count += 1;
    }
    assert_eq!(expected.next(), None, "cells missing at the end");
    let grown = resident_kib("VmHWM:").saturating_sub(before);
    // A few parts' tiles and the batch being joined: the order is found
    // holding a tile's coordinates per fragment at a time (the part scan
    // before held 32,000 candidate cells: 6.5 MiB here, whatever the
    // budget, and in Hilbert order until the fragments were merged by
    // their Hilbert values; now near 2.5 MiB).
    let bound_kib = 16 * budget / 1024;
    assert!(
        grown < bound_kib,
        "the read's peak {grown} KiB (over the {before} KiB before it) above {bound_kib} KiB"
    );
    (cells, batch_count, largest)
}

#[test]
fn overlapping_ranges_over_overwritten_cells_stay_in_their_budget() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, cell_order) in [
        ("overwritten", SchemaOrder::RowMajor),
        ("overwritten-hilbert", SchemaOrder::Hilbert),
    ] {
        let path = dir.path().join(kind);
        overwritten_array(&path, cell_order);
        // The child checks its own peak against the budget, from the
        // start of the read (the order is found before the first batch).
        let (read, batch_count, _) = run_child(kind, &path, 256 << 10);
        let in_ranges: i64 = OVERWRITTEN_RANGES.iter().map(|(a, b)| b - a + 1).sum();
        assert_eq!(read, in_ranges as u64, "{kind}: cells");
        assert!(batch_count >= 40, "{kind}: {batch_count} batches");
    }
}
