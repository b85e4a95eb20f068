//! Cells of a recipe turned into bytes (`conformance/README.md`, "Cells in
//! case files").

use toml::Value;

use tiledb_runtime::error::{Error, Result};
use tiledb_runtime::filter::datatype::is_byte;
use tiledb_runtime::filter::Datatype;

fn usage(what: impl Into<String>) -> Error {
    Error::Usage(what.into())
}

/// The datatype TileDB spells `name`.
pub fn datatype_by_name(name: &str) -> Result<Datatype> {
    Datatype::ALL
        .iter()
        .copied()
        .find(|d| d.name() == name)
        .ok_or_else(|| usage(format!("unknown datatype {name}")))
}

/// An integer given as a TOML integer or a decimal string.
pub fn integer(v: &Value) -> Result<i128> {
    match v {
        Value::Integer(i) => Ok(*i as i128),
        Value::String(s) => s
            .parse::<i128>()
            .map_err(|_| usage(format!("not an integer: {s}"))),
        Value::Boolean(b) => Ok(*b as i128),
        other => Err(usage(format!("not an integer: {other}"))),
    }
}

fn float(v: &Value) -> Result<f64> {
    match v {
        Value::Float(f) => Ok(*f),
        Value::Integer(i) => Ok(*i as f64),
        Value::String(s) => {
            let hex = s
                .strip_prefix("0x")
                .ok_or_else(|| usage(format!("not a float: {s}")))?;
            let bits =
                u64::from_str_radix(hex, 16).map_err(|_| usage(format!("not a float: {s}")))?;
            Ok(f64::from_bits(bits))
        }
        other => Err(usage(format!("not a float: {other}"))),
    }
}

fn float32(v: &Value) -> Result<f32> {
    if let Value::String(s) = v {
        if let Some(hex) = s.strip_prefix("0x") {
            if hex.len() <= 8 {
                let bits =
                    u32::from_str_radix(hex, 16).map_err(|_| usage(format!("not a float: {s}")))?;
                return Ok(f32::from_bits(bits));
            }
        }
    }
    Ok(float(v)? as f32)
}

/// One value of a numeric (or boolean, date, time) type.
pub fn value_bytes(t: Datatype, v: &Value) -> Result<Vec<u8>> {
    use Datatype::*;
    let i = || integer(v);
    Ok(match t {
        Float32 => float32(v)?.to_le_bytes().to_vec(),
        Float64 => float(v)?.to_le_bytes().to_vec(),
        Int8 | Char => (i()? as i8).to_le_bytes().to_vec(),
        Uint8 | Bool => (i()? as u8).to_le_bytes().to_vec(),
        Int16 => (i()? as i16).to_le_bytes().to_vec(),
        Uint16 => (i()? as u16).to_le_bytes().to_vec(),
        Int32 => (i()? as i32).to_le_bytes().to_vec(),
        Uint32 => (i()? as u32).to_le_bytes().to_vec(),
        Uint64 => (i()? as u64).to_le_bytes().to_vec(),
        // Wide strings: a value is one code unit.
        StringUtf16 | StringUcs2 => (i()? as u16).to_le_bytes().to_vec(),
        StringUtf32 | StringUcs4 => (i()? as u32).to_le_bytes().to_vec(),
        _ if t.size() == 8 => (i()? as i64).to_le_bytes().to_vec(),
        other => return Err(usage(format!("{} values are not numbers", other.name()))),
    })
}

// A recipe spells GEOM_WKT cells as text, the other byte types as hex: a
// choice of the recipe's JSON, not a format fact, so it stays here.
fn is_hex_type(t: Datatype) -> bool {
    t.is_byte() && t != Datatype::GeomWkt
}

fn is_text_type(t: Datatype) -> bool {
    t.is_text() || t == Datatype::GeomWkt
}

fn hex(s: &str) -> Result<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return Err(usage(format!("odd hex string {s}")));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|b| u8::from_str_radix(b, 16).ok())
                .ok_or_else(|| usage(format!("bad hex string {s}")))
        })
        .collect()
}

/// One cell's bytes. `cvn` is `u32::MAX` for var-sized cells.
pub fn cell_bytes(t: Datatype, cvn: u32, v: &Value) -> Result<Vec<u8>> {
    if let Value::String(s) = v {
        if is_hex_type(t) {
            return hex(s);
        }
        if is_text_type(t) {
            return Ok(s.as_bytes().to_vec());
        }
    }
    if is_byte(t) && !matches!(v, Value::Array(_)) {
        return Err(usage("a byte-typed cell must be a string"));
    }
    match v {
        Value::Array(items) => {
            if cvn != u32::MAX && items.len() != cvn as usize {
                return Err(usage(format!(
                    "a cell of {} values, not {cvn}",
                    items.len()
                )));
            }
            let mut out = Vec::new();
            for item in items {
                out.extend(value_bytes(t, item)?);
            }
            Ok(out)
        }
        other => {
            if cvn != 1 && cvn != u32::MAX {
                return Err(usage("a multi-value cell must be an array"));
            }
            value_bytes(t, other)
        }
    }
}

/// A column: a list of cells, or a `{start, step, count, modulo}` sequence.
pub fn column_values(t: Datatype, cvn: u32, v: &Value) -> Result<Vec<Vec<u8>>> {
    match v {
        Value::Array(items) => items.iter().map(|c| cell_bytes(t, cvn, c)).collect(),
        Value::Table(table) => {
            let get = |k: &str| table.get(k).map(integer).transpose();
            let start = get("start")?.unwrap_or(0);
            let step = get("step")?.unwrap_or(1);
            let count = get("count")?.ok_or_else(|| usage("a sequence without count"))?;
            let modulo = get("modulo")?;
            if !(0..=10_000_000).contains(&count) {
                return Err(usage("a sequence count out of range"));
            }
            (0..count)
                .map(|i| {
                    let mut x = start + i * step;
                    if let Some(m) = modulo.filter(|m| *m != 0) {
                        x = x.rem_euclid(m.abs());
                        if m < 0 && x != 0 {
                            x += m;
                        }
                    }
                    let cell = Value::String(x.to_string());
                    match t {
                        Datatype::Float32 | Datatype::Float64 => {
                            value_bytes(t, &Value::Float(x as f64))
                        }
                        _ => value_bytes(t, &cell),
                    }
                })
                .collect()
        }
        other => Err(usage(format!("not a column: {other}"))),
    }
}

/// TileDB's default fill value of one cell: the runtime's (spec/'s) default of one value,
/// `cvn` times.
pub(crate) fn fill_default(t: Datatype, cvn: u32) -> Vec<u8> {
    let one = tiledb_runtime::schema::value::default_fill(t);
    let copies = if cvn == u32::MAX { 1 } else { cvn as usize };
    one.repeat(copies)
}
