//! Running a pipeline over one chunk, forward and in reverse.

use std::borrow::Cow;

use super::compression::{self, Codec};
use super::stage::{view, Cursor, Fault, MetadataOut, OutBuf, Parts, StageEnv, StageResult};
use super::var_string::{self, StringCodec, StringEnds};
use super::{
    bit_width_reduction, bitshuffle, byteshuffle, checksum, encryption, positive_delta,
    scale_float, webp, xor, Datatype, Filter, FilterContext, FilterPipeline,
};
use crate::error::Cause;

/// A stage failure and the index of the filter that raised it.
pub(crate) type ChunkResult<T> = Result<T, (usize, Fault)>;

/// The offsets of a var-sized string tile, for the string forms of RLE and
/// dictionary encoding.
pub(crate) struct StringCells<'a> {
    pub offsets: &'a [u64],
}

fn forward_stage<'a>(env: &StageEnv<'_>, input: Parts<'a>) -> StageResult<Parts<'a>> {
    if let Some(codec) = Codec::of(env)? {
        return compression::forward(codec, input);
    }
    match env.filter {
        Filter::None => Ok(Parts {
            metadata: view(input.metadata),
            data: view(input.data),
        }),
        Filter::Dictionary { .. } => Err(Fault::Usage(
            "dictionary encoding applies only to var-sized ASCII/UTF8 strings".into(),
        )),
        Filter::BitWidthReduction { .. } => bit_width_reduction::forward(env, input),
        Filter::PositiveDelta { .. } => positive_delta::forward(env, input),
        Filter::BitShuffle => bitshuffle::forward(env, input),
        Filter::ByteShuffle => byteshuffle::forward(env, input),
        Filter::ChecksumMd5 | Filter::ChecksumSha256 => checksum::forward(env, input),
        Filter::ScaleFloat { .. } => scale_float::forward(env, input),
        Filter::Xor => xor::forward(env, input),
        Filter::Webp { .. } => webp::forward(env, input),
        Filter::Aes256Gcm => encryption::forward(env, input),
        // Every compressor was handled by `Codec::of` above.
        _ => Err(Fault::Usage(format!(
            "{} has no forward stage",
            env.filter.name()
        ))),
    }
}

fn reverse_stage(
    env: &StageEnv<'_>,
    md: &mut Cursor<'_>,
    data: &[u8],
    out: &mut OutBuf<'_>,
) -> StageResult<MetadataOut> {
    if let Some(codec) = Codec::of(env)? {
        return compression::reverse(codec, md, data, out);
    }
    match env.filter {
        Filter::None => {
            out.put(data)?;
            Ok(MetadataOut::Rest)
        }
        Filter::Dictionary { .. } => Err(Fault::corrupt(
            "dictionary encoding applies only to var-sized ASCII/UTF8 strings",
        )),
        Filter::BitWidthReduction { .. } => bit_width_reduction::reverse(env, md, data, out),
        Filter::PositiveDelta { .. } => positive_delta::reverse(env, md, data, out),
        Filter::BitShuffle => bitshuffle::reverse(env, md, data, out),
        Filter::ByteShuffle => byteshuffle::reverse(env, md, data, out),
        Filter::ChecksumMd5 | Filter::ChecksumSha256 => checksum::reverse(env, md, data, out),
        Filter::ScaleFloat { .. } => scale_float::reverse(env, md, data, out),
        Filter::Xor => xor::reverse(env, md, data, out),
        Filter::Webp { .. } => webp::reverse(env, md, data, out),
        Filter::Aes256Gcm => encryption::reverse(env, md, data, out),
        _ => Err(Fault::corrupt(format!(
            "{} has no reverse stage",
            env.filter.name()
        ))),
    }
}

/// The string codec that the pipeline's first filter applies to a var-sized
/// tile, if the tile takes the string path.
pub(crate) fn string_codec(pipeline: &FilterPipeline, ctx: &FilterContext) -> Option<StringCodec> {
    if !pipeline.skips_offsets(ctx.datatype, ctx.version) {
        return None;
    }
    pipeline.filters.first().and_then(StringCodec::of)
}

/// Runs the whole pipeline forward over one chunk; returns the chunk's
/// metadata and data parts (which still borrow `chunk` where no filter
/// rewrote it).
pub(crate) fn filter_chunk<'a>(
    pipeline: &FilterPipeline,
    types: &[Datatype],
    ctx: &FilterContext,
    chunk: &'a [u8],
    strings: Option<&StringCells<'_>>,
) -> ChunkResult<Parts<'a>> {
    let mut parts = Parts {
        metadata: Vec::new(),
        data: vec![Cow::Borrowed(chunk)],
    };
    for (i, filter) in pipeline.filters.iter().enumerate() {
        let env = StageEnv {
            filter,
            datatype: types[i],
            ctx,
            stream_output: false,
        };
        let string_path = match (i, strings) {
            (0, Some(cells)) => string_codec(pipeline, ctx).map(|codec| (codec, cells)),
            _ => None,
        };
        parts = match string_path {
            Some((codec, cells)) => var_string::forward(codec, chunk, cells.offsets),
            None => forward_stage(&env, parts),
        }
        .map_err(|fault| (i, fault))?;
    }
    Ok(parts)
}

/// How much filter `filter`'s forward output can exceed its input, as a
/// factor on the bytes it is given: numeric RLE on 1-byte cells writes 3
/// bytes per cell; scale-float can widen 4-byte floats to 8-byte integers;
/// compressors also carry the metadata of earlier filters in their output
/// (and a stored block is a little larger than its input); double delta
/// spends up to 65 bits per 64-bit value and WebP may not shrink noise;
/// every other filter keeps the data size, adding at most a constant.
fn forward_growth(filter: &Filter) -> usize {
    match filter {
        Filter::Rle { .. } => 3,
        Filter::ScaleFloat { .. }
        | Filter::Gzip { .. }
        | Filter::Zstd { .. }
        | Filter::Lz4 { .. }
        | Filter::Bzip2 { .. }
        | Filter::Dictionary { .. }
        | Filter::DoubleDelta { .. }
        | Filter::Webp { .. } => 2,
        _ => 1,
    }
}

/// Slack allowed per filter for headers and window metadata.
const STAGE_SLACK: usize = 1 << 20;

/// However the filters chain, an intermediate stage may hold at most this
/// many times the chunk's original size (plus slack): no pipeline TileDB
/// writes comes near it, and it keeps a forged pipeline of many expanding
/// filters from multiplying a declared size into an allocation without
/// bound.
const MAX_STAGE_FACTOR: usize = 4;

/// How large the reverse output of filter `index` (the forward input of that
/// filter) may be for a chunk whose original size is `original`: the
/// original size grown by every filter before it. Declared sizes in a
/// chunk's metadata are checked against this before anything is allocated,
/// so a decompression bomb is an error rather than an allocation.
fn stage_limit(filters: &[Filter], original: usize, index: usize) -> usize {
    let grown = filters[..index].iter().fold(original, |size, filter| {
        size.saturating_mul(forward_growth(filter))
            .saturating_add(STAGE_SLACK)
    });
    let ceiling = original
        .saturating_mul(MAX_STAGE_FACTOR)
        .saturating_add(index.saturating_mul(STAGE_SLACK));
    grown.min(ceiling)
}

/// Runs the pipeline in reverse over one chunk, writing the original bytes
/// into `dest` (whose length is the chunk's declared original size). For a
/// var-sized string tile taking the string path, `strings` receives its
/// cells' offsets (see [`StringEnds`]). `stream_output`:
/// see [`StageEnv::stream_output`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn unfilter_chunk(
    pipeline: &FilterPipeline,
    types: &[Datatype],
    ctx: &FilterContext,
    metadata: &[u8],
    data: &[u8],
    dest: &mut [u8],
    mut strings: Option<StringEnds<'_>>,
    stream_output: bool,
) -> ChunkResult<()> {
    let n = pipeline.filters.len();
    if n == 0 {
        if data.len() != dest.len() {
            return Err((
                0,
                Fault::corrupt(Cause::Inconsistent {
                    what: "the unfiltered chunk size",
                    expected: dest.len() as u64,
                    found: data.len() as u64,
                }),
            ));
        }
        dest.copy_from_slice(data);
        return Ok(());
    }
    let string_path = if strings.is_some() {
        string_codec(pipeline, ctx)
    } else {
        None
    };
    let original = dest.len();
    let mut md: Cow<'_, [u8]> = Cow::Borrowed(metadata);
    let mut current: Cow<'_, [u8]> = Cow::Borrowed(data);
    let mut dest = Some(dest);
    for i in (0..n).rev() {
        let env = StageEnv {
            filter: &pipeline.filters[i],
            datatype: types[i],
            ctx,
            stream_output,
        };
        let mut out = match (i, dest.take()) {
            (0, Some(d)) => OutBuf::Fixed(d),
            (_, d) => {
                dest = d;
                OutBuf::Grow {
                    buf: scratch::take(),
                    limit: stage_limit(&pipeline.filters, original, i),
                    allocated: false,
                }
            }
        };
        let mut cursor = Cursor::new(&md, "chunk metadata");
        let ends = if i == 0 { strings.take() } else { None };
        let result = match (string_path, ends) {
            (Some(codec), Some(ends)) => {
                var_string::reverse(codec, &mut cursor, &current, &mut out, ends)
            }
            _ => reverse_stage(&env, &mut cursor, &current, &mut out),
        };
        let next_md = result.map_err(|fault| (i, fault))?;
        let consumed = cursor.position();
        md = match next_md {
            MetadataOut::Rest => Cow::Owned(md[consumed..].to_vec()),
            MetadataOut::New(v) => Cow::Owned(v),
        };
        if i > 0 {
            if let Cow::Owned(done) = std::mem::replace(&mut current, Cow::Owned(out.into_vec())) {
                scratch::give_back(done);
            }
        }
    }
    if let Cow::Owned(done) = current {
        scratch::give_back(done);
    }
    Ok(())
}

/// Buffers for the intermediate stages of a chunk's pipeline, kept per
/// thread and used again by the next chunk: a fresh buffer per stage and
/// chunk cost an allocation and a pass zeroing it, as much as a fast
/// stage's own work (LZ4 before BYTESHUFFLE, say).
pub(crate) mod scratch {
    use std::cell::RefCell;

    /// Buffers larger than this go back to the allocator.
    const KEEP_AT_MOST_BYTES: usize = 8 << 20;
    /// A pipeline needs at most two at a time (input and output of a stage).
    const KEEP_AT_MOST: usize = 4;

    thread_local! {
        static BUFFERS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    }

    pub(crate) fn take() -> Vec<u8> {
        BUFFERS.with(|b| b.borrow_mut().pop()).unwrap_or_default()
    }

    pub(crate) fn give_back(buffer: Vec<u8>) {
        if buffer.capacity() == 0 || buffer.capacity() > KEEP_AT_MOST_BYTES {
            return;
        }
        BUFFERS.with(|b| {
            let mut b = b.borrow_mut();
            if b.len() < KEEP_AT_MOST {
                b.push(buffer);
            }
        });
    }
}
