//! `tdb read` streams: on a dense array of 2^31 cells (a 2^31-line CSV of
//! many gigabytes, hours of output), `--format csv | head` gets its first
//! lines within seconds and the closed pipe ends `tdb` quietly with 0;
//! `--limit` stops the read once it has its cells; a small memory budget
//! gives the same output as the default one; and nothing is drawn on a
//! standard error that is not a terminal.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::tdb_command;
use tiledb_runtime::array::Array;
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::schema::{AttributeSpec, DimensionSpec, SchemaBuilder};
use tiledb_runtime::write::{Column, Write};

/// Long enough for a loaded debug build; the whole output would take hours.
const FIRST_LINES_WITHIN: Duration = Duration::from_secs(30);

/// A dense array over `0..2^31` (INT32 `a`, fill -7) with its first 10
/// cells written (`a = 10 * d`).
fn big_array(path: &Path) {
    let schema = SchemaBuilder::dense()
        .dimension(DimensionSpec::new::<i64>(
            "d",
            0,
            (1 << 31) - 1,
            Some(1 << 20),
        ))
        .attribute(
            AttributeSpec::new("a", Datatype::Int32)
                .with_fill((-7i32).to_le_bytes().to_vec(), false),
        );
    let array = Array::create_path(path, &schema).unwrap();
    let values: Vec<i32> = (0..10).map(|i| 10 * i).collect();
    array
        .write(&Write::dense(
            vec![(0, 9)],
            vec![Column::from_values("a", &values)],
        ))
        .unwrap();
}

#[test]
fn csv_into_head_prints_at_once_and_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big");
    big_array(&path);
    // The whole domain, not just the written cells.
    let start = Instant::now();
    let mut child = tdb_command()
        .arg("read")
        .arg(&path)
        .args(["--format", "csv", "--subarray", "d=0:2147483647"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let header = lines.next().unwrap().unwrap();
    let first = lines.next().unwrap().unwrap();
    let elapsed = start.elapsed();
    assert_eq!((header.as_str(), first.as_str()), ("d,a", "0,0"));
    assert!(
        elapsed < FIRST_LINES_WITHIN,
        "the first lines took {elapsed:?}"
    );
    // `head` closes the pipe: tdb ends quietly with 0, soon.
    drop(lines);
    let deadline = Instant::now() + FIRST_LINES_WITHIN;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("tdb went on after its reader closed the pipe");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{status:?}: {err}");
    assert_eq!(
        err, "",
        "nothing on a standard error that is not a terminal"
    );
}

#[test]
fn limit_stops_the_read_and_budgets_do_not_change_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big");
    big_array(&path);
    let run = |args: &[&str]| -> String {
        let out = tdb_command()
            .arg("read")
            .arg(&path)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let start = Instant::now();
    let limited = run(&[
        "--format",
        "csv",
        "--subarray",
        "d=0:2147483647",
        "--limit",
        "12",
    ]);
    assert!(
        start.elapsed() < FIRST_LINES_WITHIN,
        "--limit took {:?}",
        start.elapsed()
    );
    let expected: String = std::iter::once("d,a".to_string())
        .chain((0..12).map(|d| format!("{d},{}", if d < 10 { 10 * d } else { -7 })))
        .map(|l| l + "\n")
        .collect();
    assert_eq!(limited, expected);

    // 4,000 cells under budgets of one cell's batch up to the default:
    // every format prints the same.
    for format in ["csv", "json", "table", "null"] {
        let whole = run(&["--format", format, "--subarray", "d=0:3999"]);
        for budget in ["12", "1KiB", "64k"] {
            let batched = run(&[
                "--format",
                format,
                "--subarray",
                "d=0:3999",
                "--memory-budget",
                budget,
            ]);
            assert_eq!(batched, whole, "--format {format} --memory-budget {budget}");
        }
        let limited = run(&[
            "--format",
            format,
            "--subarray",
            "d=0:3999",
            "--memory-budget",
            "1KiB",
            "--limit",
            "1500",
        ]);
        let whole_limited = run(&[
            "--format",
            format,
            "--subarray",
            "d=0:3999",
            "--limit",
            "1500",
        ]);
        if format == "table" {
            // Beyond one batch the total is not read: only the count differs.
            assert!(
                limited.ends_with("(first 1500 cells)\n"),
                "{}",
                &limited[limited.len() - 40..]
            );
            assert!(whole_limited.ends_with("(first 1500 of 4000 cells)\n"));
            let body = |t: &str| t.lines().take(1502).collect::<Vec<_>>().join("\n");
            assert_eq!(body(&limited), body(&whole_limited));
        } else {
            assert_eq!(limited, whole_limited, "--format {format} --limit 1500");
        }
    }
    let bad = tdb_command()
        .arg("read")
        .arg(&path)
        .args(["--memory-budget", "12 parsecs"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// An Arrow IPC stream written batch by batch (enumerations as
/// dictionaries in every batch) holds the cells of the one-batch stream.
#[test]
fn arrow_streams_in_batches_hold_the_same_cells() {
    let array = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/corpus/tiledb-2.30/sparse.enumeration/array");
    let stream = |budget: &str| -> Vec<arrow_array::RecordBatch> {
        let out = tdb_command()
            .arg("read")
            .arg(&array)
            .args(["--format", "arrow", "--memory-budget", budget])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(out.stdout), None)
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let whole = stream("256MiB");
    assert_eq!(whole.len(), 1);
    let batches = stream("8");
    assert!(batches.len() > 1, "{} batches", batches.len());
    let mut at = 0;
    for batch in &batches {
        assert_eq!(batch, &whole[0].slice(at, batch.num_rows()));
        at += batch.num_rows();
    }
    assert_eq!(at, whole[0].num_rows());
}

/// Sparse arrays of two fragments of `cells` cells each, whose cells
/// interleave: `strings` (ASCII `s` in runs of 50, INT64 `x` of one space
/// tile), `hilbert` (INT64 `r`, `c` in Hilbert order) and `ints` (INT64
/// `d`, multiples of 1000); all with INT64 `v`.
fn ordered_array(path: &Path, kind: &str, cells: i64) {
    use tiledb_runtime::schema::SchemaOrder;
    let schema = match kind {
        "strings" => SchemaBuilder::sparse()
            .dimension(DimensionSpec::string("s"))
            .dimension(DimensionSpec::new::<i64>("x", 0, 99, Some(100))),
        "hilbert" => SchemaBuilder::sparse()
            .dimension(DimensionSpec::new::<i64>("r", 0, 999, Some(100)))
            .dimension(DimensionSpec::new::<i64>("c", 0, 999, Some(100)))
            .orders(SchemaOrder::RowMajor, SchemaOrder::Hilbert),
        _ => SchemaBuilder::sparse().dimension(DimensionSpec::new::<i64>(
            "d",
            0,
            1 << 40,
            Some(1 << 20),
        )),
    }
    .attribute(AttributeSpec::new("v", Datatype::Int64))
    .capacity(10_000);
    let array = Array::create_path(path, &schema).unwrap();
    for (parity, at) in [(0i64, 1u64), (1, 2)] {
        let j: Vec<i64> = (0..cells).map(|i| 2 * i + parity).collect();
        let mut columns = match kind {
            "strings" => {
                let s: Vec<String> = j.iter().map(|j| format!("k{:07}", j / 50)).collect();
                let x: Vec<i64> = j.iter().map(|j| j % 50).collect();
                vec![
                    Column::from_strings("s", Datatype::StringAscii, &s),
                    Column::from_values("x", &x),
                ]
            }
            "hilbert" => {
                let r: Vec<i64> = j.iter().map(|j| j / 1000).collect();
                let c: Vec<i64> = j.iter().map(|j| j % 1000).collect();
                vec![Column::from_values("r", &r), Column::from_values("c", &c)]
            }
            _ => {
                let d: Vec<i64> = j.iter().map(|j| j * 1000).collect();
                vec![Column::from_values("d", &d)]
            }
        };
        columns.push(Column::from_values("v", &j));
        array.write(&Write::sparse(columns).at(at)).unwrap();
    }
}

#[test]
fn string_hilbert_and_overlapping_range_reads_keep_to_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let cells = 300_000;
    for (kind, args) in [
        ("strings", vec![]),
        ("hilbert", vec!["--layout", "global"]),
        (
            "ints",
            vec![
                "--subarray",
                "d=0:399999999",
                "--subarray",
                "d=200000000:599999999",
            ],
        ),
    ] {
        let path = dir.path().join(kind);
        ordered_array(&path, kind, cells);
        // The result (about 15 MiB of cells) read whole takes several
        // times its size.
        assert_csv_streams_at_one_mib(kind, path.to_str().unwrap(), &args);
    }
}

/// Reads `path` as CSV with `args` under a 1 MiB budget and whole, one
/// `tdb` run each checking both its output and its peak: the same output,
/// and under 1 MiB at most half the whole read's peak and below 96 MiB (a
/// few batches' worth and the tiles of a part).
fn assert_csv_streams_at_one_mib(kind: &str, path: &str, args: &[&str]) {
    let read = |budget: &'static str| -> Vec<&str> {
        let mut all = vec!["read", path, "--format", "csv", "--memory-budget", budget];
        all.extend(args);
        all
    };
    let (small, peak_small) = support::ok_and_peak_kib_of_tdb(&read("1MiB"));
    let (whole, peak_whole) = support::ok_and_peak_kib_of_tdb(&read("4GiB"));
    assert!(
        small == whole,
        "{kind}: the output under a small budget differs from the whole read's"
    );
    println!("{kind}: peak {peak_small} KiB at 1 MiB, {peak_whole} KiB at 4 GiB");
    assert!(
        peak_small * 2 < peak_whole && peak_small < 96 << 10,
        "{kind}: peak {peak_small} KiB at 1 MiB, {peak_whole} KiB read whole"
    );
}

/// The shared start of the strings of `string_array`'s `long` array.
const LONG_START: &str = "sample/2024/run-0001/a-rather-long-shared-start/that-goes-on/\
                          and-on-past-a-hundred-bytes/cell-";

/// Sparse arrays of a string `s` and an INT64 `x` of one space tile, two
/// fragments of `cells` cells each whose cells interleave, INT64 `v`:
/// `long` (strings in runs of 50 sharing their first 94 bytes) and
/// `hilbert-strings` (runs of 50 out of order, as long, Hilbert cell
/// order). Long strings make the result large for its cells (a debug
/// build merges few cells a second).
fn string_array(path: &Path, kind: &str, cells: i64) {
    use tiledb_runtime::schema::SchemaOrder;
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
    for (parity, at) in [(0i64, 1u64), (1, 2)] {
        let j: Vec<i64> = (0..cells).map(|i| 2 * i + parity).collect();
        let s: Vec<String> = j
            .iter()
            .map(|j| match kind {
                "long" => format!("{LONG_START}{:07}", j / 50),
                _ => format!("{:07}/{LONG_START}", (j / 50) * 7919 % 12_007),
            })
            .collect();
        let x: Vec<i64> = j.iter().map(|j| j % 50).collect();
        let columns = vec![
            Column::from_strings("s", Datatype::StringAscii, &s),
            Column::from_values("x", &x),
            Column::from_values("v", &j),
        ];
        array.write(&Write::sparse(columns).at(at)).unwrap();
    }
}

#[test]
fn string_ranges_over_long_strings_and_hilbert_strings_keep_to_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let cells = 80_000;
    // Two overlapping ranges over strings alike in their first 94 bytes.
    let ranges = [
        format!("s={LONG_START}0000000:{LONG_START}0002000"),
        format!("s={LONG_START}0001500:{LONG_START}0003199"),
    ];
    for (kind, args) in [
        (
            "long",
            vec!["--subarray", &ranges[0], "--subarray", &ranges[1]],
        ),
        ("hilbert-strings", vec!["--layout", "global"]),
    ] {
        let path = dir.path().join(kind);
        string_array(&path, kind, cells);
        // Read whole, the merge holds every cell.
        assert_csv_streams_at_one_mib(kind, path.to_str().unwrap(), &args);
    }
}
