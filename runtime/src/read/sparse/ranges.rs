//! The query's ranges as the sparse reader applies them: which tiles they
//! touch, how many a value falls in, and how TileDB coalesces and merges
//! them.

use crate::error::Result;
use crate::fragment::FragmentMetadata;
use crate::read::query::Range;
use crate::schema::Scalar;
use crate::snapshot::Snapshot;

pub(crate) fn overlaps(lo: &Scalar, hi: &Scalar, ranges: &[(Scalar, Scalar)]) -> bool {
    ranges.is_empty()
        || ranges
            .iter()
            .any(|(a, b)| !hi.compare(a).is_lt() && !lo.compare(b).is_gt())
}

pub(crate) fn range_hits(value: &Scalar, ranges: &[(Scalar, Scalar)]) -> usize {
    if ranges.is_empty() {
        return 1;
    }
    ranges
        .iter()
        .filter(|(lo, hi)| !value.compare(lo).is_lt() && !value.compare(hi).is_gt())
        .count()
}

/// The ranges of one dimension as TileDB keeps them when they are added
/// (subarray/range_subset.h, AddStrategy): an integer range starting right
/// after the previous one's end extends it.
pub(crate) fn coalesce(ranges: &[(Scalar, Scalar)]) -> Vec<(Scalar, Scalar)> {
    let mut out: Vec<(Scalar, Scalar)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        if let (Some((_, Scalar::Int(end))), Scalar::Int(start)) = (out.last_mut(), lo) {
            if end.checked_add(1) == Some(*start) {
                out.last_mut().expect("just matched").1 = hi.clone();
                continue;
            }
        }
        out.push((lo.clone(), hi.clone()));
    }
    out
}

/// The ranges of a string dimension as TileDB's global-order and unordered
/// readers use them (subarray/range_subset.h): sorted by start then end,
/// and a range starting at or before the previous one's end merged into it
/// with the later range's end, even when that end is smaller. That last
/// step narrows the union (TileDB 2.30 behaviour, reproduced so that the
/// same read returns the same cells).
pub(crate) fn merge_string_ranges(ranges: &[Range]) -> Vec<Range> {
    let mut sorted = ranges.to_vec();
    sorted.sort();
    let mut out: Vec<Range> = Vec::with_capacity(sorted.len());
    for (lo, hi) in sorted {
        match out.last_mut() {
            Some(head) if lo <= head.1 => head.1 = hi,
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// Loads the R-tree of every sparse fragment, all at once over a network
/// (each is a read of its fragment's metadata file), for the readers that
/// then go through the fragments one by one.
pub(crate) fn load_rtrees(array: &Snapshot) {
    use rayon::prelude::*;
    let storage = array.storage();
    let fragments = array.fragments();
    if storage.concurrent_reads() == 0 {
        return;
    }
    crate::storage::on_io_threads(storage, fragments.len(), || {
        fragments
            .par_iter()
            .filter(|f| !f.dense && f.non_empty_domain.is_some())
            .for_each(|f| {
                // An error is reported by the reader that needs the tree.
                let _ = f.mbrs(storage);
            });
    });
}

/// Whether the fragment's non-empty domain lies inside `ranges` on every
/// dimension (then so does every tile's MBR).
fn holds_only_cells_inside(fragment: &FragmentMetadata, ranges: &[Vec<(Scalar, Scalar)>]) -> bool {
    let Some(domain) = &fragment.non_empty_domain else {
        return false;
    };
    let dims = &fragment.schema.dimensions;
    domain.len() == dims.len()
        && domain
            .iter()
            .zip(dims)
            .enumerate()
            .all(|(d, ((lo, hi), dim))| {
                // No ranges on a dimension (or none at all): all of it.
                let ranges = ranges.get(d).map_or(&[][..], Vec::as_slice);
                if ranges.is_empty() {
                    return true;
                }
                let (Some(lo), Some(hi)) = (
                    Scalar::decode(dim.datatype, lo),
                    Scalar::decode(dim.datatype, hi),
                ) else {
                    return false;
                };
                ranges
                    .iter()
                    .any(|(a, b)| !lo.compare(a).is_lt() && !hi.compare(b).is_gt())
            })
}

/// The tiles of a sparse fragment whose MBR meets `ranges`, in stored order.
pub(crate) fn touched_tiles(
    array: &Snapshot,
    fragment: &FragmentMetadata,
    ranges: &[Vec<(Scalar, Scalar)>],
) -> Result<Vec<u64>> {
    if array.storage().concurrent_reads() > 0 && holds_only_cells_inside(fragment, ranges) {
        // Every tile is touched: its R-tree (a request per fragment over a
        // network) need not be read.
        return Ok((0..fragment.tile_num).collect());
    }
    let mbrs = fragment.mbrs(array.storage())?;
    let mut tiles = Vec::new();
    for (t, mbr) in mbrs.iter().enumerate() {
        let hit =
            mbr.iter()
                .zip(&fragment.schema.dimensions)
                .zip(ranges)
                .all(|(((lo, hi), dim), r)| {
                    match (
                        Scalar::decode(dim.datatype, lo),
                        Scalar::decode(dim.datatype, hi),
                    ) {
                        (Some(lo), Some(hi)) => overlaps(&lo, &hi, r),
                        _ => true,
                    }
                });
        if hit && (t as u64) < fragment.tile_num {
            tiles.push(t as u64);
        }
    }
    Ok(tiles)
}
