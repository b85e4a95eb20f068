//! Replaying a conformance recipe (`conformance/cases/*.toml`, described in
//! `conformance/README.md`) with this runtime as the writer: the schema is
//! built and serialized here, writes become fragments, metadata puts and
//! deletes become `__meta/` files.
//!
//! Steps this writer does not perform yet are refused with
//! [`Error::Unsupported`], so a caller can tell "not supported" from "wrong".

pub mod condition;
mod schema;
mod steps;
pub mod values;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::Value;

use tiledb_runtime::error::{Error, Result};
use tiledb_runtime::format::generated as stored;
use tiledb_runtime::schema::ArraySchema;
use tiledb_runtime::storage::{LocalStorage, Storage};
use tiledb_runtime::write::{self, WRITE_VERSION};

use schema::label_schema;
pub use schema::stored_schema;
use schema::stored_schema_parts;
use steps::{
    consolidate_step, evolve, meta_step, timestamp, vacuum_step, write_labels, write_step,
};

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
    stored: stored::ArraySchema,
    schema: ArraySchema,
    /// `(label name, labelled dimension, label array schema)`.
    labels: Vec<(String, usize, ArraySchema, PathBuf)>,
}

/// Creates the array `uri` (relative to `out_dir`) with its enumerations.
fn create(out_dir: &Path, uri: &str, spec: &Value, key: Option<[u8; 32]>) -> Result<ArrayState> {
    let (stored, enums) = stored_schema_parts(spec)?;
    let root = out_dir.join(uri);
    std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, &e))?;
    let storage = LocalStorage::new(&root);
    // Enumeration files first: the schema refers to them.
    if !enums.is_empty() {
        storage.create_dir(&tiledb_runtime::storage::RelPath::parse(
            "__schema/__enumerations",
        )?)?;
        for e in &enums {
            write::write_enumeration(&storage, &String::from_utf8_lossy(&e.path), e, key.as_ref())?;
        }
    }
    let mut labels = Vec::new();
    for label in stored.labels.iter().flatten() {
        let label_root = root.join(String::from_utf8_lossy(&label.uri).as_ref());
        std::fs::create_dir_all(&label_root).map_err(|e| Error::io(&label_root, &e))?;
        let label_storage = LocalStorage::new(&label_root);
        let loaded = write::create_array(
            &label_storage,
            &label_schema(&stored, label)?,
            0,
            key.as_ref(),
        )?;
        labels.push((
            String::from_utf8_lossy(&label.name).into_owned(),
            label.dim_index as usize,
            loaded,
            label_root,
        ));
    }
    let schema = write::create_array(&storage, &stored, 0, key.as_ref())?;
    Ok(ArrayState {
        root,
        stored,
        schema,
        labels,
    })
}

/// A group: `__tiledb_group.tdb` (empty), `__group/`, `__meta/`.
fn create_group(out_dir: &Path, uri: &str) -> Result<()> {
    let root = out_dir.join(uri);
    std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, &e))?;
    let storage = LocalStorage::new(&root);
    storage.create_dir(&tiledb_runtime::storage::RelPath::parse("__group")?)?;
    storage.create_dir(&tiledb_runtime::storage::RelPath::parse("__meta")?)?;
    storage.write(
        &tiledb_runtime::storage::RelPath::parse("__tiledb_group.tdb")?,
        &[],
    )
}

/// Adds a member and writes the group's details (format 2: every current
/// member, newest first, as TileDB writes them) to a new `__group` file.
fn group_add(
    out_dir: &Path,
    uri: &str,
    members: &mut Vec<stored::GroupMember>,
    step: &Value,
    arrays: &BTreeMap<String, ArrayState>,
) -> Result<()> {
    let member = get_str(step, "member").ok_or_else(|| usage("group_add without a member"))?;
    let relative = step
        .get("relative")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if !relative {
        return Err(unsupported("absolute group members"));
    }
    let member_uri = format!("{uri}/{member}");
    let object_type = if arrays.contains_key(&member_uri) {
        stored::ObjectType::Array
    } else {
        stored::ObjectType::Group
    };
    let name = get_str(step, "name");
    members.insert(
        0,
        stored::GroupMember {
            version: 2,
            object_type,
            relative,
            uri: member.as_bytes().to_vec(),
            name_set: name.is_some(),
            name: name.map(|n| n.as_bytes().to_vec()),
            deleted: false,
        },
    );
    let details = stored::GroupDetails {
        version: 2,
        members: members.clone(),
    };
    let payload = tiledb_runtime::format::io::write_to_vec(&details, (), "GroupDetails")?;
    let tile = tiledb_runtime::tile::generic::write_generic_tile(&payload, WRITE_VERSION, None)?;
    let name = tiledb_runtime::directory::TimestampedName::generate(0, 0, Some(2), None)?;
    let storage = LocalStorage::new(out_dir.join(uri));
    storage.write(
        &tiledb_runtime::storage::RelPath::parse("__group")?.join(name.as_str())?,
        &tile,
    )
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
    let mut groups: BTreeMap<String, Vec<stored::GroupMember>> = BTreeMap::new();
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
                create_group(out_dir, &uri)?;
                groups.insert(uri, Vec::new());
                continue;
            }
            "group_add" => {
                let members = groups
                    .get_mut(&uri)
                    .ok_or_else(|| usage(format!("no group {uri}")))?;
                group_add(out_dir, &uri, members, step, &arrays)?;
                continue;
            }
            "group_meta_put" => {
                let storage = LocalStorage::new(out_dir.join(&uri));
                meta_step(&storage, step, false, None)?;
                continue;
            }
            _ => {}
        }
        let state = arrays
            .get_mut(&uri)
            .ok_or_else(|| usage(format!("no array {uri}")))?;
        let storage = LocalStorage::new(&state.root);
        match op {
            "write" => {
                // Label values go to the label arrays first, the array last.
                write_labels(&state.labels, step, key)?;
                write_step(&storage, &state.schema, step, key)?;
            }
            "meta_put" => meta_step(&storage, step, false, key)?,
            "meta_delete" => meta_step(&storage, step, true, key)?,
            "delete" => {
                let text = get_str(step, "condition")
                    .ok_or_else(|| usage("a delete step without a condition"))?;
                let ast = condition::negate(condition::parse(text, &state.schema)?);
                write::write_delete(&storage, ast, timestamp(step)?, key.as_ref())?;
            }
            "evolve" => {
                let (next, loaded) = evolve(&storage, &state.stored, step, key.as_ref())?;
                state.stored = next;
                state.schema = loaded;
            }
            "consolidate" => consolidate_step(&state.root, step, key)?,
            "vacuum" => vacuum_step(&storage, step)?,
            other => return Err(unsupported(format!("the {other} step"))),
        }
    }
    Ok(())
}
