//! `tdb read`'s output, written batch by batch as the read under a memory
//! budget hands the cells out (`tiledb_runtime::read::batches`): memory
//! holds one batch, the first lines appear as soon as the first batch is
//! read, and `--limit` stops the read once it has its cells.
//!
//! CSV and Arrow IPC are written in one pass; Parquet writes a row group
//! per batch. JSON keeps its shape (one array per field): a result of one
//! batch is printed from it, a larger one is read once per field. A table
//! aligns its columns over every cell: a larger result is read twice, once
//! to measure the columns and once to print them.

use std::io::Write;

use serde_json::Value;
use tiledb_runtime::array::Array;
use tiledb_runtime::condition::QueryCondition;
use tiledb_runtime::read::{batches_where, Column, ReadQuery, ReadResult};

use crate::progress::Progress;
use crate::values::Render;
use crate::{output_error, Failure};

/// What to write and how.
pub struct Output<'a> {
    /// The array read.
    pub array: &'a Array,
    /// The array as the user named it (for messages).
    pub name: String,
    /// The read (dense ranges filled in); `None` when it has no cells.
    pub query: ReadQuery,
    /// Only the cells satisfying this condition (`--where`).
    pub condition: Option<QueryCondition>,
    /// False when the read has no cells at all (a dense array never written).
    pub has_cells: bool,
    /// The budget of one batch, in bytes.
    pub budget: u64,
    /// The output format.
    pub format: OutputFormat,
    /// At most this many cells.
    pub limit: Option<usize>,
    /// Stored values rather than dates and enumeration values.
    pub raw: bool,
    /// Whether the output is a file (`--output`): errors name it.
    pub to_file: Option<String>,
}

/// The batches of a query, cut to the limit, counted on the progress bar.
struct Limited<'a> {
    batches: Option<tiledb_runtime::read::BatchesWhere<'a>>,
    left: usize,
    name: &'a str,
    progress: Progress,
}

impl Iterator for Limited<'_> {
    type Item = Result<ReadResult, Failure>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let batch = match self.batches.as_mut()?.next()? {
            Ok(batch) => batch,
            Err(e) => return Some(Err(format!("{}: {e}", self.name).into())),
        };
        let batch = if batch.cell_count() > self.left {
            batch.slice(0..self.left)
        } else {
            batch
        };
        self.left -= batch.cell_count();
        self.progress.advance(batch.cell_count() as u64);
        Some(Ok(batch))
    }
}

impl Output<'_> {
    /// The batches of `query` (a variant of the read's), up to the limit.
    fn batches(&self, query: &ReadQuery) -> Result<Limited<'_>, Failure> {
        let batches = if self.has_cells {
            Some(
                batches_where(
                    self.array.snapshot(),
                    query,
                    self.condition.as_ref(),
                    self.budget,
                )
                .map_err(|e| format!("{}: {e}", self.name))?,
            )
        } else {
            None
        };
        Ok(Limited {
            batches,
            left: self.limit.unwrap_or(usize::MAX),
            name: &self.name,
            progress: Progress::new("reading", "cells", None),
        })
    }

    /// A result with the read's fields and no cells.
    fn empty(&self) -> ReadResult {
        tiledb_runtime::read::typed::empty_result(self.array.snapshot(), &self.query)
    }

    /// Writes the whole output.
    pub fn write(&self, out: &mut (impl Write + Send)) -> Result<(), Failure> {
        match self.format {
            OutputFormat::Arrow | OutputFormat::Parquet => self.write_arrow(out),
            OutputFormat::Csv => self.write_csv(out),
            OutputFormat::Json => self.write_json(out),
            OutputFormat::Table => self.write_table(out),
            OutputFormat::Null => {
                // Every batch is decoded and gathered; only the count is
                // printed, so that timing this command times the read.
                let mut cells = 0usize;
                for batch in self.batches(&self.query)? {
                    cells += std::hint::black_box(batch?).cell_count();
                }
                writeln!(out, "{cells}").map_err(output_error)
            }
        }
    }

    fn write_arrow(&self, out: &mut (impl Write + Send)) -> Result<(), Failure> {
        if self.raw {
            return Err("--raw applies to json, csv and table output".into());
        }
        let parquet = self.format == OutputFormat::Parquet;
        if parquet && self.to_file.is_none() {
            return Err("--format parquet writes a file: give --output FILE".into());
        }
        let schema = self.array.schema();
        let to_batch = |result: ReadResult| {
            tiledb_runtime::read::arrow::record_batch(schema, result)
                .map_err(|e| Failure::Message(format!("{}: {e}", self.name)))
        };
        let header = to_batch(self.empty())?.schema();
        let batches = self.batches(&self.query)?.map(|b| b.and_then(to_batch));
        crate::arrow_out::write_all(parquet, header, batches, out).map_err(|e| match e {
            crate::arrow_out::WriteError::Stopped(failure) => failure,
            crate::arrow_out::WriteError::Io(e) if self.to_file.is_none() => output_error(e),
            e => match &self.to_file {
                Some(path) => Failure::Message(format!("writing {path}: {e}")),
                None => Failure::Message(format!("writing the output: {e}")),
            },
        })
    }

    /// CSV as `crate::csv_text` writes it: null an empty field, the empty
    /// string `""`.
    fn write_csv(&self, out: &mut impl Write) -> Result<(), Failure> {
        let render = Render::new(self.array.schema(), self.raw);
        let empty = self.empty();
        let header = fields(&empty);
        crate::csv_text::write_record(out, header.iter().map(|c| Some(c.name.as_str())))
            .map_err(output_error)?;
        for batch in self.batches(&self.query)? {
            let batch = batch?;
            let columns = fields(&batch);
            for i in 0..batch.cell_count() {
                let row: Vec<Option<String>> =
                    columns.iter().map(|c| render.cell_text(c, i)).collect();
                crate::csv_text::write_record(out, row.iter().map(Option::as_deref))
                    .map_err(output_error)?;
            }
            // Each batch reaches the reader at once (`| head` prints).
            out.flush().map_err(output_error)?;
        }
        out.flush().map_err(output_error)
    }

    /// `{"dimensions":{NAME:[…],…},"attributes":{…}}`, fields in schema
    /// order.
    fn write_json(&self, out: &mut impl Write) -> Result<(), Failure> {
        let render = Render::new(self.array.schema(), self.raw);
        let empty = self.empty();
        // One batch (the common case): printed from it.
        let mut first = self.batches(&self.query)?;
        let one = match (first.next().transpose()?, first.next().transpose()?) {
            (batch, None) => Some(batch.unwrap_or_else(|| empty.clone())),
            _ => None,
        };
        drop(first);
        write!(out, "{{").map_err(output_error)?;
        self.json_group(out, &render, &empty.dimensions, "dimensions", one.as_ref())?;
        write!(out, ",").map_err(output_error)?;
        self.json_group(out, &render, &empty.attributes, "attributes", one.as_ref())?;
        writeln!(out, "}}").map_err(output_error)
    }

    /// `"KIND":{NAME:[…],…}` for `columns`: from `one` when the read is
    /// one batch, else read field by field.
    fn json_group(
        &self,
        out: &mut impl Write,
        render: &Render,
        columns: &[Column],
        kind: &str,
        one: Option<&ReadResult>,
    ) -> Result<(), Failure> {
        write!(out, "\"{kind}\":{{").map_err(output_error)?;
        for (n, column) in columns.iter().enumerate() {
            let name = Value::String(column.name.clone());
            write!(out, "{}{name}:[", if n > 0 { "," } else { "" }).map_err(output_error)?;
            let mut written = 0usize;
            let mut values = |col: &Column, out: &mut dyn Write| -> Result<(), Failure> {
                for i in 0..col.len() {
                    let sep = if written > 0 { "," } else { "" };
                    write!(out, "{sep}{}", render.cell_json(col, i)).map_err(output_error)?;
                    written += 1;
                }
                Ok(())
            };
            match one {
                Some(batch) => values(field(batch, &column.name)?, out)?,
                None => {
                    for batch in self.batches(&self.field_query(&column.name, kind))? {
                        values(field(&batch?, &column.name)?, out)?;
                    }
                }
            }
            write!(out, "]").map_err(output_error)?;
        }
        write!(out, "}}").map_err(output_error)
    }

    /// The read of one field: a dimension (coordinates only) or an
    /// attribute (without coordinates).
    fn field_query(&self, name: &str, kind: &str) -> ReadQuery {
        let mut query = self.query.clone();
        if kind == "dimensions" {
            query.attributes = Some(Vec::new());
        } else {
            query.attributes = Some(vec![name.to_string()]);
            query.skip_coordinates = true;
        }
        query
    }

    /// Aligned columns, a rule under the header, and the cell count.
    fn write_table(&self, out: &mut impl Write) -> Result<(), Failure> {
        let render = Render::new(self.array.schema(), self.raw);
        let text = |c: &Column, i| render.cell_text(c, i).unwrap_or_else(|| "null".to_string());
        let empty = self.empty();
        let mut widths: Vec<usize> = fields(&empty)
            .iter()
            .map(|c| c.name.chars().count())
            .collect();
        // Measure every cell first (reading twice when there are several
        // batches: only the widths are kept).
        let mut shown = 0usize;
        let mut batch_count = 0usize;
        let mut kept: Option<ReadResult> = None;
        for batch in self.batches(&self.query)? {
            let batch = batch?;
            for (w, c) in widths.iter_mut().zip(fields(&batch)) {
                for i in 0..c.len() {
                    *w = (*w).max(text(c, i).chars().count());
                }
            }
            shown += batch.cell_count();
            batch_count += 1;
            kept = (batch_count == 1).then_some(batch);
        }
        let line = |cells: Vec<String>| -> String {
            cells
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect::<Vec<_>>()
                .join(" | ")
                .trim_end()
                .to_string()
        };
        let header = line(fields(&empty).iter().map(|c| c.name.clone()).collect());
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        writeln!(out, "{header}\n{}", rule.join("-+-")).map_err(output_error)?;
        let mut print = |batch: &ReadResult| -> Result<(), Failure> {
            let columns = fields(batch);
            for i in 0..batch.cell_count() {
                let row = line(columns.iter().map(|c| text(c, i)).collect());
                writeln!(out, "{row}").map_err(output_error)?;
            }
            Ok(())
        };
        match kept {
            Some(batch) => print(&batch)?,
            None => {
                for batch in self.batches(&self.query)? {
                    print(&batch?)?;
                }
            }
        }
        // The total is known when the read ended within the cells shown,
        // or when it is one batch (the first batch is read again).
        let total = match self.limit {
            Some(limit) if shown == limit => {
                let mut all = self.batches(&self.query)?;
                all.left = usize::MAX;
                let first = all.next().transpose()?.map_or(0, |b| b.cell_count());
                all.next().is_none().then_some(first)
            }
            _ => Some(shown),
        };
        match total {
            Some(total) if shown < total => writeln!(out, "(first {shown} of {total} cells)"),
            Some(_) => writeln!(out, "({shown} cells)"),
            None => writeln!(out, "(first {shown} cells)"),
        }
        .map_err(output_error)
    }
}

/// The columns of a result: dimensions, then attributes.
fn fields(result: &ReadResult) -> Vec<&Column> {
    result.dimensions.iter().chain(&result.attributes).collect()
}

/// The column named `name` of a batch.
fn field<'r>(batch: &'r ReadResult, name: &str) -> Result<&'r Column, Failure> {
    fields(batch)
        .into_iter()
        .find(|c| c.name == name)
        .ok_or_else(|| Failure::Message(format!("the read returned no field {name:?}")))
}

/// What `tdb read` prints.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// One JSON object: fields in schema order, one value per cell.
    Json,
    /// A header line, then one line per cell; null is an empty field, the
    /// empty string `""`.
    Csv,
    /// Aligned columns for a person.
    Table,
    /// Decode everything, print only the number of cells.
    Null,
    /// An Arrow IPC stream (one record batch), TileDB's types mapped as
    /// tiledb-py's `return_arrow=True` maps them.
    Arrow,
    /// A Parquet file (zstd-compressed; needs --output), the same Arrow
    /// columns.
    Parquet,
}
