//! SCALE_FLOAT (`float_scaling_filter.cc`): float32/float64 values become
//! signed integers of `byte_width` bytes, `round((x − offset) / scale)` with
//! the arithmetic done in the value's own precision and rounding half away
//! from zero; reading computes `scale · w + offset` in double precision and
//! narrows to the value type. Lossy by design.
//!
//! Metadata: `n_parts u32`, then each part's *output* size `u32`, then the
//! earlier metadata. One output part per input part.

use super::byteshuffle::{read_sizes, write_part_sizes};
use super::stage::{
    corrupt, prepend_metadata, read_uint, sign_extend, Cursor, Fault, MetadataOut, OutBuf, Parts,
    StageEnv, StageResult,
};
use super::Filter;
use crate::error::Cause;

struct Params {
    scale: f64,
    offset: f64,
    float_width: usize,
    int_width: usize,
}

/// The filter's widths, or the cause that makes them unusable (a usage
/// error when writing, corrupt when reading).
fn params(env: &StageEnv<'_>) -> Result<Params, Cause> {
    let Filter::ScaleFloat {
        scale,
        offset,
        byte_width,
    } = env.filter
    else {
        return Err(Cause::Text("not a scale-float filter".into()));
    };
    let int_width = match byte_width {
        1 | 2 | 4 | 8 => *byte_width as usize,
        other => {
            return Err(Cause::NotOneOf {
                what: "the SCALE_FLOAT byte width",
                value: *other,
                allowed: &[1, 2, 4, 8],
            })
        }
    };
    let float_width = match env.datatype.size() {
        4 | 8 => env.datatype.size() as usize,
        other => {
            return Err(Cause::NotOneOf {
                what: "the size of the values SCALE_FLOAT reads (a float)",
                value: other,
                allowed: &[4, 8],
            })
        }
    };
    Ok(Params {
        scale: *scale,
        offset: *offset,
        float_width,
        int_width,
    })
}

/// Saturates like Rust's `as`; C++ leaves out-of-range conversions undefined.
fn to_int(x: f64, width: usize) -> u64 {
    (match width {
        1 => x as i8 as i64,
        2 => x as i16 as i64,
        4 => x as i32 as i64,
        _ => x as i64,
    }) as u64
}

pub(crate) fn forward<'a>(env: &StageEnv<'_>, input: Parts<'a>) -> StageResult<Parts<'a>> {
    let p = params(env).map_err(|cause| Fault::Usage(cause.to_string()))?;
    let mut sizes = Vec::with_capacity(input.data.len());
    let mut outputs = Vec::with_capacity(input.data.len());
    for part in &input.data {
        if part.len() % p.float_width != 0 {
            return Err(Fault::Usage(format!(
                "SCALE_FLOAT part of {} bytes is not a whole number of floats",
                part.len()
            )));
        }
        let n = part.len() / p.float_width;
        let size = u32::try_from(n * p.int_width)
            .map_err(|_| Fault::Usage("part exceeds 4 GiB".into()))?;
        sizes.push(size);
        let mut out = Vec::with_capacity(size as usize);
        for v in part.chunks_exact(p.float_width) {
            let scaled = if p.float_width == 4 {
                let x = f32::from_le_bytes([v[0], v[1], v[2], v[3]]);
                ((x - p.offset as f32) / p.scale as f32).round() as f64
            } else {
                let x = f64::from_le_bytes(v.try_into().unwrap_or([0; 8]));
                ((x - p.offset) / p.scale).round()
            };
            out.extend_from_slice(&to_int(scaled, p.int_width).to_le_bytes()[..p.int_width]);
        }
        outputs.push(out);
    }
    // TileDB prepends each output part in turn; with the single data part a
    // non-empty chunk has, the order is the same.
    outputs.reverse();
    let md = write_part_sizes(&sizes)?;
    Ok(prepend_metadata(md, input.metadata, outputs))
}

pub(crate) fn reverse(
    env: &StageEnv<'_>,
    md: &mut Cursor<'_>,
    data: &[u8],
    out: &mut OutBuf<'_>,
) -> StageResult<MetadataOut> {
    let p = params(env).map_err(Fault::corrupt)?;
    let sizes = read_sizes(md)?;
    let total_in = sizes.iter().fold(0usize, |sum, s| sum.saturating_add(*s));
    if total_in > data.len() {
        return corrupt(Cause::Truncated {
            needed: total_in as u64,
            available: data.len() as u64,
        });
    }
    let total_out: usize = sizes.iter().map(|s| s / p.int_width * p.float_width).sum();
    let output = out.alloc(total_out)?;
    let (mut pos_in, mut pos_out) = (0usize, 0usize);
    for size in sizes {
        for w in data[pos_in..pos_in + size].chunks_exact(p.int_width) {
            let w = sign_extend(read_uint(w, p.int_width), p.int_width);
            let target = &mut output[pos_out..pos_out + p.float_width];
            if p.float_width == 4 {
                let x = (p.scale * (w as f32) as f64 + p.offset) as f32;
                target.copy_from_slice(&x.to_le_bytes());
            } else {
                let x = p.scale * (w as f64) + p.offset;
                target.copy_from_slice(&x.to_le_bytes());
            }
            pos_out += p.float_width;
        }
        pos_in += size;
    }
    Ok(MetadataOut::Rest)
}
