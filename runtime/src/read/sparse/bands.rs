//! Row- and column-major sparse reads cut into bands along the outer
//! dimension, each sorted on its own and appended to the result.

use crate::error::{Error, Result};
use crate::read::query::{decode_ranges, ReadQuery, ResultOrder};
use crate::read::result::{Column, ReadResult};
use crate::read::skip::Prune;
use crate::read::sparse::merge::run;
use crate::read::sparse::ranges::touched_tiles;
use crate::schema::Scalar;
use crate::snapshot::Snapshot;

/// Cells a row- or column-major sparse read sorts at once. Above this the
/// read is cut into bands along the outermost dimension of the result
/// order (see [`sorted_bands`]): each band's tiles are decoded, its cells
/// sorted and gathered, and appended to the result before the next band,
/// so that memory holds the result and one band's work rather than every
/// decoded tile and a sort key for every cell.
pub(crate) const BAND_CELLS: u64 = 4 << 20;

/// A band of the outer dimension's values, both ends included.
pub type Band = (i128, i128);

/// Bands of the outermost dimension (in the result order) that cut a row-
/// or column-major read into parts of about `budget` cells, each part
/// sorted on its own and the parts in order: `(dimension, [(lo, hi)])`.
/// `None` when the read is not worth cutting or cannot be cut this way: it
/// is small, not row- or column-major, gives several ranges for a
/// dimension (the order of the results then depends on the ranges), the
/// outer dimension is not an integer, or the tiles overlap so much along it
/// that the bands would decode much of the data more than once.
pub fn sorted_bands(
    array: &Snapshot,
    query: &ReadQuery,
    budget: u64,
) -> Result<Option<(usize, Vec<Band>)>> {
    let schema = array.schema();
    let n = schema.dimensions.len();
    let outer = match query.layout {
        ResultOrder::RowMajor => 0,
        ResultOrder::ColMajor => n.saturating_sub(1),
        _ => return Ok(None),
    };
    if n == 0 || schema.dimensions[outer].var || query.ranges.iter().any(|r| r.len() > 1) {
        return Ok(None);
    }
    let ranges = decode_ranges(schema, query)?;
    let int = |s: &Scalar| match s {
        Scalar::Int(v) => Some(*v),
        _ => None,
    };
    let (mut lo, mut hi) = (i128::MIN, i128::MAX);
    if let Some((a, b)) = ranges[outer].first() {
        match (int(a), int(b)) {
            (Some(a), Some(b)) => (lo, hi) = (a, b),
            _ => return Ok(None),
        }
    }
    // Each touched tile's extent along the outer dimension, and its cells.
    crate::read::sparse::ranges::load_rtrees(array);
    let mut tiles: Vec<(i128, i128, u64)> = Vec::new();
    for fragment in array.fragments() {
        if fragment.dense || fragment.non_empty_domain.is_none() {
            continue;
        }
        let mbrs = fragment.mbrs(array.storage())?;
        let datatype = fragment.schema.dimensions[outer].datatype;
        for t in touched_tiles(array, fragment, &ranges)? {
            let Some((a, b)) = mbrs.get(t as usize).and_then(|m| m.get(outer)) else {
                return Ok(None);
            };
            let bounds = Scalar::decode(datatype, a)
                .as_ref()
                .and_then(int)
                .zip(Scalar::decode(datatype, b).as_ref().and_then(int));
            let Some((a, b)) = bounds.filter(|(a, b)| a <= b) else {
                return Ok(None);
            };
            tiles.push((a.max(lo), b.min(hi), fragment.cell_num(t, 0)));
        }
    }
    let total: u64 = tiles.iter().map(|t| t.2).fold(0, u64::saturating_add);
    if total <= budget || tiles.is_empty() {
        return Ok(None);
    }
    tiles.sort_unstable();
    let first = tiles[0].0;
    let last = tiles.iter().map(|t| t.1).max().unwrap_or(first);
    // A new band starts at a tile's lower bound once the band holds the
    // budget, where few cells lie in tiles that cross that bound (those
    // are decoded for both bands): in stored order most tiles stay inside
    // one space tile, and the cut falls between them.
    let mut starts = vec![first];
    let mut held = 0u64;
    // Tiles begun before the candidate bound, by upper bound (min-heap),
    // and their cells.
    let mut open: std::collections::BinaryHeap<std::cmp::Reverse<(i128, u64)>> = Default::default();
    let mut open_cells = 0u64;
    for &(a, b, cells) in &tiles {
        while let Some(&std::cmp::Reverse((end, c))) = open.peek() {
            if end >= a {
                break;
            }
            open.pop();
            open_cells -= c;
        }
        if held >= budget && a > *starts.last().unwrap_or(&first) && open_cells <= budget / 4 {
            starts.push(a);
            held = 0;
        }
        held = held.saturating_add(cells);
        open.push(std::cmp::Reverse((b, cells)));
        open_cells += cells;
    }
    if starts.len() < 2 {
        return Ok(None);
    }
    let bands: Vec<Band> = starts
        .iter()
        .enumerate()
        .map(|(i, &a)| (a, starts.get(i + 1).map_or(last, |next| next - 1)))
        .collect();
    // Cells decoded over all bands: a tile is decoded for every band it
    // meets.
    let decoded: u64 = bands
        .iter()
        .map(|&(a, b)| {
            tiles
                .iter()
                .filter(|t| t.0 <= b && a <= t.1)
                .map(|t| t.2)
                .fold(0, u64::saturating_add)
        })
        .fold(0, u64::saturating_add);
    if decoded > total.saturating_mul(2) {
        return Ok(None);
    }
    Ok(Some((outer, bands)))
}

/// A row- or column-major read done band by band (see [`sorted_bands`]).
pub(crate) fn read_in_bands(
    array: &Snapshot,
    query: &ReadQuery,
    outer: usize,
    bands: &[Band],
    prune: Prune<'_>,
) -> Result<ReadResult> {
    let schema = array.schema();
    let datatype = schema.dimensions[outer].datatype;
    let encode = |v: i128| {
        crate::read::encode_scalar(datatype, &Scalar::Int(v))
            .ok_or_else(|| Error::corrupt(0, "MBR", "a tile bound outside its datatype"))
    };
    let mut result: Option<(ReadResult, Vec<Filled>)> = None;
    for (i, &(lo, hi)) in bands.iter().enumerate() {
        let mut band = query.clone();
        band.ranges.resize(schema.dimensions.len(), Vec::new());
        band.ranges[outer] = vec![(encode(lo)?, encode(hi)?)];
        let (part, _) = run(array, &band, false, prune)?;
        let (into, filled) = result.get_or_insert_with(|| {
            // Room for every band, estimated from the first, allocated
            // untouched: the bands are copied in with every thread, which
            // first-touches the pages in parallel (see `read::memory`).
            let estimate = part.cell_count().saturating_mul(bands.len() - i);
            let mut empty = part.clone_empty();
            let filled = empty
                .dimensions
                .iter_mut()
                .chain(&mut empty.attributes)
                .zip(part.dimensions.iter().chain(&part.attributes))
                .map(|(col, first)| Filled::with_room(col, first, estimate))
                .collect();
            (empty, filled)
        });
        append_result(into, filled, part);
    }
    let (mut result, filled) = result.ok_or_else(|| Error::Usage("no bands".into()))?;
    for (col, f) in result
        .dimensions
        .iter_mut()
        .chain(&mut result.attributes)
        .zip(filled)
    {
        f.finish(col);
    }
    Ok(result)
}

/// How much of a result column's preallocated room holds cells.
pub(crate) struct Filled {
    pub(crate) data: usize,
    pub(crate) validity: usize,
}

impl Filled {
    /// Gives `col` room for about `cells` cells like those of `first`, as
    /// untouched zeroed memory (its length is the room; `Filled` counts
    /// what holds cells).
    fn with_room(col: &mut Column, first: &Column, cells: usize) -> Filled {
        const MOST: usize = 1 << 30;
        let per_cell = first.data.len().div_ceil(first.len().max(1));
        col.data = crate::memory::zeroed_bytes(cells.saturating_mul(per_cell).min(MOST));
        if let Some(o) = col.offsets.as_mut() {
            crate::memory::reserve_hint(o, cells);
        }
        if let Some(v) = col.validity.as_mut() {
            *v = crate::memory::zeroed_bytes(cells.min(MOST));
        }
        Filled {
            data: 0,
            validity: 0,
        }
    }

    /// Cuts the room that holds no cells.
    fn finish(self, col: &mut Column) {
        col.data.truncate(self.data);
        col.data.shrink_to_fit();
        if let Some(v) = col.validity.as_mut() {
            v.truncate(self.validity);
            v.shrink_to_fit();
        }
    }
}

/// Copies `bytes` into `room` after its first `filled` bytes (growing it
/// if the estimate fell short), in parallel pieces.
pub(crate) fn fill(room: &mut Vec<u8>, filled: &mut usize, bytes: &[u8]) {
    use rayon::prelude::*;
    const PIECE: usize = 1 << 20;
    let end = *filled + bytes.len();
    if room.len() < end {
        room.resize(end, 0);
    }
    room[*filled..end]
        .par_chunks_mut(PIECE)
        .zip(bytes.par_chunks(PIECE))
        .for_each(|(to, from)| to.copy_from_slice(from));
    *filled = end;
}

/// Appends the cells of `part` (the same fields) to `into`.
pub(crate) fn append_result(into: &mut ReadResult, filled: &mut [Filled], part: ReadResult) {
    let pairs = into
        .dimensions
        .iter_mut()
        .zip(part.dimensions)
        .chain(into.attributes.iter_mut().zip(part.attributes));
    for ((col, add), f) in pairs.zip(filled) {
        let base = f.data as u64;
        fill(&mut col.data, &mut f.data, &add.data);
        if let (Some(o), Some(add)) = (col.offsets.as_mut(), add.offsets) {
            o.extend(add.iter().skip(1).map(|x| base + x));
        }
        if let (Some(v), Some(add)) = (col.validity.as_mut(), add.validity) {
            fill(v, &mut f.validity, &add);
        }
    }
}
