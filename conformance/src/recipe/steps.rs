//! The steps of a recipe that act on one array: writes (with their
//! columns), metadata puts and deletes, schema evolution, consolidation and
//! vacuum.

use std::path::{Path, PathBuf};

use toml::Value;

use tiledb_runtime::error::{Error, Result};
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::format::generated as stored;
use tiledb_runtime::schema::ArraySchema;
use tiledb_runtime::storage::{LocalStorage, Storage};
use tiledb_runtime::write::{self, Column, FragmentInput};

use super::schema::attribute;
use super::values::{self, cell_bytes, column_values, datatype_by_name};
use super::{get_str, unsupported, usage};

/// Schema evolution: drops then adds attributes, extends enumerations, and
/// writes the result as a new schema file (stamped with the current time, as TileDB does).
pub(super) fn evolve(
    storage: &dyn Storage,
    current: &stored::ArraySchema,
    step: &Value,
    key: Option<&[u8; 32]>,
) -> Result<(stored::ArraySchema, ArraySchema)> {
    if step.get("add_enumerations").is_some() {
        return Err(unsupported("evolving enumerations"));
    }
    let mut next = current.clone();
    let no_list = Vec::new();
    for name in step
        .get("drop_attrs")
        .and_then(Value::as_array)
        .unwrap_or(&no_list)
    {
        let name = name.as_str().ok_or_else(|| usage("a bad attribute name"))?;
        let before = next.attributes.len();
        next.attributes.retain(|a| a.name != name.as_bytes());
        if next.attributes.len() == before {
            return Err(usage(format!("no attribute {name} to drop")));
        }
    }
    for a in step
        .get("add_attrs")
        .and_then(Value::as_array)
        .unwrap_or(&no_list)
    {
        next.attributes.push(attribute(a)?);
    }
    for e in step
        .get("extend_enumerations")
        .and_then(Value::as_array)
        .unwrap_or(&no_list)
    {
        extend_enumeration(storage, &mut next, e, key)?;
    }
    let loaded = write::write_schema(storage, &next, 0, key)?;
    Ok((next, loaded))
}

/// Extends an enumeration as TileDB's schema evolution does: the old file
/// stays, a new file under a fresh label holds the old values followed by the
/// new ones, and the evolved schema's reference points at the new file (TileDB
/// loads the file the reference names and checks that the file carries the
/// same name and path).
pub(super) fn extend_enumeration(
    storage: &dyn Storage,
    schema: &mut stored::ArraySchema,
    spec: &Value,
    key: Option<&[u8; 32]>,
) -> Result<()> {
    let name = get_str(spec, "name").ok_or_else(|| usage("an extension without a name"))?;
    let reference = schema
        .enumerations
        .iter_mut()
        .flatten()
        .find(|r| r.name == name.as_bytes())
        .ok_or_else(|| usage(format!("no enumeration {name} to extend")))?;
    let old_path = tiledb_runtime::storage::RelPath::parse(&format!(
        "__schema/__enumerations/{}",
        String::from_utf8_lossy(&reference.path)
    ))?;
    let tile = tiledb_runtime::tile::generic::load_generic_tile_file(storage, &old_path, key)?;
    let mut extended: stored::Enumeration =
        tiledb_runtime::format::io::read_exact_from(&tile.payload, (), "Enumeration")?;
    let values = spec
        .get("values")
        .ok_or_else(|| usage("an extension without values"))?;
    let added = column_values(extended.datatype, extended.cell_val_num, values)?;
    for cell in &added {
        match extended.offsets.as_mut() {
            Some(offsets) => offsets.extend((extended.data.len() as u64).to_le_bytes()),
            None if extended.cell_val_num == u32::MAX => {
                return Err(usage(format!("enumeration {name} has no offsets")))
            }
            None => {}
        }
        extended.data.extend_from_slice(cell);
    }
    let (label, _) = tiledb_runtime::directory::timestamped_name::new_label()?;
    extended.path = format!("__{label}_0").into_bytes();
    write::write_enumeration(
        storage,
        &String::from_utf8_lossy(&extended.path),
        &extended,
        key,
    )?;
    reference.path = extended.path;
    Ok(())
}

pub(super) fn timestamp(step: &Value) -> Result<u64> {
    step.get("timestamp")
        .and_then(Value::as_integer)
        .map(|t| t as u64)
        .ok_or_else(|| usage("a step without a timestamp"))
}

/// One column of a write step, built cell by cell.
pub(super) fn column(
    step: &Value,
    table: &str,
    name: &str,
    datatype: Datatype,
    cvn: Option<u32>,
    nullable: bool,
) -> Result<Column> {
    let data = step
        .get(table)
        .and_then(|d| d.get(name))
        .ok_or_else(|| usage(format!("no data for {name}")))?;
    let cells = column_values(datatype, cvn.unwrap_or(u32::MAX), data)?;
    // A write that lists no validity for a nullable field writes every cell
    // valid (a TOML recipe has no null value), as the tiledb-py adapter does.
    let validity: Option<Vec<bool>> = match step
        .get("validity")
        .and_then(|v| v.get(name))
        .and_then(Value::as_array)
    {
        Some(v) if nullable => Some(v.iter().map(|x| x.as_integer().unwrap_or(1) != 0).collect()),
        _ => None,
    };
    if validity.as_ref().is_some_and(|v| v.len() != cells.len()) {
        return Err(usage("columns of different lengths"));
    }
    let mut column = Column::new(name, datatype, cvn, nullable);
    let cell_size = column.cell_size();
    for (i, cell) in cells.iter().enumerate() {
        if let Some(size) = cell_size.filter(|&s| s != cell.len()) {
            return Err(usage(format!("a cell of {name} is not {size} bytes")));
        }
        column.push(cell, validity.as_ref().is_none_or(|v| v[i]));
    }
    Ok(column)
}

pub(super) fn write_step(
    storage: &dyn Storage,
    schema: &ArraySchema,
    step: &Value,
    key: Option<[u8; 32]>,
) -> Result<()> {
    let layout = get_str(step, "layout");
    let mut input = FragmentInput {
        timestamp: timestamp(step)?,
        key,
        ..Default::default()
    };
    for a in &schema.attributes {
        input.attrs.push(column(
            step,
            "data",
            &a.name,
            a.datatype,
            a.cell_val_num,
            a.nullable,
        )?);
    }
    if schema.is_dense() {
        match layout.unwrap_or("row-major") {
            "row-major" => {}
            "col-major" => input.col_major = true,
            other => return Err(unsupported(format!("dense writes in {other} layout"))),
        }
        let sub = step
            .get("subarray")
            .and_then(Value::as_array)
            .ok_or_else(|| usage("a dense write without a subarray"))?;
        let mut ranges = Vec::new();
        for r in sub {
            let r = r.as_array().ok_or_else(|| usage("bad subarray"))?;
            let bound = |v: Option<&Value>| -> Result<i128> {
                values::integer(v.ok_or_else(|| usage("bad subarray"))?)
            };
            ranges.push((bound(r.first())?, bound(r.get(1))?));
        }
        input.subarray = Some(ranges);
    } else {
        if matches!(layout, Some(l) if l != "unordered" && l != "global") {
            return Err(unsupported("sparse writes in row- or col-major layout"));
        }
        for d in &schema.dimensions {
            let cvn = if d.var { None } else { Some(1) };
            input
                .dims
                .push(column(step, "coords", &d.name, d.datatype, cvn, false)?);
        }
    }
    write::write_fragment(storage, schema, &input)?;
    Ok(())
}

pub(super) fn meta_step(
    storage: &dyn Storage,
    step: &Value,
    delete: bool,
    array_key: Option<[u8; 32]>,
) -> Result<()> {
    let key = get_str(step, "key").ok_or_else(|| usage("a metadata step without a key"))?;
    let entry = if delete {
        stored::MetadataEntry {
            key: key.as_bytes().to_vec(),
            deleted: true,
            value_type: stored::Datatype::Any,
            value_num: 0,
            value: None,
        }
    } else {
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
        stored::MetadataEntry {
            key: key.as_bytes().to_vec(),
            deleted: false,
            value_type: datatype,
            value_num: (bytes.len() as u64 / datatype.size().max(1)) as u32,
            value: Some(bytes),
        }
    };
    // Group metadata steps carry no timestamp: TileDB's clock, as now.
    let at = timestamp(step).unwrap_or(0);
    write::write_metadata(storage, vec![entry], at, array_key.as_ref())?;
    Ok(())
}

/// The `config` table and `timestamp_range` of a fragments consolidation
/// step, as TileDB receives them: each `sm.consolidation.*` value as text,
/// and the range as `sm.consolidation.timestamp_start` / `timestamp_end`
/// (which override the same keys of `config`).
pub(super) fn consolidation_config(
    step: &Value,
) -> Result<tiledb_runtime::consolidate::ConsolidationConfig> {
    let mut config = tiledb_runtime::consolidate::ConsolidationConfig::default();
    if let Some(table) = step.get("config") {
        let table = table
            .as_table()
            .ok_or_else(|| Error::Usage("consolidate: config must be a table".into()))?;
        for (key, value) in table {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Integer(n) => n.to_string(),
                Value::Float(x) => x.to_string(),
                Value::Boolean(b) => b.to_string(),
                _ => return Err(Error::Usage(format!("consolidate: {key} is not a scalar"))),
            };
            // The mode is the step's own `mode`.
            if key == "sm.consolidation.mode" {
                if text != get_str(step, "mode").unwrap_or("fragments") {
                    return Err(unsupported(format!("consolidation mode {text} in config")));
                }
                continue;
            }
            config
                .set(key, &text)
                .map_err(|e| unsupported(format!("consolidation config: {e}")))?;
        }
    }
    if let Some(range) = step.get("timestamp_range") {
        let bounds: Vec<u64> = range
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_integer().and_then(|n| u64::try_from(n).ok()))
                    .collect()
            })
            .unwrap_or_default();
        let [start, end] = bounds[..] else {
            return Err(Error::Usage(
                "consolidate: timestamp_range must be [start, end]".into(),
            ));
        };
        config.timestamp_start = start;
        config.timestamp_end = end;
    }
    Ok(config)
}

pub(super) fn consolidate_step(root: &Path, step: &Value, key: Option<[u8; 32]>) -> Result<()> {
    let mut config = consolidation_config(step)?;
    config.mode = get_str(step, "mode")
        .unwrap_or("fragments")
        .parse()
        .map_err(|e| unsupported(format!("consolidation: {e}")))?;
    let storage: std::sync::Arc<dyn Storage> = std::sync::Arc::new(LocalStorage::new(root));
    tiledb_runtime::consolidate::consolidate(storage, &config, key).map(drop)
}

pub(super) fn vacuum_step(storage: &dyn Storage, step: &Value) -> Result<()> {
    match get_str(step, "mode").unwrap_or("fragments") {
        "fragments" => tiledb_runtime::vacuum::vacuum_fragments(storage).map(drop),
        "fragment_meta" => tiledb_runtime::vacuum::vacuum_fragment_meta(storage).map(drop),
        "commits" => tiledb_runtime::vacuum::vacuum_commits(storage).map(drop),
        "array_meta" => tiledb_runtime::vacuum::vacuum_array_meta(storage).map(drop),
        other => Err(unsupported(format!("vacuum mode {other}"))),
    }
}

/// The label values of a write step, each written to its label array.
pub(super) fn write_labels(
    labels: &[(String, usize, ArraySchema, PathBuf)],
    step: &Value,
    key: Option<[u8; 32]>,
) -> Result<()> {
    for (name, dim, label_schema, label_root) in labels {
        if step.get("data").and_then(|d| d.get(name)).is_none() {
            continue;
        }
        let col = column(
            step,
            "data",
            name,
            label_schema.attributes[0].datatype,
            label_schema.attributes[0].cell_val_num,
            false,
        )?;
        let sub = step
            .get("subarray")
            .and_then(Value::as_array)
            .and_then(|s| s.get(*dim))
            .and_then(Value::as_array)
            .ok_or_else(|| usage("a label write needs the subarray"))?;
        let bound = |v: Option<&Value>| -> Result<i128> {
            values::integer(v.ok_or_else(|| usage("bad subarray"))?)
        };
        let input = FragmentInput {
            timestamp: timestamp(step)?,
            attrs: vec![col],
            subarray: Some(vec![(bound(sub.first())?, bound(sub.get(1))?)]),
            key,
            ..Default::default()
        };
        write::write_fragment(&LocalStorage::new(label_root), label_schema, &input)?;
    }
    Ok(())
}
