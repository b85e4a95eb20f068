//! `tdb evolve ARRAY`: schema evolution from a document (`--spec FILE`,
//! JSON or TOML) and/or flags — attributes added and dropped, enumerations
//! added, extended and dropped, the current domain expanded — checked as
//! TileDB checks an evolution; a refused one writes nothing.
//!
//! The document's keys: `add_attributes` and `add_enumerations` (as
//! `tdb info --json` prints attributes and enumerations), `drop_attributes`
//! and `drop_enumerations` (names), `extend_enumerations`
//! (`[{"name", "values"}]`, values appended), `current_domain`
//! (`[[lo, hi], …]`, one range per dimension), `timestamp`.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;
use tiledb_runtime::array::OpenOptions;
use tiledb_runtime::schema::builder::AttributeSpec;
use tiledb_runtime::schema::ArraySchema;
use tiledb_runtime::write::SchemaEvolution;

use crate::cells::cell_bytes;
use crate::key::KeyArgs;
use crate::schema_doc::{attribute_from, enumeration_from};
use crate::values::parse_bound;
use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    /// The array: a folder or a URL (`s3://bucket/array`, …).
    array: PathBuf,
    /// An evolution document (JSON, or TOML when the name ends in `.toml`).
    #[arg(long, value_name = "FILE")]
    spec: Option<PathBuf>,
    /// Add an attribute: NAME:TYPE, then optionally `:var` and/or `:nullable`.
    #[arg(long, value_name = "NAME:TYPE[:var][:nullable]")]
    add_attribute: Vec<String>,
    /// Drop an attribute.
    #[arg(long, value_name = "NAME")]
    drop_attribute: Vec<String>,
    /// Append values to an enumeration: NAME=V1,V2,…
    #[arg(long, value_name = "NAME=V1,V2")]
    extend_enumeration: Vec<String>,
    /// Drop an enumeration (no attribute may use it).
    #[arg(long, value_name = "NAME")]
    drop_enumeration: Vec<String>,
    /// The expanded current domain: LO:HI once per dimension, in order.
    #[arg(long, value_name = "LO:HI")]
    current_domain: Vec<String>,
    /// The new schema's timestamp (milliseconds since 1970; default now).
    #[arg(long)]
    timestamp: Option<u64>,
    #[command(flatten)]
    key: KeyArgs,
}

fn names(doc: &Value, key: &str) -> Result<Vec<String>, String> {
    doc.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("{key}: {v} is not a name"))
        })
        .collect()
}

fn enumeration_type(
    schema: &ArraySchema,
    name: &str,
) -> Result<(tiledb_runtime::filter::Datatype, Option<u32>), String> {
    schema
        .enumerations
        .iter()
        .find(|e| e.name == name)
        .map(|e| (e.datatype, e.cell_val_num))
        .ok_or_else(|| format!("the array has no enumeration {name}"))
}

/// The document's changes, added to `evolution`.
fn from_document(
    doc: &Value,
    schema: &ArraySchema,
    evolution: &mut SchemaEvolution,
) -> Result<(), String> {
    let err = |e: tiledb_runtime::Error| e.to_string();
    for e in doc
        .get("add_enumerations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        evolution
            .add_enumeration(enumeration_from(e)?)
            .map_err(err)?;
    }
    for e in doc
        .get("extend_enumerations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = e
            .get("name")
            .and_then(Value::as_str)
            .ok_or("an extension without a name")?;
        let (t, cvn) = enumeration_type(schema, name)?;
        let values = e
            .get("values")
            .and_then(Value::as_array)
            .ok_or("an extension without values")?;
        let cells = values
            .iter()
            .map(|v| cell_bytes(t, cvn, v))
            .collect::<Result<_, _>>()?;
        evolution.extend_enumeration(name, cells).map_err(err)?;
    }
    for a in doc
        .get("add_attributes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        evolution.add_attribute(attribute_from(a)?).map_err(err)?;
    }
    for name in names(doc, "drop_attributes")? {
        evolution.drop_attribute(&name);
    }
    for name in names(doc, "drop_enumerations")? {
        evolution.drop_enumeration(&name);
    }
    if let Some(ranges) = doc.get("current_domain").and_then(Value::as_array) {
        let mut out = Vec::new();
        for (d, r) in schema.dimensions.iter().zip(ranges) {
            let bound = |i: usize| -> Result<Vec<u8>, String> {
                let v = r.get(i).ok_or("a current-domain range is [lo, hi]")?;
                cell_bytes(d.datatype, (!d.var).then_some(1), v)
            };
            out.push((bound(0)?, bound(1)?));
        }
        if ranges.len() != schema.dimensions.len() {
            return Err("the current domain needs one range per dimension".into());
        }
        evolution.expand_current_domain(out).map_err(err)?;
    }
    if let Some(t) = doc.get("timestamp").and_then(Value::as_u64) {
        evolution.timestamp(t);
    }
    Ok(())
}

/// The flags' changes, added to `evolution`.
fn from_flags(
    args: &Args,
    schema: &ArraySchema,
    evolution: &mut SchemaEvolution,
) -> Result<(), String> {
    let err = |e: tiledb_runtime::Error| e.to_string();
    for text in &args.extend_enumeration {
        let (name, values) = text
            .split_once('=')
            .ok_or_else(|| format!("--extend-enumeration {text}: NAME=V1,V2,…"))?;
        let (t, _) = enumeration_type(schema, name)?;
        let cells = values
            .split(',')
            .map(|v| parse_bound(t, v))
            .collect::<Result<_, _>>()?;
        evolution.extend_enumeration(name, cells).map_err(err)?;
    }
    for text in &args.add_attribute {
        let mut parts = text.split(':');
        let name = parts.next().unwrap_or_default();
        let t = parts
            .next()
            .ok_or_else(|| format!("--add-attribute {text}: NAME:TYPE"))?;
        let datatype = tiledb_runtime::filter::Datatype::ALL
            .iter()
            .copied()
            .find(|d| d.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| format!("--add-attribute {text}: unknown datatype {t}"))?;
        let mut spec = AttributeSpec::new(name, datatype);
        for flag in parts {
            match flag {
                "var" => spec = spec.var(),
                "nullable" => spec = spec.nullable(),
                other => return Err(format!("--add-attribute {text}: unknown option {other}")),
            }
        }
        evolution.add_attribute(spec).map_err(err)?;
    }
    for name in &args.drop_attribute {
        evolution.drop_attribute(name);
    }
    for name in &args.drop_enumeration {
        evolution.drop_enumeration(name);
    }
    if !args.current_domain.is_empty() {
        if args.current_domain.len() != schema.dimensions.len() {
            return Err(format!(
                "--current-domain: {} ranges for {} dimensions",
                args.current_domain.len(),
                schema.dimensions.len()
            ));
        }
        let mut out = Vec::new();
        for (d, text) in schema.dimensions.iter().zip(&args.current_domain) {
            let (lo, hi) = text
                .split_once(':')
                .ok_or_else(|| format!("--current-domain {text}: LO:HI"))?;
            out.push((parse_bound(d.datatype, lo)?, parse_bound(d.datatype, hi)?));
        }
        evolution.expand_current_domain(out).map_err(err)?;
    }
    if let Some(t) = args.timestamp {
        evolution.timestamp(t);
    }
    Ok(())
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    let at = |e: String| format!("{}: {e}", args.array.display());
    let options = OpenOptions {
        key: args.key.resolve()?,
        ..OpenOptions::default()
    };
    let array = crate::location::open_array(&args.array, options)?;
    let mut evolution = SchemaEvolution::new();
    if let Some(path) = &args.spec {
        let doc = crate::create::read_document(path)?;
        from_document(&doc, array.schema(), &mut evolution)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    from_flags(&args, array.schema(), &mut evolution).map_err(at)?;
    if evolution == SchemaEvolution::new() {
        return Err(Failure::Message(
            "nothing to evolve: give --spec or a change flag".into(),
        ));
    }
    array.evolve(&evolution).map_err(|e| at(e.to_string()))?;
    Ok(ExitCode::SUCCESS)
}
