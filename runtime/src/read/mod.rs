//! Reading cells: a [`ReadQuery`] (ranges per dimension, layout, fields) run
//! against a [`Snapshot`] of an array, producing columnar results.

pub mod dense;
mod dense_copy;
pub mod dense_geometry;
pub mod hilbert;
pub mod labels;
mod memory;
pub mod order;
pub mod sparse;
mod sparse_sorted;
pub mod tiles;

use crate::error::Result;
use crate::filter::Datatype;
use crate::schema::Scalar;
use crate::snapshot::Snapshot;

/// Runs a read: the dense or the sparse reader, by the schema.
pub fn read(snapshot: &Snapshot, query: &ReadQuery) -> Result<ReadResult> {
    let mut result = if snapshot.schema().is_dense() {
        dense::read(snapshot, query)?
    } else {
        sparse::read(snapshot, query)?
    };
    if query.skip_coordinates {
        result.dimensions.clear();
    }
    Ok(result)
}

/// The order of the result cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    #[default]
    RowMajor,
    ColMajor,
    /// Tile order, then cell order (Hilbert for Hilbert-ordered arrays).
    Global,
    /// Any order (this reader returns the global order).
    Unordered,
}

impl Layout {
    pub fn parse(text: &str) -> Option<Layout> {
        Some(match text {
            "row-major" => Layout::RowMajor,
            "col-major" => Layout::ColMajor,
            "global" => Layout::Global,
            "unordered" => Layout::Unordered,
            _ => return None,
        })
    }
}

/// An inclusive range of one dimension, as the dimension's value bytes
/// (little-endian numbers, or the bytes of a string).
pub type Range = (Vec<u8>, Vec<u8>);

/// What to read.
#[derive(Debug, Clone, Default)]
pub struct ReadQuery {
    /// Per dimension, the ranges to read (several = multi-range). A missing
    /// or empty entry means the whole domain (dense) or every cell (sparse).
    pub ranges: Vec<Vec<Range>>,
    pub layout: Layout,
    /// The attributes to return, in this order; `None` = all, in schema order.
    pub attributes: Option<Vec<String>>,
    /// Leave the result's `dimensions` empty (a dense read then never
    /// builds the coordinates at all).
    pub skip_coordinates: bool,
}

/// One result column: fixed cells in `data`, or var cells delimited by
/// `offsets` (one start per cell plus the end), and validity when nullable.
#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub datatype: Datatype,
    /// Values per cell; `None` for var-sized cells.
    pub cell_val_num: Option<u32>,
    pub nullable: bool,
    pub data: Vec<u8>,
    pub offsets: Option<Vec<u64>>,
    pub validity: Option<Vec<u8>>,
}

impl Column {
    pub fn new(
        name: &str,
        datatype: Datatype,
        cell_val_num: Option<u32>,
        nullable: bool,
    ) -> Column {
        Column {
            name: name.to_string(),
            datatype,
            cell_val_num,
            nullable,
            data: Vec::new(),
            offsets: cell_val_num.is_none().then(|| vec![0]),
            validity: nullable.then(Vec::new),
        }
    }

    /// Appends one cell.
    pub fn push(&mut self, bytes: &[u8], valid: bool) {
        self.data.extend_from_slice(bytes);
        if let Some(o) = &mut self.offsets {
            o.push(self.data.len() as u64);
        }
        if let Some(v) = &mut self.validity {
            v.push(u8::from(valid));
        }
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        match (&self.offsets, self.cell_val_num) {
            (Some(o), _) => o.len().saturating_sub(1),
            (None, Some(n)) => {
                let size = (n as u64 * self.datatype.size()).max(1) as usize;
                self.data.len() / size
            }
            (None, None) => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cell `i`: its bytes and whether it is valid.
    pub fn cell(&self, i: usize) -> (&[u8], bool) {
        let bytes = match (&self.offsets, self.cell_val_num) {
            (Some(o), _) => {
                let s = o.get(i).copied().unwrap_or(0) as usize;
                let e = o.get(i + 1).copied().unwrap_or(0) as usize;
                self.data.get(s..e).unwrap_or_default()
            }
            (None, Some(n)) => {
                let size = (n as u64 * self.datatype.size()) as usize;
                self.data.get(i * size..(i + 1) * size).unwrap_or_default()
            }
            (None, None) => &[],
        };
        let valid = self
            .validity
            .as_ref()
            .is_none_or(|v| v.get(i).copied().unwrap_or(0) != 0);
        (bytes, valid)
    }
}

/// The result of a read: coordinates, then the attributes asked for.
#[derive(Debug, Clone)]
pub struct ReadResult {
    pub dimensions: Vec<Column>,
    pub attributes: Vec<Column>,
}

impl ReadResult {
    /// The same fields, without cells.
    pub(crate) fn clone_empty(&self) -> ReadResult {
        let empty = |c: &Column| Column::new(&c.name, c.datatype, c.cell_val_num, c.nullable);
        ReadResult {
            dimensions: self.dimensions.iter().map(empty).collect(),
            attributes: self.attributes.iter().map(empty).collect(),
        }
    }

    pub fn cell_count(&self) -> usize {
        self.dimensions
            .first()
            .or(self.attributes.first())
            .map_or(0, Column::len)
    }
}

/// The bytes of a value of `datatype` given as a scalar (for building ranges).
pub fn encode_scalar(datatype: Datatype, value: &Scalar) -> Option<Vec<u8>> {
    use Datatype::*;
    Some(match value {
        Scalar::Bytes(b) => b.clone(),
        Scalar::Float(f) => match datatype {
            Float32 => (*f as f32).to_le_bytes().to_vec(),
            Float64 => f.to_le_bytes().to_vec(),
            _ => return None,
        },
        Scalar::Int(v) => {
            let v = *v;
            match datatype {
                Int8 | Char => i8::try_from(v).ok()?.to_le_bytes().to_vec(),
                Uint8 | Bool => u8::try_from(v).ok()?.to_le_bytes().to_vec(),
                Int16 => i16::try_from(v).ok()?.to_le_bytes().to_vec(),
                Uint16 => u16::try_from(v).ok()?.to_le_bytes().to_vec(),
                Int32 => i32::try_from(v).ok()?.to_le_bytes().to_vec(),
                Uint32 => u32::try_from(v).ok()?.to_le_bytes().to_vec(),
                Uint64 => u64::try_from(v).ok()?.to_le_bytes().to_vec(),
                Float32 => (v as f32).to_le_bytes().to_vec(),
                Float64 => (v as f64).to_le_bytes().to_vec(),
                _ => i64::try_from(v).ok()?.to_le_bytes().to_vec(),
            }
        }
    })
}
