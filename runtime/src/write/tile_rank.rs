//! The rank of each cell's space tile in tile order, read straight off the
//! coordinate columns with one typed step per dimension: the sort key of
//! float dimensions (and of integer ones whose keys overflow the one-number
//! grid of `cell_order`), where no `Scalar` is decoded per cell. The
//! arithmetic is `GlobalOrder::tile_of`'s, value for value: integers
//! `(x - low).div_euclid(extent)` in i128; floats `((x - low) / extent)
//! .floor()` in f64 (a float32 coordinate widened first), so a value on the
//! domain's upper bound, -0 and +0, and NaN land in the tile the general
//! path gives them (NaN: tile 0, as its saturating cast gives; validation
//! refuses NaN coordinates before any write is ordered).

use crate::schema::{ArraySchema, Scalar};

use super::fragment_input::Column;
use super::num_key::NumKey;

/// How one dimension's coordinate becomes its tile index.
#[derive(Clone, Copy)]
enum Step {
    Int {
        kind: NumKey,
        low: i128,
        extent: i128,
    },
    Float {
        single: bool,
        low: f64,
        extent: f64,
    },
}

/// One tiled dimension of the rank: its column, cell size, step and
/// number of tiles (a tile index at or past it has no rank).
struct Axis<'a> {
    data: &'a [u8],
    size: usize,
    step: Step,
    tiles: u64,
}

/// The tile ranks of a write's cells; see the module comment.
pub(super) struct TileRanks<'a> {
    axes: Vec<Axis<'a>>,
}

impl<'a> TileRanks<'a> {
    /// The ranks over `counts` (the tiled dimensions in tile order, with
    /// their numbers of tiles, as `Coordinates::tile_counts` gives them);
    /// `None` when a dimension is not a fixed-size number whose column has
    /// the dimension's cell size, or its extent is not positive.
    pub(super) fn new(
        schema: &ArraySchema,
        dims: &[&'a Column],
        counts: &[(usize, u64)],
    ) -> Option<TileRanks<'a>> {
        let mut axes = Vec::with_capacity(counts.len());
        for &(d, tiles) in counts {
            let dim = schema.dimensions.get(d)?;
            let column = dims.get(d)?;
            let kind = NumKey::of(dim.datatype)?;
            let size = dim.datatype.size() as usize;
            if dim.var || column.offsets.is_some() || column.cell_size() != Some(size) {
                return None;
            }
            let (low, _) = dim.domain_scalars()?;
            let step = match (kind, low, dim.extent_scalar()?) {
                (NumKey::F32 | NumKey::F64, low, extent) => {
                    let (low, extent) = (low.as_f64()?, extent.as_f64()?);
                    // A NaN extent is not positive either.
                    if extent.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
                        return None;
                    }
                    Step::Float {
                        single: matches!(kind, NumKey::F32),
                        low,
                        extent,
                    }
                }
                (_, Scalar::Int(low), Scalar::Int(extent)) if extent > 0 => {
                    Step::Int { kind, low, extent }
                }
                _ => return None,
            };
            axes.push(Axis {
                data: &column.data,
                size,
                step,
                tiles,
            });
        }
        Some(TileRanks { axes })
    }

    /// Cell `i`'s tile rank; `None` for a cell whose tile falls outside
    /// the domain's tiles (or past its column's end).
    #[inline]
    pub(super) fn rank(&self, i: usize) -> Option<u64> {
        let mut rank = 0u64;
        for axis in &self.axes {
            let bytes = axis.data.get(i * axis.size..(i + 1) * axis.size)?;
            let tile: i128 = match axis.step {
                Step::Int { kind, low, extent } => {
                    (int_value(kind, bytes)? - low).div_euclid(extent)
                }
                Step::Float {
                    single,
                    low,
                    extent,
                } => {
                    let x = if single {
                        f32::from_le_bytes(bytes.try_into().ok()?) as f64
                    } else {
                        f64::from_le_bytes(bytes.try_into().ok()?)
                    };
                    ((x - low) / extent).floor() as i128
                }
            };
            let tile = u64::try_from(tile).ok().filter(|&t| t < axis.tiles)?;
            rank = rank * axis.tiles + tile;
        }
        Some(rank)
    }
}

/// The integer stored in `bytes`, from its order key (which is the value
/// itself for unsigned types and the value with its sign bit flipped for
/// signed ones, sign-extended to 64 bits).
#[inline(always)]
fn int_value(kind: NumKey, bytes: &[u8]) -> Option<i128> {
    let key = kind.key(bytes);
    Some(match kind {
        NumKey::Signed(_) => (key ^ 1 << 63) as i64 as i128,
        NumKey::Unsigned(_) => key as i128,
        NumKey::F32 | NumKey::F64 => return None,
    })
}
