//! `tdb read --format arrow|parquet`: a record batch as an Arrow IPC
//! stream or as a Parquet file.

use std::fmt;
use std::io::Write;

use arrow_array::RecordBatch;
use arrow_ipc::writer::StreamWriter;
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
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Io(e) => write!(f, "{e}"),
            WriteError::Arrow(e) => write!(f, "Arrow IPC: {e}"),
            WriteError::Parquet(e) => write!(f, "Parquet: {e}"),
        }
    }
}

fn arrow_error(e: arrow_schema::ArrowError) -> WriteError {
    match e {
        arrow_schema::ArrowError::IoError(_, io) => WriteError::Io(io),
        e => WriteError::Arrow(e),
    }
}

/// Writes `batch` to `out`: a Parquet file (zstd) when `parquet`, else an
/// Arrow IPC stream.
pub fn write(
    parquet: bool,
    batch: &RecordBatch,
    out: &mut (impl Write + Send),
) -> Result<(), WriteError> {
    if parquet {
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build();
        let mut writer = ArrowWriter::try_new(out, batch.schema(), Some(properties))
            .map_err(WriteError::Parquet)?;
        writer.write(batch).map_err(WriteError::Parquet)?;
        writer.close().map_err(WriteError::Parquet)?;
    } else {
        let mut writer = StreamWriter::try_new(out, &batch.schema()).map_err(arrow_error)?;
        writer.write(batch).map_err(arrow_error)?;
        writer.finish().map_err(arrow_error)?;
    }
    Ok(())
}
