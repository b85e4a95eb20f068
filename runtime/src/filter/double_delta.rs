//! DOUBLE_DELTA (`dd_compressor.cc`).
//!
//! Layout: `bitsize u8, n u64` (`DoubleDeltaHeader` in
//! spec/filter_metadata.toml, through its generated view), then either the raw values (when `bitsize`
//! is at least the value's width in bits minus one) or the first two values
//! followed by one signed double delta per further value: a sign bit
//! (1 = negative) and `bitsize` bits of the magnitude, most significant bit
//! first, packed from bit 63 down in 64-bit words stored little-endian; the
//! last, partial word is written too.

use super::datatype::IntKind;
use super::stage::{
    corrupt, corrupt_part, read_uint, sign_extend, view_fault, write_fault, write_uint, Fault,
    StageResult,
};
use crate::error::Cause;
use crate::format::generated::DoubleDeltaHeaderView;
use crate::format::view::View;

/// The value as TileDB widens it to 64 bits before subtracting.
fn widen(bytes: &[u8], kind: IntKind) -> i128 {
    let raw = read_uint(bytes, kind.size());
    if kind.signed() {
        sign_extend(raw, kind.size()) as i128
    } else {
        raw as i128
    }
}

/// The number of bits of the largest magnitude among the double deltas, and
/// the first delta if `count_first_delta` (at least 1); 0 for two values or
/// fewer.
fn bitsize(kind: IntKind, count_first_delta: bool, values: &[u8]) -> StageResult<u32> {
    let width = kind.size();
    let n = values.len() / width;
    if n <= 2 {
        return Ok(0);
    }
    let mut max: u64 = 0;
    let mut previous_delta: Option<i64> = None;
    let mut previous = widen(&values[..width], kind);
    for value in values.chunks_exact(width).skip(1) {
        let current = widen(value, kind);
        let delta = i64::try_from(current - previous)
            .map_err(|_| Fault::Usage("DOUBLE_DELTA: a delta exceeds the range of int64".into()))?;
        let magnitude = match previous_delta {
            None if count_first_delta => delta.unsigned_abs(),
            None => 0,
            Some(p) => delta
                .checked_sub(p)
                .ok_or_else(|| {
                    Fault::Usage("DOUBLE_DELTA: a double delta exceeds the range of int64".into())
                })?
                .unsigned_abs(),
        };
        max = max.max(magnitude);
        previous_delta = Some(delta);
        previous = current;
    }
    Ok((64 - max.leading_zeros()).max(1))
}

struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    word: u64,
    free: u32,
}

impl BitWriter<'_> {
    fn push(&mut self, value: u64, bits: u32) {
        let mut left = bits;
        while left > 0 {
            let take = left.min(self.free);
            let shift = left - take;
            let piece = (value >> shift) & (u64::MAX >> (64 - take));
            self.free -= take;
            self.word |= piece << self.free;
            left -= take;
            if self.free == 0 {
                self.out.extend_from_slice(&self.word.to_le_bytes());
                self.word = 0;
                self.free = 64;
            }
        }
    }

    fn finish(self) {
        if self.free < 64 {
            self.out.extend_from_slice(&self.word.to_le_bytes());
        }
    }
}

/// Encodes `input`. TileDB up to 2.28 sized the bit width from the double
/// deltas only; 2.29 (PR #5506, still format 22) counts the first delta too.
/// Both decode alike; we follow 2.30 for format 22 and the older writers
/// below it, so that either's tiles are reproduced byte for byte.
pub(crate) fn encode(
    kind: IntKind,
    count_first_delta: bool,
    input: &[u8],
    out: &mut Vec<u8>,
) -> StageResult<()> {
    let width = kind.size();
    if !input.len().is_multiple_of(width) {
        return Err(Fault::Usage(format!(
            "DOUBLE_DELTA input of {} bytes is not a whole number of {width}-byte values",
            input.len()
        )));
    }
    let n = input.len() / width;
    let bits = bitsize(kind, count_first_delta, input)?;
    DoubleDeltaHeaderView::write(out, bits as u8, n as u64).map_err(write_fault)?;
    if bits as usize >= width * 8 - 1 {
        out.extend_from_slice(input);
        return Ok(());
    }
    out.extend_from_slice(&input[..input.len().min(2 * width)]);
    if n <= 2 {
        return Ok(());
    }
    let mut writer = BitWriter {
        out,
        word: 0,
        free: 64,
    };
    let value = |i: usize| widen(&input[i * width..(i + 1) * width], kind) as i64;
    let mut previous_delta = value(1).wrapping_sub(value(0));
    for i in 2..n {
        let delta = value(i).wrapping_sub(value(i - 1));
        let dd = delta.wrapping_sub(previous_delta);
        writer.push(u64::from(dd < 0), 1);
        writer.push(dd.unsigned_abs(), bits);
        previous_delta = delta;
    }
    writer.finish();
    Ok(())
}

struct BitReader<'a> {
    words: std::slice::ChunksExact<'a, u8>,
    word: u64,
    left: u32,
}

impl BitReader<'_> {
    fn pull(&mut self, bits: u32) -> StageResult<u64> {
        let mut value: u64 = 0;
        let mut wanted = bits;
        while wanted > 0 {
            if self.left == 0 {
                let Some(next) = self.words.next() else {
                    return corrupt_part("bit stream", Cause::EndsEarly);
                };
                self.word = read_uint(next, 8);
                self.left = 64;
            }
            let take = wanted.min(self.left);
            let piece = (self.word >> (self.left - take)) & (u64::MAX >> (64 - take));
            value = if take == 64 {
                piece
            } else {
                (value << take) | piece
            };
            self.left -= take;
            wanted -= take;
        }
        Ok(value)
    }
}

pub(crate) fn decode(kind: IntKind, input: &[u8], out: &mut [u8]) -> StageResult<()> {
    let width = kind.size();
    let (header, body) = DoubleDeltaHeaderView::parse_with(input, ())
        .map_err(|e| view_fault("DOUBLE_DELTA input", 0, e.into()))?;
    let (bits, n) = (u32::from(header.bitsize()), header.n_values());
    // TileDB encodes floor(len / width) values; an input that is not a whole
    // number of values (e.g. compressed bytes from an earlier filter) keeps
    // its tail only on the raw path, which copies every byte.
    if n != (out.len() / width) as u64 {
        return corrupt(Cause::Inconsistent {
            what: "the DOUBLE_DELTA value count",
            expected: (out.len() / width) as u64,
            found: n,
        });
    }
    let n = n as usize;
    if bits as usize >= width * 8 - 1 {
        if body.len() != out.len() {
            return corrupt(Cause::Inconsistent {
                what: "the DOUBLE_DELTA raw body size",
                expected: out.len() as u64,
                found: body.len() as u64,
            });
        }
        out.copy_from_slice(body);
        return Ok(());
    }
    if bits > 64 {
        return corrupt_part(
            "bit size",
            Cause::OutOfRange {
                value: u64::from(bits),
                limit: 64,
            },
        );
    }
    // Bytes past the last whole value are not encoded; TileDB leaves them
    // unwritten, here they read as zero.
    let whole = n * width;
    out[whole..].fill(0);
    let out = &mut out[..whole];
    let head = out.len().min(2 * width);
    if body.len() < head {
        return corrupt_part(
            "first values",
            Cause::Truncated {
                needed: head as u64,
                available: body.len() as u64,
            },
        );
    }
    out[..head].copy_from_slice(&body[..head]);
    if n <= 2 {
        return Ok(());
    }
    let stream = &body[head..];
    if !stream.len().is_multiple_of(8) {
        return corrupt_part(
            "bit stream",
            Cause::NotMultiple {
                size: stream.len() as u64,
                unit: 8,
            },
        );
    }
    let reader = BitReader {
        words: stream.chunks_exact(8),
        word: 0,
        left: 0,
    };
    let signed = kind.signed();
    match width {
        1 => unpack::<1>(reader, bits, signed, out),
        2 => unpack::<2>(reader, bits, signed, out),
        4 => unpack::<4>(reader, bits, signed, out),
        _ => unpack::<8>(reader, bits, signed, out),
    }
}

/// Rebuilds values 2.. from the double deltas. TileDB computes each value in
/// 64 bits from the previous two *as stored* (narrowed to the value type and
/// widened again), so the running values are narrowed the same way here.
fn unpack<const W: usize>(
    mut reader: BitReader<'_>,
    bits: u32,
    signed: bool,
    out: &mut [u8],
) -> StageResult<()> {
    let narrow = |v: i64| -> i64 {
        let raw = v as u64 & (u64::MAX >> (64 - 8 * W as u32));
        if signed {
            sign_extend(raw, W)
        } else {
            raw as i64
        }
    };
    let load = |b: &[u8]| narrow(read_uint(b, W) as i64);
    let mut before = load(&out[..W]);
    let mut last = load(&out[W..2 * W]);
    let magnitude_mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    for target in out[2 * W..].chunks_exact_mut(W) {
        // The sign bit and the magnitude in one read when they fit.
        let (negative, magnitude) = if bits < 64 {
            let v = reader.pull(bits + 1)?;
            (v >> bits == 1, (v & magnitude_mask) as i64)
        } else {
            (reader.pull(1)? == 1, reader.pull(bits)? as i64)
        };
        let dd = if negative {
            magnitude.wrapping_neg()
        } else {
            magnitude
        };
        let value = narrow(dd.wrapping_add(last.wrapping_mul(2)).wrapping_sub(before));
        write_uint(target, value as u64, W);
        before = last;
        last = value;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TileDB's raw path (bit size ≥ width·8 − 1) copies every input byte,
    /// including a tail that is not a whole value (the input of a filter
    /// after a compressor); the header still counts whole values only.
    #[test]
    fn raw_path_keeps_a_partial_tail() {
        let body: Vec<u8> = (0u8..21).map(|b| b.wrapping_mul(97)).collect();
        let mut input = vec![15u8];
        input.extend_from_slice(&10u64.to_le_bytes());
        input.extend_from_slice(&body);
        let mut out = vec![0u8; 21];
        decode(IntKind::U16, &input, &mut out).unwrap();
        assert_eq!(out, body);
    }
}
