//! `tdb write ARRAY --input FILE [--format json|csv|arrow|parquet]`: one
//! fragment from an Arrow IPC file or stream or a Parquet file (columns
//! named after fields, typed as `tdb read --format arrow` writes them: see
//! the runtime's `write::arrow`), from the CSV `tdb read --format csv`
//! prints (turned into its JSON form), or from the JSON `tdb read --format json` prints (`{"dimensions": {...}, "attributes": {...}}`,
//! one list of cells per field; null for a null cell; an enumerated
//! attribute's cells as enumeration values or indexes). A dense array's
//! coordinates must cover a box, which becomes the write's subarray. The
//! write is checked as TileDB checks one; a refused write writes nothing.

use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_ipc::reader::{FileReader, StreamReader};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::process::ExitCode;

use serde_json::Value;
use tiledb_runtime::array::OpenOptions;
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::schema::ArraySchema;
use tiledb_runtime::write::arrow::write_from_record_batches;
use tiledb_runtime::write::{dense_from_coordinates, Column, Write};

use crate::cells::cell_bytes;
use crate::create::read_document;
use crate::key::KeyArgs;
use crate::values::{is_bytes, is_text};
use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    /// The array folder, or a URL (`s3://bucket/array`, …).
    array: PathBuf,
    /// The cells: the JSON or CSV of `tdb read --format json|csv`, an
    /// Arrow IPC file or stream, or a Parquet file.
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// The input's format; by default from its extension (`.arrow`,
    /// `.arrows`, `.ipc`, `.feather` are Arrow, `.parquet` Parquet, `.csv` CSV, others JSON).
    #[arg(long, value_enum)]
    format: Option<InputFormat>,
    #[command(flatten)]
    key: KeyArgs,
}

/// The formats `tdb write` reads.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    Json,
    Csv,
    Arrow,
    Parquet,
}

impl InputFormat {
    fn of(path: &Path) -> InputFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some("arrow" | "arrows" | "ipc" | "feather") => InputFormat::Arrow,
            Some("parquet") => InputFormat::Parquet,
            Some("csv") => InputFormat::Csv,
            _ => InputFormat::Json,
        }
    }
}

/// How `tdb read --format csv` shows a field's values.
#[derive(Clone, Copy)]
enum Shown {
    /// As they are (text, hex bytes).
    Text,
    /// ISO-8601 text of this date or time type.
    Date(Datatype),
    /// JSON text (numbers, lists).
    Json,
}

impl Shown {
    fn of(dt: Datatype) -> Shown {
        if is_text(dt) || is_bytes(dt) {
            Shown::Text
        } else if crate::datetime::is_datetime(dt) {
            Shown::Date(dt)
        } else {
            Shown::Json
        }
    }
}

/// The CSV of `tdb read --format csv` (a header naming the fields, one
/// row per cell) as the JSON document of `tdb read --format json`: each
/// field as that JSON prints its cells (text as is, other values as JSON
/// text: numbers, lists, dates as ISO-8601 strings); an empty field of a
/// nullable attribute is null.
fn csv_document(schema: &ArraySchema, path: &Path) -> Result<Value, String> {
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let mut reader = csv::Reader::from_path(path).map_err(|e| at(&e))?;
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| at(&e))?
        .iter()
        .map(str::to_string)
        .collect();
    // Per column: (is a dimension, how its text reads, nullable).
    let mut kinds = Vec::new();
    for name in &header {
        let kind = if let Some((_, d)) = schema.dimension(name) {
            (true, Shown::of(d.datatype), false)
        } else if let Some((_, a)) = schema.attribute(name) {
            let shown = a
                .enumeration
                .as_deref()
                .and_then(|e| schema.enumeration(e))
                .map_or(a.datatype, |e| e.datatype);
            (false, Shown::of(shown), a.nullable)
        } else {
            return Err(at(&format!("the array has no field {name}")));
        };
        kinds.push(kind);
    }
    let mut cells: Vec<Vec<Value>> = vec![Vec::new(); header.len()];
    for (row, record) in reader.records().enumerate() {
        let record = record.map_err(|e| at(&e))?;
        if record.len() != header.len() {
            return Err(at(&format!(
                "row {}: {} fields, not {}",
                row + 1,
                record.len(),
                header.len()
            )));
        }
        for ((text, &(_, shown, nullable)), out) in record.iter().zip(&kinds).zip(&mut cells) {
            out.push(match shown {
                _ if text.is_empty() && nullable => Value::Null,
                Shown::Text => Value::from(text),
                // A date as its ISO-8601 text; one out of range prints as its number.
                Shown::Date(dt) if crate::datetime::parse(dt, text).is_ok() => Value::from(text),
                _ => serde_json::from_str(text).unwrap_or_else(|_| Value::from(text)),
            });
        }
    }
    let (mut dims, mut attrs) = (serde_json::Map::new(), serde_json::Map::new());
    for ((name, (is_dim, _, _)), values) in header.into_iter().zip(kinds).zip(cells) {
        let group = if is_dim { &mut dims } else { &mut attrs };
        group.insert(name, Value::Array(values));
    }
    Ok(serde_json::json!({"dimensions": dims, "attributes": attrs}))
}

/// The record batches of an Arrow IPC file or stream, or of a Parquet file.
fn record_batches(path: &Path, format: InputFormat) -> Result<Vec<RecordBatch>, String> {
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let file = || std::fs::File::open(path).map_err(|e| at(&e));
    match format {
        InputFormat::Parquet => {
            let reader = ParquetRecordBatchReaderBuilder::try_new(file()?)
                .and_then(ParquetRecordBatchReaderBuilder::build)
                .map_err(|e| at(&e))?;
            reader.map(|b| b.map_err(|e| at(&e))).collect()
        }
        _ => {
            // The file format starts with its magic; anything else is read as a stream.
            if let Ok(reader) = FileReader::try_new(file()?, None) {
                return reader.map(|b| b.map_err(|e| at(&e))).collect();
            }
            let reader = StreamReader::try_new(std::io::BufReader::new(file()?), None)
                .map_err(|e| at(&e))?;
            reader.map(|b| b.map_err(|e| at(&e))).collect()
        }
    }
}

/// A field's shape: `(datatype, values per cell, nullable)`.
type Shape = (Datatype, Option<u32>, bool);

/// The cells of one field, parsed as its type (an enumeration value turned
/// into its index).
fn column(schema: &ArraySchema, name: &str, shape: Shape, cells: &Value) -> Result<Column, String> {
    let (dt, cvn, nullable) = shape;
    let cells = cells
        .as_array()
        .ok_or_else(|| format!("{name}: a list of cells"))?;
    let enumeration = schema
        .attribute(name)
        .and_then(|(_, a)| a.enumeration.as_deref())
        .and_then(|e| schema.enumeration(e));
    let mut column = Column::new(name, dt, cvn, nullable);
    for (i, cell) in cells.iter().enumerate() {
        let at = |e: String| format!("{name}, cell {i}: {e}");
        if cell.is_null() {
            if !nullable {
                return Err(at("null, but the field is not nullable".into()));
            }
            column.push(
                &vec![0; cvn.map_or(0, |n| (u64::from(n) * dt.size()) as usize)],
                false,
            );
            continue;
        }
        let bytes = match enumeration {
            // A value of the enumeration (as `tdb read` prints it) first; a
            // number that is none is an index (as read prints one outside it).
            Some(e) => {
                let value = cell_bytes(e.datatype, e.cell_val_num, cell).ok();
                match value.and_then(|v| e.values.iter().position(|x| *x == v)) {
                    Some(index) => cell_bytes(dt, cvn, &Value::from(index as u64)).map_err(at)?,
                    None if cell.is_number() => cell_bytes(dt, cvn, cell).map_err(at)?,
                    None => {
                        return Err(at(format!(
                            "{cell} is not a value of enumeration {}",
                            e.name
                        )))
                    }
                }
            }
            None => cell_bytes(dt, cvn, cell).map_err(at)?,
        };
        column.push(&bytes, true);
    }
    Ok(column)
}

/// Every field of the input as a column; a dense array's coordinates
/// apart.
fn columns(schema: &ArraySchema, doc: &Value) -> Result<(Vec<Column>, Vec<Column>), String> {
    let group = |key: &str| {
        doc.get(key)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let (dims, attrs) = (group("dimensions"), group("attributes"));
    let mut coords = Vec::new();
    for (name, cells) in &dims {
        let (_, d) = schema
            .dimension(name)
            .ok_or_else(|| format!("the array has no dimension {name}"))?;
        coords.push(column(
            schema,
            name,
            (d.datatype, (!d.var).then_some(1), false),
            cells,
        )?);
    }
    let mut values = Vec::new();
    for (name, cells) in &attrs {
        let (_, a) = schema
            .attribute(name)
            .ok_or_else(|| format!("the array has no attribute {name}"))?;
        values.push(column(
            schema,
            name,
            (a.datatype, a.cell_val_num, a.nullable),
            cells,
        )?);
    }
    Ok((coords, values))
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    let format = args.format.unwrap_or_else(|| InputFormat::of(&args.input));
    let options = OpenOptions {
        key: args.key.resolve()?,
        ..OpenOptions::default()
    };
    let at = |e: String| format!("{}: {e}", args.input.display());
    let array = crate::location::open_array(&args.array, options)?;
    let schema = array.schema();
    let write = if matches!(format, InputFormat::Json | InputFormat::Csv) {
        let doc = if format == InputFormat::Csv {
            csv_document(schema, &args.input)?
        } else {
            read_document(&args.input)?
        };
        let (coords, attrs) = columns(schema, &doc).map_err(at)?;
        if schema.is_dense() {
            dense_from_coordinates(schema, &coords, attrs).map_err(|e| at(e.to_string()))?
        } else {
            Write::sparse(coords.into_iter().chain(attrs).collect())
        }
    } else {
        let batches = record_batches(&args.input, format)?;
        write_from_record_batches(schema, &batches, None).map_err(|e| at(e.to_string()))?
    };
    array
        .write(&write)
        .map_err(|e| format!("{}: {e}", args.array.display()))?;
    Ok(ExitCode::SUCCESS)
}
