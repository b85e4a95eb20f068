//! Tile metadata of fields whose filters lose precision.
//!
//! TileDB computes a tile's min, max and sum before it filters the tile:
//! every writer calls `compute_tiles_metadata` (writer_base.cc) and only
//! then `filter_tiles` (tiledb/sm/query/writers/ordered_writer.cc,
//! unordered_writer.cc, global_order_writer.cc, the last also for
//! consolidation), and the generator reads the writer's unfiltered tile
//! (tiledb/sm/tile/tile_metadata_generator.cc).
//! So for a lossy filter the recorded values are those of the original
//! cells, which the stored tile no longer holds:
//!
//! - SCALE_FLOAT stores `round((x - offset) / scale)` as a signed integer
//!   of `byte_width` bytes and reads back `scale * q + offset`
//!   (tiledb/sm/filter/float_scaling_filter.cc), so each cell read back is
//!   within half a step (`|scale| / 2`, plus the float arithmetic's
//!   rounding) of the value the metadata was computed from — as long as
//!   `q` fits the integer: the forward cast of an out-of-range value is
//!   not checked (C++ leaves it undefined; x86 wraps or saturates), and
//!   such a cell reads back as anything. The recorded min and max bound
//!   every original cell and the rounding is monotonic, so when both fit,
//!   every cell did; then min and max are compared within half a step and
//!   the sum within half a step per summed cell. Otherwise the tile's
//!   values are not compared.
//! - WebP with `lossless = false`: no bound is documented, so min, max and
//!   sum are not compared.
//!
//! Null counts do not depend on the values and are compared exactly.

use crate::filter::{Datatype, Filter, FilterPipeline};

/// How a lossy field's recorded min, max and sum relate to its cells.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Lossy {
    /// One SCALE_FLOAT filter on FLOAT32 or FLOAT64 cells.
    Scale {
        scale: f64,
        offset: f64,
        byte_width: u64,
        float32: bool,
    },
    /// Min, max and sum cannot be recomputed from the cells; why.
    Unchecked(&'static str),
}

/// The lossy filter of a field's pipeline, if any.
pub(crate) fn lossy_of(pipeline: &FilterPipeline, datatype: Datatype) -> Option<Lossy> {
    let mut found = None;
    for f in &pipeline.filters {
        let this = match *f {
            Filter::ScaleFloat {
                scale,
                offset,
                byte_width,
            } => {
                let float32 = match datatype {
                    Datatype::Float32 => true,
                    Datatype::Float64 => false,
                    _ => {
                        return Some(Lossy::Unchecked(
                            "SCALE_FLOAT on cells that are not FLOAT32 or FLOAT64",
                        ))
                    }
                };
                if !matches!(byte_width, 1 | 2 | 4 | 8)
                    || !scale.is_finite()
                    || scale == 0.0
                    || !offset.is_finite()
                {
                    return Some(Lossy::Unchecked(
                        "SCALE_FLOAT with a byte width, scale or offset its values cannot be bounded by",
                    ));
                }
                Lossy::Scale {
                    scale,
                    offset,
                    byte_width,
                    float32,
                }
            }
            Filter::Webp {
                lossless: false, ..
            } => Lossy::Unchecked("lossy WebP"),
            _ => continue,
        };
        if found.is_some() {
            return Some(Lossy::Unchecked("more than one lossy filter"));
        }
        found = Some(this);
    }
    found
}

/// The relative rounding of the cell type's arithmetic, with margin.
fn relative(float32: bool) -> f64 {
    if float32 {
        f64::powi(2.0, -20)
    } else {
        f64::powi(2.0, -48)
    }
}

/// A cell of the field's type as f64.
pub(crate) fn value(bytes: &[u8], float32: bool) -> Option<f64> {
    if float32 {
        Some(f32::from_le_bytes(bytes.try_into().ok()?) as f64)
    } else {
        Some(f64::from_le_bytes(bytes.try_into().ok()?))
    }
}

impl Lossy {
    /// Whether `v` quantizes to an integer that fits the byte width
    /// (float_scaling_filter.cc's `run_forward`, in the cell type).
    pub(crate) fn fits(&self, v: f64) -> bool {
        let Lossy::Scale {
            scale,
            offset,
            byte_width,
            float32,
        } = *self
        else {
            return false;
        };
        let q = if float32 {
            (((v as f32) - (offset as f32)) / (scale as f32)).round() as f64
        } else {
            ((v - offset) / scale).round()
        };
        let bits = (byte_width * 8) as i32;
        let max = f64::powi(2.0, bits - 1);
        q.is_finite() && q >= -max && q < max
    }

    /// Whether a recorded min or max (of the original cells) agrees with
    /// the one computed from the cells read back.
    pub(crate) fn close(&self, recorded: f64, computed: f64) -> bool {
        let Lossy::Scale {
            scale,
            offset,
            float32,
            ..
        } = *self
        else {
            return true;
        };
        let tolerance = scale.abs() / 2.0
            + relative(float32) * (recorded.abs() + computed.abs() + offset.abs() + scale.abs());
        (recorded - computed).abs() <= tolerance
    }

    /// Whether a recorded sum (of `summed` original cells) agrees with the
    /// one computed from the cells read back, whose magnitudes add up to
    /// `magnitude`. TileDB sums in f64 whatever the cell type.
    pub(crate) fn close_sum(
        &self,
        recorded: f64,
        computed: f64,
        summed: u64,
        magnitude: f64,
    ) -> bool {
        let Lossy::Scale {
            scale,
            offset,
            float32,
            ..
        } = *self
        else {
            return true;
        };
        let n = summed as f64;
        let per_cell = scale.abs() / 2.0 + relative(float32) * (offset.abs() + scale.abs());
        let accumulation = relative(false) * n * (magnitude + n * scale.abs());
        let tolerance = n * per_cell + relative(float32) * magnitude + accumulation;
        (recorded - computed).abs() <= tolerance
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scale(byte_width: u64) -> Lossy {
        Lossy::Scale {
            scale: 0.1,
            offset: 0.5,
            byte_width,
            float32: false,
        }
    }

    #[test]
    fn fits_follows_the_byte_width() {
        // (x - 0.5) / 0.1 in an i8: -128..=127.
        assert!(scale(1).fits(13.2));
        assert!(!scale(1).fits(13.3));
        assert!(scale(1).fits(-12.3));
        assert!(!scale(1).fits(-12.4));
        assert!(scale(8).fits(1e17));
        assert!(!scale(8).fits(1e300));
    }

    #[test]
    fn close_allows_half_a_step() {
        let s = scale(4);
        assert!(s.close(1.04, 1.0));
        assert!(!s.close(1.06, 1.0));
        assert!(s.close_sum(10.4, 10.0, 10, 10.0));
        assert!(!s.close_sum(10.6, 10.0, 1, 10.0));
    }

    #[test]
    fn lossy_of_finds_scale_float_and_lossy_webp() {
        let pipeline = |filters| FilterPipeline {
            max_chunk_size: 65536,
            filters,
        };
        let sf = Filter::ScaleFloat {
            scale: 0.1,
            offset: 0.5,
            byte_width: 2,
        };
        assert!(matches!(
            lossy_of(
                &pipeline(vec![sf.clone(), Filter::Zstd { level: 1 }]),
                Datatype::Float64
            ),
            Some(Lossy::Scale { .. })
        ));
        assert!(matches!(
            lossy_of(&pipeline(vec![sf.clone()]), Datatype::Int64),
            Some(Lossy::Unchecked(_))
        ));
        assert!(matches!(
            lossy_of(&pipeline(vec![sf.clone(), sf]), Datatype::Float64),
            Some(Lossy::Unchecked(_))
        ));
        assert_eq!(
            lossy_of(
                &pipeline(vec![Filter::Zstd { level: 1 }]),
                Datatype::Float64
            ),
            None
        );
    }
}
