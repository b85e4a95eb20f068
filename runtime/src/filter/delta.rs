//! DELTA (`delta_compressor.cc`): `n u64`, the first value, then each
//! difference from the previous value, computed in 64 bits and stored
//! truncated to the value's width, so decoding adds with wrap-around.

use super::stage::{corrupt, read_uint, write_uint, Fault, StageResult};

pub(crate) fn encode(width: usize, input: &[u8], out: &mut Vec<u8>) -> StageResult<()> {
    if !input.len().is_multiple_of(width) {
        return Err(Fault::Usage(format!(
            "DELTA input of {} bytes is not a whole number of {width}-byte values",
            input.len()
        )));
    }
    let n = input.len() / width;
    out.extend_from_slice(&(n as u64).to_le_bytes());
    let mut values = input.chunks_exact(width);
    let Some(first) = values.next() else {
        return Ok(());
    };
    out.extend_from_slice(first);
    let mut previous = read_uint(first, width);
    for value in values {
        let current = read_uint(value, width);
        out.extend_from_slice(&current.wrapping_sub(previous).to_le_bytes()[..width]);
        previous = current;
    }
    Ok(())
}

pub(crate) fn decode(width: usize, input: &[u8], out: &mut [u8]) -> StageResult<()> {
    let Some((n, body)) = input.split_first_chunk::<8>() else {
        return corrupt("DELTA input lacks its value count");
    };
    let n = u64::from_le_bytes(*n);
    let declared = out.len() / width;
    // TileDB encodes floor(len / width) values and drops the tail of an input
    // that is not a whole number of values (it stays unwritten; zero here).
    if n != declared as u64 {
        return corrupt(format!(
            "DELTA holds {n} values but {} bytes are declared",
            out.len()
        ));
    }
    let whole = declared * width;
    out[whole..].fill(0);
    let out = &mut out[..whole];
    if body.len() != out.len() {
        return corrupt(format!(
            "DELTA body is {} bytes, expected {}",
            body.len(),
            out.len()
        ));
    }
    let mut previous = 0u64;
    for (i, (delta, target)) in body
        .chunks_exact(width)
        .zip(out.chunks_exact_mut(width))
        .enumerate()
    {
        let d = read_uint(delta, width);
        let value = if i == 0 { d } else { previous.wrapping_add(d) };
        write_uint(target, value, width);
        previous = value;
    }
    Ok(())
}
