//! Shared set-up of the runner tests: where things are, and the TileDB adapter when the
//! workspace has a venv holding tiledb-py (`.venv-tiledb/bin/python`, then `$TILEDB_PY`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use tiledb_conformance::adapter::tiledb_py_command;
use tiledb_conformance::{Adapter, ProcessAdapter, RunConfig, Selection};

pub fn conformance_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn workspace() -> PathBuf {
    conformance_dir().join("..")
}

pub fn doubles_dir() -> PathBuf {
    conformance_dir().join("tests").join("doubles")
}

/// The tiledb-py adapter's command, or `None` after printing why the test is skipped.
pub fn tiledb_py(test: &str) -> Option<Vec<String>> {
    let command = tiledb_py_command(&workspace(), &conformance_dir());
    if command.is_none() {
        eprintln!(
            "{test}: SKIPPED: no tiledb-py (neither .venv-tiledb/bin/python in the workspace nor $TILEDB_PY)"
        );
    }
    command
}

/// A test double under tests/doubles run with the venv's Python, after `lead` arguments.
pub fn double(python_command: &[String], script: &str, lead: &[&str]) -> Vec<String> {
    let mut command = vec![python_command[0].clone()];
    command.push(doubles_dir().join(script).display().to_string());
    command.extend(lead.iter().map(std::string::ToString::to_string));
    command
}

pub fn start(command: Vec<String>, timeout: Duration) -> Box<dyn Adapter> {
    match ProcessAdapter::start(command.clone(), timeout) {
        Ok(a) => Box::new(a),
        Err(e) => panic!("adapter {command:?} did not start: {e}"),
    }
}

pub fn config(selection: Selection) -> RunConfig {
    config_in(&conformance_dir(), selection)
}

pub fn config_in(conformance: &Path, selection: Selection) -> RunConfig {
    RunConfig {
        conformance_dir: conformance.to_path_buf(),
        corpus_dir: conformance_dir().join("corpus"),
        legacy_arrays: legacy_arrays(),
        selection,
        oracle: "tiledb-py".to_string(),
        repro_prefix: "tdb conformance".to_string(),
        repro_args: Vec::new(),
    }
}

pub fn corpus_only(cases: &[&str]) -> Selection {
    Selection {
        cases: cases.iter().map(std::string::ToString::to_string).collect(),
        live: false,
        ..Selection::default()
    }
}

/// TileDB's legacy test arrays beside the workspace, when present.
pub fn legacy_arrays() -> Option<PathBuf> {
    tiledb_conformance::corpus::legacy_arrays_dir(&conformance_dir().join(".."))
}
