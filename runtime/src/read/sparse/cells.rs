//! One cell of the general sparse path: its coordinates and fields as a
//! delete condition sees them, a candidate kept for the merge, and the
//! delete a fragment's own delete metadata records for it.

use std::collections::HashSet;

use crate::condition::{CellView, Condition};
use crate::error::{Cause, Error, Result};
use crate::filter::Datatype;
use crate::fragment::Field;
use crate::read::sparse::fragment_tiles::FragmentTiles;
use crate::read::tiles::TileData;
use crate::schema::Scalar;

pub(crate) struct CellRef<'a, 'b> {
    pub(crate) frag: &'b FragmentTiles<'a>,
    pub(crate) slot: usize,
    pub(crate) cell: u64,
}

impl CellView for CellRef<'_, '_> {
    fn field(&self, name: &str) -> Option<(Datatype, &[u8], bool)> {
        let schema = &self.frag.fragment.schema;
        if let Some((i, a)) = schema.attribute(name) {
            let tile = self.frag.fields.get(&Field::Attribute(i))?.get(self.slot)?;
            return Some((a.datatype, tile.cell(self.cell), tile.valid(self.cell)));
        }
        let (j, d) = schema.dimension(name)?;
        let bytes = coord_bytes(self.frag, j, self.slot, self.cell)?;
        Some((d.datatype, bytes, true))
    }
}

pub(crate) fn coord_bytes<'a>(
    frag: &'a FragmentTiles<'_>,
    dim: usize,
    slot: usize,
    cell: u64,
) -> Option<&'a [u8]> {
    let f = frag.fragment;
    if crate::format::generated::dimensions_stored_apart(f.version) {
        let tile = frag.fields.get(&Field::Dimension(dim))?.get(slot)?;
        return Some(tile.cell(cell));
    }
    // v1-v4: one __coords tile, unzipped (dimension after dimension) from v2
    // and in v1 under compression, otherwise zipped.
    let tile = frag.fields.get(&Field::Coords)?.get(slot)?;
    let size = f.schema.dimensions.get(dim)?.coord_size() as usize;
    let dims = f.schema.dimensions.len();
    let n = tile.cells as usize;
    let compressed = f.schema.coords_filters.filters.iter().any(|x| {
        matches!(
            x,
            crate::filter::Filter::Gzip { .. }
                | crate::filter::Filter::Zstd { .. }
                | crate::filter::Filter::Lz4 { .. }
                | crate::filter::Filter::Bzip2 { .. }
                | crate::filter::Filter::Rle { .. }
                | crate::filter::Filter::DoubleDelta { .. }
        )
    });
    let start = if crate::format::generated::coords_unzipped(f.version) || compressed {
        dim * n * size + cell as usize * size
    } else {
        (cell as usize * dims + dim) * size
    };
    tile.data.get(start..start + size)
}

pub(crate) fn condition_fields(c: &Condition, out: &mut HashSet<String>) {
    match c {
        Condition::And(v) | Condition::Or(v) => v.iter().for_each(|c| condition_fields(c, out)),
        Condition::Not(c) => condition_fields(c, out),
        Condition::Compare { field, .. } => {
            out.insert(field.clone());
        }
    }
}

pub(crate) fn u64_at(tile: Option<&TileData>, cell: u64) -> Option<u64> {
    tile.and_then(|t| t.cell(cell).try_into().ok())
        .map(u64::from_le_bytes)
}

pub(crate) struct Candidate {
    pub(crate) frag: usize,
    pub(crate) slot: usize,
    pub(crate) cell: u64,
    pub(crate) coords: Vec<Scalar>,
    pub(crate) timestamp: u64,
    /// Removed by a delete; still hides older duplicates (TileDB resolves
    /// duplicates before it applies deletes).
    pub(crate) deleted: bool,
    /// Consolidation only: the delete that removed the cell, as its
    /// timestamp and its index in the array's conditions.
    pub(crate) deleted_by: Option<(u64, u64)>,
    /// How many times the cell is returned: the number of query ranges
    /// holding it (overlapping ranges repeat it), multiplied across dimensions.
    pub(crate) copies: usize,
}

/// The delete that a fragment's own delete metadata records for one cell
/// (`dt`, `dci`), its index converted from the fragment's processed
/// conditions to the array's conditions (by marker).
pub(crate) fn stored_delete(
    frag: &FragmentTiles<'_>,
    processed: &[String],
    conditions: &[crate::condition::DeleteCondition],
    slot: usize,
    cell: u64,
) -> Result<Option<(u64, u64)>> {
    let tile_of = |field| frag.fields.get(&field).and_then(|t| t.get(slot));
    let name = &frag.fragment.name;
    let (Some(dt), Some(dci)) = (
        u64_at(tile_of(Field::DeleteTimestamps), cell),
        u64_at(tile_of(Field::DeleteConditionIndex), cell),
    ) else {
        let at = format!("fragment {name}");
        return Err(Error::corrupt(0, "delete metadata", Cause::EndsEarly).within(at));
    };
    if dt == u64::MAX {
        return Ok(None);
    }
    if dci == u64::MAX {
        return Ok(Some((dt, u64::MAX)));
    }
    let marker = usize::try_from(dci)
        .ok()
        .and_then(|i| processed.get(i))
        .ok_or_else(|| {
            let cause = Cause::IndexOutOfRange {
                index: dci,
                count: processed.len() as u64,
            };
            Error::corrupt(0, "dci", cause).within(format!("fragment {name}"))
        })?;
    let index = conditions
        .iter()
        .position(|c| &c.marker == marker)
        .ok_or_else(|| {
            let cause = Cause::BadName {
                name: marker.clone(),
                expected: "the marker of a delete condition the array holds",
            };
            Error::corrupt(0, "processed conditions", cause).within(format!("fragment {name}"))
        })?;
    Ok(Some((dt, index as u64)))
}
