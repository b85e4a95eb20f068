//! BITSHUFFLE (`bitshuffle_filter.cc`; blosc2's `bitshuffle`, which follows
//! kiyo-masui/bitshuffle's `bshuf_trans_bit_elem`).
//!
//! Every part is first cut into a piece whose size is a multiple of 8 and the
//! remainder (so a 5-byte part becomes an empty piece and a 5-byte piece). A
//! piece is shuffled only if its size is a multiple of both 8 and the value
//! size s; otherwise it is copied. Shuffling goes in blocks of 8192 bytes; in
//! a block of n whole values (rounded down to a multiple of 8) the output is
//! one row of n/8 bytes per (byte j of the value, bit k from the least
//! significant), rows ordered by j then k, where bit b of byte m of a row is
//! bit k of byte j of value 8m+b. Bytes past those n values are copied.
//!
//! Metadata: `n_pieces u32`, then each piece's size `u32`.

use super::byteshuffle::{part_sizes_metadata, read_part_sizes};
use super::stage::{prepend_metadata, Cursor, MetadataOut, OutBuf, Parts, StageEnv, StageResult};

/// `bitshuffle_block_bytes` in spec/format.toml (a fact upstream's documents lack).
const BLOCK: usize = crate::format::generated::BITSHUFFLE_BLOCK_BYTES as usize;

/// Transposes the 8×8 bit matrix held in `x` (byte r, bit c → byte c, bit r).
#[inline]
fn transpose8(mut x: u64) -> u64 {
    let mut t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x ^= t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x ^= t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^ t ^ (t << 28)
}

/// Shuffles `n` values (n a multiple of 8) of `s` bytes.
fn shuffle_values(s: usize, n: usize, input: &[u8], out: &mut [u8]) {
    let row = n / 8;
    let mut gathered = [0u8; 8];
    for j in 0..s {
        for m in 0..row {
            for (b, g) in gathered.iter_mut().enumerate() {
                *g = input[(8 * m + b) * s + j];
            }
            let bits = transpose8(u64::from_le_bytes(gathered)).to_le_bytes();
            for (k, &byte) in bits.iter().enumerate() {
                out[(j * 8 + k) * row + m] = byte;
            }
        }
    }
}

fn unshuffle_values(s: usize, n: usize, input: &[u8], out: &mut [u8]) {
    let row = n / 8;
    let mut gathered = [0u8; 8];
    for j in 0..s {
        for m in 0..row {
            for (k, g) in gathered.iter_mut().enumerate() {
                *g = input[(j * 8 + k) * row + m];
            }
            let bytes = transpose8(u64::from_le_bytes(gathered)).to_le_bytes();
            for (b, &byte) in bytes.iter().enumerate() {
                out[(8 * m + b) * s + j] = byte;
            }
        }
    }
}

fn run_blocks(s: usize, input: &[u8], out: &mut [u8], invert: bool) {
    for (block_in, block_out) in input.chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
        let n = block_in.len() / s / 8 * 8;
        let whole = n * s;
        if invert {
            unshuffle_values(s, n, &block_in[..whole], &mut block_out[..whole]);
        } else {
            shuffle_values(s, n, &block_in[..whole], &mut block_out[..whole]);
        }
        block_out[whole..].copy_from_slice(&block_in[whole..]);
    }
}

fn transform(s: usize, piece: &[u8], out: &mut [u8], invert: bool) {
    if s == 0 || !piece.len().is_multiple_of(s) || !piece.len().is_multiple_of(8) {
        out.copy_from_slice(piece);
    } else {
        run_blocks(s, piece, out, invert);
    }
}

pub(crate) fn forward<'a>(env: &StageEnv<'_>, input: Parts<'a>) -> StageResult<Parts<'a>> {
    let s = env.datatype.size() as usize;
    let mut pieces: Vec<&[u8]> = Vec::with_capacity(2 * input.data.len());
    for part in &input.data {
        let rem = part.len() % 8;
        if rem == 0 {
            pieces.push(part);
        } else {
            let (head, tail) = part.split_at(part.len() - rem);
            pieces.push(head);
            pieces.push(tail);
        }
    }
    let md = part_sizes_metadata(pieces.iter().copied())?;
    let mut out = vec![0u8; input.data_len()];
    let mut pos = 0;
    for piece in &pieces {
        transform(s, piece, &mut out[pos..pos + piece.len()], false);
        pos += piece.len();
    }
    drop(pieces);
    Ok(prepend_metadata(md, input.metadata, vec![out]))
}

pub(crate) fn reverse(
    env: &StageEnv<'_>,
    md: &mut Cursor<'_>,
    data: &[u8],
    out: &mut OutBuf<'_>,
) -> StageResult<MetadataOut> {
    let s = env.datatype.size() as usize;
    let sizes = read_part_sizes(md, data.len())?;
    let output = out.alloc(data.len())?;
    let mut pos = 0;
    for size in sizes {
        transform(
            s,
            &data[pos..pos + size],
            &mut output[pos..pos + size],
            true,
        );
        pos += size;
    }
    Ok(MetadataOut::Rest)
}
