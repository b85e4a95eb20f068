//! The recipe steps that edit an array or group without writing cells —
//! metadata, groups and schema evolution — as thin calls into the runtime's
//! public API ([`Array::update_metadata`], [`Group`], [`GroupEdit`],
//! [`SchemaEvolution`]), which checks each as TileDB does and commits it in
//! one file (or refuses it, writing nothing).

use std::path::Path;

use toml::Value;

use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::error::Result;
use tiledb_runtime::filter::FilterPipeline;
use tiledb_runtime::format::generated as stored;
use tiledb_runtime::group::Group;
use tiledb_runtime::metadata::MetadataValue;
use tiledb_runtime::schema::builder::{AttributeSpec, EnumerationSpec};
use tiledb_runtime::schema::ArraySchema;
use tiledb_runtime::storage::LocalStorage;
use tiledb_runtime::write::{MetadataChange, SchemaEvolution};

use super::schema::{attribute, enumerations};
use super::values::{self, cell_bytes, column_values, datatype_by_name};
use super::{get_str, usage};

fn open_options(key: Option<[u8; 32]>) -> OpenOptions {
    OpenOptions {
        key,
        ..OpenOptions::default()
    }
}

/// The metadata change of a `meta_put` / `meta_delete` step (and their group
/// forms): `key`, and for a put `type` (default INT32) and `values` (a list,
/// or a string for byte types).
pub(super) fn metadata_change(step: &Value, delete: bool) -> Result<MetadataChange> {
    let key = get_str(step, "key").ok_or_else(|| usage("a metadata step without a key"))?;
    if delete {
        return Ok(MetadataChange::Delete(key.to_string()));
    }
    let datatype = datatype_by_name(get_str(step, "type").unwrap_or("INT32"))?;
    let v = step
        .get("values")
        .ok_or_else(|| usage("a metadata put without values"))?;
    let bytes = match v {
        Value::String(_) => cell_bytes(datatype, u32::MAX, v)?,
        Value::Array(items) => {
            let mut out = Vec::new();
            for item in items {
                out.extend(values::value_bytes(datatype, item)?);
            }
            out
        }
        other => return Err(usage(format!("bad metadata values {other}"))),
    };
    Ok(MetadataChange::Put(
        key.to_string(),
        MetadataValue::new(datatype, bytes)?,
    ))
}

/// A metadata step on the array at `root`, stamped with the step's
/// `timestamp`.
pub(super) fn array_metadata(
    root: &Path,
    step: &Value,
    delete: bool,
    key: Option<[u8; 32]>,
) -> Result<()> {
    let change = metadata_change(step, delete)?;
    let array = Array::open_path(root, open_options(key))?;
    array.update_metadata(&[change], super::steps::timestamp(step)?)?;
    Ok(())
}

/// A metadata step on the group at `root`: group steps carry no timestamp
/// (TileDB's clock, as now).
pub(super) fn group_metadata(root: &Path, step: &Value, delete: bool) -> Result<()> {
    let change = metadata_change(step, delete)?;
    let at = super::steps::timestamp(step).unwrap_or(0);
    Group::update_metadata(
        &LocalStorage::new(root),
        &OpenOptions::default(),
        &[change],
        at,
    )?;
    Ok(())
}

/// `group_add`: `member` (a path relative to the group), `name`, and
/// `relative` (default true; when false the member is stored by its
/// absolute `file://` URI, as TileDB stores a local path).
pub(super) fn group_add(root: &Path, step: &Value) -> Result<()> {
    let member = get_str(step, "member").ok_or_else(|| usage("group_add without a member"))?;
    let name = get_str(step, "name");
    let relative = step
        .get("relative")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let storage = LocalStorage::new(root);
    let mut edit = Group::edit(&storage, &OpenOptions::default())?;
    if relative {
        edit.add_relative(member, name)?;
    } else {
        let path = std::path::absolute(root.join(member))
            .map_err(|e| tiledb_runtime::error::Error::io(root, &e))?;
        let uri = format!("file://{}", path.display());
        edit.add_absolute(&uri, name, &LocalStorage::new(&path))?;
    }
    edit.commit(0)?;
    Ok(())
}

/// `group_remove`: `member`, a member's name or stored URI.
pub(super) fn group_remove(root: &Path, step: &Value) -> Result<()> {
    let member = get_str(step, "member").ok_or_else(|| usage("group_remove without a member"))?;
    let storage = LocalStorage::new(root);
    let mut edit = Group::edit(&storage, &OpenOptions::default())?;
    edit.remove(member)?;
    edit.commit(0)?;
    Ok(())
}

/// A recipe attribute as the builder's attribute.
fn attribute_spec(a: &Value) -> Result<AttributeSpec> {
    let s = attribute(a)?;
    let name = String::from_utf8_lossy(&s.name).into_owned();
    Ok(AttributeSpec {
        name,
        datatype: s.datatype,
        cell_val_num: (s.cell_val_num != u32::MAX).then_some(s.cell_val_num),
        nullable: s.nullable,
        fill: s.fill,
        fill_validity: s.fill_validity != 0,
        filters: FilterPipeline::from_stored(&s.filters)?,
        enumeration: s
            .enumeration_name
            .filter(|n| !n.is_empty())
            .map(|n| String::from_utf8_lossy(&n).into_owned()),
        order: s.order,
    })
}

/// A recipe enumeration as the builder's enumeration.
fn enumeration_spec(e: &stored::Enumeration) -> EnumerationSpec {
    let values = match &e.offsets {
        Some(offsets) => {
            let starts: Vec<usize> = offsets
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as usize)
                .collect();
            starts
                .iter()
                .enumerate()
                .map(|(i, &s)| {
                    let end = starts.get(i + 1).copied().unwrap_or(e.data.len());
                    e.data.get(s..end).unwrap_or_default().to_vec()
                })
                .collect()
        }
        None => {
            let size = (e.datatype.size() as usize * e.cell_val_num as usize).max(1);
            e.data.chunks(size).map(<[u8]>::to_vec).collect()
        }
    };
    EnumerationSpec {
        name: String::from_utf8_lossy(&e.name).into_owned(),
        datatype: e.datatype,
        cell_val_num: (e.cell_val_num != u32::MAX).then_some(e.cell_val_num),
        ordered: e.ordered,
        values,
        path: None,
    }
}

fn list<'a>(step: &'a Value, key: &str) -> &'a [Value] {
    step.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The evolution an `evolve` step describes: `add_enumerations` (as a
/// schema's `enumerations`), `extend_enumerations` (`{ name, values }`,
/// values appended), `add_attrs`, `drop_attrs`, `drop_enumerations` (names)
/// and `current_domain` (the expanded one, `[[lo, hi], …]`).
pub(super) fn evolution(step: &Value, current: &ArraySchema) -> Result<SchemaEvolution> {
    let mut evolution = SchemaEvolution::new();
    // `enumerations` reads a schema's `enumerations` list.
    let mut added = toml::map::Map::new();
    if let Some(list) = step.get("add_enumerations") {
        added.insert("enumerations".to_string(), list.clone());
    }
    for e in enumerations(&Value::Table(added))? {
        evolution.add_enumeration(enumeration_spec(&e))?;
    }
    for e in list(step, "extend_enumerations") {
        let name = get_str(e, "name").ok_or_else(|| usage("an extension without a name"))?;
        let old = current
            .enumerations
            .iter()
            .find(|x| x.name == name)
            .ok_or_else(|| usage(format!("no enumeration {name} to extend")))?;
        let values = e
            .get("values")
            .ok_or_else(|| usage("an extension without values"))?;
        let cells = column_values(old.datatype, old.cell_val_num.unwrap_or(u32::MAX), values)?;
        evolution.extend_enumeration(name, cells)?;
    }
    for a in list(step, "add_attrs") {
        evolution.add_attribute(attribute_spec(a)?)?;
    }
    for name in list(step, "drop_attrs") {
        evolution.drop_attribute(name.as_str().ok_or_else(|| usage("a bad attribute name"))?);
    }
    for name in list(step, "drop_enumerations") {
        evolution.drop_enumeration(
            name.as_str()
                .ok_or_else(|| usage("a bad enumeration name"))?,
        );
    }
    if let Some(bounds) = step.get("current_domain").and_then(Value::as_array) {
        let mut ranges = Vec::new();
        for (d, range) in current.dimensions.iter().zip(bounds) {
            let (Some(lo), Some(hi)) = (
                range.as_array().and_then(|r| r.first()),
                range.as_array().and_then(|r| r.get(1)),
            ) else {
                return Err(usage("a current-domain range is [lo, hi]"));
            };
            ranges.push((
                values::value_bytes(d.datatype, lo)?,
                values::value_bytes(d.datatype, hi)?,
            ));
        }
        if bounds.len() != current.dimensions.len() {
            return Err(usage("the current domain needs one range per dimension"));
        }
        evolution.expand_current_domain(ranges)?;
    }
    Ok(evolution)
}

/// An `evolve` step on the array at `root`: the new schema, loaded.
pub(super) fn evolve(root: &Path, step: &Value, key: Option<[u8; 32]>) -> Result<ArraySchema> {
    let array = Array::open_path(root, open_options(key))?;
    let evolution = evolution(step, array.schema())?;
    array.evolve(&evolution)
}
