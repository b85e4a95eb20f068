//! Dense writes in global order, as TileDB's `GlobalOrderWriter` takes them:
//! the subarray must coincide with space tile bounds (`WriterBase`: "In
//! global writes for dense arrays, the subarray must coincide with the tile
//! bounds"), and the cells come tile after tile in the schema's tile order,
//! each tile's cells in its cell order. That is the order a dense fragment
//! stores its tiles in, so each tile is a run of the input read in place
//! (`DenseInputOrder::Global` in `tiling`): nothing is reordered or copied,
//! and the tiles are built in bounded groups like any other write's.

use crate::error::{Error, Result};
use crate::schema::{ArraySchema, Scalar};

use super::fragment_input::usage;

/// TileDB's refusal of a global-order dense write whose subarray is off the
/// space tile bounds along `dim`.
pub(super) fn off_tile_bounds(dim: &str, (lo, hi): (i128, i128), tile: i128, low: i128) -> Error {
    usage(format!(
        "In global writes for dense arrays, the subarray must coincide with the \
         tile bounds (dimension {dim}: [{lo}, {hi}], tiles of {tile} from {low})"
    ))
}

/// Checks that the subarray of a dense write in global order coincides with
/// space tile bounds, as TileDB checks it before writing anything; gives
/// each dimension's tile extent.
pub(super) fn check_tile_bounds(
    schema: &ArraySchema,
    subarray: Option<&[(i128, i128)]>,
) -> Result<Vec<i128>> {
    let sub = subarray.ok_or_else(|| usage("a dense write needs a subarray"))?;
    if sub.len() != schema.dimensions.len() {
        return Err(usage("the subarray needs one range per dimension"));
    }
    let mut extents = Vec::with_capacity(sub.len());
    for (d, &(lo, hi)) in schema.dimensions.iter().zip(sub) {
        let Some((Scalar::Int(dlo), Scalar::Int(dhi))) = d.domain_scalars() else {
            return Err(usage(format!(
                "dimension {}: not an integer domain",
                d.name
            )));
        };
        let tile = d
            .extent
            .as_deref()
            .and_then(|e| Scalar::decode(d.datatype, e))
            .and_then(|s| s.as_int())
            .unwrap_or(dhi - dlo + 1);
        if lo > hi || tile <= 0 || (lo - dlo) % tile != 0 || (hi - dlo + 1) % tile != 0 {
            return Err(off_tile_bounds(&d.name, (lo, hi), tile, dlo));
        }
        extents.push(tile);
    }
    Ok(extents)
}
