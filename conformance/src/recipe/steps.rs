//! The steps of a recipe that act on one array: writes (with their
//! columns), consolidation and vacuum.

use std::path::{Path, PathBuf};

use toml::Value;

use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::error::{Error, Result};
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::schema::ArraySchema;
use tiledb_runtime::storage::{LocalStorage, Storage};
use tiledb_runtime::write::{Column, Write, WriteLayout};

use super::values::{self, column_values};
use super::{get_str, unsupported, usage};

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

/// A write step as one validated write through `Array::write`: a column per
/// attribute (and, for sparse arrays, per dimension), and one per dimension
/// label the step gives values for (written to the label's array).
pub(super) fn write_step(
    root: &Path,
    schema: &ArraySchema,
    labels: &[(String, usize, ArraySchema, PathBuf)],
    step: &Value,
    key: Option<[u8; 32]>,
) -> Result<()> {
    let layout = get_str(step, "layout");
    let mut columns = attribute_columns(schema, step)?;
    let mut write = if schema.is_dense() {
        let layout = match layout.unwrap_or("row-major") {
            "row-major" => WriteLayout::RowMajor,
            "col-major" => WriteLayout::ColMajor,
            "global" => WriteLayout::GlobalOrder,
            other => return Err(unsupported(format!("dense writes in {other} layout"))),
        };
        let ranges = subarray(step)?;
        for (name, _, label_schema, _) in labels {
            if step.get("data").and_then(|d| d.get(name)).is_some() {
                let attr = &label_schema.attributes[0];
                columns.push(column(
                    step,
                    "data",
                    name,
                    attr.datatype,
                    attr.cell_val_num,
                    false,
                )?);
            }
        }
        Write::dense(ranges, columns).with_layout(layout)
    } else {
        let layout = match layout.unwrap_or("unordered") {
            "unordered" => WriteLayout::Unordered,
            "global" => WriteLayout::GlobalOrder,
            _ => return Err(unsupported("sparse writes in row- or col-major layout")),
        };
        columns.extend(coordinate_columns(schema, step)?);
        Write::sparse(columns).with_layout(layout)
    };
    write.timestamp = timestamp(step)?;
    let options = OpenOptions {
        key,
        ..OpenOptions::default()
    };
    Array::open_path(root, options)?.write(&write)?;
    Ok(())
}

/// A column per attribute, from the `data` (and `validity`) of `step`.
fn attribute_columns(schema: &ArraySchema, step: &Value) -> Result<Vec<Column>> {
    schema
        .attributes
        .iter()
        .map(|a| {
            column(
                step,
                "data",
                &a.name,
                a.datatype,
                a.cell_val_num,
                a.nullable,
            )
        })
        .collect()
}

/// A column per dimension, from the `coords` of `step`.
fn coordinate_columns(schema: &ArraySchema, step: &Value) -> Result<Vec<Column>> {
    schema
        .dimensions
        .iter()
        .map(|d| {
            let cvn = if d.var { None } else { Some(1) };
            column(step, "coords", &d.name, d.datatype, cvn, false)
        })
        .collect()
}

/// The `subarray` of a dense step: `[lo, hi]` per dimension.
fn subarray(step: &Value) -> Result<Vec<(i128, i128)>> {
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
    Ok(ranges)
}

/// A `write_stream` step through the streaming writer (`Array::stream_sparse`
/// / `stream_dense`): its `batches` (each a table of `data`, `validity` and,
/// sparse, `coords`) pushed in order, fragments cut at `fragment_size`
/// bytes, every fragment stamped `timestamp`. With `stop_after = N` the
/// stream is abandoned after its N-th batch, unfinished: what a writer
/// killed there leaves (the fragments cut so far, whole).
pub(super) fn stream_step(
    root: &Path,
    schema: &ArraySchema,
    step: &Value,
    key: Option<[u8; 32]>,
) -> Result<()> {
    let limit = step
        .get("fragment_size")
        .and_then(Value::as_integer)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| usage("a write_stream step without a fragment_size"))?;
    let batches = step
        .get("batches")
        .and_then(Value::as_array)
        .ok_or_else(|| usage("a write_stream step without batches"))?;
    let stop_after = step
        .get("stop_after")
        .and_then(Value::as_integer)
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(0));
    let options = OpenOptions {
        key,
        ..OpenOptions::default()
    };
    let array = Array::open_path(root, options)?;
    let stream = if schema.is_dense() {
        array.stream_dense(subarray(step)?, limit)?
    } else {
        array.stream_sparse(limit)?
    };
    let mut stream = stream.at(timestamp(step)?);
    for batch in batches.iter().take(stop_after) {
        let mut columns = attribute_columns(schema, batch)?;
        if !schema.is_dense() {
            columns.extend(coordinate_columns(schema, batch)?);
        }
        stream.push(columns)?;
    }
    if stop_after >= batches.len() {
        stream.finish()?;
    }
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
