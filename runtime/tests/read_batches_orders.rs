//! Reads in batches of orders once read whole before being cut: the
//! global order of a sparse array over FLOAT64 dimensions (space tiles of
//! floats). TileDB (tiledb-py 0.36.1 = TileDB 2.30) writes the array in two
//! fragments, cells on tile boundaries included, and gives its cells in
//! global order (`A.query(order="G")`); ours in batches under a small
//! budget must be the same cells in the same order, in many batches, each
//! within the budget, the first one reached having read a small part of
//! the data files (bytes counted by a wrapping `Storage`).
//!
//! Skips, saying why, without the oracle venv.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::Ordering;

use tiledb_runtime::read::{batches, Column, ReadQuery, ReadResult, ResultOrder};

#[cfg(feature = "arrow")]
use against_arrow::{assert_streams_in_tiledbs_order, whole, Family};
use common::counting::counted;

const MAKE_AND_READ: &str = r#"
import json, sys
import numpy as np
import tiledb
uri = sys.argv[1]
dims = [tiledb.Dim("x", domain=(0.0, 100.0), tile=10.0, dtype=np.float64),
        tiledb.Dim("y", domain=(-50.0, 50.0), tile=7.5, dtype=np.float64)]
schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=100,
                            cell_order="col-major", tile_order="row-major",
                            attrs=[tiledb.Attr("a", dtype=np.int64)])
tiledb.Array.create(uri, schema)
rng = np.random.default_rng(7)
for at, n in [(1, 12000), (2, 6000)]:
    x = rng.uniform(0.0, 100.0, n)
    y = rng.uniform(-50.0, 50.0, n)
    # Cells on tile boundaries (and the domain's ends).
    x[:30] = rng.integers(0, 11, 30) * 10.0
    y[30:60] = rng.integers(0, 14, 30) * 7.5 - 50.0
    with tiledb.open(uri, "w", timestamp=at) as A:
        A[x, y] = {"a": np.arange(n) + at * 100000}
with tiledb.open(uri) as A:
    r = A.query(order="G")[:]
    print(json.dumps({"x": [float(v).hex() for v in r["x"]],
                      "y": [float(v).hex() for v in r["y"]],
                      "a": [int(v) for v in r["a"]]}))
"#;

/// The cells of `result` as the script prints them.
fn cells_json(result: &ReadResult) -> serde_json::Value {
    let floats = |c: &Column| -> Vec<String> {
        (0..c.len())
            .map(|i| hex_float(f64::from_le_bytes(c.cell(i).0.try_into().unwrap())))
            .collect()
    };
    let column = |name: &str| {
        result
            .dimensions
            .iter()
            .chain(&result.attributes)
            .find(|c| c.name == name)
            .unwrap()
    };
    let a: Vec<i64> = (0..column("a").len())
        .map(|i| i64::from_le_bytes(column("a").cell(i).0.try_into().unwrap()))
        .collect();
    serde_json::json!({"x": floats(column("x")), "y": floats(column("y")), "a": a})
}

/// Python's `float.hex()` of `v`: exact, to compare floats as text.
fn hex_float(v: f64) -> String {
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0x0.0p+0"
        } else {
            "0x0.0p+0"
        }
        .to_string();
    }
    let bits = v.to_bits();
    let sign = if v < 0.0 { "-" } else { "" };
    let exponent = ((bits >> 52) & 0x7ff) as i64;
    let mantissa = bits & ((1 << 52) - 1);
    let (lead, exponent) = if exponent == 0 {
        (0, -1022)
    } else {
        (1, exponent - 1023)
    };
    format!("{sign}0x{lead}.{mantissa:013x}p{exponent:+}")
}

#[test]
fn float_global_order_streams_in_batches_as_tiledb_orders_it() {
    let Some(python) = common::tiledb_python() else {
        eprintln!("skipped: no tiledb-py venv (.venv-tiledb or $TILEDB_PY)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("floats");
    let out = Command::new(&python)
        .arg("-c")
        .arg(MAKE_AND_READ)
        .arg(&path)
        .output()
        .expect("run tiledb-py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    let budget = 32 << 10;
    let (array, counter) = counted(Path::new(&path));
    let query = ReadQuery {
        layout: ResultOrder::Global,
        ..ReadQuery::default()
    };
    let mut joined: Option<ReadResult> = None;
    let mut count = 0;
    let mut read_before_first = None;
    for batch in batches(array.snapshot(), &query, budget).unwrap() {
        let batch = batch.unwrap();
        read_before_first.get_or_insert(counter.load(Ordering::Relaxed));
        let bytes = common::result_bytes(&batch);
        assert!(bytes <= budget, "a batch of {bytes} bytes");
        count += 1;
        match &mut joined {
            None => joined = Some(batch),
            Some(all) => append(all, &batch),
        }
    }
    let total = counter.load(Ordering::Relaxed);
    let first = read_before_first.unwrap();
    assert!(count > 10, "{count} batches");
    assert!(
        first * 4 <= total,
        "the first batch came after {first} of {total} data bytes: read whole"
    );
    let ours = cells_json(&joined.unwrap());
    for name in ["a", "x", "y"] {
        let (o, t) = (
            ours[name].as_array().unwrap(),
            expected[name].as_array().unwrap(),
        );
        assert_eq!(o.len(), t.len(), "{name}: cell count");
        if let Some(i) = (0..o.len()).find(|&i| o[i] != t[i]) {
            panic!("{name}[{i}]: {} TileDB {}", o[i], t[i]);
        }
    }
}

/// Reads in batches against tiledb-py's `return_arrow=True` tables of the
/// same reads (`tests/arrow/oracle.py --reads`), compared as Arrow arrays.
#[cfg(feature = "arrow")]
mod against_arrow {
    use std::fs::File;
    use std::path::Path;
    use std::process::Command;
    use std::sync::atomic::Ordering;

    use arrow_array::RecordBatch;
    use arrow_ipc::reader::FileReader;
    use serde_json::{json, Value};
    use tiledb_runtime::array::{Array, OpenOptions};
    use tiledb_runtime::read::arrow::record_batch;
    use tiledb_runtime::read::{batches, read, Range, ReadQuery, ReadResult, ResultOrder};

    use super::common;

    /// Runs `script` (which makes the arrays under the folder it is given)
    /// and then the oracle on `reads` (their `array` relative to that
    /// folder): TileDB's table of each read. `None` without the venv.
    pub(super) fn tiledb_tables(
        dir: &Path,
        script: &str,
        mut reads: Vec<Value>,
    ) -> Option<Vec<RecordBatch>> {
        let Some(python) = common::tiledb_python() else {
            eprintln!("skipped: no tiledb-py venv (.venv-tiledb or $TILEDB_PY)");
            return None;
        };
        let made = Command::new(&python)
            .args(["-c", script])
            .arg(dir)
            .output()
            .unwrap();
        assert!(
            made.status.success(),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
        for r in &mut reads {
            let array = dir.join(r["array"].as_str().unwrap());
            r["array"] = array.to_str().unwrap().into();
        }
        let out = dir.join("oracle");
        std::fs::create_dir_all(&out).unwrap();
        let reads_file = out.join("reads.json");
        std::fs::write(&reads_file, serde_json::to_string(&reads).unwrap()).unwrap();
        let status = Command::new(python)
            .arg(common::workspace().join("runtime/tests/arrow/oracle.py"))
            .arg("--reads")
            .arg(&reads_file)
            .arg(&out)
            .env("PYTHONWARNINGS", "ignore")
            .status()
            .unwrap();
        assert!(status.success(), "the oracle failed");
        Some(
            (0..reads.len())
                .map(|i| {
                    let file = File::open(out.join(format!("{i}.arrow"))).unwrap();
                    let reader = FileReader::try_new(file, None).unwrap();
                    let schema = reader.schema();
                    reader
                        .map(Result::unwrap)
                        .next()
                        .unwrap_or_else(|| RecordBatch::new_empty(schema))
                })
                .collect(),
        )
    }

    /// A read in batches: the batches joined, how many there were, and
    /// the share of the data bytes read before the first one came.
    pub(super) struct Batched {
        pub(super) joined: RecordBatch,
        pub(super) count: usize,
        pub(super) first_share: f64,
    }

    /// Reads `query` on `path` in batches of at most `budget` bytes; each
    /// batch is checked to hold at most the budget, and the joined cells
    /// to equal the whole read's.
    pub(super) fn in_batches(path: &Path, query: &ReadQuery, budget: u64) -> Batched {
        let (array, counter) = super::counted(path);
        let mut joined: Option<ReadResult> = None;
        let mut count = 0;
        let mut first = None;
        for batch in batches(array.snapshot(), query, budget).unwrap() {
            let batch = batch.unwrap();
            first.get_or_insert(counter.load(Ordering::Relaxed));
            let bytes = common::result_bytes(&batch);
            assert!(bytes <= budget, "a batch of {bytes} bytes");
            count += 1;
            match &mut joined {
                None => joined = Some(batch),
                Some(all) => super::append(all, &batch),
            }
        }
        let total = counter.load(Ordering::Relaxed);
        let schema = array.schema();
        let joined = record_batch(schema, joined.expect("some batch")).unwrap();
        let fresh = Array::open_path(path, OpenOptions::default()).unwrap();
        let whole = record_batch(schema, read(fresh.snapshot(), query).unwrap()).unwrap();
        assert_same("the batches joined against the whole read", &joined, &whole);
        Batched {
            joined,
            count,
            first_share: first.unwrap_or(0) as f64 / total.max(1) as f64,
        }
    }

    /// A bound of a range, as the oracle's JSON gives it to TileDB and as
    /// our query holds it (little-endian bytes, or a string's bytes).
    pub(super) trait Bound {
        fn json(&self) -> Value;
        fn bytes(&self) -> Vec<u8>;
    }

    impl Bound for i64 {
        fn json(&self) -> Value {
            (*self).into()
        }
        fn bytes(&self) -> Vec<u8> {
            self.to_le_bytes().to_vec()
        }
    }

    impl Bound for i32 {
        fn json(&self) -> Value {
            (*self).into()
        }
        fn bytes(&self) -> Vec<u8> {
            self.to_le_bytes().to_vec()
        }
    }

    impl Bound for &str {
        fn json(&self) -> Value {
            (*self).into()
        }
        fn bytes(&self) -> Vec<u8> {
            self.as_bytes().to_vec()
        }
    }

    impl Bound for String {
        fn json(&self) -> Value {
            self.as_str().into()
        }
        fn bytes(&self) -> Vec<u8> {
            self.as_bytes().to_vec()
        }
    }

    /// One read of a family: an array the family's script made, TileDB's
    /// order (`C` row-major, `G` global, `U` unordered) and ranges on one
    /// dimension, as (JSON, bytes) bounds.
    pub(super) struct OrderedRead {
        array: &'static str,
        order: &'static str,
        dimension: &'static str,
        ranges: Vec<((Value, Value), Range)>,
    }

    /// A read of all of `array` in TileDB's `order`.
    pub(super) fn whole(array: &'static str, order: &'static str) -> OrderedRead {
        OrderedRead {
            array,
            order,
            dimension: "",
            ranges: Vec::new(),
        }
    }

    impl OrderedRead {
        /// The read limited to `ranges` on `dimension` (the first one).
        pub(super) fn on<B: Bound>(mut self, dimension: &'static str, ranges: &[(B, B)]) -> Self {
            self.dimension = dimension;
            self.ranges = ranges
                .iter()
                .map(|(a, b)| ((a.json(), b.json()), (a.bytes(), b.bytes())))
                .collect();
            self
        }

        fn describe(&self) -> String {
            let bounds: Vec<_> = self.ranges.iter().map(|(json, _)| json).collect();
            format!("{} {} {bounds:?}", self.array, self.order)
        }

        /// The read as the oracle takes it (`tests/arrow/oracle.py --reads`).
        fn oracle(&self) -> Value {
            let ranges = if self.ranges.is_empty() {
                json!([])
            } else {
                let bounds: Vec<_> = self
                    .ranges
                    .iter()
                    .map(|((a, b), _)| json!([a, b]))
                    .collect();
                json!([[self.dimension, bounds]])
            };
            json!({"array": self.array, "ranges": ranges, "attrs": ["a"], "order": self.order})
        }

        /// The read as our query: ranges on the first dimension.
        fn query(&self) -> ReadQuery {
            ReadQuery {
                ranges: vec![self.ranges.iter().map(|(_, r)| r.clone()).collect()],
                layout: match self.order {
                    "G" => ResultOrder::Global,
                    "U" => ResultOrder::Unordered,
                    _ => ResultOrder::RowMajor,
                },
                ..ReadQuery::default()
            }
        }
    }

    /// Arrays made by one TileDB script and the reads of them compared.
    pub(super) struct Family {
        /// The Python that makes the arrays under the folder it is given.
        pub(super) arrays: String,
        pub(super) reads: Vec<OrderedRead>,
        /// Each read must come in more batches than this (of 4 KiB).
        pub(super) more_batches_than: usize,
    }

    /// Every read of `family` in batches of at most 4 KiB holds TileDB's
    /// cells in TileDB's order, in more batches than the family asks, the
    /// first one reached having read under a quarter of the data bytes.
    /// Skips, saying why, without the oracle venv.
    pub(super) fn assert_streams_in_tiledbs_order(family: Family) {
        let oracle = family.reads.iter().map(OrderedRead::oracle).collect();
        let dir = tempfile::tempdir().unwrap();
        let Some(tables) = tiledb_tables(dir.path(), &family.arrays, oracle) else {
            return;
        };
        for (read, theirs) in family.reads.iter().zip(&tables) {
            let what = read.describe();
            let ours = in_batches(&dir.path().join(read.array), &read.query(), 4 << 10);
            println!(
                "{what}: {} batches, the first after {:.0}% of the data",
                ours.count,
                ours.first_share * 100.0
            );
            assert!(
                ours.count > family.more_batches_than,
                "{what}: {} batches",
                ours.count
            );
            assert_same(&what, &ours.joined, theirs);
            assert!(
                ours.first_share < 0.25,
                "{what}: the first batch after {:.0}% of the data: read whole",
                ours.first_share * 100.0
            );
        }
    }

    /// Every column of TileDB's table equals ours, as Arrow data.
    pub(super) fn assert_same(what: &str, ours: &RecordBatch, theirs: &RecordBatch) {
        assert_eq!(ours.num_rows(), theirs.num_rows(), "{what}: rows");
        for (field, column) in theirs.schema().fields().iter().zip(theirs.columns()) {
            let mine = ours
                .column_by_name(field.name())
                .unwrap_or_else(|| panic!("{what}: no column {}", field.name()));
            if mine.to_data() != column.to_data() {
                let first = (0..mine.len())
                    .find(|&i| mine.slice(i, 1).to_data() != column.slice(i, 1).to_data());
                let around = |c: &dyn arrow_array::Array| {
                    let i = first.unwrap_or(0).saturating_sub(2);
                    format!("{:?}", c.slice(i, 5.min(c.len() - i)))
                };
                panic!(
                    "{what}: {} differs first at row {first:?}: {} against {}",
                    field.name(),
                    around(mine.as_ref()),
                    around(column.as_ref())
                );
            }
        }
    }
}

/// Appends the cells of `part` to `all` (the same fields).
fn append(all: &mut ReadResult, part: &ReadResult) {
    for (into, part) in all
        .dimensions
        .iter_mut()
        .chain(&mut all.attributes)
        .zip(part.dimensions.iter().chain(&part.attributes))
    {
        for i in 0..part.len() {
            let (bytes, valid) = part.cell(i);
            into.push(bytes, valid);
        }
    }
}

#[cfg(feature = "arrow")]
/// Three one-dimensional sparse arrays read with overlapping, unsorted
/// ranges in row-major order: cells from two fragments (TileDB sorts them
/// by coordinate, a cell once per range holding it), from one fragment
/// (range order), and from one fragment though a second one's tiles meet
/// the ranges (range order: found by reading the coordinates first).
const MULTI_RANGE_ARRAYS: &str = r#"
import sys, os
import numpy as np
import tiledb
root = sys.argv[1]
def make(name, fragments):
    uri = os.path.join(root, name)
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 1_000_000), tile=1000, dtype=np.int64))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=True, capacity=500,
                        attrs=[tiledb.Attr("a", dtype=np.int64)]))
    for t, d in enumerate(fragments, 1):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[d] = {"a": d * 10 + t}
make("two", [np.arange(0, 20000, 2), np.arange(1, 20000, 2)])
make("one", [np.arange(0, 20000, 2)])
make("one-met", [np.arange(0, 20000, 2), np.array([0, 19999])])
"#;

#[cfg(feature = "arrow")]
#[test]
fn overlapping_ranges_stream_in_tiledbs_order() {
    let ranges: [(i64, i64); 4] = [(3000, 8000), (100, 5000), (50, 60), (7000, 7100)];
    // "one-met" learns the order from the second fragment's cells alone
    // (none in the ranges), not by reading every coordinate.
    let reads = ["two", "one", "one-met"].map(|array| whole(array, "C").on("d", &ranges));
    assert_streams_in_tiledbs_order(Family {
        arrays: MULTI_RANGE_ARRAYS.to_string(),
        reads: reads.into(),
        more_batches_than: 15,
    });
}

#[cfg(feature = "arrow")]
/// Sparse arrays whose order is led by a string dimension: `pair` (an
/// ASCII string `s` and an INT64 `x` of one space tile, so that the tiles
/// follow the strings) and `word` (the string alone), each
/// written in two fragments whose cells overlap (the later one wins).
/// Strings repeat in long runs and are prefixes of one another.
const STRING_ARRAYS: &str = r#"
import sys, os
import numpy as np
import tiledb
root = sys.argv[1]
rng = np.random.default_rng(11)
words = ["a", "ab", "aba", "abb", "b", "ba", "bab", "c", "chr1", "chr10", "chr2", "z", "zz"]
words += ["w%03d" % i for i in range(60)]
def make(name, with_x):
    uri = os.path.join(root, name)
    dims = [tiledb.Dim("s", domain=(None, None), tile=None, dtype="ascii")]
    if with_x:
        # One space tile: the global order is led by the string.
        dims.append(tiledb.Dim("x", domain=(0, 100_000), tile=100_001, dtype=np.int64))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True,
                        capacity=150, attrs=[tiledb.Attr("a", dtype=np.int64)]))
    for t, n in [(1, 12000), (2, 5000)]:
        # A few words hold most cells: runs longer than a tile.
        p = np.where(np.arange(len(words)) % 9 == 0, 20.0, 1.0)
        s = rng.choice(words, n, p=p / p.sum())
        with tiledb.open(uri, "w", timestamp=t) as A:
            if with_x:
                A[s, rng.permutation(100_001)[:n]] = {"a": np.arange(n) + 100_000 * t}
            else:
                # Distinct within the fragment: a word and a number.
                pool = np.array([w + str(i) for w in words for i in range(300)])
                s = rng.choice(pool, n, replace=False)
                A[s] = {"a": np.arange(n) + 100_000 * t}
make("pair", True)
make("word", False)
"#;

#[cfg(feature = "arrow")]
#[test]
fn string_led_orders_stream_in_tiledbs_order() {
    assert_streams_in_tiledbs_order(Family {
        arrays: STRING_ARRAYS.to_string(),
        reads: vec![
            whole("pair", "C"),
            whole("pair", "G"),
            whole("pair", "C").on("s", &[("ab", "chr10")]),
            whole("word", "G"),
            whole("word", "C").on("s", &[("abb", "w030")]),
        ],
        more_batches_than: 10,
    });
}

#[cfg(feature = "arrow")]
/// Sparse arrays in Hilbert cell order, each in two fragments whose cells
/// overlap (the later one wins): `hint` over two INT32 dimensions, `hfloat`
/// over a FLOAT64 and an INT64 one.
const HILBERT_ARRAYS: &str = r#"
import sys, os
import numpy as np
import tiledb
root = sys.argv[1]
rng = np.random.default_rng(5)
def make(name, dims, draw):
    uri = os.path.join(root, name)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True,
                        cell_order="hilbert", capacity=120,
                        attrs=[tiledb.Attr("a", dtype=np.int64)]))
    for t, n in [(1, 9000), (2, 4000)]:
        coords = draw(n)
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[coords] = {"a": np.arange(n) + 100_000 * t}
def ints(n):
    flat = rng.choice(300 * 300, n, replace=False)
    return (flat // 300 - 100).astype(np.int32), (flat % 300).astype(np.int32)
def floats(n):
    flat = rng.choice(500 * 400, n, replace=False)
    return (flat // 400) * 0.25 - 60.0, (flat % 400).astype(np.int64) * 1000
make("hint", [tiledb.Dim("x", domain=(-100, 199), tile=50, dtype=np.int32),
              tiledb.Dim("y", domain=(0, 299), tile=50, dtype=np.int32)], ints)
make("hfloat", [tiledb.Dim("f", domain=(-60.0, 80.0), tile=10.0, dtype=np.float64),
                tiledb.Dim("z", domain=(0, 1_000_000), tile=1000, dtype=np.int64)], floats)
"#;

#[cfg(feature = "arrow")]
#[test]
fn hilbert_order_streams_in_tiledbs_order() {
    assert_streams_in_tiledbs_order(Family {
        arrays: HILBERT_ARRAYS.to_string(),
        reads: vec![
            whole("hint", "G"),
            whole("hint", "G").on("x", &[(-20i32, 150i32)]),
            whole("hfloat", "G"),
        ],
        more_batches_than: 10,
    });
}

#[cfg(feature = "arrow")]
/// Strings alike in their first 20 bytes and more: `long` (one fragment)
/// and `longpair` (with an INT64 `x` of one space tile, two fragments whose
/// cells overlap), whose strings share `sample/2024/run-0001/` and differ
/// only after it.
const LONG_PREFIX_ARRAYS: &str = r#"
def make_long(name, with_x, fragments):
    uri = os.path.join(root, name)
    dims = [tiledb.Dim("s", domain=(None, None), tile=None, dtype="ascii")]
    if with_x:
        dims.append(tiledb.Dim("x", domain=(0, 100_000), tile=100_001, dtype=np.int64))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True,
                        capacity=100, attrs=[tiledb.Attr("a", dtype=np.int64)]))
    for t, n in fragments:
        with tiledb.open(uri, "w", timestamp=t) as A:
            if with_x:
                s = ["sample/2024/run-0001/cell-%02d" % i for i in rng.integers(0, 12, n)]
                A[s, rng.permutation(100_001)[:n]] = {"a": np.arange(n) + 100_000 * t}
            else:
                cells = rng.choice(100_000, n, replace=False)
                A[["sample/2024/run-0001/cell-%06d" % i for i in cells]] = {
                    "a": np.arange(n) + 100_000 * t}
make_long("long", False, [(1, 9000)])
make_long("longpair", True, [(1, 9000), (2, 4000)])
"#;

#[cfg(feature = "arrow")]
#[test]
fn string_multi_range_and_long_shared_starts_stream_in_tiledbs_order() {
    let p = |tail: &str| format!("sample/2024/run-0001/cell-{tail}");
    // Ranges on `s` sorted and apart, overlapping and unsorted; one
    // fragment (range order) and two (coordinate order).
    assert_streams_in_tiledbs_order(Family {
        arrays: format!("{STRING_ARRAYS}{LONG_PREFIX_ARRAYS}"),
        reads: vec![
            whole("pair", "C").on("s", &[("ab", "b"), ("c", "chr2"), ("w010", "w040")]),
            // TileDB refuses several ranges in global order; unordered
            // reads of an array without duplicates come in global order.
            whole("pair", "U").on("s", &[("w020", "w050"), ("ab", "b"), ("w010", "w030")]),
            whole("word", "C").on("s", &[("w0", "w03"), ("abb", "chr"), ("w020", "w1")]),
            whole("long", "G"),
            whole("long", "C").on(
                "s",
                &[(p("050000"), p("090000")), (p("001000"), p("060000"))],
            ),
            whole("longpair", "G"),
            whole("longpair", "C").on("s", &[(p("03"), p("07")), (p("00"), p("04"))]),
        ],
        more_batches_than: 10,
    });
}

#[cfg(feature = "arrow")]
/// Sparse arrays in Hilbert cell order with a string dimension, in two
/// fragments whose cells overlap: `hstr` (an ASCII `s` and an INT32 `y`;
/// strings sharing their first bytes, so several map alike) and `hword`
/// (the string alone, some strings with bytes past ASCII, which TileDB
/// maps sign-extended).
const HILBERT_STRING_ARRAYS: &str = r#"
import sys, os
import numpy as np
import tiledb
root = sys.argv[1]
rng = np.random.default_rng(9)
def make(name, dims, draw):
    uri = os.path.join(root, name)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True,
                        cell_order="hilbert", capacity=100,
                        attrs=[tiledb.Attr("a", dtype=np.int64)]))
    for t, n in [(1, 8000), (2, 3000)]:
        coords = draw(n)
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[coords] = {"a": np.arange(n) + 100_000 * t}
def pairs(n):
    flat = rng.choice(400 * 300, n, replace=False)
    s = ["k%03d/%s" % (i // 3, "xyz"[i % 3] * (i % 5 + 1)) for i in flat // 300]
    return s, (flat % 300).astype(np.int32)
def words(n):
    # As bytes: tiledb-py refuses non-ASCII text for an ASCII dimension.
    pool = ["w%05d" % i for i in range(20000)] + ["\u00e9t\u00e9%04d" % i for i in range(2000)]
    pool = [w.encode() for w in pool]
    return np.array([pool[i] for i in rng.choice(len(pool), n, replace=False)], dtype=object)
make("hstr", [tiledb.Dim("s", domain=(None, None), tile=None, dtype="ascii"),
              tiledb.Dim("y", domain=(0, 299), tile=50, dtype=np.int32)], pairs)
make("hword", [tiledb.Dim("s", domain=(None, None), tile=None, dtype="ascii")], words)
"#;

#[cfg(feature = "arrow")]
#[test]
fn hilbert_order_over_strings_streams_in_tiledbs_order() {
    assert_streams_in_tiledbs_order(Family {
        arrays: HILBERT_STRING_ARRAYS.to_string(),
        reads: vec![
            whole("hstr", "G"),
            whole("hstr", "G").on("s", &[("k010", "k300")]),
            whole("hword", "G"),
        ],
        more_batches_than: 10,
    });
}

#[cfg(feature = "arrow")]
#[path = "read_batches_orders/whole_pass.rs"]
mod whole_pass;

#[path = "read_batches_orders/tiles_once.rs"]
mod tiles_once;
