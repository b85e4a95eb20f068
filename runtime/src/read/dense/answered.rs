//! The part of a dense aggregate the tile metadata answers: a tile of a
//! fragment wholly inside the fragment's non-empty domain (so none of its
//! cells is padding), wholly inside one range of the query on each
//! dimension and meeting no other range there (so its cells are counted
//! once), that no newer fragment's non-empty domain meets (so every cell
//! of it reaches the result), gives its cell count, null count, sum,
//! minimum and maximum without being decoded. The read then leaves it out
//! ([`crate::read::skip::Prune::answered`]), and the aggregate leaves its
//! cells (read as fill) out of those it computes over.

use crate::error::Result;
use crate::read::dense::fragments::fragment_geometry;
use crate::read::dense::geometry::{DenseDimension, Span};
use crate::read::dense::{dense_dimensions, query_spans, MAX_DENSE_CELLS};
use crate::read::query::{decode_ranges, ReadQuery};
use crate::read::tile_aggregates::{answerable, recorded_stats, FromMetadata};
use crate::snapshot::Snapshot;

/// The tiles of a dense read of `query` (no condition) whose part of the
/// aggregates over `names` the metadata gives; `None` when none may be
/// answered so (an attribute of several values per cell or of strings
/// other than ASCII, a subarray too large to read).
pub(crate) fn from_metadata(
    snapshot: &Snapshot,
    query: &ReadQuery,
    names: &[String],
) -> Result<Option<FromMetadata>> {
    let schema = snapshot.schema();
    if !schema.is_dense() || !answerable(schema, names) {
        return Ok(None);
    }
    let dims = dense_dimensions(schema)?;
    let ranges = decode_ranges(schema, query)?;
    let Ok((spans, _, _)) = query_spans(schema, &dims, &ranges, MAX_DENSE_CELLS) else {
        // The read refuses it, saying why.
        return Ok(None);
    };
    let geometry = fragment_geometry(snapshot, &dims)?;
    let mut out = FromMetadata::new(names);
    for (gi, g) in geometry.iter().enumerate() {
        let Some(stats) = recorded_stats(snapshot, g.fragment, names)? else {
            continue;
        };
        // Per dimension, the tiles (as spans) the rule allows along it.
        let along: Vec<Vec<Span>> = dims
            .iter()
            .zip(&g.ned)
            .zip(&spans)
            .map(|((dim, ned), spans)| whole_tiles(dim, *ned, spans))
            .collect();
        let newer = &geometry[gi + 1..];
        let cells = g.tiling.cells_per_tile();
        for_each_box(&along, &mut |tile_box: &[Span]| {
            let hidden = newer.iter().any(|n| {
                n.ned
                    .iter()
                    .zip(tile_box)
                    .all(|((lo, hi), (a, b))| lo <= b && a <= hi)
            });
            if hidden {
                return;
            }
            let corner: Vec<i128> = tile_box.iter().map(|(lo, _)| *lo).collect();
            let tile = g.tiling.tile_position(&corner);
            out.add_tile(&stats, tile, cells);
            out.answered.insert((g.fragment.path.clone(), tile));
        });
    }
    Ok(Some(out))
}

/// The tiles of `dim` wholly inside `ned` and inside one of `spans` while
/// meeting no other.
fn whole_tiles(dim: &DenseDimension, ned: Span, spans: &[Span]) -> Vec<Span> {
    let mut out = Vec::new();
    let first = dim.tile_index(ned.0);
    let last = dim.tile_index(ned.1);
    for k in first..=last {
        let tile = (dim.tile_low(k), dim.tile_low(k + 1) - 1);
        if tile.0 < ned.0 || tile.1 > ned.1 {
            continue;
        }
        let inside = spans
            .iter()
            .filter(|(lo, hi)| *lo <= tile.0 && tile.1 <= *hi)
            .count();
        let meeting = spans
            .iter()
            .filter(|(lo, hi)| *lo <= tile.1 && tile.0 <= *hi)
            .count();
        if inside == 1 && meeting == 1 {
            out.push(tile);
        }
    }
    out
}

/// Calls `f` with every box of the product of `along` (one span per
/// dimension).
fn for_each_box(along: &[Vec<Span>], f: &mut dyn FnMut(&[Span])) {
    if along.iter().any(Vec::is_empty) {
        return;
    }
    let mut index = vec![0usize; along.len()];
    let mut current: Vec<Span> = along.iter().map(|a| a[0]).collect();
    loop {
        f(&current);
        let mut d = along.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            index[d] += 1;
            if index[d] < along[d].len() {
                current[d] = along[d][index[d]];
                break;
            }
            index[d] = 0;
            current[d] = along[d][0];
        }
    }
}
