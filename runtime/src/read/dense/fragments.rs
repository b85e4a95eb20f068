//! The dense fragments a read takes cells from, and where each keeps them.

use crate::error::{Error, Result};
use crate::fragment::FragmentMetadata;
use crate::read::dense::geometry::{DenseDimension, FragmentTiling, Order};
use crate::schema::{Scalar, SchemaOrder};
use crate::snapshot::Snapshot;

pub(crate) fn order(o: SchemaOrder) -> Order {
    match o {
        SchemaOrder::ColMajor => Order::ColMajor,
        _ => Order::RowMajor,
    }
}

/// Where one dense fragment keeps its cells.
pub(crate) struct Geometry<'a> {
    pub(crate) fragment: &'a FragmentMetadata,
    pub(crate) tiling: FragmentTiling,
    /// The non-empty domain, per dimension.
    pub(crate) ned: Vec<(i128, i128)>,
}

/// The dense fragments of `array` that hold cells, oldest first.
pub(crate) fn fragment_geometry<'a>(
    array: &'a Snapshot,
    dims: &[DenseDimension],
) -> Result<Vec<Geometry<'a>>> {
    let schema = array.schema();
    let mut geometry = Vec::new();
    for fragment in array.fragments() {
        let fragment: &FragmentMetadata = fragment;
        if !fragment.dense {
            continue;
        }
        let Some(ned) = &fragment.non_empty_domain else {
            continue;
        };
        let mut spans = Vec::new();
        for ((lo, hi), dim) in ned.iter().zip(&fragment.schema.dimensions) {
            match (
                Scalar::decode(dim.datatype, lo).and_then(|s| s.as_int()),
                Scalar::decode(dim.datatype, hi).and_then(|s| s.as_int()),
            ) {
                (Some(lo), Some(hi)) => spans.push((lo, hi)),
                _ => return Err(Error::corrupt(0, "non_empty_domain", "not integral")),
            }
        }
        let tiling = FragmentTiling::new(
            dims,
            &spans,
            order(schema.tile_order),
            order(schema.cell_order),
        );
        geometry.push(Geometry {
            fragment,
            tiling,
            ned: spans,
        });
    }
    Ok(geometry)
}
