//! Shared by the read tests: the conformance kit's canonical JSON encoding
//! of results (conformance/README.md, "expected.json: the canonical JSON"),
//! and turning a read spec (a `[[reads]]` entry) into a query.

#![allow(dead_code)]

use serde_json::{json, Map, Value};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::metadata::Metadata;
use tiledb_runtime::read::{encode_scalar, Column, Layout, ReadQuery, ReadResult};
use tiledb_runtime::schema::{ArraySchema, Scalar};

fn is_byte_type(dt: Datatype) -> bool {
    use Datatype::*;
    matches!(dt, Char | StringAscii | StringUtf8 | Blob | GeomWkb | GeomWkt)
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
        Float32 => json!(format!("0x{:08x}", u32::from_le_bytes(get(4)[..4].try_into().unwrap()))),
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
            let values: Vec<Value> = v.bytes.chunks_exact(size).map(|c| value(v.datatype, c)).collect();
            json!({"type": v.datatype.name(), "values": values})
        };
        out.insert(key.clone(), entry);
    }
    Value::Object(out)
}

pub fn schema_json(s: &ArraySchema) -> Value {
    json!({
        "array_type": if s.is_dense() { "dense" } else { "sparse" },
        "cell_order": s.cell_order.name(),
        "tile_order": s.tile_order.name(),
        "capacity": s.capacity,
        "allows_duplicates": s.allows_dups,
        "dims": s.dimensions.iter().map(|d| json!({"name": d.name, "type": d.datatype.name(),
            "cell_val_num": if d.var { json!("var") } else { json!(1) }})).collect::<Vec<_>>(),
        "attrs": s.attributes.iter().map(|a| json!({"name": a.name, "type": a.datatype.name(),
            "cell_val_num": cvn_json(a.cell_val_num), "nullable": a.nullable})).collect::<Vec<_>>(),
    })
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
        Value::String(s) if matches!(dt, Datatype::StringAscii | Datatype::StringUtf8 | Datatype::Char) => {
            Scalar::Bytes(s.as_bytes().to_vec())
        }
        Value::String(s) => Scalar::Int(s.parse::<i128>().map_err(|e| format!("range value {s}: {e}"))?),
        Value::Number(n) if n.is_i64() || n.is_u64() => Scalar::Int(n.as_i64().map(i128::from).unwrap_or(n.as_u64().unwrap_or(0) as i128)),
        Value::Number(n) => Scalar::Float(n.as_f64().unwrap_or(0.0)),
        other => return Err(format!("unexpected range value {other}")),
    };
    encode_scalar(dt, &scalar).ok_or_else(|| format!("range value {v} does not fit {}", dt.name()))
}

/// Open options of a read spec: `timestamp` or `timestamp_range`.
pub fn open_options(read: &Value, key: Option<[u8; 32]>) -> OpenOptions {
    let mut options = OpenOptions { key, ..OpenOptions::default() };
    if let Some(t) = read.get("timestamp").and_then(Value::as_u64) {
        options.timestamp_end = t;
    }
    if let Some(r) = read.get("timestamp_range").and_then(Value::as_array) {
        options.timestamp_start = r.first().and_then(Value::as_u64).unwrap_or(0);
        options.timestamp_end = r.get(1).and_then(Value::as_u64).unwrap_or(options.timestamp_end);
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
            let dim = schema.dimensions.get(d).ok_or("more range lists than dimensions")?;
            let mut list = Vec::new();
            for r in dim_ranges.as_array().ok_or("ranges must be lists")? {
                let pair = r.as_array().ok_or("a range must be [lo, hi]")?;
                let (Some(lo), Some(hi)) = (pair.first(), pair.get(1)) else {
                    return Err("a range must be [lo, hi]".into());
                };
                list.push((range_value(dim.datatype, lo)?, range_value(dim.datatype, hi)?));
            }
            q.ranges.push(list);
        }
    }
    if let Some(attrs) = read.get("attrs").and_then(Value::as_array) {
        q.attributes = Some(attrs.iter().filter_map(|a| a.as_str().map(str::to_string)).collect());
    }
    Ok(q)
}
