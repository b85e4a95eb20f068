//! What a read returns: columns of cells ([`Column`]) for the coordinates
//! and the attributes asked for ([`ReadResult`]).

pub use crate::column::Column;

/// The result of a read: coordinates, then the attributes asked for.
#[derive(Debug, Clone)]
pub struct ReadResult {
    /// The coordinates of each result cell, one column per dimension.
    pub dimensions: Vec<Column>,
    /// The attributes asked for, in the order asked, each with one value per result cell.
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

    /// Cells `range` of the result (a copy), e.g. the first N of a batch.
    /// Panics when the range is not within the result's cells.
    pub fn slice(&self, range: std::ops::Range<usize>) -> ReadResult {
        let slice = |c: &Column| slice_column(c, range.start, range.end);
        ReadResult {
            dimensions: self.dimensions.iter().map(slice).collect(),
            attributes: self.attributes.iter().map(slice).collect(),
        }
    }

    /// The number of result cells.
    pub fn cell_count(&self) -> usize {
        self.dimensions
            .first()
            .or(self.attributes.first())
            .map_or(0, Column::len)
    }
}

/// Cells `from..to` of a column.
fn slice_column(column: &Column, from: usize, to: usize) -> Column {
    let mut out = Column::new(
        &column.name,
        column.datatype,
        column.cell_val_num,
        column.nullable,
    );
    match (&column.offsets, column.cell_size()) {
        (Some(offsets), _) => {
            let (start, end) = (offsets[from], offsets[to]);
            out.data = column.data[start as usize..end as usize].to_vec();
            out.offsets = Some(offsets[from..=to].iter().map(|o| o - start).collect());
        }
        (None, Some(size)) => out.data = column.data[from * size..to * size].to_vec(),
        (None, None) => {}
    }
    if let Some(v) = &column.validity {
        out.validity = Some(v[from..to].to_vec());
    }
    out
}
