//! BYTESHUFFLE (`byteshuffle_filter.cc`, blosc2's `shuffle`): within each
//! part of n whole values of s bytes, byte j of value i moves to `j·n + i`;
//! trailing bytes that make no whole value stay at the end.
//!
//! Metadata: `n_parts u32`, then each part's size `u32`.
#![allow(
    unsafe_code,
    reason = "AVX2 intrinsics behind a runtime feature check; each block states its SAFETY"
)]

use super::stage::{
    corrupt, prepend_metadata, recycle_parts, scratch, write_fault, Cursor, Fault, MetadataOut,
    OutBuf, Parts, StageEnv, StageResult,
};
use crate::error::Cause;
use crate::format::generated::PartSizesMetadataView;

pub(crate) fn shuffle(width: usize, input: &[u8], out: &mut [u8]) {
    let n = input.len().checked_div(width).unwrap_or(0);
    if width <= 1 || n == 0 {
        out.copy_from_slice(input);
        return;
    }
    let from = match width {
        2 => shuffle_simd::<2>(input, out, n),
        4 => shuffle_simd::<4>(input, out, n),
        8 => match shuffle_simd::<8>(input, out, n) {
            0 => shuffle8_blocks(input, out, n),
            done => done,
        },
        _ => 0,
    };
    for (i, value) in input.chunks_exact(width).enumerate().skip(from) {
        for (j, &byte) in value.iter().enumerate() {
            out[j * n + i] = byte;
        }
    }
    let whole = n * width;
    out[whole..].copy_from_slice(&input[whole..]);
}

/// Shuffles `W`-byte values (2, 4 or 8) with AVX2 where present, else SSE2
/// (part of every x86-64 CPU). Returns the values done, a multiple of 16;
/// 0 elsewhere.
#[cfg(target_arch = "x86_64")]
fn shuffle_simd<const W: usize>(input: &[u8], out: &mut [u8], n: usize) -> usize {
    if input.len() < W * n || out.len() < W * n {
        return 0;
    }
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present and both buffers hold `W * n` bytes.
        let done = unsafe { shuffle_avx2::<W>(input, out, n) };
        // SAFETY: as above; SSE2 is always present on x86-64.
        done + unsafe { shuffle_sse2::<W>(&input[W * done..], out, n, done) }
    } else {
        // SAFETY: SSE2 is always present; both buffers hold `W * n` bytes.
        unsafe { shuffle_sse2::<W>(input, out, n, 0) }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn shuffle_simd<const W: usize>(_: &[u8], _: &mut [u8], _: usize) -> usize {
    0
}

/// One round of the byte transpose: the registers `i` and `i + step`
/// unpacked into each other (low halves interleaved into `i`, high halves
/// into `i + step`).
#[cfg(target_arch = "x86_64")]
macro_rules! unpack_round {
    ($r:ident, $lo:ident, $hi:ident, $step:literal, $($i:literal)*) => {{
        let p = $r;
        $(
            $r[$i] = $lo(p[$i], p[$i + $step]);
            $r[$i + $step] = $hi(p[$i], p[$i + $step]);
        )*
    }};
}

/// The byte transpose of the SIMD shuffles, in straight-line code (so the
/// registers stay registers). Sixteen `W`-byte values fill `W` registers
/// of 16 bytes; a byte's place is its register number (the high bits of
/// its value's index) and its lane (the low bits of the value's index,
/// then its byte's index). An unpack of the registers paired on register
/// bit `p` moves every byte's lane bits up by one, its register bit `p`
/// into the lane's low bit and the lane's high bit into register bit `p`.
/// Four rounds leave the value's index as the lane and the byte's index in
/// the register number; each round pairs on the register bit holding the
/// highest value bit not yet in the lane (bits 2, 1, 0, 2 for eight
/// registers, 1, 0, 1, 0 for four, 0 for two).
#[cfg(target_arch = "x86_64")]
macro_rules! transpose {
    ($r:ident, $width:expr, $lo:ident, $hi:ident) => {
        match $width {
            8 => {
                unpack_round!($r, $lo, $hi, 4, 0 1 2 3);
                unpack_round!($r, $lo, $hi, 2, 0 1 4 5);
                unpack_round!($r, $lo, $hi, 1, 0 2 4 6);
                unpack_round!($r, $lo, $hi, 4, 0 1 2 3);
            }
            4 => {
                unpack_round!($r, $lo, $hi, 2, 0 1);
                unpack_round!($r, $lo, $hi, 1, 0 2);
                unpack_round!($r, $lo, $hi, 2, 0 1);
                unpack_round!($r, $lo, $hi, 1, 0 2);
            }
            _ => {
                unpack_round!($r, $lo, $hi, 1, 0);
                unpack_round!($r, $lo, $hi, 1, 0);
                unpack_round!($r, $lo, $hi, 1, 0);
                unpack_round!($r, $lo, $hi, 1, 0);
            }
        }
    };
}

/// Which plane (byte index) register `reg` holds after [`transpose!`]:
/// for 8-byte values the rounds leave byte bit 0 in register bit 2 and
/// byte bits 2, 1 in register bits 1, 0.
#[cfg(target_arch = "x86_64")]
const fn plane_of_register(width: usize, reg: usize) -> usize {
    match width {
        8 => ((reg & 3) << 1) | (reg >> 2),
        _ => reg,
    }
}

/// Shuffles the values from `first` on (`input` starts at value `first`)
/// sixteen at a time; returns how many it did.
///
/// # Safety
/// `input` must hold `W * (n - first)` bytes and `out` `W * n`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
unsafe fn shuffle_sse2<const W: usize>(
    input: &[u8],
    out: &mut [u8],
    n: usize,
    first: usize,
) -> usize {
    use std::arch::x86_64::*;
    let blocks = (n - first) / 16;
    let src = input.as_ptr();
    let dst = out.as_mut_ptr();
    for b in 0..blocks {
        let i = first + 16 * b;
        // Eight registers, the first `W` used.
        let mut r = [_mm_setzero_si128(); 8];
        for (k, reg) in r.iter_mut().enumerate().take(W) {
            // SAFETY: reads 16 bytes of block b, inside `input`.
            *reg = unsafe { _mm_loadu_si128(src.add(16 * (W * b + k)).cast()) };
        }
        transpose!(r, W, _mm_unpacklo_epi8, _mm_unpackhi_epi8);
        for (reg, &v) in r.iter().enumerate().take(W) {
            // SAFETY: writes 16 bytes at `plane * n + i` with plane < W
            // and i + 16 <= n, inside `out`.
            unsafe { _mm_storeu_si128(dst.add(plane_of_register(W, reg) * n + i).cast(), v) };
        }
    }
    16 * blocks
}

/// The SSE2 transpose on thirty-two values at once: each 128-bit half of
/// the AVX2 registers transposes its own sixteen (the unpacks work within
/// halves), the first sixteen values loaded into the low halves and the
/// next sixteen into the high halves, so that a register's two halves are
/// 32 neighbouring bytes of one plane. Returns how many values it did.
///
/// # Safety
/// AVX2 must be present and `input` and `out` at least `W * n` bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn shuffle_avx2<const W: usize>(input: &[u8], out: &mut [u8], n: usize) -> usize {
    use std::arch::x86_64::*;
    let blocks = n / 32;
    let src = input.as_ptr();
    let dst = out.as_mut_ptr();
    for b in 0..blocks {
        let i = 32 * b;
        let mut r = [_mm256_setzero_si256(); 8];
        for (k, reg) in r.iter_mut().enumerate().take(W) {
            // SAFETY: reads 16 bytes of values i..i + 16 and 16 of values
            // i + 16..i + 32, inside `input`.
            *reg = unsafe {
                let low = src.add(W * i + 16 * k);
                _mm256_loadu2_m128i(low.add(16 * W).cast(), low.cast())
            };
        }
        transpose!(r, W, _mm256_unpacklo_epi8, _mm256_unpackhi_epi8);
        for (reg, &v) in r.iter().enumerate().take(W) {
            // SAFETY: writes 32 bytes at `plane * n + i` with plane < W
            // and i + 32 <= n, inside `out`.
            unsafe { _mm256_storeu_si256(dst.add(plane_of_register(W, reg) * n + i).cast(), v) };
        }
    }
    32 * blocks
}

/// Shuffles 8-byte values eight at a time where no SIMD path runs: the
/// 8×8 bytes of eight values transposed in registers (three rounds of
/// block swaps), each row then one 8-byte store into its plane. Returns
/// the values done (a multiple of 8; the rest are left to the plain loop).
fn shuffle8_blocks(input: &[u8], out: &mut [u8], n: usize) -> usize {
    let blocks = n / 8;
    let mut planes: Vec<&mut [u8]> = out[..n * 8].chunks_exact_mut(n).collect();
    for (b, values) in input.chunks_exact(64).take(blocks).enumerate() {
        let mut r = [0u64; 8];
        for (row, bytes) in r.iter_mut().zip(values.chunks_exact(8)) {
            *row = u64::from_le_bytes(bytes.try_into().unwrap_or_default());
        }
        // Row i holds value i (byte j = column j); after the swaps row j
        // holds byte j of every value.
        for (half, mask) in [
            (32, 0x0000_0000_ffff_ffffu64),
            (16, 0x0000_ffff_0000_ffff),
            (8, 0x00ff_00ff_00ff_00ff),
        ] {
            let step = half / 8;
            for i in (0..8).filter(|i| i & step == 0) {
                let t = ((r[i] >> half) ^ r[i + step]) & mask;
                r[i] ^= t << half;
                r[i + step] ^= t;
            }
        }
        for (plane, row) in planes.iter_mut().zip(r) {
            plane[b * 8..b * 8 + 8].copy_from_slice(&row.to_le_bytes());
        }
    }
    blocks * 8
}

/// Unshuffles whole `W`-byte values: the planes are read in step, so each
/// output value is assembled from one byte of each plane (no bounds checks
/// in the loop, the value written whole).
fn unshuffle_values<const W: usize>(planes: &[u8], out: &mut [u8], n: usize, from: usize) {
    let planes: [&[u8]; W] = std::array::from_fn(|j| &planes[j * n..(j + 1) * n]);
    for (i, value) in out[from * W..n * W].chunks_exact_mut(W).enumerate() {
        let mut bytes = [0u8; W];
        for (b, plane) in bytes.iter_mut().zip(&planes) {
            *b = plane[from + i];
        }
        value.copy_from_slice(&bytes);
    }
}

/// Unshuffles 8-byte values sixteen at a time with SSE2 (part of every
/// x86-64 CPU): sixteen bytes of each plane are interleaved by three rounds
/// of unpacks into sixteen whole values. Returns how many values it did.
#[cfg(target_arch = "x86_64")]
fn unshuffle8_sse2(planes: &[u8], out: &mut [u8], n: usize, stream: bool) -> usize {
    use std::arch::x86_64::*;
    let blocks = n / 16;
    if planes.len() < 8 * n || out.len() < 8 * n {
        return 0;
    }
    let stream = stream && (out.as_ptr() as usize).is_multiple_of(16);
    // SAFETY: every load reads 16 bytes at `j * n + i` with i + 16 <= n and
    // j < 8, inside `planes` (checked above); every store writes 16 bytes
    // below 8 * (i + 16) <= 8 * n, inside `out`. Unaligned loads and
    // stores are used, and SSE2 is always present on x86-64.
    unsafe {
        let src = planes.as_ptr();
        let dst = out.as_mut_ptr();
        for b in 0..blocks {
            let i = b * 16;
            let load = |j: usize| _mm_loadu_si128(src.add(j * n + i).cast());
            let (a0, a1, a2, a3) = (load(0), load(1), load(2), load(3));
            let (a4, a5, a6, a7) = (load(4), load(5), load(6), load(7));
            // Pairs of bytes of each value.
            let l01 = _mm_unpacklo_epi8(a0, a1);
            let h01 = _mm_unpackhi_epi8(a0, a1);
            let l23 = _mm_unpacklo_epi8(a2, a3);
            let h23 = _mm_unpackhi_epi8(a2, a3);
            let l45 = _mm_unpacklo_epi8(a4, a5);
            let h45 = _mm_unpackhi_epi8(a4, a5);
            let l67 = _mm_unpacklo_epi8(a6, a7);
            let h67 = _mm_unpackhi_epi8(a6, a7);
            // Quads: values 0-3, 4-7, 8-11, 12-15.
            let q0_lo = _mm_unpacklo_epi16(l01, l23);
            let q1_lo = _mm_unpackhi_epi16(l01, l23);
            let q0_hi = _mm_unpacklo_epi16(l45, l67);
            let q1_hi = _mm_unpackhi_epi16(l45, l67);
            let q2_lo = _mm_unpacklo_epi16(h01, h23);
            let q3_lo = _mm_unpackhi_epi16(h01, h23);
            let q2_hi = _mm_unpacklo_epi16(h45, h67);
            let q3_hi = _mm_unpackhi_epi16(h45, h67);
            let out_at = |k: usize| dst.add(8 * i + 16 * k).cast::<__m128i>();
            let values = [
                _mm_unpacklo_epi32(q0_lo, q0_hi),
                _mm_unpackhi_epi32(q0_lo, q0_hi),
                _mm_unpacklo_epi32(q1_lo, q1_hi),
                _mm_unpackhi_epi32(q1_lo, q1_hi),
                _mm_unpacklo_epi32(q2_lo, q2_hi),
                _mm_unpackhi_epi32(q2_lo, q2_hi),
                _mm_unpacklo_epi32(q3_lo, q3_hi),
                _mm_unpackhi_epi32(q3_lo, q3_hi),
            ];
            if stream {
                for (k, v) in values.into_iter().enumerate() {
                    _mm_stream_si128(out_at(k), v);
                }
            } else {
                for (k, v) in values.into_iter().enumerate() {
                    _mm_storeu_si128(out_at(k), v);
                }
            }
        }
        if stream {
            _mm_sfence();
        }
    }
    blocks * 16
}

/// The same interleaving thirty-two values at a time with AVX2 (each
/// 128-bit lane runs the SSE2 network on its own sixteen values; the lanes
/// are then paired back into output order). Returns how many values it did.
#[cfg(target_arch = "x86_64")]
fn unshuffle8_avx2(planes: &[u8], out: &mut [u8], n: usize, stream: bool) -> usize {
    if !std::arch::is_x86_feature_detected!("avx2") || planes.len() < 8 * n || out.len() < 8 * n {
        return 0;
    }
    // SAFETY: AVX2 is present (checked above); the bounds are checked above
    // and re-stated in `unshuffle8_avx2_blocks`.
    unsafe { unshuffle8_avx2_blocks(planes, out, n, stream) }
}

/// # Safety
/// AVX2 must be present and `planes` and `out` at least `8 * n` bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn unshuffle8_avx2_blocks(planes: &[u8], out: &mut [u8], n: usize, stream: bool) -> usize {
    use std::arch::x86_64::*;
    let blocks = n / 32;
    // Streaming stores need aligned addresses: whole vectors at 32 bytes,
    // halves at 16 (the large buffers of the allocator are 16-aligned).
    let align = out.as_ptr() as usize;
    let stream32 = stream && align.is_multiple_of(32);
    let stream16 = stream && !stream32 && align.is_multiple_of(16);
    let src = planes.as_ptr();
    let dst = out.as_mut_ptr();
    for b in 0..blocks {
        let i = b * 32;
        // SAFETY (loads and stores): each load reads 32 bytes at
        // `j * n + i` with i + 32 <= n and j < 8, inside `planes`; each
        // store writes 32 bytes below 8 * (i + 32) <= 8 * n, inside `out`.
        let load = |j: usize| unsafe { _mm256_loadu_si256(src.add(j * n + i).cast()) };
        let (a0, a1, a2, a3) = (load(0), load(1), load(2), load(3));
        let (a4, a5, a6, a7) = (load(4), load(5), load(6), load(7));
        let l01 = _mm256_unpacklo_epi8(a0, a1);
        let h01 = _mm256_unpackhi_epi8(a0, a1);
        let l23 = _mm256_unpacklo_epi8(a2, a3);
        let h23 = _mm256_unpackhi_epi8(a2, a3);
        let l45 = _mm256_unpacklo_epi8(a4, a5);
        let h45 = _mm256_unpackhi_epi8(a4, a5);
        let l67 = _mm256_unpacklo_epi8(a6, a7);
        let h67 = _mm256_unpackhi_epi8(a6, a7);
        let q0_lo = _mm256_unpacklo_epi16(l01, l23);
        let q1_lo = _mm256_unpackhi_epi16(l01, l23);
        let q0_hi = _mm256_unpacklo_epi16(l45, l67);
        let q1_hi = _mm256_unpackhi_epi16(l45, l67);
        let q2_lo = _mm256_unpacklo_epi16(h01, h23);
        let q3_lo = _mm256_unpackhi_epi16(h01, h23);
        let q2_hi = _mm256_unpacklo_epi16(h45, h67);
        let q3_hi = _mm256_unpackhi_epi16(h45, h67);
        // Pairs of values: lane 0 from the first sixteen, lane 1 from the
        // second sixteen.
        let r = [
            _mm256_unpacklo_epi32(q0_lo, q0_hi),
            _mm256_unpackhi_epi32(q0_lo, q0_hi),
            _mm256_unpacklo_epi32(q1_lo, q1_hi),
            _mm256_unpackhi_epi32(q1_lo, q1_hi),
            _mm256_unpacklo_epi32(q2_lo, q2_hi),
            _mm256_unpackhi_epi32(q2_lo, q2_hi),
            _mm256_unpacklo_epi32(q3_lo, q3_hi),
            _mm256_unpackhi_epi32(q3_lo, q3_hi),
        ];
        let values = [
            _mm256_permute2x128_si256::<0x20>(r[0], r[1]),
            _mm256_permute2x128_si256::<0x20>(r[2], r[3]),
            _mm256_permute2x128_si256::<0x20>(r[4], r[5]),
            _mm256_permute2x128_si256::<0x20>(r[6], r[7]),
            _mm256_permute2x128_si256::<0x31>(r[0], r[1]),
            _mm256_permute2x128_si256::<0x31>(r[2], r[3]),
            _mm256_permute2x128_si256::<0x31>(r[4], r[5]),
            _mm256_permute2x128_si256::<0x31>(r[6], r[7]),
        ];
        for (k, v) in values.into_iter().enumerate() {
            let at = unsafe { dst.add(8 * i + 32 * k) }.cast::<__m256i>();
            if stream32 {
                unsafe { _mm256_stream_si256(at, v) };
            } else if stream16 {
                let at = at.cast::<__m128i>();
                unsafe {
                    _mm_stream_si128(at, _mm256_castsi256_si128(v));
                    _mm_stream_si128(at.add(1), _mm256_extracti128_si256::<1>(v));
                }
            } else {
                unsafe { _mm256_storeu_si256(at, v) };
            }
        }
    }
    if stream32 || stream16 {
        _mm_sfence();
    }
    blocks * 32
}

#[cfg(not(target_arch = "x86_64"))]
fn unshuffle8_avx2(_: &[u8], _: &mut [u8], _: usize, _: bool) -> usize {
    0
}

#[cfg(not(target_arch = "x86_64"))]
fn unshuffle8_sse2(_: &[u8], _: &mut [u8], _: usize, _: bool) -> usize {
    0
}

/// Inverts [`shuffle`]. `stream` asks for non-temporal stores where the
/// SIMD paths can make them: for output written once and not read soon
/// (a tile's final buffer, larger than the caches), they skip reading each
/// destination line before writing it, which at memory speed is most of
/// the pass.
pub(crate) fn unshuffle(width: usize, input: &[u8], out: &mut [u8], stream: bool) {
    let n = input.len().checked_div(width).unwrap_or(0);
    if width <= 1 || n == 0 {
        out.copy_from_slice(input);
        return;
    }
    let whole = n * width;
    match width {
        2 => unshuffle_values::<2>(input, out, n, 0),
        4 => unshuffle_values::<4>(input, out, n, 0),
        8 => {
            let mut done = unshuffle8_avx2(input, out, n, stream);
            if done == 0 {
                done = unshuffle8_sse2(input, out, n, stream);
            }
            unshuffle_values::<8>(input, out, n, done);
        }
        _ => unshuffle_any(width, input, out, n),
    }
    out[whole..].copy_from_slice(&input[whole..]);
}

fn unshuffle_any(width: usize, input: &[u8], out: &mut [u8], n: usize) {
    for (i, value) in out[..n * width].chunks_exact_mut(width).enumerate() {
        for (j, byte) in value.iter_mut().enumerate() {
            *byte = input[j * n + i];
        }
    }
}

/// Writes `n_parts` and the sizes of `parts` (`PartSizesMetadata` in
/// spec/filter_metadata.toml, through its generated view).
pub(crate) fn part_sizes_metadata<'p>(
    parts: impl ExactSizeIterator<Item = &'p [u8]>,
) -> StageResult<Vec<u8>> {
    let sizes = parts
        .map(|part| {
            u32::try_from(part.len()).map_err(|_| Fault::Usage("a part exceeds 4 GiB".into()))
        })
        .collect::<StageResult<Vec<u32>>>()?;
    write_part_sizes(&sizes)
}

/// `PartSizesMetadata` of the given sizes.
pub(crate) fn write_part_sizes(sizes: &[u32]) -> StageResult<Vec<u8>> {
    let mut md = Vec::with_capacity(4 + 4 * sizes.len());
    PartSizesMetadataView::write(&mut md, sizes).map_err(write_fault)?;
    Ok(md)
}

/// Reads `n_parts` and the part sizes (`PartSizesMetadata`).
pub(crate) fn read_sizes(md: &mut Cursor<'_>) -> StageResult<Vec<usize>> {
    let (header, _) = md.read_view::<PartSizesMetadataView<'_>>(())?;
    Ok(header.part_sizes().values().map(|s| s as usize).collect())
}

/// Reads `n_parts` and the part sizes, checking that they cover `data`.
pub(crate) fn read_part_sizes(md: &mut Cursor<'_>, data_len: usize) -> StageResult<Vec<usize>> {
    let sizes = read_sizes(md)?;
    let total = sizes.iter().fold(0usize, |sum, s| sum.saturating_add(*s));
    if total != data_len {
        return corrupt(Cause::Inconsistent {
            what: "the total of the part sizes",
            expected: data_len as u64,
            found: total as u64,
        });
    }
    Ok(sizes)
}

pub(crate) fn forward<'a>(env: &StageEnv<'_>, input: Parts<'a>) -> StageResult<Parts<'a>> {
    let width = env.datatype.size() as usize;
    let md = part_sizes_metadata(input.data_slices())?;
    let mut out = scratch(input.data_len());
    out.resize(input.data_len(), 0);
    let mut pos = 0;
    for part in &input.data {
        shuffle(width, part, &mut out[pos..pos + part.len()]);
        pos += part.len();
    }
    let Parts { metadata, data } = input;
    recycle_parts(Parts {
        metadata: Vec::new(),
        data,
    });
    Ok(prepend_metadata(md, metadata, vec![out]))
}

pub(crate) fn reverse(
    env: &StageEnv<'_>,
    md: &mut Cursor<'_>,
    data: &[u8],
    out: &mut OutBuf<'_>,
) -> StageResult<MetadataOut> {
    let width = env.datatype.size() as usize;
    let sizes = read_part_sizes(md, data.len())?;
    let stream = env.stream_output && matches!(out, OutBuf::Fixed(_));
    let output = out.alloc(data.len())?;
    let mut pos = 0;
    for size in sizes {
        unshuffle(
            width,
            &data[pos..pos + size],
            &mut output[pos..pos + size],
            stream,
        );
        pos += size;
    }
    Ok(MetadataOut::Rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(len: usize) -> Vec<u8> {
        // Distinct bytes in every position of every value, so a byte taken
        // from the wrong plane or value cannot go unnoticed.
        (0..len).map(|i| (i * 131 + i / 7) as u8).collect()
    }

    /// Every SIMD path against the plain loop: lengths around the 16- and
    /// 32-value blocks (with trailing values and a partial value), output
    /// at every offset modulo 32 (the streaming stores' alignment), with
    /// and without streaming.
    #[test]
    fn every_unshuffle_path_inverts_the_shuffle() {
        for width in [1usize, 2, 3, 4, 8, 16] {
            for n in [
                0usize, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 200, 1024, 1031,
            ] {
                for tail in [0usize, 5] {
                    let original = values(n * width + tail.min(width.saturating_sub(1)));
                    let mut shuffled = vec![0u8; original.len()];
                    shuffle(width, &original, &mut shuffled);
                    for offset in 0..32 {
                        for stream in [false, true] {
                            let mut out = vec![0u8; offset + original.len()];
                            let dest = &mut out[offset..];
                            unshuffle(width, &shuffled, dest, stream);
                            assert_eq!(dest, &original[..], "w{width} n{n} +{offset} {stream}");
                        }
                    }
                }
            }
        }
    }

    /// The SSE2 path on its own (the dispatcher prefers AVX2 where present,
    /// which would leave it untested on such machines).
    #[test]
    fn the_8_byte_shuffle_matches_the_definition() {
        for n in [0usize, 1, 7, 8, 9, 64, 1000, 1003] {
            for tail in [0usize, 5] {
                let input: Vec<u8> = (0..n * 8 + tail).map(|i| (i * 37 % 251) as u8).collect();
                let mut out = vec![0u8; input.len()];
                shuffle(8, &input, &mut out);
                for i in 0..n {
                    for j in 0..8 {
                        assert_eq!(
                            out[j * n + i],
                            input[i * 8 + j],
                            "n {n}, value {i}, byte {j}"
                        );
                    }
                }
                assert_eq!(out[n * 8..], input[n * 8..]);
            }
        }
    }

    /// The definition, byte by byte: byte j of value i to `j·n + i`, the
    /// bytes of no whole value kept at the end.
    fn plain_shuffle(width: usize, input: &[u8]) -> Vec<u8> {
        let n = input.len() / width;
        let mut out = input.to_vec();
        for i in 0..n {
            for j in 0..width {
                out[j * n + i] = input[i * width + j];
            }
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        /// Every width 1..=16, lengths on and around the SIMD blocks (16
        /// and 32 values) with partial values at the end: the shuffle
        /// equals the definition and the unshuffle inverts it.
        #[test]
        fn the_shuffle_is_the_definition_and_unshuffle_inverts_it(
            width in 1usize..=16,
            blocks in 0usize..6,
            extra in 0usize..40,
            tail in 0usize..16,
            seed in proptest::prelude::any::<u64>(),
        ) {
            let n = 16 * blocks + extra;
            let len = n * width + tail % width;
            let mut state = seed | 1;
            let input: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect();
            let mut shuffled = vec![0u8; len];
            shuffle(width, &input, &mut shuffled);
            proptest::prop_assert_eq!(&shuffled, &plain_shuffle(width, &input));
            let mut back = vec![0u8; len];
            unshuffle(width, &shuffled, &mut back, false);
            proptest::prop_assert_eq!(&back, &input);
        }
    }

    /// The SSE2 kernels on their own, from every start value (the
    /// dispatcher hands SSE2 what AVX2 left, and prefers AVX2 where it is
    /// present, which would leave the SSE2-only path untested there), and
    /// the 8-byte register transpose of other CPUs.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn each_shuffle_kernel_matches_the_definition() {
        fn check<const W: usize>() {
            for n in [16usize, 17, 32, 47, 64, 100] {
                let input = values(W * n);
                let expected = plain_shuffle(W, &input);
                for first in [0usize, 1, 16, 32] {
                    let mut out = expected.clone();
                    let from = first.min(n);
                    out[..].iter_mut().enumerate().for_each(|(k, b)| {
                        // Clear what the kernel must write: the values from `from`.
                        if k % n >= from && k < W * n {
                            *b = 0;
                        }
                    });
                    // SAFETY: SSE2 is always present on x86-64; the slices
                    // hold the values from `from` and all `n`.
                    let done = unsafe { shuffle_sse2::<W>(&input[W * from..], &mut out, n, from) };
                    assert_eq!(done, (n - from) / 16 * 16, "w{W} n{n} from {from}");
                    for i in from + done..n {
                        for j in 0..W {
                            out[j * n + i] = input[i * W + j];
                        }
                    }
                    assert_eq!(out, expected, "w{W} n{n} from {from}");
                }
            }
        }
        check::<2>();
        check::<4>();
        check::<8>();
        for n in [8usize, 9, 64, 1003] {
            let input = values(8 * n);
            let mut out = plain_shuffle(8, &input);
            let expected = out.clone();
            out[..8 * n].fill(0);
            let done = shuffle8_blocks(&input, &mut out, n);
            for i in done..n {
                for j in 0..8 {
                    out[j * n + i] = input[i * 8 + j];
                }
            }
            assert_eq!(out, expected, "u64 transpose n{n}");
        }
    }

    #[test]
    fn each_8_byte_kernel_matches_the_plain_loop() {
        for n in [16usize, 32, 48, 96, 1000] {
            let original = values(8 * n);
            let mut planes = vec![0u8; original.len()];
            shuffle(8, &original, &mut planes);
            type Kernel = fn(&[u8], &mut [u8], usize, bool) -> usize;
            let kernels: [(&str, Kernel); 2] =
                [("sse2", unshuffle8_sse2), ("avx2", unshuffle8_avx2)];
            for (name, kernel) in kernels {
                for offset in [0usize, 8, 16] {
                    for stream in [false, true] {
                        let mut out = vec![0u8; offset + original.len()];
                        let dest = &mut out[offset..];
                        let done = kernel(&planes, dest, n, stream);
                        unshuffle_values::<8>(&planes, dest, n, done);
                        assert_eq!(dest, &original[..], "{name} n{n} +{offset} {stream}");
                    }
                }
            }
        }
    }
}
