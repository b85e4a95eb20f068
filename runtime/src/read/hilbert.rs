//! Hilbert cell order, as TileDB computes it for sparse arrays whose cell
//! order is `HILBERT`.
//!
//! Each coordinate is first mapped to an unsigned integer of `bits` bits
//! (`bits = 63 / dim_num`), then the mapped point is turned into its position
//! on a Hilbert curve with Skilling's transform ("Programming the Hilbert
//! curve", AIP Conf. Proc. 707, 2004). Ties between equal Hilbert values are
//! broken by row-major coordinate order, by the caller.

/// Bits per dimension for a domain of `dim_num` dimensions.
pub fn bits_per_dim(dim_num: usize) -> u32 {
    if dim_num == 0 {
        return 0;
    }
    63 / dim_num as u32
}

/// The largest mapped coordinate: `2^bits - 1`.
pub fn max_bucket(bits: u32) -> u64 {
    if bits == 0 {
        0
    } else if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Maps a numeric coordinate into `[0, max_bucket]`, scaling the domain
/// linearly in double precision and truncating, as TileDB does.
pub fn map_numeric(coord: f64, domain_low: f64, domain_high: f64, max_bucket: u64) -> u64 {
    let range = domain_high - domain_low;
    let scaled = ((coord - domain_low) / range) * max_bucket as f64;
    // `as` saturates and maps NaN to 0, which is also what a well-formed
    // domain can never produce; a degenerate one-point domain gives NaN.
    scaled as u64
}

/// Maps a string coordinate: its first eight bytes packed big-endian into a
/// u64 (each byte sign-extended, because TileDB reads them as `char`), then
/// shifted right to keep the top `bits` bits.
pub fn map_string(coord: &[u8], bits: u32) -> u64 {
    let mut packed: u64 = 0;
    for i in 0..8 {
        packed <<= 8;
        if let Some(&byte) = coord.get(i) {
            packed |= byte as i8 as i64 as u64;
        }
    }
    if bits == 0 {
        0
    } else {
        packed >> (64 - bits)
    }
}

/// The Hilbert value of a mapped point (`coords[i] < 2^bits`).
///
/// `coords` is consumed as scratch space.
pub fn hilbert_value(coords: &mut [u64], bits: u32) -> u64 {
    let n = coords.len();
    if n == 0 || bits == 0 {
        return 0;
    }
    axes_to_transpose(coords, bits);
    // Interleave the transposed form: for each bit level from the least
    // significant, dimension n-1 takes the lowest output bit.
    let mut value = 0u64;
    let mut out_bit = 0u32;
    for level in 0..bits {
        for i in (0..n).rev() {
            if coords[i] & (1u64 << level) != 0 {
                value |= 1u64 << out_bit;
            }
            out_bit += 1;
        }
    }
    value
}

/// Bounds of the Hilbert values of the mapped points of the box `lo..=hi`
/// (per dimension, `lo[d] <= hi[d] < 2^bits`): a range holding them all.
///
/// The points of a box whose mapped coordinates share their top `k` bits
/// in every dimension lie in one cell of the curve's level `k`, whose
/// values are a run of `2^(n (bits - k))` sharing their top `n k` bits.
/// A box across a boundary of that level is cut there and each piece
/// bounded the same way, `depth` levels down, and the pieces' bounds
/// joined: tighter where the cut boxes miss parts of the cell.
pub fn value_bounds(lo: &[u64], hi: &[u64], bits: u32, depth: u32) -> (u64, u64) {
    let n = lo.len() as u32;
    if n == 0 || bits == 0 {
        return (0, 0);
    }
    // The bits every dimension shares at the top.
    let shared = lo
        .iter()
        .zip(hi)
        .map(|(a, b)| {
            let differing = 64 - (a ^ b).leading_zeros();
            bits.saturating_sub(differing)
        })
        .min()
        .unwrap_or(bits);
    let below = n * (bits - shared);
    let h = hilbert_value(&mut lo.to_vec(), bits);
    let (low, high) = if below >= 64 {
        (0, u64::MAX)
    } else {
        let low = (h >> below) << below;
        (low, low | ((1u64 << below) - 1))
    };
    if shared == bits || depth == 0 {
        return (low, high);
    }
    // Cut each dimension whose bounds differ at the next level.
    let bit = bits - shared - 1;
    let mut pieces: Vec<(Vec<u64>, Vec<u64>)> = vec![(lo.to_vec(), hi.to_vec())];
    for d in 0..lo.len() {
        if (lo[d] >> bit) == (hi[d] >> bit) {
            continue;
        }
        let cut = (hi[d] >> bit) << bit;
        pieces = pieces
            .into_iter()
            .flat_map(|(l, h)| {
                let (mut first, mut second) = ((l.clone(), h.clone()), (l, h));
                first.1[d] = cut - 1;
                second.0[d] = cut;
                [first, second]
            })
            .collect();
    }
    pieces
        .iter()
        .map(|(l, h)| value_bounds(l, h, bits, depth - 1))
        .fold((u64::MAX, 0), |(a, b), (c, d)| (a.min(c), b.max(d)))
}

fn axes_to_transpose(x: &mut [u64], bits: u32) {
    let n = x.len();
    // Inverse undo.
    let mut q = 1u64 << (bits - 1);
    while q > 1 {
        let p = q - 1;
        if x[0] & q != 0 {
            x[0] ^= p;
        }
        for i in 1..n {
            if x[i] & q != 0 {
                x[0] ^= p;
            } else {
                let t = (x[0] ^ x[i]) & p;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
        q >>= 1;
    }
    // Gray encode.
    for i in 1..n {
        x[i] ^= x[i - 1];
    }
    let mut t = x[n - 1];
    let mut i = 1u32;
    while i < bits {
        x[n - 1] ^= x[n - 1] >> i;
        i <<= 1;
    }
    t ^= x[n - 1];
    for xi in x.iter_mut().take(n - 1) {
        *xi ^= t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points read off the 16×16 curve drawn in TileDB's `hilbert.h`, with
    /// dimension 0 horizontal.
    #[test]
    fn two_dimensional_curve_drawn_in_tiledb() {
        let drawn = [
            ((0, 0), 0),
            ((1, 0), 1),
            ((1, 1), 2),
            ((0, 1), 3),
            ((0, 2), 4),
            ((0, 3), 5),
            ((1, 3), 6),
            ((1, 2), 7),
            ((2, 2), 8),
            ((2, 3), 9),
            ((6, 0), 20),
            ((4, 2), 30),
            ((15, 0), 255),
        ];
        for ((x, y), h) in drawn {
            assert_eq!(hilbert_value(&mut [x, y], 4), h, "({x}, {y})");
        }
    }

    #[test]
    fn curve_visits_every_cell_once_in_adjacent_steps() {
        let bits = 4;
        let side = 1u64 << bits;
        let mut by_value = vec![None; (side * side) as usize];
        for x in 0..side {
            for y in 0..side {
                let h = hilbert_value(&mut [x, y], bits) as usize;
                assert!(by_value[h].is_none());
                by_value[h] = Some((x as i64, y as i64));
            }
        }
        for pair in by_value.windows(2) {
            let (a, b) = (pair[0].unwrap(), pair[1].unwrap());
            assert_eq!((a.0 - b.0).abs() + (a.1 - b.1).abs(), 1);
        }
    }

    #[test]
    fn value_bounds_hold_every_point_of_a_box() {
        let bits = 5;
        let boxes = [
            ([3u64, 4u64], [9u64, 6u64]),
            ([0, 0], [31, 31]),
            ([15, 15], [16, 16]),
            ([7, 20], [7, 20]),
            ([2, 17], [12, 30]),
        ];
        for (lo, hi) in boxes {
            let mut values = Vec::new();
            for x in lo[0]..=hi[0] {
                for y in lo[1]..=hi[1] {
                    values.push(hilbert_value(&mut [x, y], bits));
                }
            }
            let (min, max) = (*values.iter().min().unwrap(), *values.iter().max().unwrap());
            for depth in 0..4 {
                let (a, b) = value_bounds(&lo, &hi, bits, depth);
                assert!(
                    a <= min && max <= b,
                    "{lo:?}..{hi:?} depth {depth}: {a}..{b}"
                );
            }
            // Deep enough, the bounds are the values' own.
            assert_eq!(
                value_bounds(&lo, &hi, bits, bits),
                (min, max),
                "{lo:?}..{hi:?}"
            );
        }
    }

    #[test]
    fn strings_pack_big_endian_with_sign_extension() {
        assert_eq!(map_string(b"cat", 64), 0x6361_7400_0000_0000);
        assert_eq!(map_string(b"a", 31), 0x61 << 23);
        // A byte >= 0x80 is a negative char: its sign fills the upper bytes.
        assert_eq!(map_string(&[0x80], 64), 0xffff_ffff_ffff_ff80u64 << 56);
    }

    #[test]
    fn numeric_mapping_scales_the_domain() {
        let max = max_bucket(bits_per_dim(2));
        assert_eq!(map_numeric(1.0, 1.0, 100.0, max), 0);
        assert_eq!(map_numeric(100.0, 1.0, 100.0, max), max);
    }
}
