//! `tdb meta`, `tdb group` and `tdb evolve`: what they write, TileDB 2.30 reads as our reader
//! does (tiledb-py through the conformance adapter; skipped with a printed reason when absent),
//! and bad input exits 2 with a message, the array or group untouched.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::{refused_by, succeeded, tdb_command};
use tiledb_conformance::adapter::tiledb_py_command;
use tiledb_conformance::{Adapter, Answer, ProcessAdapter, RuntimeAdapter};

/// `tdb ARGS` run in the folder `dir` (the commands take paths below it).
fn tdb(dir: &Path, args: &[&str]) -> Command {
    let mut command = tdb_command();
    command.current_dir(dir).args(args);
    command
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = tdb(dir, args).output().expect("tdb runs");
    String::from_utf8_lossy(&succeeded(out, args)).into_owned()
}

/// `tdb ARGS` exits 2 naming `needle`, and nothing under `dir` changed.
fn refused(dir: &Path, args: &[&str], needle: &str) {
    refused_by(tdb(dir, args), needle, dir);
}

const SCHEMA: &str = r#"{"array_type":"sparse",
 "dimensions":[{"name":"d","type":"INT32","domain":[0,100],"tile_extent":10}],
 "attributes":[{"name":"a","type":"INT32"},{"name":"old","type":"FLOAT32"}],
 "current_domain":[[0,10]]}"#;

const EVOLUTION: &str = r#"
add_enumerations = [{ name = "colors", type = "STRING_UTF8", cell_val_num = "var", values = ["red", "green"] }]
add_attributes = [{ name = "c", type = "UINT8", enumeration = "colors" }]
drop_attributes = ["old"]
"#;

/// The reads TileDB and our reader both make of what the commands wrote.
const READS: &str = r#"
id = "tdb-edits"
title = "what tdb meta, group and evolve wrote"
spec = []
level = "required"
min_format = 22
tags = { array = "sparse", datatypes = ["INT32"], filters = [], features = [] }

[[reads]]
id = "meta"
uri = "arr"
kind = "metadata"

[[reads]]
id = "schema"
uri = "arr"
kind = "schema"

[[reads]]
id = "enumerations"
uri = "arr"
kind = "enumerations"

[[reads]]
id = "group"
uri = "g"
kind = "group"
"#;

#[test]
fn meta_group_and_evolve_write_what_tiledb_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("schema.json"), SCHEMA).unwrap();
    std::fs::write(dir.join("evolve.toml"), EVOLUTION).unwrap();
    ok(dir, &["create", "arr", "--schema", "schema.json"]);
    ok(dir, &["meta", "set", "arr", "title", "a", "title"]);
    ok(
        dir,
        &[
            "meta", "set", "arr", "sizes", "1", "-2", "3", "--type", "INT16",
        ],
    );
    ok(
        dir,
        &[
            "meta",
            "set",
            "arr",
            "when",
            "2024-01-02",
            "--type",
            "DATETIME_DAY",
        ],
    );
    ok(
        dir,
        &["meta", "set", "arr", "raw", "00ff", "--type", "BLOB"],
    );
    ok(
        dir,
        &["meta", "set", "arr", "gone", "1.5", "--type", "FLOAT64"],
    );
    ok(dir, &["meta", "delete", "arr", "gone"]);
    ok(dir, &["evolve", "arr", "--spec", "evolve.toml"]);
    ok(
        dir,
        &[
            "evolve",
            "arr",
            "--extend-enumeration",
            "colors=blue",
            "--current-domain",
            "0:50",
            "--add-attribute",
            "b:FLOAT64",
        ],
    );
    ok(dir, &["group", "create", "g"]);
    ok(dir, &["create", "g/inner", "--schema", "schema.json"]);
    ok(dir, &["group", "create", "g/sub"]);
    ok(dir, &["group", "add", "g", "inner", "--name", "in"]);
    ok(
        dir,
        &[
            "group",
            "add",
            "g",
            "arr",
            "--absolute",
            "--name",
            "outside",
        ],
    );
    ok(dir, &["group", "add", "g", "sub"]);
    ok(
        dir,
        &[
            "group",
            "add",
            "g",
            "g/inner",
            "--absolute",
            "--name",
            "twice",
        ],
    );
    ok(dir, &["group", "remove", "g", "twice"]);
    ok(dir, &["meta", "set", "g", "owner", "me"]);
    let listed = ok(dir, &["group", "list", "g", "--json"]);
    assert!(
        listed.contains(r#""name":"outside""#) && !listed.contains("twice"),
        "{listed}"
    );
    let got = ok(dir, &["meta", "get", "arr", "sizes"]);
    assert_eq!(got.trim(), r#"{"sizes":{"type":"INT16","value":[1,-2,3]}}"#);

    let case_file = dir.join("tdb-edits.toml");
    std::fs::write(&case_file, READS).unwrap();
    let mut ours = RuntimeAdapter::new();
    let ws = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let mut theirs = tiledb_py_command(&ws, &ws.join("conformance"))
        .map(|c| ProcessAdapter::start(c, Duration::from_secs(120)).expect("adapter starts"));
    if theirs.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI needs tiledb-py"
        );
        println!(
            "tdb edits: tiledb-py not found (.venv-tiledb or $TILEDB_PY): TileDB does not reread"
        );
    }
    let mut all = String::new();
    for read in ["meta", "schema", "enumerations", "group"] {
        let Answer::Value(mine) = ours.read(dir, &case_file, read) else {
            panic!("our read {read} failed")
        };
        all.push_str(&mine.to_string());
        if let Some(t) = theirs.as_mut() {
            match t.read(dir, &case_file, read) {
                Answer::Value(v) => assert_eq!(v, mine, "{read}: TileDB reads it otherwise"),
                other => panic!("TileDB read {read}: {other:?}"),
            }
        }
    }
    for expected in [
        r#""sizes":{"type":"INT16","values":[1,-2,3]}"#,
        r#""when":{"type":"DATETIME_DAY","values":["19724"]}"#,
        r#""raw":{"type":"BLOB","value":"00ff"}"#,
        r#""current_domain":[[0,50]]"#,
        r#""values":["726564","677265656e","626c7565"]"#,
        r#"{"name":"outside","type":"array","uri":"../arr"}"#,
        r#"{"name":null,"type":"group","uri":"sub"}"#,
        r#""owner":{"type":"STRING_UTF8","value":"6d65"}"#,
    ] {
        assert!(all.contains(expected), "the reads lack {expected}: {all}");
    }
    for absent in [r#""gone""#, r#""old""#, "twice"] {
        assert!(!all.contains(absent), "the reads hold {absent}: {all}");
    }
}

#[test]
fn bad_edits_exit_2_and_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("schema.json"), SCHEMA).unwrap();
    ok(dir, &["create", "arr", "--schema", "schema.json"]);
    ok(dir, &["group", "create", "g"]);
    ok(
        dir,
        &["group", "add", "g", "arr", "--absolute", "--name", "a"],
    );
    refused(
        dir,
        &["meta", "set", "arr", "k", "1", "--type", "ANY"],
        "ANY",
    );
    refused(
        dir,
        &["meta", "set", "arr", "k", "x", "--type", "INT32"],
        "not an integer",
    );
    refused(dir, &["meta", "set", "nowhere", "k", "1"], "neither");
    refused(
        dir,
        &["evolve", "arr", "--current-domain", "0:5"],
        "only be expanded",
    );
    refused(
        dir,
        &["evolve", "arr", "--current-domain", "0:500"],
        "past the domain",
    );
    refused(
        dir,
        &["evolve", "arr", "--drop-attribute", "d"],
        "dimension",
    );
    refused(dir, &["evolve", "arr", "--add-attribute", "a:INT64"], "a");
    refused(dir, &["evolve", "arr"], "nothing to evolve");
    refused(dir, &["group", "create", "arr"], "an array");
    refused(dir, &["group", "create", "g"], "a group");
    refused(dir, &["group", "add", "g", "missing"], "does not exist");
    refused(dir, &["group", "add", "g", "../arr"], "inside the group");
    refused(dir, &["group", "remove", "g", "nobody"], "no such member");
    refused(
        dir,
        &["group", "remove", "g", "a", "a"],
        "already been removed",
    );
    refused(dir, &["group", "add", "arr", "x"], "not a group");
}
