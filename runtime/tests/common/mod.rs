//! Shared by the read tests: where the workspace and TileDB's Python are,
//! and the conformance kit's reading of a case spec with our runtime, its
//! canonical JSON and its comparisons (one implementation, in
//! `tiledb-conformance`, for the runner and these tests).

#![allow(dead_code)]

pub mod child;
pub mod counting;
pub mod global_dense;

use serde_json::Value;
use std::path::{Path, PathBuf};

pub use tiledb_conformance::adapter::Failure;
use tiledb_runtime::read::ReadResult;

/// The bytes of a result as a read's memory budget counts them: every
/// column's data, 8 bytes an offset, a byte a validity value.
pub fn result_bytes(result: &ReadResult) -> u64 {
    let columns = result.dimensions.iter().chain(&result.attributes);
    columns
        .map(|c| {
            let offsets = c.offsets.as_ref().map_or(0, |o| o.len() * 8);
            (c.data.len() + offsets + c.validity.as_ref().map_or(0, Vec::len)) as u64
        })
        .sum()
}

/// The workspace root (the parent of this crate).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the runtime crate sits inside the workspace")
        .to_path_buf()
}

/// The Python of the TileDB oracle venv (`.venv-tiledb/` in the workspace,
/// or `$TILEDB_PY`): the one lookup, in the conformance kit.
pub fn tiledb_python() -> Option<PathBuf> {
    tiledb_conformance::oracle::tiledb_python()
}

/// Copies the folder `from` to `to`, every file and subfolder (`to` may
/// exist). The copied files are writable even where the originals are not
/// (`../shared`'s test arrays are read-only), so a test may change its copy.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            let mut permissions = std::fs::metadata(&target).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            permissions.set_readonly(false);
            std::fs::set_permissions(&target, permissions).unwrap();
        }
    }
}

/// A case file's TOML as JSON (the shape the kit's case specs take):
/// datetimes as their text.
pub fn toml_to_json(v: toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::from(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => Value::from(f),
        toml::Value::Boolean(b) => Value::from(b),
        toml::Value::Datetime(d) => Value::from(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.into_iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => {
            Value::Object(t.into_iter().map(|(k, v)| (k, toml_to_json(v))).collect())
        }
    }
}

/// Runs the Python `script` with `spec` as its one argument and returns the
/// JSON it prints; a failed run fails the test with its stderr.
pub fn python_json(python: &Path, script: &str, spec: &Value) -> Value {
    let run = std::process::Command::new(python)
        .args(["-c", script, &spec.to_string()])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&run.stdout).unwrap()
}

/// Runs one read of a case (an entry of its `[[reads]]`) on the array or
/// group under `case_dir`; `Ok` is the canonical answer (without `id`).
pub fn run_read(case_dir: &Path, case: &Value, read: &Value) -> Result<Value, Failure> {
    tiledb_conformance::adapter::run_read(case_dir, case, read)
}

/// An expected answer as the kit compares it: without the read's `id`.
fn without_id(expected: &Value) -> Value {
    let mut e = expected.clone();
    if let Some(o) = e.as_object_mut() {
        o.remove("id");
    }
    e
}

/// Compares a result with the expected one (an entry of `expected.json`).
pub fn compare(expected: &Value, actual: &Value) -> Result<(), String> {
    tiledb_conformance::compare::compare(&without_id(expected), actual)
}

/// As [`compare`]; `duplicates_unordered` for row- and column-major reads,
/// where TileDB's order among equal coordinates is that of an unstable sort.
pub fn compare_with(
    expected: &Value,
    actual: &Value,
    duplicates_unordered: bool,
) -> Result<(), String> {
    if duplicates_unordered {
        tiledb_conformance::compare::compare_duplicates_unordered(&without_id(expected), actual)
    } else {
        compare(expected, actual)
    }
}
