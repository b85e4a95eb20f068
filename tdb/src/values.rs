//! How `tdb` prints values: the JSON forms of the CLI contract (README,
//! "The tdb command line"), and parsing range bounds typed on the command line.

use serde_json::{json, Value};
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::read::{encode_scalar, Column};
use tiledb_runtime::schema::Scalar;

fn is_text(dt: Datatype) -> bool {
    matches!(
        dt,
        Datatype::StringAscii | Datatype::StringUtf8 | Datatype::Char
    )
}

fn is_bytes(dt: Datatype) -> bool {
    use Datatype::*;
    matches!(
        dt,
        Blob | GeomWkb | GeomWkt | Any | StringUtf16 | StringUtf32 | StringUcs2 | StringUcs4
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn float(v: f64) -> Value {
    if v.is_nan() {
        json!("NaN")
    } else if v.is_infinite() {
        json!(if v > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        json!(v)
    }
}

/// One value of a numeric, boolean or date/time type.
pub fn scalar_json(dt: Datatype, bytes: &[u8]) -> Value {
    use Datatype::*;
    if dt == Bool {
        return json!(bytes.first().copied().unwrap_or(0) != 0);
    }
    match Scalar::decode(dt, bytes) {
        Some(Scalar::Int(v)) => {
            if let Ok(v) = i64::try_from(v) {
                json!(v)
            } else {
                json!(v as u64)
            }
        }
        Some(Scalar::Float(f)) => {
            if dt == Float32 {
                // Print the f32 as itself, not its widened f64 digits.
                let text = (f as f32).to_string();
                text.parse::<serde_json::Number>()
                    .map(Value::Number)
                    .unwrap_or_else(|_| float(f))
            } else {
                float(f)
            }
        }
        Some(Scalar::Bytes(b)) => json!(hex(&b)),
        None => Value::Null,
    }
}

/// A cell as the JSON output prints it.
pub fn cell_json(col: &Column, i: usize) -> Value {
    let (bytes, valid) = col.cell(i);
    if !valid {
        return Value::Null;
    }
    let dt = col.datatype;
    if is_text(dt) {
        return json!(String::from_utf8_lossy(bytes));
    }
    if is_bytes(dt) {
        return json!(hex(bytes));
    }
    let size = dt.size().max(1) as usize;
    let values: Vec<Value> = bytes
        .chunks_exact(size)
        .map(|c| scalar_json(dt, c))
        .collect();
    if col.cell_val_num == Some(1) {
        values.into_iter().next().unwrap_or(Value::Null)
    } else {
        Value::Array(values)
    }
}

/// A cell as one line of text (CSV and table output).
pub fn cell_text(col: &Column, i: usize) -> String {
    match cell_json(col, i) {
        Value::String(s) => s,
        Value::Null => "null".to_string(),
        other => other.to_string(),
    }
}

/// Parses a bound typed on the command line as a value of `dt`.
pub fn parse_bound(dt: Datatype, text: &str) -> Result<Vec<u8>, String> {
    let scalar = if is_text(dt) || is_bytes(dt) {
        Scalar::Bytes(text.as_bytes().to_vec())
    } else if matches!(dt, Datatype::Float32 | Datatype::Float64) {
        Scalar::Float(
            text.trim()
                .parse::<f64>()
                .map_err(|_| format!("{text:?} is not a number"))?,
        )
    } else {
        Scalar::Int(
            text.trim()
                .parse::<i128>()
                .map_err(|_| format!("{text:?} is not an integer"))?,
        )
    };
    encode_scalar(dt, &scalar).ok_or_else(|| format!("{text:?} does not fit a {}", dt.name()))
}
