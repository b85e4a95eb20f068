//! Replaying a conformance recipe (`conformance/cases/*.toml`, described in
//! `conformance/README.md`) with this runtime as the writer: the schema is
//! built and serialized here, writes become fragments, metadata puts and
//! deletes become `__meta/` files.
//!
//! Steps this writer does not perform yet are refused with
//! [`Error::Unsupported`], so a caller can tell "not supported" from "wrong".

pub mod condition;
pub mod values;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::Value;

use tiledb_runtime::error::{Error, Result};
use tiledb_runtime::filter::{Datatype, Filter, FilterPipeline};
use tiledb_runtime::format::generated as stored;
use tiledb_runtime::schema::ArraySchema;
use tiledb_runtime::storage::{LocalStorage, Storage};
use tiledb_runtime::write::{self, Column, FragmentInput, WRITE_VERSION};

use values::{cell_bytes, column_values, datatype_by_name, fill_default};

fn unsupported(what: impl Into<String>) -> Error {
    Error::Unsupported {
        file: Default::default(),
        what: what.into(),
    }
}

fn usage(what: impl Into<String>) -> Error {
    Error::Usage(what.into())
}

fn get_str<'a>(t: &'a Value, key: &str) -> Option<&'a str> {
    t.get(key).and_then(Value::as_str)
}

/// The runtime filter a recipe names.
fn filter(spec: &Value) -> Result<Filter> {
    let name = get_str(spec, "name").ok_or_else(|| usage("a filter without a name"))?;
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
    Ok(match name {
        "NOOP" => Filter::None,
        "GZIP" => Filter::Gzip { level },
        "ZSTD" => Filter::Zstd { level },
        "LZ4" => Filter::Lz4 { level },
        "RLE" => Filter::Rle { level },
        "BZIP2" => Filter::Bzip2 { level },
        "DICTIONARY" => Filter::Dictionary { level },
        "DOUBLE_DELTA" => Filter::DoubleDelta { level, reinterpret },
        "DELTA" => Filter::Delta { level, reinterpret },
        "BIT_WIDTH_REDUCTION" => Filter::BitWidthReduction {
            max_window: window(256),
        },
        "POSITIVE_DELTA" => Filter::PositiveDelta {
            max_window: window(1024),
        },
        "BYTESHUFFLE" => Filter::ByteShuffle,
        "BITSHUFFLE" => Filter::BitShuffle,
        "CHECKSUM_MD5" => Filter::ChecksumMd5,
        "CHECKSUM_SHA256" => Filter::ChecksumSha256,
        "XOR" => Filter::Xor,
        "SCALE_FLOAT" => Filter::ScaleFloat {
            scale: float("factor", 1.0),
            offset: float("offset", 0.0),
            byte_width: spec
                .get("bytewidth")
                .and_then(Value::as_integer)
                .unwrap_or(8) as u64,
        },
        "WEBP" => Filter::Webp {
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
        other => return Err(unsupported(format!("the {other} filter"))),
    })
}

fn pipeline(list: Option<&Value>, default: Vec<Filter>) -> Result<stored::FilterPipeline> {
    let filters = match list.and_then(Value::as_array) {
        Some(items) => items.iter().map(filter).collect::<Result<_>>()?,
        None => default,
    };
    Ok(FilterPipeline::new(filters).to_stored())
}

fn layout(name: Option<&str>) -> Result<stored::Layout> {
    Ok(match name.unwrap_or("row-major") {
        "row-major" => stored::Layout::RowMajor,
        "col-major" => stored::Layout::ColMajor,
        "hilbert" => stored::Layout::Hilbert,
        other => return Err(usage(format!("unknown order {other}"))),
    })
}

fn cell_val_num(spec: &Value) -> Result<u32> {
    match spec.get("cell_val_num") {
        None => Ok(1),
        Some(Value::String(s)) if s == "var" => Ok(u32::MAX),
        Some(Value::Integer(n)) if *n > 0 => Ok(*n as u32),
        Some(other) => Err(usage(format!("bad cell_val_num {other}"))),
    }
}

/// The stored attribute a recipe describes.
fn attribute(a: &Value) -> Result<stored::Attribute> {
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

/// Schema evolution: drops then adds attributes, extends enumerations, and
/// writes the result as a new schema file (stamped with the current time, as TileDB does).
fn evolve(
    storage: &dyn Storage,
    current: &stored::ArraySchema,
    step: &Value,
    key: Option<&[u8; 32]>,
) -> Result<(stored::ArraySchema, ArraySchema)> {
    if step.get("add_enumerations").is_some() {
        return Err(unsupported("evolving enumerations"));
    }
    let mut next = current.clone();
    let no_list = Vec::new();
    for name in step
        .get("drop_attrs")
        .and_then(Value::as_array)
        .unwrap_or(&no_list)
    {
        let name = name.as_str().ok_or_else(|| usage("a bad attribute name"))?;
        let before = next.attributes.len();
        next.attributes.retain(|a| a.name != name.as_bytes());
        if next.attributes.len() == before {
            return Err(usage(format!("no attribute {name} to drop")));
        }
    }
    for a in step
        .get("add_attrs")
        .and_then(Value::as_array)
        .unwrap_or(&no_list)
    {
        next.attributes.push(attribute(a)?);
    }
    for e in step
        .get("extend_enumerations")
        .and_then(Value::as_array)
        .unwrap_or(&no_list)
    {
        extend_enumeration(storage, &mut next, e, key)?;
    }
    let loaded = write::write_schema(storage, &next, 0, key)?;
    Ok((next, loaded))
}

/// Extends an enumeration as TileDB's schema evolution does: the old file
/// stays, a new file under a fresh label holds the old values followed by the
/// new ones, and the evolved schema's reference points at the new file (TileDB
/// loads the file the reference names and checks that the file carries the
/// same name and path).
fn extend_enumeration(
    storage: &dyn Storage,
    schema: &mut stored::ArraySchema,
    spec: &Value,
    key: Option<&[u8; 32]>,
) -> Result<()> {
    let name = get_str(spec, "name").ok_or_else(|| usage("an extension without a name"))?;
    let reference = schema
        .enumerations
        .iter_mut()
        .flatten()
        .find(|r| r.name == name.as_bytes())
        .ok_or_else(|| usage(format!("no enumeration {name} to extend")))?;
    let old_path = tiledb_runtime::storage::RelPath::parse(&format!(
        "__schema/__enumerations/{}",
        String::from_utf8_lossy(&reference.path)
    ))?;
    let tile = tiledb_runtime::tile::generic::load_generic_tile_file(storage, &old_path, key)?;
    let mut extended: stored::Enumeration =
        tiledb_runtime::format::io::read_exact_from(&tile.payload, (), "Enumeration")?;
    let values = spec
        .get("values")
        .ok_or_else(|| usage("an extension without values"))?;
    let added = column_values(extended.datatype, extended.cell_val_num, values)?;
    for cell in &added {
        match extended.offsets.as_mut() {
            Some(offsets) => offsets.extend((extended.data.len() as u64).to_le_bytes()),
            None if extended.cell_val_num == u32::MAX => {
                return Err(usage(format!("enumeration {name} has no offsets")))
            }
            None => {}
        }
        extended.data.extend_from_slice(cell);
    }
    let (label, _) = tiledb_runtime::directory::timestamped_name::new_label()?;
    extended.path = format!("__{label}_0").into_bytes();
    write::write_enumeration(
        storage,
        &String::from_utf8_lossy(&extended.path),
        &extended,
        key,
    )?;
    reference.path = extended.path;
    Ok(())
}

/// Builds the stored schema (format 22) a recipe's `[schema]` describes,
/// with TileDB's defaults for what the recipe leaves out.
pub fn stored_schema(schema: &Value) -> Result<stored::ArraySchema> {
    Ok(stored_schema_parts(schema)?.0)
}

/// A dimension label of a recipe.
struct LabelSpec {
    name: String,
    dim_index: u32,
    datatype: Datatype,
    order: stored::DataOrder,
}

fn label_specs(schema: &Value) -> Result<Vec<LabelSpec>> {
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

/// The schema of an ordered label's array (`__labels/l<i>`): dense, one
/// dimension `index` shaped like the labelled one, one attribute `label`
/// carrying the order.
fn label_schema(
    main: &stored::ArraySchema,
    label: &stored::DimensionLabel,
) -> Result<stored::ArraySchema> {
    let mut dim = main
        .domain
        .dimensions
        .get(label.dim_index as usize)
        .cloned()
        .ok_or_else(|| usage("a label on a missing dimension"))?;
    dim.name = b"index".to_vec();
    dim.filters = Some(FilterPipeline::new(Vec::new()).to_stored());
    let mut schema = main.clone();
    schema.array_type = stored::ArrayType::Dense;
    schema.tile_order = stored::Layout::RowMajor;
    schema.cell_order = stored::Layout::RowMajor;
    schema.capacity = 10000;
    schema.allows_dups = false;
    schema.coords_filters = FilterPipeline::new(vec![Filter::Zstd { level: -1 }]).to_stored();
    schema.offsets_filters = FilterPipeline::new(vec![Filter::Zstd { level: -1 }]).to_stored();
    schema.validity_filters =
        Some(FilterPipeline::new(vec![Filter::Rle { level: -1 }]).to_stored());
    schema.domain.dimensions = vec![dim];
    schema.attributes = vec![stored::Attribute {
        name: label.label_attr_name.clone(),
        datatype: label.label_datatype,
        cell_val_num: 1,
        filters: FilterPipeline::new(Vec::new()).to_stored(),
        fill: Some(fill_default(label.label_datatype, 1)),
        nullable: false,
        fill_validity: 0,
        order: label.label_order,
        enumeration_name: Some(Vec::new()),
    }];
    schema.labels = Some(Vec::new());
    schema.enumerations = Some(Vec::new());
    Ok(schema)
}

/// The enumerations of a recipe's schema, each with a fresh file name
/// (`__<label>_0`).
fn enumerations(schema: &Value) -> Result<Vec<stored::Enumeration>> {
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
pub fn stored_schema_parts(
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
                    uri: format!("__labels/l{i}").into_bytes(),
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
        // An empty current domain (version 0, empty flag set).
        current_domain: Some(vec![0, 0, 0, 0, 1]),
    };
    let mut stored = stored;
    if let Some(bounds) = schema.get("current_domain").and_then(Value::as_array) {
        stored.current_domain = Some(current_domain_bytes(&stored, bounds)?);
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
fn current_domain_bytes(stored: &stored::ArraySchema, bounds: &[Value]) -> Result<Vec<u8>> {
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
    let domain = stored::CurrentDomain {
        empty: false,
        domain_type: Some(stored::CurrentDomainType::Ndrectangle),
        ndrectangle: Some(stored::NDRectangle { ranges }),
    };
    tiledb_runtime::format::io::write_to_vec(
        &domain,
        stored::CurrentDomainBinWriteArgs::builder()
            .dims(shapes)
            .finalize(),
        "CurrentDomain",
    )
}

fn timestamp(step: &Value) -> Result<u64> {
    step.get("timestamp")
        .and_then(Value::as_integer)
        .map(|t| t as u64)
        .ok_or_else(|| usage("a step without a timestamp"))
}

/// One column of a write step.
fn column(
    step: &Value,
    table: &str,
    name: &str,
    datatype: Datatype,
    cvn: Option<u32>,
    nullable: bool,
) -> Result<Column> {
    let data = step
        .get(table)
        .and_then(|d| d.get(name))
        .ok_or_else(|| usage(format!("no data for {name}")))?;
    let cells = column_values(datatype, cvn.unwrap_or(u32::MAX), data)?;
    // A write that lists no validity for a nullable field writes every cell
    // valid (a TOML recipe has no null value), as the tiledb-py adapter does.
    let validity = if nullable {
        match step
            .get("validity")
            .and_then(|v| v.get(name))
            .and_then(Value::as_array)
        {
            Some(v) => Some(v.iter().map(|x| x.as_integer().unwrap_or(1) != 0).collect()),
            None => Some(vec![true; cells.len()]),
        }
    } else {
        None
    };
    Ok(Column { cells, validity })
}

fn write_step(
    storage: &dyn Storage,
    schema: &ArraySchema,
    step: &Value,
    key: Option<[u8; 32]>,
) -> Result<()> {
    let layout = get_str(step, "layout");
    let mut input = FragmentInput {
        timestamp: timestamp(step)?,
        key,
        ..Default::default()
    };
    for a in &schema.attributes {
        input.attrs.push(column(
            step,
            "data",
            &a.name,
            a.datatype,
            a.cell_val_num,
            a.nullable,
        )?);
    }
    if schema.is_dense() {
        match layout.unwrap_or("row-major") {
            "row-major" => {}
            "col-major" => input.col_major = true,
            other => return Err(unsupported(format!("dense writes in {other} layout"))),
        }
        let sub = step
            .get("subarray")
            .and_then(Value::as_array)
            .ok_or_else(|| usage("a dense write without a subarray"))?;
        let mut ranges = Vec::new();
        for r in sub {
            let r = r.as_array().ok_or_else(|| usage("bad subarray"))?;
            let bound = |v: Option<&Value>| -> Result<i128> {
                values::integer(v.ok_or_else(|| usage("bad subarray"))?)
            };
            ranges.push((bound(r.first())?, bound(r.get(1))?));
        }
        input.subarray = Some(ranges);
    } else {
        if matches!(layout, Some(l) if l != "unordered" && l != "global") {
            return Err(unsupported("sparse writes in row- or col-major layout"));
        }
        for d in &schema.dimensions {
            let cvn = if d.var { None } else { Some(1) };
            input
                .dims
                .push(column(step, "coords", &d.name, d.datatype, cvn, false)?);
        }
    }
    write::write_fragment(storage, schema, &input)?;
    Ok(())
}

fn meta_step(
    storage: &dyn Storage,
    step: &Value,
    delete: bool,
    array_key: Option<[u8; 32]>,
) -> Result<()> {
    let key = get_str(step, "key").ok_or_else(|| usage("a metadata step without a key"))?;
    let entry = if delete {
        stored::MetadataEntry {
            key: key.as_bytes().to_vec(),
            deleted: true,
            value_type: stored::Datatype::Any,
            value_num: 0,
            value: None,
        }
    } else {
        let datatype = datatype_by_name(get_str(step, "type").unwrap_or("INT32"))?;
        let v = step
            .get("values")
            .ok_or_else(|| usage("a metadata put without values"))?;
        let bytes = match v {
            Value::String(_) => cell_bytes(datatype, u32::MAX, v)?,
            Value::Array(items) => {
                let mut out = Vec::new();
                for item in items {
                    out.extend(values::value_bytes(datatype, item)?);
                }
                out
            }
            other => return Err(usage(format!("bad metadata values {other}"))),
        };
        stored::MetadataEntry {
            key: key.as_bytes().to_vec(),
            deleted: false,
            value_type: datatype,
            value_num: (bytes.len() as u64 / datatype.size().max(1)) as u32,
            value: Some(bytes),
        }
    };
    // Group metadata steps carry no timestamp: TileDB's clock, as now.
    let at = timestamp(step).unwrap_or(0);
    write::write_metadata(storage, vec![entry], at, array_key.as_ref())?;
    Ok(())
}

/// The `config` table and `timestamp_range` of a fragments consolidation
/// step, as TileDB receives them: each `sm.consolidation.*` value as text,
/// and the range as `sm.consolidation.timestamp_start` / `timestamp_end`
/// (which override the same keys of `config`).
fn consolidation_config(step: &Value) -> Result<tiledb_runtime::consolidate::ConsolidationConfig> {
    let mut config = tiledb_runtime::consolidate::ConsolidationConfig::default();
    if let Some(table) = step.get("config") {
        let table = table
            .as_table()
            .ok_or_else(|| Error::Usage("consolidate: config must be a table".into()))?;
        for (key, value) in table {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Integer(n) => n.to_string(),
                Value::Float(x) => x.to_string(),
                Value::Boolean(b) => b.to_string(),
                _ => return Err(Error::Usage(format!("consolidate: {key} is not a scalar"))),
            };
            // The mode is the step's own `mode`.
            if key == "sm.consolidation.mode" {
                if text != "fragments" {
                    return Err(unsupported(format!("consolidation mode {text} in config")));
                }
                continue;
            }
            config
                .set(key, &text)
                .map_err(|e| unsupported(format!("consolidation config: {e}")))?;
        }
    }
    if let Some(range) = step.get("timestamp_range") {
        let bounds: Vec<u64> = range
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_integer().and_then(|n| u64::try_from(n).ok()))
                    .collect()
            })
            .unwrap_or_default();
        let [start, end] = bounds[..] else {
            return Err(Error::Usage(
                "consolidate: timestamp_range must be [start, end]".into(),
            ));
        };
        config.timestamp_start = start;
        config.timestamp_end = end;
    }
    Ok(config)
}

fn consolidate_step(storage: &dyn Storage, root: &Path, step: &Value) -> Result<()> {
    let mode = get_str(step, "mode").unwrap_or("fragments");
    if mode != "fragments"
        && (step.get("config").is_some() || step.get("timestamp_range").is_some())
    {
        return Err(unsupported(format!(
            "consolidation of {mode} with a config or a time range"
        )));
    }
    match mode {
        "fragments" => {
            let config = consolidation_config(step)?;
            tiledb_runtime::consolidate::consolidate_fragments_with(root, &config).map(drop)
        }
        "fragment_meta" => {
            tiledb_runtime::consolidate::consolidate_fragment_meta(storage).map(drop)
        }
        "commits" => tiledb_runtime::consolidate::consolidate_commits(storage).map(drop),
        "array_meta" => tiledb_runtime::consolidate::consolidate_array_meta(root).map(drop),
        other => Err(unsupported(format!("consolidation mode {other}"))),
    }
}

fn vacuum_step(storage: &dyn Storage, step: &Value) -> Result<()> {
    match get_str(step, "mode").unwrap_or("fragments") {
        "fragments" => tiledb_runtime::vacuum::vacuum_fragments(storage).map(drop),
        "fragment_meta" => tiledb_runtime::vacuum::vacuum_fragment_meta(storage).map(drop),
        "commits" => tiledb_runtime::vacuum::vacuum_commits(storage).map(drop),
        "array_meta" => tiledb_runtime::vacuum::vacuum_array_meta(storage).map(drop),
        other => Err(unsupported(format!("vacuum mode {other}"))),
    }
}

/// An array created by a recipe: its folder and current schema.
struct ArrayState {
    root: PathBuf,
    stored: stored::ArraySchema,
    schema: ArraySchema,
    /// `(label name, labelled dimension, label array schema)`.
    labels: Vec<(String, usize, ArraySchema, PathBuf)>,
}

/// Creates the array `uri` (relative to `out_dir`) with its enumerations.
fn create(out_dir: &Path, uri: &str, spec: &Value, key: Option<[u8; 32]>) -> Result<ArrayState> {
    let (stored, enums) = stored_schema_parts(spec)?;
    let root = out_dir.join(uri);
    std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, &e))?;
    let storage = LocalStorage::new(&root);
    // Enumeration files first: the schema refers to them.
    if !enums.is_empty() {
        storage.create_dir(&tiledb_runtime::storage::RelPath::parse(
            "__schema/__enumerations",
        )?)?;
        for e in &enums {
            write::write_enumeration(&storage, &String::from_utf8_lossy(&e.path), e, key.as_ref())?;
        }
    }
    let mut labels = Vec::new();
    for label in stored.labels.iter().flatten() {
        let label_root = root.join(String::from_utf8_lossy(&label.uri).as_ref());
        std::fs::create_dir_all(&label_root).map_err(|e| Error::io(&label_root, &e))?;
        let label_storage = LocalStorage::new(&label_root);
        let loaded = write::create_array(
            &label_storage,
            &label_schema(&stored, label)?,
            0,
            key.as_ref(),
        )?;
        labels.push((
            String::from_utf8_lossy(&label.name).into_owned(),
            label.dim_index as usize,
            loaded,
            label_root,
        ));
    }
    let schema = write::create_array(&storage, &stored, 0, key.as_ref())?;
    Ok(ArrayState {
        root,
        stored,
        schema,
        labels,
    })
}

/// A group: `__tiledb_group.tdb` (empty), `__group/`, `__meta/`.
fn create_group(out_dir: &Path, uri: &str) -> Result<()> {
    let root = out_dir.join(uri);
    std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, &e))?;
    let storage = LocalStorage::new(&root);
    storage.create_dir(&tiledb_runtime::storage::RelPath::parse("__group")?)?;
    storage.create_dir(&tiledb_runtime::storage::RelPath::parse("__meta")?)?;
    storage.write(
        &tiledb_runtime::storage::RelPath::parse("__tiledb_group.tdb")?,
        &[],
    )
}

/// Adds a member and writes the group's details (format 2: every current
/// member, newest first, as TileDB writes them) to a new `__group` file.
fn group_add(
    out_dir: &Path,
    uri: &str,
    members: &mut Vec<stored::GroupMember>,
    step: &Value,
    arrays: &BTreeMap<String, ArrayState>,
) -> Result<()> {
    let member = get_str(step, "member").ok_or_else(|| usage("group_add without a member"))?;
    let relative = step
        .get("relative")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if !relative {
        return Err(unsupported("absolute group members"));
    }
    let member_uri = format!("{uri}/{member}");
    let object_type = if arrays.contains_key(&member_uri) {
        stored::ObjectType::Array
    } else {
        stored::ObjectType::Group
    };
    let name = get_str(step, "name");
    members.insert(
        0,
        stored::GroupMember {
            version: 2,
            object_type,
            relative,
            uri: member.as_bytes().to_vec(),
            name_set: name.is_some(),
            name: name.map(|n| n.as_bytes().to_vec()),
            deleted: false,
        },
    );
    let details = stored::GroupDetails {
        version: 2,
        members: members.clone(),
    };
    let payload = tiledb_runtime::format::io::write_to_vec(&details, (), "GroupDetails")?;
    let tile = tiledb_runtime::tile::generic::write_generic_tile(&payload, WRITE_VERSION, None)?;
    let name = tiledb_runtime::directory::TimestampedName::generate(0, 0, Some(2), None)?;
    let storage = LocalStorage::new(out_dir.join(uri));
    storage.write(
        &tiledb_runtime::storage::RelPath::parse("__group")?.join(name.as_str())?,
        &tile,
    )
}

/// Replays the recipe `case_toml` (the text of a case file) into `out_dir`,
/// which receives the case's folders (`array`, or the case's `uri`).
pub fn replay_case(case_toml: &str, out_dir: &Path) -> Result<()> {
    replay_case_steps(case_toml, out_dir, usize::MAX, &mut |_, _| {})
}

/// The operations of a recipe in the order a replay performs them: `create`
/// for the case's `[schema]` (when it has one), then each step's `op`.
pub fn recipe_operations(case_toml: &str) -> Result<Vec<String>> {
    let case: Value =
        toml::from_str(case_toml).map_err(|e| usage(format!("not a case file: {e}")))?;
    let mut ops = Vec::new();
    if case.get("schema").is_some() {
        ops.push("create".to_string());
    }
    for step in case
        .get("steps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        ops.push(get_str(step, "op").unwrap_or("?").to_string());
    }
    Ok(ops)
}

/// Performs operation `index` of [`recipe_operations`] again on the folders
/// a replay left in `out_dir`. Only consolidation and vacuum, which need
/// nothing of the replay's state but the folder: a crash test finishes an
/// interrupted one this way.
pub fn rerun_operation(case_toml: &str, out_dir: &Path, index: usize) -> Result<()> {
    let case: Value =
        toml::from_str(case_toml).map_err(|e| usage(format!("not a case file: {e}")))?;
    let step_index = index
        .checked_sub(usize::from(case.get("schema").is_some()))
        .ok_or_else(|| usage("the array's creation cannot be run again"))?;
    let step = case
        .get("steps")
        .and_then(Value::as_array)
        .and_then(|steps| steps.get(step_index))
        .ok_or_else(|| usage(format!("the recipe has no operation {index}")))?;
    let main_uri = get_str(&case, "uri").unwrap_or("array");
    let root = out_dir.join(get_str(step, "uri").unwrap_or(main_uri));
    let storage = LocalStorage::new(&root);
    match get_str(step, "op") {
        Some("consolidate") => consolidate_step(&storage, &root, step),
        Some("vacuum") => vacuum_step(&storage, step),
        other => Err(unsupported(format!(
            "running the {} step again",
            other.unwrap_or("unnamed")
        ))),
    }
}

/// [`replay_case`], performing only the first `limit` operations of
/// [`recipe_operations`] and calling `on_operation(index, op)` as each
/// starts: a crash test kills the replay part way and compares what is
/// left with a replay stopped after the operations that had finished.
pub fn replay_case_steps(
    case_toml: &str,
    out_dir: &Path,
    limit: usize,
    on_operation: &mut dyn FnMut(usize, &str),
) -> Result<()> {
    let mut started = 0usize;
    let mut begin = |op: &str| {
        if started >= limit {
            return false;
        }
        on_operation(started, op);
        started += 1;
        true
    };
    let case: Value =
        toml::from_str(case_toml).map_err(|e| usage(format!("not a case file: {e}")))?;
    if case.get("base").is_some() {
        return Err(usage("negative cases are made by mutation, not written"));
    }
    let key: Option<[u8; 32]> = match case.get("encryption") {
        None => None,
        Some(e) => {
            if get_str(e, "type") != Some("AES_256_GCM") {
                return Err(unsupported("encryption other than AES_256_GCM"));
            }
            let k = get_str(e, "key").unwrap_or_default().as_bytes();
            Some(
                k.try_into()
                    .map_err(|_| usage("an AES-256-GCM key must be 32 bytes"))?,
            )
        }
    };
    let main_uri = get_str(&case, "uri").unwrap_or("array");
    let mut arrays: BTreeMap<String, ArrayState> = BTreeMap::new();
    let mut groups: BTreeMap<String, Vec<stored::GroupMember>> = BTreeMap::new();
    if let Some(schema_spec) = case.get("schema") {
        if !begin("create") {
            return Ok(());
        }
        let state = create(out_dir, main_uri, schema_spec, key)?;
        arrays.insert(main_uri.to_string(), state);
    }
    let no_steps = Vec::new();
    let steps = case
        .get("steps")
        .and_then(Value::as_array)
        .unwrap_or(&no_steps);
    for step in steps {
        let uri = get_str(step, "uri").unwrap_or(main_uri).to_string();
        let op = get_str(step, "op").ok_or_else(|| usage("a step without an op"))?;
        if !begin(op) {
            return Ok(());
        }
        match op {
            "create_array" => {
                let spec = step
                    .get("schema")
                    .or(case.get("member_schema"))
                    .ok_or_else(|| usage("create_array without a schema"))?;
                let state = create(out_dir, &uri, spec, key)?;
                arrays.insert(uri, state);
                continue;
            }
            "create_group" => {
                create_group(out_dir, &uri)?;
                groups.insert(uri, Vec::new());
                continue;
            }
            "group_add" => {
                let members = groups
                    .get_mut(&uri)
                    .ok_or_else(|| usage(format!("no group {uri}")))?;
                group_add(out_dir, &uri, members, step, &arrays)?;
                continue;
            }
            "group_meta_put" => {
                let storage = LocalStorage::new(out_dir.join(&uri));
                meta_step(&storage, step, false, None)?;
                continue;
            }
            _ => {}
        }
        let state = arrays
            .get_mut(&uri)
            .ok_or_else(|| usage(format!("no array {uri}")))?;
        let storage = LocalStorage::new(&state.root);
        match op {
            "write" => {
                // Label values go to the label arrays first, the array last.
                for (name, dim, label_schema, label_root) in &state.labels {
                    if step.get("data").and_then(|d| d.get(name)).is_none() {
                        continue;
                    }
                    let col = column(
                        step,
                        "data",
                        name,
                        label_schema.attributes[0].datatype,
                        Some(1),
                        false,
                    )?;
                    let sub = step
                        .get("subarray")
                        .and_then(Value::as_array)
                        .and_then(|s| s.get(*dim))
                        .and_then(Value::as_array)
                        .ok_or_else(|| usage("a label write needs the subarray"))?;
                    let bound = |v: Option<&Value>| -> Result<i128> {
                        values::integer(v.ok_or_else(|| usage("bad subarray"))?)
                    };
                    let input = FragmentInput {
                        timestamp: timestamp(step)?,
                        attrs: vec![col],
                        subarray: Some(vec![(bound(sub.first())?, bound(sub.get(1))?)]),
                        key,
                        ..Default::default()
                    };
                    write::write_fragment(&LocalStorage::new(label_root), label_schema, &input)?;
                }
                write_step(&storage, &state.schema, step, key)?
            }
            "meta_put" => meta_step(&storage, step, false, key)?,
            "meta_delete" => meta_step(&storage, step, true, key)?,
            "delete" => {
                let text = get_str(step, "condition")
                    .ok_or_else(|| usage("a delete step without a condition"))?;
                let ast = condition::negate(condition::parse(text, &state.schema)?);
                write::write_delete(&storage, ast, timestamp(step)?, key.as_ref())?;
            }
            "evolve" => {
                let (next, loaded) = evolve(&storage, &state.stored, step, key.as_ref())?;
                state.stored = next;
                state.schema = loaded;
            }
            "consolidate" => consolidate_step(&storage, &state.root, step)?,
            "vacuum" => vacuum_step(&storage, step)?,
            other => return Err(unsupported(format!("the {other} step"))),
        }
    }
    Ok(())
}
