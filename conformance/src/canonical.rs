//! Our runtime's results in the kit's canonical JSON (`conformance/README.md`, "expected.json:
//! the canonical JSON"), and a case's read spec turned into a runtime query.
//!
//! Values are exact: wide integers are decimal strings, floats their IEEE bits in hex, byte
//! cells one hex string. Nothing here indexes into result bytes unchecked: a short cell (which
//! would be a reader bug) becomes a visible `"<short value>"` that fails the comparison.

use serde_json::{json, Map, Value};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::metadata::Metadata;
use tiledb_runtime::read::{encode_scalar, Column, ReadQuery, ReadResult, ResultOrder};
use tiledb_runtime::schema::{ArraySchema, Scalar, SchemaOrder};

/// Cells written as one hex string: the 8-bit text types and the byte types (spec/'s
/// `is_text` and `is_byte` classes).
fn is_byte_type(dt: Datatype) -> bool {
    dt.is_text() || dt.is_byte()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn le<const N: usize>(b: &[u8]) -> Option<[u8; N]> {
    b.get(..N)?.try_into().ok()
}

/// One value of a non-byte type from its little-endian bytes.
pub fn value(dt: Datatype, b: &[u8]) -> Value {
    use Datatype::*;
    let v = match dt {
        Int8 => le::<1>(b).map(|x| json!(i8::from_le_bytes(x))),
        Uint8 | Bool => le::<1>(b).map(|x| json!(x[0])),
        Int16 => le::<2>(b).map(|x| json!(i16::from_le_bytes(x))),
        Uint16 => le::<2>(b).map(|x| json!(u16::from_le_bytes(x))),
        Int32 => le::<4>(b).map(|x| json!(i32::from_le_bytes(x))),
        Uint32 => le::<4>(b).map(|x| json!(u32::from_le_bytes(x))),
        Uint64 => le::<8>(b).map(|x| json!(u64::from_le_bytes(x).to_string())),
        Float32 => le::<4>(b).map(|x| json!(format!("0x{:08x}", u32::from_le_bytes(x)))),
        Float64 => le::<8>(b).map(|x| json!(format!("0x{:016x}", u64::from_le_bytes(x)))),
        // INT64, DATETIME_*, TIME_*: signed 64-bit counts.
        _ => le::<8>(b).map(|x| json!(i64::from_le_bytes(x).to_string())),
    };
    v.unwrap_or_else(|| json!("<short value>"))
}

/// One cell in canonical form (`null` when not valid).
pub fn cell(dt: Datatype, cell_val_num: Option<u32>, bytes: &[u8], valid: bool) -> Value {
    if !valid {
        return Value::Null;
    }
    if is_byte_type(dt) {
        return json!(hex(bytes));
    }
    let size = usize::try_from(dt.size()).unwrap_or(1).max(1);
    let values: Vec<Value> = bytes.chunks(size).map(|c| value(dt, c)).collect();
    if cell_val_num == Some(1) {
        values.into_iter().next().unwrap_or(json!("<empty cell>"))
    } else {
        Value::Array(values)
    }
}

fn cell_val_num(cvn: Option<u32>) -> Value {
    match cvn {
        Some(n) => json!(n),
        None => json!("var"),
    }
}

fn field(col: &Column, kind: &str) -> Value {
    json!({"name": col.name, "kind": kind, "type": col.datatype.name(),
           "cell_val_num": cell_val_num(col.cell_val_num), "nullable": col.nullable})
}

/// The `fields` and `cells` of a cells read.
pub fn cells(result: &ReadResult, first_kind: &str) -> (Value, Vec<Value>) {
    let mut fields = Vec::new();
    for (i, c) in result.dimensions.iter().enumerate() {
        fields.push(field(c, if i == 0 { first_kind } else { "dim" }));
    }
    for c in &result.attributes {
        fields.push(field(c, "attr"));
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

pub(crate) fn metadata(meta: &Metadata) -> Value {
    let mut out = Map::new();
    for (key, v) in &meta.entries {
        // Wide strings as their bytes too: tiledb-py gives them no values (the adapter reads
        // their raw bytes).
        let entry = if is_byte_type(v.datatype) || v.datatype.is_string() {
            json!({"type": v.datatype.name(), "value": hex(&v.bytes)})
        } else {
            let size = usize::try_from(v.datatype.size()).unwrap_or(1).max(1);
            let values: Vec<Value> = v.bytes.chunks(size).map(|c| value(v.datatype, c)).collect();
            json!({"type": v.datatype.name(), "values": values})
        };
        out.insert(key.clone(), entry);
    }
    Value::Object(out)
}

pub(crate) fn schema(s: &ArraySchema) -> Value {
    let mut out = json!({
        "array_type": if s.is_dense() { "dense" } else { "sparse" },
        "cell_order": s.cell_order.name(),
        // TileDB reports no tile order for a Hilbert cell order (it has none: Hilbert
        // orders cells across the whole domain).
        "tile_order": if s.cell_order == SchemaOrder::Hilbert { Value::Null } else { json!(s.tile_order.name()) },
        "capacity": s.capacity,
        "allows_duplicates": s.allows_dups,
        "dims": s.dimensions.iter().map(|d| json!({"name": d.name, "type": d.datatype.name(),
            "cell_val_num": if d.var { json!("var") } else { json!(1) }})).collect::<Vec<_>>(),
        "attrs": s.attributes.iter().map(|a| json!({"name": a.name, "type": a.datatype.name(),
            "cell_val_num": cell_val_num(a.cell_val_num), "nullable": a.nullable})).collect::<Vec<_>>(),
    });
    // Format 22 and later may bound the domain in use; the canonical schema gives it per
    // dimension, each bound as a value of the dimension's type.
    if let (Some(current), Some(obj)) = (&s.current_domain, out.as_object_mut()) {
        let bounds: Vec<Value> = s
            .dimensions
            .iter()
            .zip(current)
            .map(|(d, (lo, hi))| {
                json!([
                    cell(d.datatype, Some(1), lo, true),
                    cell(d.datatype, Some(1), hi, true)
                ])
            })
            .collect();
        obj.insert("current_domain".to_string(), Value::Array(bounds));
    }
    out
}

pub(crate) fn enumerations(s: &ArraySchema) -> Value {
    let mut out = Map::new();
    for e in &s.enumerations {
        let values: Vec<Value> = e
            .values
            .iter()
            .map(|v| cell(e.datatype, e.cell_val_num, v, true))
            .collect();
        out.insert(
            e.name.clone(),
            json!({"type": e.datatype.name(), "cell_val_num": cell_val_num(e.cell_val_num),
                   "ordered": e.ordered, "values": values}),
        );
    }
    Value::Object(out)
}

/// A range bound of a read spec as a scalar of `dt`.
pub(crate) fn range_scalar(dt: Datatype, v: &Value) -> Result<Scalar, String> {
    use Datatype::*;
    Ok(match v {
        Value::String(s) if matches!(dt, StringAscii | StringUtf8 | Char) => {
            Scalar::Bytes(s.as_bytes().to_vec())
        }
        Value::String(s) => Scalar::Int(
            s.parse::<i128>()
                .map_err(|e| format!("range value {s:?}: {e}"))?,
        ),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Scalar::Int(i128::from(i)),
            (None, Some(u), _) => Scalar::Int(i128::from(u)),
            (None, None, Some(f)) => Scalar::Float(f),
            _ => return Err(format!("range value {n} is not a number")),
        },
        other => return Err(format!("unexpected range value {other}")),
    })
}

/// A range bound of a read spec as the dimension's bytes.
pub(crate) fn range_bytes(dt: Datatype, v: &Value) -> Result<Vec<u8>, String> {
    let scalar = range_scalar(dt, v)?;
    encode_scalar(dt, &scalar).ok_or_else(|| format!("range value {v} does not fit {}", dt.name()))
}

/// Open options of a read spec (`timestamp` or `timestamp_range`) and the case's key.
pub(crate) fn open_options(read: &Value, key: Option<[u8; 32]>) -> OpenOptions {
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

/// The runtime query of a cells read spec.
pub fn query(array: &Array, read: &Value) -> Result<ReadQuery, String> {
    let schema = array.schema();
    let mut q = ReadQuery::default();
    // No layout means row-major for dense and sparse arrays alike, as the
    // TileDB adapter (conformance/scripts/tdbcase.py) and the reported
    // `ordered` flag take it.
    if let Some(layout) = read.get("layout").and_then(Value::as_str) {
        q.layout = ResultOrder::parse(layout).ok_or_else(|| format!("unknown layout {layout}"))?;
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
                    range_bytes(dim.datatype, lo)?,
                    range_bytes(dim.datatype, hi)?,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_follow_the_canonical_forms() {
        assert_eq!(value(Datatype::Int8, &[0xff]), json!(-1));
        assert_eq!(
            value(Datatype::Int64, &i64::MIN.to_le_bytes()),
            json!("-9223372036854775808")
        );
        assert_eq!(
            value(Datatype::Uint64, &u64::MAX.to_le_bytes()),
            json!("18446744073709551615")
        );
        assert_eq!(
            value(Datatype::Float32, &1.5f32.to_le_bytes()),
            json!("0x3fc00000")
        );
        assert_eq!(cell(Datatype::StringUtf8, None, b"ab", true), json!("6162"));
        assert_eq!(
            cell(Datatype::Int32, Some(1), &[1, 0, 0, 0], false),
            Value::Null
        );
        assert_eq!(
            cell(Datatype::Int16, None, &[1, 0, 2, 0], true),
            json!([1, 2])
        );
    }

    #[test]
    fn short_values_are_visible_not_a_panic() {
        assert_eq!(value(Datatype::Int32, &[1, 2]), json!("<short value>"));
        assert_eq!(
            cell(Datatype::Int32, Some(2), &[1, 0, 0, 0, 9], true),
            json!([1, "<short value>"])
        );
    }
}
