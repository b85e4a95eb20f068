//! Arrays on Azure Blob storage through Azurite (the npm package, pinned by
//! `tests/azurite/package-lock.json`, installed on first use), started here
//! on 127.0.0.1: what TileDB 2.30 writes to a container we read as TileDB
//! reads it, and what `tdb create`, `write`, `meta`, `consolidate` and
//! `vacuum` write there TileDB reads as it reads the local original. Our
//! side uses `object_store`'s Azure backend with the endpoint, account and
//! key given explicitly (nothing else is contacted).

mod s3_support;
mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use s3_support::TileDb;
use support::workspace;

/// The account and key every Azurite has.
const ACCOUNT: &str = "devstoreaccount1";
const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// Azurite's blob service on a free port of 127.0.0.1, in memory; killed
/// when dropped.
struct Azurite {
    child: Child,
    port: u16,
}

impl Drop for Azurite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `tests/azurite` with its node packages installed (`npm ci` on first use):
/// the `azurite-blob` command, or `None` (and why, printed) when it cannot
/// be installed.
fn azurite_command() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/azurite");
    let command = dir.join("node_modules/.bin/azurite-blob");
    if !command.exists() {
        let installed = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--silent"])
            .current_dir(&dir)
            .status()
            .is_ok_and(|s| s.success());
        if !installed {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but azurite could not be installed (npm ci in tdb/tests/azurite)"
            );
            println!("skipped: azurite could not be installed (npm ci in tdb/tests/azurite)");
            return None;
        }
    }
    Some(command)
}

fn start_azurite() -> Option<Azurite> {
    let mut child = Command::new(azurite_command()?)
        .args([
            "--blobHost",
            "127.0.0.1",
            "--blobPort",
            "0",
            "--inMemoryPersistence",
            "--skipApiVersionCheck",
            "--loose",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start azurite");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut port = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(at) = line.split("listens on http://127.0.0.1:").nth(1) {
            port = at.trim().parse().ok();
            break;
        }
    }
    let port = port.expect("azurite prints the port it listens on");
    // Its later lines drained: a closed pipe would end it.
    std::thread::spawn(move || lines.for_each(drop));
    Some(Azurite { child, port })
}

/// Our configuration for Azurite at `port` (the account in the endpoint's
/// path, as Azurite serves it).
fn our_config(port: u16) -> Vec<(String, String)> {
    [
        ("azure_storage_account_name", ACCOUNT.to_owned()),
        ("azure_storage_account_key", KEY.to_owned()),
        (
            "azure_storage_endpoint",
            format!("http://127.0.0.1:{port}/{ACCOUNT}"),
        ),
        ("allow_http", "true".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

fn tiledb_config(port: u16) -> Value {
    json!({
        "vfs.azure.storage_account_name": ACCOUNT,
        "vfs.azure.storage_account_key": KEY,
        "vfs.azure.blob_endpoint": format!("http://127.0.0.1:{port}/{ACCOUNT}"),
    })
}

/// `tdb` with our configuration; its standard output (it must succeed).
fn tdb(port: u16, args: &[&str]) -> Vec<u8> {
    s3_support::tdb_configured(our_config(port), args)
}

#[test]
fn arrays_on_azurite_read_and_written_by_both_sides() {
    let Some(python) = s3_support::python() else {
        return;
    };
    let Some(azurite) = start_azurite() else {
        return;
    };
    let port = azurite.port;
    let mut tiledb = TileDb::with_config(&python, &tiledb_config(port));
    let made = tiledb.ask(&json!({"op": "create_bucket", "uri": "azure://arrays"}));
    assert!(made.get("error").is_none(), "{made}");

    // TileDB writes, we read what TileDB reads.
    let theirs_uri = "azure://arrays/theirs";
    let made = tiledb.ask(&json!({"op": "fragments", "uri": theirs_uri, "count": 3}));
    assert!(made.get("error").is_none(), "{made}");
    let seen = tiledb.ask(&json!({"op": "inspect", "uri": theirs_uri}));
    assert!(seen.get("error").is_none(), "{seen}");
    let ours: Value = serde_json::from_slice(&tdb(
        port,
        &["read", "az://arrays/theirs", "--format", "json"],
    ))
    .unwrap();
    assert_eq!(ours["attributes"]["a"], seen["cells"]["a"], "{ours}");
    assert_eq!(ours["dimensions"]["d"], seen["cells"]["d"], "{ours}");
    let array = tiledb_runtime::array::Array::open_url(
        "azure://arrays/theirs",
        &our_config(port),
        Default::default(),
    )
    .unwrap();
    assert_eq!(array.fragments().len(), 3);

    // We write (create, two writes, metadata, consolidation, vacuum);
    // TileDB reads as it reads the local original.
    let tmp = tempfile::tempdir().unwrap();
    for case in ["dense.attr.int32", "sparse.attr.string_utf8"] {
        let original = workspace().join(format!("conformance/corpus/tiledb-2.30/{case}"));
        let local = original.join("array");
        let local = local.to_str().unwrap();
        let (doc, cells) = (tmp.path().join("doc.json"), tmp.path().join("cells.json"));
        std::fs::write(&doc, tdb(port, &["info", "--json", local])).unwrap();
        std::fs::write(&cells, tdb(port, &["read", local, "--format", "json"])).unwrap();
        let remote = format!("az://arrays/{case}/array");
        tdb(
            port,
            &["create", &remote, "--schema", doc.to_str().unwrap()],
        );
        for _ in 0..2 {
            tdb(
                port,
                &["write", &remote, "--input", cells.to_str().unwrap()],
            );
        }
        tdb(port, &["meta", "set", &remote, "written_by", "tdb"]);
        tdb(port, &["consolidate", &remote, "--mode", "fragments"]);
        tdb(port, &["vacuum", &remote, "--mode", "fragments"]);
        let read = json!({"id": "all"});
        let root = format!("azure://arrays/{case}");
        let on_azure = tiledb.ask(&json!({"op": "read", "array_root": root, "read": read}));
        let on_disk = tiledb.ask(&json!({"op": "read", "array_root": original, "read": read}));
        assert!(on_azure.get("error").is_none(), "{case}: {on_azure}");
        tiledb_conformance::compare::compare_duplicates_unordered(&on_disk, &on_azure)
            .unwrap_or_else(|why| panic!("{case}: {why}"));
        let seen = tiledb.ask(&json!({"op": "inspect", "uri": format!("{root}/array")}));
        assert_eq!(seen["metadata"], json!({"written_by": "tdb"}), "{case}");
        assert_eq!(
            (&seen["fragments"], &seen["to_vacuum"]),
            (&json!(1), &json!(0)),
            "{case}"
        );
        // And we read it back as we wrote it.
        let back = tdb(port, &["read", &remote, "--format", "json"]);
        assert_eq!(back, std::fs::read(&cells).unwrap(), "{case}");
    }
}
