//! A Hilbert-ordered sparse read whose tiles' MBRs do not bound their
//! Hilbert values (a string dimension: TileDB maps a string by its first
//! eight bytes, each sign-extended, so a string between two ASCII bounds
//! may map past both), cut into runs of Hilbert values all the same.
//!
//! A fragment's cells are stored in global order, so its tiles follow one
//! another in Hilbert value: every tile after one holds values no less
//! than that tile's greatest. The read goes through the fragments' touched
//! tiles as a merge does: a tile is *opened* by decoding it (every field
//! the read needs, `sparse::HeldTiles`), its least and greatest value found
//! from its coordinates; the values below the least greatest value of the
//! fragments still holding unopened tiles can then be in opened tiles only.
//! A part is such a run of values, read from the opened tiles as they are
//! held; a tile is let go once the runs pass its greatest value. Each tile
//! is so decoded once, however many runs it spans; tiles are opened until
//! a part is estimated at the target size, so memory holds about a part's
//! tiles (and any opened tile whose values reach further).

use std::collections::VecDeque;

use crate::error::{Cause, Error, Result};
use crate::read::batches::estimate::CellBytes;
use crate::read::query::{decode_ranges, ReadQuery, ResultOrder};
use crate::read::result::ReadResult;
use crate::read::sparse::ranges::{load_rtrees, touched_tiles};
use crate::read::sparse::{read_run, HeldTiles};
use crate::schema::SchemaOrder;
use crate::snapshot::Snapshot;

/// One fragment's touched tiles and those opened.
struct FragmentRun<'a> {
    /// The fragment's index in the snapshot's fragments.
    index: usize,
    /// The touched tiles, in stored order.
    tiles: Vec<u64>,
    /// How many of `tiles` are opened.
    next: usize,
    /// The opened tiles not yet passed: index, cells, least and greatest
    /// Hilbert value.
    open: VecDeque<(u64, u64, i128, i128)>,
    /// The greatest value of the last tile opened (the least any unopened
    /// tile may hold).
    reached: i128,
    /// The opened tiles not yet passed, decoded.
    held: HeldTiles<'a>,
}

/// The runs of a Hilbert-ordered read (see the module's description).
pub(crate) struct HilbertRuns<'a> {
    query: ReadQuery,
    fragments: Vec<FragmentRun<'a>>,
    /// The least value the next part holds; `None` once every value is.
    from: Option<i128>,
}

impl<'a> HilbertRuns<'a> {
    /// The runs of `query` when it is a global or unordered read of a
    /// sparse Hilbert-ordered array; `None` otherwise.
    pub(crate) fn new(snapshot: &'a Snapshot, query: &ReadQuery) -> Result<Option<Self>> {
        let schema = snapshot.schema();
        let global = matches!(query.layout, ResultOrder::Global | ResultOrder::Unordered);
        if schema.is_dense() || schema.cell_order != SchemaOrder::Hilbert || !global {
            return Ok(None);
        }
        let ranges = decode_ranges(schema, query)?;
        load_rtrees(snapshot);
        let mut fragments = Vec::new();
        for (index, fragment) in snapshot.fragments().iter().enumerate() {
            if fragment.dense || fragment.non_empty_domain.is_none() {
                continue;
            }
            let tiles = touched_tiles(snapshot, fragment, &ranges)?;
            if !tiles.is_empty() {
                fragments.push(FragmentRun {
                    index,
                    tiles,
                    next: 0,
                    open: VecDeque::new(),
                    reached: -1,
                    held: HeldTiles::new(snapshot, fragment, query)?,
                });
            }
        }
        Ok(Some(HilbertRuns {
            query: query.clone(),
            fragments,
            from: Some(0),
        }))
    }

    /// The Hilbert values of the next part, of about `target` bytes where
    /// the tiles allow; `None` at the end.
    pub(crate) fn next_part(
        &mut self,
        snapshot: &Snapshot,
        cell_bytes: &CellBytes,
        target: u64,
    ) -> Result<Option<(i128, i128)>> {
        let Some(from) = self.from else {
            return Ok(None);
        };
        for run in &mut self.fragments {
            run.open.retain(|&(_, _, _, most)| most >= from);
            run.held.release_below(from);
            // Each fragment with tiles left has one reaching `from`.
            while run.reached < from && run.next < run.tiles.len() {
                open_next(snapshot, run)?;
            }
        }
        loop {
            // Values below `limit` lie in opened tiles only.
            let waiting = self
                .fragments
                .iter()
                .filter(|r| r.next < r.tiles.len())
                .min_by_key(|r| r.reached);
            let limit = waiting.map(|r| r.reached);
            let cells: u64 = self
                .fragments
                .iter()
                .flat_map(|r| &r.open)
                .map(|t| t.1)
                .sum();
            let small = cell_bytes.bytes(u128::from(cells)) < u128::from(target);
            match limit {
                Some(limit) if limit <= from || small => {
                    let slowest = self
                        .fragments
                        .iter_mut()
                        .filter(|r| r.next < r.tiles.len())
                        .min_by_key(|r| r.reached)
                        .expect("a fragment with tiles left");
                    open_next(snapshot, slowest)?;
                }
                _ => {
                    let to = limit.map_or(i128::from(u64::MAX), |l| l - 1);
                    self.from = limit;
                    return Ok(Some((from, to)));
                }
            }
        }
    }

    /// The cells of the values `from..=to` (a part [`next_part`] gave),
    /// read from the opened tiles.
    ///
    /// [`next_part`]: HilbertRuns::next_part
    pub(crate) fn read(&self, snapshot: &Snapshot, values: (i128, i128)) -> Result<ReadResult> {
        let held: Vec<&HeldTiles<'_>> = self.fragments.iter().map(|r| &r.held).collect();
        let mut part = read_run(snapshot, &self.query, &held, values)?;
        if self.query.skip_coordinates {
            part.dimensions.clear();
        }
        Ok(part)
    }
}

/// Opens the next tile of `run`: its least and greatest value, checked to
/// follow the tiles before it (a fragment out of order would otherwise
/// lose cells to earlier parts).
fn open_next(snapshot: &Snapshot, run: &mut FragmentRun<'_>) -> Result<()> {
    let fragment = &snapshot.fragments()[run.index];
    let tile = run.tiles[run.next];
    run.next += 1;
    let Some((least, most)) = run.held.open(snapshot, tile)? else {
        // No cell.
        return Ok(());
    };
    if least < run.reached {
        let at = format!("fragment {}, tile {tile}", fragment.name);
        let cause = Cause::Inconsistent {
            what: "a tile's least Hilbert value (the previous tile's greatest or more)",
            expected: run.reached as u64,
            found: least as u64,
        };
        return Err(Error::corrupt(0, "coordinates", cause).within(at));
    }
    run.reached = most;
    run.open
        .push_back((tile, fragment.cell_num(tile, 0), least, most));
    Ok(())
}
