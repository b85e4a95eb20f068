//! Every `tdb` command on `s3://` URLs, against the test's moto server:
//! what `meta`, `group`, `consolidate`, `vacuum`, `delete` and `evolve`
//! write there, TileDB 2.30 reads from the same bucket as we meant it;
//! `agg` answers as TileDB's cells add up; `explain` explains an uploaded
//! array as it explains the local one; `check` follows a group's members
//! on the bucket and finds a member's damaged tile.

use std::process::Output;

use serde_json::{json, Value};

use super::s3_support::{self, create_bucket, moto_port, workspace, TileDb};
use super::upload;

/// `tdb` with the `--config` of the test's server.
struct Cli {
    config: Vec<String>,
}

impl Cli {
    fn run(&self, args: &[&str]) -> Output {
        std::process::Command::new(env!("CARGO_BIN_EXE_tdb"))
            .args(&self.config)
            .args(args)
            .output()
            .expect("tdb runs")
    }

    /// Standard output of a run that must succeed.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "tdb {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

/// What TileDB sees of the array at `uri`; it must open it.
fn inspect(tiledb: &mut TileDb, uri: &str) -> Value {
    let seen = tiledb.ask(&json!({"op": "inspect", "uri": uri}));
    assert!(seen.get("error").is_none(), "TileDB on {uri}: {seen}");
    seen
}

fn group_seen(tiledb: &mut TileDb, uri: &str) -> Value {
    let seen = tiledb.ask(&json!({"op": "group", "uri": uri}));
    assert!(seen.get("error").is_none(), "TileDB on {uri}: {seen}");
    seen
}

fn ints(value: &Value) -> Vec<i64> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {value}"))
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect()
}

#[test]
fn every_command_on_s3_writes_what_tiledb_reads() {
    let Some(python) = s3_support::python() else {
        return;
    };
    let Some(port) = moto_port() else { return };
    create_bucket(port, "commands");
    let mut tiledb = TileDb::start(&python, port);
    let cli = Cli {
        config: s3_support::tdb_config_args(port),
    };
    let (group, arr, other) = (
        "s3://commands/g",
        "s3://commands/g/arr",
        "s3://commands/other",
    );

    // A group, and two arrays of one-cell fragments written by TileDB.
    cli.ok(&["group", "create", group]);
    for (uri, count) in [(arr, 4), (other, 1)] {
        let made = tiledb.ask(&json!({"op": "fragments", "uri": uri, "count": count}));
        assert!(made.get("error").is_none(), "{made}");
    }
    let written = inspect(&mut tiledb, arr);
    assert_eq!(ints(&written["cells"]["a"]), [0, 7, 14, 21]);
    assert_eq!(written["fragments"], 4);

    // Metadata: put, put, delete.
    cli.ok(&["meta", "set", arr, "answer", "42", "--type", "INT32"]);
    cli.ok(&["meta", "set", arr, "label", "hello"]);
    cli.ok(&["meta", "set", arr, "gone", "1", "--type", "UINT8"]);
    cli.ok(&["meta", "delete", arr, "gone"]);
    let seen = inspect(&mut tiledb, arr);
    assert_eq!(seen["metadata"], json!({"answer": 42, "label": "hello"}));
    let ours: Value = serde_json::from_str(&cli.ok(&["meta", "get", arr])).unwrap();
    assert_eq!(ours["answer"]["value"], json!([42]), "{ours}");

    // Fragment metadata consolidated: TileDB loads it from our file.
    cli.ok(&["consolidate", arr, "--mode", "fragment-meta"]);
    let seen = inspect(&mut tiledb, arr);
    assert_eq!(
        seen["consolidated_metadata"],
        json!([true, true, true, true])
    );
    assert_eq!(seen["cells"], written["cells"]);
    // Commits consolidated and vacuumed, fragments consolidated: one
    // fragment and four to vacuum, then none to vacuum.
    cli.ok(&["consolidate", arr, "--mode", "commits"]);
    cli.ok(&["vacuum", arr, "--mode", "commits"]);
    cli.ok(&["consolidate", arr, "--mode", "fragments"]);
    let seen = inspect(&mut tiledb, arr);
    assert_eq!(
        (&seen["fragments"], &seen["to_vacuum"]),
        (&json!(1), &json!(4))
    );
    assert_eq!(seen["cells"], written["cells"]);
    assert_eq!(cli.ok(&["vacuum", arr, "--mode", "fragments"]).trim(), "4");
    let seen = inspect(&mut tiledb, arr);
    assert_eq!(
        (&seen["fragments"], &seen["to_vacuum"]),
        (&json!(1), &json!(0))
    );
    assert_eq!(seen["cells"], written["cells"]);

    // A delete by condition, then aggregates over what is left.
    cli.ok(&["delete", arr, "--where", "a == 7"]);
    let seen = inspect(&mut tiledb, arr);
    let left = ints(&seen["cells"]["a"]);
    assert_eq!(left, [0, 14, 21]);
    let agg: Value = serde_json::from_str(&cli.ok(&[
        "agg", arr, "--op", "count", "--op", "sum:a", "--op", "max:a", "--json",
    ]))
    .unwrap();
    let sum: i64 = left.iter().sum();
    let max = left.iter().max().copied();
    assert_eq!(
        agg,
        json!({"count": left.len(), "sum(a)": sum, "max(a)": max})
    );

    // The schema evolved: TileDB reads the new attribute (its fill values).
    cli.ok(&["evolve", arr, "--add-attribute", "b:INT64"]);
    let seen = inspect(&mut tiledb, arr);
    assert_eq!(seen["attributes"], json!(["a", "b"]));
    assert_eq!(seen["cells"]["a"], json!(left));
    assert_eq!(ints(&seen["cells"]["b"]).len(), left.len());

    // Members: relative, absolute by URL, one removed; group metadata.
    cli.ok(&["group", "add", group, "arr", "--name", "first"]);
    cli.ok(&[
        "group",
        "add",
        group,
        other,
        "--absolute",
        "--name",
        "second",
    ]);
    cli.ok(&["meta", "set", group, "owner", "team"]);
    let seen = group_seen(&mut tiledb, group);
    assert_eq!(
        seen,
        json!({
            "members": [["first", arr, "array"], ["second", other, "array"]],
            "metadata": {"owner": "team"},
        })
    );
    cli.ok(&["group", "remove", group, "second"]);
    let seen = group_seen(&mut tiledb, group);
    assert_eq!(seen["members"], json!([["first", arr, "array"]]));
    let listed: Value = serde_json::from_str(&cli.ok(&["group", "list", group, "--json"])).unwrap();
    assert_eq!(listed["members"][0]["name"], "first", "{listed}");

    // The group checks clean, its member included; a damaged tile of the
    // member is found through the group.
    let clean = cli.run(&["check", group]);
    assert!(
        clean.status.success(),
        "{}",
        String::from_utf8_lossy(&clean.stdout)
    );
    let storage = tiledb_runtime::storage::open_url(arr, &s3_support::our_config(port)).unwrap();
    let root = tiledb_runtime::storage::RelPath::parse("__fragments").unwrap();
    let fragment = storage.list(&root).unwrap().unwrap()[0].name.clone();
    let tile = root.join(&fragment).unwrap().join("a0.tdb").unwrap();
    let mut bytes = storage.read(&tile).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    storage.write(&tile, &bytes).unwrap();
    let damaged = cli.run(&["check", group]);
    let found = String::from_utf8_lossy(&damaged.stdout);
    assert_eq!(damaged.status.code(), Some(1), "{found}");
    assert!(
        found.contains(&format!("arr/__fragments/{fragment}/a0.tdb")),
        "{found}"
    );
}

/// `tdb explain` of an uploaded corpus array (a folder URL, then single
/// files) says what it says of the local array, names aside. A fragment's
/// files are explained with what lies beside and above them (the fragment
/// metadata that types a data file's tiles, the schema a footer names),
/// read through the object store in place: a copy of the one file named
/// would explain less of it, or refuse it.
#[test]
fn explain_on_s3_explains_as_on_disk() {
    let Some(port) = moto_port() else { return };
    create_bucket(port, "explained");
    let cli = Cli {
        config: s3_support::tdb_config_args(port),
    };
    let local = workspace().join("conformance/corpus/tiledb-2.30/sparse.attr.string_utf8/array");
    let url = "s3://explained/array";
    let storage = tiledb_runtime::storage::open_url(url, &s3_support::our_config(port)).unwrap();
    assert!(upload(&local, storage.as_ref()) > 3);
    let local_text = local.to_str().unwrap();
    let theirs = cli
        .ok(&["explain", "--json", local_text])
        .replace(local_text, url);
    let ours = cli.ok(&["explain", "--json", url]);
    assert_eq!(ours, theirs);
    let explained: Value = serde_json::from_str(&ours).unwrap();
    let files = explained["files"].as_array().unwrap();
    assert!(files.len() > 3, "{ours:.300}");
    let schema = files
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .find(|p| p.contains("/__schema/"))
        .unwrap();
    let one = cli.ok(&["explain", "--coverage", schema]);
    let one_local = cli
        .ok(&["explain", "--coverage", &schema.replace(url, local_text)])
        .replace(local_text, url);
    assert_eq!(one, one_local);
    assert!(
        one.starts_with("100.00% s3://explained/array/__schema/"),
        "{one}"
    );
    let fragment_files: Vec<&str> = files
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .filter(|p| p.contains("/__fragments/"))
        .filter(|p| p.ends_with("/__fragment_metadata.tdb") || p.ends_with("_var.tdb"))
        .collect();
    assert!(fragment_files.len() >= 2, "{fragment_files:?}");
    for file in fragment_files {
        let alone = cli.ok(&["explain", "--json", file]);
        let alone_local = cli
            .ok(&["explain", "--json", &file.replace(url, local_text)])
            .replace(local_text, url);
        assert_eq!(alone, alone_local, "{file}");
        let explained: Value = serde_json::from_str(&alone).unwrap();
        assert_eq!(
            explained["files"][0]["coverage"][0]["percent"], 100.0,
            "{alone:.600}"
        );
    }
}
