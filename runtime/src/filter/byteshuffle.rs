//! BYTESHUFFLE (`byteshuffle_filter.cc`, blosc2's `shuffle`): within each
//! part of n whole values of s bytes, byte j of value i moves to `j·n + i`;
//! trailing bytes that make no whole value stay at the end.
//!
//! Metadata: `n_parts u32`, then each part's size `u32`.

use super::stage::{
    corrupt, prepend_metadata, Cursor, Fault, MetadataOut, OutBuf, Parts, StageEnv, StageResult,
};

pub(crate) fn shuffle(width: usize, input: &[u8], out: &mut [u8]) {
    let n = input.len().checked_div(width).unwrap_or(0);
    if width <= 1 || n == 0 {
        out.copy_from_slice(input);
        return;
    }
    for (i, value) in input.chunks_exact(width).enumerate() {
        for (j, &byte) in value.iter().enumerate() {
            out[j * n + i] = byte;
        }
    }
    let whole = n * width;
    out[whole..].copy_from_slice(&input[whole..]);
}

pub(crate) fn unshuffle(width: usize, input: &[u8], out: &mut [u8]) {
    let n = input.len().checked_div(width).unwrap_or(0);
    if width <= 1 || n == 0 {
        out.copy_from_slice(input);
        return;
    }
    for (i, value) in out.chunks_exact_mut(width).enumerate() {
        for (j, byte) in value.iter_mut().enumerate() {
            *byte = input[j * n + i];
        }
    }
    let whole = n * width;
    out[whole..].copy_from_slice(&input[whole..]);
}

/// Writes `n_parts` and the sizes of `parts`.
pub(crate) fn part_sizes_metadata<'p>(
    parts: impl ExactSizeIterator<Item = &'p [u8]>,
) -> StageResult<Vec<u8>> {
    let mut md = Vec::with_capacity(4 + 4 * parts.len());
    md.extend_from_slice(&(parts.len() as u32).to_le_bytes());
    for part in parts {
        let size =
            u32::try_from(part.len()).map_err(|_| Fault::Usage("a part exceeds 4 GiB".into()))?;
        md.extend_from_slice(&size.to_le_bytes());
    }
    Ok(md)
}

/// Reads `n_parts` and the part sizes, checking that they cover `data`.
pub(crate) fn read_part_sizes(md: &mut Cursor<'_>, data_len: usize) -> StageResult<Vec<usize>> {
    let n = md.count(4)?;
    let mut sizes = Vec::with_capacity(n);
    let mut total = 0usize;
    for _ in 0..n {
        let size = md.u32()? as usize;
        total = total.saturating_add(size);
        sizes.push(size);
    }
    if total != data_len {
        return corrupt(format!(
            "parts declare {total} bytes but the data holds {data_len}"
        ));
    }
    Ok(sizes)
}

pub(crate) fn forward<'a>(env: &StageEnv<'_>, input: Parts<'a>) -> StageResult<Parts<'a>> {
    let width = env.datatype.size() as usize;
    let md = part_sizes_metadata(input.data_slices())?;
    let mut out = vec![0u8; input.data_len()];
    let mut pos = 0;
    for part in &input.data {
        shuffle(width, part, &mut out[pos..pos + part.len()]);
        pos += part.len();
    }
    Ok(prepend_metadata(md, input.metadata, vec![out]))
}

pub(crate) fn reverse(
    env: &StageEnv<'_>,
    md: &mut Cursor<'_>,
    data: &[u8],
    out: &mut OutBuf<'_>,
) -> StageResult<MetadataOut> {
    let width = env.datatype.size() as usize;
    let sizes = read_part_sizes(md, data.len())?;
    let output = out.alloc(data.len())?;
    let mut pos = 0;
    for size in sizes {
        unshuffle(width, &data[pos..pos + size], &mut output[pos..pos + size]);
        pos += size;
    }
    Ok(MetadataOut::Rest)
}
