//! Decoding a tile straight into the places a read wants its cells
//! ([`unfilter_tile_scattered`]): the tile itself is never assembled.
//!
//! A run takes either consecutive bytes of the tile (a result line that
//! reads a tile along its cell order) or one cell every so many bytes
//! ([`Across`]: a line that reads a tile across, as a column-major result
//! of row-major tiles does).

use rayon::prelude::*;

use super::{check_total, locate, parse_chunks, split_output, stage_error, Chunk, TileJob};
use crate::error::Cause;
use crate::filter::run;
use crate::filter::stage::Fault;
use crate::filter::{FilterContext, FilterPipeline};
use crate::{Error, Result};

/// How the cells of a run lie in its tile when they are not consecutive:
/// `cell` bytes each, one starting every `every` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Across {
    /// The bytes of one cell.
    pub cell: u64,
    /// The distance between the starts of consecutive cells (at least
    /// `cell`).
    pub every: u64,
}

/// A run of a tile's unfiltered bytes and the place in the caller's result
/// it goes to.
#[derive(Debug)]
pub struct ScatterRun<'o> {
    /// The offset in the unfiltered tile of the first byte.
    pub tile_offset: u64,
    /// Where the bytes go; its length is how many.
    pub dest: &'o mut [u8],
    /// `None`: `dest` receives the tile's consecutive bytes from
    /// `tile_offset` on. `Some`: it receives whole cells, the first at
    /// `tile_offset` and each next one `every` bytes further.
    pub across: Option<Across>,
}

impl ScatterRun<'_> {
    /// One past the last tile byte the run reads; `None` when that
    /// overflows, or the run is not whole cells that lie apart.
    pub fn tile_end(&self) -> Option<u64> {
        let len = self.dest.len() as u64;
        let Some(Across { cell, every }) = self.across else {
            return self.tile_offset.checked_add(len);
        };
        if cell == 0 || every < cell || !len.is_multiple_of(cell) {
            return None;
        }
        match len / cell {
            0 => Some(self.tile_offset),
            cells => (cells - 1)
                .checked_mul(every)?
                .checked_add(cell)?
                .checked_add(self.tile_offset),
        }
    }
}

/// The parts of runs one chunk fills: where in the chunk's unfiltered bytes
/// each starts, and its place.
type ChunkRuns<'o> = Vec<(usize, &'o mut [u8])>;

/// Unfilters the chunks of one tile that hold bytes of `runs` and copies
/// those bytes into the runs: a read whose result is laid out differently
/// from the tile (a dense tile is a box of a larger result) writes each
/// cell once, from a chunk-sized buffer that stays in cache. Chunks holding
/// no byte of a run are not decoded. A run may reach over chunk boundaries
/// and the same bytes may go to several runs; a run reaching past the
/// tile's `expected_len`, or whose cells across the tile are not whole
/// cells apart, is an error.
///
/// Runs of consecutive bytes are cut at chunk boundaries and the chunks
/// decoded in parallel; when a run takes cells across the tile (which has
/// cells in most chunks) the chunks are decoded one after another, each
/// copied to every run's cells in it, and the caller decodes tiles in
/// parallel.
pub fn unfilter_tile_scattered(
    job: &TileJob<'_>,
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    mut runs: Vec<ScatterRun<'_>>,
) -> Result<()> {
    let chunks = parse_chunks(job.bytes).map_err(|e| locate(e, job))?;
    check_total(&chunks, job.expected_len).map_err(|e| locate(e, job))?;
    // Where each chunk's bytes start in the unfiltered tile, and its end.
    let mut starts = Vec::with_capacity(chunks.len() + 1);
    let mut at = 0u64;
    for chunk in &chunks {
        starts.push(at);
        at += chunk.original_len as u64;
    }
    starts.push(at);
    for run in &runs {
        check_run(run, job)?;
    }
    if runs.iter().any(|r| r.across.is_some()) {
        return scatter_across(job, pipeline, ctx, &chunks, &starts, runs);
    }
    runs.sort_unstable_by_key(|r| r.tile_offset);
    let mut per_chunk: Vec<ChunkRuns<'_>> = (0..chunks.len()).map(|_| Vec::new()).collect();
    for run in runs {
        let mut offset = run.tile_offset;
        let mut dest = run.dest;
        while !dest.is_empty() {
            // The chunk holding `offset`: the last one starting at or before it.
            let c = starts[..chunks.len()].partition_point(|s| *s <= offset) - 1;
            let room = (starts[c + 1] - offset) as usize;
            let take = room.min(dest.len());
            let (head, tail) = std::mem::take(&mut dest).split_at_mut(take);
            offset += head.len() as u64;
            per_chunk[c].push(((offset - starts[c]) as usize - head.len(), head));
            dest = tail;
        }
    }
    let types = pipeline.input_types(ctx.datatype);
    let work: Vec<(usize, &Chunk<'_>, ChunkRuns<'_>)> = chunks
        .iter()
        .zip(per_chunk)
        .enumerate()
        .filter(|(_, (_, runs))| !runs.is_empty())
        .map(|(c, (chunk, runs))| (c, chunk, runs))
        .collect();
    let run_one = |(c, chunk, runs): (usize, &Chunk<'_>, ChunkRuns<'_>)| {
        let mut buffer = run::scratch::take();
        let decoded = unfiltered_chunk(pipeline, &types, ctx, chunk, &mut buffer).map(|bytes| {
            for (from, dest) in runs {
                dest.copy_from_slice(&bytes[from..from + dest.len()]);
            }
        });
        run::scratch::give_back(buffer);
        decoded.map_err(|e| locate(stage_error(pipeline, c, chunk.offset, e), job))
    };
    if work.len() > 1 {
        work.into_par_iter().try_for_each(run_one)
    } else {
        work.into_iter().try_for_each(run_one)
    }
}

/// An error unless `run` is whole cells apart (when across) and within
/// the tile.
fn check_run(run: &ScatterRun<'_>, job: &TileJob<'_>) -> Result<()> {
    match run.tile_end() {
        Some(end) if end <= job.expected_len => Ok(()),
        Some(_) => Err(Error::Usage(format!(
            "a run of {} bytes from byte {} of tile {} reaches past its {} bytes",
            run.dest.len(),
            run.tile_offset,
            job.index,
            job.expected_len
        ))),
        None => Err(Error::Usage(format!(
            "a run of {} bytes from byte {} of tile {} is not whole cells that lie apart \
             ({:?}), or reaches past any tile",
            run.dest.len(),
            run.tile_offset,
            job.index,
            run.across
        ))),
    }
}

/// The unfiltered bytes of `chunk`: its stored bytes when the pipeline has
/// no filter, else decoded into `buffer`.
fn unfiltered_chunk<'b>(
    pipeline: &FilterPipeline,
    types: &[crate::filter::Datatype],
    ctx: &FilterContext,
    chunk: &Chunk<'b>,
    buffer: &'b mut Vec<u8>,
) -> std::result::Result<&'b [u8], (usize, Fault)> {
    if pipeline.filters.is_empty() {
        // Nothing to undo: the stored bytes are the cells.
        if chunk.data.len() != chunk.original_len as usize {
            return Err((
                0,
                Fault::Corrupt(Cause::Inconsistent {
                    what: "the unfiltered chunk's size",
                    expected: chunk.original_len.into(),
                    found: chunk.data.len() as u64,
                }),
            ));
        }
        return Ok(chunk.data);
    }
    buffer.resize(chunk.original_len as usize, 0);
    run::unfilter_chunk(
        pipeline,
        types,
        ctx,
        chunk.metadata,
        chunk.data,
        buffer,
        None,
        false,
    )?;
    Ok(buffer)
}

/// The unfiltered bytes decoded at a time when runs take cells across a
/// tile: a few chunks, which stay in a core's cache while their cells are
/// copied out.
const ACROSS_SLAB_BYTES: u64 = 256 * 1024;

/// [`unfilter_tile_scattered`] when some run takes cells across the tile
/// (which has cells in most chunks). The chunks the runs reach are decoded
/// side by side into one buffer, a few at a time (those in parallel), and
/// after each few every run takes the cells now wholly decoded, while they
/// are still in cache: a run's next cell may lie in the chunks decoded
/// next, and a cell cut by a chunk's edge is whole once both are. Cutting
/// each run at every chunk boundary instead would cost more than the
/// copy, with a few cells a piece.
fn scatter_across(
    job: &TileJob<'_>,
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    chunks: &[Chunk<'_>],
    starts: &[u64],
    mut runs: Vec<ScatterRun<'_>>,
) -> Result<()> {
    // Every run was checked: its end is known and within the tile.
    let (Some(low), Some(high)) = (
        runs.iter().map(|r| r.tile_offset).min(),
        runs.iter().filter_map(ScatterRun::tile_end).max(),
    ) else {
        return Ok(());
    };
    // The chunks holding bytes `low..high`: `first..past`.
    let first = starts[..chunks.len()]
        .partition_point(|s| *s <= low)
        .saturating_sub(1);
    let past = starts[..chunks.len()].partition_point(|s| *s < high);
    let base = starts[first];
    // Every byte of the buffer is decoded into before it is read: it is
    // not cleared first.
    let mut buffer = run::scratch::take();
    let len = (starts[past] - base) as usize;
    if buffer.len() < len {
        buffer.resize(len, 0);
    }
    buffer.truncate(len);
    let types = pipeline.input_types(ctx.datatype);
    // Per run, the cells (or bytes) it has taken.
    let mut taken = vec![0u64; runs.len()];
    let mut outcome = Ok(());
    let mut next = first;
    while next < past && outcome.is_ok() {
        // The chunks decoded now: `next..until`, one at least.
        let mut until = next + 1;
        while until < past && starts[until + 1] - starts[next] <= ACROSS_SLAB_BYTES {
            until += 1;
        }
        let slab = &mut buffer[(starts[next] - base) as usize..(starts[until] - base) as usize];
        let places: Vec<(usize, &Chunk<'_>, &mut [u8])> = (next..until)
            .zip(&chunks[next..until])
            .zip(split_output(&chunks[next..until], slab))
            .map(|((c, chunk), place)| (c, chunk, place))
            .collect();
        let decode_one = |(c, chunk, place): (usize, &Chunk<'_>, &mut [u8])| {
            run::unfilter_chunk(
                pipeline,
                &types,
                ctx,
                chunk.metadata,
                chunk.data,
                place,
                None,
                false,
            )
            .map_err(|e| locate(stage_error(pipeline, c, chunk.offset, e), job))
        };
        outcome = if places.len() > 1 {
            places.into_par_iter().try_for_each(decode_one)
        } else {
            places.into_iter().try_for_each(decode_one)
        };
        if outcome.is_ok() {
            let decoded = &buffer[..(starts[until] - base) as usize];
            for (run, taken) in runs.iter_mut().zip(&mut taken) {
                take_decoded(run, taken, decoded, base);
            }
        }
        next = until;
    }
    run::scratch::give_back(buffer);
    outcome?;
    match runs.iter().zip(&taken).find(|(r, t)| **t < units(r).2) {
        Some((run, _)) => Err(Error::Usage(format!(
            "a run from byte {} of tile {} reaches past the chunks decoded for it",
            run.tile_offset, job.index
        ))),
        None => Ok(()),
    }
}

/// A run as cells: their size, the distance between their starts, and how
/// many (bytes, one apart, for a run of consecutive bytes).
fn units(run: &ScatterRun<'_>) -> (u64, u64, u64) {
    match run.across {
        Some(Across { cell, every }) => (cell, every, run.dest.len() as u64 / cell.max(1)),
        None => (1, 1, run.dest.len() as u64),
    }
}

/// Copies into `run` its cells wholly in `decoded` (the tile's bytes from
/// `base` on, decoded so far) after the `taken` it has, and counts them.
fn take_decoded(run: &mut ScatterRun<'_>, taken: &mut u64, decoded: &[u8], base: u64) {
    let (cell, every, count) = units(run);
    let at = run.tile_offset - base;
    let end = decoded.len() as u64;
    if *taken >= count || at + *taken * every + cell > end {
        return;
    }
    // The cells that end within `decoded`.
    let whole = ((end - cell - at) / every + 1).min(count);
    let dest = &mut run.dest[(*taken * cell) as usize..(whole * cell) as usize];
    let from = (at + *taken * every) as usize;
    if gather(dest, decoded, from, every as usize, cell as usize) {
        *taken = whole;
    }
}

/// Fills `dest` with the `cell`-byte cells of `src` at `at`, `at + every`,
/// ...; `false`, copying nothing, when the last of them is not in `src`.
/// The common cell sizes copy with one load and store per cell rather than
/// a call per cell.
pub(crate) fn gather(dest: &mut [u8], src: &[u8], at: usize, every: usize, cell: usize) -> bool {
    fn fixed<const N: usize>(dest: &mut [u8], src: &[u8], at: usize, every: usize) {
        for (i, out) in dest.chunks_exact_mut(N).enumerate() {
            let from = at + i * every;
            out.copy_from_slice(&src[from..from + N]);
        }
    }
    if cell == 0 {
        return dest.is_empty();
    }
    if every == cell {
        // Consecutive cells: one copy.
        let Some(src) = at.checked_add(dest.len()).and_then(|end| src.get(at..end)) else {
            return false;
        };
        dest.copy_from_slice(src);
        return true;
    }
    let cells = dest.len() / cell;
    let reach = cells.checked_sub(1).map(|last| {
        last.checked_mul(every)
            .and_then(|b| b.checked_add(at))
            .and_then(|b| b.checked_add(cell))
    });
    if !dest.len().is_multiple_of(cell)
        || reach.is_some_and(|end| end.is_none_or(|end| end > src.len()))
    {
        return false;
    }
    match cell {
        1 => fixed::<1>(dest, src, at, every),
        2 => fixed::<2>(dest, src, at, every),
        4 => fixed::<4>(dest, src, at, every),
        8 => fixed::<8>(dest, src, at, every),
        16 => fixed::<16>(dest, src, at, every),
        _ => {
            for (i, out) in dest.chunks_exact_mut(cell).enumerate() {
                let from = at + i * every;
                out.copy_from_slice(&src[from..from + cell]);
            }
        }
    }
    true
}
