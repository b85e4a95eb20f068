//! `tdb meta get|set|delete TARGET …`: the metadata of an array or a group,
//! read, put (typed values) and deleted. A put or delete is one metadata
//! file, checked as TileDB checks it first; a refused one writes nothing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;
use tiledb_runtime::array::OpenOptions;
use tiledb_runtime::directory::{object_type, ObjectType};
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::group::Group;
use tiledb_runtime::metadata::group_contents::GroupContents;
use tiledb_runtime::metadata::{Metadata, MetadataValue};
use tiledb_runtime::write::MetadataChange;

use crate::key::KeyArgs;
use crate::values::{is_bytes, is_text, parse_bound};
use crate::{output_error, Failure};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Print the metadata (all keys, or the ones named) as JSON: `{key: {type, value}}`.
    Get {
        /// The array or group: a folder or a URL (`s3://bucket/path`, …).
        target: PathBuf,
        /// Keys to print (all when none).
        keys: Vec<String>,
        #[command(flatten)]
        key: KeyArgs,
    },
    /// Put one value under KEY: text for string types, hexadecimal for BLOB and
    /// GEOM_WKB, else one or more numbers (dates as numbers or ISO 8601).
    Set {
        /// The array or group: a folder or a URL (`s3://bucket/path`, …).
        target: PathBuf,
        /// The metadata key.
        name: String,
        /// The values (none for an empty value).
        #[arg(allow_negative_numbers = true)]
        values: Vec<String>,
        /// The type of the values (any TileDB datatype but ANY).
        #[arg(long = "type", default_value = "STRING_UTF8")]
        datatype: String,
        /// The metadata file's timestamp (milliseconds since 1970; default now).
        #[arg(long)]
        timestamp: Option<u64>,
        #[command(flatten)]
        key: KeyArgs,
    },
    /// Delete keys (a key that is not there is no error, as in TileDB).
    Delete {
        /// The array or group: a folder or a URL (`s3://bucket/path`, …).
        target: PathBuf,
        /// The keys to delete.
        #[arg(required = true)]
        names: Vec<String>,
        /// The metadata file's timestamp (milliseconds since 1970; default now).
        #[arg(long)]
        timestamp: Option<u64>,
        #[command(flatten)]
        key: KeyArgs,
    },
}

/// What a path holds: an array or a group (anything else is refused).
pub(crate) fn target_kind(path: &Path) -> Result<ObjectType, Failure> {
    let storage = crate::location::storage(path)?;
    match object_type(storage.as_ref()).map_err(|e| format!("{}: {e}", path.display()))? {
        ObjectType::Invalid => Err(Failure::Message(format!(
            "{}: neither a TileDB array nor a group",
            path.display()
        ))),
        kind => Ok(kind),
    }
}

fn datatype_named(name: &str) -> Result<Datatype, String> {
    Datatype::ALL
        .iter()
        .copied()
        .find(|d| d.name().eq_ignore_ascii_case(name))
        .ok_or_else(|| format!("unknown datatype {name}"))
}

/// The value `set` puts: its words parsed as `datatype` values.
fn parse_value(datatype: Datatype, words: &[String]) -> Result<MetadataValue, String> {
    if datatype == Datatype::Any {
        // Refused before the words are read, as TileDB refuses the type.
        return MetadataValue::new(datatype, Vec::new()).map_err(|e| e.to_string());
    }
    let bytes = if is_text(datatype) || matches!(datatype, Datatype::GeomWkt) {
        words.join(" ").into_bytes()
    } else if is_bytes(datatype) {
        let text: String = words.concat();
        if !text.len().is_multiple_of(2) {
            return Err(format!("{text:?} is not hexadecimal"));
        }
        (0..text.len())
            .step_by(2)
            .map(|i| {
                u8::from_str_radix(text.get(i..i + 2).unwrap_or("zz"), 16)
                    .map_err(|_| format!("{text:?} is not hexadecimal"))
            })
            .collect::<Result<_, _>>()?
    } else if datatype.is_string() {
        // Wide strings: the text's code units.
        let text = words.join(" ");
        match datatype {
            Datatype::StringUtf16 | Datatype::StringUcs2 => {
                text.encode_utf16().flat_map(u16::to_le_bytes).collect()
            }
            _ => text
                .chars()
                .flat_map(|c| (c as u32).to_le_bytes())
                .collect(),
        }
    } else {
        let mut out = Vec::new();
        for w in words {
            out.extend(parse_bound(datatype, w)?);
        }
        out
    };
    MetadataValue::new(datatype, bytes).map_err(|e| e.to_string())
}

fn load(target: &Path, kind: ObjectType, key: Option<[u8; 32]>) -> Result<Metadata, Failure> {
    let at = |e: tiledb_runtime::Error| format!("{}: {e}", target.display());
    if kind == ObjectType::Group {
        let storage = crate::location::storage(target)?;
        Ok(
            GroupContents::load(storage.as_ref(), 0, u64::MAX, key.as_ref())
                .map_err(at)?
                .metadata,
        )
    } else {
        let options = OpenOptions {
            key,
            ..OpenOptions::default()
        };
        Ok(crate::location::open_array(target, options)?
            .metadata()
            .map_err(at)?)
    }
}

fn write(
    target: &Path,
    kind: ObjectType,
    key: Option<[u8; 32]>,
    changes: &[MetadataChange],
    timestamp: Option<u64>,
) -> Result<(), Failure> {
    let at = |e: tiledb_runtime::Error| format!("{}: {e}", target.display());
    let options = OpenOptions {
        key,
        ..OpenOptions::default()
    };
    let timestamp = timestamp.unwrap_or(0);
    if kind == ObjectType::Group {
        let storage = crate::location::storage(target)?;
        Group::update_metadata(storage.as_ref(), &options, changes, timestamp).map_err(at)?;
    } else {
        let array = crate::location::open_array(target, options)?;
        array.update_metadata(changes, timestamp).map_err(at)?;
    }
    Ok(())
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    match args.action {
        Action::Get { target, keys, key } => {
            let kind = target_kind(&target)?;
            let meta = load(&target, kind, key.resolve()?)?;
            let mut doc = crate::info::metadata_json(&meta);
            if !keys.is_empty() {
                let all = doc.as_object().cloned().unwrap_or_default();
                let mut picked = serde_json::Map::new();
                for k in &keys {
                    let v = all
                        .get(k)
                        .ok_or_else(|| format!("{}: no metadata key {k:?}", target.display()))?;
                    picked.insert(k.clone(), v.clone());
                }
                doc = Value::Object(picked);
            }
            writeln!(std::io::stdout().lock(), "{doc}").map_err(output_error)?;
        }
        Action::Set {
            target,
            name,
            values,
            datatype,
            timestamp,
            key,
        } => {
            let kind = target_kind(&target)?;
            let value = parse_value(datatype_named(&datatype)?, &values)?;
            let change = MetadataChange::Put(name, value);
            write(&target, kind, key.resolve()?, &[change], timestamp)?;
        }
        Action::Delete {
            target,
            names,
            timestamp,
            key,
        } => {
            let kind = target_kind(&target)?;
            let changes: Vec<MetadataChange> =
                names.into_iter().map(MetadataChange::Delete).collect();
            write(&target, kind, key.resolve()?, &changes, timestamp)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
