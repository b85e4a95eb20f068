//! Cells as JSON values and back: what `tdb info --json` prints for fill
//! values, domains and enumerations, and what `tdb create` and `tdb write`
//! read (the JSON of `tdb read --format json` included: dates and times as
//! ISO-8601 text or integers, floats' `NaN`/`Infinity` as strings, bytes as
//! hex, text as strings).

use serde_json::{json, Value};
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::read::encode_scalar;
use tiledb_runtime::schema::Scalar;

use crate::datetime;
use crate::values::{hex, is_bytes, is_text, scalar_json};

fn unhex(text: &str) -> Result<Vec<u8>, String> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return Err(format!("{text:?} is not hex bytes"));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&text[i..i + 2], 16)
                .map_err(|_| format!("{text:?} is not hex bytes"))
        })
        .collect()
}

/// One cell's JSON: text as a string (`{"hex": ...}` when it is not
/// UTF-8, as TileDB's default CHAR fill is not), bytes as hex, one number
/// (or bool) per value, a list when the cell has other than one value.
pub fn cell_json(dt: Datatype, cell_val_num: Option<u32>, bytes: &[u8]) -> Value {
    if is_text(dt) {
        return match std::str::from_utf8(bytes) {
            Ok(text) => json!(text),
            Err(_) => json!({"hex": hex(bytes)}),
        };
    }
    if is_bytes(dt) {
        return json!(hex(bytes));
    }
    let size = dt.size().max(1) as usize;
    let values: Vec<Value> = bytes
        .chunks_exact(size)
        .map(|c| scalar_json(dt, c))
        .collect();
    if cell_val_num == Some(1) {
        values.into_iter().next().unwrap_or(Value::Null)
    } else {
        Value::Array(values)
    }
}

/// One value of a numeric, boolean, date or time type.
pub fn value_bytes(dt: Datatype, v: &Value) -> Result<Vec<u8>, String> {
    let scalar = match v {
        Value::Bool(b) => Scalar::Int(i128::from(*b)),
        Value::Number(n) if dt.is_real() => Scalar::Float(n.as_f64().unwrap_or(f64::NAN)),
        Value::Number(n) => Scalar::Int(
            n.as_i64()
                .map(i128::from)
                .or(n.as_u64().map(i128::from))
                .ok_or_else(|| format!("{n} is not an integer"))?,
        ),
        Value::String(s) if dt.is_real() => Scalar::Float(match s.as_str() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            other => other
                .parse()
                .map_err(|_| format!("{other:?} is not a number"))?,
        }),
        Value::String(s) if datetime::is_datetime(dt) => {
            Scalar::Int(i128::from(datetime::parse(dt, s)?))
        }
        other => return Err(format!("{other} is not a {} value", dt.name())),
    };
    if let Scalar::Int(i) = scalar {
        if let Some((lo, hi)) = tiledb_runtime::schema::value::int_limits(dt) {
            if i < lo || i > hi {
                return Err(format!("{i} does not fit a {}", dt.name()));
            }
        }
    }
    encode_scalar(dt, &scalar).ok_or_else(|| format!("{v} does not fit a {}", dt.name()))
}

/// One cell from its JSON (the inverse of [`cell_json`], and of the cells
/// `tdb read --format json` prints).
pub fn cell_bytes(dt: Datatype, cell_val_num: Option<u32>, v: &Value) -> Result<Vec<u8>, String> {
    let bytes = match v {
        Value::Object(o) if o.len() == 1 && o.get("hex").is_some_and(Value::is_string) => {
            unhex(o["hex"].as_str().unwrap_or_default())?
        }
        Value::String(s) if is_text(dt) => s.as_bytes().to_vec(),
        Value::String(s) if is_bytes(dt) => unhex(s)?,
        Value::Array(items) => {
            let mut out = Vec::new();
            for item in items {
                out.extend(value_bytes(dt, item)?);
            }
            out
        }
        one => value_bytes(dt, one)?,
    };
    if let Some(n) = cell_val_num {
        let size = u64::from(n) * dt.size();
        if bytes.len() as u64 != size {
            return Err(format!("{v} is not a cell of {n} {} values", dt.name()));
        }
    }
    Ok(bytes)
}
