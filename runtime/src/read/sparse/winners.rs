//! Whether the results of a one-dimensional sparse read come from one
//! fragment (TileDB's choice between range order and coordinate order, see
//! `merge::result_order`), found in a streaming pass that holds a few
//! tiles' coordinates at a time, never the cells.
//!
//! The rule counts the results after duplicates are resolved and before
//! deletes apply: a cell inside the ranges and the open time range is a
//! result unless a cell of the same coordinate with a later (timestamp,
//! fragment) is one too. Two passes, each stopping as soon as it can tell:
//! the fragments other than the one with the most cells in the touched
//! tiles are read first, alone — when none of their cells is in the ranges
//! (the common case: their tiles merely meet the ranges), every result
//! comes from the largest, which is never read. Otherwise every touched
//! fragment is read in its stored order, merged in that order, each
//! coordinate's latest cell taken, until a second fragment wins one or the
//! end.
//!
//! Over one dimension the stored order is coordinate order (space tiles
//! along the dimension, cells in order within each), except in Hilbert
//! order: the Hilbert value first, ties by coordinate. Over numbers that
//! is coordinate order too (a linear map, truncated, grows with the
//! coordinate); over a string it is not: TileDB maps a string to its first
//! eight bytes read as signed `char`s, so a byte of 0x80 or more sorts it
//! after strings it precedes. So in Hilbert order the pass computes each
//! cell's Hilbert value and merges by it, then the coordinate, which holds
//! every cell of one coordinate together all the same (equal coordinates,
//! equal values).

use crate::error::{Cause, Error, Result};
use crate::fragment::{Field, FragmentMetadata};
use crate::read::order::{GlobalKey, GlobalOrder};
use crate::read::query::{decode_ranges, ReadQuery};
use crate::read::sparse::cells::{coord_bytes, u64_at};
use crate::read::sparse::fragment_tiles::FragmentTiles;
use crate::read::sparse::merge::load;
use crate::read::sparse::ranges::{range_hits, touched_tiles};
use crate::schema::{Scalar, SchemaOrder};
use crate::snapshot::Snapshot;

/// Whether every result of `query` (one dimension, row- or column-major,
/// several ranges) comes from at most one fragment. Each fragment's tiles
/// are decoded about `chunk_bytes` of coordinates at a time (at least one
/// tile). `None` when the fragments' cells cannot be merged as they
/// stream: a fragment's cells found out of the array's global order (not
/// as TileDB writes them).
pub(crate) fn results_from_one_fragment(
    array: &Snapshot,
    query: &ReadQuery,
    chunk_bytes: u64,
) -> Result<Option<bool>> {
    let ranges = decode_ranges(array.schema(), query)?;
    let Some(ranges) = ranges.first() else {
        return Ok(Some(true));
    };
    // The fragments whose tiles the ranges touch, in the merge's fragment
    // order (the later of two equal timestamps wins by that index).
    let mut touched = Vec::new();
    let visible = array
        .fragments()
        .iter()
        .filter(|f| !f.dense && f.non_empty_domain.is_some());
    for (index, fragment) in visible.enumerate() {
        let tiles = touched_tiles(array, fragment, std::slice::from_ref(ranges))?;
        if !tiles.is_empty() {
            let cells: u64 = tiles.iter().map(|&t| fragment.cell_num(t, 0)).sum();
            touched.push((Cursor::new(array, index, fragment, tiles), cells));
        }
    }
    if touched.len() <= 1 {
        return Ok(Some(true));
    }
    let chunk_cells = (chunk_bytes / 8 / touched.len() as u64).max(1);
    let window = (
        array.options().timestamp_start,
        array.options().timestamp_end,
    );
    let largest = (0..touched.len())
        .max_by_key(|&i| touched[i].1)
        .unwrap_or(0);

    // The others alone: any of their cells a candidate?
    for (i, (cursor, _)) in touched.iter().enumerate() {
        if i == largest {
            continue;
        }
        let mut cursor = cursor.restarted(array);
        while let Some(cell) = cursor.next(array, chunk_cells)? {
            if cell.is_candidate(ranges, window) {
                return merged_winners_from_one(array, touched, ranges, window, chunk_cells);
            }
        }
    }
    Ok(Some(true))
}

/// The second pass: every touched fragment merged in the array's global
/// order, ties by coordinate.
fn merged_winners_from_one(
    array: &Snapshot,
    touched: Vec<(Cursor<'_>, u64)>,
    ranges: &[(Scalar, Scalar)],
    window: (u64, u64),
    chunk_cells: u64,
) -> Result<Option<bool>> {
    let allows_dups = array.schema().allows_dups;
    let mut cursors: Vec<Cursor<'_>> = touched.into_iter().map(|(c, _)| c).collect();
    let mut heads: Vec<Option<StreamedCell>> = Vec::with_capacity(cursors.len());
    for cursor in &mut cursors {
        heads.push(cursor.next(array, chunk_cells)?);
    }
    let mut winner: Option<usize> = None;
    loop {
        // The least cell of the heads.
        let mut least: Option<&StreamedCell> = None;
        for cell in heads.iter().flatten() {
            if least.is_none_or(|l| cell.order(l).is_lt()) {
                least = Some(cell);
            }
        }
        let Some(least) = least.map(|c| c.coord.clone()) else {
            return Ok(Some(true));
        };
        // Every cell of that coordinate, each fragment's in turn; the
        // latest (timestamp, fragment) of the candidates wins.
        let mut latest: Option<(u64, usize)> = None;
        for (cursor, head) in cursors.iter_mut().zip(heads.iter_mut()) {
            while let Some(cell) = head.take_if(|c| c.coord.compare(&least).is_eq()) {
                if cell.is_candidate(ranges, window) {
                    let key = (cell.timestamp, cursor.index);
                    if allows_dups {
                        // Every candidate is a result.
                        if winner.is_some_and(|w| w != cursor.index) {
                            return Ok(Some(false));
                        }
                        winner = Some(cursor.index);
                    }
                    latest = latest.max(Some(key));
                }
                *head = cursor.next(array, chunk_cells)?;
            }
            if cursor.unsorted {
                return Ok(None);
            }
        }
        if let Some((_, index)) = latest {
            if winner.is_some_and(|w| w != index) {
                return Ok(Some(false));
            }
            winner = Some(index);
        }
    }
}

/// One cell as the pass sees it: its coordinate, its key in the array's
/// global order (in Hilbert order alone: else coordinate order is the
/// global order) and its write timestamp.
#[derive(Clone)]
struct StreamedCell {
    coord: Scalar,
    key: Option<GlobalKey>,
    timestamp: u64,
}

impl StreamedCell {
    /// The order of the cells in a fragment: global order, ties by
    /// coordinate (as TileDB breaks ties of Hilbert values).
    fn order(&self, other: &StreamedCell) -> std::cmp::Ordering {
        let key = match (&self.key, &other.key) {
            (Some(a), Some(b)) => a.tile_cmp(b),
            _ => std::cmp::Ordering::Equal,
        };
        key.then_with(|| self.coord.compare(&other.coord))
    }

    /// Inside the ranges and the open time range.
    fn is_candidate(&self, ranges: &[(Scalar, Scalar)], (start, end): (u64, u64)) -> bool {
        (start..=end).contains(&self.timestamp) && range_hits(&self.coord, ranges) > 0
    }
}

/// A fragment's touched tiles streamed cell by cell, a chunk of tiles
/// decoded at a time (coordinates and timestamps only).
struct Cursor<'a> {
    /// The fragment's index among the visible sparse fragments.
    index: usize,
    fragment: &'a FragmentMetadata,
    tiles: Vec<u64>,
    /// The first tile (an index into `tiles`) of the next chunk.
    next_tile: usize,
    chunk: Option<FragmentTiles<'a>>,
    slot: usize,
    cell: u64,
    /// The array's global order when it is Hilbert order: each cell's key.
    hilbert: Option<GlobalOrder>,
    /// The last cell handed out, to check the stored order.
    last: Option<StreamedCell>,
    /// A cell came out before the one before it.
    unsorted: bool,
}

impl<'a> Cursor<'a> {
    fn new(
        array: &Snapshot,
        index: usize,
        fragment: &'a FragmentMetadata,
        tiles: Vec<u64>,
    ) -> Cursor<'a> {
        Cursor {
            index,
            fragment,
            tiles,
            hilbert: (array.schema().cell_order == SchemaOrder::Hilbert)
                .then(|| GlobalOrder::new(array.schema())),
            next_tile: 0,
            chunk: None,
            slot: 0,
            cell: 0,
            last: None,
            unsorted: false,
        }
    }

    /// A fresh cursor over the same tiles.
    fn restarted(&self, array: &Snapshot) -> Cursor<'a> {
        Cursor::new(array, self.index, self.fragment, self.tiles.clone())
    }

    /// The next cell; `None` at the end of the touched tiles.
    fn next(&mut self, array: &Snapshot, chunk_cells: u64) -> Result<Option<StreamedCell>> {
        loop {
            if let Some(chunk) = &self.chunk {
                if self.slot < chunk.tiles.len() {
                    let tile = chunk.tiles[self.slot];
                    if self.cell < self.fragment.cell_num(tile, 0) {
                        let cell = self.read_cell(chunk)?;
                        self.cell += 1;
                        if self.last.as_ref().is_some_and(|l| cell.order(l).is_lt()) {
                            self.unsorted = true;
                        }
                        self.last = Some(cell.clone());
                        return Ok(Some(cell));
                    }
                    self.slot += 1;
                    self.cell = 0;
                    continue;
                }
            }
            // The next chunk: tiles up to `chunk_cells` cells, at least one.
            if self.next_tile >= self.tiles.len() {
                self.chunk = None;
                return Ok(None);
            }
            let mut end = self.next_tile;
            let mut cells = 0;
            while end < self.tiles.len() && (end == self.next_tile || cells < chunk_cells) {
                cells += self.fragment.cell_num(self.tiles[end], 0);
                end += 1;
            }
            // The chunk before is dropped first: one chunk held at a time.
            self.chunk = None;
            let mut fields =
                if crate::format::generated::dimensions_stored_apart(self.fragment.version) {
                    vec![Field::Dimension(0)]
                } else {
                    vec![Field::Coords]
                };
            if self.fragment.has_timestamps {
                fields.push(Field::Timestamps);
            }
            let chunk_tiles = self.tiles[self.next_tile..end].to_vec();
            let mut loaded = load(array, vec![(self.fragment, chunk_tiles, fields)])?;
            self.chunk = loaded.pop();
            self.next_tile = end;
            self.slot = 0;
            self.cell = 0;
        }
    }

    /// The cell at the cursor in `chunk`.
    fn read_cell(&self, chunk: &FragmentTiles<'_>) -> Result<StreamedCell> {
        let f = self.fragment;
        let at = || {
            let tile = chunk.tiles[self.slot];
            format!("fragment {}, tile {tile}", f.name)
        };
        let dim = &f.schema.dimensions[0];
        let coord = coord_bytes(chunk, 0, self.slot, self.cell)
            .and_then(|bytes| Scalar::decode(dim.datatype, bytes))
            .ok_or_else(|| Error::corrupt(0, "coordinates", Cause::EndsEarly).within(at()))?;
        let timestamps = chunk.fields.get(&Field::Timestamps);
        let timestamp = match timestamps {
            Some(tiles) => u64_at(tiles.get(self.slot), self.cell)
                .ok_or_else(|| Error::corrupt(0, "timestamps", Cause::EndsEarly).within(at()))?,
            None => f.name.timestamp_range().0,
        };
        let key = self
            .hilbert
            .as_ref()
            .map(|order| order.key(std::slice::from_ref(&coord)));
        Ok(StreamedCell {
            coord,
            key,
            timestamp,
        })
    }
}
