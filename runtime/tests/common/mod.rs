//! Shared by the read tests: the conformance kit's canonical JSON encoding
//! of results (conformance/README.md, "expected.json: the canonical JSON"),
//! and turning a read spec (a `[[reads]]` entry) into a query.

#![allow(dead_code)]

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

use tiledb_runtime::array::{Array, LocalStorage, OpenOptions};
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::metadata::group::GroupContents;
use tiledb_runtime::metadata::Metadata;
use tiledb_runtime::read::labels::read_by_label;
use tiledb_runtime::read::{encode_scalar, Column, Layout, ReadQuery, ReadResult};
use tiledb_runtime::schema::{ArraySchema, Scalar};

/// The workspace root (the parent of this crate).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the runtime crate sits inside the workspace")
        .to_path_buf()
}

/// The Python of the TileDB oracle venv: `.venv-tiledb/` in the workspace
/// (what `.ci/run` installs), or `$TILEDB_PY`.
pub fn tiledb_python() -> Option<PathBuf> {
    let candidates = [
        Some(workspace().join(".venv-tiledb/bin/python")),
        std::env::var_os("TILEDB_PY").map(PathBuf::from),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file())
}

fn is_byte_type(dt: Datatype) -> bool {
    use Datatype::*;
    matches!(
        dt,
        Char | StringAscii | StringUtf8 | Blob | GeomWkb | GeomWkt
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One value of a non-byte type.
pub fn value(dt: Datatype, b: &[u8]) -> Value {
    use Datatype::*;
    let get = |n: usize| -> [u8; 8] {
        let mut out = [0u8; 8];
        out[..n].copy_from_slice(&b[..n]);
        out
    };
    match dt {
        Int8 => json!(b[0] as i8),
        Uint8 | Bool => json!(b[0]),
        Int16 => json!(i16::from_le_bytes([b[0], b[1]])),
        Uint16 => json!(u16::from_le_bytes([b[0], b[1]])),
        Int32 => json!(i32::from_le_bytes(get(4)[..4].try_into().unwrap())),
        Uint32 => json!(u32::from_le_bytes(get(4)[..4].try_into().unwrap())),
        Uint64 => json!(u64::from_le_bytes(get(8)).to_string()),
        Float32 => json!(format!(
            "0x{:08x}",
            u32::from_le_bytes(get(4)[..4].try_into().unwrap())
        )),
        Float64 => json!(format!("0x{:016x}", u64::from_le_bytes(get(8)))),
        _ => json!(i64::from_le_bytes(get(8)).to_string()),
    }
}

/// A cell in canonical form.
pub fn cell(dt: Datatype, cell_val_num: Option<u32>, bytes: &[u8], valid: bool) -> Value {
    if !valid {
        return Value::Null;
    }
    if is_byte_type(dt) {
        return json!(hex(bytes));
    }
    let size = dt.size() as usize;
    let values: Vec<Value> = bytes.chunks_exact(size).map(|c| value(dt, c)).collect();
    if cell_val_num == Some(1) {
        values.into_iter().next().unwrap_or(Value::Null)
    } else {
        Value::Array(values)
    }
}

pub fn cvn_json(cvn: Option<u32>) -> Value {
    match cvn {
        Some(n) => json!(n),
        None => json!("var"),
    }
}

fn field_json(col: &Column, kind: &str) -> Value {
    json!({"name": col.name, "kind": kind, "type": col.datatype.name(),
           "cell_val_num": cvn_json(col.cell_val_num), "nullable": col.nullable})
}

/// `fields` and `cells` of a cells read.
pub fn cells_json(result: &ReadResult) -> (Value, Vec<Value>) {
    let mut fields = Vec::new();
    for c in &result.dimensions {
        fields.push(field_json(c, "dim"));
    }
    for c in &result.attributes {
        fields.push(field_json(c, "attr"));
    }
    let columns: Vec<&Column> = result.dimensions.iter().chain(&result.attributes).collect();
    let rows = (0..result.cell_count())
        .map(|i| {
            Value::Array(
                columns
                    .iter()
                    .map(|c| {
                        let (bytes, valid) = c.cell(i);
                        cell(c.datatype, c.cell_val_num, bytes, valid)
                    })
                    .collect(),
            )
        })
        .collect();
    (Value::Array(fields), rows)
}

pub fn metadata_json(meta: &Metadata) -> Value {
    let mut out = Map::new();
    for (key, v) in &meta.entries {
        let entry = if is_byte_type(v.datatype) {
            json!({"type": v.datatype.name(), "value": hex(&v.bytes)})
        } else {
            let size = v.datatype.size() as usize;
            let values: Vec<Value> = v
                .bytes
                .chunks_exact(size)
                .map(|c| value(v.datatype, c))
                .collect();
            json!({"type": v.datatype.name(), "values": values})
        };
        out.insert(key.clone(), entry);
    }
    Value::Object(out)
}

pub fn schema_json(s: &ArraySchema) -> Value {
    let mut schema = json!({
        "array_type": if s.is_dense() { "dense" } else { "sparse" },
        "cell_order": s.cell_order.name(),
        // TileDB reports no tile order for Hilbert-ordered arrays.
        "tile_order": if s.cell_order == tiledb_runtime::schema::CellOrder::Hilbert { Value::Null } else { json!(s.tile_order.name()) },
        "capacity": s.capacity,
        "allows_duplicates": s.allows_dups,
        "dims": s.dimensions.iter().map(|d| json!({"name": d.name, "type": d.datatype.name(),
            "cell_val_num": if d.var { json!("var") } else { json!(1) }})).collect::<Vec<_>>(),
        "attrs": s.attributes.iter().map(|a| json!({"name": a.name, "type": a.datatype.name(),
            "cell_val_num": cvn_json(a.cell_val_num), "nullable": a.nullable})).collect::<Vec<_>>(),
    });
    // TileDB reports the current domain only when one is set.
    if let (Some(ranges), Some(object)) = (&s.current_domain, schema.as_object_mut()) {
        let bounds = s
            .dimensions
            .iter()
            .zip(ranges)
            .map(|(d, (lo, hi))| {
                json!([
                    cell(d.datatype, Some(1), lo, true),
                    cell(d.datatype, Some(1), hi, true)
                ])
            })
            .collect::<Vec<_>>();
        object.insert("current_domain".into(), Value::Array(bounds));
    }
    schema
}

pub fn enumerations_json(s: &ArraySchema) -> Value {
    let mut out = Map::new();
    for e in &s.enumerations {
        out.insert(
            e.name.clone(),
            json!({"type": e.datatype.name(), "cell_val_num": cvn_json(e.cell_val_num), "ordered": e.ordered,
                   "values": e.values.iter().map(|v| cell(e.datatype, e.cell_val_num, v, true)).collect::<Vec<_>>()}),
        );
    }
    Value::Object(out)
}

/// A value of a read spec's range as dimension bytes.
pub fn range_value(dt: Datatype, v: &Value) -> Result<Vec<u8>, String> {
    let scalar = match v {
        Value::String(s)
            if matches!(
                dt,
                Datatype::StringAscii | Datatype::StringUtf8 | Datatype::Char
            ) =>
        {
            Scalar::Bytes(s.as_bytes().to_vec())
        }
        Value::String(s) => Scalar::Int(
            s.parse::<i128>()
                .map_err(|e| format!("range value {s}: {e}"))?,
        ),
        Value::Number(n) if n.is_i64() || n.is_u64() => Scalar::Int(
            n.as_i64()
                .map(i128::from)
                .unwrap_or(n.as_u64().unwrap_or(0) as i128),
        ),
        Value::Number(n) => Scalar::Float(n.as_f64().unwrap_or(0.0)),
        other => return Err(format!("unexpected range value {other}")),
    };
    encode_scalar(dt, &scalar).ok_or_else(|| format!("range value {v} does not fit {}", dt.name()))
}

/// Open options of a read spec: `timestamp` or `timestamp_range`.
pub fn open_options(read: &Value, key: Option<[u8; 32]>) -> OpenOptions {
    let mut options = OpenOptions {
        key,
        ..OpenOptions::default()
    };
    if let Some(t) = read.get("timestamp").and_then(Value::as_u64) {
        options.timestamp_end = t;
    }
    if let Some(r) = read.get("timestamp_range").and_then(Value::as_array) {
        options.timestamp_start = r.first().and_then(Value::as_u64).unwrap_or(0);
        options.timestamp_end = r
            .get(1)
            .and_then(Value::as_u64)
            .unwrap_or(options.timestamp_end);
    }
    options
}

/// The query of a cells read spec.
pub fn query(array: &Array, read: &Value) -> Result<ReadQuery, String> {
    let schema = array.schema();
    let mut q = ReadQuery::default();
    if let Some(layout) = read.get("layout").and_then(Value::as_str) {
        q.layout = Layout::parse(layout).ok_or_else(|| format!("unknown layout {layout}"))?;
    } else if !schema.is_dense() {
        q.layout = Layout::Unordered;
    }
    if let Some(ranges) = read.get("ranges").and_then(Value::as_array) {
        for (d, dim_ranges) in ranges.iter().enumerate() {
            let dim = schema
                .dimensions
                .get(d)
                .ok_or("more range lists than dimensions")?;
            let mut list = Vec::new();
            for r in dim_ranges.as_array().ok_or("ranges must be lists")? {
                let pair = r.as_array().ok_or("a range must be [lo, hi]")?;
                let (Some(lo), Some(hi)) = (pair.first(), pair.get(1)) else {
                    return Err("a range must be [lo, hi]".into());
                };
                list.push((
                    range_value(dim.datatype, lo)?,
                    range_value(dim.datatype, hi)?,
                ));
            }
            q.ranges.push(list);
        }
    }
    if let Some(attrs) = read.get("attrs").and_then(Value::as_array) {
        q.attributes = Some(
            attrs
                .iter()
                .filter_map(|a| a.as_str().map(str::to_string))
                .collect(),
        );
    }
    Ok(q)
}

fn sorted_rows(rows: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
    v.sort();
    v
}

/// Runs one read; `Ok(json)` is the canonical answer (without `id`).
pub fn run_read(
    case_dir: &Path,
    case: &Value,
    read: &Value,
) -> Result<Value, tiledb_runtime::Error> {
    let uri = read
        .get("uri")
        .or(case.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or("array");
    let key: Option<[u8; 32]> = case
        .get("encryption")
        .and_then(|e| e.get("key"))
        .and_then(Value::as_str)
        .and_then(|k| k.as_bytes().try_into().ok());
    let path = case_dir.join(uri);
    let options = open_options(read, key);
    let kind = read.get("kind").and_then(Value::as_str).unwrap_or("cells");
    if kind == "group" {
        let storage = LocalStorage::new(&path);
        let g = GroupContents::load(
            &storage,
            options.timestamp_start,
            options.timestamp_end,
            key.as_ref(),
        )?;
        let members: Vec<Value> = g
            .members
            .iter()
            .map(|m| json!({"name": m.name, "uri": m.uri.trim_end_matches('/'), "type": if m.is_array {"array"} else {"group"}}))
            .collect();
        return Ok(json!({"members": members, "metadata": metadata_json(&g.metadata)}));
    }
    let array = Array::open_path(&path, options)?;
    Ok(match kind {
        "metadata" => json!({"metadata": metadata_json(&array.metadata()?)}),
        "schema" => json!({"schema": schema_json(array.schema())}),
        "enumerations" => json!({"enumerations": enumerations_json(array.schema())}),
        "cells" => {
            let query = query(&array, read).map_err(tiledb_runtime::Error::Usage)?;
            let result = array.read(&query)?;
            let (fields, cells) = cells_json(&result);
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
                .ok_or_else(|| tiledb_runtime::Error::Usage(format!("no label {name}")))?;
            let label_array = Array::open_path(path.join(&label.uri), options)?;
            let range = read
                .get("label_range")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let bound = |i: usize| -> Result<Scalar, tiledb_runtime::Error> {
                let bytes = range_value(label.datatype, range.get(i).unwrap_or(&Value::Null))
                    .map_err(tiledb_runtime::Error::Usage)?;
                Scalar::decode(label.datatype, &bytes)
                    .ok_or_else(|| tiledb_runtime::Error::Usage("bad label bound".into()))
            };
            let mut query = query(&array, read).map_err(tiledb_runtime::Error::Usage)?;
            query.layout = tiledb_runtime::read::Layout::RowMajor;
            let result = read_by_label(&array, &label_array, name, &bound(0)?, &bound(1)?, &query)?;
            let (mut fields, cells) = cells_json(&result);
            if let Some(first) = fields.get_mut(0) {
                first["kind"] = json!("label");
            }
            json!({"fields": fields, "ordered": true, "cells": cells})
        }
        other => {
            return Err(tiledb_runtime::Error::Usage(format!(
                "read kind {other} is not implemented"
            )))
        }
    })
}

/// Rows of equal coordinates (the first `dims` values) sorted, for layouts
/// where TileDB leaves the order of duplicates unspecified.
fn sort_duplicates(rows: &mut [Value], dims: usize) {
    let key = |v: &Value| -> Vec<Value> {
        v.as_array()
            .map(|a| a.iter().take(dims).cloned().collect())
            .unwrap_or_default()
    };
    let mut start = 0;
    while start < rows.len() {
        let mut end = start + 1;
        while end < rows.len() && key(&rows[end]) == key(&rows[start]) {
            end += 1;
        }
        rows[start..end].sort_by_key(|r| r.to_string());
        start = end;
    }
}

/// Compares a result with TileDB's; `duplicates_unordered` for row- and
/// column-major reads, where TileDB's order among equal coordinates is that
/// of an unstable sort.
pub fn compare(expected: &Value, actual: &Value) -> Result<(), String> {
    compare_with(expected, actual, false)
}

pub fn compare_with(
    expected: &Value,
    actual: &Value,
    duplicates_unordered: bool,
) -> Result<(), String> {
    let mut e = expected.clone();
    if let Some(o) = e.as_object_mut() {
        o.remove("id");
    }
    if let (Some(ec), Some(ac)) = (e.get("cells"), actual.get("cells")) {
        if e.get("fields") != actual.get("fields") {
            return Err(format!(
                "fields differ:\n expected {}\n actual   {}",
                e["fields"], actual["fields"]
            ));
        }
        let (mut ec, mut ac) = (
            ec.as_array().cloned().unwrap_or_default(),
            ac.as_array().cloned().unwrap_or_default(),
        );
        if duplicates_unordered {
            let dims = e["fields"]
                .as_array()
                .map_or(0, |f| f.iter().filter(|f| f["kind"] == "dim").count());
            sort_duplicates(&mut ec, dims);
            sort_duplicates(&mut ac, dims);
        }
        let ordered = e.get("ordered").and_then(Value::as_bool).unwrap_or(true);
        let same = if ordered {
            ec == ac
        } else {
            sorted_rows(&ec) == sorted_rows(&ac)
        };
        if !same {
            let first = ec
                .iter()
                .zip(&ac)
                .position(|(a, b)| a != b)
                .unwrap_or(ec.len().min(ac.len()));
            return Err(format!(
                "{} cells expected, {} read; first difference at row {first}: expected {:?}, read {:?}",
                ec.len(),
                ac.len(),
                ec.get(first).map(|v| v.to_string()),
                ac.get(first).map(|v| v.to_string())
            ));
        }
        return Ok(());
    }
    if &e == actual {
        Ok(())
    } else {
        Err(format!("expected {e}\n   actual {actual}"))
    }
}
