//! BIT_WIDTH_REDUCTION (`bit_width_reduction_filter.cc`).
//!
//! Each part is cut into windows of ⌊min(part, max_window)/s⌋ whole values.
//! A window whose range (max − min + 1, computed without overflow) fits in
//! fewer bits than the value stores each `value − min` in 8, 16, 32 or 64
//! bits (signed narrow types for signed values); otherwise, or when the
//! window is not a whole number of values, it is stored raw.
//!
//! Metadata: `original_len u32, n_windows u32`, then per window
//! `{min (s bytes), bits u8, window_bytes u32}`, then the earlier metadata.
//! Types other than 16/32/64-bit integers (and date/time from version 20)
//! pass through with no metadata.

use super::datatype::{bit_width_reduction_kind, IntKind};
use super::stage::{
    by_width, corrupt_part, prepend_metadata, read_uint, sign_extend, view, write_fault,
    write_uint, Cursor, Fault, MetadataOut, OutBuf, Parts, StageEnv, StageResult,
};
use super::Filter;
use crate::error::Cause;
use crate::format::generated::{BitWidthReductionMetadataView, BitWidthWindow, BitWidthWindowView};
use crate::format::view::Element;

/// A value widened so that differences never overflow.
pub(crate) fn value_at(bytes: &[u8], kind: IntKind) -> i128 {
    let raw = read_uint(bytes, kind.size());
    if kind.signed() {
        sign_extend(raw, kind.size()) as i128
    } else {
        raw as i128
    }
}

fn range_of(kind: IntKind) -> (i128, i128) {
    let bits = 8 * kind.size() as u32;
    if kind.signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// The stored width for a window's values, and the window minimum, as
/// TileDB computes them. Writers up to TileDB 2.28 (`legacy`, which we apply
/// below format 22) differ in two corners, both reproduced here: a UINT16
/// range goes through C's integer promotion and so gets the signed
/// thresholds (127 → 8 bits, 32767 → 16, else 32), and a window with no whole
/// value gets 8 bits and the type's maximum as its minimum. (From 2.29 such
/// a window gets the full width and an uninitialized minimum; we store the
/// type's maximum there too.)
fn bits_for(kind: IntKind, values: &[u8], legacy: bool) -> (u32, i128) {
    let w = kind.size();
    let full = 8 * w as u32;
    let (_, hi) = range_of(kind);
    if values.len() < w {
        return (if legacy { 8 } else { full }, hi);
    }
    let (min, max) = by_width!(w, min_max(values, kind.signed()));
    let range = max - min;
    // A range (plus one) beyond the type overflows: store the values raw.
    // (Writers up to 2.28 computed the range with wrap-around and could
    // store wrong values; we never reproduce that.)
    if range + 1 > hi {
        return (full, min);
    }
    let spread = range + 1;
    let signed_thresholds = kind.signed() || (legacy && kind == IntKind::U16);
    let bits = if signed_thresholds {
        if spread <= i8::MAX as i128 {
            8
        } else if spread <= i16::MAX as i128 {
            16
        } else if spread <= i32::MAX as i128 {
            32
        } else {
            64
        }
    } else {
        match 128 - spread.leading_zeros() {
            0..=8 => 8,
            9..=16 => 16,
            17..=32 => 32,
            _ => 64,
        }
    };
    (bits, min)
}

/// The window size in bytes TileDB uses for a part; TileDB divides by zero
/// when it would be 0, so we fall back to whole parts of at most one value.
pub(crate) fn window_bytes(part_len: usize, max_window: u32, w: usize) -> usize {
    let size = part_len.min(max_window as usize) / w * w;
    if size == 0 {
        part_len.min(w)
    } else {
        size
    }
}

fn max_window(filter: &Filter) -> u32 {
    match filter {
        Filter::BitWidthReduction { max_window } | Filter::PositiveDelta { max_window } => {
            *max_window
        }
        _ => 0,
    }
}

pub(crate) fn forward<'a>(env: &StageEnv<'_>, input: Parts<'a>) -> StageResult<Parts<'a>> {
    let Some(kind) = bit_width_reduction_kind(env.datatype, env.ctx.version) else {
        return Ok(Parts {
            metadata: view(input.metadata),
            data: view(input.data),
        });
    };
    let w = kind.size();
    let total =
        u32::try_from(input.data_len()).map_err(|_| Fault::Usage("input exceeds 4 GiB".into()))?;
    let mut windows = Vec::new();
    let mut out = Vec::with_capacity(input.data_len());
    for part in &input.data {
        if part.is_empty() {
            continue;
        }
        let size = window_bytes(part.len(), max_window(env.filter), w);
        for window in part.chunks(size) {
            let whole = window.len() / w * w;
            let (bits, offset) = bits_for(
                kind,
                &window[..whole],
                crate::format::generated::bit_width_reduction_legacy_widths(env.ctx.version),
            );
            let mut offset_bytes = [0u8; 8];
            write_uint(&mut offset_bytes, offset as u64, w);
            windows.push(Window {
                offset: offset_bytes,
                bits: bits as u8,
                window_bytes: window.len() as u32,
            });
            if bits >= 8 * w as u32 || window.len() % w != 0 {
                out.extend_from_slice(window);
            } else {
                let start = out.len();
                out.resize(start + window.len() / w * (bits as usize / 8), 0);
                let (target, offset) = (&mut out[start..], offset as u64);
                match (bits, w) {
                    (8, 2) => narrow::<2, 1>(window, offset, target),
                    (8, 4) => narrow::<4, 1>(window, offset, target),
                    (16, 4) => narrow::<4, 2>(window, offset, target),
                    (8, 8) => narrow::<8, 1>(window, offset, target),
                    (16, 8) => narrow::<8, 2>(window, offset, target),
                    _ => narrow::<8, 4>(window, offset, target),
                }
            }
        }
    }
    let mut md = Vec::with_capacity(8 + windows.len() * (w + 5));
    BitWidthReductionMetadataView::write(&mut md, w as u64, total, &windows)
        .map_err(write_fault)?;
    Ok(prepend_metadata(md, input.metadata, vec![out]))
}

/// A window as the writer has it (its minimum in the first `value_size`
/// bytes), written as `BitWidthWindow` without building one.
struct Window {
    offset: [u8; 8],
    bits: u8,
    window_bytes: u32,
}

impl Element<BitWidthWindow, (u64,)> for Window {
    fn write_element(&self, out: &mut Vec<u8>, (value_size,): (u64,)) -> crate::Result<()> {
        let offset = self
            .offset
            .get(..value_size as usize)
            .unwrap_or(&self.offset);
        BitWidthWindowView::write(out, value_size, offset, self.bits, self.window_bytes)
    }
}

/// The smallest and largest of the `W`-byte values.
fn min_max<const W: usize>(values: &[u8], signed: bool) -> (i128, i128) {
    let (mut min, mut max) = (i128::MAX, i128::MIN);
    for v in values.chunks_exact(W) {
        let raw = read_uint(v, W);
        let x = if signed {
            sign_extend(raw, W) as i128
        } else {
            raw as i128
        };
        min = min.min(x);
        max = max.max(x);
    }
    (min, max)
}

/// `value − offset` for each `W`-byte value, stored in `N` bytes (the
/// difference fits, so its low bytes are exact).
fn narrow<const W: usize, const N: usize>(values: &[u8], offset: u64, out: &mut [u8]) {
    for (v, target) in values.chunks_exact(W).zip(out.chunks_exact_mut(N)) {
        write_uint(target, read_uint(v, W).wrapping_sub(offset), N);
    }
}

/// `offset + value` for each `N`-byte stored value, written in `W` bytes
/// (narrow values are sign-extended for signed types; sums wrap).
fn widen<const N: usize, const W: usize>(packed: &[u8], out: &mut [u8], offset: u64, signed: bool) {
    for (v, target) in packed.chunks_exact(N).zip(out.chunks_exact_mut(W)) {
        let raw = read_uint(v, N);
        let relative = if signed {
            sign_extend(raw, N) as u64
        } else {
            raw
        };
        write_uint(target, relative.wrapping_add(offset), W);
    }
}

pub(crate) fn reverse(
    env: &StageEnv<'_>,
    md: &mut Cursor<'_>,
    data: &[u8],
    out: &mut OutBuf<'_>,
) -> StageResult<MetadataOut> {
    let Some(kind) = bit_width_reduction_kind(env.datatype, env.ctx.version) else {
        out.put(data)?;
        return Ok(MetadataOut::Rest);
    };
    let w = kind.size();
    let (header, start) = md.read_view::<BitWidthReductionMetadataView<'_>>((w as u64,))?;
    let original = header.orig_len() as usize;
    let output = out.alloc(original)?;
    let mut input = Cursor::new(data, "bit-width-reduced data");
    let mut pos = 0usize;
    for window in header.windows().iter() {
        let window = window.map_err(|e| md.fault(start, e))?;
        let offset = value_at(window.offset(), kind);
        let bits = window.bits() as usize;
        let bytes = window.window_bytes() as usize;
        if bytes > output.len() - pos {
            return corrupt_part(
                "windows",
                Cause::OutOfRange {
                    value: pos.saturating_add(bytes) as u64,
                    limit: output.len() as u64,
                },
            );
        }
        if bits >= 8 * w || !bytes.is_multiple_of(w) {
            output[pos..pos + bytes].copy_from_slice(input.take(bytes)?);
        } else {
            if !matches!(bits, 8 | 16 | 32) {
                return corrupt_part(
                    "windows",
                    Cause::NotOneOf {
                        what: "the bit width of a window",
                        value: bits as u64,
                        allowed: &[8, 16, 32],
                    },
                );
            }
            let narrow = bits / 8;
            let packed = input.take(bytes / w * narrow)?;
            let target = &mut output[pos..pos + bytes];
            let (offset, signed) = (offset as u64, kind.signed());
            match (narrow, w) {
                (1, 2) => widen::<1, 2>(packed, target, offset, signed),
                (1, 4) => widen::<1, 4>(packed, target, offset, signed),
                (2, 4) => widen::<2, 4>(packed, target, offset, signed),
                (1, 8) => widen::<1, 8>(packed, target, offset, signed),
                (2, 8) => widen::<2, 8>(packed, target, offset, signed),
                _ => widen::<4, 8>(packed, target, offset, signed),
            }
        }
        pos += bytes;
    }
    if pos != original {
        return corrupt_part(
            "windows",
            Cause::Inconsistent {
                what: "the bytes the windows cover",
                expected: original as u64,
                found: pos as u64,
            },
        );
    }
    if input.remaining() != 0 {
        return corrupt_part(
            "windows",
            Cause::TrailingBytes {
                count: input.remaining() as u64,
            },
        );
    }
    Ok(MetadataOut::Rest)
}
