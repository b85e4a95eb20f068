//! The inputs `tdb write` refuses, against TileDB's refusal of the same
//! input. Each case is one table: written by pyarrow as an Arrow IPC file
//! and by the test as CSV, given to `tdb write` (both must exit 2 and leave
//! every file of the array as it was), and given to TileDB 2.30 as tiledb-py
//! takes a table — its columns as numpy arrays (`to_numpy`; a column with
//! nulls as objects with `None`, tiledb-py's null), `A[coords] =
//! {...}` for a sparse array, `A[lo:hi] = {...}` for a dense one — which
//! must refuse it too and add no fragment. Cases both accept check the
//! harness can tell; the differences are cases of their own, with TileDB's
//! answer asserted, so a change on either side shows.
//!
//! Without the oracle venv (pyarrow writes the IPC files) the test says so
//! and checks the CSV half only.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use support::{files, tdb, tiledb_python};

const SPARSE: &str = r#"array_type = "sparse"
allows_duplicates = false
[[dimensions]]
name = "d"
type = "INT32"
domain = [0, 9]
tile_extent = 5
[[attributes]]
name = "a"
type = "INT32"
[[attributes]]
name = "n"
type = "INT32"
nullable = true
"#;

const DENSE: &str = r#"array_type = "dense"
[[dimensions]]
name = "d"
type = "INT32"
domain = [0, 9]
tile_extent = 5
[[attributes]]
name = "a"
type = "INT32"
"#;

const ENUMERATED: &str = r#"array_type = "sparse"
[[dimensions]]
name = "d"
type = "INT32"
domain = [0, 9]
tile_extent = 5
[[attributes]]
name = "e"
type = "INT8"
enumeration = "colors"
[[enumerations]]
name = "colors"
type = "STRING_UTF8"
cell_val_num = "var"
values = ["red", "green"]
"#;

/// What TileDB answers a case.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Tiledb {
    Refuses,
    Accepts,
}

/// One case: name, schema, the table (column → (Arrow type, values)), what
/// we answer (`Some(needle)`: refused, the message saying it), TileDB's.
struct Case {
    name: &'static str,
    schema: &'static str,
    table: Value,
    ours: Option<&'static str>,
    tiledb: Tiledb,
}

fn cases() -> Vec<Case> {
    let col = |t: &str, v: Value| json!({"type": t, "values": v});
    let sparse =
        |d: Value, a: Value, n: Value| json!({"d": col("int32", d), "a": a, "n": col("int32", n)});
    vec![
        Case {
            name: "accepted",
            schema: SPARSE,
            table: sparse(
                json!([1, 2]),
                col("int32", json!([10, 20])),
                json!([1, null]),
            ),
            ours: None,
            tiledb: Tiledb::Accepts,
        },
        Case {
            name: "wrong type",
            schema: SPARSE,
            table: sparse(
                json!([1, 2]),
                col("string", json!(["x", "y"])),
                json!([1, 2]),
            ),
            ours: Some("a"),
            tiledb: Tiledb::Refuses,
        },
        Case {
            name: "coordinate outside the domain",
            schema: SPARSE,
            table: sparse(json!([5, 10]), col("int32", json!([1, 2])), json!([1, 2])),
            ours: Some("outside"),
            tiledb: Tiledb::Refuses,
        },
        Case {
            name: "null on a field that is not nullable",
            schema: SPARSE,
            table: sparse(json!([1, 2]), col("int32", json!([1, null])), json!([1, 2])),
            ours: Some("not nullable"),
            tiledb: Tiledb::Refuses,
        },
        Case {
            name: "duplicate coordinates where not allowed",
            schema: SPARSE,
            table: sparse(json!([3, 3]), col("int32", json!([1, 2])), json!([1, 2])),
            ours: Some("uplicate"),
            tiledb: Tiledb::Refuses,
        },
        Case {
            name: "an attribute missing",
            schema: SPARSE,
            table: json!({"d": col("int32", json!([1, 2])), "a": col("int32", json!([1, 2]))}),
            ours: Some("n"),
            tiledb: Tiledb::Refuses,
        },
        Case {
            name: "a field the array does not have",
            schema: SPARSE,
            table: json!({"d": col("int32", json!([1, 2])), "a": col("int32", json!([1, 2])),
                          "n": col("int32", json!([1, 2])), "zz": col("int32", json!([1, 2]))}),
            ours: Some("zz"),
            tiledb: Tiledb::Refuses,
        },
        // tiledb-py clips the slice `A[8:12]` to the domain; TileDB then
        // refuses the four cells for two.
        Case {
            name: "dense cells outside the domain",
            schema: DENSE,
            table: json!({"d": col("int32", json!([8, 9, 10, 11])), "a": col("int32", json!([1, 2, 3, 4]))}),
            ours: Some("outside"),
            tiledb: Tiledb::Refuses,
        },
        Case {
            name: "dense cells inside the domain",
            schema: DENSE,
            table: json!({"d": col("int32", json!([2, 3, 4])), "a": col("int32", json!([1, 2, 3]))}),
            ours: None,
            tiledb: Tiledb::Accepts,
        },
        // An index outside the enumeration: TileDB stores it, and so do we
        // (as `tdb read` prints such a cell: its index).
        Case {
            name: "an enumeration index outside the enumeration",
            schema: ENUMERATED,
            table: json!({"d": col("int32", json!([1, 2])), "e": col("int8", json!([0, 5]))}),
            ours: None,
            tiledb: Tiledb::Accepts,
        },
        // Differences, TileDB's answer asserted. A value that does not fit
        // the attribute's type: numpy's cast in tiledb-py wraps it (2^40
        // is stored as 0); we refuse.
        Case {
            name: "a value that does not fit INT32",
            schema: SPARSE,
            table: sparse(
                json!([1, 2]),
                col("int64", json!([1, 1_099_511_627_776i64])),
                json!([1, 2]),
            ),
            ours: Some("fit"),
            tiledb: Tiledb::Accepts,
        },
        // A value not in the enumeration: we refuse it (Arrow dictionary,
        // CSV text). tiledb-py takes no enumeration values at all, only
        // indexes: it refuses this table, and as well one of valid values.
        Case {
            name: "a value not in the enumeration",
            schema: ENUMERATED,
            table: json!({"d": col("int32", json!([1, 2])), "e": col("dictionary", json!(["red", "blue"]))}),
            ours: Some("blue"),
            tiledb: Tiledb::Refuses,
        },
        Case {
            name: "enumeration values (TileDB takes indexes only)",
            schema: ENUMERATED,
            table: json!({"d": col("int32", json!([1, 2])), "e": col("dictionary", json!(["red", "green"]))}),
            ours: None,
            tiledb: Tiledb::Refuses,
        },
    ]
}

/// Writes the table as pyarrow would (IPC file) and tries it on TileDB's
/// copy: `{"refused": bool, "error": str, "added": fragments added}`.
const TILEDB_SIDE: &str = r#"
import json, sys, numpy as np, pyarrow as pa, tiledb
spec = json.loads(sys.argv[1])
types = {"int8": pa.int8(), "int32": pa.int32(), "int64": pa.int64(), "string": pa.string()}
cols = {}
for name, c in spec["table"].items():
    if c["type"] == "dictionary":
        cols[name] = pa.array(c["values"], pa.string()).dictionary_encode()
    else:
        cols[name] = pa.array(c["values"], types[c["type"]])
table = pa.table(cols)
with pa.OSFile(spec["ipc"], "wb") as f, pa.ipc.new_file(f, table.schema) as w:
    w.write_table(table)
uri = spec["uri"]
before = len(tiledb.array_fragments(uri))
# A column with nulls as objects with None, which tiledb-py turns into validity (its
# to_numpy would give NaN, which numpy casts to some integer).
def numpy(c):
    return np.array(c.to_pylist(), dtype=object) if c.null_count else c.to_numpy(zero_copy_only=False)
data = {n: numpy(table[n]) for n in table.column_names if n != "d"}
d = table["d"].to_numpy()
answer = {"refused": False, "error": ""}
try:
    with tiledb.open(uri, "w") as A:
        if A.schema.sparse:
            A[d] = data
        else:
            A[int(d.min()):int(d.max()) + 1] = data
except Exception as e:
    answer = {"refused": True, "error": f"{type(e).__name__}: {e}"}
answer["added"] = len(tiledb.array_fragments(uri)) - before
print(json.dumps(answer))
"#;

/// The table as the CSV `tdb read` prints: a header, a row per cell, null
/// an empty field.
fn csv_of(table: &Value) -> String {
    let columns: Vec<(&String, &Vec<Value>)> = table
        .as_object()
        .unwrap()
        .iter()
        .map(|(n, c)| (n, c["values"].as_array().unwrap()))
        .collect();
    let mut text = columns
        .iter()
        .map(|(n, _)| n.as_str())
        .collect::<Vec<_>>()
        .join(",");
    text.push('\n');
    for row in 0..columns[0].1.len() {
        let cells: Vec<String> = columns
            .iter()
            .map(|(_, v)| match &v[row] {
                Value::Null => String::new(),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        text += &cells.join(",");
        text.push('\n');
    }
    text
}

/// `tdb write` of `input` into a fresh array of `schema`: the answer, and
/// whether a refusal left every file as it was.
fn ours(dir: &Path, schema: &Path, input: &Path, case: &Case) {
    let array = dir.join(format!(
        "ours.{}",
        input.extension().unwrap().to_str().unwrap()
    ));
    let a = array.to_str().unwrap();
    let created = tdb(&["create", a, "--schema", schema.to_str().unwrap()]);
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let before = files(&array);
    let out = tdb(&["write", a, "--input", input.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match case.ours {
        None => assert!(
            out.status.success(),
            "{}: tdb write of {} refused: {stderr}",
            case.name,
            input.display()
        ),
        Some(needle) => {
            assert_eq!(
                out.status.code(),
                Some(2),
                "{}: tdb write of {} was not refused: {stderr}",
                case.name,
                input.display()
            );
            assert!(
                stderr.contains(needle),
                "{}: {stderr:?} does not name {needle:?}",
                case.name
            );
            assert_eq!(
                files(&array),
                before,
                "{}: the refused write changed the array",
                case.name
            );
        }
    }
}

#[test]
fn refused_inputs_are_refused_by_tiledb_too() {
    let python = tiledb_python();
    if python.is_none() {
        println!("TileDB does not answer, and no Arrow files are made: no oracle (.venv-tiledb or $TILEDB_PY); the CSV half only");
    }
    let mut agreed = 0;
    for (i, case) in cases().into_iter().enumerate() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let schema = dir.join("schema.toml");
        std::fs::write(&schema, case.schema).unwrap();
        let csv = dir.join("in.csv");
        std::fs::write(&csv, csv_of(&case.table)).unwrap();
        ours(dir, &schema, &csv, &case);
        let Some(python) = &python else { continue };
        let theirs = dir.join("theirs");
        let t = theirs.to_str().unwrap();
        let created = tdb(&["create", t, "--schema", schema.to_str().unwrap()]);
        assert!(created.status.success());
        let ipc = dir.join("in.arrow");
        let spec = json!({"table": case.table, "ipc": ipc, "uri": theirs});
        let run = Command::new(python)
            .args(["-c", TILEDB_SIDE, &spec.to_string()])
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "case {i} {}: {}",
            case.name,
            String::from_utf8_lossy(&run.stderr)
        );
        let answer: Value = serde_json::from_slice(&run.stdout).unwrap();
        let tiledb = if answer["refused"] == json!(true) {
            Tiledb::Refuses
        } else {
            Tiledb::Accepts
        };
        assert_eq!(
            tiledb, case.tiledb,
            "{}: TileDB answered {answer}",
            case.name
        );
        let added = answer["added"].as_i64().unwrap();
        assert_eq!(
            added,
            i64::from(tiledb == Tiledb::Accepts),
            "{}: TileDB added {added} fragments",
            case.name
        );
        ours(dir, &schema, &ipc, &case);
        if (tiledb == Tiledb::Refuses) == case.ours.is_some() {
            agreed += 1;
        }
        println!(
            "{}: ours {}, TileDB {} ({})",
            case.name,
            case.ours.map_or("accepts", |_| "refuses"),
            if tiledb == Tiledb::Refuses {
                "refuses"
            } else {
                "accepts"
            },
            answer["error"].as_str().unwrap_or_default()
        );
    }
    if python.is_some() {
        // Two known differences (above); every other answer the same.
        assert_eq!(agreed, cases().len() - 2);
    }
}
