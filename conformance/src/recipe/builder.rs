//! The conformance recipe's `[schema]` and write steps as calls of the
//! runtime's public API (the replay creates arrays with it; the runtime's
//! builder oracle test writes with it too): a [`SchemaBuilder`] (leaving to it every default
//! the recipe leaves out) and a [`Write`] of named columns, exactly as the
//! step gives them (so that a step TileDB refuses reaches the runtime's
//! checks unchanged).

use toml::Value;

use super::values::{cell_bytes, column_values, datatype_by_name, integer, value_bytes};
use tiledb_runtime::filter::{Datatype, Filter};
use tiledb_runtime::format::generated::{ArrayType, DataOrder};
use tiledb_runtime::schema::{
    AttributeSpec, DimensionSpec, EnumerationSpec, LabelSpec, SchemaBuilder, SchemaOrder,
};
use tiledb_runtime::write::{Column, Write, WriteLayout};

type R<T> = Result<T, String>;

fn s<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn dt(name: &str) -> R<Datatype> {
    datatype_by_name(name).map_err(|e| e.to_string())
}

/// The recipe's filter, looked up once for both replays (`schema::filter`).
fn filter(spec: &Value) -> R<Filter> {
    super::schema::filter(spec).map_err(|e| e.to_string())
}

fn filters(v: &Value, key: &str) -> R<Option<Vec<Filter>>> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|fs| fs.iter().map(filter).collect())
        .transpose()
}

fn order(name: Option<&str>) -> R<SchemaOrder> {
    Ok(match name.unwrap_or("row-major") {
        "row-major" => SchemaOrder::RowMajor,
        "col-major" => SchemaOrder::ColMajor,
        "hilbert" => SchemaOrder::Hilbert,
        other => return Err(format!("order {other}")),
    })
}

/// `cell_val_num` of a recipe field: `None` for `"var"`.
fn cvn(v: &Value) -> Option<u32> {
    match v.get("cell_val_num") {
        Some(Value::String(x)) if x == "var" => None,
        Some(Value::Integer(n)) => Some(*n as u32),
        _ => Some(1),
    }
}

fn dimension(d: &Value) -> R<DimensionSpec> {
    let name = s(d, "name").ok_or("a dimension without a name")?;
    let t = dt(s(d, "type").unwrap_or("INT32"))?;
    let mut spec = if t.is_string() {
        DimensionSpec::string(name)
    } else {
        let dom = list(d, "domain");
        let b = |v: Option<&Value>| {
            value_bytes(t, v.ok_or("a short domain")?).map_err(|e| e.to_string())
        };
        DimensionSpec {
            name: name.to_string(),
            datatype: t,
            domain: Some((b(dom.first())?, b(dom.get(1))?)),
            extent: d
                .get("tile")
                .map(|e| value_bytes(t, e))
                .transpose()
                .map_err(|e| e.to_string())?,
            filters: Default::default(),
        }
    };
    spec.filters =
        tiledb_runtime::filter::FilterPipeline::new(filters(d, "filters")?.unwrap_or_default());
    Ok(spec)
}

fn attribute(a: &Value) -> R<AttributeSpec> {
    let name = s(a, "name").ok_or("an attribute without a name")?;
    let t = dt(s(a, "type").unwrap_or("INT32"))?;
    let mut spec = AttributeSpec::new(name, t);
    spec.cell_val_num = cvn(a);
    spec.nullable = a.get("nullable").and_then(Value::as_bool).unwrap_or(false);
    if let Some(fill) = a.get("fill") {
        spec.fill = Some(
            cell_bytes(t, spec.cell_val_num.unwrap_or(u32::MAX), fill)
                .map_err(|e| e.to_string())?,
        );
    }
    if let Some(fs) = filters(a, "filters")? {
        spec = spec.with_filters(fs);
    }
    if let Some(e) = s(a, "enumeration") {
        spec = spec.with_enumeration(e);
    }
    Ok(spec)
}

fn enumeration(e: &Value) -> R<EnumerationSpec> {
    let t = dt(s(e, "type").unwrap_or("INT32"))?;
    let n = cvn(e);
    let values = column_values(
        t,
        n.unwrap_or(u32::MAX),
        e.get("values").ok_or("no values")?,
    )
    .map_err(|e| e.to_string())?;
    Ok(EnumerationSpec {
        name: s(e, "name").unwrap_or("").to_string(),
        datatype: t,
        cell_val_num: n,
        ordered: e.get("ordered").and_then(Value::as_bool).unwrap_or(false),
        values,
        path: None,
    })
}

/// The builder of a recipe's `[schema]`.
pub fn builder(schema: &Value) -> R<SchemaBuilder> {
    let mut b = match s(schema, "type") {
        Some("dense") => SchemaBuilder::dense(),
        _ => SchemaBuilder::new(ArrayType::Sparse),
    };
    b.tile_order = order(s(schema, "tile_order"))?;
    b.cell_order = order(s(schema, "cell_order"))?;
    if let Some(c) = schema.get("capacity").and_then(Value::as_integer) {
        b.capacity = c as u64;
    }
    b.allows_dups = schema
        .get("allows_duplicates")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    for (key, slot) in [
        ("coords_filters", &mut b.coords_filters),
        ("offsets_filters", &mut b.offsets_filters),
        ("validity_filters", &mut b.validity_filters),
    ] {
        if let Some(fs) = filters(schema, key)? {
            *slot = tiledb_runtime::filter::FilterPipeline::new(fs);
        }
    }
    for d in list(schema, "dims") {
        b.dimensions.push(dimension(d)?);
    }
    for a in list(schema, "attrs") {
        b.attributes.push(attribute(a)?);
    }
    for e in list(schema, "enumerations") {
        b.enumerations.push(enumeration(e)?);
    }
    for l in list(schema, "dim_labels") {
        let o = match s(l, "order").unwrap_or("increasing") {
            "increasing" => DataOrder::Increasing,
            "decreasing" => DataOrder::Decreasing,
            _ => DataOrder::Unordered,
        };
        let dim = l.get("dim_index").and_then(Value::as_integer).unwrap_or(0) as u32;
        b.labels.push(LabelSpec::new(
            s(l, "name").unwrap_or(""),
            dim,
            o,
            dt(s(l, "type").unwrap_or("FLOAT64"))?,
        ));
    }
    if let Some(cd) = schema.get("current_domain").and_then(Value::as_array) {
        let mut ranges = Vec::new();
        for (r, d) in cd.iter().zip(&b.dimensions) {
            let r = r.as_array().ok_or("a bad current-domain range")?;
            let v = |x: Option<&Value>| -> R<Vec<u8>> {
                let x = x.ok_or("a short range")?;
                match x {
                    Value::String(t) if d.datatype.is_string() => Ok(t.as_bytes().to_vec()),
                    _ => value_bytes(d.datatype, x).map_err(|e| e.to_string()),
                }
            };
            ranges.push((v(r.first())?, v(r.get(1))?));
        }
        b.current_domain = Some(ranges);
    }
    Ok(b)
}

/// The datatype and values per cell of the recipe field `name`, and
/// whether it is nullable.
fn field(schema: &Value, name: &str) -> R<(Datatype, Option<u32>, bool)> {
    for d in list(schema, "dims") {
        if s(d, "name") == Some(name) {
            let t = dt(s(d, "type").unwrap_or("INT32"))?;
            return Ok((t, if t.is_string() { None } else { Some(1) }, false));
        }
    }
    for a in list(schema, "attrs") {
        if s(a, "name") == Some(name) {
            let nullable = a.get("nullable").and_then(Value::as_bool).unwrap_or(false);
            return Ok((dt(s(a, "type").unwrap_or("INT32"))?, cvn(a), nullable));
        }
    }
    Err(format!("no field {name}"))
}

/// The write of a recipe's write step: every column the step gives, with
/// validity where the step lists it, or all valid for a nullable field
/// the step does not name in `no_validity`.
pub fn write(schema: &Value, step: &Value) -> R<Write> {
    let mut columns = Vec::new();
    let no_validity: Vec<&str> = list(step, "no_validity")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for table in ["coords", "data"] {
        let Some(t) = step.get(table).and_then(Value::as_table) else {
            continue;
        };
        for (name, values) in t {
            let (datatype, n, nullable) = field(schema, name)?;
            let cells = column_values(datatype, n.unwrap_or(u32::MAX), values)
                .map_err(|e| e.to_string())?;
            let listed = step
                .get("validity")
                .and_then(|v| v.get(name))
                .and_then(Value::as_array);
            let mut c = Column::new(name, datatype, n, false);
            for cell in &cells {
                c.push(cell, true);
            }
            if let Some(v) = listed {
                let flags: Vec<bool> = v.iter().map(|x| x.as_integer().unwrap_or(1) != 0).collect();
                c = c.with_validity(&flags);
            } else if nullable && !no_validity.contains(&name.as_str()) {
                c = c.with_validity(&vec![true; cells.len()]);
            }
            // Offsets as given (TileDB's: each cell's start; the column's
            // add the end).
            if let Some(raw) = step
                .get("raw_offsets")
                .and_then(|r| r.get(name))
                .and_then(Value::as_array)
            {
                let mut offsets: Vec<u64> = raw
                    .iter()
                    .map(|o| o.as_integer().unwrap_or(0) as u64)
                    .collect();
                offsets.push(c.data.len() as u64);
                c.offsets = Some(offsets);
            }
            columns.push(c);
        }
    }
    let dense = s(schema, "type") == Some("dense");
    let layout = match s(step, "layout").unwrap_or(if dense { "row-major" } else { "unordered" }) {
        "row-major" => WriteLayout::RowMajor,
        "col-major" => WriteLayout::ColMajor,
        "global" => WriteLayout::GlobalOrder,
        _ => WriteLayout::Unordered,
    };
    let subarray = match step.get("subarray").and_then(Value::as_array) {
        None => None,
        Some(sub) => Some(
            sub.iter()
                .map(|r| {
                    let r = r.as_array().ok_or("a bad subarray")?;
                    let b = |v: Option<&Value>| {
                        integer(v.ok_or("a short range")?).map_err(|e| e.to_string())
                    };
                    Ok((b(r.first())?, b(r.get(1))?))
                })
                .collect::<R<Vec<_>>>()?,
        ),
    };
    Ok(Write {
        layout,
        subarray,
        columns,
        timestamp: step
            .get("timestamp")
            .and_then(Value::as_integer)
            .unwrap_or(1) as u64,
    })
}
