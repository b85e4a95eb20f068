//! `tdb create` and `tdb write`: `info → create` gives the same schema for
//! every format-22 corpus array, `read → write` into it gives the same
//! cells, and bad input exits 2 with a message, the array untouched.

mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{ok, refused, tdb};

const ENCRYPTED: (&str, &str) = (
    "sparse.encrypted.aes256gcm",
    "0123456789abcdeF0123456789abcdeF",
);

/// The corpus's top-level arrays of format 22: `(case, array folder)`.
fn corpus_arrays() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/corpus/tiledb-2.30");
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.path().join("array"),
            )
        })
        .filter(|(case, array)| !case.starts_with("negative.") && array.join("__schema").is_dir())
        .collect();
    out.sort();
    out
}

fn key_args(case: &str) -> Vec<&'static str> {
    if case == ENCRYPTED.0 {
        vec!["--key", ENCRYPTED.1]
    } else {
        Vec::new()
    }
}

fn schema_of(info: &[u8]) -> Value {
    let mut doc: Value = serde_json::from_slice(info).unwrap();
    let mut schema = doc["schema"].take();
    schema.as_object_mut().unwrap().remove("name");
    schema
}

#[test]
fn info_then_create_then_read_then_write_round_trip_over_the_corpus() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut schemas, mut cells) = (0, 0);
    for (case, array) in corpus_arrays() {
        let key = key_args(&case);
        let with = |args: &[&str]| -> Vec<String> {
            args.iter().chain(&key).map(|s| (*s).to_string()).collect()
        };
        let run = |args: Vec<String>| ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let a = array.to_str().unwrap();
        let info = run(with(&["info", "--json", a]));
        if schema_of(&info)["version"] != 22 {
            continue;
        }
        let doc = tmp.path().join(format!("{case}.json"));
        std::fs::write(&doc, &info).unwrap();
        let new = tmp.path().join(&case);
        let n = new.to_str().unwrap();
        run(with(&["create", n, "--schema", doc.to_str().unwrap()]));
        assert_eq!(
            schema_of(&run(with(&["info", "--json", n]))),
            schema_of(&info),
            "{case}: info → create"
        );
        schemas += 1;
        let read = run(with(&["read", a, "--format", "json"]));
        let parsed: Value = serde_json::from_slice(&read).unwrap();
        let empty = parsed["attributes"]
            .as_object()
            .into_iter()
            .chain(parsed["dimensions"].as_object())
            .flatten()
            .all(|(_, v)| v.as_array().is_some_and(Vec::is_empty));
        if empty {
            continue;
        }
        let input = tmp.path().join(format!("{case}.cells.json"));
        std::fs::write(&input, &read).unwrap();
        run(with(&["write", n, "--input", input.to_str().unwrap()]));
        assert_eq!(
            String::from_utf8_lossy(&run(with(&["read", n, "--format", "json"]))),
            String::from_utf8_lossy(&read),
            "{case}: read → write"
        );
        cells += 1;
    }
    println!("{schemas} schemas through info → create, {cells} arrays through read → write");
    assert!(
        schemas > 150 && cells > 100,
        "{schemas} schemas, {cells} arrays"
    );
}

/// `read --format FORMAT → write --input` into a fresh array created from
/// the same schema, for every format-22 corpus array with cells: the
/// cells read back (as JSON) equal the original's. Returns how many arrays
/// went through, and the cases refused with their messages.
fn round_trip_through(format: &str, ext: &str) -> (usize, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let (mut through, mut refused) = (0, Vec::new());
    for (case, array) in corpus_arrays() {
        let key = key_args(&case);
        let with = |args: &[&str]| -> Vec<String> {
            args.iter().chain(&key).map(|s| (*s).to_string()).collect()
        };
        let run = |args: Vec<String>| ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let a = array.to_str().unwrap();
        let info = run(with(&["info", "--json", a]));
        if schema_of(&info)["version"] != 22 {
            continue;
        }
        let json = run(with(&["read", a, "--format", "json"]));
        let parsed: Value = serde_json::from_slice(&json).unwrap();
        let cells = parsed["dimensions"]
            .as_object()
            .and_then(|d| d.values().next())
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        if cells == 0 {
            continue;
        }
        let doc = tmp.path().join(format!("{case}.json"));
        std::fs::write(&doc, &info).unwrap();
        let new = tmp.path().join(format!("{case}.{ext}.array"));
        let n = new.to_str().unwrap();
        run(with(&["create", n, "--schema", doc.to_str().unwrap()]));
        let input = tmp.path().join(format!("{case}.{ext}"));
        let i = input.to_str().unwrap();
        let read = tdb(&with(&["read", a, "--format", format, "--output", i])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>());
        if !read.status.success() {
            // Not every array has an Arrow form (e.g. day counts beyond Date32).
            refused.push(format!(
                "{case}: read: {}",
                String::from_utf8_lossy(&read.stderr)
            ));
            continue;
        }
        let write = tdb(&with(&["write", n, "--input", i])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>());
        if !write.status.success() {
            refused.push(format!(
                "{case}: write: {}",
                String::from_utf8_lossy(&write.stderr)
            ));
            continue;
        }
        let back = run(with(&["read", n, "--format", "json"]));
        // CSV too: a null is an empty field, the empty string `""`.
        assert_eq!(
            String::from_utf8_lossy(&back),
            String::from_utf8_lossy(&json),
            "{case}: read --format {format} → write"
        );
        through += 1;
    }
    println!("{format}: {through} arrays through read → write; refused: {refused:#?}");
    (through, refused)
}

#[test]
fn arrow_ipc_round_trip_over_the_corpus() {
    let (through, refused) = round_trip_through("arrow", "arrows");
    // Only arrays Arrow cannot hold (read refusals); every write goes through.
    assert!(
        through > 200 && refused.iter().all(|r| r.contains(": read: ")),
        "{through}, {refused:#?}"
    );
}

#[test]
fn csv_round_trip_over_the_corpus() {
    let (through, refused) = round_trip_through("csv", "csv");
    assert!(
        through > 200 && refused.iter().all(|r| r.contains(": read: ")),
        "{through}, {refused:#?}"
    );
}

#[test]
fn parquet_round_trip_over_the_corpus() {
    let (through, refused) = round_trip_through("parquet", "parquet");
    // Only arrays Arrow cannot hold (read refusals); every write goes through.
    assert!(
        through > 200 && refused.iter().all(|r| r.contains(": read: ")),
        "{through}, {refused:#?}"
    );
}

#[test]
fn bad_input_exits_2_and_leaves_the_array_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |name: &str| tmp.path().join(name);
    let s = |path: &PathBuf| path.to_str().unwrap().to_string();
    let dense = r#"array_type = "dense"
[[dimensions]]
name = "d"
type = "INT32"
domain = [0, 9]
tile_extent = 5
[[attributes]]
name = "a"
type = "INT32"
filters = [{ name = "ZSTD", level = 3 }]
"#;
    std::fs::write(p("dense.toml"), dense).unwrap();
    std::fs::write(
        p("zero_extent.toml"),
        dense.replace("tile_extent = 5", "tile_extent = 0"),
    )
    .unwrap();
    std::fs::write(p("bad.json"), "{ not json").unwrap();
    let array = p("array");
    // A schema TileDB refuses: nothing is created.
    refused(
        &[
            "create",
            &s(&p("zero")),
            "--schema",
            &s(&p("zero_extent.toml")),
        ],
        "tile extent is 0",
        tmp.path(),
    );
    assert!(!p("zero").exists());
    refused(
        &["create", &s(&p("bad")), "--schema", &s(&p("bad.json"))],
        "bad.json",
        tmp.path(),
    );
    ok(&["create", &s(&array), "--schema", &s(&p("dense.toml"))]);
    // Over an existing array.
    refused(
        &["create", &s(&array), "--schema", &s(&p("dense.toml"))],
        "already exists",
        &array,
    );
    // Writes TileDB refuses, or input that is not the cells of the array.
    let inputs = [
        (
            "outside.json",
            r#"{"dimensions":{"d":[9,10]},"attributes":{"a":[1,2]}}"#,
            "outside",
        ),
        (
            "hole.json",
            r#"{"dimensions":{"d":[0,2]},"attributes":{"a":[1,2]}}"#,
            "do not cover the box",
        ),
        (
            "twice.json",
            r#"{"dimensions":{"d":[1,1,3]},"attributes":{"a":[1,2,3]}}"#,
            "are the same",
        ),
        (
            "missing.json",
            r#"{"dimensions":{"d":[1]},"attributes":{}}"#,
            "no column for attribute a",
        ),
        (
            "unknown.json",
            r#"{"dimensions":{"d":[1]},"attributes":{"a":[1],"b":[2]}}"#,
            "no attribute b",
        ),
        (
            "null.json",
            r#"{"dimensions":{"d":[1]},"attributes":{"a":[null]}}"#,
            "not nullable",
        ),
        (
            "type.json",
            r#"{"dimensions":{"d":[1]},"attributes":{"a":["x"]}}"#,
            "not a INT32 value",
        ),
        (
            "big.json",
            r#"{"dimensions":{"d":[1]},"attributes":{"a":[4294967296]}}"#,
            "does not fit",
        ),
    ];
    for (name, text, needle) in inputs {
        std::fs::write(p(name), text).unwrap();
        refused(
            &["write", &s(&array), "--input", &s(&p(name))],
            needle,
            &array,
        );
    }
    // And a good write goes through.
    std::fs::write(
        p("good.json"),
        r#"{"dimensions":{"d":[4,3]},"attributes":{"a":[40,30]}}"#,
    )
    .unwrap();
    ok(&["write", &s(&array), "--input", &s(&p("good.json"))]);
    let read: Value = serde_json::from_slice(&ok(&[
        "read",
        &s(&array),
        "--format",
        "json",
        "--subarray",
        "d=3:4",
    ]))
    .unwrap();
    assert_eq!(read["attributes"]["a"], serde_json::json!([30, 40]));
}
