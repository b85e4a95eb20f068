//! The schema document: what `tdb info --json` prints under `"schema"` and
//! what `tdb create --schema` reads back (JSON, or the same keys in TOML),
//! complete enough that `info → create` gives the same schema: every
//! filter with its options, fill values, the dimensions' own pipelines,
//! enumeration values, the current domain and the dimension labels.

use serde_json::{json, Map, Value};
use tiledb_conformance::recipe::values::datatype_by_name;
use tiledb_runtime::filter::{Datatype, Filter, FilterPipeline, WebpFormat};
use tiledb_runtime::format::generated::{ArrayType, DataOrder};
use tiledb_runtime::schema::{
    ArraySchema, AttributeSpec, DimensionSpec, EnumerationSpec, LabelSpec, SchemaBuilder,
    SchemaOrder,
};

use crate::cells::{cell_bytes, cell_json};

type R<T> = Result<T, String>;

const WEBP_FORMATS: [(WebpFormat, &str); 4] = [
    (WebpFormat::Rgb, "RGB"),
    (WebpFormat::Bgr, "BGR"),
    (WebpFormat::Rgba, "RGBA"),
    (WebpFormat::Bgra, "BGRA"),
];

fn filter_json(f: &Filter) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), json!(f.name()));
    match f {
        Filter::Gzip { level }
        | Filter::Zstd { level }
        | Filter::Lz4 { level }
        | Filter::Rle { level }
        | Filter::Bzip2 { level }
        | Filter::Dictionary { level } => {
            o.insert("level".into(), json!(level));
        }
        Filter::Delta { level, reinterpret } | Filter::DoubleDelta { level, reinterpret } => {
            o.insert("level".into(), json!(level));
            if let Some(r) = reinterpret {
                o.insert("reinterpret_datatype".into(), json!(r.name()));
            }
        }
        Filter::BitWidthReduction { max_window } | Filter::PositiveDelta { max_window } => {
            o.insert("max_window".into(), json!(max_window));
        }
        Filter::ScaleFloat {
            scale,
            offset,
            byte_width,
        } => {
            o.insert("factor".into(), json!(scale));
            o.insert("offset".into(), json!(offset));
            o.insert("bytewidth".into(), json!(byte_width));
        }
        Filter::Webp {
            quality,
            format,
            lossless,
            ..
        } => {
            o.insert("quality".into(), json!(quality));
            let name = WEBP_FORMATS
                .iter()
                .find(|(f, _)| f == format)
                .map_or("RGB", |(_, n)| n);
            o.insert("input_format".into(), json!(name));
            o.insert("lossless".into(), json!(lossless));
        }
        _ => {}
    }
    Value::Object(o)
}

/// A pipeline as a list of filters with their options.
pub fn pipeline_json(p: &FilterPipeline) -> Value {
    Value::Array(p.filters.iter().map(filter_json).collect())
}

fn datatype(v: &Value, key: &str) -> R<Datatype> {
    let name = v
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("no {key}"))?;
    datatype_by_name(name).map_err(|e| e.to_string())
}

fn filter_from(v: &Value) -> R<Filter> {
    let name = v
        .as_str()
        .or(v.get("name").and_then(Value::as_str))
        .ok_or("a filter without a name")?;
    let int = |k: &str, d: i64| v.get(k).and_then(Value::as_i64).unwrap_or(d);
    let float = |k: &str, d: f64| v.get(k).and_then(Value::as_f64).unwrap_or(d);
    let level = int("level", -1) as i32;
    let reinterpret = v
        .get("reinterpret_datatype")
        .map(|_| datatype(v, "reinterpret_datatype"))
        .transpose()?;
    Ok(match name {
        "NOOP" | "NONE" => Filter::None,
        "GZIP" => Filter::Gzip { level },
        "ZSTD" => Filter::Zstd { level },
        "LZ4" => Filter::Lz4 { level },
        "RLE" => Filter::Rle { level },
        "BZIP2" => Filter::Bzip2 { level },
        "DICTIONARY" => Filter::Dictionary { level },
        "DELTA" => Filter::Delta { level, reinterpret },
        "DOUBLE_DELTA" => Filter::DoubleDelta { level, reinterpret },
        "BIT_WIDTH_REDUCTION" => Filter::BitWidthReduction {
            max_window: int("max_window", 256) as u32,
        },
        "POSITIVE_DELTA" => Filter::PositiveDelta {
            max_window: int("max_window", 1024) as u32,
        },
        "BITSHUFFLE" => Filter::BitShuffle,
        "BYTESHUFFLE" => Filter::ByteShuffle,
        "CHECKSUM_MD5" => Filter::ChecksumMd5,
        "CHECKSUM_SHA256" => Filter::ChecksumSha256,
        "XOR" => Filter::Xor,
        "SCALE_FLOAT" => Filter::ScaleFloat {
            scale: float("factor", 1.0),
            offset: float("offset", 0.0),
            byte_width: int("bytewidth", 8) as u64,
        },
        "WEBP" => Filter::Webp {
            quality: float("quality", 100.0) as f32,
            format: {
                let f = v
                    .get("input_format")
                    .and_then(Value::as_str)
                    .unwrap_or("RGB");
                WEBP_FORMATS
                    .iter()
                    .find(|(_, n)| *n == f)
                    .ok_or_else(|| format!("WEBP input format {f}"))?
                    .0
            },
            lossless: v.get("lossless").and_then(Value::as_bool).unwrap_or(false),
            y_extent: 0,
            x_extent: 0,
        },
        other => return Err(format!("unknown filter {other}")),
    })
}

fn pipeline_from(v: Option<&Value>, default: &FilterPipeline) -> R<FilterPipeline> {
    match v {
        None => Ok(default.clone()),
        Some(Value::Array(items)) => Ok(FilterPipeline::new(
            items.iter().map(filter_from).collect::<R<_>>()?,
        )),
        Some(other) => Err(format!("a filter list, not {other}")),
    }
}

fn order_name(o: DataOrder) -> &'static str {
    match o {
        DataOrder::Increasing => "increasing",
        DataOrder::Decreasing => "decreasing",
        _ => "unordered",
    }
}

fn cvn_json(n: Option<u32>) -> Value {
    n.map_or(json!("var"), |n| json!(n))
}

/// The schema document of a loaded schema.
pub fn schema_doc(s: &ArraySchema) -> R<Value> {
    let b = SchemaBuilder::from_schema(s).map_err(|e| e.to_string())?;
    let range = |d: &DimensionSpec, r: &(Vec<u8>, Vec<u8>)| {
        json!([
            cell_json(d.datatype, Some(1), &r.0),
            cell_json(d.datatype, Some(1), &r.1)
        ])
    };
    Ok(json!({
        "name": s.name,
        "version": s.version,
        "array_type": if s.is_dense() { "dense" } else { "sparse" },
        "cell_order": s.cell_order.name(),
        "tile_order": s.tile_order.name(),
        "capacity": s.capacity,
        "allows_duplicates": s.allows_dups,
        "coords_filters": pipeline_json(&b.coords_filters),
        "offsets_filters": pipeline_json(&b.offsets_filters),
        "validity_filters": pipeline_json(&b.validity_filters),
        "dimensions": b.dimensions.iter().map(|d| json!({
            "name": d.name,
            "type": d.datatype.name(),
            "var": d.datatype.is_string(),
            "domain": d.domain.as_ref().map(|r| range(d, r)),
            "tile_extent": d.extent.as_ref().map(|e| cell_json(d.datatype, Some(1), e)),
            "filters": pipeline_json(&d.filters),
        })).collect::<Vec<_>>(),
        "attributes": b.attributes.iter().map(|a| json!({
            "name": a.name,
            "type": a.datatype.name(),
            "cell_val_num": cvn_json(a.cell_val_num),
            "nullable": a.nullable,
            "fill": a.fill.as_ref().map(|f| cell_json(a.datatype, a.cell_val_num, f)),
            "fill_validity": a.fill_validity,
            "filters": pipeline_json(&a.filters),
            "enumeration": a.enumeration,
        })).collect::<Vec<_>>(),
        "enumerations": b.enumerations.iter().map(|e| json!({
            "name": e.name,
            "type": e.datatype.name(),
            "cell_val_num": cvn_json(e.cell_val_num),
            "ordered": e.ordered,
            "values": e.values.iter().map(|v| cell_json(e.datatype, e.cell_val_num, v)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "dimension_labels": b.labels.iter().map(|l| json!({
            "name": l.name,
            "dimension": l.dim_index,
            "uri": l.uri,
            "order": order_name(l.order),
            "type": l.datatype.name(),
            "cell_val_num": cvn_json(l.cell_val_num),
            "label_attr_name": l.label_attr_name,
            "relative_uri": l.relative_uri,
            "external": l.is_external,
        })).collect::<Vec<_>>(),
        "current_domain": b.current_domain.as_ref().map(|cd| cd.iter().zip(&b.dimensions).map(|(r, d)| {
            if d.datatype.is_string() {
                json!([String::from_utf8_lossy(&r.0), String::from_utf8_lossy(&r.1)])
            } else {
                range(d, r)
            }
        }).collect::<Vec<_>>()),
    }))
}

fn cvn_from(v: &Value, default: Option<u32>) -> R<Option<u32>> {
    match v.get("cell_val_num") {
        None | Some(Value::Null) => Ok(default),
        Some(Value::String(s)) if s == "var" => Ok(None),
        Some(n) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| format!("cell_val_num {n}")),
    }
}

fn name(v: &Value, what: &str) -> R<String> {
    v.get("name")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| format!("{what} without a name"))
}

fn list<'a>(doc: &'a Value, key: &str) -> &'a [Value] {
    doc.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn order_from(doc: &Value, key: &str) -> R<SchemaOrder> {
    Ok(
        match doc.get(key).and_then(Value::as_str).unwrap_or("row-major") {
            "row-major" => SchemaOrder::RowMajor,
            "col-major" => SchemaOrder::ColMajor,
            "hilbert" => SchemaOrder::Hilbert,
            other => return Err(format!("{key}: unknown order {other}")),
        },
    )
}

fn dimension_from(d: &Value) -> R<DimensionSpec> {
    let name = name(d, "a dimension")?;
    let t = datatype(d, "type")?;
    let at = |e: String| format!("dimension {name}: {e}");
    let one = |v: &Value| cell_bytes(t, Some(1), v).map_err(at);
    let domain = match d.get("domain") {
        None | Some(Value::Null) => None,
        Some(Value::Array(r)) if r.len() == 2 => Some((one(&r[0])?, one(&r[1])?)),
        Some(other) => return Err(at(format!("a domain is [lo, hi], not {other}"))),
    };
    let extent = match d.get("tile_extent") {
        None | Some(Value::Null) => None,
        Some(e) => Some(one(e)?),
    };
    Ok(DimensionSpec {
        filters: pipeline_from(d.get("filters"), &FilterPipeline::new(Vec::new()))?,
        name,
        datatype: t,
        domain,
        extent,
    })
}

pub(crate) fn attribute_from(a: &Value) -> R<AttributeSpec> {
    let name = name(a, "an attribute")?;
    let t = datatype(a, "type")?;
    let mut spec = AttributeSpec::new(&name, t);
    spec.cell_val_num = cvn_from(a, spec.cell_val_num)?;
    spec.nullable = a.get("nullable").and_then(Value::as_bool).unwrap_or(false);
    spec.fill_validity = a
        .get("fill_validity")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if let Some(fill) = a.get("fill").filter(|f| !f.is_null()) {
        spec.fill = Some(
            cell_bytes(t, spec.cell_val_num, fill)
                .map_err(|e| format!("attribute {name}: fill: {e}"))?,
        );
    }
    spec.filters = pipeline_from(a.get("filters"), &FilterPipeline::new(Vec::new()))?;
    spec.enumeration = a
        .get("enumeration")
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(spec)
}

pub(crate) fn enumeration_from(e: &Value) -> R<EnumerationSpec> {
    let name = name(e, "an enumeration")?;
    let t = datatype(e, "type")?;
    let cvn = cvn_from(e, Some(1))?;
    let values = list(e, "values")
        .iter()
        .map(|v| cell_bytes(t, cvn, v).map_err(|err| format!("enumeration {name}: {err}")))
        .collect::<R<_>>()?;
    Ok(EnumerationSpec {
        name,
        datatype: t,
        cell_val_num: cvn,
        ordered: e.get("ordered").and_then(Value::as_bool).unwrap_or(false),
        values,
        path: None,
    })
}

fn label_from(l: &Value) -> R<LabelSpec> {
    let order = match l
        .get("order")
        .and_then(Value::as_str)
        .unwrap_or("increasing")
    {
        "increasing" => DataOrder::Increasing,
        "decreasing" => DataOrder::Decreasing,
        _ => DataOrder::Unordered,
    };
    let dim = l.get("dimension").and_then(Value::as_u64).unwrap_or(0) as u32;
    let mut spec = LabelSpec::new(&name(l, "a label")?, dim, order, datatype(l, "type")?);
    spec.cell_val_num = cvn_from(l, spec.cell_val_num)?;
    spec.uri = l.get("uri").and_then(Value::as_str).map(str::to_string);
    if let Some(n) = l.get("label_attr_name").and_then(Value::as_str) {
        spec.label_attr_name = n.to_string();
    }
    spec.relative_uri = l
        .get("relative_uri")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    spec.is_external = l.get("external").and_then(Value::as_bool).unwrap_or(false);
    Ok(spec)
}

/// The builder a schema document describes (the whole `tdb info --json`
/// document is taken too: its `"schema"`).
pub fn builder_from(doc: &Value) -> R<SchemaBuilder> {
    let doc = doc.get("schema").filter(|s| s.is_object()).unwrap_or(doc);
    let mut b = match doc.get("array_type").and_then(Value::as_str) {
        Some("dense") => SchemaBuilder::new(ArrayType::Dense),
        Some("sparse") => SchemaBuilder::new(ArrayType::Sparse),
        other => {
            return Err(format!(
                "array_type must be \"dense\" or \"sparse\", not {other:?}"
            ))
        }
    };
    b.cell_order = order_from(doc, "cell_order")?;
    b.tile_order = order_from(doc, "tile_order")?;
    if let Some(c) = doc.get("capacity") {
        b.capacity = c.as_u64().ok_or_else(|| format!("capacity {c}"))?;
    }
    b.allows_dups = doc
        .get("allows_duplicates")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    b.coords_filters = pipeline_from(doc.get("coords_filters"), &b.coords_filters)?;
    b.offsets_filters = pipeline_from(doc.get("offsets_filters"), &b.offsets_filters)?;
    b.validity_filters = pipeline_from(doc.get("validity_filters"), &b.validity_filters)?;
    b.dimensions = list(doc, "dimensions")
        .iter()
        .map(dimension_from)
        .collect::<R<_>>()?;
    b.attributes = list(doc, "attributes")
        .iter()
        .map(attribute_from)
        .collect::<R<_>>()?;
    b.enumerations = list(doc, "enumerations")
        .iter()
        .map(enumeration_from)
        .collect::<R<_>>()?;
    b.labels = list(doc, "dimension_labels")
        .iter()
        .map(label_from)
        .collect::<R<_>>()?;
    if let Some(Value::Array(cd)) = doc.get("current_domain") {
        let mut ranges = Vec::new();
        for (r, d) in cd.iter().zip(&b.dimensions) {
            let bound = |v: &Value| match v {
                Value::String(s) if d.datatype.is_string() => Ok(s.as_bytes().to_vec()),
                other => cell_bytes(d.datatype, Some(1), other),
            };
            match r.as_array().map(Vec::as_slice) {
                Some([lo, hi]) => ranges.push((bound(lo)?, bound(hi)?)),
                _ => return Err(format!("current_domain: [lo, hi], not {r}")),
            }
        }
        if cd.len() != b.dimensions.len() {
            return Err(format!(
                "current_domain: {} ranges for {} dimensions",
                cd.len(),
                b.dimensions.len()
            ));
        }
        b.current_domain = Some(ranges);
    }
    Ok(b)
}
