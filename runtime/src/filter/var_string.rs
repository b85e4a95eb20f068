//! The string forms of RLE and DICTIONARY on var-sized ASCII/UTF8 tiles
//! (`CompressionFilter::compress_var_string_coords`, `rle_compressor.h`,
//! `dict_compressor.h`). They encode whole cells, so the tile is one chunk
//! and the offsets tile is not stored: decoding rebuilds it.
//!
//! Chunk metadata: `0 u32` (metadata parts), `1 u32` (data parts),
//! `input_bytes u32`, `output_bytes u32`, `offsets_bytes u32` (8 × cells),
//! then for RLE `run_len_width u8, str_len_width u8`, and for DICTIONARY
//! `id_width u8, str_len_width u8, dict_bytes u32` and the dictionary, a
//! sequence of `{len (big-endian, str_len_width), bytes}` with no count.
//! Data: RLE runs `{run_len, str_len, bytes}` or one dictionary id per cell,
//! all big-endian. Widths are 1, 2, 4 or 8: the smallest that fits. The
//! metadata is `VarStringRleMetadata` / `VarStringDictionaryMetadata` in
//! spec/filter_metadata.toml, read and written through their generated views.

use std::collections::HashMap;

use super::stage::{
    by_width, corrupt, corrupt_part, push_be, read_be, write_fault, Cursor, Fault, MetadataOut,
    OutBuf, Parts, StageResult,
};
use super::Filter;
use crate::error::Cause;
use crate::format::generated::{VarStringDictionaryMetadataView, VarStringRleMetadataView};

/// Which string encoding a filter selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StringCodec {
    Rle,
    Dictionary,
}

impl StringCodec {
    pub fn of(filter: &Filter) -> Option<StringCodec> {
        match filter {
            Filter::Rle { .. } => Some(StringCodec::Rle),
            Filter::Dictionary { .. } => Some(StringCodec::Dictionary),
            _ => None,
        }
    }
}

fn width_for(value: u64) -> u8 {
    if u8::try_from(value).is_ok() {
        1
    } else if u16::try_from(value).is_ok() {
        2
    } else if u32::try_from(value).is_ok() {
        4
    } else {
        8
    }
}

fn valid_width(w: u8) -> StageResult<usize> {
    match w {
        1 | 2 | 4 | 8 => Ok(w as usize),
        _ => corrupt(Cause::NotOneOf {
            what: "a byte width",
            value: u64::from(w),
            allowed: &[1, 2, 4, 8],
        }),
    }
}

/// Splits `data` into cells at `offsets` (the start of each cell).
fn cells<'a>(data: &'a [u8], offsets: &[u64]) -> StageResult<Vec<&'a [u8]>> {
    let mut out = Vec::with_capacity(offsets.len());
    for (i, &start) in offsets.iter().enumerate() {
        let end = offsets.get(i + 1).copied().unwrap_or(data.len() as u64);
        if start > end || end > data.len() as u64 {
            return Err(Fault::Usage(format!(
                "offset {i} ({start}..{end}) is outside the {} bytes of var data",
                data.len()
            )));
        }
        out.push(&data[start as usize..end as usize]);
    }
    Ok(out)
}

fn u32_len(n: usize, what: &str) -> StageResult<u32> {
    u32::try_from(n).map_err(|_| Fault::Usage(format!("{what} exceeds 4 GiB")))
}

pub(crate) fn forward<'a>(
    codec: StringCodec,
    data: &[u8],
    offsets: &[u64],
) -> StageResult<Parts<'a>> {
    let cells = cells(data, offsets)?;
    if cells.is_empty() {
        return Err(Fault::Usage(
            "a var-sized tile needs at least one cell".into(),
        ));
    }
    let input_len = u32_len(data.len(), "var data")?;
    let mut out = Vec::new();
    let mut md = Vec::new();
    match codec {
        StringCodec::Rle => {
            // Runs first, to size the widths.
            let mut runs: Vec<(u64, &[u8])> = Vec::new();
            for cell in &cells {
                match runs.last_mut() {
                    Some((n, s)) if *s == *cell => *n += 1,
                    _ => runs.push((1, cell)),
                }
            }
            let max_run = runs.iter().map(|r| r.0).max().unwrap_or(1);
            // TileDB leaves the last run's string out of this maximum, which
            // corrupts its output when that string is the longest; we count it.
            let max_len = runs.iter().map(|r| r.1.len() as u64).max().unwrap_or(0);
            let (run_w, len_w) = (width_for(max_run), width_for(max_len));
            for (n, s) in &runs {
                push_be(&mut out, *n, run_w as usize);
                push_be(&mut out, s.len() as u64, len_w as usize);
                out.extend_from_slice(s);
            }
            VarStringRleMetadataView::write(
                &mut md,
                input_len,
                u32_len(out.len(), "encoded strings")?,
                u32_len(cells.len() * 8, "offsets")?,
                run_w,
                len_w,
            )
            .map_err(write_fault)?;
        }
        StringCodec::Dictionary => {
            let id_w = width_for(cells.len() as u64);
            let len_w = width_for(cells.iter().map(|c| c.len() as u64).max().unwrap_or(0));
            let mut ids: HashMap<&[u8], u64> = HashMap::new();
            let mut dict = Vec::new();
            for cell in &cells {
                let next = ids.len() as u64;
                let id = *ids.entry(cell).or_insert_with(|| {
                    push_be(&mut dict, cell.len() as u64, len_w as usize);
                    dict.extend_from_slice(cell);
                    next
                });
                push_be(&mut out, id, id_w as usize);
            }
            VarStringDictionaryMetadataView::write(
                &mut md,
                input_len,
                u32_len(out.len(), "encoded strings")?,
                u32_len(cells.len() * 8, "offsets")?,
                id_w,
                len_w,
                dict.as_slice(),
            )
            .map_err(write_fault)?;
        }
    }
    Ok(Parts {
        metadata: vec![md],
        data: vec![out.into()],
    })
}

/// Where a string decode writes its cells' offsets.
pub(crate) enum StringEnds<'a> {
    /// Into a read's own offsets: `ends[i]` becomes `base` plus the
    /// decoded bytes up to and including cell `i`, for exactly
    /// `ends.len()` cells.
    Place { ends: &'a mut [u64], base: u64 },
    /// Into a vector of its own (contents replaced): the start of each of
    /// `cells` cells, then the end of the last. It is sized only once the
    /// decoded strings are seen to hold that many cells.
    Grow {
        offsets: &'a mut Vec<u64>,
        cells: u64,
    },
}

/// Decodes the strings into `out` and their cells' offsets into `ends`;
/// the strings must come to exactly the cells `ends` asks for.
pub(crate) fn reverse(
    codec: StringCodec,
    md: &mut Cursor<'_>,
    data: &[u8],
    out: &mut OutBuf<'_>,
    ends: StringEnds<'_>,
) -> StageResult<MetadataOut> {
    let expected_cells = match &ends {
        StringEnds::Place { ends, .. } => ends.len() as u64,
        StringEnds::Grow { cells, .. } => *cells,
    };
    // The codec's metadata: the sizes, the widths, the dictionary.
    let (sizes, widths, dict_bytes) = match codec {
        StringCodec::Rle => {
            let (h, _) = md.read_view::<VarStringRleMetadataView<'_>>(())?;
            let sizes = (h.input_len(), h.output_len(), h.offsets_len());
            (sizes, (h.run_len_width(), h.str_len_width()), &[][..])
        }
        StringCodec::Dictionary => {
            let (h, _) = md.read_view::<VarStringDictionaryMetadataView<'_>>(())?;
            let sizes = (h.input_len(), h.output_len(), h.offsets_len());
            (sizes, (h.id_width(), h.str_len_width()), h.dict())
        }
    };
    let (input_bytes, encoded_bytes, offsets_bytes) =
        (sizes.0 as usize, sizes.1 as usize, u64::from(sizes.2));
    if offsets_bytes != expected_cells.saturating_mul(8) {
        return corrupt(Cause::Inconsistent {
            what: "the offsets size",
            expected: expected_cells.saturating_mul(8),
            found: offsets_bytes,
        });
    }
    if encoded_bytes > data.len() {
        return corrupt_part(
            "encoded strings",
            Cause::Truncated {
                needed: encoded_bytes as u64,
                available: data.len() as u64,
            },
        );
    }
    let encoded = &data[..encoded_bytes];
    let (first, second) = (valid_width(widths.0)?, valid_width(widths.1)?);
    // The cells the encoded strings hold, counted before any room is made
    // for their offsets (the count itself comes from the caller's metadata).
    let found = match codec {
        // One id per cell.
        StringCodec::Dictionary => (encoded.len() / first) as u64,
        StringCodec::Rle => run_cells(encoded, first, second)?,
    };
    if found != expected_cells
        || (codec == StringCodec::Dictionary && !encoded.len().is_multiple_of(first))
    {
        return corrupt(Cause::Inconsistent {
            what: "the cells the strings decode to",
            expected: expected_cells,
            found,
        });
    }
    let (ends, base) = match ends {
        StringEnds::Place { ends, base } => (ends, base),
        StringEnds::Grow { offsets, cells } => {
            let n = usize::try_from(cells).ok().and_then(|n| n.checked_add(1));
            offsets.clear();
            if n.is_none_or(|n| offsets.try_reserve_exact(n).is_err()) {
                return Err(Fault::Usage(format!(
                    "{cells} cells are more than this machine can hold the offsets of"
                )));
            }
            offsets.resize(n.unwrap_or(0), 0);
            (&mut offsets[1..], 0)
        }
    };
    let output = out.alloc(input_bytes)?;
    let mut cells = Cells {
        output,
        pos: 0,
        ends,
        done: 0,
        base,
    };
    match codec {
        StringCodec::Rle => decode_runs(encoded, first, second, &mut cells)?,
        StringCodec::Dictionary => {
            let dict = dictionary(dict_bytes, second)?;
            by_width!(first, decode_ids(encoded, &dict, dict_bytes, &mut cells))?;
        }
    }
    if cells.done as u64 != expected_cells {
        return corrupt(Cause::Inconsistent {
            what: "the cells the strings decode to",
            expected: expected_cells,
            found: cells.done as u64,
        });
    }
    if cells.pos != input_bytes {
        return corrupt(Cause::Inconsistent {
            what: "the bytes the strings decode to",
            expected: input_bytes as u64,
            found: cells.pos as u64,
        });
    }
    Ok(MetadataOut::New(Vec::new()))
}

/// The decoded strings so far: their bytes in `output` up to `pos`, and
/// the ends of the first `done` cells.
struct Cells<'o, 'e> {
    output: &'o mut [u8],
    pos: usize,
    ends: &'e mut [u64],
    done: usize,
    base: u64,
}

/// A string this long or shorter is copied as one fixed-size block where
/// the block fits: the bytes it writes past the string are written again
/// by the cells that follow (a decode that succeeds fills its output to
/// the end, in order). A call to `memcpy` per cell of a few bytes cost
/// more than the rest of the decode.
const BLOCK: usize = 32;

impl Cells<'_, '_> {
    /// Appends the string at `src[start..start + len]` as the next cell.
    #[inline(always)]
    fn push(&mut self, src: &[u8], start: usize, len: usize) -> StageResult<()> {
        let pos = self.pos;
        let Some(end) = self.ends.get_mut(self.done) else {
            return corrupt_part(
                "cells",
                Cause::OutOfRange {
                    value: self.done as u64 + 1,
                    limit: self.ends.len() as u64,
                },
            );
        };
        if len <= BLOCK && pos + BLOCK <= self.output.len() && start + BLOCK <= src.len() {
            self.output[pos..pos + BLOCK].copy_from_slice(&src[start..start + BLOCK]);
        } else {
            let Some(to) = self.output.get_mut(pos..pos.saturating_add(len)) else {
                return corrupt_part(
                    "string bytes",
                    Cause::OutOfRange {
                        value: pos.saturating_add(len) as u64,
                        limit: self.output.len() as u64,
                    },
                );
            };
            to.copy_from_slice(&src[start..start + len]);
        }
        self.pos = pos + len;
        *end = self.base + self.pos as u64;
        self.done += 1;
        Ok(())
    }
}

/// The dictionary's strings, as (start, length) in `dict_bytes`: a
/// sequence of `{len (big-endian, len_w bytes), bytes}`.
fn dictionary(dict_bytes: &[u8], len_w: usize) -> StageResult<Vec<(usize, usize)>> {
    let mut cursor = Cursor::new(dict_bytes, "dictionary");
    let mut dict = Vec::new();
    while cursor.remaining() > 0 {
        let len = read_be(cursor.take(len_w)?, len_w);
        let start = cursor.position();
        let len = cursor
            .take(usize::try_from(len).unwrap_or(usize::MAX))?
            .len();
        dict.push((start, len));
    }
    Ok(dict)
}

/// One dictionary id (`W` bytes, big-endian) per cell.
fn decode_ids<const W: usize>(
    ids: &[u8],
    dict: &[(usize, usize)],
    dict_bytes: &[u8],
    cells: &mut Cells<'_, '_>,
) -> StageResult<()> {
    for id in ids.chunks_exact(W) {
        let id = read_be(id, W);
        let Some(&(start, len)) = usize::try_from(id).ok().and_then(|i| dict.get(i)) else {
            return corrupt_part(
                "dictionary id",
                Cause::IndexOutOfRange {
                    index: id,
                    count: dict.len() as u64,
                },
            );
        };
        cells.push(dict_bytes, start, len)?;
    }
    Ok(())
}

/// The cells that runs of `{run_len (run_w bytes), str_len (len_w bytes),
/// bytes}`, all big-endian, come to.
fn run_cells(encoded: &[u8], run_w: usize, len_w: usize) -> StageResult<u64> {
    let mut input = Cursor::new(encoded, "encoded strings");
    let mut cells = 0u64;
    while input.remaining() > 0 {
        let run = read_be(input.take(run_w)?, run_w);
        let len = read_be(input.take(len_w)?, len_w);
        input.take(usize::try_from(len).unwrap_or(usize::MAX))?;
        cells = cells.saturating_add(run);
    }
    Ok(cells)
}

/// Runs of `{run_len, str_len, bytes}` (see [`run_cells`], which checked
/// them): the string `run_len` times.
fn decode_runs(
    encoded: &[u8],
    run_w: usize,
    len_w: usize,
    cells: &mut Cells<'_, '_>,
) -> StageResult<()> {
    let mut input = Cursor::new(encoded, "encoded strings");
    while input.remaining() > 0 {
        let run = read_be(input.take(run_w)?, run_w);
        let len = read_be(input.take(len_w)?, len_w);
        let start = input.position();
        let len = input
            .take(usize::try_from(len).unwrap_or(usize::MAX))?
            .len();
        for _ in 0..run {
            cells.push(encoded, start, len)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodes `strings` with `codec`: the chunk's metadata and data.
    fn encoded(codec: StringCodec, strings: &[&str]) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let data: Vec<u8> = strings.concat().into_bytes();
        let mut offsets = Vec::new();
        let mut at = 0u64;
        for s in strings {
            offsets.push(at);
            at += s.len() as u64;
        }
        let parts = forward(codec, &data, &offsets).unwrap();
        (parts.metadata[0].clone(), parts.data[0].to_vec(), data)
    }

    fn decode(
        codec: StringCodec,
        (md, encoded): (&[u8], &[u8]),
        out: &mut [u8],
        ends: StringEnds<'_>,
    ) -> StageResult<()> {
        let mut cursor = Cursor::new(md, "chunk metadata");
        reverse(codec, &mut cursor, encoded, &mut OutBuf::Fixed(out), ends).map(|_| ())
    }

    /// Strings shorter, as long as and longer than a block copy, empty
    /// ones, runs, and a short one last (no block fits after it).
    const STRINGS: [&str; 9] = [
        "",
        "abc",
        "abc",
        "0123456789abcdef0123456789abcdef",
        "a string longer than one block of thirty-two bytes",
        "",
        "a string longer than one block of thirty-two bytes",
        "abc",
        "z",
    ];

    #[test]
    fn both_sinks_give_the_written_cells() {
        for codec in [StringCodec::Rle, StringCodec::Dictionary] {
            let (md, enc, data) = encoded(codec, &STRINGS);
            let mut out = vec![0u8; data.len()];
            let mut offsets = vec![9u64; 3];
            let ends = StringEnds::Grow {
                offsets: &mut offsets,
                cells: STRINGS.len() as u64,
            };
            decode(codec, (&md, &enc), &mut out, ends).unwrap();
            assert_eq!(out, data, "{codec:?}");
            let mut at = 0;
            let mut want = vec![0u64];
            for s in STRINGS {
                at += s.len() as u64;
                want.push(at);
            }
            assert_eq!(offsets, want, "{codec:?}");
            let mut placed = vec![0u8; data.len()];
            let mut ends = vec![0u64; STRINGS.len()];
            let sink = StringEnds::Place {
                ends: &mut ends,
                base: 1000,
            };
            decode(codec, (&md, &enc), &mut placed, sink).unwrap();
            assert_eq!(placed, data, "{codec:?}");
            let shifted: Vec<u64> = want[1..].iter().map(|e| e + 1000).collect();
            assert_eq!(ends, shifted, "{codec:?}");
        }
    }

    /// A cell count other than the strings hold is refused before the
    /// offsets get any room, however large the count asked for.
    #[test]
    fn a_cell_count_the_strings_do_not_hold_is_refused_unallocated() {
        for codec in [StringCodec::Rle, StringCodec::Dictionary] {
            let (md, enc, data) = encoded(codec, &STRINGS);
            for cells in [STRINGS.len() as u64 - 1, STRINGS.len() as u64 + 1, 1 << 40] {
                // The metadata's offsets size follows the count asked for,
                // as a forged chunk's would.
                let mut md = md.clone();
                // (`0`, `1`, input bytes, output bytes, offsets bytes.)
                md[16..20].copy_from_slice(&((cells * 8) as u32).to_le_bytes());
                let mut out = vec![0u8; data.len()];
                let mut offsets = Vec::new();
                let ends = StringEnds::Grow {
                    offsets: &mut offsets,
                    cells,
                };
                let fault = decode(codec, (&md, &enc), &mut out, ends).unwrap_err();
                assert_eq!(offsets.capacity(), 0, "{codec:?}, {cells} cells");
                let text = format!("{fault:?}");
                // A count past the metadata's u32 of offsets bytes cannot
                // agree with it; a count that does must match the strings.
                let what = if cells > u64::from(u32::MAX) / 8 {
                    "the offsets size"
                } else {
                    "the cells the strings decode to"
                };
                assert!(text.contains(what), "{codec:?}, {cells} cells: {text}");
            }
        }
    }
}
