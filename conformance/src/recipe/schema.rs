//! The recipe's `[schema]` as a stored schema: filters and pipelines,
//! attributes, dimension labels, enumerations and the current domain, with
//! TileDB's defaults for what the recipe leaves out.

use toml::Value;

use tiledb_runtime::error::Result;
use tiledb_runtime::filter::{Datatype, Filter, FilterPipeline};
use tiledb_runtime::format::generated as stored;
use tiledb_runtime::format::generated::FilterType;
use tiledb_runtime::write::WRITE_VERSION;

use super::values::{self, cell_bytes, column_values, datatype_by_name, fill_default};
use super::{get_str, unsupported, usage};

/// The runtime filter a recipe names. Names are spec/'s spelling of the
/// filter types (`FilterType::name`), `NOOP` (tiledb-py's) standing for
/// `NONE`; the options each takes, with TileDB's defaults, are below.
pub(crate) fn filter(spec: &Value) -> Result<Filter> {
    let name = get_str(spec, "name").ok_or_else(|| usage("a filter without a name"))?;
    let spelled = if name == "NOOP" { "NONE" } else { name };
    let filter_type = FilterType::ALL
        .iter()
        .copied()
        .find(|t| t.name() == spelled)
        .ok_or_else(|| usage(format!("unknown filter {name}")))?;
    let level = spec.get("level").and_then(Value::as_integer).unwrap_or(-1) as i32;
    let reinterpret = get_str(spec, "reinterpret_datatype")
        .map(datatype_by_name)
        .transpose()?;
    let window = |default: u32| {
        spec.get("max_window")
            .and_then(Value::as_integer)
            .map(|w| w as u32)
            .unwrap_or(default)
    };
    let float = |key: &str, default: f64| {
        spec.get(key)
            .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
            .unwrap_or(default)
    };
    Ok(match filter_type {
        FilterType::None => Filter::None,
        FilterType::Gzip => Filter::Gzip { level },
        FilterType::Zstd => Filter::Zstd { level },
        FilterType::Lz4 => Filter::Lz4 { level },
        FilterType::Rle => Filter::Rle { level },
        FilterType::Bzip2 => Filter::Bzip2 { level },
        FilterType::Dictionary => Filter::Dictionary { level },
        FilterType::DoubleDelta => Filter::DoubleDelta { level, reinterpret },
        FilterType::Delta => Filter::Delta { level, reinterpret },
        FilterType::BitWidthReduction => Filter::BitWidthReduction {
            max_window: window(256),
        },
        FilterType::PositiveDelta => Filter::PositiveDelta {
            max_window: window(1024),
        },
        FilterType::Byteshuffle => Filter::ByteShuffle,
        FilterType::Bitshuffle => Filter::BitShuffle,
        FilterType::ChecksumMd5 => Filter::ChecksumMd5,
        FilterType::ChecksumSha256 => Filter::ChecksumSha256,
        FilterType::Xor => Filter::Xor,
        FilterType::ScaleFloat => Filter::ScaleFloat {
            scale: float("factor", 1.0),
            offset: float("offset", 0.0),
            byte_width: spec
                .get("bytewidth")
                .and_then(Value::as_integer)
                .unwrap_or(8) as u64,
        },
        FilterType::Webp => Filter::Webp {
            quality: float("quality", 100.0) as f32,
            format: match get_str(spec, "input_format").unwrap_or("RGB") {
                "RGB" => tiledb_runtime::filter::WebpFormat::Rgb,
                "BGR" => tiledb_runtime::filter::WebpFormat::Bgr,
                "RGBA" => tiledb_runtime::filter::WebpFormat::Rgba,
                "BGRA" => tiledb_runtime::filter::WebpFormat::Bgra,
                other => return Err(usage(format!("unknown WEBP input format {other}"))),
            },
            lossless: spec
                .get("lossless")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            // Set from the schema's tile extents once the domain is known.
            y_extent: 0,
            x_extent: 0,
        },
        _ => return Err(unsupported(format!("the {name} filter in a recipe"))),
    })
}

pub(super) fn pipeline(
    list: Option<&Value>,
    default: Vec<Filter>,
) -> Result<stored::FilterPipeline> {
    let filters = match list.and_then(Value::as_array) {
        Some(items) => items.iter().map(filter).collect::<Result<_>>()?,
        None => default,
    };
    Ok(FilterPipeline::new(filters).to_stored())
}

pub(super) fn layout(name: Option<&str>) -> Result<stored::Layout> {
    Ok(match name.unwrap_or("row-major") {
        "row-major" => stored::Layout::RowMajor,
        "col-major" => stored::Layout::ColMajor,
        "hilbert" => stored::Layout::Hilbert,
        other => return Err(usage(format!("unknown order {other}"))),
    })
}

pub(super) fn cell_val_num(spec: &Value) -> Result<u32> {
    match spec.get("cell_val_num") {
        None => Ok(1),
        Some(Value::String(s)) if s == "var" => Ok(u32::MAX),
        Some(Value::Integer(n)) if *n > 0 => Ok(*n as u32),
        Some(other) => Err(usage(format!("bad cell_val_num {other}"))),
    }
}

/// The stored attribute a recipe describes.
pub(super) fn attribute(a: &Value) -> Result<stored::Attribute> {
    let datatype = datatype_by_name(get_str(a, "type").unwrap_or("INT32"))?;
    let cvn = cell_val_num(a)?;
    let fill = match a.get("fill") {
        Some(f) => cell_bytes(datatype, cvn, f)?,
        None => fill_default(datatype, cvn),
    };
    Ok(stored::Attribute {
        name: get_str(a, "name")
            .ok_or_else(|| usage("an attribute without a name"))?
            .as_bytes()
            .to_vec(),
        datatype,
        cell_val_num: cvn,
        filters: pipeline(a.get("filters"), Vec::new())?,
        fill: Some(fill),
        nullable: a.get("nullable").and_then(Value::as_bool).unwrap_or(false),
        fill_validity: 0,
        order: stored::DataOrder::Unordered,
        enumeration_name: Some(
            get_str(a, "enumeration")
                .unwrap_or_default()
                .as_bytes()
                .to_vec(),
        ),
    })
}

/// Builds the stored schema (format 22) a recipe's `[schema]` describes,
/// with TileDB's defaults for what the recipe leaves out.
pub fn stored_schema(schema: &Value) -> Result<stored::ArraySchema> {
    Ok(stored_schema_parts(schema)?.0)
}

/// A dimension label of a recipe.
pub(super) struct LabelSpec {
    name: String,
    dim_index: u32,
    datatype: Datatype,
    order: stored::DataOrder,
}

pub(super) fn label_specs(schema: &Value) -> Result<Vec<LabelSpec>> {
    let no_list = Vec::new();
    let mut out = Vec::new();
    for l in schema
        .get("dim_labels")
        .and_then(Value::as_array)
        .unwrap_or(&no_list)
    {
        if get_str(schema, "type") != Some("dense") {
            return Err(unsupported("dimension labels on sparse arrays"));
        }
        let order = match get_str(l, "order").unwrap_or("increasing") {
            "increasing" => stored::DataOrder::Increasing,
            "decreasing" => stored::DataOrder::Decreasing,
            other => return Err(unsupported(format!("{other} dimension labels"))),
        };
        let datatype = datatype_by_name(get_str(l, "type").unwrap_or("FLOAT64"))?;
        if datatype.is_string() {
            return Err(unsupported("string dimension labels"));
        }
        out.push(LabelSpec {
            name: get_str(l, "name")
                .ok_or_else(|| usage("a label without a name"))?
                .to_string(),
            dim_index: l.get("dim_index").and_then(Value::as_integer).unwrap_or(0) as u32,
            datatype,
            order,
        });
    }
    Ok(out)
}

/// The enumerations of a recipe's schema, each with a fresh file name
/// (`__<label>_0`).
pub(super) fn enumerations(schema: &Value) -> Result<Vec<stored::Enumeration>> {
    let no_list = Vec::new();
    let mut out = Vec::new();
    for e in schema
        .get("enumerations")
        .and_then(Value::as_array)
        .unwrap_or(&no_list)
    {
        let name = get_str(e, "name").ok_or_else(|| usage("an enumeration without a name"))?;
        let datatype = datatype_by_name(get_str(e, "type").unwrap_or("INT32"))?;
        let cvn = cell_val_num(e)?;
        let values = e
            .get("values")
            .ok_or_else(|| usage("an enumeration without values"))?;
        let cells = column_values(datatype, cvn, values)?;
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        for c in &cells {
            offsets.extend((data.len() as u64).to_le_bytes());
            data.extend_from_slice(c);
        }
        let (label, _) = tiledb_runtime::directory::timestamped_name::new_label()?;
        out.push(stored::Enumeration {
            name: name.as_bytes().to_vec(),
            path: format!("__{label}_0").into_bytes(),
            datatype,
            cell_val_num: cvn,
            ordered: e.get("ordered").and_then(Value::as_bool).unwrap_or(false),
            data,
            offsets: (cvn == u32::MAX).then_some(offsets),
        });
    }
    Ok(out)
}

/// The stored schema and the enumeration files it refers to.
pub(crate) fn stored_schema_parts(
    schema: &Value,
) -> Result<(stored::ArraySchema, Vec<stored::Enumeration>)> {
    let enums = enumerations(schema)?;
    let dense = match get_str(schema, "type") {
        Some("dense") => true,
        Some("sparse") => false,
        other => return Err(usage(format!("bad array type {other:?}"))),
    };
    let mut dimensions = Vec::new();
    for d in schema
        .get("dims")
        .and_then(Value::as_array)
        .ok_or_else(|| usage("a schema without dims"))?
    {
        let datatype = datatype_by_name(get_str(d, "type").unwrap_or("INT32"))?;
        let name = get_str(d, "name").ok_or_else(|| usage("a dimension without a name"))?;
        let (domain, extent) = if datatype.is_string() {
            (Vec::new(), None)
        } else {
            let dom = d
                .get("domain")
                .and_then(Value::as_array)
                .ok_or_else(|| usage("a dimension without a domain"))?;
            let mut bytes = Vec::new();
            for v in dom {
                bytes.extend(values::value_bytes(datatype, v)?);
            }
            let extent = match d.get("tile") {
                Some(t) => Some(values::value_bytes(datatype, t)?),
                None if !dense => None,
                None => return Err(unsupported("dense dimensions without a tile extent")),
            };
            (bytes, extent)
        };
        dimensions.push(stored::Dimension {
            name: name.as_bytes().to_vec(),
            datatype,
            cell_val_num: if datatype.is_string() { u32::MAX } else { 1 },
            filters: Some(pipeline(d.get("filters"), Vec::new())?),
            domain,
            null_extent: extent.is_none() as u8,
            extent,
        });
    }
    let mut attributes = Vec::new();
    for a in schema
        .get("attrs")
        .and_then(Value::as_array)
        .ok_or_else(|| usage("a schema without attrs"))?
    {
        attributes.push(attribute(a)?);
    }
    let capacity = schema
        .get("capacity")
        .and_then(Value::as_integer)
        .unwrap_or(10000) as u64;
    #[allow(clippy::needless_update)] // every field is set today; later versions add more
    let stored = stored::ArraySchema {
        version: WRITE_VERSION,
        allows_dups: schema
            .get("allows_duplicates")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        array_type: if dense {
            stored::ArrayType::Dense
        } else {
            stored::ArrayType::Sparse
        },
        tile_order: layout(get_str(schema, "tile_order"))?,
        cell_order: layout(get_str(schema, "cell_order"))?,
        capacity,
        coords_filters: pipeline(
            schema.get("coords_filters"),
            vec![Filter::Zstd { level: -1 }],
        )?,
        offsets_filters: pipeline(
            schema.get("offsets_filters"),
            vec![Filter::Zstd { level: -1 }],
        )?,
        validity_filters: Some(pipeline(
            schema.get("validity_filters"),
            vec![Filter::Rle { level: -1 }],
        )?),
        domain: stored::Domain {
            datatype: None,
            dimensions,
        },
        attributes,
        labels: Some(
            label_specs(schema)?
                .into_iter()
                .enumerate()
                .map(|(i, l)| stored::DimensionLabel {
                    dim_index: l.dim_index,
                    name: l.name.into_bytes(),
                    relative_uri: true,
                    uri: format!("{}/l{i}", stored::LABELS_DIR).into_bytes(),
                    label_attr_name: b"label".to_vec(),
                    label_order: l.order,
                    label_datatype: l.datatype,
                    label_cell_val_num: 1,
                    is_external: false,
                })
                .collect(),
        ),
        enumerations: Some(
            enums
                .iter()
                .map(|e| stored::EnumerationRef {
                    name: e.name.clone(),
                    path: e.path.clone(),
                })
                .collect(),
        ),
        current_domain: Some(stored::CurrentDomain::default()),
        // A field a later format version appends takes its default here.
        ..Default::default()
    };
    let mut stored = stored;
    if let Some(bounds) = schema.get("current_domain").and_then(Value::as_array) {
        stored.current_domain = Some(current_domain(&stored, bounds)?);
    }
    // TileDB gives WEBP the two dimensions' tile extents (rows, then columns
    // of values).
    let extent = |d: usize| -> u16 {
        stored
            .domain
            .dimensions
            .get(d)
            .and_then(|dim| dim.extent.as_ref())
            .map(|e| {
                let mut b = [0u8; 8];
                let n = e.len().min(8);
                b[..n].copy_from_slice(&e[..n]);
                u64::from_le_bytes(b) as u16
            })
            .unwrap_or(0)
    };
    let (y, x) = (extent(0), extent(1));
    for a in &mut stored.attributes {
        for f in &mut a.filters.filters {
            if let stored::FilterOptions::WebpOptions(o) = &mut f.options {
                o.y_extent = y;
                o.x_extent = x;
            }
        }
    }
    Ok((stored, enums))
}

/// The stored current domain: one `[lo, hi]` per dimension, as an NDRectangle.
pub(super) fn current_domain(
    stored: &stored::ArraySchema,
    bounds: &[Value],
) -> Result<stored::CurrentDomain> {
    let shapes = tiledb_runtime::schema::dimension_shapes(stored);
    if bounds.len() != stored.domain.dimensions.len() {
        return Err(usage("the current domain needs one range per dimension"));
    }
    let mut ranges = Vec::new();
    for ((dim, shape), range) in stored.domain.dimensions.iter().zip(&shapes).zip(bounds) {
        let (Some(lo), Some(hi)) = (
            range.as_array().and_then(|r| r.first()),
            range.as_array().and_then(|r| r.get(1)),
        ) else {
            return Err(usage("a current-domain range is [lo, hi]"));
        };
        let start = values::value_bytes(dim.datatype, lo)?;
        let end = values::value_bytes(dim.datatype, hi)?;
        let start_size = if shape.var {
            start.len() as u64
        } else {
            shape.coord_size
        };
        let mut data = start;
        data.extend(end);
        ranges.push(stored::Range { start_size, data });
    }
    Ok(stored::CurrentDomain {
        empty: false,
        domain_type: Some(stored::CurrentDomainType::Ndrectangle),
        ndrectangle: Some(stored::NDRectangle { ranges }),
    })
}
