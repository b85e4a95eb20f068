//! Numeric run-length encoding (`RLE::compress` on fixed-size values): runs
//! of `{value[cell_size], run_length u16 big-endian}`, at most 65535 per run.
//! The string form used on var-sized ASCII/UTF8 tiles is in
//! [`super::var_string`].

use super::stage::{corrupt, corrupt_part, Fault, StageResult};
use crate::error::Cause;

const MAX_RUN: u16 = u16::MAX;

pub(crate) fn encode(cell_size: usize, input: &[u8], out: &mut Vec<u8>) -> StageResult<()> {
    if input.is_empty() {
        return Ok(());
    }
    if !input.len().is_multiple_of(cell_size) {
        return Err(Fault::Usage(format!(
            "RLE input of {} bytes is not a whole number of {cell_size}-byte cells",
            input.len()
        )));
    }
    let mut cells = input.chunks_exact(cell_size);
    let Some(mut current) = cells.next() else {
        return Ok(());
    };
    let mut run: u16 = 1;
    for cell in cells {
        if cell == current && run < MAX_RUN {
            run += 1;
        } else {
            out.extend_from_slice(current);
            out.extend_from_slice(&run.to_be_bytes());
            current = cell;
            run = 1;
        }
    }
    out.extend_from_slice(current);
    out.extend_from_slice(&run.to_be_bytes());
    Ok(())
}

pub(crate) fn decode(cell_size: usize, input: &[u8], out: &mut [u8]) -> StageResult<()> {
    let run_size = cell_size + 2;
    // TileDB ignores an input shorter than one run.
    if input.len() < run_size {
        if out.is_empty() {
            return Ok(());
        }
        return corrupt(Cause::Truncated {
            needed: run_size as u64,
            available: input.len() as u64,
        });
    }
    if !input.len().is_multiple_of(run_size) {
        return corrupt(Cause::NotMultiple {
            size: input.len() as u64,
            unit: run_size as u64,
        });
    }
    let mut pos = 0usize;
    for run in input.chunks_exact(run_size) {
        let (value, len) = run.split_at(cell_size);
        let count = u16::from_be_bytes([len[0], len[1]]) as usize;
        let bytes = count * cell_size;
        if bytes > out.len() - pos {
            return corrupt_part(
                "runs",
                Cause::OutOfRange {
                    value: pos.saturating_add(bytes) as u64,
                    limit: out.len() as u64,
                },
            );
        }
        let target = &mut out[pos..pos + bytes];
        match cell_size {
            1 => target.fill(value[0]),
            2 => repeat::<2>(value, target),
            4 => repeat::<4>(value, target),
            8 => repeat::<8>(value, target),
            _ => {
                for cell in target.chunks_exact_mut(cell_size) {
                    cell.copy_from_slice(value);
                }
            }
        }
        pos += bytes;
    }
    if pos != out.len() {
        return corrupt_part(
            "runs",
            Cause::Inconsistent {
                what: "the bytes the runs hold",
                expected: out.len() as u64,
                found: pos as u64,
            },
        );
    }
    Ok(())
}

/// Fills `out` with copies of the `W`-byte `value`.
fn repeat<const W: usize>(value: &[u8], out: &mut [u8]) {
    let mut cell = [0u8; W];
    cell.copy_from_slice(&value[..W]);
    for target in out.chunks_exact_mut(W) {
        target.copy_from_slice(&cell);
    }
}
