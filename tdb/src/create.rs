//! `tdb create ARRAY --schema FILE`: an array from a schema document (the
//! JSON `tdb info --json` prints, or the same keys in TOML), checked as
//! TileDB checks a schema; refused, with nothing written, where an array
//! already is.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

use crate::key::KeyArgs;
use crate::schema_doc::builder_from;
use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    /// The folder of the new array, or a URL (`s3://bucket/array`, …).
    array: PathBuf,
    /// The schema document: JSON (`tdb info --json`, whole or its "schema"),
    /// or TOML when the file name ends in `.toml`.
    #[arg(long, value_name = "FILE")]
    schema: PathBuf,
    #[command(flatten)]
    key: KeyArgs,
}

fn toml_to_json(v: toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) if f.is_nan() => Value::from("NaN"),
        toml::Value::Float(f) if f.is_infinite() => {
            Value::from(if f > 0.0 { "Infinity" } else { "-Infinity" })
        }
        toml::Value::Float(f) => Value::from(f),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.into_iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => {
            Value::Object(t.into_iter().map(|(k, v)| (k, toml_to_json(v))).collect())
        }
    }
}

/// A JSON document, or TOML when the name ends in `.toml`.
pub fn read_document(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if path.extension().is_some_and(|e| e == "toml") {
        toml::from_str::<toml::Value>(&text)
            .map(toml_to_json)
            .map_err(|e| format!("{}: {e}", path.display()))
    } else {
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    let doc = read_document(&args.schema)?;
    let mut builder = builder_from(&doc).map_err(|e| format!("{}: {e}", args.schema.display()))?;
    if let Some(key) = args.key.resolve()? {
        builder.encryption_key = Some(key);
    }
    crate::location::create_array(&args.array, &builder)?;
    Ok(ExitCode::SUCCESS)
}
