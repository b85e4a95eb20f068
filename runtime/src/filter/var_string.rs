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
    corrupt, corrupt_part, push_be, read_be, write_fault, Cursor, Fault, MetadataOut, OutBuf,
    Parts, StageResult,
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

/// Decodes the strings into `out` and their start offsets into `offsets`,
/// which must come to exactly `expected_cells`.
pub(crate) fn reverse(
    codec: StringCodec,
    md: &mut Cursor<'_>,
    data: &[u8],
    out: &mut OutBuf<'_>,
    expected_cells: u64,
    offsets: &mut Vec<u64>,
) -> StageResult<MetadataOut> {
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
    let mut input = Cursor::new(&data[..encoded_bytes], "encoded strings");
    let output = out.alloc(input_bytes)?;
    offsets.clear();
    // The count comes from the caller's metadata: grow past a modest start.
    offsets.reserve(expected_cells.min(1 << 16) as usize);
    let mut pos = 0usize;
    let mut emit = |s: &[u8], offsets: &mut Vec<u64>| -> StageResult<()> {
        if offsets.len() as u64 >= expected_cells {
            return corrupt_part(
                "cells",
                Cause::OutOfRange {
                    value: offsets.len() as u64 + 1,
                    limit: expected_cells,
                },
            );
        }
        if s.len() > output.len() - pos {
            return corrupt_part(
                "string bytes",
                Cause::OutOfRange {
                    value: pos.saturating_add(s.len()) as u64,
                    limit: output.len() as u64,
                },
            );
        }
        output[pos..pos + s.len()].copy_from_slice(s);
        offsets.push(pos as u64);
        pos += s.len();
        Ok(())
    };
    match codec {
        StringCodec::Rle => {
            let (run_w, len_w) = (valid_width(widths.0)?, valid_width(widths.1)?);
            while input.remaining() > 0 {
                let run = read_be(input.take(run_w)?, run_w);
                let len = read_be(input.take(len_w)?, len_w);
                let s = input.take(usize::try_from(len).unwrap_or(usize::MAX))?;
                if run > expected_cells {
                    return corrupt_part(
                        "run length",
                        Cause::OutOfRange {
                            value: run,
                            limit: expected_cells,
                        },
                    );
                }
                for _ in 0..run {
                    emit(s, offsets)?;
                }
            }
        }
        StringCodec::Dictionary => {
            let (id_w, len_w) = (valid_width(widths.0)?, valid_width(widths.1)?);
            let mut dict_cursor = Cursor::new(dict_bytes, "dictionary");
            let mut dict: Vec<&[u8]> = Vec::new();
            while dict_cursor.remaining() > 0 {
                let len = read_be(dict_cursor.take(len_w)?, len_w);
                dict.push(dict_cursor.take(usize::try_from(len).unwrap_or(usize::MAX))?);
            }
            while input.remaining() > 0 {
                let id = read_be(input.take(id_w)?, id_w);
                let Some(s) = usize::try_from(id).ok().and_then(|i| dict.get(i)) else {
                    return corrupt_part(
                        "dictionary id",
                        Cause::IndexOutOfRange {
                            index: id,
                            count: dict.len() as u64,
                        },
                    );
                };
                emit(s, offsets)?;
            }
        }
    }
    if offsets.len() as u64 != expected_cells {
        return corrupt(Cause::Inconsistent {
            what: "the cells the strings decode to",
            expected: expected_cells,
            found: offsets.len() as u64,
        });
    }
    if pos != input_bytes {
        return corrupt(Cause::Inconsistent {
            what: "the bytes the strings decode to",
            expected: input_bytes as u64,
            found: pos as u64,
        });
    }
    Ok(MetadataOut::New(Vec::new()))
}
