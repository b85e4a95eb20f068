//! POSITIVE_DELTA (`positive_delta_filter.cc`).
//!
//! Each part is cut into windows as for bit-width reduction; a window of
//! whole values stores `x_j − x_{j−1}` with `x_{−1}` = the window's first
//! value (so the first delta is 0), and a descending value is an error. A
//! window that is not a whole number of values is stored raw.
//!
//! Metadata: `n_windows u32`, then per window `{first (s bytes),
//! window_bytes u32}`, then the earlier metadata. Types that are not
//! integers (or date/time before version 20) pass through.

use super::bit_width_reduction::{value_at, window_bytes};
use super::datatype::positive_delta_kind;
use super::stage::{
    by_width, corrupt_part, prepend_metadata, read_uint, view, write_fault, write_uint, Cursor,
    Fault, MetadataOut, OutBuf, Parts, StageEnv, StageResult,
};
use super::Filter;
use crate::error::Cause;
use crate::format::generated::{
    PositiveDeltaMetadataView, PositiveDeltaWindow, PositiveDeltaWindowView,
};
use crate::format::view::Element;

pub(crate) fn forward<'a>(env: &StageEnv<'_>, input: Parts<'a>) -> StageResult<Parts<'a>> {
    let Some(kind) = positive_delta_kind(env.datatype, env.ctx.version) else {
        return Ok(Parts {
            metadata: view(input.metadata),
            data: view(input.data),
        });
    };
    let Filter::PositiveDelta { max_window } = env.filter else {
        return Err(Fault::Usage("not a positive delta filter".into()));
    };
    let w = kind.size();
    let mut windows = Vec::new();
    let mut out = Vec::with_capacity(input.data_len());
    for part in &input.data {
        if part.is_empty() {
            continue;
        }
        let size = window_bytes(part.len(), *max_window, w);
        for window in part.chunks(size) {
            // TileDB reads the first value even from a window shorter than
            // one value (past its end); we pad with zeros.
            let mut first = [0u8; 8];
            let n = window.len().min(w);
            first[..n].copy_from_slice(&window[..n]);
            windows.push(Window {
                first,
                window_bytes: window.len() as u32,
            });
            if window.len() % w != 0 {
                out.extend_from_slice(window);
                continue;
            }
            let mut previous = value_at(&first, kind);
            for v in window.chunks_exact(w) {
                let current = value_at(v, kind);
                if current < previous {
                    return Err(Fault::Usage(
                        "POSITIVE_DELTA: values must not decrease".into(),
                    ));
                }
                out.extend_from_slice(&((current - previous) as u64).to_le_bytes()[..w]);
                previous = current;
            }
        }
    }
    let mut md = Vec::with_capacity(4 + windows.len() * (w + 4));
    PositiveDeltaMetadataView::write(&mut md, w as u64, &windows).map_err(write_fault)?;
    Ok(prepend_metadata(md, input.metadata, vec![out]))
}

/// A window as the writer has it (its first value in the first
/// `value_size` bytes), written as `PositiveDeltaWindow` without building one.
struct Window {
    first: [u8; 8],
    window_bytes: u32,
}

impl Element<PositiveDeltaWindow, (u64,)> for Window {
    fn write_element(&self, out: &mut Vec<u8>, (value_size,): (u64,)) -> crate::Result<()> {
        let first = self.first.get(..value_size as usize).unwrap_or(&self.first);
        PositiveDeltaWindowView::write(out, value_size, first, self.window_bytes)
    }
}

fn undelta<const W: usize>(first: u64, deltas: &[u8], out: &mut [u8]) {
    let mut previous = first;
    for (delta, target) in deltas.chunks_exact(W).zip(out.chunks_exact_mut(W)) {
        previous = previous.wrapping_add(read_uint(delta, W));
        write_uint(target, previous, W);
    }
}

pub(crate) fn reverse(
    env: &StageEnv<'_>,
    md: &mut Cursor<'_>,
    data: &[u8],
    out: &mut OutBuf<'_>,
) -> StageResult<MetadataOut> {
    let Some(kind) = positive_delta_kind(env.datatype, env.ctx.version) else {
        out.put(data)?;
        return Ok(MetadataOut::Rest);
    };
    let w = kind.size();
    let (header, start) = md.read_view::<PositiveDeltaMetadataView<'_>>((w as u64,))?;
    let output = out.alloc(data.len())?;
    let mut pos = 0usize;
    for window in header.windows().iter() {
        let window = window.map_err(|e| md.fault(start, e))?;
        let first = read_uint(window.first(), w);
        let bytes = window.window_bytes() as usize;
        if bytes > data.len() - pos {
            return corrupt_part(
                "windows",
                Cause::OutOfRange {
                    value: pos.saturating_add(bytes) as u64,
                    limit: data.len() as u64,
                },
            );
        }
        if !bytes.is_multiple_of(w) {
            output[pos..pos + bytes].copy_from_slice(&data[pos..pos + bytes]);
        } else {
            by_width!(
                w,
                undelta(
                    first,
                    &data[pos..pos + bytes],
                    &mut output[pos..pos + bytes]
                )
            );
        }
        pos += bytes;
    }
    if pos != data.len() {
        return corrupt_part(
            "windows",
            Cause::Inconsistent {
                what: "the bytes the windows cover",
                expected: data.len() as u64,
                found: pos as u64,
            },
        );
    }
    Ok(MetadataOut::Rest)
}
