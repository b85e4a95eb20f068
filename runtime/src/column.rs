//! [`Column`]: the cells of one field, columnar — what a read returns and
//! what a write takes.
//!
//! Fixed-size cells lie back to back in `data`; var-sized cells are
//! delimited by `offsets` (one start per cell, then the end); a nullable
//! field has one validity byte per cell. No cell has an allocation of its
//! own, so a consolidation hands the columns it read straight to the writer.

use crate::filter::Datatype;

/// One field's cells: fixed cells in `data`, or var cells delimited by
/// `offsets` (one start per cell plus the end), and validity when nullable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The dimension or attribute name.
    pub name: String,
    /// The type of each value.
    pub datatype: Datatype,
    /// Values per cell; `None` for var-sized cells.
    pub cell_val_num: Option<u32>,
    /// The field is nullable: `validity` is present.
    pub nullable: bool,
    /// Fixed fields: the cells back to back; var fields: the values of every cell back to back (little-endian numbers or raw string bytes).
    pub data: Vec<u8>,
    /// Var fields: the start of each cell in `data`, plus the end; `None` for fixed fields.
    pub offsets: Option<Vec<u64>>,
    /// Nullable fields: one byte per cell, non-zero when the cell is valid.
    pub validity: Option<Vec<u8>>,
}

/// A value type whose little-endian bytes are a cell of one value
/// ([`Column::from_values`]).
pub trait CellValue: Copy {
    /// The datatype a column of these values gets.
    const DATATYPE: Datatype;
    /// Appends the value's little-endian bytes.
    fn put_le(self, out: &mut Vec<u8>);
}

macro_rules! cell_value {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl CellValue for $t {
            const DATATYPE: Datatype = Datatype::$d;
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}

cell_value!(
    i8 => Int8, u8 => Uint8, i16 => Int16, u16 => Uint16, i32 => Int32, u32 => Uint32,
    i64 => Int64, u64 => Uint64, f32 => Float32, f64 => Float64,
);

impl Column {
    /// An empty column of the field's shape: var-sized when `cell_val_num`
    /// is `None`, with validity when `nullable`.
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

    /// A column of one value per cell, typed by `T` (`i32` → `INT32`, …).
    pub fn from_values<T: CellValue>(name: &str, values: &[T]) -> Column {
        Column::from_values_as(name, T::DATATYPE, values)
    }

    /// A column of one value per cell, stored as `datatype` (which must
    /// have `T`'s size: e.g. `i64` values as `DATETIME_MS`).
    pub fn from_values_as<T: CellValue>(name: &str, datatype: Datatype, values: &[T]) -> Column {
        let mut column = Column::new(name, datatype, Some(1), false);
        column.data.reserve(std::mem::size_of_val(values));
        for v in values {
            v.put_le(&mut column.data);
        }
        column
    }

    /// A column of fixed-size cells given as their bytes back to back
    /// (`cell_val_num` values of `datatype` per cell).
    pub fn from_fixed_bytes(
        name: &str,
        datatype: Datatype,
        cell_val_num: u32,
        data: Vec<u8>,
    ) -> Column {
        Column {
            data,
            ..Column::new(name, datatype, Some(cell_val_num), false)
        }
    }

    /// A var-sized column of strings (`STRING_ASCII`, `STRING_UTF8`, …).
    pub fn from_strings<S: AsRef<str>>(name: &str, datatype: Datatype, strings: &[S]) -> Column {
        let mut column = Column::new(name, datatype, None, false);
        for s in strings {
            column.push(s.as_ref().as_bytes(), true);
        }
        column
    }

    /// The same cells, nullable, with one flag per cell (`true` = valid).
    pub fn with_validity(mut self, valid: &[bool]) -> Column {
        self.nullable = true;
        self.validity = Some(valid.iter().map(|&v| u8::from(v)).collect());
        self
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

    /// The bytes of one fixed-size cell; `None` for var-sized cells.
    pub fn cell_size(&self) -> Option<usize> {
        self.cell_val_num
            .map(|n| (n as u64 * self.datatype.size()) as usize)
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

    /// No cells.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cell `i`: its bytes and whether it is valid.
    pub fn cell(&self, i: usize) -> (&[u8], bool) {
        (self.cell_bytes(i), self.is_valid(i))
    }

    /// The bytes of cell `i` (empty past the end).
    #[inline]
    pub fn cell_bytes(&self, i: usize) -> &[u8] {
        match (&self.offsets, self.cell_val_num) {
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
        }
    }

    /// Whether cell `i` is valid (always, for a column without validity).
    #[inline]
    pub fn is_valid(&self, i: usize) -> bool {
        self.validity
            .as_ref()
            .is_none_or(|v| v.get(i).copied().unwrap_or(0) != 0)
    }

    /// Why the column is not well formed, if it is not: fixed data not a
    /// whole number of cells, offsets not starting at 0, decreasing or past
    /// the data, validity of another length than the cells.
    pub fn shape_error(&self) -> Option<String> {
        let n = match (&self.offsets, self.cell_size()) {
            (Some(o), _) => {
                if o.first() != Some(&0)
                    || o.windows(2).any(|w| w[0] > w[1])
                    || o.last().is_some_and(|&e| e != self.data.len() as u64)
                {
                    return Some(format!(
                        "the offsets of {} do not delimit its data",
                        self.name
                    ));
                }
                o.len() - 1
            }
            (None, Some(size)) => {
                if size == 0 || !self.data.len().is_multiple_of(size) {
                    return Some(format!(
                        "the data of {} is not a whole number of {size}-byte cells",
                        self.name
                    ));
                }
                self.data.len() / size
            }
            (None, None) => return Some(format!("{} is var-sized without offsets", self.name)),
        };
        match &self.validity {
            Some(v) if v.len() != n => Some(format!(
                "{} has {n} cells but {} validity values",
                self.name,
                v.len()
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_and_string_columns() {
        let c = Column::from_values("a", &[1i32, -2, 3]);
        assert_eq!(c.datatype, Datatype::Int32);
        assert_eq!(c.len(), 3);
        assert_eq!(c.cell(1), (&(-2i32).to_le_bytes()[..], true));
        assert_eq!(c.shape_error(), None);

        let s = Column::from_strings("s", Datatype::StringAscii, &["ab", "", "cde"])
            .with_validity(&[true, false, true]);
        assert_eq!(s.offsets, Some(vec![0, 2, 2, 5]));
        assert_eq!(s.data, b"abcde");
        assert_eq!(s.cell(1), (&b""[..], false));
        assert_eq!(s.cell(2), (&b"cde"[..], true));
        assert_eq!(s.shape_error(), None);
    }

    #[test]
    fn shape_errors() {
        let mut c = Column::from_fixed_bytes("a", Datatype::Int32, 1, vec![0; 5]);
        assert_eq!(
            c.shape_error().as_deref(),
            Some("the data of a is not a whole number of 4-byte cells")
        );
        c.data.truncate(4);
        c = c.with_validity(&[true, true]);
        assert_eq!(
            c.shape_error().as_deref(),
            Some("a has 1 cells but 2 validity values")
        );
        let mut s = Column::from_strings("s", Datatype::StringUtf8, &["x"]);
        s.offsets = Some(vec![0, 2]);
        assert_eq!(
            s.shape_error().as_deref(),
            Some("the offsets of s do not delimit its data")
        );
    }
}
