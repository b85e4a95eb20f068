//! How `tdb` prints values: the JSON forms of the CLI contract (README,
//! "The tdb command line"), and parsing range bounds typed on the command
//! line (ISO-8601 text for date and time dimensions).

use std::collections::HashMap;

use serde_json::{json, Value};
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::read::{encode_scalar, Column};
use tiledb_runtime::schema::{ArraySchema, Enumeration, Scalar};

use crate::datetime;

/// Cells of `dt` are text (printed as strings): 8-bit character strings
/// (spec/: `Datatype.is_text`).
pub(crate) fn is_text(dt: Datatype) -> bool {
    dt.is_text()
}

/// Cells of `dt` are opaque bytes (printed as hex): neither text nor a
/// number, date or time (spec/'s datatype classes).
pub(crate) fn is_bytes(dt: Datatype) -> bool {
    !(dt.is_text() || dt.is_integer() || dt.is_real() || dt.is_datetime() || dt.is_time())
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
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

/// How cells are shown: by default dates and times as ISO-8601 text and
/// enumerated attributes as their values (what a person wants to read);
/// `raw` shows the stored integers instead.
pub struct Render<'a> {
    raw: bool,
    /// The enumeration of each enumerated attribute, by attribute name.
    enumerations: HashMap<&'a str, &'a Enumeration>,
}

impl<'a> Render<'a> {
    pub fn new(schema: &'a ArraySchema, raw: bool) -> Self {
        let enumerations = schema
            .attributes
            .iter()
            .filter_map(|a| {
                let name = a.enumeration.as_deref()?;
                let e = schema.enumerations.iter().find(|e| e.name == name)?;
                Some((a.name.as_str(), e))
            })
            .collect();
        Render { raw, enumerations }
    }

    /// A cell as the JSON output prints it.
    pub fn cell_json(&self, col: &Column, i: usize) -> Value {
        let (bytes, valid) = col.cell(i);
        if !valid {
            return Value::Null;
        }
        match self.enumerations.get(col.name.as_str()) {
            Some(enumeration) if !self.raw => enumerated_json(col, bytes, enumeration),
            _ => self.values_json(col.datatype, col.cell_val_num, bytes),
        }
    }

    /// A cell as one field of text (CSV and table output); `None` for null.
    pub fn cell_text(&self, col: &Column, i: usize) -> Option<String> {
        match self.cell_json(col, i) {
            Value::String(s) => Some(s),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }

    /// The values of one cell of `dt` with `cell_val_num` values.
    fn values_json(&self, dt: Datatype, cell_val_num: Option<u32>, bytes: &[u8]) -> Value {
        if is_text(dt) {
            return json!(String::from_utf8_lossy(bytes));
        }
        if is_bytes(dt) {
            return json!(hex(bytes));
        }
        let size = dt.size().max(1) as usize;
        let dates = !self.raw && datetime::is_datetime(dt);
        let values: Vec<Value> = bytes
            .chunks_exact(size)
            .map(|c| {
                if dates {
                    let stored = <[u8; 8]>::try_from(c).map(i64::from_le_bytes);
                    if let Some(text) = stored.ok().and_then(|v| datetime::format(dt, v)) {
                        return json!(text);
                    }
                }
                scalar_json(dt, c)
            })
            .collect();
        if cell_val_num == Some(1) {
            values.into_iter().next().unwrap_or(Value::Null)
        } else {
            Value::Array(values)
        }
    }
}

/// An enumerated cell: each stored index replaced by the enumeration's
/// value (an index outside the enumeration stays the integer).
fn enumerated_json(col: &Column, bytes: &[u8], enumeration: &Enumeration) -> Value {
    let show = Render {
        raw: true,
        enumerations: HashMap::new(),
    };
    let size = col.datatype.size().max(1) as usize;
    let values: Vec<Value> = bytes
        .chunks_exact(size)
        .map(|c| {
            let value = match Scalar::decode(col.datatype, c) {
                Some(Scalar::Int(index)) => usize::try_from(index)
                    .ok()
                    .and_then(|i| enumeration.values.get(i)),
                _ => None,
            };
            match value {
                Some(v) => show.values_json(enumeration.datatype, enumeration.cell_val_num, v),
                None => scalar_json(col.datatype, c),
            }
        })
        .collect();
    if col.cell_val_num == Some(1) {
        values.into_iter().next().unwrap_or(Value::Null)
    } else {
        Value::Array(values)
    }
}

/// Parses a bound typed on the command line as a value of `dt`.
pub fn parse_bound(dt: Datatype, text: &str) -> Result<Vec<u8>, String> {
    let scalar = if is_text(dt) || is_bytes(dt) {
        Scalar::Bytes(text.as_bytes().to_vec())
    } else if datetime::is_datetime(dt) {
        Scalar::Int(i128::from(datetime::parse(dt, text)?))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// spec/'s classes put every datatype in exactly one printed form:
    /// text, hex bytes, or a number (dates and times included).
    #[test]
    fn every_datatype_prints_one_way() {
        for &dt in Datatype::ALL {
            let number = dt.is_integer() || dt.is_real() || dt.is_datetime() || dt.is_time();
            let forms = [is_text(dt), is_bytes(dt), number];
            assert_eq!(
                forms.iter().filter(|f| **f).count(),
                1,
                "{}: text, bytes, number = {forms:?}",
                dt.name()
            );
        }
        // The strings of wider characters are bytes to tdb: it prints hex.
        assert!(is_bytes(Datatype::StringUtf16) && is_text(Datatype::Char));
    }
}
