//! The decoded tiles of the fragments a sparse read touches, per field.

use crate::fragment::{Field, FragmentMetadata};
use crate::read::tiles::TileData;

/// The decoded tiles of one fragment, per field, indexed by slot.
pub(crate) struct FragmentTiles<'a> {
    pub(crate) fragment: &'a FragmentMetadata,
    /// The tiles read, in stored order (a slot is an index into this).
    pub(crate) tiles: Vec<u64>,
    pub(crate) fields: DecodedTilesByField,
}

/// The decoded tiles of each loaded field of a fragment, looked up by
/// field without hashing: the general read path asks for a cell's field
/// once per cell, and a hashed lookup there cost as much as the work.
#[derive(Default)]
pub(crate) struct DecodedTilesByField {
    pub(crate) attributes: Vec<Option<Vec<TileData>>>,
    pub(crate) dimensions: Vec<Option<Vec<TileData>>>,
    pub(crate) coords: Option<Vec<TileData>>,
    pub(crate) timestamps: Option<Vec<TileData>>,
    pub(crate) delete_timestamps: Option<Vec<TileData>>,
    pub(crate) delete_condition_index: Option<Vec<TileData>>,
}

impl DecodedTilesByField {
    fn slot(&self, field: Field) -> Option<&Option<Vec<TileData>>> {
        match field {
            Field::Attribute(i) => self.attributes.get(i),
            Field::Dimension(d) => self.dimensions.get(d),
            Field::Coords => Some(&self.coords),
            Field::Timestamps => Some(&self.timestamps),
            Field::DeleteTimestamps => Some(&self.delete_timestamps),
            Field::DeleteConditionIndex => Some(&self.delete_condition_index),
        }
    }

    /// The tiles of `field`, one per slot, if it was loaded.
    pub(crate) fn get(&self, field: &Field) -> Option<&Vec<TileData>> {
        self.slot(*field)?.as_ref()
    }

    /// Every field's tiles, with what it holds.
    fn all_mut(&mut self) -> impl Iterator<Item = &mut Option<Vec<TileData>>> {
        self.attributes
            .iter_mut()
            .chain(self.dimensions.iter_mut())
            .chain([
                &mut self.coords,
                &mut self.timestamps,
                &mut self.delete_timestamps,
                &mut self.delete_condition_index,
            ])
    }

    /// Appends the tiles of `more` (the same fields loaded) after these.
    pub(crate) fn append(&mut self, mut more: DecodedTilesByField) {
        // The same slots on both sides, so that the fields pair up.
        let attributes = self.attributes.len().max(more.attributes.len());
        let dimensions = self.dimensions.len().max(more.dimensions.len());
        for side in [&mut *self, &mut more] {
            side.attributes.resize_with(attributes, || None);
            side.dimensions.resize_with(dimensions, || None);
        }
        for (into, add) in self.all_mut().zip(more.all_mut()) {
            if let Some(add) = add.take() {
                into.get_or_insert_with(Vec::new).extend(add);
            }
        }
    }

    /// Drops the first `n` tiles of every field.
    pub(crate) fn drop_front(&mut self, n: usize) {
        for tiles in self.all_mut().flatten() {
            tiles.drain(..n.min(tiles.len()));
        }
    }

    pub(crate) fn insert(&mut self, field: Field, tiles: Vec<TileData>) {
        let grow = |slots: &mut Vec<Option<Vec<TileData>>>, i: usize| {
            if slots.len() <= i {
                slots.resize_with(i + 1, || None);
            }
        };
        let slot = match field {
            Field::Attribute(i) => {
                grow(&mut self.attributes, i);
                &mut self.attributes[i]
            }
            Field::Dimension(d) => {
                grow(&mut self.dimensions, d);
                &mut self.dimensions[d]
            }
            Field::Coords => &mut self.coords,
            Field::Timestamps => &mut self.timestamps,
            Field::DeleteTimestamps => &mut self.delete_timestamps,
            Field::DeleteConditionIndex => &mut self.delete_condition_index,
        };
        *slot = Some(tiles);
    }
}
