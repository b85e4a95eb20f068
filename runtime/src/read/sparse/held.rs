//! The tiles of a Hilbert-ordered read over a string dimension, held
//! decoded while their values are read in runs (`read::batches::
//! hilbert_runs`): a tile is decoded once, when it is opened (every field
//! the read needs, its least and greatest Hilbert value found from its
//! coordinates), and let go once the runs have passed its greatest value,
//! however many runs it spans.

use crate::error::{Cause, Error, Result};
use crate::fragment::{Field, FragmentMetadata};
use crate::read::order::GlobalOrder;
use crate::read::query::{decode_ranges, output_attributes, ReadQuery, ResultOrder};
use crate::read::result::ReadResult;
use crate::read::sparse::cells::coord_bytes;
use crate::read::sparse::fragment_tiles::{DecodedTilesByField, FragmentTiles};
use crate::read::sparse::merge::{
    fields_for, fragment_candidates, gather, latest_of_duplicates, load, result_order,
    sort_candidates,
};
use crate::schema::Scalar;
use crate::snapshot::Snapshot;

/// The opened tiles of one fragment not yet passed, decoded.
pub(crate) struct HeldTiles<'a> {
    held: FragmentTiles<'a>,
    /// Per held tile (slot): its least and greatest Hilbert value.
    bounds: Vec<(i128, i128)>,
    /// The fields decoded from each tile.
    fields: Vec<Field>,
}

impl<'a> HeldTiles<'a> {
    /// No tile of `fragment` held yet; `query` says the fields to decode.
    pub(crate) fn new(
        array: &Snapshot,
        fragment: &'a FragmentMetadata,
        query: &ReadQuery,
    ) -> Result<HeldTiles<'a>> {
        let attributes = output_attributes(array.schema(), query)?;
        Ok(HeldTiles {
            held: FragmentTiles {
                fragment,
                tiles: Vec::new(),
                fields: DecodedTilesByField::default(),
            },
            bounds: Vec::new(),
            fields: fields_for(array, fragment, &attributes, false),
        })
    }

    /// Decodes `tile` and holds it: its least and greatest Hilbert value,
    /// `None` (nothing held) when it has no cell.
    pub(crate) fn open(&mut self, array: &Snapshot, tile: u64) -> Result<Option<(i128, i128)>> {
        let fragment = self.held.fragment;
        let planned = vec![(fragment, vec![tile], self.fields.clone())];
        let Some(one) = load(array, planned)?.pop() else {
            return Ok(None);
        };
        let order = GlobalOrder::new(array.schema());
        let (mut least, mut most) = (u64::MAX, 0);
        for cell in 0..fragment.cell_num(tile, 0) {
            let mut coords = Vec::with_capacity(fragment.schema.dimensions.len());
            for (d, dim) in fragment.schema.dimensions.iter().enumerate() {
                let value = coord_bytes(&one, d, 0, cell)
                    .and_then(|bytes| Scalar::decode(dim.datatype, bytes))
                    .ok_or_else(|| {
                        let at = format!("fragment {}, tile {tile}", fragment.name);
                        Error::corrupt(0, "coordinates", Cause::EndsEarly).within(at)
                    })?;
                coords.push(value);
            }
            let value = GlobalOrder::hilbert_of(&order.key(&coords));
            (least, most) = (least.min(value), most.max(value));
        }
        if least > most {
            return Ok(None);
        }
        let bounds = (i128::from(least), i128::from(most));
        self.held.tiles.push(tile);
        self.held.fields.append(one.fields);
        self.bounds.push(bounds);
        Ok(Some(bounds))
    }

    /// Lets go of the tiles whose values all lie below `from` (the first
    /// ones: a fragment's tiles follow one another in Hilbert value).
    pub(crate) fn release_below(&mut self, from: i128) {
        let passed = self.bounds.iter().take_while(|b| b.1 < from).count();
        self.bounds.drain(..passed);
        self.held.tiles.drain(..passed);
        self.held.fields.drop_front(passed);
    }
}

/// The cells of `query` whose Hilbert values lie in `from..=to`, in global
/// order, duplicates resolved and deletes applied, from the tiles `held`
/// (one entry per fragment, in the snapshot's fragment order: the later
/// wins a tie of timestamps) — which must hold every cell of those values.
pub(crate) fn read_run(
    array: &Snapshot,
    query: &ReadQuery,
    held: &[&HeldTiles<'_>],
    (from, to): (i128, i128),
) -> Result<ReadResult> {
    let schema = array.schema();
    let ranges = decode_ranges(schema, query)?;
    let attributes = output_attributes(schema, query)?;
    let order = GlobalOrder::new(schema);
    let mut candidates = Vec::new();
    for (fi, tiles) in held.iter().enumerate() {
        let start = candidates.len();
        fragment_candidates(array, fi, &tiles.held, &ranges, false, &mut candidates)?;
        // Only this run's values, dropped as each fragment is done.
        let mut index = 0;
        candidates.retain(|c| {
            index += 1;
            let value = i128::from(GlobalOrder::hilbert_of(&order.key(&c.coords)));
            index <= start || (from..=to).contains(&value)
        });
    }
    if !schema.allows_dups {
        candidates = latest_of_duplicates(candidates);
    }
    candidates.retain(|c| !c.deleted);
    sort_candidates(schema, ResultOrder::Global, &mut candidates);
    let cells = result_order(ResultOrder::Global, &ranges, &candidates, false);
    let loaded: Vec<&FragmentTiles<'_>> = held.iter().map(|h| &h.held).collect();
    Ok(gather(schema, &attributes, &loaded, &candidates, &cells))
}
