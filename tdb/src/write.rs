//! `tdb write ARRAY --input FILE`: one fragment from the JSON `tdb read
//! --format json` prints (`{"dimensions": {...}, "attributes": {...}}`,
//! one list of cells per field; null for a null cell; an enumerated
//! attribute's cells as enumeration values or indexes). A dense array's
//! coordinates must cover a box, which becomes the write's subarray. The
//! write is checked as TileDB checks one; a refused write writes nothing.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;
use tiledb_runtime::array::OpenOptions;
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::schema::{ArraySchema, Scalar};
use tiledb_runtime::write::{Column, Write, WriteLayout};

use crate::cells::cell_bytes;
use crate::create::read_document;
use crate::key::KeyArgs;
use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    /// The array folder, or a URL (`s3://bucket/array`, …).
    array: PathBuf,
    /// The cells: the JSON of `tdb read --format json`.
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    #[command(flatten)]
    key: KeyArgs,
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
            Some(e) if !cell.is_number() => {
                let value = cell_bytes(e.datatype, e.cell_val_num, cell).map_err(at)?;
                let index = e.values.iter().position(|v| *v == value).ok_or_else(|| {
                    at(format!("{cell} is not a value of enumeration {}", e.name))
                })?;
                cell_bytes(dt, cvn, &Value::from(index as u64)).map_err(at)?
            }
            _ => cell_bytes(dt, cvn, cell).map_err(at)?,
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

/// A dense write: the box the coordinates cover, and the cells put in its
/// row-major order.
fn dense_write(
    schema: &ArraySchema,
    coords: &[Column],
    attrs: Vec<Column>,
) -> Result<Write, String> {
    let mut per_dim = Vec::new();
    for d in &schema.dimensions {
        let c = coords
            .iter()
            .find(|c| c.name == d.name)
            .ok_or_else(|| format!("no coordinates for dimension {}", d.name))?;
        let xs: Vec<i128> = (0..c.len())
            .map(|i| {
                Scalar::decode(d.datatype, c.cell_bytes(i))
                    .and_then(|s| s.as_int())
                    .ok_or_else(|| format!("{}: an integer coordinate", d.name))
            })
            .collect::<Result<_, _>>()?;
        per_dim.push(xs);
    }
    let n = per_dim.first().map_or(0, Vec::len);
    let sub: Vec<(i128, i128)> = per_dim
        .iter()
        .map(|xs| {
            (
                xs.iter().copied().min().unwrap_or(0),
                xs.iter().copied().max().unwrap_or(-1),
            )
        })
        .collect();
    let cells = sub
        .iter()
        .try_fold(1i128, |acc, (lo, hi)| acc.checked_mul(hi - lo + 1))
        .unwrap_or(i128::MAX);
    if cells != n as i128 {
        return Err(format!(
            "the {n} coordinates do not cover the box {sub:?} ({cells} cells)"
        ));
    }
    // Each cell's place in the box, row-major.
    let mut order = vec![usize::MAX; n];
    for i in 0..n {
        let mut at = 0i128;
        for (xs, (lo, hi)) in per_dim.iter().zip(&sub) {
            at = at * (hi - lo + 1) + (xs[i] - lo);
        }
        let slot = &mut order[at as usize];
        if *slot != usize::MAX {
            return Err(format!(
                "the coordinates of cells {} and {i} are the same",
                *slot
            ));
        }
        *slot = i;
    }
    let attrs = attrs
        .into_iter()
        .map(|c| {
            let mut sorted = Column::new(&c.name, c.datatype, c.cell_val_num, c.nullable);
            for &i in &order {
                let (bytes, valid) = c.cell(i);
                sorted.push(bytes, valid);
            }
            sorted
        })
        .collect();
    Ok(Write::dense(sub, attrs).with_layout(WriteLayout::RowMajor))
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    let doc = read_document(&args.input)?;
    let options = OpenOptions {
        key: args.key.resolve()?,
        ..OpenOptions::default()
    };
    let at = |e: String| format!("{}: {e}", args.input.display());
    let array = crate::location::open_array(&args.array, options)?;
    let schema = array.schema();
    let (coords, attrs) = columns(schema, &doc).map_err(at)?;
    let write = if schema.is_dense() {
        dense_write(schema, &coords, attrs).map_err(at)?
    } else {
        Write::sparse(coords.into_iter().chain(attrs).collect())
    };
    array
        .write(&write)
        .map_err(|e| format!("{}: {e}", args.array.display()))?;
    Ok(ExitCode::SUCCESS)
}
