//! The coordinates of a box read, written straight into the result columns.
//!
//! In a band of a box read (see [`super::copy`]) every line holds the same
//! run of values of the innermost dimension, and every other dimension is
//! constant along a line. So the inner dimension's line is encoded once and
//! copied to every line, and each other dimension's value is filled along
//! its line; no value is computed per cell, and the cells are written with
//! stores of their own width (`fill` and `copy_from_slice` on arrays of the
//! coordinate's size), in parallel over groups of lines.
use rayon::prelude::*;

use crate::read::dense::geometry::Span;

/// Bytes of result one parallel task writes at least: large enough that
/// scheduling costs nothing next to the stores, small enough that a band
/// splits over every thread.
const TASK_BYTES: usize = 256 << 10;

/// Writes the coordinates of dimension `d` of the cells of a band into
/// `region`, the band's part of the dimension's column (`size`-byte
/// cells). `spans` are the band's spans, `order` the dimensions from
/// slowest to fastest in the result (its last, the inner dimension, runs
/// along each line of `inner_len` cells).
pub(crate) fn write_band(
    region: &mut [u8],
    spans: &[Span],
    order: &[usize],
    d: usize,
    inner_len: usize,
    size: usize,
) {
    let inner = order[order.len() - 1];
    let line_bytes = inner_len * size;
    if line_bytes == 0 || region.is_empty() {
        return;
    }
    let lines_per_task = TASK_BYTES.div_ceil(line_bytes).max(1);
    let low = spans[d].0;
    if d == inner {
        if region.len() == line_bytes {
            // One line (a one-dimensional read): its runs of values are
            // encoded in parallel, each from its own first value.
            let cells_per_task = TASK_BYTES.div_ceil(size).max(1);
            region
                .par_chunks_mut(cells_per_task * size)
                .enumerate()
                .for_each(|(task, out)| {
                    encode_run(out, low + (task * cells_per_task) as i128, size);
                });
            return;
        }
        let mut line = vec![0u8; line_bytes];
        encode_run(&mut line, low, size);
        region
            .par_chunks_mut(lines_per_task * line_bytes)
            .for_each(|group| {
                for out in group.chunks_exact_mut(line_bytes) {
                    out.copy_from_slice(&line);
                }
            });
        return;
    }
    // Dimension `d` keeps its value over `repeat` consecutive lines (one
    // per combination of the dimensions between it and the inner one) and
    // takes its span's values in turn.
    let at = order.iter().position(|&e| e == d).unwrap_or(0);
    let repeat: u128 = order[at + 1..order.len() - 1]
        .iter()
        .map(|&e| (spans[e].1 - spans[e].0 + 1) as u128)
        .product();
    let len = (spans[d].1 - spans[d].0 + 1) as u128;
    region
        .par_chunks_mut(lines_per_task * line_bytes)
        .enumerate()
        .for_each(|(task, group)| {
            let first_line = (task * lines_per_task) as u128;
            for (i, out) in group.chunks_exact_mut(line_bytes).enumerate() {
                let line = first_line + i as u128;
                let value = low + ((line / repeat) % len) as i128;
                fill_value(out, value, size);
            }
        });
}

/// Fills `out` with `value`, encoded as little-endian two's complement cut
/// to `size` bytes (the encoding of every integral datatype).
fn fill_value(out: &mut [u8], value: i128, size: usize) {
    match size {
        1 => out.fill(value as u8),
        2 => fill_cells::<2>(out, (value as u16).to_le_bytes()),
        4 => fill_cells::<4>(out, (value as u32).to_le_bytes()),
        8 => fill_cells::<8>(out, (value as u64).to_le_bytes()),
        _ => {
            let bytes = value.to_le_bytes();
            for cell in out.chunks_exact_mut(size) {
                cell.copy_from_slice(&bytes[..size]);
            }
        }
    }
}

/// Writes `cell` into every `N`-byte cell of `out` (`N` known when
/// compiled: each copy is one store).
fn fill_cells<const N: usize>(out: &mut [u8], cell: [u8; N]) {
    for c in out.chunks_exact_mut(N) {
        c.copy_from_slice(&cell);
    }
}

/// Writes the values `first`, `first + 1`, ... into the cells of `out`,
/// `size` bytes each.
fn encode_run(out: &mut [u8], first: i128, size: usize) {
    match size {
        1 => encode_cells::<1>(out, |i| ((first as u8).wrapping_add(i as u8)).to_le_bytes()),
        2 => encode_cells::<2>(out, |i| {
            ((first as u16).wrapping_add(i as u16)).to_le_bytes()
        }),
        4 => encode_cells::<4>(out, |i| {
            ((first as u32).wrapping_add(i as u32)).to_le_bytes()
        }),
        8 => encode_cells::<8>(out, |i| {
            ((first as u64).wrapping_add(i as u64)).to_le_bytes()
        }),
        _ => {
            for (i, cell) in out.chunks_exact_mut(size).enumerate() {
                cell.copy_from_slice(&(first + i as i128).to_le_bytes()[..size]);
            }
        }
    }
}

/// Writes `cell(i)` into the `i`-th `N`-byte cell of `out`.
fn encode_cells<const N: usize>(out: &mut [u8], cell: impl Fn(usize) -> [u8; N]) {
    for (i, c) in out.chunks_exact_mut(N).enumerate() {
        c.copy_from_slice(&cell(i));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The coordinates of every cell of `spans`, in the order `order`
    /// (slowest first), computed cell by cell.
    fn cell_by_cell(spans: &[Span], order: &[usize], d: usize, size: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut index: Vec<i128> = spans.iter().map(|s| s.0).collect();
        loop {
            out.extend_from_slice(&index[d].to_le_bytes()[..size]);
            let mut k = order.len();
            loop {
                if k == 0 {
                    return out;
                }
                k -= 1;
                let e = order[k];
                index[e] += 1;
                if index[e] <= spans[e].1 {
                    break;
                }
                index[e] = spans[e].0;
            }
        }
    }

    #[test]
    fn bands_match_the_cell_by_cell_coordinates() {
        let cases: Vec<(Vec<Span>, Vec<usize>)> = vec![
            (vec![(-3, 70_000)], vec![0]),
            (vec![(5, 9), (-2, 3)], vec![0, 1]),
            (vec![(5, 9), (-2, 3)], vec![1, 0]),
            (vec![(0, 40), (7, 7), (1, 3000)], vec![0, 1, 2]),
            (vec![(0, 3), (1, 5), (250, 260)], vec![2, 1, 0]),
            (vec![(0, 20_000), (1, 3)], vec![0, 1]),
        ];
        for (spans, order) in cases {
            let inner = order[order.len() - 1];
            let inner_len = (spans[inner].1 - spans[inner].0 + 1) as usize;
            for size in [1usize, 2, 4, 8, 16] {
                for d in 0..spans.len() {
                    let want = cell_by_cell(&spans, &order, d, size);
                    let mut got = vec![0xAA; want.len()];
                    write_band(&mut got, &spans, &order, d, inner_len, size);
                    assert!(
                        got == want,
                        "spans {spans:?} order {order:?} d {d} size {size}"
                    );
                }
            }
        }
    }
}
