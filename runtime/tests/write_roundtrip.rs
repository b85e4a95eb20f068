//! Every non-negative conformance case is replayed with this runtime as the
//! writer (`tiledb_conformance::recipe::replay_case`) into a temporary folder,
//! then read back twice: (a) by this runtime's reader and (b) by TileDB 2.30
//! through `conformance/adapters/tiledb_py_adapter.py` (when a venv with
//! tiledb-py is found; otherwise that half is skipped with a printed reason).
//! Both must give exactly the results TileDB gave for its own arrays
//! (`conformance/corpus/tiledb-2.30/<case>/expected.json`).
//!
//! Cases the writer cannot replay yet are listed in `UNSUPPORTED` with the
//! reason; the test fails for any other case that does not replay or read
//! back, and for a listed case that now replays (so the list stays honest).

mod common;

use common::{toml_to_json, workspace};

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

/// `(case, reason)`: cases whose recipe uses something the writer does not
/// do yet. Their replay must fail with an `unsupported` error.
/// Empty today: every non-negative case replays.
const UNSUPPORTED: &[(&str, &str)] = &[];

/// TileDB through the adapter's `serve` mode: one JSON request per line.
struct Oracle {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Oracle {
    fn start() -> Result<Oracle, String> {
        let ws = workspace();
        let python =
            common::tiledb_python().ok_or("no venv with tiledb-py (.venv-tiledb or $TILEDB_PY)")?;
        let mut child = Command::new(&python)
            .arg(ws.join("conformance/adapters/tiledb_py_adapter.py"))
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Oracle {
            child,
            stdin,
            stdout,
        })
    }

    fn request(&mut self, req: &Value) -> Result<Value, String> {
        writeln!(self.stdin, "{req}").map_err(|e| format!("write to the adapter: {e}"))?;
        self.stdin.flush().map_err(|e| format!("flush: {e}"))?;
        // Lines that are not JSON (a library printing to stdout) are skipped.
        for _ in 0..100 {
            let mut line = String::new();
            let n = self
                .stdout
                .read_line(&mut line)
                .map_err(|e| format!("read from the adapter: {e}"))?;
            if n == 0 {
                return Err("the adapter exited".into());
            }
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                return Ok(v);
            }
            println!("adapter printed: {line:?}");
        }
        Err("no answer from the adapter".into())
    }
}

/// Reads through the oracle, restarting it once if it died.
fn oracle_read(oracle: &mut Option<Oracle>, root: &Path, case_file: &Path, read_id: &str) -> Value {
    let req = json!({
        "op": "read",
        "array_root": root.to_string_lossy(),
        "case_file": case_file.to_string_lossy(),
        "read_id": read_id,
    });
    let first = oracle.as_mut().map(|o| o.request(&req));
    match first {
        Some(Ok(v)) => v,
        Some(Err(why)) => {
            println!("restarting the adapter: {why}");
            *oracle = Oracle::start().ok();
            match oracle.as_mut().map(|o| o.request(&req)) {
                Some(Ok(v)) => v,
                other => json!({"error": "adapter", "message": format!("{other:?}")}),
            }
        }
        None => json!({"error": "adapter", "message": "not running"}),
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn replayed_cases_read_back_as_tiledb_wrote_them() {
    let ws = workspace();
    let corpus = ws.join("conformance/corpus/tiledb-2.30");
    let mut oracle = match Oracle::start() {
        Ok(o) => Some(o),
        Err(reason) => {
            println!("skipping the TileDB half: {reason}");
            None
        }
    };
    let mut cases: Vec<PathBuf> = std::fs::read_dir(ws.join("conformance/cases"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    cases.sort();
    let mut failures = Vec::new();
    let mut now_supported = Vec::new();
    let (mut replayed, mut ours_ok, mut tiledb_ok) = (0, 0, 0);
    for case_file in cases {
        let id = case_file
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let expected_file = corpus.join(&id).join("expected.json");
        if id.starts_with("negative.") || !expected_file.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&case_file).unwrap();
        // A case with a `base` is made by mutating another case's array: there
        // is no recipe for a writer to replay.
        if text
            .lines()
            .any(|l| l.trim_start().starts_with("base ") || l.trim_start().starts_with("base="))
        {
            continue;
        }
        let listed = UNSUPPORTED.iter().find(|(c, _)| *c == id);
        let out = tempfile::tempdir().unwrap();
        let outcome = tiledb_conformance::recipe::replay_case(&text, out.path());
        match (outcome, listed) {
            (Err(e), Some((_, reason))) if e.class().name() == "unsupported" => {
                println!("unsupported {id}: {reason}");
                continue;
            }
            (Err(e), _) => {
                failures.push(format!("{id}: replay failed: {e}"));
                continue;
            }
            (Ok(()), Some(_)) => now_supported.push(id.clone()),
            (Ok(()), None) => {}
        }
        replayed += 1;
        let case = toml_to_json(toml::from_str(&text).unwrap());
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(&expected_file).unwrap()).unwrap();
        let specs = case
            .get("reads")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut case_ours = true;
        let mut case_tiledb = oracle.is_some();
        for exp in expected["reads"].as_array().unwrap() {
            if exp.get("skip").is_some() {
                continue;
            }
            let rid = exp["id"].as_str().unwrap_or_default();
            let spec = specs
                .iter()
                .find(|r| r.get("id").and_then(Value::as_str) == Some(rid))
                .cloned()
                .unwrap_or_else(|| json!({"id": rid}));
            let ours = match common::run_read(out.path(), &case, &spec) {
                Ok(actual) => common::compare(exp, &actual),
                Err(e) => Err(format!("error: {e}")),
            };
            if let Err(msg) = ours {
                case_ours = false;
                failures.push(format!("{id}/{rid}: our reader: {msg}"));
            }
            if oracle.is_some() {
                let theirs = oracle_read(&mut oracle, out.path(), &case_file, rid);
                let verdict = if let Some(err) = theirs.get("error") {
                    Err(format!("TileDB refused it: {err} {}", theirs["message"]))
                } else {
                    common::compare(exp, &theirs)
                };
                if let Err(msg) = verdict {
                    case_tiledb = false;
                    failures.push(format!("{id}/{rid}: TileDB: {msg}"));
                }
            }
        }
        ours_ok += case_ours as usize;
        tiledb_ok += case_tiledb as usize;
    }
    println!(
        "replayed {replayed} cases; read back as expected by our reader: {ours_ok}, by TileDB 2.30: {tiledb_ok}"
    );
    for f in &failures {
        println!("FAIL {f}");
    }
    assert!(
        now_supported.is_empty(),
        "listed as unsupported but replay now (remove them): {now_supported:?}"
    );
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(replayed > 50, "too few cases replayed: {replayed}");
}
