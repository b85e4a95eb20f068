//! Leaving out, under a query condition, the tiles of a fragment — or the
//! whole fragment — that no cell can pass (sparse: [`Prune`]; dense:
//! [`dense_tiles`]), judged from what the
//! metadata records without decoding them: each tile's minimum, maximum and
//! null count per attribute (format 11 and later), the fragment-wide ones
//! (format 12 and later), each tile's MBR and the fragment's non-empty
//! domain for conditions on dimensions.
//!
//! A tile left out only loses cells the condition would have dropped, with
//! one exception this module guards against: in an array without
//! duplicates, a cell hides an older cell with the same coordinates even
//! when it fails the condition itself (TileDB resolves duplicates before it
//! applies the condition). So a tile is left out there only when no other
//! fragment's non-empty domain meets its MBR and its fragment holds one
//! version of each cell (no per-cell timestamps).

use std::collections::HashSet;

use crate::condition::{FieldBounds, QueryCondition};
use crate::error::Result;
use crate::fragment::{Field, FragmentMetadata, Rectangle};
use crate::schema::{ArraySchema, Scalar};
use crate::snapshot::Snapshot;
use crate::storage::RelPath;

/// The tiles a sparse read may leave out: those no cell of which passes a
/// condition the caller applies afterwards, and those whose part the
/// caller already has (aggregates answered from tile metadata), by
/// fragment folder and tile.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Prune<'a> {
    pub(crate) condition: Option<&'a QueryCondition>,
    pub(crate) answered: Option<&'a HashSet<(RelPath, u64)>>,
    /// When given, the only tiles to read (a part of a read in batches
    /// that keeps to some tiles).
    pub(crate) only: Option<&'a HashSet<(RelPath, u64)>>,
}

impl Prune<'_> {
    /// Nothing left out.
    pub(crate) fn is_empty(&self) -> bool {
        self.condition.is_none() && self.answered.is_none() && self.only.is_none()
    }

    /// The tiles among `tiles` (of the sparse `fragment`) still to read.
    pub(crate) fn tiles(
        &self,
        snapshot: &Snapshot,
        fragment: &FragmentMetadata,
        mut tiles: Vec<u64>,
    ) -> Result<Vec<u64>> {
        if let Some(answered) = self.answered {
            tiles.retain(|&t| !answered.contains(&(fragment.path.clone(), t)));
        }
        if let Some(only) = self.only {
            tiles.retain(|&t| only.contains(&(fragment.path.clone(), t)));
        }
        match self.condition {
            Some(condition) => sparse_tiles(snapshot, fragment, tiles, condition),
            None => Ok(tiles),
        }
    }
}

/// The tiles among `tiles` (of the sparse `fragment`) that may hold a cell
/// passing `condition`.
fn sparse_tiles(
    snapshot: &Snapshot,
    fragment: &FragmentMetadata,
    tiles: Vec<u64>,
    condition: &QueryCondition,
) -> Result<Vec<u64>> {
    if !condition.skips_tiles() || tiles.is_empty() {
        return Ok(tiles);
    }
    let storage = snapshot.storage();
    let schema = &fragment.schema;
    let mut others: Vec<&Rectangle> = Vec::new();
    if !snapshot.schema().allows_dups {
        if fragment.has_timestamps {
            return Ok(tiles);
        }
        others = snapshot
            .fragments()
            .iter()
            .filter(|f| f.path != fragment.path)
            .filter_map(|f| f.non_empty_domain.as_ref())
            .collect();
    }
    let fields = condition.fields();
    // The whole fragment first: its non-empty domain and fragment-wide
    // statistics.
    let mut whole: Vec<(String, FieldBounds)> = Vec::new();
    let cells: u64 = (0..fragment.tile_num)
        .map(|t| fragment.cell_num(t, 0))
        .sum();
    for name in &fields {
        let mut b = FieldBounds {
            cells: Some(cells),
            ..FieldBounds::default()
        };
        if let Some((a, attribute)) = schema.attribute(name) {
            if let Some(stats) = fragment.fragment_stats(storage, a)? {
                b.datatype = Some(attribute.datatype);
                let trusted = float_bounds_trusted(attribute.datatype, Some(stats.sum));
                b.min_max = stats
                    .min_max
                    .as_ref()
                    .filter(|_| trusted)
                    .and_then(|(lo, hi)| {
                        Some((
                            Scalar::decode(attribute.datatype, lo)?,
                            Scalar::decode(attribute.datatype, hi)?,
                        ))
                    });
                b.nulls = stats.null_count;
            }
        } else if let (Some((d, _)), Some(domain)) =
            (schema.dimension(name), &fragment.non_empty_domain)
        {
            b = dimension_bounds(schema, d, domain);
        }
        whole.push((name.clone(), b));
    }
    let lookup = |list: &[(String, FieldBounds)], name: &str| {
        list.iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.clone())
            .unwrap_or_default()
    };
    let whole_fails = !condition.may_match(&|name| lookup(&whole, name));

    let mbrs = fragment.mbrs(storage)?;
    let mut stats = Vec::new();
    if !whole_fails {
        for name in &fields {
            if let Some((a, attribute)) = schema.attribute(name) {
                let s = fragment.tile_stats(storage, Field::Attribute(a))?;
                stats.push((name.clone(), attribute.datatype, s));
            }
        }
    }
    let mut kept = Vec::with_capacity(tiles.len());
    for tile in tiles {
        let mbr = mbrs.get(tile as usize);
        let hides_others = mbr.is_none_or(|mbr| others.iter().any(|o| meet(schema, mbr, o)));
        if hides_others {
            kept.push(tile);
            continue;
        }
        if whole_fails {
            continue;
        }
        let cells = fragment.cell_num(tile, 0);
        let bounds = |name: &str| -> FieldBounds {
            if let Some((_, datatype, s)) = stats.iter().find(|(n, _, _)| n == name) {
                return tile_bounds(*datatype, s, tile, cells);
            }
            match (schema.dimension(name), mbr) {
                (Some((d, _)), Some(mbr)) => dimension_bounds(schema, d, mbr),
                _ => FieldBounds::default(),
            }
        };
        if condition.may_match(&bounds) {
            kept.push(tile);
        }
    }
    Ok(kept)
}

/// The tiles of the dense `fragment` (of `cells_per_tile` cells each) no
/// cell of which passes `condition`, judged from the attributes' tile
/// statistics (format 11 and later) and, first, the fragment-wide ones.
///
/// Unlike a sparse tile, a dense tile hides nothing the condition could
/// bring back: a dense read takes each cell from the newest fragment whose
/// non-empty domain holds it whether or not that cell passes (TileDB 2.30
/// gives the fill value for it, never the older cell below), so a tile
/// left out only turns into the fill values the failing cells would have
/// become. The statistics of a dense tile also count the fill cells padding
/// it beyond the non-empty domain (when TileDB records them at all), which
/// only widens them.
pub(crate) fn dense_tiles(
    snapshot: &Snapshot,
    fragment: &FragmentMetadata,
    condition: &QueryCondition,
    cells_per_tile: u64,
) -> Result<HashSet<u64>> {
    let mut skipped = HashSet::new();
    if !condition.skips_tiles() || fragment.tile_num == 0 {
        return Ok(skipped);
    }
    let storage = snapshot.storage();
    let schema = &fragment.schema;
    let fields = condition.fields();
    let cells = fragment.tile_num.saturating_mul(cells_per_tile);
    let mut whole: Vec<(String, FieldBounds)> = Vec::new();
    let mut stats = Vec::new();
    for name in &fields {
        let Some((a, attribute)) = schema.attribute(name) else {
            continue;
        };
        let mut b = FieldBounds {
            cells: Some(cells),
            ..FieldBounds::default()
        };
        if let Some(s) = fragment.fragment_stats(storage, a)? {
            b.datatype = Some(attribute.datatype);
            b.min_max = s
                .min_max
                .as_ref()
                .filter(|_| float_bounds_trusted(attribute.datatype, Some(s.sum)))
                .and_then(|(lo, hi)| {
                    Some((
                        Scalar::decode(attribute.datatype, lo)?,
                        Scalar::decode(attribute.datatype, hi)?,
                    ))
                });
            b.nulls = s.null_count;
        }
        whole.push((name.clone(), b));
        let s = fragment.tile_stats(storage, Field::Attribute(a))?;
        stats.push((name.clone(), attribute.datatype, s));
    }
    if stats.is_empty() {
        // A condition on dimensions only: nothing recorded to judge by.
        return Ok(skipped);
    }
    let lookup = |name: &str| {
        whole
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.clone())
            .unwrap_or_default()
    };
    if !condition.may_match(&lookup) {
        skipped.extend(0..fragment.tile_num);
        return Ok(skipped);
    }
    for tile in 0..fragment.tile_num {
        let bounds = |name: &str| -> FieldBounds {
            match stats.iter().find(|(n, _, _)| n == name) {
                Some((_, datatype, s)) => tile_bounds(*datatype, s, tile, cells_per_tile),
                None => FieldBounds::default(),
            }
        };
        if !condition.may_match(&bounds) {
            skipped.insert(tile);
        }
    }
    Ok(skipped)
}

/// What the statistics `s` of a field of `datatype` record of `tile`.
fn tile_bounds(
    datatype: crate::filter::Datatype,
    s: &crate::fragment::FieldTileStats,
    tile: u64,
    cells: u64,
) -> FieldBounds {
    FieldBounds {
        datatype: Some(datatype),
        min_max: s
            .min_max(tile)
            .filter(|_| float_bounds_trusted(datatype, s.sum(tile)))
            .and_then(|(lo, hi)| {
                Some((Scalar::decode(datatype, lo)?, Scalar::decode(datatype, hi)?))
            }),
        nulls: s.null_count(tile),
        cells: Some(cells),
    }
}

/// Whether a float field's recorded minimum and maximum bound its cells.
/// TileDB 2.30 computes them as `min = min < v ? min : v`, so a NaN cell
/// makes both NaN and the next cell starts them again: with a NaN in the
/// tile they bound only the cells after it. A NaN shows in the sum (NaN
/// from then on), unless the sum saturated first (at `±f64::MAX`, after
/// which TileDB adds nothing): bounds are trusted only when the sum is a
/// number short of saturation. Other types' bounds are always trusted.
fn float_bounds_trusted(datatype: crate::filter::Datatype, sum: Option<[u8; 8]>) -> bool {
    if !datatype.is_real() {
        return true;
    }
    sum.map(f64::from_le_bytes)
        .is_some_and(|s| s.is_finite() && s.abs() < f64::MAX)
}

/// The bounds of dimension `d` over a rectangle (a dimension is never null).
fn dimension_bounds(schema: &ArraySchema, d: usize, rect: &Rectangle) -> FieldBounds {
    let datatype = schema.dimensions[d].datatype;
    let min_max = rect
        .get(d)
        .and_then(|(lo, hi)| Some((Scalar::decode(datatype, lo)?, Scalar::decode(datatype, hi)?)));
    FieldBounds {
        datatype: Some(datatype),
        min_max,
        nulls: Some(0),
        cells: None,
    }
}

/// Whether two rectangles meet (undecodable bounds: they may).
pub(crate) fn meet(schema: &ArraySchema, a: &Rectangle, b: &Rectangle) -> bool {
    schema
        .dimensions
        .iter()
        .zip(a.iter().zip(b))
        .all(|(dim, ((alo, ahi), (blo, bhi)))| {
            let decode = |v: &Vec<u8>| Scalar::decode(dim.datatype, v);
            match (decode(alo), decode(ahi), decode(blo), decode(bhi)) {
                (Some(alo), Some(ahi), Some(blo), Some(bhi)) => {
                    !ahi.compare(&blo).is_lt() && !bhi.compare(&alo).is_lt()
                }
                _ => true,
            }
        })
}
