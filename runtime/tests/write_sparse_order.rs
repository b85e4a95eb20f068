//! Sparse writes against TileDB 2.30 (tiledb-py, in the test; skipped with
//! a printed reason without the venv), on random cells of every dimension
//! datatype: integers of every width (signed domains across zero, domains
//! at the type's ends), float64 with negative values and the domain's
//! bounds, and strings. For each:
//!
//! - an unordered write: the fragment's files (every field's tiles, the
//!   fragment metadata with its MBRs and non-empty domain) are byte for
//!   byte those TileDB writes of the same cells into the same schema;
//! - a global-order write of the cells in the order TileDB reads them back
//!   in global order: the same files again;
//! - the same cells with two neighbours swapped: refused by us and by
//!   TileDB, our array left without a fragment;
//! - with duplicates allowed, an unordered write holding repeated cells:
//!   TileDB reads back the same cells from our array as from its own.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{copy_dir, tiledb_python};
use serde_json::{json, Value};
use tiledb_runtime::array::Array;
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::schema::{AttributeSpec, DimensionSpec, SchemaBuilder};
use tiledb_runtime::write::{Column, Write, WriteLayout};

/// TileDB's side: `write` (a layout's write of the cells; the error's
/// text when refused) and `read` (the cells in global order).
const TILEDB: &str = r#"
import json, sys, numpy as np, tiledb
spec = json.loads(sys.argv[1])
def column(dtype, values):
    if dtype == "ascii":
        data = [v.encode() for v in values]
        starts = np.cumsum([0] + [len(d) for d in data[:-1]]).astype(np.uint64)
        return np.frombuffer(b"".join(data), dtype=np.uint8).copy(), starts
    return np.array(values, dtype=dtype), None
if spec["op"] == "write":
    try:
        with tiledb.open(spec["uri"], "w", timestamp=1) as A:
            ctx = tiledb.libtiledb.Context(A.ctx)
            q = tiledb.libtiledb.Query(ctx, A.array, tiledb.libtiledb.QueryType.WRITE)
            q.layout = getattr(tiledb.libtiledb.LayoutType, spec["layout"])
            keep = []
            for name, dtype, values in spec["columns"]:
                data, starts = column(dtype, values)
                keep.append((data, starts))
                q.set_data_buffer(name, data, len(data))
                if starts is not None:
                    q.set_offsets_buffer(name, starts, len(starts))
            q._submit()
            q.finalize()
            del q, keep
        print(json.dumps({"ok": True}))
    # TileDB's refusal; its text may quote coordinates that tiledb-py
    # cannot decode, which then surfaces as a decoding error instead.
    except (tiledb.TileDBError, UnicodeDecodeError) as e:
        print(json.dumps({"error": repr(e)}))
else:
    with tiledb.open(spec["uri"]) as A:
        r = A.query(order="G")[:]
    out = {}
    for k, v in r.items():
        # Numbers as text: exact for every integer and float.
        out[k] = [x.decode() if isinstance(x, bytes) else repr(x) for x in v.tolist()]
    print(json.dumps(out))
"#;

fn tiledb(python: &Path, spec: Value) -> Value {
    common::python_json(python, TILEDB, &spec)
}

/// One dimension datatype under test: its schema, its random values (as
/// JSON, for TileDB) and its column.
struct Case {
    name: &'static str,
    dims: [DimensionSpec; 2],
    /// numpy's name of the type (`ascii` for strings).
    dtype: &'static str,
    value: Box<dyn Fn(&mut Rng) -> Value>,
    column: fn(&str, &[Value]) -> Column,
}

/// A small xorshift generator: reproducible cells without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `[lo, hi]`, the ends themselves often.
    fn within(&mut self, lo: i128, hi: i128) -> i128 {
        match self.next() % 6 {
            0 => lo,
            1 => hi,
            _ => lo + (self.next() as i128).rem_euclid(hi - lo + 1),
        }
    }
}

macro_rules! int_case {
    ($t:ty, $name:literal, $lo:expr, $hi:expr, $extent:expr) => {
        Case {
            name: $name,
            dims: [
                DimensionSpec::new::<$t>("x", $lo, $hi, Some($extent)),
                DimensionSpec::new::<$t>("y", $lo, $hi, Some($extent)),
            ],
            dtype: $name,
            value: Box::new(|rng: &mut Rng| {
                let v = rng.within($lo as i128, $hi as i128);
                // JSON numbers beyond 2^53 travel as strings for numpy.
                json!(v.to_string())
            }),
            column: |name, values| {
                let v: Vec<$t> = values
                    .iter()
                    .map(|v| v.as_str().unwrap().parse().unwrap())
                    .collect();
                Column::from_values(name, &v)
            },
        }
    };
}

fn cases() -> Vec<Case> {
    vec![
        int_case!(i8, "int8", -100i8, 100i8, 9i8),
        int_case!(u8, "uint8", 0u8, 199u8, 20u8),
        int_case!(i16, "int16", -30_000i16, 29_999i16, 5000i16),
        int_case!(u16, "uint16", 60_000u16, 65_499u16, 500u16),
        int_case!(i32, "int32", -1_000_000i32, 999_999i32, 100_000i32),
        int_case!(u32, "uint32", 4_000_000_000u32, 4_000_999_999u32, 77_000u32),
        int_case!(i64, "int64", i64::MIN, i64::MIN + 99_999, 10_000i64),
        int_case!(
            u64,
            "uint64",
            u64::MAX - 1_000_000,
            u64::MAX - 1,
            100_000u64
        ),
        Case {
            name: "float64",
            dims: [
                DimensionSpec::new::<f64>("x", -1000.5, 1000.5, Some(100.0)),
                DimensionSpec::new::<f64>("y", -1000.5, 1000.5, Some(250.0)),
            ],
            dtype: "float64",
            value: Box::new(|rng: &mut Rng| {
                let v = match rng.next() % 5 {
                    0 => -1000.5,
                    1 => 1000.5,
                    _ => (rng.next() % 2_001_000) as f64 / 1000.0 - 1000.5,
                };
                // As text, which both sides parse exactly.
                json!(v.to_string())
            }),
            column: |name, values| {
                let v: Vec<f64> = values
                    .iter()
                    .map(|v| v.as_str().unwrap().parse().unwrap())
                    .collect();
                Column::from_values(name, &v)
            },
        },
        Case {
            name: "string",
            dims: [DimensionSpec::string("x"), DimensionSpec::string("y")],
            dtype: "ascii",
            value: Box::new(|rng: &mut Rng| {
                let len = (rng.next() % 4) as usize;
                json!((0..len)
                    .map(|_| (b'a' + (rng.next() % 3) as u8) as char)
                    .collect::<String>())
            }),
            column: |name, values| {
                let v: Vec<&str> = values.iter().map(|v| v.as_str().unwrap()).collect();
                Column::from_strings(name, Datatype::StringAscii, &v)
            },
        },
    ]
}

/// An empty array of the case's schema at `template`, created once, then
/// copied to `path`: every copy has the same schema file (its name is in
/// the fragment metadata).
fn create(path: &Path, template: &Path, case: &Case, dups: bool) {
    if !template.exists() {
        let schema = SchemaBuilder::sparse()
            .dimension(case.dims[0].clone())
            .dimension(case.dims[1].clone())
            .attribute(AttributeSpec::new("a", Datatype::Int64))
            .capacity(7)
            .allows_dups(dups);
        Array::create_path(template, &schema).unwrap();
    }
    copy_dir(template, path);
}

/// Every file of the array's one fragment, by name; none when it has none.
fn fragment_files(array: &Path) -> BTreeMap<String, Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(array.join("__fragments")) else {
        return BTreeMap::new();
    };
    let fragments: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    assert!(fragments.len() <= 1, "{fragments:?}");
    let mut out = BTreeMap::new();
    for f in &fragments {
        for file in std::fs::read_dir(f).unwrap() {
            let file = file.unwrap();
            let name = file.file_name().to_string_lossy().into_owned();
            out.insert(name, std::fs::read(file.path()).unwrap());
        }
    }
    out
}

/// The cells, a column per field: `x`, `y`, then `a` (the cell's index).
struct Cells {
    x: Vec<Value>,
    y: Vec<Value>,
    a: Vec<i64>,
}

impl Cells {
    fn write(&self, case: &Case, layout: WriteLayout) -> Write {
        Write::sparse(vec![
            (case.column)("x", &self.x),
            (case.column)("y", &self.y),
            Column::from_values("a", &self.a),
        ])
        .with_layout(layout)
        .at(1)
    }

    fn tiledb_write(&self, case: &Case, uri: &Path, layout: &str) -> Value {
        json!({"op": "write", "uri": uri, "layout": layout, "columns": [
            ["x", case.dtype, self.x], ["y", case.dtype, self.y], ["a", "int64", self.a]]})
    }
}

/// `n` random cells, repeats of coordinates removed unless `dups`.
fn random_cells(case: &Case, n: usize, seed: u64, dups: bool) -> Cells {
    let mut rng = Rng(seed);
    let mut seen = std::collections::HashSet::new();
    let mut cells = Cells {
        x: Vec::new(),
        y: Vec::new(),
        a: Vec::new(),
    };
    while cells.a.len() < n {
        let (x, y) = ((case.value)(&mut rng), (case.value)(&mut rng));
        if !seen.insert((x.to_string(), y.to_string())) && !dups {
            continue;
        }
        cells.a.push(cells.a.len() as i64);
        cells.x.push(x);
        cells.y.push(y);
    }
    cells
}

/// Which files of two fragments differ, and at which byte first.
fn differences(ours: &BTreeMap<String, Vec<u8>>, theirs: &BTreeMap<String, Vec<u8>>) -> String {
    let names: std::collections::BTreeSet<&String> = ours.keys().chain(theirs.keys()).collect();
    let mut out = Vec::new();
    for name in names {
        match (ours.get(name), theirs.get(name)) {
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => {
                let at = a
                    .iter()
                    .zip(b)
                    .position(|(x, y)| x != y)
                    .unwrap_or(a.len().min(b.len()));
                out.push(format!(
                    "{name} (ours {} bytes, TileDB's {}, first difference at byte {at})",
                    a.len(),
                    b.len()
                ));
            }
            (a, _) => out.push(format!(
                "{name} only in {}",
                if a.is_some() { "ours" } else { "TileDB's" }
            )),
        }
    }
    out.join("; ")
}

fn check_case(python: &Path, dir: &Path, case: &Case) {
    let path = |what: &str| dir.join(format!("{}-{what}", case.name));
    let cells = random_cells(
        case,
        300,
        0x9E37_79B9_7F4A_7C15 ^ case.name.len() as u64,
        false,
    );

    // Unordered: our files are TileDB's.
    let (ours, theirs) = (path("ours"), path("theirs"));
    create(&ours, &path("template"), case, false);
    create(&theirs, &path("template"), case, false);
    Array::open_path(&ours, Default::default())
        .unwrap()
        .write(&cells.write(case, WriteLayout::Unordered))
        .unwrap();
    let written = tiledb(python, cells.tiledb_write(case, &theirs, "UNORDERED"));
    assert_eq!(written, json!({"ok": true}), "{}", case.name);
    let expected = fragment_files(&theirs);
    assert!(expected.len() >= 4, "{}: {:?}", case.name, expected.keys());
    let got = fragment_files(&ours);
    assert!(
        got == expected,
        "{}: unordered: {}",
        case.name,
        differences(&got, &expected)
    );

    // Global order, as TileDB reads the cells back.
    let read = tiledb(python, json!({"op": "read", "uri": theirs}));
    let as_column = |k: &str| read[k].as_array().unwrap().clone();
    let mut global = Cells {
        x: as_column("x"),
        y: as_column("y"),
        a: read["a"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().parse().unwrap())
            .collect(),
    };
    let ordered = path("global");
    create(&ordered, &path("template"), case, false);
    Array::open_path(&ordered, Default::default())
        .unwrap()
        .write(&global.write(case, WriteLayout::GlobalOrder))
        .unwrap();
    let got = fragment_files(&ordered);
    assert!(
        got == expected,
        "{}: global order: {}",
        case.name,
        differences(&got, &expected)
    );

    // Two neighbours swapped: refused by both, our array left as it was.
    let at = global.a.len() / 2;
    global.x.swap(at - 1, at);
    global.y.swap(at - 1, at);
    global.a.swap(at - 1, at);
    let (refused, refused_theirs) = (path("refused"), path("refused-theirs"));
    create(&refused, &path("template"), case, false);
    create(&refused_theirs, &path("template"), case, false);
    let ours_result = Array::open_path(&refused, Default::default())
        .unwrap()
        .write(&global.write(case, WriteLayout::GlobalOrder));
    let theirs_result = tiledb(
        python,
        global.tiledb_write(case, &refused_theirs, "GLOBAL_ORDER"),
    );
    assert!(
        ours_result.is_err(),
        "{}: swapped cells accepted",
        case.name
    );
    assert!(
        theirs_result.get("error").is_some(),
        "{}: TileDB accepted the swapped cells: {theirs_result}",
        case.name
    );
    assert!(fragment_files(&refused).is_empty(), "{}", case.name);

    // Duplicates allowed: the same cells read back.
    let repeated = random_cells(case, 200, 77 + case.name.len() as u64, true);
    let (ours, theirs) = (path("dups-ours"), path("dups-theirs"));
    create(&ours, &path("dups-template"), case, true);
    create(&theirs, &path("dups-template"), case, true);
    Array::open_path(&ours, Default::default())
        .unwrap()
        .write(&repeated.write(case, WriteLayout::Unordered))
        .unwrap();
    let written = tiledb(python, repeated.tiledb_write(case, &theirs, "UNORDERED"));
    assert_eq!(written, json!({"ok": true}), "{}", case.name);
    let sorted = |uri: &Path| {
        let r = tiledb(python, json!({"op": "read", "uri": uri}));
        let mut rows: Vec<String> = (0..r["a"].as_array().unwrap().len())
            .map(|i| format!("{} {} {}", r["x"][i], r["y"][i], r["a"][i]))
            .collect();
        rows.sort();
        rows
    };
    let theirs_rows = sorted(&theirs);
    assert_eq!(theirs_rows.len(), 200, "{}", case.name);
    assert_eq!(sorted(&ours), theirs_rows, "{}: duplicates", case.name);
}

#[test]
fn sparse_writes_of_every_dimension_type_match_tiledb() {
    let Some(python) = tiledb_python() else {
        println!("skipped: no .venv-tiledb, so no TileDB to compare with");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for case in cases() {
        check_case(&python, dir.path(), &case);
    }
}
