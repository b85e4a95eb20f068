//! A write as a user gives it — typed [`Column`]s by field name, a layout, a
//! dense subarray — checked as TileDB 2.30 checks a write query before it
//! writes anything, and turned into the [`FragmentInput`] the fragment
//! writer takes. The rules name the TileDB function they follow (files
//! under `tiledb/sm/query/` of TileDB 2.30.1, `writers/` for the writers).

use std::collections::HashSet;

use rayon::prelude::*;

use crate::error::Result;
use crate::schema::{ArraySchema, Scalar};

use super::cell_order::Coordinates;
use super::fragment::shape_name;
use super::fragment_input::{usage, Column, FragmentInput, InputColumns};
use super::num_key::NumKey;
use super::tiling::SparseOrder;

/// The order of the cells a write gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteLayout {
    /// Dense: the subarray's cells, the last dimension fastest.
    RowMajor,
    /// Dense: the subarray's cells, the first dimension fastest.
    ColMajor,
    /// Sparse: cells in any order.
    Unordered,
    /// Sparse: cells already in the array's global order (checked).
    GlobalOrder,
}

/// One write: a fragment's worth of cells.
#[derive(Debug, Clone)]
pub struct Write {
    /// The order of the cells.
    pub layout: WriteLayout,
    /// Dense: the inclusive `[lo, hi]` box written, one per dimension.
    pub subarray: Option<Vec<(i128, i128)>>,
    /// One column per attribute, and for a sparse write one per dimension,
    /// each named after its field, in any order.
    pub columns: Vec<Column>,
    /// The fragment's timestamp in milliseconds (0 means now).
    pub timestamp: u64,
}

impl Write {
    /// A dense write of the box `subarray`, cells in row-major order.
    pub fn dense(subarray: Vec<(i128, i128)>, columns: Vec<Column>) -> Write {
        Write {
            layout: WriteLayout::RowMajor,
            subarray: Some(subarray),
            columns,
            timestamp: 0,
        }
    }

    /// A sparse write, cells (coordinates among the columns) in any order.
    pub fn sparse(columns: Vec<Column>) -> Write {
        Write {
            layout: WriteLayout::Unordered,
            subarray: None,
            columns,
            timestamp: 0,
        }
    }

    /// The same write with another layout.
    pub fn with_layout(mut self, layout: WriteLayout) -> Write {
        self.layout = layout;
        self
    }

    /// The same write stamped `timestamp` (milliseconds).
    pub fn at(mut self, timestamp: u64) -> Write {
        self.timestamp = timestamp;
        self
    }
}

/// Checks `write` against `schema` as TileDB does, and gives the fragment
/// input to write; `None` when the write has no cells (TileDB then writes
/// no fragment).
pub fn validate(schema: &ArraySchema, write: &Write) -> Result<Option<FragmentInput>> {
    Ok(validate_ordered(schema, write)?.map(|checked| {
        let mut input = checked.input;
        input.attrs = checked.columns.attrs.into_iter().cloned().collect();
        input.dims = checked.columns.dims.into_iter().cloned().collect();
        input
    }))
}

/// A checked write: its fragment input, whose columns stay the write's
/// (lent, not copied: `columns`), and a sparse write's global order when
/// the checks found it.
pub(crate) struct Checked<'w> {
    pub(crate) input: FragmentInput,
    pub(crate) columns: InputColumns<'w>,
    pub(crate) order: Option<SparseOrder>,
}

/// [`validate`], with the global order of a sparse write's cells when the
/// checks found it (an unordered write without duplicates sorts its cells
/// to find duplicates, as TileDB's does), for the writer to reuse.
pub(crate) fn validate_ordered<'w>(
    schema: &ArraySchema,
    write: &'w Write,
) -> Result<Option<Checked<'w>>> {
    let dense = schema.is_dense();
    // Query::set_layout: unordered writes are sparse only, row- and
    // column-major writes dense only (Hilbert is no query layout).
    match (dense, write.layout) {
        (true, WriteLayout::Unordered) => {
            return Err(usage(
                "unordered writes are only possible for sparse arrays",
            ))
        }
        (false, WriteLayout::RowMajor | WriteLayout::ColMajor) => {
            return Err(usage(
                "row-major and column-major writes are only possible for dense arrays",
            ))
        }
        // Read in place, tile after tile: only the subarray is checked more.
        (true, WriteLayout::GlobalOrder) => {
            super::global_dense::check_tile_bounds(schema, write.subarray.as_deref())?;
        }
        _ => {}
    }
    // WriterBase::init: a subarray is for dense writes only.
    if !dense && write.subarray.is_some() {
        return Err(usage("a sparse write takes no subarray"));
    }
    let (dims, attrs) = columns_by_field(schema, write)?;
    let n = cell_count(schema, write, &dims, &attrs)?;
    if n == 0 {
        return Ok(None);
    }
    let mut order = None;
    if dense {
        check_subarray(schema, write.subarray.as_deref().unwrap_or_default())?;
    } else {
        let coords = Coordinates::new(schema, &dims);
        let global = write.layout == WriteLayout::GlobalOrder;
        // On a grid, a global-order write is checked for both in one pass;
        // a refusal is found again below by the checks that name it.
        let passed = global && coords.written_in_order_within_domain(n, schema.allows_dups);
        if !passed {
            check_coords_in_domain(schema, &dims, n)?;
        }
        if global {
            if !passed {
                coords.check_written_order(n, schema.allows_dups)?;
            }
            // Cells in order by tile and coordinates are their own global
            // order; Hilbert arrays order only by Hilbert value, so cells of
            // one value still need sorting by coordinates.
            if schema.cell_order != crate::schema::SchemaOrder::Hilbert {
                order = Some(SparseOrder::AsGiven);
            }
        } else {
            let sorted = coords.sorted_cells(n, schema.allows_dups)?;
            order = Some(SparseOrder::Permuted(sorted));
        }
    }
    let input = FragmentInput {
        timestamp: write.timestamp,
        subarray: write.subarray.clone(),
        col_major: write.layout == WriteLayout::ColMajor,
        global_order: dense && write.layout == WriteLayout::GlobalOrder,
        ..FragmentInput::default()
    };
    Ok(Some(Checked {
        input,
        columns: InputColumns { attrs, dims },
        order,
    }))
}

/// The columns matched to the schema's fields: Query::set_data_buffer (a
/// known field; no coordinates for dense writes), set_validity_buffer
/// (nullable fields only), and WriterBase::check_buffer_names (every
/// attribute, and for sparse writes every dimension, given).
/// The columns in schema order: attributes, then (sparse) dimensions.
type ByField<'w> = (Vec<&'w Column>, Vec<&'w Column>);

fn columns_by_field<'w>(schema: &ArraySchema, write: &'w Write) -> Result<ByField<'w>> {
    let mut seen = HashSet::new();
    for c in &write.columns {
        if !seen.insert(c.name.as_str()) {
            return Err(usage(format!("two columns for {}", c.name)));
        }
        let is_dim = schema.dimension(&c.name).is_some();
        if schema.attribute(&c.name).is_none() && !is_dim {
            return Err(usage(format!("{} is no field of the array", c.name)));
        }
        if is_dim && schema.is_dense() {
            return Err(usage(format!(
                "a dense write takes a subarray, not coordinates ({})",
                c.name
            )));
        }
    }
    let find = |name: &str| write.columns.iter().find(|c| c.name == name);
    let mut attrs = Vec::new();
    for a in &schema.attributes {
        let c =
            find(&a.name).ok_or_else(|| usage(format!("no column for attribute {}", a.name)))?;
        check_column(c, a.datatype, a.cell_val_num, a.nullable)?;
        attrs.push(c);
    }
    let mut dims = Vec::new();
    if !schema.is_dense() {
        for d in &schema.dimensions {
            let c = find(&d.name)
                .ok_or_else(|| usage(format!("no column for dimension {}", d.name)))?;
            check_column(c, d.datatype, (!d.var).then_some(1), false)?;
            dims.push(c);
        }
    }
    Ok((dims, attrs))
}

/// A column fits its field: its datatype and values per cell, validity
/// exactly when the field is nullable, and well formed (offsets ascending
/// within the data, WriterBase::check_var_attr_offsets; validity one per
/// cell).
fn check_column(
    c: &Column,
    datatype: crate::filter::Datatype,
    cell_val_num: Option<u32>,
    nullable: bool,
) -> Result<()> {
    if c.datatype != datatype || c.cell_val_num != cell_val_num {
        return Err(usage(format!(
            "the column for {} holds {} {}, the field is {} {}",
            c.name,
            c.datatype.name(),
            shape_name(c.cell_val_num),
            datatype.name(),
            shape_name(cell_val_num)
        )));
    }
    match (nullable, c.validity.is_some()) {
        (false, true) => {
            return Err(usage(format!(
                "{} is not nullable: its column takes no validity",
                c.name
            )))
        }
        (true, false) => {
            return Err(usage(format!(
                "{} is nullable: its column needs validity",
                c.name
            )))
        }
        _ => {}
    }
    if let Some(why) = c.shape_error() {
        return Err(usage(why));
    }
    Ok(())
}

/// The number of cells: every column holds as many
/// (UnorderedWriter / WriterBase::check_buffer_sizes), and a dense write
/// as many as its subarray (WriterBase::check_buffer_sizes).
fn cell_count(
    schema: &ArraySchema,
    write: &Write,
    dims: &[&Column],
    attrs: &[&Column],
) -> Result<usize> {
    let n = attrs.first().or(dims.first()).map_or(0, |c| c.len());
    for c in attrs.iter().chain(dims) {
        if c.len() != n {
            return Err(usage(format!(
                "the columns hold different numbers of cells ({} has {}, {} has {n})",
                c.name,
                c.len(),
                attrs
                    .first()
                    .or(dims.first())
                    .map_or("", |c| c.name.as_str())
            )));
        }
    }
    if schema.is_dense() {
        let sub = write
            .subarray
            .as_ref()
            .ok_or_else(|| usage("a dense write needs a subarray"))?;
        if sub.len() != schema.dimensions.len() {
            return Err(usage(format!(
                "the subarray has {} ranges for {} dimensions",
                sub.len(),
                schema.dimensions.len()
            )));
        }
        if let Some((d, (lo, hi))) = schema
            .dimensions
            .iter()
            .zip(sub)
            .find(|(_, (lo, hi))| lo > hi)
        {
            return Err(usage(format!(
                "dimension {}: the subarray range [{lo}, {hi}] is inverted",
                d.name
            )));
        }
        let cells = sub
            .iter()
            .try_fold(1i128, |acc, (lo, hi)| acc.checked_mul(hi - lo + 1))
            .unwrap_or(i128::MAX);
        if cells != n as i128 {
            return Err(usage(format!(
                "the subarray holds {cells} cells, the columns {n}"
            )));
        }
    }
    Ok(n)
}

/// The inclusive range a dimension's cells may take: the domain, narrowed
/// to the current domain when the schema has one (FragmentMetadata refuses
/// cells outside the current domain).
fn bounds(schema: &ArraySchema, d: usize) -> Option<(Scalar, Scalar)> {
    let dim = &schema.dimensions[d];
    if let Some(cd) = schema.current_domain.as_ref().and_then(|cd| cd.get(d)) {
        return Some((
            Scalar::decode(dim.datatype, &cd.0)?,
            Scalar::decode(dim.datatype, &cd.1)?,
        ));
    }
    dim.domain_scalars()
}

/// Subarray::add_range: each range inside the domain (and the current
/// domain).
fn check_subarray(schema: &ArraySchema, sub: &[(i128, i128)]) -> Result<()> {
    for (d, (lo, hi)) in sub.iter().enumerate() {
        let name = &schema.dimensions[d].name;
        if let Some((Scalar::Int(dlo), Scalar::Int(dhi))) = bounds(schema, d) {
            if *lo < dlo || *hi > dhi {
                return Err(usage(format!(
                    "dimension {name}: the subarray range [{lo}, {hi}] is outside [{dlo}, {dhi}]"
                )));
            }
        }
    }
    Ok(())
}

/// WriterBase::check_coord_oob (numeric dimensions inside the domain) and
/// FragmentMetadata's current-domain check (every dimension inside it).
fn check_coords_in_domain(schema: &ArraySchema, dims: &[&Column], n: usize) -> Result<()> {
    for (d, c) in schema.dimensions.iter().zip(dims) {
        // A fixed-size numeric column (its shape checked) always decodes.
        if NumKey::of(d.datatype).is_some() && c.cell_size() == Some(d.datatype.size() as usize) {
            continue;
        }
        let bad = (0..n)
            .into_par_iter()
            .find_first(|&i| Scalar::decode(d.datatype, c.cell_bytes(i)).is_none());
        if let Some(i) = bad {
            return Err(usage(format!("cell {i}: a bad coordinate of {}", d.name)));
        }
    }
    for (d, column) in dims.iter().enumerate() {
        let Some((lo, hi)) = bounds(schema, d) else {
            continue;
        };
        let datatype = schema.dimensions[d].datatype;
        let size = datatype.size() as usize;
        // Numeric coordinates compared as keys, which order as the values.
        let keyed = NumKey::of(datatype)
            .filter(|_| column.cell_size() == Some(size))
            .and_then(|k| Some((k, k.of_scalar(&lo)?, k.of_scalar(&hi)?)));
        let outside = match keyed {
            Some((kind, low, high)) => {
                // Chunks in parallel, each a plain loop.
                const CHUNK: usize = 1 << 16;
                let data = column.data.get(..n * size).unwrap_or(&column.data);
                data.par_chunks(CHUNK * size)
                    .enumerate()
                    .find_map_first(|(c, chunk)| {
                        let inside = |x: &[u8]| (low..=high).contains(&kind.key(x));
                        let k = chunk.chunks_exact(size).position(|x| !inside(x))?;
                        Some(c * CHUNK + k)
                    })
            }
            None => (0..n).into_par_iter().find_first(|&i| {
                Scalar::decode(datatype, column.cell_bytes(i))
                    .is_some_and(|x| x.compare(&lo).is_lt() || x.compare(&hi).is_gt())
            }),
        };
        if let Some(i) = outside {
            let x = Scalar::decode(schema.dimensions[d].datatype, column.cell_bytes(i))
                .unwrap_or(Scalar::Int(0));
            return Err(usage(format!(
                "cell {i}: coordinate {} of dimension {} is outside [{}, {}]",
                show(&x),
                schema.dimensions[d].name,
                show(&lo),
                show(&hi)
            )));
        }
    }
    Ok(())
}

fn show(s: &Scalar) -> String {
    match s {
        Scalar::Int(i) => i.to_string(),
        Scalar::Float(f) => f.to_string(),
        Scalar::Bytes(b) => format!("{:?}", String::from_utf8_lossy(b)),
    }
}
