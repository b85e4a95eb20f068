//! The `tdb` a person uses daily: dates and times as ISO-8601 text (checked
//! against numpy, which tiledb-py users read them with), enumerations shown
//! as their values (checked against tiledb-py), CSV through a real CSV
//! writer with null as an empty field, `--limit`, `--at` with a range, the
//! key from a file or the environment, and a closed pipe ending quietly.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use support::{corpus_array, ok, tdb, tdb_command, tiledb_python};

fn stdout_of(args: &[&str]) -> String {
    String::from_utf8(ok(args)).expect("UTF-8 output")
}

fn json_of(args: &[&str]) -> Value {
    serde_json::from_str(&stdout_of(args)).expect("JSON output")
}

/// Runs `script` with the oracle's Python and parses the JSON it prints.
fn python_json(python: &Path, script: &str) -> Value {
    let out = Command::new(python)
        .args(["-c", script])
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("python printed JSON")
}

const UNITS: &[(&str, &str)] = &[
    ("year", "Y"),
    ("month", "M"),
    ("week", "W"),
    ("day", "D"),
    ("hr", "h"),
    ("min", "m"),
    ("sec", "s"),
    ("ms", "ms"),
    ("us", "us"),
    ("ns", "ns"),
    ("ps", "ps"),
    ("fs", "fs"),
    ("as", "as"),
];

#[test]
fn datetimes_print_as_numpy_prints_them() {
    let Some(python) = tiledb_python() else {
        return;
    };
    let mut compared = 0;
    for (unit, numpy_unit) in UNITS {
        for (kind, field, group) in [("dim", "d", "dimensions"), ("attr", "a", "attributes")] {
            let array = corpus_array(&format!("sparse.{kind}.datetime_{unit}"));
            let array = array.to_str().unwrap();
            let args = ["read", array, "--format", "json", "--layout", "global"];
            let raw = json_of(&[&args[..], &["--raw"]].concat());
            let shown = json_of(&args);
            let raw = raw[group][field].as_array().unwrap().clone();
            let shown = shown[group][field].as_array().unwrap().clone();
            let script = format!(
                "import json, numpy as np\n\
                 v = np.array({}, dtype='datetime64[{numpy_unit}]')\n\
                 print(json.dumps([str(x) for x in np.datetime_as_string(v)]))",
                Value::Array(raw.clone())
            );
            let numpy = python_json(&python, &script);
            let mut strings = 0;
            for ((ours, stored), theirs) in shown.iter().zip(&raw).zip(numpy.as_array().unwrap()) {
                match ours {
                    Value::String(text) => {
                        assert_eq!(text, theirs.as_str().unwrap(), "{unit} {kind} {stored}");
                        // And the text reads back as the stored value.
                        if *kind == *"dim" {
                            let bound = format!("d={text}..{text}");
                            let back = json_of(&[
                                "read",
                                array,
                                "--format",
                                "json",
                                "--raw",
                                "--subarray",
                                &bound,
                            ]);
                            assert_eq!(back["dimensions"]["d"], Value::Array(vec![stored.clone()]));
                        }
                        strings += 1;
                    }
                    // Outside the years -9999..=9999: the stored integer.
                    other => assert_eq!(other, stored, "{unit} {kind}"),
                }
            }
            assert!(
                strings >= 2,
                "{unit} {kind}: only {strings} values shown as dates"
            );
            compared += strings;
        }
    }
    assert!(compared > 50);
}

#[test]
fn enumerations_show_their_values_as_tiledb_py_does() {
    let Some(python) = tiledb_python() else {
        return;
    };
    for case in ["sparse.enumeration", "sparse.enumeration.extended"] {
        let array = corpus_array(case);
        let array = array.to_str().unwrap();
        let ours = json_of(&["read", array, "--format", "json", "--layout", "row-major"]);
        let script = format!(
            "import json, tiledb\n\
             with tiledb.open({array:?}) as A:\n\
             \x20   r = A.query(order='C')[:]\n\
             \x20   out = {{}}\n\
             \x20   for i in range(A.schema.nattr):\n\
             \x20       a = A.schema.attr(i)\n\
             \x20       values = A.enum(a.enum_label).values() if a.enum_label else None\n\
             \x20       cells = [x.item() for x in r[a.name]]\n\
             \x20       out[a.name] = [values[x].item() if values is not None and hasattr(values[x], 'item') else (values[x] if values is not None else x) for x in cells]\n\
             print(json.dumps(out))"
        );
        let theirs = python_json(&python, &script);
        let mut enumerated = 0;
        for (name, values) in theirs.as_object().unwrap() {
            assert_eq!(
                &ours["attributes"][name], values,
                "{case}: attribute {name}"
            );
            enumerated += values
                .as_array()
                .unwrap()
                .iter()
                .filter(|v| v.is_string())
                .count();
        }
        assert!(enumerated > 0, "{case}: no enumerated values compared");
        // --raw gives the stored indexes.
        let raw = json_of(&["read", array, "--format", "json", "--raw"]);
        assert!(raw["attributes"].as_object().unwrap().values().all(|v| v
            .as_array()
            .unwrap()
            .iter()
            .all(|x| !x.is_string())));
    }
}

#[test]
fn csv_writes_null_as_an_empty_field_and_quotes_as_csv_does() {
    let mut nulls = 0;
    for case in [
        "sparse.attr.var_utf8.nullable.zstd",
        "sparse.attr.var_numeric.nullable",
        "dense.attr.var_nullable",
    ] {
        let array = corpus_array(case);
        let array = array.to_str().unwrap();
        let json = json_of(&["read", array, "--format", "json"]);
        let text = stdout_of(&["read", array, "--format", "csv"]);
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
        let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        // Each CSV column against the same field of the JSON output.
        let fields: Vec<(String, Vec<Value>)> = header
            .iter()
            .map(|name| {
                let values = json["dimensions"]
                    .get(name)
                    .or_else(|| json["attributes"].get(name))
                    .unwrap_or_else(|| panic!("{case}: CSV column {name} not in the JSON output"));
                (name.clone(), values.as_array().unwrap().clone())
            })
            .collect();
        let json_fields = json["dimensions"].as_object().unwrap().len()
            + json["attributes"].as_object().unwrap().len();
        assert_eq!(header.len(), json_fields, "{case}");
        for (column, (name, values)) in fields.iter().enumerate() {
            assert_eq!(rows.len(), values.len(), "{case}");
            for (row, value) in rows.iter().zip(values) {
                let want = match value {
                    Value::Null => {
                        nulls += 1;
                        String::new()
                    }
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                assert_eq!(row[column], want, "{case}: {name}");
            }
        }
    }
    assert!(nulls > 0, "the cases have null cells");
}

#[test]
fn limit_prints_the_first_cells() {
    let array = corpus_array("sparse.fragments.time_travel");
    let array = array.to_str().unwrap();
    let all = json_of(&["read", array, "--format", "json", "--layout", "global"]);
    let first = json_of(&[
        "read", array, "--format", "json", "--layout", "global", "--limit", "2",
    ]);
    let d = all["dimensions"]["d"].as_array().unwrap();
    assert!(d.len() > 2);
    assert_eq!(first["dimensions"]["d"].as_array().unwrap()[..], d[..2]);
    let table = stdout_of(&["read", array, "--limit", "2"]);
    assert!(
        table.ends_with(&format!("(first 2 of {} cells)\n", d.len())),
        "{table}"
    );
}

#[test]
fn at_takes_iso_times_and_ranges() {
    let array = corpus_array("sparse.fragments.time_travel");
    let array = array.to_str().unwrap();
    let read = |at: &str| {
        json_of(&[
            "read", array, "--format", "json", "--layout", "global", "--at", at,
        ])
    };
    // Milliseconds and ISO text name the same moment.
    assert_eq!(read("25"), read("1970-01-01T00:00:00.025"));
    // A range opens only the fragments written inside it (case reads
    // between-15-25 and between-20-30 of the corpus).
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(
            corpus_array("sparse.fragments.time_travel").join("../expected.json"),
        )
        .unwrap(),
    )
    .unwrap();
    for (id, at) in [
        ("between-15-25", "15..25"),
        ("between-20-30", "1970-01-01T00:00:00.020..30"),
    ] {
        let want = expected["reads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap();
        let cells = want["cells"].as_array().unwrap();
        let got = read(at);
        let d: Vec<Value> = cells.iter().map(|c| c[0].clone()).collect();
        assert_eq!(got["dimensions"]["d"], Value::Array(d), "{id}");
    }
    let out = tdb(&["read", array, "--at", "30..20"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("after the end"));
}

#[test]
fn the_key_comes_from_an_option_a_file_or_the_environment() {
    let array = corpus_array("sparse.encrypted.aes256gcm");
    let array = array.to_str().unwrap();
    let key = "0123456789abcdeF0123456789abcdeF";
    let with_option = stdout_of(&["read", array, "--format", "json", "--key", key]);
    let hex: String = key.bytes().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        with_option,
        stdout_of(&["read", array, "--format", "json", "--key", &hex])
    );

    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, format!("{key}\n")).unwrap();
    let key_file = key_file.to_str().unwrap();
    assert_eq!(
        with_option,
        stdout_of(&["read", array, "--format", "json", "--key-file", key_file])
    );
    let from_env = tdb_command()
        .args(["read", array, "--format", "json"])
        .env("TDB_KEY", key)
        .output()
        .unwrap();
    assert!(from_env.status.success());
    assert_eq!(with_option.as_bytes(), &from_env.stdout[..]);
    // check and info take it the same ways.
    let check = tdb_command()
        .args(["check", array, "--key-file", key_file])
        .output()
        .unwrap();
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    // Without a key: a message that says one is needed, exit 2.
    let out = tdb(&["read", array]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("key"));
}

/// A dense array of 300,000 cells (fill values but one tile), far more
/// output than a pipe holds.
fn big_dense_array(dir: &Path) -> PathBuf {
    let case = r#"
id = "cli.big"
title = "big"
spec = []
level = "optional"
min_format = 1
tags = { array = "dense", datatypes = ["INT64"], filters = [], features = [] }

[schema]
type = "dense"
dims = [{ name = "d", type = "INT64", domain = [0, 299999], tile = 10000 }]
attrs = [{ name = "a", type = "INT32" }]

[[steps]]
op = "write"
timestamp = 10
subarray = [[0, 3]]
data = { a = [1, 2, 3, 4] }
"#;
    // The replay writes the case's array into `<dir>/array`.
    tiledb_conformance::recipe::replay_case(case, dir).expect("replay the recipe");
    dir.join("array")
}

#[test]
fn a_closed_pipe_ends_quietly_with_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let array = big_dense_array(dir.path());
    let array = array.to_str().unwrap();
    for format in ["csv", "json", "table"] {
        let mut child = tdb_command()
            .args([
                "read",
                array,
                "--subarray",
                "d=0:299999",
                "--format",
                format,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(!first.is_empty());
        // The reader goes away (its end of the pipe closed on drop).
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{format}");
        assert!(
            out.stderr.is_empty(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Standard error into the same closed pipe.
    let status = Command::new("bash")
        .args([
            "-c",
            &format!(
                "set -o pipefail; {:?} read {array:?} --subarray d=0:299999 --format csv 2>&1 | head -1 >/dev/null",
                env!("CARGO_BIN_EXE_tdb")
            ),
        ])
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}
