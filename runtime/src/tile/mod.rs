//! Tiles: the chunked framing of filtered data.
//!
//! A filtered tile is `n_chunks u64`, then per chunk `original_len u32,
//! filtered_len u32, metadata_len u32, metadata, data` (`Tile` and
//! `TileChunk` in `spec/generic_tile.toml`, read and written here through
//! their generated zero-copy views, [`TileView`] and [`TileChunkView`]). The
//! sum of the original lengths must equal the tile's expected unfiltered size.
//!
//! Writing cuts a tile into chunks as TileDB does (`WriterTile::compute_chunk_size`,
//! `FilterPipeline::get_var_chunk_sizes`), runs the pipeline over every chunk
//! in parallel, and frames the result. Reading frames, checks and unfilters
//! chunks in parallel, straight into the caller's output buffer.
//!
//! Which function for which tile (the [`FilterContext`] names the type the
//! pipeline starts from and the tile's cell size):
//!
//! | tile | read | write |
//! |---|---|---|
//! | fixed-size cells, validity (UINT8, cell 1), generic tile (CHAR, cell 1) | [`unfilter_tile`], [`unfilter_tiles`] | [`filter_tile`] |
//! | offsets of a var field (UINT64, cell 8; expected size 8 × cells) | the same | the same |
//! | var data (cell size = the type's size) | the same | [`filter_var_tile`] |
//! | var ASCII/UTF8 data whose pipeline encodes whole strings ([`FilterPipeline::skips_offsets`]); its offsets tile is [`SKIPPED_OFFSETS_TILE`] | [`unfilter_var_string_tile`] | [`filter_var_tile`] |
//!
//! Errors from a buffer carry offsets within the tile and the field: the
//! framing's as the view names it (`Tile.chunks[C], TileChunk.data`), a
//! filter's `chunk C, FILTER`; [`unfilter_tiles`] adds `tile T` and the file
//! offset.

mod gathered;
pub mod generic;
mod scatter;
mod unfiltered;

pub use unfiltered::{unfiltered_frame, UnfilteredFrame};

pub use gathered::filter_gathered_tile_into;
pub(crate) use scatter::gather;
pub use scatter::{unfilter_tile_scattered, Across, ScatterRun};

use rayon::prelude::*;

use crate::error::Cause;
use crate::filter::run::{self, StringCells};
use crate::filter::stage::{Fault, Parts};
use crate::filter::var_string::StringEnds;
use crate::filter::{FilterContext, FilterPipeline};
use crate::format::generated::{TileChunk, TileChunkView, TileView};
use crate::format::view::{Element, Pieces};
use crate::{Error, Result};

/// The chunk size TileDB cuts tiles at, whatever the pipeline says
/// (`constants::max_tile_chunk_size`).
pub const CHUNK_SIZE: u64 = crate::format::generated::MAX_TILE_CHUNK_SIZE;

/// The stored offsets tile of a var-sized string field whose pipeline
/// encodes whole strings (see [`FilterPipeline::skips_offsets`]): zero chunks.
pub const SKIPPED_OFFSETS_TILE: [u8; 8] = [0; 8];

/// One chunk of a filtered tile, borrowed from the tile's bytes.
#[derive(Debug, Clone, Copy)]
pub struct Chunk<'a> {
    /// Offset of the chunk's header within the tile.
    pub offset: usize,
    /// The chunk's size before filtering, in bytes.
    pub original_len: u32,
    /// The filters' metadata for this chunk.
    pub metadata: &'a [u8],
    /// The filtered bytes.
    pub data: &'a [u8],
}

/// Splits a filtered tile into its chunks, checking every length against
/// the bytes present (the generated [`TileView`] of `spec/generic_tile.toml`).
pub fn parse_chunks(tile: &[u8]) -> Result<Vec<Chunk<'_>>> {
    // One pass: the chunks are checked as they are read.
    let framing = TileView::parse_open(tile)?;
    let mut chunks = Vec::with_capacity(framing.chunks().len());
    let mut offset = TileView::MIN_SIZE;
    for chunk in framing.chunks().iter() {
        let chunk = chunk?;
        let (metadata, data) = (chunk.metadata(), chunk.data());
        chunks.push(Chunk {
            offset,
            original_len: chunk.orig_len(),
            metadata,
            data,
        });
        offset += TileChunkView::MIN_SIZE + metadata.len() + data.len();
    }
    Ok(chunks)
}

fn total_original(chunks: &[Chunk<'_>]) -> u64 {
    chunks.iter().map(|c| c.original_len as u64).sum()
}

fn check_total(chunks: &[Chunk<'_>], expected_len: u64) -> Result<()> {
    let total = total_original(chunks);
    if total != expected_len {
        return Err(Error::corrupt(
            0,
            "chunks",
            Cause::Inconsistent {
                what: "the chunks' total original size",
                expected: expected_len,
                found: total,
            },
        ));
    }
    Ok(())
}

/// Turns a stage failure into an error naming the chunk and the filter.
fn stage_error(
    pipeline: &FilterPipeline,
    chunk_index: usize,
    chunk_offset: usize,
    (index, fault): (usize, Fault),
) -> Error {
    let name = pipeline.filters.get(index).map_or("NONE", |f| f.name());
    let field = format!("chunk {chunk_index}, {name}");
    match fault {
        Fault::Corrupt(cause) => Error::corrupt(chunk_offset as u64, field, cause),
        Fault::CorruptPart(part, cause) => {
            Error::corrupt(chunk_offset as u64, format!("{field}, {part}"), cause)
        }
        Fault::Unsupported(reason) => Error::unsupported(format!("{field}: {reason}")),
        Fault::Usage(reason) => Error::Usage(format!("{field}: {reason}")),
    }
}

/// Tiles from this size on are decoded with stores that bypass the caches
/// where a filter can (BYTESHUFFLE's): twice the last-level cache share of a
/// core on common machines, so the tile would be evicted before it is read
/// anyway, and skipping the read of each destination line speeds the pass.
const STREAMED_TILE_BYTES: u64 = 4 << 20;

/// Splits `out` into one slice per chunk.
fn split_output<'o>(chunks: &[Chunk<'_>], mut out: &'o mut [u8]) -> Vec<&'o mut [u8]> {
    let mut slices = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        let (head, tail) = std::mem::take(&mut out).split_at_mut(chunk.original_len as usize);
        slices.push(head);
        out = tail;
    }
    slices
}

/// Unfilters a whole tile into `out`, whose length is the expected
/// unfiltered size. Errors locate the fault by offset within the tile; the
/// caller adds the tile index and file (`Error::within`, `at_base`, `in_file`).
pub fn unfilter_tile_into(
    tile: &[u8],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    out: &mut [u8],
) -> Result<()> {
    let chunks = parse_chunks(tile)?;
    check_total(&chunks, out.len() as u64)?;
    let types = pipeline.input_types(ctx.datatype);
    let stream = out.len() as u64 >= STREAMED_TILE_BYTES;
    let slices = split_output(&chunks, out);
    let run_one = |(c, (chunk, dest)): (usize, (&Chunk<'_>, &mut [u8]))| {
        run::unfilter_chunk(
            pipeline,
            &types,
            ctx,
            chunk.metadata,
            chunk.data,
            dest,
            None,
            stream,
        )
        .map_err(|e| stage_error(pipeline, c, chunk.offset, e))
    };
    if chunks.len() > 1 {
        chunks
            .par_iter()
            .zip(slices)
            .enumerate()
            .try_for_each(run_one)
    } else {
        chunks.iter().zip(slices).enumerate().try_for_each(run_one)
    }
}

/// Unfilters a whole tile of `expected_len` bytes.
pub fn unfilter_tile(
    tile: &[u8],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    expected_len: u64,
) -> Result<Vec<u8>> {
    // Check the framing before allocating what it promises.
    let chunks = parse_chunks(tile)?;
    check_total(&chunks, expected_len)?;
    let len = usize::try_from(expected_len).map_err(|_| {
        Error::corrupt(
            0,
            "chunks",
            Cause::OutOfRange {
                value: expected_len,
                limit: usize::MAX as u64,
            },
        )
    })?;
    let mut out = vec![0u8; len];
    unfilter_tile_into(tile, pipeline, ctx, &mut out)?;
    Ok(out)
}

/// Unfilters the var-data tile of a var-sized ASCII/UTF8 field whose
/// pipeline starts with the string form of RLE or dictionary encoding
/// ([`FilterPipeline::skips_offsets`]); its offsets tile holds no chunks and
/// the offsets are rebuilt here. Returns the data and one start offset per
/// cell.
pub fn unfilter_var_string_tile(
    tile: &[u8],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    expected_len: u64,
    cell_count: u64,
) -> Result<(Vec<u8>, Vec<u64>)> {
    let mut out = Vec::new();
    let mut offsets = Vec::new();
    unfilter_var_string_tile_into(
        tile,
        pipeline,
        ctx,
        (expected_len, cell_count),
        &mut out,
        &mut offsets,
    )?;
    Ok((out, offsets))
}

/// [`unfilter_var_string_tile`] into the caller's buffers (their contents
/// replaced; memory they already have is used again, so that a read going
/// through many tiles does not fault in fresh pages for each).
/// `(expected_len, cell_count)`: the tile's string bytes and cells.
pub fn unfilter_var_string_tile_into(
    tile: &[u8],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    (expected_len, cell_count): (u64, u64),
    out: &mut Vec<u8>,
    offsets: &mut Vec<u64>,
) -> Result<()> {
    // The framing is checked before anything is allocated for it.
    let chunk = string_chunk(tile, pipeline, ctx, expected_len)?;
    // Every byte is written by the decode (it fails unless the strings
    // come to exactly this size); only growth is zeroed.
    out.resize(chunk.original_len as usize, 0);
    out.truncate(chunk.original_len as usize);
    let ends = StringEnds::Grow {
        offsets,
        cells: cell_count,
    };
    decode_string_chunk(&chunk, pipeline, ctx, out, ends)?;
    // The decode gives the end of the last cell too.
    offsets.pop();
    Ok(())
}

/// [`unfilter_var_string_tile`] straight into a result: the strings into
/// `data` (exactly the tile's string bytes), and each cell's end, plus
/// `base`, into `ends` (one per cell of the tile). A read decodes into its
/// own data and offsets this way, without holding the tile decoded.
pub fn unfilter_var_string_tile_in_place(
    tile: &[u8],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    data: &mut [u8],
    ends: &mut [u64],
    base: u64,
) -> Result<()> {
    let chunk = string_chunk(tile, pipeline, ctx, data.len() as u64)?;
    decode_string_chunk(
        &chunk,
        pipeline,
        ctx,
        data,
        StringEnds::Place { ends, base },
    )
}

/// The one chunk of a tile whose pipeline encodes whole strings, checked
/// to come to `expected_len` bytes.
fn string_chunk<'t>(
    tile: &'t [u8],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    expected_len: u64,
) -> Result<Chunk<'t>> {
    if run::string_codec(pipeline, ctx).is_none() {
        return Err(Error::Usage(
            "this pipeline does not encode whole strings; use unfilter_tile for data and offsets"
                .into(),
        ));
    }
    let chunks = parse_chunks(tile)?;
    check_total(&chunks, expected_len)?;
    let found = chunks.len() as u64;
    match <[Chunk<'t>; 1]>::try_from(chunks) {
        Ok([chunk]) => Ok(chunk),
        Err(_) => Err(Error::corrupt(
            0,
            "n_chunks",
            Cause::Inconsistent {
                what: "the chunk count of a string-encoded tile",
                expected: 1,
                found,
            },
        )),
    }
}

/// Decodes `chunk`'s strings into `data` and their offsets into `ends`.
fn decode_string_chunk(
    chunk: &Chunk<'_>,
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    data: &mut [u8],
    ends: StringEnds<'_>,
) -> Result<()> {
    let types = pipeline.input_types(ctx.datatype);
    run::unfilter_chunk(
        pipeline,
        &types,
        ctx,
        chunk.metadata,
        chunk.data,
        data,
        Some(ends),
        false,
    )
    .map_err(|e| stage_error(pipeline, 0, chunk.offset, e))
}

/// One tile to unfilter: its filtered bytes and what it must come to.
#[derive(Debug, Clone, Copy)]
pub struct TileJob<'a> {
    /// The tile's bytes as stored (a slice of its file).
    pub bytes: &'a [u8],
    /// Where those bytes start in the file, for error locations.
    pub file_offset: u64,
    /// The tile's index, for error locations.
    pub index: u64,
    /// The expected unfiltered size.
    pub expected_len: u64,
    /// The only bytes of the unfiltered tile the caller will read (start,
    /// end exclusive), if not all: chunks holding none of them are not
    /// decoded, and their part of the output is left as it was. Every chunk
    /// is filtered on its own, so the others decode the same either way.
    pub wanted: Option<(u64, u64)>,
}

fn locate(err: Error, job: &TileJob<'_>) -> Error {
    err.within(format!("tile {}", job.index))
        .at_base(job.file_offset)
}

/// Unfilters many tiles that share one pipeline, in parallel across tiles
/// and across the chunks of each tile, into the caller's buffers (one per
/// job, each exactly `expected_len` bytes).
pub fn unfilter_tiles_into(
    jobs: &[TileJob<'_>],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    outputs: &mut [&mut [u8]],
) -> Result<()> {
    if jobs.len() != outputs.len() {
        return Err(Error::Usage(format!(
            "{} tiles but {} output buffers",
            jobs.len(),
            outputs.len()
        )));
    }
    let types = pipeline.input_types(ctx.datatype);
    // Frame every tile first, then run all chunks of all tiles as one
    // parallel batch.
    let mut work = Vec::new();
    for (job, out) in jobs.iter().zip(outputs.iter_mut()) {
        if out.len() as u64 != job.expected_len {
            return Err(Error::Usage(format!(
                "output buffer for tile {} is {} bytes, expected {}",
                job.index,
                out.len(),
                job.expected_len
            )));
        }
        let chunks = parse_chunks(job.bytes).map_err(|e| locate(e, job))?;
        check_total(&chunks, job.expected_len).map_err(|e| locate(e, job))?;
        let slices = split_output(&chunks, out);
        let mut start = 0u64;
        for (c, (chunk, dest)) in chunks.into_iter().zip(slices).enumerate() {
            let end = start + chunk.original_len as u64;
            let wanted = job.wanted.is_none_or(|(lo, hi)| start < hi && lo < end);
            start = end;
            if wanted {
                work.push((job, c, chunk, dest));
            }
        }
    }
    work.into_par_iter().try_for_each(|(job, c, chunk, dest)| {
        run::unfilter_chunk(
            pipeline,
            &types,
            ctx,
            chunk.metadata,
            chunk.data,
            dest,
            None,
            job.expected_len >= STREAMED_TILE_BYTES,
        )
        .map_err(|e| locate(stage_error(pipeline, c, chunk.offset, e), job))
    })
}

/// Unfilters many tiles that share one pipeline, in parallel, allocating
/// each output once.
pub fn unfilter_tiles(
    jobs: &[TileJob<'_>],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
) -> Result<Vec<Vec<u8>>> {
    let mut outputs = Vec::with_capacity(jobs.len());
    for job in jobs {
        // Framing is checked (and the size proven consistent) before
        // allocating.
        let chunks = parse_chunks(job.bytes).map_err(|e| locate(e, job))?;
        check_total(&chunks, job.expected_len).map_err(|e| locate(e, job))?;
        let len = usize::try_from(job.expected_len).map_err(|_| {
            locate(
                Error::corrupt(
                    0,
                    "chunks",
                    Cause::OutOfRange {
                        value: job.expected_len,
                        limit: usize::MAX as u64,
                    },
                ),
                job,
            )
        })?;
        outputs.push(vec![0u8; len]);
    }
    let mut slices: Vec<&mut [u8]> = outputs
        .iter_mut()
        .map(std::vec::Vec::as_mut_slice)
        .collect();
    unfilter_tiles_into(jobs, pipeline, ctx, &mut slices)?;
    Ok(outputs)
}

/// [`unfilter_var_string_tile`] for many tiles in parallel; `cell_counts`
/// gives each tile's number of cells. Returns each tile's data and offsets.
pub fn unfilter_var_string_tiles(
    jobs: &[TileJob<'_>],
    cell_counts: &[u64],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
) -> Result<Vec<(Vec<u8>, Vec<u64>)>> {
    if jobs.len() != cell_counts.len() {
        return Err(Error::Usage(format!(
            "{} tiles but {} cell counts",
            jobs.len(),
            cell_counts.len()
        )));
    }
    jobs.par_iter()
        .zip(cell_counts)
        .map(|(job, &cells)| {
            unfilter_var_string_tile(job.bytes, pipeline, ctx, job.expected_len, cells)
                .map_err(|e| locate(e, job))
        })
        .collect()
}

/// TileDB's chunk size for a tile of `tile_len` bytes with `cell_size`-byte
/// cells: whole cells, at most 64 KiB unless one cell is larger.
pub fn chunk_size(tile_len: u64, cell_size: u64) -> Result<u64> {
    let cell = cell_size.max(1);
    let size = (CHUNK_SIZE.min(tile_len) / cell * cell).max(cell);
    if size > u32::MAX as u64 {
        return Err(Error::Usage(format!("chunk size {size} exceeds 4 GiB")));
    }
    Ok(size)
}

/// The byte ranges TileDB cuts a fixed-cell tile into.
fn fixed_chunk_bounds(len: usize, chunk: usize) -> Vec<(usize, usize)> {
    if len == chunk {
        return vec![(0, len)];
    }
    // `chunk` is at least one cell, so never zero here.
    let mut bounds: Vec<(usize, usize)> = (0..len / chunk)
        .map(|i| (i * chunk, (i + 1) * chunk))
        .collect();
    if !len.is_multiple_of(chunk) {
        bounds.push((len - len % chunk, len));
    }
    bounds
}

/// The byte ranges TileDB cuts a var-data tile into without splitting a cell
/// (`get_var_chunk_sizes`): a chunk may run to 150% of the chunk size, and is
/// closed early only when at least half full; a cell larger than the chunk
/// size gets a chunk of its own. This can end with an empty chunk.
fn var_chunk_bounds(len: usize, chunk: usize, offsets: &[u64]) -> Result<Vec<(usize, usize)>> {
    if len == chunk {
        return Ok(vec![(0, len)]);
    }
    let min_size = chunk / 2;
    let max_size = chunk + chunk / 2;
    let mut starts = vec![0usize];
    let mut current = 0usize;
    for (c, &start) in offsets.iter().enumerate() {
        let start = start as usize;
        let end = offsets.get(c + 1).map_or(len, |&e| e as usize);
        let cell = end - start;
        let grown = current + cell;
        if grown > chunk {
            if current <= min_size || grown <= max_size {
                if grown > u32::MAX as usize {
                    return Err(Error::Usage("a chunk would exceed 4 GiB".into()));
                }
                starts.push(start + cell);
                current = 0;
            } else {
                starts.push(start);
                if cell > chunk {
                    if cell > u32::MAX as usize {
                        return Err(Error::Usage("a cell exceeds 4 GiB".into()));
                    }
                    if c != offsets.len() - 1 {
                        starts.push(start + cell);
                    }
                    current = 0;
                } else {
                    current = cell;
                }
            }
        } else {
            current += cell;
        }
    }
    let mut bounds: Vec<(usize, usize)> = starts.windows(2).map(|w| (w[0], w[1])).collect();
    let last = *starts.last().unwrap_or(&0);
    bounds.push((last, len));
    Ok(bounds)
}

fn check_offsets(len: usize, offsets: &[u64]) -> Result<()> {
    let mut previous = 0u64;
    for (i, &o) in offsets.iter().enumerate() {
        if o < previous || o > len as u64 || (i == 0 && o != 0) {
            return Err(Error::Usage(format!(
                "offset {i} = {o} is not ascending within the {len} bytes of var data"
            )));
        }
        previous = o;
    }
    Ok(())
}

fn frame(
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    data: &[u8],
    bounds: &[(usize, usize)],
    strings: Option<&StringCells<'_>>,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    frame_into(pipeline, ctx, data, bounds, strings, &mut out)?;
    Ok(out)
}

/// [`frame`] into `out` (cleared first; its capacity reused).
fn frame_into(
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    data: &[u8],
    bounds: &[(usize, usize)],
    strings: Option<&StringCells<'_>>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let types = pipeline.input_types(ctx.datatype);
    let filtered: Vec<Parts<'_>> = bounds
        .par_iter()
        .enumerate()
        .map(|(c, &(start, end))| {
            run::filter_chunk(pipeline, &types, ctx, &data[start..end], strings)
                .map_err(|e| stage_error(pipeline, c, 0, e))
        })
        .collect::<Result<_>>()?;
    write_frames(bounds, filtered, out)
}

/// Frames the filtered chunks of `bounds` into `out` (cleared first) and
/// gives their buffers back for the next tile's chunks.
fn write_frames(
    bounds: &[(usize, usize)],
    filtered: Vec<Parts<'_>>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let metadata_len = |p: &Parts<'_>| p.metadata.iter().map(Vec::len).sum::<usize>();
    let total: usize = filtered
        .iter()
        .map(|p| TileChunkView::MIN_SIZE + metadata_len(p) + p.data_len())
        .sum();
    let framed: Vec<FramedChunk<'_, '_>> = bounds
        .iter()
        .zip(&filtered)
        .map(|(&(start, end), parts)| FramedChunk {
            original_len: end - start,
            parts,
        })
        .collect();
    out.clear();
    out.reserve(TileView::MIN_SIZE + total);
    let written = TileView::write(out, &framed);
    drop(framed);
    filtered
        .into_iter()
        .for_each(crate::filter::stage::recycle_parts);
    written
}

/// A filtered chunk as [`TileView::write`] takes it: its metadata and data
/// parts are written straight into the tile, never joined first.
struct FramedChunk<'p, 'a> {
    original_len: usize,
    parts: &'p Parts<'a>,
}

impl Element<TileChunk, ()> for FramedChunk<'_, '_> {
    fn write_element(&self, out: &mut Vec<u8>, (): ()) -> Result<()> {
        let original_len = u32::try_from(self.original_len)
            .map_err(|_| Error::Usage("a chunk exceeds 4 GiB".into()))?;
        TileChunkView::write(
            out,
            original_len,
            &Pieces(&self.parts.metadata),
            &Pieces(&self.parts.data),
        )
    }
}

/// Filters a tile of fixed-size cells (or an offsets, validity or generic
/// tile) as TileDB writes it.
pub fn filter_tile(data: &[u8], pipeline: &FilterPipeline, ctx: &FilterContext) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    filter_tile_into(data, pipeline, ctx, &mut out)?;
    Ok(out)
}

/// [`filter_tile`] into `out`, cleared first: a writer passes buffers it
/// reuses from tile to tile, whose pages are already mapped.
pub fn filter_tile_into(
    data: &[u8],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    out: &mut Vec<u8>,
) -> Result<()> {
    let chunk = if pipeline.uses_chunking(false, ctx.version, ctx.datatype) {
        chunk_size(data.len() as u64, ctx.cell_size)? as usize
    } else {
        data.len()
    };
    frame_into(
        pipeline,
        ctx,
        data,
        &fixed_chunk_bounds(data.len(), chunk),
        None,
        out,
    )
}

/// Filters the var-data tile of a var-sized field, given the start offset
/// of every cell. For ASCII/UTF8 fields whose pipeline encodes whole strings
/// the offsets tile is then not stored: write [`SKIPPED_OFFSETS_TILE`]
/// instead (see [`FilterPipeline::skips_offsets`]).
pub fn filter_var_tile(
    data: &[u8],
    offsets: &[u64],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
) -> Result<Vec<u8>> {
    check_offsets(data.len(), offsets)?;
    let strings = StringCells { offsets };
    if pipeline.skips_offsets(ctx.datatype, ctx.version) {
        if run::string_codec(pipeline, ctx).is_none() {
            return Err(Error::Usage(
                "RLE or dictionary must be the first filter on a var-sized string field".into(),
            ));
        }
        // One chunk: the string encoders work on whole cells.
        return frame(pipeline, ctx, data, &[(0, data.len())], Some(&strings));
    }
    let chunk = if pipeline.uses_chunking(true, ctx.version, ctx.datatype) {
        chunk_size(data.len() as u64, ctx.cell_size)? as usize
    } else {
        data.len()
    };
    let bounds = if crate::format::generated::tile_metadata_stored(ctx.version) {
        var_chunk_bounds(data.len(), chunk, offsets)?
    } else {
        fixed_chunk_bounds(data.len(), chunk)
    };
    frame(pipeline, ctx, data, &bounds, None)
}
