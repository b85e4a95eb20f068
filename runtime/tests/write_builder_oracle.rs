//! The schema builder and the validated writes against TileDB 2.30 itself
//! (tiledb-py, through `builder_oracle/oracle.py`; skipped with a printed
//! reason when the venv is absent):
//!
//! - every schema the builder refuses, TileDB refuses too, and creating
//!   refused schemas writes nothing;
//! - creating over an existing array is refused by both, the array kept;
//! - every write the runtime refuses, TileDB refuses too, and the refused
//!   write leaves our array unchanged (not one file written);
//! - every schema and write accepted (one generated recipe per attribute
//!   datatype, varied: `builder_oracle/generate.rs`) reads back, by TileDB
//!   and by this runtime, as TileDB reads the same recipe written by
//!   TileDB itself.
//!
//! The schemas and writes are conformance recipes (`conformance/README.md`),
//! turned into builder calls and typed columns by `tiledb_conformance::recipe::builder`
//! and into tiledb-py calls by `conformance/scripts/tdbcase.py`.

mod common;
#[path = "builder_oracle/generate.rs"]
mod generate;
#[path = "builder_oracle/oracle.rs"]
mod oracle;
use tiledb_conformance::recipe::builder as recipe;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::error::Error;

/// A recipe value as the JSON the oracle takes.
pub fn toml_to_json(v: &toml::Value) -> Value {
    match v {
        toml::Value::String(s) => json!(s),
        toml::Value::Integer(i) => json!(i),
        // JSON has no infinities: Python's float() reads these strings.
        toml::Value::Float(f) if !f.is_finite() => json!(f.to_string()),
        toml::Value::Float(f) => json!(f),
        toml::Value::Boolean(b) => json!(b),
        toml::Value::Datetime(d) => json!(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}

fn parse(text: &str) -> toml::Value {
    toml::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Every file under `dir` with its bytes: what a refused operation must
/// leave as it was.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                out.insert(format!("{}/", p.display()), Vec::new());
                stack.push(p);
            } else {
                out.insert(p.display().to_string(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn oracle() -> Option<oracle::Oracle> {
    match oracle::Oracle::start() {
        Ok(o) => Some(o),
        Err(why) => {
            println!("skipping the TileDB half: {why}");
            None
        }
    }
}

const DIM: &str = r#"{ name = "d", type = "INT32", domain = [0, 99], tile = 10 }"#;
const ATTR: &str = r#"{ name = "a", type = "INT32" }"#;

/// `(what, [schema])`: schemas TileDB refuses to create.
fn invalid_schemas() -> Vec<(&'static str, String)> {
    let sparse = |dims: &str, attrs: &str, more: &str| {
        format!("type = \"sparse\"\ndims = [{dims}]\nattrs = [{attrs}]\n{more}")
    };
    let dense = |dims: &str, attrs: &str, more: &str| {
        format!("type = \"dense\"\ndims = [{dims}]\nattrs = [{attrs}]\n{more}")
    };
    let many: Vec<String> = (0..256).map(|i| format!("\"v{i}\"")).collect();
    vec![
        ("duplicate attribute names", sparse(DIM, &format!("{ATTR}, {ATTR}"), "")),
        ("an attribute named as a dimension", sparse(DIM, r#"{ name = "d", type = "INT32" }"#, "")),
        ("duplicate dimension names", sparse(&format!("{DIM}, {DIM}"), ATTR, "")),
        ("a dense array without attributes", dense(DIM, "", "")),
        ("an inverted domain", sparse(r#"{ name = "d", type = "INT32", domain = [9, 0], tile = 2 }"#, ATTR, "")),
        ("an inverted float domain", sparse(r#"{ name = "d", type = "FLOAT64", domain = [1.0, -1.0] }"#, ATTR, "")),
        ("an infinite float domain", sparse(r#"{ name = "d", type = "FLOAT64", domain = [0.0, inf] }"#, ATTR, "")),
        ("a domain spanning its whole type", sparse(r#"{ name = "d", type = "INT8", domain = [-128, 127], tile = 2 }"#, ATTR, "")),
        ("Hilbert cell order on a dense array", dense(DIM, ATTR, "cell_order = \"hilbert\"")),
        ("duplicates on a dense array", dense(DIM, ATTR, "allows_duplicates = true")),
        ("a string dimension on a dense array", dense(r#"{ name = "s", type = "STRING_ASCII" }"#, ATTR, "")),
        ("a float dimension on a dense array", dense(r#"{ name = "d", type = "FLOAT32", domain = [0.0, 9.0], tile = 1.0 }"#, ATTR, "")),
        ("dense dimensions of two types", dense(&format!("{DIM}, {{ name = \"e\", type = \"INT64\", domain = [0, 9], tile = 5 }}"), ATTR, "")),
        ("a tile extent of 0", sparse(r#"{ name = "d", type = "INT32", domain = [0, 99], tile = 0 }"#, ATTR, "")),
        ("a dense tile extent of 0", dense(r#"{ name = "d", type = "INT64", domain = [0, 99], tile = 0 }"#, ATTR, "")),
        ("a tile extent over the domain", sparse(r#"{ name = "d", type = "INT32", domain = [0, 9], tile = 11 }"#, ATTR, "")),
        ("a negative float tile extent", sparse(r#"{ name = "d", type = "FLOAT64", domain = [0.0, 9.0], tile = -1.0 }"#, ATTR, "")),
        ("a tile that cannot be expanded in its type", dense(r#"{ name = "d", type = "INT64", domain = [0, 9223372036854775806], tile = 10 }"#, ATTR, "")),
        ("capacity 0", sparse(DIM, ATTR, "capacity = 0")),
        ("SCALE_FLOAT with factor 0", sparse(DIM, r#"{ name = "f", type = "FLOAT64", filters = [{ name = "SCALE_FLOAT", factor = 0.0, offset = 0.0, bytewidth = 4 }] }"#, "")),
        ("SCALE_FLOAT with byte width 3", sparse(DIM, r#"{ name = "f", type = "FLOAT64", filters = [{ name = "SCALE_FLOAT", factor = 1.0, offset = 0.0, bytewidth = 3 }] }"#, "")),
        ("SCALE_FLOAT on an INT16 attribute", sparse(DIM, r#"{ name = "f", type = "INT16", filters = [{ name = "SCALE_FLOAT", factor = 1.0, offset = 0.0, bytewidth = 4 }] }"#, "")),
        ("DOUBLE_DELTA on a float attribute", sparse(DIM, r#"{ name = "f", type = "FLOAT32", filters = [{ name = "DOUBLE_DELTA" }] }"#, "")),
        ("DELTA on a float attribute", sparse(DIM, r#"{ name = "f", type = "FLOAT64", filters = [{ name = "DELTA" }] }"#, "")),
        ("BIT_WIDTH_REDUCTION on a float attribute", sparse(DIM, r#"{ name = "f", type = "FLOAT64", filters = [{ name = "BIT_WIDTH_REDUCTION" }] }"#, "")),
        ("SCALE_FLOAT after a 1-byte SCALE_FLOAT", sparse(DIM, r#"{ name = "f", type = "FLOAT64", filters = [{ name = "SCALE_FLOAT", factor = 1.0, offset = 0.0, bytewidth = 1 }, { name = "SCALE_FLOAT", factor = 1.0, offset = 0.0, bytewidth = 8 }] }"#, "")),
        ("RLE after another filter on a var string", sparse(DIM, r#"{ name = "s", type = "STRING_UTF8", cell_val_num = "var", filters = [{ name = "ZSTD" }, { name = "RLE" }] }"#, "")),
        ("WEBP on an INT32 attribute", dense(&format!("{DIM}, {{ name = \"e\", type = \"INT32\", domain = [0, 99], tile = 10 }}"), r#"{ name = "p", type = "INT32", filters = [{ name = "WEBP" }] }"#, "")),
        ("WEBP on a sparse array", sparse(&format!("{DIM}, {{ name = \"e\", type = \"INT32\", domain = [0, 99], tile = 10 }}"), r#"{ name = "p", type = "UINT8", filters = [{ name = "WEBP" }] }"#, "")),
        ("coordinate DOUBLE_DELTA inherited by a float dimension", sparse(r#"{ name = "d", type = "FLOAT64", domain = [0.0, 9.0] }"#, ATTR, "coords_filters = [{ name = \"DOUBLE_DELTA\" }]")),
        ("an unknown enumeration", sparse(DIM, r#"{ name = "c", type = "UINT8", enumeration = "nope" }"#, "")),
        ("an enumeration on a float attribute", sparse(DIM, r#"{ name = "c", type = "FLOAT32", enumeration = "e" }"#, "enumerations = [{ name = \"e\", type = \"STRING_UTF8\", cell_val_num = \"var\", values = [\"x\"] }]")),
        ("an enumeration with a value twice", sparse(DIM, r#"{ name = "c", type = "UINT8", enumeration = "e" }"#, "enumerations = [{ name = \"e\", type = \"STRING_UTF8\", cell_val_num = \"var\", values = [\"x\", \"x\"] }]")),
        ("an enumeration too long for its attribute", sparse(DIM, r#"{ name = "c", type = "UINT8", enumeration = "e" }"#, &format!("enumerations = [{{ name = \"e\", type = \"STRING_UTF8\", cell_val_num = \"var\", values = [{}] }}]", many.join(", ")))),
        ("a current domain past the domain", sparse(DIM, ATTR, "current_domain = [[0, 100]]")),
        ("an attribute name starting with __", sparse(DIM, r#"{ name = "__x", type = "INT32" }"#, "")),
        (
            "a Hilbert order over 17 dimensions",
            sparse(r#"{ name = "d0", type = "INT32", domain = [0, 9] }, { name = "d1", type = "INT32", domain = [0, 9] }, { name = "d2", type = "INT32", domain = [0, 9] }, { name = "d3", type = "INT32", domain = [0, 9] }, { name = "d4", type = "INT32", domain = [0, 9] }, { name = "d5", type = "INT32", domain = [0, 9] }, { name = "d6", type = "INT32", domain = [0, 9] }, { name = "d7", type = "INT32", domain = [0, 9] }, { name = "d8", type = "INT32", domain = [0, 9] }, { name = "d9", type = "INT32", domain = [0, 9] }, { name = "d10", type = "INT32", domain = [0, 9] }, { name = "d11", type = "INT32", domain = [0, 9] }, { name = "d12", type = "INT32", domain = [0, 9] }, { name = "d13", type = "INT32", domain = [0, 9] }, { name = "d14", type = "INT32", domain = [0, 9] }, { name = "d15", type = "INT32", domain = [0, 9] }, { name = "d16", type = "INT32", domain = [0, 9] }"#, ATTR, "cell_order = \"hilbert\""),
        ),
        (
            "coordinate RLE after ZSTD inherited by a string dimension",
            sparse(r#"{ name = "s", type = "STRING_ASCII" }"#, ATTR, "coords_filters = [{ name = \"ZSTD\" }, { name = \"RLE\" }]"),
        ),
        (
            "a current domain without a range for every dimension",
            sparse(&format!("{DIM}, {{ name = \"e\", type = \"INT32\", domain = [0, 9], tile = 5 }}"), ATTR, "current_domain = [[0, 9]]"),
        ),
        (
            "an enumeration on a two-value attribute",
            sparse(DIM, r#"{ name = "c", type = "UINT8", cell_val_num = 2, enumeration = "e" }"#, "enumerations = [{ name = \"e\", type = \"STRING_UTF8\", cell_val_num = \"var\", values = [\"x\"] }]"),
        ),
        (
            "DOUBLE_DELTA reinterpreting INT32 as FLOAT32",
            sparse(DIM, r#"{ name = "f", type = "INT32", filters = [{ name = "DOUBLE_DELTA", reinterpret_datatype = "FLOAT32" }] }"#, ""),
        ),
        (
            "DELTA reinterpreting INT32 as INT64",
            sparse(DIM, r#"{ name = "f", type = "INT32", filters = [{ name = "DELTA", reinterpret_datatype = "INT64" }] }"#, ""),
        ),
        (
            "POSITIVE_DELTA on a float attribute",
            sparse(DIM, r#"{ name = "f", type = "FLOAT32", filters = [{ name = "POSITIVE_DELTA" }] }"#, ""),
        ),
        (
            "WEBP on a 1-D array",
            dense(r#"{ name = "d", type = "UINT8", domain = [0, 99], tile = 10 }"#, r#"{ name = "p", type = "UINT8", filters = [{ name = "WEBP" }] }"#, ""),
        ),
        ("a BOOL dimension", sparse(r#"{ name = "d", type = "BOOL", domain = [0, 1], tile = 1 }"#, ATTR, "")),
    ]
}

#[test]
fn refused_schemas_are_refused_by_tiledb_and_create_nothing() {
    let mut tiledb = oracle();
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (i, (what, text)) in invalid_schemas().into_iter().enumerate() {
        let schema = parse(&text);
        let builder = recipe::builder(&schema).unwrap_or_else(|e| panic!("{what}: {e}"));
        match builder.build() {
            Err(Error::Usage(msg)) => println!("{what}: refused: {msg}"),
            other => failures.push(format!("{what}: the builder gave {other:?}")),
        }
        let ours = tmp.path().join(format!("ours{i}"));
        if Array::create_path(&ours, &builder).is_ok() || ours.exists() {
            failures.push(format!(
                "{what}: creating it wrote {:?}",
                files(&ours).keys()
            ));
        }
        if let Some(o) = tiledb.as_mut() {
            let theirs = tmp.path().join(format!("theirs{i}"));
            let answer =
                o.request(&json!({"op": "create", "uri": theirs, "schema": toml_to_json(&schema)}));
            match answer.get("error").and_then(Value::as_str) {
                // TileDB's own refusal, not the binding's.
                Some(e) if e.starts_with("TileDBError") => println!("  TileDB refused: {e}"),
                Some(e) => {
                    failures.push(format!("{what}: tiledb-py refused before TileDB did: {e}"));
                }
                None => failures.push(format!("{what}: TileDB created it")),
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn creating_over_an_existing_array_is_refused_and_keeps_it() {
    let tmp = tempfile::tempdir().unwrap();
    let schema = parse(&format!(
        "type = \"sparse\"\ndims = [{DIM}]\nattrs = [{ATTR}]"
    ));
    let builder = recipe::builder(&schema).unwrap();
    let ours = tmp.path().join("ours");
    Array::create_path(&ours, &builder).unwrap();
    let before = files(&ours);
    let mut other = builder.clone();
    other.attributes[0].name = "b".into();
    match Array::create_path(&ours, &other) {
        Err(Error::Usage(msg)) => assert!(msg.contains("already exists"), "{msg}"),
        other => panic!("creating over an array gave {:?}", other.map(|_| ())),
    }
    assert_eq!(
        files(&ours),
        before,
        "the refused creation changed the array"
    );
    // The lower-level creation from a stored schema refuses it too.
    let storage = tiledb_runtime::storage::LocalStorage::new(&ours);
    let stored = other.build().unwrap().schema;
    match tiledb_runtime::write::create_array(&storage, &stored, 0, None) {
        Err(Error::Usage(msg)) => assert!(msg.contains("already exists"), "{msg}"),
        other => panic!("create_array over an array gave {:?}", other.map(|_| ())),
    }
    assert_eq!(files(&ours), before, "create_array changed the array");
    assert_eq!(
        Array::open_path(&ours, OpenOptions::default())
            .unwrap()
            .schema()
            .attributes[0]
            .name,
        "a"
    );
    if let Some(mut o) = oracle() {
        let theirs = tmp.path().join("theirs");
        let req = json!({"op": "create", "uri": theirs, "schema": toml_to_json(&schema)});
        assert_eq!(o.request(&req), json!({"ok": true}));
        let answer = o.request(&req);
        assert!(
            answer.get("error").is_some(),
            "TileDB created over an array: {answer}"
        );
        // And TileDB refuses to create over ours.
        let answer =
            o.request(&json!({"op": "create", "uri": ours, "schema": toml_to_json(&schema)}));
        assert!(
            answer.get("error").is_some(),
            "TileDB created over our array: {answer}"
        );
    }
}

/// `(what, [schema], write step)`: writes TileDB refuses.
fn invalid_writes() -> Vec<(&'static str, String, String)> {
    let sparse =
        |more: &str| format!("type = \"sparse\"\ndims = [{DIM}]\nattrs = [{ATTR}]\n{more}");
    let dense = |more: &str| format!("type = \"dense\"\ndims = [{DIM}]\nattrs = [{ATTR}]\n{more}");
    let two_d = "type = \"sparse\"\ncell_order = \"hilbert\"\ndims = [{ name = \"x\", type = \"INT32\", domain = [0, 99] }, { name = \"y\", type = \"INT32\", domain = [0, 99] }]\nattrs = [{ name = \"a\", type = \"INT32\" }]".to_string();
    let nullable = "type = \"sparse\"\ndims = [{ name = \"d\", type = \"INT32\", domain = [0, 99], tile = 10 }]\nattrs = [{ name = \"n\", type = \"INT32\", nullable = true }]".to_string();
    let strings = "type = \"sparse\"\ndims = [{ name = \"d\", type = \"INT32\", domain = [0, 99], tile = 10 }]\nattrs = [{ name = \"s\", type = \"STRING_UTF8\", cell_val_num = \"var\" }]".to_string();
    let floats = "type = \"sparse\"\ndims = [{ name = \"f\", type = \"FLOAT64\", domain = [0.0, 1.0] }]\nattrs = [{ name = \"a\", type = \"INT32\" }]".to_string();
    vec![
        (
            "a coordinate outside the domain",
            sparse(""),
            "coords = { d = [1, 100] }\ndata = { a = [1, 2] }".into(),
        ),
        (
            "a negative coordinate",
            sparse(""),
            "coords = { d = [-1] }\ndata = { a = [1] }".into(),
        ),
        (
            "a float coordinate outside the domain",
            floats,
            "coords = { f = [0.5, 1.5] }\ndata = { a = [1, 2] }".into(),
        ),
        (
            "duplicate coordinates in one unordered write",
            sparse(""),
            "coords = { d = [5, 3, 5] }\ndata = { a = [1, 2, 3] }".into(),
        ),
        (
            "a global-order write out of order",
            sparse(""),
            "layout = \"global\"\ncoords = { d = [3, 1] }\ndata = { a = [1, 2] }".into(),
        ),
        (
            "a global-order write out of order across tiles",
            sparse(""),
            "layout = \"global\"\ncoords = { d = [15, 2] }\ndata = { a = [1, 2] }".into(),
        ),
        (
            "a global-order write with duplicates",
            sparse(""),
            "layout = \"global\"\ncoords = { d = [1, 1] }\ndata = { a = [1, 2] }".into(),
        ),
        (
            "a global-order write out of order, then outside the domain",
            sparse(""),
            "layout = \"global\"\ncoords = { d = [3, 1, 100] }\ndata = { a = [1, 2, 3] }".into(),
        ),
        (
            "a global-order write of one cell outside the domain",
            sparse(""),
            "layout = \"global\"\ncoords = { d = [100] }\ndata = { a = [1] }".into(),
        ),
        (
            "a global-order write in order outside the current domain",
            sparse("current_domain = [[0, 9]]"),
            "layout = \"global\"\ncoords = { d = [2, 20] }\ndata = { a = [1, 2] }".into(),
        ),
        (
            "a Hilbert global-order write out of order",
            two_d,
            "layout = \"global\"\ncoords = { x = [99, 0], y = [0, 0] }\ndata = { a = [1, 2] }"
                .into(),
        ),
        (
            "columns of different lengths",
            sparse(""),
            "coords = { d = [1, 2, 3] }\ndata = { a = [1, 2] }".into(),
        ),
        (
            "a missing attribute",
            sparse(""),
            "coords = { d = [1] }".into(),
        ),
        (
            "a missing dimension",
            sparse(""),
            "data = { a = [1] }".into(),
        ),
        (
            "a row-major sparse write",
            sparse(""),
            "layout = \"row-major\"\ncoords = { d = [1] }\ndata = { a = [1] }".into(),
        ),
        (
            "validity for an attribute that is not nullable",
            sparse(""),
            "coords = { d = [1, 2] }\ndata = { a = [1, 2] }\nvalidity = { a = [1, 0] }".into(),
        ),
        (
            "a nullable attribute without validity",
            nullable,
            "coords = { d = [1, 2] }\ndata = { n = [1, 2] }\nno_validity = [\"n\"]".into(),
        ),
        (
            "offsets that decrease",
            strings.clone(),
            "coords = { d = [1, 2, 3] }\ndata = { s = [\"ab\", \"cd\", \"ef\"] }\nraw_offsets = { s = [0, 4, 2] }".into(),
        ),
        (
            "an offset past the data",
            strings.clone(),
            "coords = { d = [1, 2, 3] }\ndata = { s = [\"ab\", \"cd\", \"ef\"] }\nraw_offsets = { s = [0, 2, 9] }".into(),
        ),
        (
            "a coordinate outside the current domain",
            sparse("current_domain = [[0, 9]]"),
            "coords = { d = [2, 20] }\ndata = { a = [1, 2] }".into(),
        ),
        (
            "a dense subarray past the domain",
            dense(""),
            "subarray = [[95, 104]]\ndata = { a = { start = 0, count = 10 } }".into(),
        ),
        (
            "a dense write of too few cells",
            dense(""),
            "subarray = [[0, 9]]\ndata = { a = [1, 2, 3, 4, 5] }".into(),
        ),
        (
            "an unordered dense write",
            dense(""),
            "layout = \"unordered\"\nsubarray = [[0, 1]]\ndata = { a = [1, 2] }".into(),
        ),
        (
            "a dense subarray outside the current domain",
            dense("current_domain = [[0, 49]]"),
            "subarray = [[40, 59]]\ndata = { a = { start = 0, count = 20 } }".into(),
        ),
    ]
}

/// Writes the runtime refuses although TileDB 2.30 writes them, each with
/// what TileDB then does wrong. The test fails when TileDB starts refusing
/// one (so the list stays honest).
const TILEDB_ACCEPTS: &[(&str, &str)] = &[(
    "columns of different lengths",
    "TileDB counts the cells by the coordinates and reads the attribute past its buffer: \
     the third cell gets whatever bytes follow (a second write with more values than \
     coordinates drops the extra values silently)",
)];

#[test]
fn refused_writes_are_refused_by_tiledb_and_leave_the_array_unchanged() {
    let mut tiledb = oracle();
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (i, (what, schema_text, step_text)) in invalid_writes().into_iter().enumerate() {
        let schema = parse(&schema_text);
        let step = parse(&format!("timestamp = 5\n{step_text}"));
        let builder = recipe::builder(&schema).unwrap_or_else(|e| panic!("{what}: {e}"));
        let ours = tmp.path().join(format!("ours{i}"));
        let array = Array::create_path(&ours, &builder).unwrap_or_else(|e| panic!("{what}: {e}"));
        let before = files(&ours);
        let write = recipe::write(&schema, &step).unwrap_or_else(|e| panic!("{what}: {e}"));
        match array.write(&write) {
            Err(Error::Usage(msg)) => println!("{what}: refused: {msg}"),
            other => failures.push(format!("{what}: the write gave {other:?}")),
        }
        if files(&ours) != before {
            failures.push(format!("{what}: the refused write changed the array"));
        }
        if let Some(o) = tiledb.as_mut() {
            let theirs = tmp.path().join(format!("theirs{i}"));
            let created =
                o.request(&json!({"op": "create", "uri": theirs, "schema": toml_to_json(&schema)}));
            assert_eq!(
                created,
                json!({"ok": true}),
                "{what}: TileDB did not create the schema"
            );
            let answer = o.request(&json!({"op": "write", "uri": theirs, "schema": toml_to_json(&schema), "step": toml_to_json(&step)}));
            let accepted = TILEDB_ACCEPTS.iter().find(|(w, _)| *w == what);
            match (answer.get("error").and_then(Value::as_str), accepted) {
                (None, Some((_, why))) => println!("  TileDB wrote it: {why}"),
                (Some(e), Some(_)) => failures.push(format!(
                    "{what}: TileDB now refuses it ({e}): drop it from TILEDB_ACCEPTS"
                )),
                (Some(e), None) if e.starts_with("TileDBError") => {
                    println!("  TileDB refused: {e}");
                }
                (Some(e), None) => {
                    failures.push(format!("{what}: tiledb-py refused before TileDB did: {e}"));
                }
                (None, None) => failures.push(format!("{what}: TileDB wrote it")),
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The matrix cases that give one attribute `a` of each datatype.
fn matrix_cases() -> Vec<(String, toml::Value)> {
    let dir = common::workspace().join("conformance/cases");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.starts_with("sparse.attr.")
                && !n.contains("multi_value")
                && !n.contains("nullable")
                && !n.contains("var_")
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(&n)).unwrap();
            (n.trim_end_matches(".toml").to_string(), parse(&text))
        })
        .collect()
}

/// Writes `schema` and `steps` with the runtime (builder, validated
/// writes) under `ours`, and with TileDB under `theirs`; then reads both
/// with TileDB and ours with the runtime too, and compares each with
/// TileDB's read of its own array. Returns what differed.
fn compare_written(
    o: &mut oracle::Oracle,
    label: &str,
    ours: &Path,
    theirs: &Path,
    (schema, steps): (&toml::Value, &[toml::Value]),
    case: &Value,
    builder: tiledb_runtime::schema::SchemaBuilder,
) -> Vec<String> {
    let mut failures = Vec::new();
    if let Err(e) = Array::create_path(ours, &builder) {
        return vec![format!("{label}: the builder refused it: {e}")];
    }
    let created = o.request(
        &json!({"op": "create", "uri": theirs, "schema": toml_to_json(schema), "case": case}),
    );
    if created != json!({"ok": true}) {
        return vec![format!("{label}: TileDB refused the schema: {created}")];
    }
    let options = OpenOptions {
        key: builder.encryption_key,
        ..OpenOptions::default()
    };
    for step in steps {
        let write = recipe::write(schema, step).unwrap_or_else(|e| panic!("{label}: {e}"));
        let array = Array::open_path(ours, options).unwrap();
        if let Err(e) = array.write(&write) {
            failures.push(format!("{label}: our write failed: {e}"));
        }
        let answer = o.request(&json!({"op": "write", "uri": theirs, "schema": toml_to_json(schema), "step": toml_to_json(step), "case": case}));
        if answer != json!({"ok": true}) {
            failures.push(format!("{label}: TileDB's write failed: {answer}"));
        }
    }
    let dups = schema
        .get("allows_duplicates")
        .and_then(toml::Value::as_bool)
        .unwrap_or(false);
    // A read must stay inside the current domain (TileDB refuses others).
    let ranges = schema.get("current_domain").map(|cd| {
        let cd = toml_to_json(cd);
        Value::Array(cd.as_array().unwrap().iter().map(|r| json!([r])).collect())
    });
    let reads: Vec<Value> = [json!({}), json!({"layout": "global"})]
        .into_iter()
        .map(|mut r| {
            if let Some(ranges) = &ranges {
                r["ranges"] = ranges.clone();
            }
            r
        })
        .collect();
    for read in reads {
        let expected = o.request(&json!({"op": "read", "uri": theirs, "read": read, "case": case}));
        let by_tiledb = o.request(&json!({"op": "read", "uri": ours, "read": read, "case": case}));
        if expected.get("error").is_some() {
            failures.push(format!(
                "{label}: TileDB cannot read its own array: {expected}"
            ));
            continue;
        }
        if let Err(e) = common::compare_with(&expected, &by_tiledb, dups) {
            failures.push(format!(
                "{label} {read}: TileDB reads ours differently: {e}"
            ));
        }
        let mut our_case = case.clone();
        our_case["uri"] = json!(ours.file_name().unwrap().to_string_lossy());
        // The runtime's reader on both arrays: it must not tell our writer's
        // array from TileDB's, and it must read TileDB's own array as TileDB
        // does.
        let mut their_case = case.clone();
        their_case["uri"] = json!(theirs.file_name().unwrap().to_string_lossy());
        let runtime_theirs =
            tiledb_conformance::adapter::run_read(theirs.parent().unwrap(), &their_case, &read);
        let runtime_ours =
            tiledb_conformance::adapter::run_read(ours.parent().unwrap(), &our_case, &read);
        match (runtime_theirs, runtime_ours) {
            (Ok(t), Ok(v)) => {
                if let Err(e) = common::compare_with(&t, &v, dups) {
                    failures.push(format!(
                        "{label} {read}: the runtime reads ours unlike TileDB's: {e}"
                    ));
                }
                if let Err(e) = common::compare_with(&expected, &t, dups) {
                    failures.push(format!(
                        "{label} {read}: the runtime's reader differs from TileDB on TileDB's own array: {e}"
                    ));
                }
            }
            (t, v) => failures.push(format!(
                "{label} {read}: the runtime read theirs {:?}, ours {:?}",
                t.err(),
                v.err()
            )),
        }
    }
    failures
}

#[test]
fn accepted_schemas_and_writes_read_back_as_tiledb_wrote_them() {
    let Some(mut o) = oracle() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let cases = matrix_cases();
    assert!(cases.len() >= 35, "only {} matrix cases", cases.len());
    for (k, (id, case)) in cases.iter().enumerate() {
        let (schema, steps) = generate::recipe(k, case);
        let label = format!("{k} ({id})");
        let builder = recipe::builder(&schema).unwrap_or_else(|e| panic!("{label}: {e}"));
        let ours = tmp.path().join(format!("ours{k}"));
        let theirs = tmp.path().join(format!("theirs{k}"));
        failures.extend(compare_written(
            &mut o,
            &label,
            &ours,
            &theirs,
            (&schema, &steps),
            &json!({}),
            builder,
        ));
    }
    println!("{} generated schemas written and compared", cases.len());
    assert!(failures.is_empty(), "{failures:#?}");
}

/// `(what, [schema], write steps, case)`: schemas the generator does not
/// reach — no attributes (TileDB creates and writes such a sparse array),
/// encryption, a dimension label, a write of no cells.
fn special_recipes() -> Vec<(&'static str, String, Vec<String>, Value)> {
    let key =
        json!({"encryption": {"type": "AES_256_GCM", "key": "0123456789abcdeF0123456789abcdeF"}});
    vec![
        ("a sparse array without attributes", format!("type = \"sparse\"\ndims = [{DIM}]\nattrs = []"), vec!["coords = { d = [3, 1, 2] }".into()], json!({})),
        (
            "an encrypted array",
            format!("type = \"sparse\"\ndims = [{DIM}]\nattrs = [{ATTR}, {{ name = \"s\", type = \"STRING_UTF8\", cell_val_num = \"var\", nullable = true }}]"),
            vec!["coords = { d = [7, 2] }\ndata = { a = [70, 20], s = [\"x\", \"\"] }\nvalidity = { s = [1, 0] }".into()],
            key,
        ),
        (
            "a dense array with a dimension label",
            format!("type = \"dense\"\ndims = [{DIM}]\nattrs = [{ATTR}]\ndim_labels = [{{ name = \"l\", dim_index = 0, type = \"FLOAT64\", order = \"increasing\" }}]"),
            vec!["subarray = [[10, 12]]\ndata = { a = [1, 2, 3] }".into()],
            json!({}),
        ),
        (
            "two writes, the second of no cells",
            format!("type = \"sparse\"\nallows_duplicates = true\ndims = [{DIM}]\nattrs = [{ATTR}]"),
            vec!["coords = { d = [4, 4] }\ndata = { a = [1, 2] }".into(), "coords = { d = [] }\ndata = { a = [] }".into()],
            json!({}),
        ),
    ]
}

#[test]
fn special_schemas_read_back_as_tiledb_wrote_them() {
    let Some(mut o) = oracle() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (k, (what, schema_text, steps, case)) in special_recipes().into_iter().enumerate() {
        let schema = parse(&schema_text);
        let steps: Vec<toml::Value> = steps
            .iter()
            .map(|s| parse(&format!("timestamp = 10\n{s}")))
            .collect();
        let mut builder = recipe::builder(&schema).unwrap_or_else(|e| panic!("{what}: {e}"));
        if let Some(key) = case.pointer("/encryption/key").and_then(Value::as_str) {
            builder.encryption_key = Some(key.as_bytes().try_into().unwrap());
        }
        let ours = tmp.path().join(format!("ours{k}"));
        let theirs = tmp.path().join(format!("theirs{k}"));
        failures.extend(compare_written(
            &mut o,
            what,
            &ours,
            &theirs,
            (&schema, &steps),
            &case,
            builder,
        ));
        // Committed fragments: TileDB leaves an empty, uncommitted fragment
        // folder behind a write of no cells, which readers ignore; the
        // runtime writes nothing.
        let commits = |p: &Path| {
            std::fs::read_dir(p.join("__commits")).map_or(0, |d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".wrt"))
                    .count()
            })
        };
        if commits(&ours) != commits(&theirs) {
            failures.push(format!(
                "{what}: {} fragments, TileDB committed {}",
                commits(&ours),
                commits(&theirs)
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The typed API without a recipe: a sparse schema from the builder's
/// constructors, a write of typed columns (a string attribute with nulls),
/// read back by the runtime as written, and by TileDB as the runtime reads
/// it.
#[test]
fn typed_columns_write_and_read_back() {
    use tiledb_runtime::filter::{Datatype, Filter};
    use tiledb_runtime::read::ReadQuery;
    use tiledb_runtime::schema::{AttributeSpec, DimensionSpec, SchemaBuilder, SchemaOrder};
    use tiledb_runtime::write::{Column, Write, WriteLayout};

    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("typed");
    let schema = SchemaBuilder::sparse()
        .dimension(
            DimensionSpec::new::<i64>("t", 0, 1_000_000, None).with_datatype(Datatype::DatetimeMs),
        )
        .dimension(DimensionSpec::new::<f32>("x", -1.0, 1.0, None))
        .attribute(
            AttributeSpec::new("v", Datatype::Float64).with_filters(vec![Filter::ScaleFloat {
                scale: 0.25,
                offset: 1.0,
                byte_width: 2,
            }]),
        )
        .attribute(
            AttributeSpec::new("s", Datatype::StringUtf8)
                .var()
                .nullable(),
        )
        .orders(SchemaOrder::RowMajor, SchemaOrder::Hilbert)
        .capacity(2);
    let array = Array::create_path(&path, &schema).unwrap();
    let write = Write::sparse(vec![
        Column::from_values_as("t", Datatype::DatetimeMs, &[30i64, 10, 20]),
        Column::from_values("x", &[0.5f32, -0.5, 0.0]),
        Column::from_values("v", &[3.0f64, 1.0, 2.0]),
        Column::from_strings("s", Datatype::StringUtf8, &["c", "", "b"])
            .with_validity(&[true, false, true]),
    ])
    .with_layout(WriteLayout::Unordered)
    .at(7);
    assert!(array.write(&write).unwrap().is_some());
    let array = Array::open_path(&path, OpenOptions::default()).unwrap();
    let result = array
        .read(&ReadQuery {
            layout: tiledb_runtime::read::ResultOrder::RowMajor,
            ..ReadQuery::default()
        })
        .unwrap();
    let col = |name: &str| {
        result
            .attributes
            .iter()
            .chain(&result.dimensions)
            .find(|c| c.name == name)
            .unwrap()
    };
    assert_eq!(
        col("t"),
        &Column::from_values_as("t", Datatype::DatetimeMs, &[10i64, 20, 30])
    );
    assert_eq!(col("v"), &Column::from_values("v", &[1.0f64, 2.0, 3.0]));
    let s = col("s");
    assert_eq!(
        (s.cell(0).1, s.cell(1), s.cell(2)),
        (false, (&b"b"[..], true), (&b"c"[..], true))
    );
    if let Some(mut o) = oracle() {
        let read = json!({"layout": "row-major"});
        let by_tiledb = o.request(&json!({"op": "read", "uri": path, "read": read}));
        let by_runtime =
            tiledb_conformance::adapter::run_read(tmp.path(), &json!({"uri": "typed"}), &read)
                .unwrap();
        common::compare(&by_runtime, &by_tiledb)
            .unwrap_or_else(|e| panic!("TileDB reads it otherwise: {e}"));
    }
}
