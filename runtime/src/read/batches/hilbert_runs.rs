//! A Hilbert-ordered sparse read whose tiles' MBRs do not bound their
//! Hilbert values (a string dimension: TileDB maps a string by its first
//! eight bytes, each sign-extended, so a string between two ASCII bounds
//! may map past both), cut into runs of Hilbert values all the same.
//!
//! A fragment's cells are stored in global order, so its tiles follow one
//! another in Hilbert value: every tile after one holds values no less
//! than that tile's greatest. The read goes through the fragments' touched
//! tiles as a merge does: a tile is *opened* by reading its coordinates
//! for its least and greatest value (kept, the coordinates dropped); the
//! values below the least greatest value of the fragments still holding
//! unopened tiles can then be in opened tiles only. A part is such a run
//! of values, read from the opened tiles; tiles are opened until a part is
//! estimated at the target size, so memory holds about a part's tiles.

use std::collections::VecDeque;

use crate::error::{Cause, Error, Result};
use crate::read::batches::estimate::CellBytes;
use crate::read::batches::plan::TileSet;
use crate::read::query::{decode_ranges, ReadQuery, ResultOrder};
use crate::read::sparse::ranges::{load_rtrees, touched_tiles};
use crate::read::sparse::tile_hilbert_bounds;
use crate::schema::SchemaOrder;
use crate::snapshot::Snapshot;

/// One fragment's touched tiles and those opened.
#[derive(Debug)]
struct FragmentRun {
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
}

/// The runs of a Hilbert-ordered read (see the module's description).
#[derive(Debug)]
pub(crate) struct HilbertRuns {
    query: ReadQuery,
    fragments: Vec<FragmentRun>,
    /// The least value the next part holds; `None` once every value is.
    from: Option<i128>,
}

/// A part of the runs: the query, the values and the tiles to read.
pub(crate) type RunPart = (ReadQuery, (i128, i128), TileSet);

impl HilbertRuns {
    /// The runs of `query` when it is a global or unordered read of a
    /// sparse Hilbert-ordered array; `None` otherwise.
    pub(crate) fn new(snapshot: &Snapshot, query: &ReadQuery) -> Result<Option<HilbertRuns>> {
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
                });
            }
        }
        Ok(Some(HilbertRuns {
            query: query.clone(),
            fragments,
            from: Some(0),
        }))
    }

    /// The next part, of about `target` bytes where the tiles allow;
    /// `None` at the end.
    pub(crate) fn next_part(
        &mut self,
        snapshot: &Snapshot,
        cell_bytes: &CellBytes,
        target: u64,
    ) -> Result<Option<RunPart>> {
        let Some(from) = self.from else {
            return Ok(None);
        };
        for run in &mut self.fragments {
            run.open.retain(|&(_, _, _, most)| most >= from);
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
                    let tiles = self.tiles(snapshot, (from, to));
                    return Ok(Some((self.query.clone(), (from, to), tiles)));
                }
            }
        }
    }

    /// The opened tiles that may hold values `from..=to`.
    fn tiles(&self, snapshot: &Snapshot, (from, to): (i128, i128)) -> TileSet {
        let fragments = snapshot.fragments();
        self.fragments
            .iter()
            .flat_map(|r| {
                let path = &fragments[r.index].path;
                r.open
                    .iter()
                    .filter(move |t| t.2 <= to && t.3 >= from)
                    .map(move |t| (path.clone(), t.0))
            })
            .collect()
    }
}

/// Opens the next tile of `run`: its least and greatest value, checked to
/// follow the tiles before it (a fragment out of order would otherwise
/// lose cells to earlier parts).
fn open_next(snapshot: &Snapshot, run: &mut FragmentRun) -> Result<()> {
    let fragment = &snapshot.fragments()[run.index];
    let tile = run.tiles[run.next];
    run.next += 1;
    let [(least, most)] = tile_hilbert_bounds(snapshot, fragment, &[tile])?[..] else {
        return Ok(());
    };
    if least > most {
        // No cell.
        return Ok(());
    }
    let (least, most) = (i128::from(least), i128::from(most));
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
