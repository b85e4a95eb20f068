//! The dense fragments a read takes cells from, and where each keeps them.

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::fragment::FragmentMetadata;
use crate::read::dense::geometry::{DenseDimension, FragmentTiling, Order};
use crate::read::skip::Prune;
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
    /// The tiles left out: under a query condition those no cell of which
    /// passes (`skip::dense_tiles`), and those an aggregate answered from
    /// their metadata; their cells read as fill.
    pub(crate) skipped: HashSet<u64>,
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
            skipped: HashSet::new(),
        });
    }
    Ok(geometry)
}

/// Marks in each fragment of `geometry` the tiles `prune` leaves out: those
/// no cell of which passes its condition, and those it names as answered,
/// so that the read leaves them undecoded.
pub(crate) fn skip_tiles(
    array: &Snapshot,
    geometry: &mut [Geometry<'_>],
    prune: Prune<'_>,
) -> Result<()> {
    for g in geometry {
        if let Some(condition) = prune.condition {
            g.skipped = crate::read::skip::dense_tiles(
                array,
                g.fragment,
                condition,
                g.tiling.cells_per_tile(),
            )?;
        }
        if let Some(answered) = prune.answered {
            g.skipped.extend(
                answered
                    .iter()
                    .filter(|(path, _)| *path == g.fragment.path)
                    .map(|(_, tile)| *tile),
            );
        }
    }
    Ok(())
}
