//! `tdb write ARRAY --input FILE [--format json|csv|arrow|parquet]
//! [--timestamp T] [--subarray DIM=LO:HI …] [--fragment-size BYTES]`: cells
//! from an Arrow IPC file or stream or a Parquet file (columns named after
//! fields, typed as `tdb read --format arrow` writes them: see the runtime's
//! `write::arrow`), from the CSV `tdb read --format csv` prints, or from the
//! JSON `tdb read --format json` prints (`{"dimensions": {...},
//! "attributes": {...}}`, one list of cells per field; null for a null
//! cell; an enumerated attribute's cells as enumeration values or indexes).
//!
//! The input goes through the runtime's streaming writer chunk by chunk
//! (`write_input`), cut into fragments of about `--fragment-size` bytes, so
//! memory holds about one fragment and one chunk, never the whole input.
//! A dense array's cells cover a box: `--subarray`, or the box their
//! coordinates cover (found by a first pass over the input); they stream
//! when they come in its row-major order (as `tdb read` prints them),
//! fragments cut at whole slabs of the first dimension, or in its
//! column-major order, cut at whole slabs of the last dimension (each slab
//! a column-major write of its own). In any other order the cells of one
//! fragment's box are not contiguous in the input: reading to the end may
//! be needed before any box is whole, so such an input is read whole and
//! put in row-major order (one write). Every fragment is
//! checked as TileDB checks a write; when any chunk is refused, the
//! fragments already committed are removed again, so a refused write
//! leaves the array as it was.

use std::path::PathBuf;
use std::process::ExitCode;

use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::schema::{ArraySchema, Scalar};
use tiledb_runtime::write::{dense_from_coordinates, Column};

use crate::key::KeyArgs;
use crate::read::parse_bytes;
use crate::values::parse_bound;
use crate::write_input::{chunks, Chunk, InputFormat};
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
    /// Stamp every fragment written with time T: milliseconds since 1970
    /// or ISO-8601 (as `tdb read --at` takes it); by default the time each
    /// fragment is cut.
    #[arg(long, value_name = "T")]
    timestamp: Option<String>,
    /// A dense write's box, one `DIM=LO:HI` per dimension: the input's
    /// cells fill it in row-major order (its coordinate columns, if any,
    /// must be that order's).
    #[arg(long = "subarray", value_name = "DIM=LO:HI")]
    subarray: Vec<String>,
    /// Cut a fragment once the cells held reach this many bytes (`64MiB`,
    /// `1GiB`, …): the memory a write takes is about this plus one chunk of
    /// the input.
    #[arg(long, value_name = "BYTES", default_value = "256MiB", value_parser = parse_bytes)]
    fragment_size: u64,
    #[command(flatten)]
    key: KeyArgs,
}

/// `--subarray`: one `[lo, hi]` per dimension, in the schema's order.
fn parse_box(schema: &ArraySchema, specs: &[String]) -> Result<Vec<(i128, i128)>, String> {
    let mut ranges: Vec<Option<(i128, i128)>> = vec![None; schema.dimensions.len()];
    for spec in specs {
        let bad = |why: &str| format!("--subarray {spec:?}: {why}");
        let (dim, range) = spec
            .split_once('=')
            .ok_or_else(|| bad("expected DIM=LO:HI"))?;
        let (lo, hi) = range
            .split_once("..")
            .or_else(|| range.split_once(':'))
            .ok_or_else(|| bad("expected DIM=LO:HI or DIM=LO..HI"))?;
        let (d, dimension) = schema
            .dimension(dim)
            .ok_or_else(|| bad(&format!("the array has no dimension {dim:?}")))?;
        let bound = |text: &str| -> Result<i128, String> {
            let bytes = parse_bound(dimension.datatype, text).map_err(|e| bad(&e))?;
            Scalar::decode(dimension.datatype, &bytes)
                .and_then(|s| s.as_int())
                .ok_or_else(|| bad("a dense dimension takes integer bounds"))
        };
        if ranges[d].replace((bound(lo)?, bound(hi)?)).is_some() {
            return Err(bad("one range per dimension"));
        }
    }
    ranges
        .into_iter()
        .zip(&schema.dimensions)
        .map(|(r, d)| r.ok_or_else(|| format!("--subarray: no range for dimension {}", d.name)))
        .collect()
}

/// The coordinates of cell `i` of a column, as integers.
fn coordinate(schema: &ArraySchema, c: &Column, i: usize) -> Result<i128, String> {
    let (_, d) = schema
        .dimension(&c.name)
        .ok_or_else(|| format!("the array has no dimension {}", c.name))?;
    Scalar::decode(d.datatype, c.cell_bytes(i))
        .and_then(|s| s.as_int())
        .ok_or_else(|| format!("{}: an integer coordinate", d.name))
}

/// The box a dense input's coordinates cover, by a first pass over it
/// (only bounds kept); refused when they do not fill it.
fn covered_box(
    schema: &ArraySchema,
    input: impl Iterator<Item = Result<Chunk, String>>,
) -> Result<Vec<(i128, i128)>, String> {
    let mut bounds = vec![(i128::MAX, i128::MIN); schema.dimensions.len()];
    let mut cells = 0u128;
    for chunk in input {
        let (coords, _) = chunk?;
        for (d, dim) in schema.dimensions.iter().enumerate() {
            let c = coords
                .iter()
                .find(|c| c.name == dim.name)
                .ok_or_else(|| format!("no coordinates for dimension {}", dim.name))?;
            for i in 0..c.len() {
                let x = coordinate(schema, c, i)?;
                bounds[d] = (bounds[d].0.min(x), bounds[d].1.max(x));
            }
        }
        cells += coords.first().map_or(0, Column::len) as u128;
    }
    let covered = bounds
        .iter()
        .try_fold(1u128, |n, (lo, hi)| {
            n.checked_mul(u128::try_from(hi - lo + 1).ok()?)
        })
        .unwrap_or(0);
    if cells == 0 || covered != cells {
        return Err(format!(
            "the {cells} coordinates do not cover the box {bounds:?} once"
        ));
    }
    Ok(bounds)
}

/// How a dense stream went: written, or the cells left the box's row-major
/// order (the stream was undone; the caller writes the input whole).
enum DenseOutcome {
    Written,
    OutOfOrder,
}

/// The orders a dense input streams in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum DenseOrder {
    /// The last dimension fastest (as `tdb read` prints a box).
    RowMajor,
    /// The first dimension fastest.
    ColMajor,
}

/// Whether `coords` hold cells `first..` of the box in `order`.
fn in_order(
    schema: &ArraySchema,
    subarray: &[(i128, i128)],
    order: DenseOrder,
    coords: &[Column],
    first: u128,
) -> Result<bool, String> {
    let n = coords.first().map_or(0, Column::len);
    let dims: Vec<usize> = match order {
        DenseOrder::RowMajor => (0..subarray.len()).rev().collect(),
        DenseOrder::ColMajor => (0..subarray.len()).collect(),
    };
    for i in 0..n {
        // Cell `first + i`'s coordinates, the fastest dimension first.
        let mut rest = first + i as u128;
        for &d in &dims {
            let dim = &schema.dimensions[d];
            let (lo, hi) = subarray[d];
            let extent = (hi - lo + 1) as u128;
            let want = lo + (rest % extent) as i128;
            rest /= extent;
            let Some(c) = coords.iter().find(|c| c.name == dim.name) else {
                return Err(format!("no coordinates for dimension {}", dim.name));
            };
            if coordinate(schema, c, i)? != want {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

fn stream_dense(
    array: &Array,
    args: &Args,
    format: InputFormat,
    (subarray, order): (Vec<(i128, i128)>, DenseOrder),
    timestamp: u64,
) -> Result<DenseOutcome, String> {
    let schema = array.schema();
    let cells: u128 = subarray
        .iter()
        .map(|(lo, hi)| (hi - lo + 1) as u128)
        .product();
    let mut stream = array
        .stream_dense(subarray.clone(), args.fragment_size)
        .map_err(|e| e.to_string())?
        .at(timestamp);
    if order == DenseOrder::ColMajor {
        stream = stream.col_major().map_err(|e| e.to_string())?;
    }
    let mut pushed = 0u128;
    let mut step = || -> Result<bool, String> {
        for chunk in chunks(schema, &args.input, format)? {
            let (coords, attrs) = chunk?;
            if let Some(a) = schema
                .attributes
                .iter()
                .find(|a| !attrs.iter().any(|c| c.name == a.name))
            {
                return Err(format!("no column for attribute {}", a.name));
            }
            if !coords.is_empty() && !in_order(schema, &subarray, order, &coords, pushed)? {
                return Ok(false);
            }
            pushed += attrs.first().map_or(0, Column::len) as u128;
            if pushed > cells {
                return Err(format!("more cells than the box's {cells}"));
            }
            stream.push(attrs).map_err(|e| e.to_string())?;
        }
        if pushed != cells {
            return Err(format!("{pushed} cells for a box of {cells}"));
        }
        stream.flush().map_err(|e| e.to_string())?;
        Ok(true)
    };
    match step() {
        Ok(true) => {
            stream.finish().map_err(|e| e.to_string())?;
            Ok(DenseOutcome::Written)
        }
        Ok(false) => {
            stream.abandon().map_err(|e| e.to_string())?;
            Ok(DenseOutcome::OutOfOrder)
        }
        Err(e) => {
            stream.abandon().map_err(|e| e.to_string())?;
            Err(e)
        }
    }
}

fn stream_sparse(
    array: &Array,
    args: &Args,
    format: InputFormat,
    timestamp: u64,
) -> Result<(), String> {
    let schema = array.schema();
    let mut stream = array
        .stream_sparse(args.fragment_size)
        .map_err(|e| e.to_string())?
        .at(timestamp);
    let mut step = || -> Result<(), String> {
        for chunk in chunks(schema, &args.input, format)? {
            let (coords, attrs) = chunk?;
            stream
                .push(coords.into_iter().chain(attrs).collect())
                .map_err(|e| e.to_string())?;
        }
        stream.flush().map_err(|e| e.to_string())
    };
    match step() {
        Ok(()) => stream.finish().map(drop).map_err(|e| e.to_string()),
        Err(e) => {
            stream.abandon().map_err(|e| e.to_string())?;
            Err(e)
        }
    }
}

/// A dense input in neither row- nor column-major order: read whole, put
/// in order, one write.
fn write_dense_whole(
    array: &Array,
    args: &Args,
    format: InputFormat,
    timestamp: u64,
) -> Result<(), String> {
    let schema = array.schema();
    let (mut coords, mut attrs): (Vec<Column>, Vec<Column>) = (Vec::new(), Vec::new());
    for chunk in chunks(schema, &args.input, format)? {
        let (c, a) = chunk?;
        append(&mut coords, c);
        append(&mut attrs, a);
    }
    let write = dense_from_coordinates(schema, &coords, attrs).map_err(|e| e.to_string())?;
    array
        .write(&write.at(timestamp))
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Appends the cells of `more` to the columns of the same names in `into`.
fn append(into: &mut Vec<Column>, more: Vec<Column>) {
    if into.is_empty() {
        *into = more;
        return;
    }
    for c in more {
        if let Some(a) = into.iter_mut().find(|a| a.name == c.name) {
            for i in 0..c.len() {
                let (bytes, valid) = c.cell(i);
                a.push(bytes, valid);
            }
        }
    }
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    let format = args.format.unwrap_or_else(|| InputFormat::of(&args.input));
    let options = OpenOptions {
        key: args.key.resolve()?,
        ..OpenOptions::default()
    };
    let timestamp = match &args.timestamp {
        Some(t) => {
            crate::datetime::parse_timestamp_ms(t).map_err(|e| format!("--timestamp: {e}"))?
        }
        None => 0,
    };
    let array = crate::location::open_array(&args.array, options)?;
    let schema = array.schema();
    let at = |e: String| format!("{}: {e}", args.input.display());
    let written = if !schema.is_dense() {
        if !args.subarray.is_empty() {
            return Err("--subarray: only a dense write takes a box".into());
        }
        stream_sparse(&array, &args, format, timestamp)
    } else {
        let given = !args.subarray.is_empty();
        let subarray = if given {
            parse_box(schema, &args.subarray)?
        } else {
            covered_box(schema, chunks(schema, &args.input, format)?).map_err(at)?
        };
        let row_major = (subarray.clone(), DenseOrder::RowMajor);
        let col_major = (subarray, DenseOrder::ColMajor);
        match stream_dense(&array, &args, format, row_major, timestamp) {
            Ok(DenseOutcome::OutOfOrder) => {
                match stream_dense(&array, &args, format, col_major, timestamp) {
                    Ok(DenseOutcome::OutOfOrder) if given => Err(
                        "the coordinates are not the cells of --subarray in row- or column-major order"
                            .to_string(),
                    ),
                    Ok(DenseOutcome::OutOfOrder) => {
                        write_dense_whole(&array, &args, format, timestamp)
                    }
                    done => done.map(drop),
                }
            }
            done => done.map(drop),
        }
    };
    written.map_err(|e| format!("{}: {e}", args.array.display()))?;
    Ok(ExitCode::SUCCESS)
}
