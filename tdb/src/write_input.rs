//! The input of `tdb write`, read in chunks so that a large input never
//! sits in memory whole: the record batches of an Arrow IPC file or stream
//! or of a Parquet file (as their readers give them), the rows of a CSV
//! file `CSV_CHUNK_ROWS` at a time, the cells of a JSON document
//! `JSON_CHUNK_CELLS` per field at a time (`crate::json_input`; a TOML one
//! is small and read whole). Each chunk becomes typed columns:
//! `(coordinates, attributes)`.

use std::path::Path;

use arrow_ipc::reader::{FileReader, StreamReader};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::schema::ArraySchema;
use tiledb_runtime::write::arrow::columns_from_record_batch;
use tiledb_runtime::write::Column;

use crate::cells::cell_bytes;
use crate::create::read_document;
use crate::json_input::JsonChunks;
use crate::values::{is_bytes, is_text};

/// Rows of a CSV input per chunk.
const CSV_CHUNK_ROWS: usize = 8192;

/// One chunk of the input: `(coordinates, attributes)`.
pub type Chunk = (Vec<Column>, Vec<Column>);

/// The chunks of an input, each an error naming the file when it fails.
pub type Chunks<'a> = Box<dyn Iterator<Item = Result<Chunk, String>> + 'a>;

/// The formats `tdb write` reads.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    Json,
    Csv,
    Arrow,
    Parquet,
}

impl InputFormat {
    /// The format a file's extension names (`.arrow`, `.arrows`, `.ipc`,
    /// `.feather` Arrow, `.parquet` Parquet, `.csv` CSV, others JSON).
    pub fn of(path: &Path) -> InputFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some("arrow" | "arrows" | "ipc" | "feather") => InputFormat::Arrow,
            Some("parquet") => InputFormat::Parquet,
            Some("csv") => InputFormat::Csv,
            _ => InputFormat::Json,
        }
    }
}

/// The input's chunks, read lazily.
pub fn chunks<'a>(
    schema: &'a ArraySchema,
    path: &'a Path,
    format: InputFormat,
) -> Result<Chunks<'a>, String> {
    let at = move |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let file = || std::fs::File::open(path).map_err(|e| at(&e));
    let of_batch = move |b: Result<arrow_array::RecordBatch, arrow_schema::ArrowError>| {
        let batch = b.map_err(|e| at(&e))?;
        columns_from_record_batch(schema, &batch).map_err(|e| at(&e))
    };
    Ok(match format {
        InputFormat::Json if path.extension().is_some_and(|e| e == "toml") => {
            let doc = read_document(path)?;
            Box::new(std::iter::once(
                columns(schema, &doc, 0).map_err(|e| at(&e)),
            ))
        }
        InputFormat::Json => Box::new(JsonChunks::open(path)?.map(move |chunk| {
            let (doc, first) = chunk?;
            columns(schema, &doc, first).map_err(|e| at(&e))
        })),
        InputFormat::Csv => Box::new(CsvChunks::open(schema, path)?),
        InputFormat::Parquet => {
            let reader = ParquetRecordBatchReaderBuilder::try_new(file()?)
                .and_then(ParquetRecordBatchReaderBuilder::build)
                .map_err(|e| at(&e))?;
            Box::new(reader.map(of_batch))
        }
        InputFormat::Arrow => {
            // The file format starts with its magic; anything else is read as a stream.
            if let Ok(reader) = FileReader::try_new(file()?, None) {
                return Ok(Box::new(reader.map(of_batch)));
            }
            let reader = StreamReader::try_new(std::io::BufReader::new(file()?), None)
                .map_err(|e| at(&e))?;
            Box::new(reader.map(of_batch))
        }
    })
}

/// The CSV of `tdb read --format csv` (a header naming the fields, one row
/// per cell; see `crate::csv_text`), chunk by chunk: each chunk's rows as
/// the JSON document of `tdb read --format json` would give them (text as
/// is, other values as JSON text: numbers, lists, dates as ISO-8601
/// strings). An empty unquoted field is null (on a text field that is not
/// nullable, the empty string); `""` is the empty string.
struct CsvChunks<'a> {
    schema: &'a ArraySchema,
    path: &'a Path,
    reader: crate::csv_text::Reader<std::io::BufReader<std::fs::File>>,
    header: Vec<String>,
    /// Per column: (is a dimension, how its text reads, nullable).
    kinds: Vec<(bool, Shown, bool)>,
    /// The index of the next row's cell.
    first: usize,
    done: bool,
}

impl<'a> CsvChunks<'a> {
    fn open(schema: &'a ArraySchema, path: &'a Path) -> Result<CsvChunks<'a>, String> {
        let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        let file = std::fs::File::open(path).map_err(|e| at(&e))?;
        let mut reader = crate::csv_text::Reader::new(std::io::BufReader::new(file));
        let header: Vec<String> = reader
            .next_record()
            .map_err(|e| at(&e))?
            .ok_or_else(|| at(&"no header"))?
            .into_iter()
            .map(|f| f.text)
            .collect();
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
        Ok(CsvChunks {
            schema,
            path,
            reader,
            header,
            kinds,
            first: 0,
            done: false,
        })
    }

    /// The next rows (up to [`CSV_CHUNK_ROWS`]) as a JSON document.
    fn next_document(&mut self) -> Result<Option<Value>, String> {
        let at = |e: &dyn std::fmt::Display| format!("{}: {e}", self.path.display());
        let mut cells: Vec<Vec<Value>> = vec![Vec::new(); self.header.len()];
        let mut rows = 0;
        while rows < CSV_CHUNK_ROWS {
            let Some(record) = self.reader.next_record().map_err(|e| at(&e))? else {
                self.done = true;
                break;
            };
            rows += 1;
            if record.len() != self.header.len() {
                return Err(at(&format!(
                    "line {}: {} fields, not {}",
                    self.reader.line() - 1,
                    record.len(),
                    self.header.len()
                )));
            }
            for ((field, &(_, shown, nullable)), out) in
                record.iter().zip(&self.kinds).zip(&mut cells)
            {
                let text = field.text.as_str();
                out.push(match shown {
                    // Null; on a text field that is not nullable it can
                    // only be the empty string (as CSV writers put it).
                    _ if text.is_empty()
                        && !field.quoted
                        && (nullable || !matches!(shown, Shown::Text)) =>
                    {
                        Value::Null
                    }
                    Shown::Text => Value::from(text),
                    // A date as its ISO-8601 text; one out of range prints as its number.
                    Shown::Date(dt) if crate::datetime::parse(dt, text).is_ok() => {
                        Value::from(text)
                    }
                    _ => serde_json::from_str(text).unwrap_or_else(|_| Value::from(text)),
                });
            }
        }
        if rows == 0 {
            return Ok(None);
        }
        let (mut dims, mut attrs) = (serde_json::Map::new(), serde_json::Map::new());
        for ((name, (is_dim, _, _)), values) in self.header.iter().zip(&self.kinds).zip(cells) {
            let group = if *is_dim { &mut dims } else { &mut attrs };
            group.insert(name.clone(), Value::Array(values));
        }
        Ok(Some(
            serde_json::json!({"dimensions": dims, "attributes": attrs}),
        ))
    }
}

impl Iterator for CsvChunks<'_> {
    type Item = Result<Chunk, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let path = self.path.display().to_string();
        match self.next_document() {
            Ok(Some(doc)) => {
                let first = self.first;
                self.first += CSV_CHUNK_ROWS;
                Some(columns(self.schema, &doc, first).map_err(|e| format!("{path}: {e}")))
            }
            Ok(None) => None,
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
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

/// A field's shape: `(datatype, values per cell, nullable)`.
type Shape = (Datatype, Option<u32>, bool);

/// The cells of one field, parsed as its type (an enumeration value turned
/// into its index); the first is cell `first` of the input (for errors).
fn column(
    schema: &ArraySchema,
    name: &str,
    shape: Shape,
    cells: &Value,
    first: usize,
) -> Result<Column, String> {
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
        let at = |e: String| format!("{name}, cell {}: {e}", first + i);
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
                    // CSV text of an index (how read prints one outside it).
                    None if cell.as_str().is_some_and(|s| s.parse::<i64>().is_ok()) => {
                        let index = cell.as_str().and_then(|s| s.parse::<i64>().ok());
                        cell_bytes(dt, cvn, &Value::from(index)).map_err(at)?
                    }
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

/// Every field of a chunk of the input (whose first cell is cell `first`
/// of the input) as a column; a dense array's coordinates apart.
pub fn columns(
    schema: &ArraySchema,
    doc: &Value,
    first: usize,
) -> Result<(Vec<Column>, Vec<Column>), String> {
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
            first,
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
            first,
        )?);
    }
    Ok((coords, values))
}
