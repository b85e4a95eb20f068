//! XOR (`xor_filter.cc`): each value of a part is replaced by its XOR with
//! the previous value of the part (the first is kept), on 1-, 2-, 4- or
//! 8-byte words. The filter hands the next one a signed integer type of the
//! same size.
//!
//! Metadata: `n_parts u32`, then each part's size `u32`.

use super::byteshuffle::{part_sizes_metadata, read_part_sizes};
use super::datatype::xor_width;
use super::stage::{
    by_width, corrupt, prepend_metadata, read_uint, write_uint, Cursor, Fault, MetadataOut, OutBuf,
    Parts, StageEnv, StageResult,
};
use crate::error::Cause;

fn width(env: &StageEnv<'_>) -> StageResult<usize> {
    xor_width(env.datatype).ok_or_else(|| {
        Fault::Usage(format!(
            "XOR does not apply to {}-byte values",
            env.datatype.size()
        ))
    })
}

pub(crate) fn forward<'a>(env: &StageEnv<'_>, input: Parts<'a>) -> StageResult<Parts<'a>> {
    let w = width(env)?;
    let md = part_sizes_metadata(input.data_slices())?;
    let mut out = vec![0u8; input.data_len()];
    let mut pos = 0;
    for part in &input.data {
        if part.len() % w != 0 {
            return Err(Fault::Usage(format!(
                "XOR part of {} bytes is not a whole number of {w}-byte values",
                part.len()
            )));
        }
        by_width!(w, xor_previous(part, &mut out[pos..pos + part.len()]));
        pos += part.len();
    }
    Ok(prepend_metadata(md, input.metadata, vec![out]))
}

fn xor_previous<const W: usize>(input: &[u8], out: &mut [u8]) {
    let mut previous = 0u64;
    for (value, target) in input.chunks_exact(W).zip(out.chunks_exact_mut(W)) {
        let v = read_uint(value, W);
        write_uint(target, v ^ previous, W);
        previous = v;
    }
}

fn unxor<const W: usize>(input: &[u8], out: &mut [u8]) {
    let mut previous = 0u64;
    for (value, target) in input.chunks_exact(W).zip(out.chunks_exact_mut(W)) {
        previous ^= read_uint(value, W);
        write_uint(target, previous, W);
    }
}

pub(crate) fn reverse(
    env: &StageEnv<'_>,
    md: &mut Cursor<'_>,
    data: &[u8],
    out: &mut OutBuf<'_>,
) -> StageResult<MetadataOut> {
    let w = xor_width(env.datatype).ok_or_else(|| {
        Fault::corrupt(Cause::NotOneOf {
            what: "the size of the values XOR reads",
            value: env.datatype.size(),
            allowed: &[1, 2, 4, 8],
        })
    })?;
    let sizes = read_part_sizes(md, data.len())?;
    let output = out.alloc(data.len())?;
    let mut pos = 0;
    for size in sizes {
        if size % w != 0 {
            return corrupt(Cause::NotMultiple {
                size: size as u64,
                unit: w as u64,
            });
        }
        by_width!(
            w,
            unxor(&data[pos..pos + size], &mut output[pos..pos + size])
        );
        pos += size;
    }
    Ok(MetadataOut::Rest)
}
