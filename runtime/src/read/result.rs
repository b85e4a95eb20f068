//! What a read returns: columns of cells ([`Column`]) for the coordinates
//! and the attributes asked for ([`ReadResult`]).

pub use crate::column::Column;

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
