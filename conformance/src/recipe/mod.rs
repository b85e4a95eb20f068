//! Replaying a conformance recipe (`conformance/cases/*.toml`, described in
//! `conformance/README.md`) with this runtime as the writer: arrays are
//! created through the runtime's `SchemaBuilder` (`builder`), writes become
//! fragments; metadata, groups and schema evolution are calls into the
//! runtime's API (`edits`).
//!
//! Steps this writer does not perform yet are refused with
//! [`Error::Unsupported`], so a caller can tell "not supported" from "wrong".

pub mod builder;
pub mod condition;
mod edits;
mod schema;
mod steps;
pub mod values;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::Value;

use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::error::{Error, Result};
use tiledb_runtime::schema::ArraySchema;
use tiledb_runtime::storage::LocalStorage;
use tiledb_runtime::write;

pub use schema::stored_schema;
use steps::{consolidate_step, stream_step, timestamp, vacuum_step, write_step};

fn unsupported(what: impl Into<String>) -> Error {
    Error::Unsupported {
        file: Default::default(),
        what: what.into(),
    }
}

fn usage(what: impl Into<String>) -> Error {
    Error::Usage(what.into())
}

fn get_str<'a>(t: &'a Value, key: &str) -> Option<&'a str> {
    t.get(key).and_then(Value::as_str)
}

/// An array created by a recipe: its folder and current schema.
struct ArrayState {
    root: PathBuf,
    schema: ArraySchema,
    /// `(label name, labelled dimension, label array schema, label array folder)`.
    labels: Vec<(String, usize, ArraySchema, PathBuf)>,
}

/// Creates the array `uri` (relative to `out_dir`) from the recipe's schema
/// through the runtime's [`SchemaBuilder`](tiledb_runtime::schema::SchemaBuilder)
/// (checked as TileDB checks it; enumeration files, label arrays, then the
/// schema file).
fn create(out_dir: &Path, uri: &str, spec: &Value, key: Option<[u8; 32]>) -> Result<ArrayState> {
    let mut builder = builder::builder(spec).map_err(usage)?;
    builder.encryption_key = key;
    let root = out_dir.join(uri);
    let storage = LocalStorage::new(&root);
    let schema = write::create_array_from(&storage, &builder, 0)?;
    let mut labels = Vec::new();
    for label in &schema.labels {
        let label_root = root.join(&label.uri);
        let label_array = Array::open_path(
            &label_root,
            OpenOptions {
                key,
                ..OpenOptions::default()
            },
        )?;
        labels.push((
            label.name.clone(),
            label.dim_index as usize,
            label_array.schema().clone(),
            label_root,
        ));
    }
    Ok(ArrayState {
        root,
        schema,
        labels,
    })
}

/// Replays the recipe `case_toml` (the text of a case file) into `out_dir`,
/// which receives the case's folders (`array`, or the case's `uri`).
pub fn replay_case(case_toml: &str, out_dir: &Path) -> Result<()> {
    replay_case_steps(case_toml, out_dir, usize::MAX, &mut |_, _| {})
}

/// The operations of a recipe in the order a replay performs them: `create`
/// for the case's `[schema]` (when it has one), then each step's `op`.
pub fn recipe_operations(case_toml: &str) -> Result<Vec<String>> {
    let case: Value =
        toml::from_str(case_toml).map_err(|e| usage(format!("not a case file: {e}")))?;
    let mut ops = Vec::new();
    if case.get("schema").is_some() {
        ops.push("create".to_string());
    }
    for step in case
        .get("steps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        ops.push(get_str(step, "op").unwrap_or("?").to_string());
    }
    Ok(ops)
}

/// The case's AES-256-GCM key (`encryption`), if any.
fn case_key(case: &Value) -> Result<Option<[u8; 32]>> {
    let Some(e) = case.get("encryption") else {
        return Ok(None);
    };
    if get_str(e, "type") != Some("AES_256_GCM") {
        return Err(unsupported("encryption other than AES_256_GCM"));
    }
    let k = get_str(e, "key").unwrap_or_default().as_bytes();
    Ok(Some(k.try_into().map_err(|_| {
        usage("an AES-256-GCM key must be 32 bytes")
    })?))
}

/// Performs operation `index` of [`recipe_operations`] again on the folders
/// a replay left in `out_dir`. Only consolidation and vacuum, which need
/// nothing of the replay's state but the folder: a crash test finishes an
/// interrupted one this way.
pub fn rerun_operation(case_toml: &str, out_dir: &Path, index: usize) -> Result<()> {
    let case: Value =
        toml::from_str(case_toml).map_err(|e| usage(format!("not a case file: {e}")))?;
    let step_index = index
        .checked_sub(usize::from(case.get("schema").is_some()))
        .ok_or_else(|| usage("the array's creation cannot be run again"))?;
    let step = case
        .get("steps")
        .and_then(Value::as_array)
        .and_then(|steps| steps.get(step_index))
        .ok_or_else(|| usage(format!("the recipe has no operation {index}")))?;
    let main_uri = get_str(&case, "uri").unwrap_or("array");
    let root = out_dir.join(get_str(step, "uri").unwrap_or(main_uri));
    let storage = LocalStorage::new(&root);
    match get_str(step, "op") {
        Some("consolidate") => consolidate_step(&root, step, case_key(&case)?),
        Some("vacuum") => vacuum_step(&storage, step),
        other => Err(unsupported(format!(
            "running the {} step again",
            other.unwrap_or("unnamed")
        ))),
    }
}

/// [`replay_case`], performing only the first `limit` operations of
/// [`recipe_operations`] and calling `on_operation(index, op)` as each
/// starts: a crash test kills the replay part way and compares what is
/// left with a replay stopped after the operations that had finished.
pub fn replay_case_steps(
    case_toml: &str,
    out_dir: &Path,
    limit: usize,
    on_operation: &mut dyn FnMut(usize, &str),
) -> Result<()> {
    let mut started = 0usize;
    let mut begin = |op: &str| {
        if started >= limit {
            return false;
        }
        on_operation(started, op);
        started += 1;
        true
    };
    let case: Value =
        toml::from_str(case_toml).map_err(|e| usage(format!("not a case file: {e}")))?;
    if case.get("base").is_some() {
        return Err(usage("negative cases are made by mutation, not written"));
    }
    let key = case_key(&case)?;
    let main_uri = get_str(&case, "uri").unwrap_or("array");
    let mut arrays: BTreeMap<String, ArrayState> = BTreeMap::new();
    if let Some(schema_spec) = case.get("schema") {
        if !begin("create") {
            return Ok(());
        }
        let state = create(out_dir, main_uri, schema_spec, key)?;
        arrays.insert(main_uri.to_string(), state);
    }
    let no_steps = Vec::new();
    let steps = case
        .get("steps")
        .and_then(Value::as_array)
        .unwrap_or(&no_steps);
    for step in steps {
        let uri = get_str(step, "uri").unwrap_or(main_uri).to_string();
        let op = get_str(step, "op").ok_or_else(|| usage("a step without an op"))?;
        if !begin(op) {
            return Ok(());
        }
        match op {
            "create_array" => {
                let spec = step
                    .get("schema")
                    .or(case.get("member_schema"))
                    .ok_or_else(|| usage("create_array without a schema"))?;
                let state = create(out_dir, &uri, spec, key)?;
                arrays.insert(uri, state);
                continue;
            }
            "create_group" => {
                tiledb_runtime::group::Group::create(&LocalStorage::new(out_dir.join(&uri)))?;
                continue;
            }
            "group_add" => {
                edits::group_add(&out_dir.join(&uri), step)?;
                continue;
            }
            "group_remove" => {
                edits::group_remove(&out_dir.join(&uri), step)?;
                continue;
            }
            "group_meta_put" | "group_meta_delete" => {
                edits::group_metadata(&out_dir.join(&uri), step, op == "group_meta_delete")?;
                continue;
            }
            _ => {}
        }
        let state = arrays
            .get_mut(&uri)
            .ok_or_else(|| usage(format!("no array {uri}")))?;
        let storage = LocalStorage::new(&state.root);
        match op {
            // Label values go to the label arrays (first), as `Array::write` does it.
            "write" => write_step(&state.root, &state.schema, &state.labels, step, key)?,
            "write_stream" => stream_step(&state.root, &state.schema, step, key)?,
            "meta_put" => edits::array_metadata(&state.root, step, false, key)?,
            "meta_delete" => edits::array_metadata(&state.root, step, true, key)?,
            "delete" => {
                let text = get_str(step, "condition")
                    .ok_or_else(|| usage("a delete step without a condition"))?;
                let ast = condition::negate(condition::parse(text, &state.schema)?);
                write::write_delete(&storage, ast, timestamp(step)?, key.as_ref())?;
            }
            "evolve" => state.schema = edits::evolve(&state.root, step, key)?,
            "consolidate" => consolidate_step(&state.root, step, key)?,
            "vacuum" => vacuum_step(&storage, step)?,
            other => return Err(unsupported(format!("the {other} step"))),
        }
    }
    Ok(())
}
