//! DELTA (`delta_compressor.cc`): `n u64` (`DeltaHeader` in
//! spec/filter_metadata.toml, through its generated view), the first value, then each
//! difference from the previous value, computed in 64 bits and stored
//! truncated to the value's width, so decoding adds with wrap-around.

use super::stage::{
    by_width, corrupt, read_uint, view_fault, write_fault, write_uint, Fault, StageResult,
};
use crate::error::Cause;
use crate::format::generated::DeltaHeaderView;
use crate::format::view::View;

pub(crate) fn encode(width: usize, input: &[u8], out: &mut Vec<u8>) -> StageResult<()> {
    if !input.len().is_multiple_of(width) {
        return Err(Fault::Usage(format!(
            "DELTA input of {} bytes is not a whole number of {width}-byte values",
            input.len()
        )));
    }
    let n = input.len() / width;
    DeltaHeaderView::write(out, n as u64).map_err(write_fault)?;
    let start = out.len();
    out.resize(start + input.len(), 0);
    by_width!(width, differences(input, &mut out[start..]));
    Ok(())
}

/// Each value minus the previous one (the first minus zero), wrapping.
fn differences<const W: usize>(values: &[u8], out: &mut [u8]) {
    let mut previous = 0u64;
    for (value, target) in values.chunks_exact(W).zip(out.chunks_exact_mut(W)) {
        let current = read_uint(value, W);
        write_uint(target, current.wrapping_sub(previous), W);
        previous = current;
    }
}

pub(crate) fn decode(width: usize, input: &[u8], out: &mut [u8]) -> StageResult<()> {
    let (header, body) = DeltaHeaderView::parse_with(input, ())
        .map_err(|e| view_fault("DELTA input", 0, e.into()))?;
    let n = header.n_values();
    let declared = out.len() / width;
    // TileDB encodes floor(len / width) values and drops the tail of an input
    // that is not a whole number of values (it stays unwritten; zero here).
    if n != declared as u64 {
        return corrupt(Cause::Inconsistent {
            what: "the DELTA value count",
            expected: declared as u64,
            found: n,
        });
    }
    let whole = declared * width;
    out[whole..].fill(0);
    let out = &mut out[..whole];
    if body.len() != out.len() {
        return corrupt(Cause::Inconsistent {
            what: "the DELTA body size",
            expected: out.len() as u64,
            found: body.len() as u64,
        });
    }
    by_width!(width, accumulate(body, out));
    Ok(())
}

/// Running sums with wrap-around; the first value is its own "delta".
fn accumulate<const W: usize>(deltas: &[u8], out: &mut [u8]) {
    let mut sum = 0u64;
    for (delta, target) in deltas.chunks_exact(W).zip(out.chunks_exact_mut(W)) {
        sum = sum.wrapping_add(read_uint(delta, W));
        write_uint(target, sum, W);
    }
}
