//! `tdb info`: the schema, fragments and metadata of an array, or the
//! members and metadata of a group.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{json, Map, Value};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::directory::{object_type, ObjectType};
use tiledb_runtime::metadata::group_contents::GroupContents;
use tiledb_runtime::metadata::Metadata;
use tiledb_runtime::schema::Scalar;

use crate::key::KeyArgs;
use crate::values::scalar_json;
use crate::{output_error, Failure};

#[derive(clap::Args)]
pub struct Args {
    /// The array or group: a folder or a URL (`s3://bucket/array`, …).
    path: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Open at time T, or over the range START..END (inclusive):
    /// milliseconds since the epoch or ISO-8601 text (UTC).
    #[arg(long, value_name = "T|START..END")]
    at: Option<String>,
    #[command(flatten)]
    key: KeyArgs,
}

fn bound(dt: tiledb_runtime::filter::Datatype, bytes: &[u8]) -> Value {
    match Scalar::decode(dt, bytes) {
        Some(Scalar::Bytes(b)) => json!(String::from_utf8_lossy(&b)),
        _ => scalar_json(dt, bytes),
    }
}

pub(crate) fn metadata_json(meta: &Metadata) -> Value {
    let mut out = Map::new();
    for (k, v) in &meta.entries {
        let value = if matches!(
            v.datatype,
            tiledb_runtime::filter::Datatype::StringAscii
                | tiledb_runtime::filter::Datatype::StringUtf8
                | tiledb_runtime::filter::Datatype::Char
        ) {
            json!(String::from_utf8_lossy(&v.bytes))
        } else {
            let size = v.datatype.size().max(1) as usize;
            Value::Array(
                v.bytes
                    .chunks_exact(size)
                    .map(|c| scalar_json(v.datatype, c))
                    .collect(),
            )
        };
        out.insert(
            k.clone(),
            json!({"type": v.datatype.name(), "value": value}),
        );
    }
    Value::Object(out)
}

/// A pipeline's filter names (the text output leaves their options out).
fn filter_names(filters: &Value) -> Value {
    Value::Array(
        filters
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| f["name"].clone())
            .collect(),
    )
}

fn array_json(array: &Array) -> Value {
    let schema = array.schema();
    let fragments: Vec<Value> = array
        .fragments()
        .iter()
        .map(|f| {
            let (t1, t2) = f.name.timestamp_range();
            let ned = f.non_empty_domain.as_ref().map(|ned| {
                Value::Array(
                    ned.iter()
                        .zip(&f.schema.dimensions)
                        .map(|((lo, hi), d)| json!([bound(d.datatype, lo), bound(d.datatype, hi)]))
                        .collect(),
                )
            });
            let cells = if f.dense {
                f.non_empty_domain.as_ref().map(|ned| {
                    ned.iter()
                        .zip(&f.schema.dimensions)
                        .map(|((lo, hi), d)| {
                            match (
                                Scalar::decode(d.datatype, lo).and_then(|s| s.as_int()),
                                Scalar::decode(d.datatype, hi).and_then(|s| s.as_int()),
                            ) {
                                (Some(lo), Some(hi)) => (hi - lo + 1).max(0) as u128,
                                _ => 0,
                            }
                        })
                        .product::<u128>()
                })
            } else if f.tile_num == 0 {
                Some(0)
            } else {
                Some(
                    (f.tile_num as u128 - 1) * f.schema.capacity as u128
                        + f.cell_num(f.tile_num - 1, 0) as u128,
                )
            };
            json!({
                "name": f.name.as_str(),
                "timestamps": [t1, t2],
                "format_version": f.version,
                "type": if f.dense { "dense" } else { "sparse" },
                "schema": f.schema.name,
                "non_empty_domain": ned,
                "cell_count": cells.map(|c| json!(c as u64)),
                "tile_count": f.tile_num,
            })
        })
        .collect();
    let metadata = match array.metadata() {
        Ok(m) => metadata_json(&m),
        Err(e) => json!({"error": e.to_string()}),
    };
    json!({"type": "array", "schema": crate::schema_doc::schema_doc(schema).unwrap_or_else(|e| json!({"error": e})), "fragments": fragments, "metadata": metadata})
}

fn print_text(out: &mut impl Write, doc: &Value) -> std::io::Result<()> {
    if doc["type"] == "group" {
        writeln!(out, "group")?;
        for m in doc["members"].as_array().into_iter().flatten() {
            writeln!(
                out,
                "  member {} ({}) -> {}",
                m["name"].as_str().unwrap_or(""),
                m["type"].as_str().unwrap_or(""),
                m["uri"].as_str().unwrap_or("")
            )?;
        }
    } else {
        let s = &doc["schema"];
        writeln!(
            out,
            "{} array, schema {} (format {}), cell order {}, tile order {}, capacity {}, duplicates {}",
            s["array_type"].as_str().unwrap_or(""),
            s["name"].as_str().unwrap_or(""),
            s["version"],
            s["cell_order"].as_str().unwrap_or(""),
            s["tile_order"].as_str().unwrap_or(""),
            s["capacity"],
            s["allows_duplicates"]
        )?;
        for d in s["dimensions"].as_array().into_iter().flatten() {
            writeln!(
                out,
                "  dimension {} {} domain {} extent {} filters {}",
                d["name"].as_str().unwrap_or(""),
                d["type"].as_str().unwrap_or(""),
                d["domain"],
                d["tile_extent"],
                filter_names(&d["filters"])
            )?;
        }
        for a in s["attributes"].as_array().into_iter().flatten() {
            writeln!(
                out,
                "  attribute {} {} x{} nullable {} filters {}",
                a["name"].as_str().unwrap_or(""),
                a["type"].as_str().unwrap_or(""),
                a["cell_val_num"],
                a["nullable"],
                filter_names(&a["filters"])
            )?;
        }
        let frags = doc["fragments"].as_array().cloned().unwrap_or_default();
        writeln!(out, "{} fragment(s)", frags.len())?;
        for f in frags {
            writeln!(
                out,
                "  {} t={} v{} {} cells {} non-empty {}",
                f["name"].as_str().unwrap_or(""),
                f["timestamps"],
                f["format_version"],
                f["type"].as_str().unwrap_or(""),
                f["cell_count"],
                f["non_empty_domain"]
            )?;
        }
    }
    let meta = doc["metadata"].as_object().cloned().unwrap_or_default();
    writeln!(out, "{} metadata key(s)", meta.len())?;
    for (k, v) in meta {
        writeln!(
            out,
            "  {k} ({}) = {}",
            v["type"].as_str().unwrap_or(""),
            v["value"]
        )?;
    }
    Ok(())
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    let key = args.key.resolve()?;
    let mut options = OpenOptions {
        key,
        ..OpenOptions::default()
    };
    if let Some(at) = &args.at {
        (options.timestamp_start, options.timestamp_end) = crate::read::open_range(at)?;
    }
    let where_ = |e: tiledb_runtime::Error| format!("{}: {e}", args.path.display());
    crate::location::require_folder(&args.path)?;
    let storage = crate::location::storage(&args.path)?;
    let doc = match object_type(storage.as_ref()).map_err(where_)? {
        ObjectType::Group => {
            let g = GroupContents::load(
                storage.as_ref(),
                options.timestamp_start,
                options.timestamp_end,
                key.as_ref(),
            )
            .map_err(where_)?;
            json!({
                "type": "group",
                "members": g.members.iter().map(|m| json!({"name": m.name, "uri": m.uri, "relative": m.relative, "type": if m.is_array {"array"} else {"group"}})).collect::<Vec<_>>(),
                "metadata": metadata_json(&g.metadata),
            })
        }
        ObjectType::Array => array_json(&Array::open(storage, options).map_err(where_)?),
        _ => {
            return Err(Failure::Message(format!(
                "{}: neither a TileDB array nor a group",
                args.path.display()
            )))
        }
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{doc}").map_err(output_error)?;
    } else {
        print_text(&mut out, &doc).map_err(output_error)?;
    }
    Ok(ExitCode::SUCCESS)
}
