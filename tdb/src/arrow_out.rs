//! `tdb read --format arrow|parquet`: record batches as an Arrow IPC
//! stream or as a Parquet file (a row group per batch), written as they
//! come.

use std::fmt;
use std::io::Write;

use arrow_array::RecordBatch;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

/// Why the batch could not be written.
#[derive(Debug)]
pub enum WriteError {
    /// The output refused the bytes (a closed pipe, a full disk).
    Io(std::io::Error),
    /// The Arrow IPC writer refused the batch.
    Arrow(arrow_schema::ArrowError),
    /// The Parquet writer refused the batch.
    Parquet(parquet::errors::ParquetError),
    /// The batches stopped: the read failed.
    Stopped(crate::Failure),
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Io(e) => write!(f, "{e}"),
            WriteError::Arrow(e) => write!(f, "Arrow IPC: {e}"),
            WriteError::Parquet(e) => write!(f, "Parquet: {e}"),
            WriteError::Stopped(e) => write!(f, "{e:?}"),
        }
    }
}

fn arrow_error(e: arrow_schema::ArrowError) -> WriteError {
    match e {
        arrow_schema::ArrowError::IoError(_, io) => WriteError::Io(io),
        e => WriteError::Arrow(e),
    }
}

/// Writes `batches` (each of `schema`) to `out` as they come: a Parquet
/// file (zstd, a row group per batch) when `parquet`, else an Arrow IPC
/// stream (its schema first, so that a read without cells still writes
/// one).
pub fn write_all(
    parquet: bool,
    schema: SchemaRef,
    batches: impl Iterator<Item = Result<RecordBatch, crate::Failure>>,
    out: &mut (impl Write + Send),
) -> Result<(), WriteError> {
    if parquet {
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build();
        let mut writer =
            ArrowWriter::try_new(out, schema, Some(properties)).map_err(WriteError::Parquet)?;
        for batch in batches {
            writer
                .write(&batch.map_err(WriteError::Stopped)?)
                .map_err(WriteError::Parquet)?;
            // A row group per batch: the writer holds no more than one.
            writer.flush().map_err(WriteError::Parquet)?;
        }
        writer.close().map_err(WriteError::Parquet)?;
    } else {
        let mut writer = StreamWriter::try_new(out, &schema).map_err(arrow_error)?;
        for batch in batches {
            writer
                .write(&batch.map_err(WriteError::Stopped)?)
                .map_err(arrow_error)?;
            writer.flush().map_err(arrow_error)?;
        }
        writer.finish().map_err(arrow_error)?;
    }
    Ok(())
}
