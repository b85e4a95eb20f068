//! Filtering a fixed-cell tile that is never assembled whole: each chunk's
//! cells are gathered into a small buffer and filtered while they are in
//! cache. A dense tile built from many row runs of the input otherwise
//! costs a copy of the whole tile into memory and a second read of it from
//! there by the first filter (and by the metadata scan, which the caller
//! can run over each chunk as it is gathered).

use std::borrow::Cow;

use rayon::prelude::*;

use super::{chunk_size, fixed_chunk_bounds, stage_error, write_frames};
use crate::filter::run;
use crate::filter::stage::{recycle, scratch, Parts};
use crate::filter::{FilterContext, FilterPipeline};
use crate::{Error, Result};

/// [`filter_tile_into`](super::filter_tile_into) of the `len` bytes of a
/// fixed-cell tile that `gather(start, end, buffer)` appends to `buffer`
/// a chunk (`start..end` of the tile's bytes, whole cells) at a time.
/// Returns what `gather` returned for each chunk, in order; the output
/// bytes are those of filtering the tile gathered whole.
pub fn filter_gathered_tile_into<R: Send>(
    len: usize,
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    gather: impl Fn(usize, usize, &mut Vec<u8>) -> Result<R> + Sync,
    out: &mut Vec<u8>,
) -> Result<Vec<R>> {
    let chunk = if pipeline.uses_chunking(false, ctx.version, ctx.datatype) {
        chunk_size(len as u64, ctx.cell_size)? as usize
    } else {
        len
    };
    let bounds = fixed_chunk_bounds(len, chunk);
    let types = pipeline.input_types(ctx.datatype);
    let filtered: Vec<(Parts<'static>, R)> = bounds
        .par_iter()
        .enumerate()
        .map(|(c, &(start, end))| {
            let mut bytes = scratch(end - start);
            let gathered = gather(start, end, &mut bytes)?;
            if bytes.len() != end - start {
                return Err(Error::Usage(format!(
                    "chunk {c} of a tile gathered {} bytes, not {}",
                    bytes.len(),
                    end - start
                )));
            }
            let parts = run::filter_chunk(pipeline, &types, ctx, &bytes, None)
                .map_err(|e| stage_error(pipeline, c, 0, e))?;
            let parts = owned(parts);
            recycle(bytes);
            Ok((parts, gathered))
        })
        .collect::<Result<_>>()?;
    let (parts, gathered): (Vec<_>, Vec<_>) = filtered.into_iter().unzip();
    write_frames(&bounds, parts, out)?;
    Ok(gathered)
}

/// The parts with every part still borrowing the chunk copied.
fn owned(parts: Parts<'_>) -> Parts<'static> {
    Parts {
        metadata: parts.metadata,
        data: parts
            .data
            .into_iter()
            .map(|part| Cow::Owned(part.into_owned()))
            .collect(),
    }
}
