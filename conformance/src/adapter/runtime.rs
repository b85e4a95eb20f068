//! Our own runtime, called in-process (no subprocess, no serialization in between).
//!
//! It claims only what it really does: the format versions up to the newest schema version the
//! runtime reads, every read capability of the kit (the runtime's corpus test reads every case),
//! and the writer role at format 22 (the runtime replays every recipe through
//! `crate::recipe::replay_case`, in the layout TileDB 2.30 reads). Each request runs on
//! its own thread: a panic is reported as a crash and a request that overruns the time limit as
//! a timeout (the thread is abandoned), so neither stops the suite.

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};
use tiledb_runtime::array::Array;
use tiledb_runtime::metadata::group_contents::GroupContents;
use tiledb_runtime::read::labels::read_by_label;
use tiledb_runtime::read::ResultOrder;
use tiledb_runtime::schema::{Scalar, MAX_SUPPORTED_VERSION};
use tiledb_runtime::storage::{LocalStorage, Storage};

use super::{Adapter, Answer, Info};
use crate::canonical;
use crate::case::CAPABILITIES;

/// The name the runtime goes by in matrices, known-failure files and `--reader`.
pub(crate) const RUNTIME_NAME: &str = "tiledb-runtime";

/// This workspace's runtime, called in-process: it reads the corpus and
/// replays recipes with `tiledb_runtime`, with no program to start.
pub struct RuntimeAdapter {
    info: Info,
    timeout: Duration,
}

impl RuntimeAdapter {
    /// The runtime with the default two-minute limit per request.
    pub fn new() -> RuntimeAdapter {
        RuntimeAdapter::with_timeout(Duration::from_secs(120))
    }

    /// The runtime, a request taking longer than `timeout` counted as a timeout.
    pub fn with_timeout(timeout: Duration) -> RuntimeAdapter {
        RuntimeAdapter {
            info: Info {
                name: RUNTIME_NAME.to_string(),
                version: format!("tiledb-runtime {} (pure Rust)", env!("CARGO_PKG_VERSION")),
                roles: vec!["reader".to_string(), "writer".to_string()],
                format_versions: (1..=MAX_SUPPORTED_VERSION).collect(),
                write_format_version: Some(tiledb_runtime::write::WRITE_VERSION),
                capabilities: CAPABILITIES
                    .iter()
                    .map(std::string::ToString::to_string)
                    .collect(),
            },
            timeout,
        }
    }
}

impl Default for RuntimeAdapter {
    fn default() -> Self {
        RuntimeAdapter::new()
    }
}

impl Adapter for RuntimeAdapter {
    fn info(&self) -> &Info {
        &self.info
    }

    fn write(&mut self, case_file: &Path, out_dir: &Path) -> Answer {
        let case_file = case_file.to_path_buf();
        let out_dir = out_dir.to_path_buf();
        self.contained("write", move || replay_by_file(&case_file, &out_dir))
    }

    fn read(&mut self, array_root: &Path, case_file: &Path, read_id: &str) -> Answer {
        let array_root = array_root.to_path_buf();
        let case_file = case_file.to_path_buf();
        let read_id = read_id.to_string();
        self.contained(&format!("read-{}", read_id.clone()), move || {
            read_by_id(&array_root, &case_file, &read_id)
        })
    }
}

impl RuntimeAdapter {
    /// Runs one request on its own thread, turning a panic into a crash and an overrun into a
    /// timeout.
    fn contained(&self, what: &str, request: impl FnOnce() -> Answer + Send + 'static) -> Answer {
        let (tx, rx) = mpsc::channel();
        let spawned = thread::Builder::new()
            .name(format!("tdb-{what}"))
            .spawn(move || {
                let outcome = panic::catch_unwind(AssertUnwindSafe(request));
                // The receiver is gone only when the runner gave up waiting.
                let _ = tx.send(outcome);
            });
        if let Err(e) = spawned {
            return Answer::Crashed(format!("starting a {what} thread: {e}"));
        }
        match rx.recv_timeout(self.timeout) {
            Ok(Ok(answer)) => answer,
            Ok(Err(payload)) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(std::string::ToString::to_string)
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".to_string());
                Answer::Crashed(format!("panicked: {message}"))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => Answer::TimedOut(self.timeout),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Answer::Crashed("the read thread ended without an answer".into())
            }
        }
    }
}

/// Replays a case recipe with our writer.
fn replay_by_file(case_file: &Path, out_dir: &Path) -> Answer {
    let text = match std::fs::read_to_string(case_file) {
        Ok(t) => t,
        Err(e) => return refused("io", format!("{}: {e}", case_file.display())),
    };
    match crate::recipe::replay_case(&text, out_dir) {
        Ok(()) => Answer::Value(json!({"ok": true})),
        Err(e) => refused(e.class().name(), e.to_string()),
    }
}

fn refused(class: &str, message: impl Into<String>) -> Answer {
    Answer::Refused {
        class: class.to_string(),
        message: message.into(),
    }
}

fn read_by_id(array_root: &Path, case_file: &Path, read_id: &str) -> Answer {
    let text = match std::fs::read_to_string(case_file) {
        Ok(t) => t,
        Err(e) => return refused("io", format!("{}: {e}", case_file.display())),
    };
    let case: Value = match toml::from_str::<toml::Value>(&text)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::to_value(t).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => return refused("usage", format!("{}: {e}", case_file.display())),
    };
    let spec = case
        .get("reads")
        .and_then(Value::as_array)
        .and_then(|reads| {
            reads
                .iter()
                .find(|r| r.get("id").and_then(Value::as_str) == Some(read_id))
        })
        .cloned();
    let Some(spec) = spec else {
        return refused(
            "usage",
            format!("no read {read_id:?} in {}", case_file.display()),
        );
    };
    match run_read(array_root, &case, &spec) {
        Ok(v) => Answer::Value(v),
        Err(failure) => refused(failure.class(), failure.to_string()),
    }
}

/// Why a read of a case failed with our runtime.
#[derive(Debug)]
pub enum Failure {
    /// The runtime refused the read, or the replay; the class comes from its error.
    Runtime(tiledb_runtime::Error),
    /// The read spec cannot be turned into a query.
    Spec(String),
}

impl Failure {
    /// The error class the adapter contract reports (`conformance/README.md`).
    pub fn class(&self) -> &'static str {
        match self {
            Failure::Runtime(e) => e.class().name(),
            Failure::Spec(_) => "usage",
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Runtime(e) => e.fmt(f),
            Failure::Spec(m) => f.write_str(m),
        }
    }
}

impl From<tiledb_runtime::Error> for Failure {
    fn from(e: tiledb_runtime::Error) -> Self {
        Failure::Runtime(e)
    }
}

/// One read of a case (`read`, an entry of its `[[reads]]`) with our runtime, as canonical
/// JSON (without `id`); `array_root` holds the case's array (or group).
pub fn run_read(array_root: &Path, case: &Value, read: &Value) -> Result<Value, Failure> {
    let local = |path: &Path| -> tiledb_runtime::Result<Box<dyn Storage>> {
        Ok(Box::new(LocalStorage::new(path)))
    };
    run_read_on(array_root, &local, case, read)
}

/// How [`run_read_on`] reaches the folder at a local-looking path: the same
/// read then runs on another storage (an object store holding a copy of
/// the case's folders), its answer comparable with the local one.
pub type Opener<'a> = dyn Fn(&Path) -> tiledb_runtime::Result<Box<dyn Storage>> + 'a;

/// [`run_read`], each array and group opened through `open` (given the
/// path [`run_read`] would open, under `array_root`).
pub fn run_read_on(
    array_root: &Path,
    open: &Opener<'_>,
    case: &Value,
    read: &Value,
) -> Result<Value, Failure> {
    let uri = read
        .get("uri")
        .or(case.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or("array");
    let key: Option<[u8; 32]> = match case
        .get("encryption")
        .and_then(|e| e.get("key"))
        .and_then(Value::as_str)
    {
        Some(k) => Some(
            k.as_bytes()
                .try_into()
                .map_err(|_| Failure::Spec("the encryption key is not 32 bytes".into()))?,
        ),
        None => None,
    };
    let path = array_root.join(uri);
    let options = canonical::open_options(read, key);
    let kind = read.get("kind").and_then(Value::as_str).unwrap_or("cells");
    if kind == "group" {
        let storage = open(&path)?;
        let group = GroupContents::load(
            storage.as_ref(),
            options.timestamp_start,
            options.timestamp_end,
            key.as_ref(),
        )?;
        // A member without a name has none (`null`), as TileDB reports it; it sorts first.
        let mut members: Vec<(Option<String>, String, bool)> = group
            .members
            .iter()
            .map(|m| {
                (
                    m.name_set.then(|| m.name.clone()),
                    member_uri(&path, &m.uri, m.relative),
                    m.is_array,
                )
            })
            .collect();
        members.sort();
        let members: Vec<Value> = members
            .into_iter()
            .map(|(name, uri, is_array)| {
                json!({"name": name, "uri": uri, "type": if is_array { "array" } else { "group" }})
            })
            .collect();
        return Ok(json!({"members": members, "metadata": canonical::metadata(&group.metadata)}));
    }
    let array = Array::open(open(&path)?, options)?;
    Ok(match kind {
        "metadata" => json!({"metadata": canonical::metadata(&array.metadata()?)}),
        "schema" => json!({"schema": canonical::schema(array.schema())}),
        "enumerations" => json!({"enumerations": canonical::enumerations(array.schema())}),
        "cells" => {
            let query = canonical::query(&array, read).map_err(Failure::Spec)?;
            let result = array.read(&query)?;
            let (fields, cells) = canonical::cells(&result, "dim");
            let layout = read
                .get("layout")
                .and_then(Value::as_str)
                .unwrap_or("row-major");
            json!({"fields": fields, "ordered": layout != "unordered", "cells": cells})
        }
        "label" => {
            let name = read
                .get("label")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let label = array
                .schema()
                .labels
                .iter()
                .find(|l| l.name == name)
                .ok_or_else(|| Failure::Spec(format!("no dimension label {name:?}")))?;
            let label_array = Array::open(open(&path.join(&label.uri))?, options)?;
            let range = read
                .get("label_range")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let bound = |i: usize| -> Result<Scalar, Failure> {
                let v = range.get(i).unwrap_or(&Value::Null);
                let bytes = canonical::range_bytes(label.datatype, v).map_err(Failure::Spec)?;
                Scalar::decode(label.datatype, &bytes)
                    .ok_or_else(|| Failure::Spec(format!("label bound {v} does not decode")))
            };
            let mut query = canonical::query(&array, read).map_err(Failure::Spec)?;
            query.layout = ResultOrder::RowMajor;
            let result = read_by_label(
                array.snapshot(),
                label_array.snapshot(),
                name,
                &bound(0)?,
                &bound(1)?,
                &query,
            )?;
            let (fields, cells) = canonical::cells(&result, "label");
            json!({"fields": fields, "ordered": true, "cells": cells})
        }
        other => return Err(Failure::Spec(format!("unknown read kind {other:?}"))),
    })
}

/// A member's URI relative to the group folder, as the canonical JSON gives it.
fn member_uri(group: &Path, uri: &str, relative: bool) -> String {
    let uri = uri.trim_end_matches('/');
    if relative {
        return uri.to_string();
    }
    let local = PathBuf::from(uri.strip_prefix("file://").unwrap_or(uri));
    let group = std::fs::canonicalize(group).unwrap_or_else(|_| group.to_path_buf());
    let local = std::fs::canonicalize(&local).unwrap_or(local);
    if !local.is_absolute() {
        return uri.to_string();
    }
    // As Python's `os.path.relpath`, which the TileDB adapter uses: `..` up to the common
    // folder, then down.
    let (g, l): (Vec<_>, Vec<_>) = (group.components().collect(), local.components().collect());
    let common = g.iter().zip(&l).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..g.len() {
        rel.push("..");
    }
    for c in &l[common..] {
        rel.push(c);
    }
    rel.to_string_lossy().into_owned()
}
