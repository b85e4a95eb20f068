//! What a read returns: columns of cells ([`Column`]) for the coordinates
//! and the attributes asked for ([`ReadResult`]).

use crate::filter::Datatype;

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
