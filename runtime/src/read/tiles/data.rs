//! A decoded tile and how its field is stored.

use crate::filter::{Datatype, FilterPipeline};
use crate::fragment::{Field, FragmentMetadata};

/// How a field is stored in a fragment.
#[derive(Debug, Clone)]
pub struct FieldShape {
    /// The type of each value.
    pub datatype: Datatype,
    /// Values per cell; `None` for var-sized.
    pub cell_val_num: Option<u32>,
    /// Cells carry validity (a separate validity tile).
    pub nullable: bool,
    /// The pipeline its tiles were written through.
    pub filters: FilterPipeline,
}

impl FieldShape {
    /// The shape of `field` in `fragment`'s own schema.
    pub fn of(fragment: &FragmentMetadata, field: Field) -> Option<FieldShape> {
        let schema = &fragment.schema;
        Some(match field {
            Field::Attribute(i) => {
                let a = schema.attributes.get(i)?;
                FieldShape {
                    datatype: a.datatype,
                    cell_val_num: a.cell_val_num,
                    nullable: a.nullable,
                    filters: a.filters.clone(),
                }
            }
            Field::Dimension(j) => {
                let d = schema.dimensions.get(j)?;
                FieldShape {
                    datatype: d.datatype,
                    cell_val_num: if d.var { None } else { Some(1) },
                    nullable: false,
                    filters: d.filters.clone(),
                }
            }
            Field::Coords => {
                let d = schema.dimensions.first()?;
                FieldShape {
                    datatype: d.datatype,
                    cell_val_num: Some(schema.dimensions.len() as u32),
                    nullable: false,
                    filters: schema.coords_filters.clone(),
                }
            }
            Field::Timestamps | Field::DeleteTimestamps | Field::DeleteConditionIndex => {
                FieldShape {
                    datatype: Datatype::Uint64,
                    cell_val_num: Some(1),
                    nullable: false,
                    filters: schema.coords_filters.clone(),
                }
            }
        })
    }
}

/// One decoded tile of one field.
#[derive(Debug, Clone, Default)]
pub struct TileData {
    /// Fixed cells, or the var data for var-sized fields.
    pub data: Vec<u8>,
    /// Var fields: the start of each cell in `data`, plus the end.
    pub offsets: Option<Vec<u64>>,
    /// Nullable fields: one byte per cell, non-zero when valid.
    pub validity: Option<Vec<u8>>,
    /// Bytes per cell (fixed fields), or the size of one offset (var fields).
    pub cell_size: u64,
    /// The number of cells.
    pub cells: u64,
}

impl TileData {
    /// The bytes of cell `i`.
    pub fn cell(&self, i: u64) -> &[u8] {
        match &self.offsets {
            Some(offsets) => {
                let start = offsets.get(i as usize).copied().unwrap_or(0) as usize;
                let end = offsets.get(i as usize + 1).copied().unwrap_or(0) as usize;
                self.data.get(start..end).unwrap_or_default()
            }
            None => {
                let start = (i * self.cell_size) as usize;
                self.data
                    .get(start..start + self.cell_size as usize)
                    .unwrap_or_default()
            }
        }
    }

    /// Cell `i` is valid (always, for fields that are not nullable).
    pub fn valid(&self, i: u64) -> bool {
        self.validity
            .as_ref()
            .is_none_or(|v| v.get(i as usize).copied().unwrap_or(0) != 0)
    }
}
