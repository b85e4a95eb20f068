//! Sparse reads: find the tiles whose MBR meets the query, decode them,
//! keep the cells inside the ranges, the open time range and every delete
//! condition, resolve duplicates (unless the array allows them) and sort.
//!
//! Fragment consolidation reads through the same path
//! (`read_for_consolidation`): no deduplication and no cell dropped;
//! instead each cell comes with its timestamp and the first delete that
//! removed it, merged with the fragment's own delete metadata.

use std::collections::HashSet;

use crate::condition::{CellView, Condition};
use crate::error::{Error, Result};
use crate::filter::Datatype;
use crate::fragment::{Field, FragmentMetadata};
use crate::read::order::{compare_coords, GlobalOrder};
use crate::read::tiles::{load_tiles, TileData};
use crate::read::{Column, Layout, Range, ReadQuery, ReadResult};
use crate::schema::{ArraySchema, Scalar};
use crate::snapshot::Snapshot;

/// Decoded ranges of the query, per dimension (empty = everything).
pub(crate) fn decode_ranges(
    schema: &ArraySchema,
    query: &ReadQuery,
) -> Result<Vec<Vec<(Scalar, Scalar)>>> {
    if query.ranges.len() > schema.dimensions.len() {
        return Err(Error::Usage(format!(
            "{} range lists for {} dimensions",
            query.ranges.len(),
            schema.dimensions.len()
        )));
    }
    schema
        .dimensions
        .iter()
        .enumerate()
        .map(|(d, dim)| {
            query
                .ranges
                .get(d)
                .map(|ranges| {
                    ranges
                        .iter()
                        .map(|(lo, hi)| {
                            let lo = Scalar::decode(dim.datatype, lo);
                            let hi = Scalar::decode(dim.datatype, hi);
                            match (lo, hi) {
                                (Some(lo), Some(hi)) => Ok((lo, hi)),
                                _ => Err(Error::Usage(format!(
                                    "a range of dimension {} has the wrong size",
                                    dim.name
                                ))),
                            }
                        })
                        .collect::<Result<Vec<_>>>()
                })
                .unwrap_or(Ok(Vec::new()))
        })
        .collect()
}

fn overlaps(lo: &Scalar, hi: &Scalar, ranges: &[(Scalar, Scalar)]) -> bool {
    ranges.is_empty()
        || ranges
            .iter()
            .any(|(a, b)| !hi.compare(a).is_lt() && !lo.compare(b).is_gt())
}

/// The attributes a query returns, by name, in order.
pub(crate) fn output_attributes(schema: &ArraySchema, query: &ReadQuery) -> Result<Vec<usize>> {
    match &query.attributes {
        None => Ok((0..schema.attributes.len()).collect()),
        Some(names) => names
            .iter()
            .map(|n| {
                schema
                    .attribute(n)
                    .map(|(i, _)| i)
                    .ok_or_else(|| Error::Usage(format!("no attribute named {n:?}")))
            })
            .collect(),
    }
}

/// The decoded tiles of one fragment, per field, indexed by slot.
pub(crate) struct FragmentTiles<'a> {
    pub(crate) fragment: &'a FragmentMetadata,
    /// The tiles read, in stored order (a slot is an index into this).
    pub(crate) tiles: Vec<u64>,
    pub(crate) fields: FieldTiles,
}

/// The decoded tiles of each loaded field of a fragment, looked up by
/// field without hashing: the general read path asks for a cell's field
/// once per cell, and a hashed lookup there cost as much as the work.
#[derive(Default)]
pub(crate) struct FieldTiles {
    attributes: Vec<Option<Vec<TileData>>>,
    dimensions: Vec<Option<Vec<TileData>>>,
    coords: Option<Vec<TileData>>,
    timestamps: Option<Vec<TileData>>,
    delete_timestamps: Option<Vec<TileData>>,
    delete_condition_index: Option<Vec<TileData>>,
}

impl FieldTiles {
    fn slot(&self, field: Field) -> Option<&Option<Vec<TileData>>> {
        match field {
            Field::Attribute(i) => self.attributes.get(i),
            Field::Dimension(d) => self.dimensions.get(d),
            Field::Coords => Some(&self.coords),
            Field::Timestamps => Some(&self.timestamps),
            Field::DeleteTimestamps => Some(&self.delete_timestamps),
            Field::DeleteConditionIndex => Some(&self.delete_condition_index),
        }
    }

    /// The tiles of `field`, one per slot, if it was loaded.
    pub(crate) fn get(&self, field: &Field) -> Option<&Vec<TileData>> {
        self.slot(*field)?.as_ref()
    }

    pub(crate) fn contains_key(&self, field: &Field) -> bool {
        self.get(field).is_some()
    }

    pub(crate) fn insert(&mut self, field: Field, tiles: Vec<TileData>) {
        let grow = |slots: &mut Vec<Option<Vec<TileData>>>, i: usize| {
            if slots.len() <= i {
                slots.resize_with(i + 1, || None);
            }
        };
        let slot = match field {
            Field::Attribute(i) => {
                grow(&mut self.attributes, i);
                &mut self.attributes[i]
            }
            Field::Dimension(d) => {
                grow(&mut self.dimensions, d);
                &mut self.dimensions[d]
            }
            Field::Coords => &mut self.coords,
            Field::Timestamps => &mut self.timestamps,
            Field::DeleteTimestamps => &mut self.delete_timestamps,
            Field::DeleteConditionIndex => &mut self.delete_condition_index,
        };
        *slot = Some(tiles);
    }
}

struct CellRef<'a, 'b> {
    frag: &'b FragmentTiles<'a>,
    slot: usize,
    cell: u64,
}

impl CellView for CellRef<'_, '_> {
    fn field(&self, name: &str) -> Option<(Datatype, &[u8], bool)> {
        let schema = &self.frag.fragment.schema;
        if let Some((i, a)) = schema.attribute(name) {
            let tile = self.frag.fields.get(&Field::Attribute(i))?.get(self.slot)?;
            return Some((a.datatype, tile.cell(self.cell), tile.valid(self.cell)));
        }
        let (j, d) = schema.dimension(name)?;
        let bytes = coord_bytes(self.frag, j, self.slot, self.cell)?;
        Some((d.datatype, bytes, true))
    }
}

fn coord_bytes<'a>(
    frag: &'a FragmentTiles<'_>,
    dim: usize,
    slot: usize,
    cell: u64,
) -> Option<&'a [u8]> {
    let f = frag.fragment;
    if f.version >= 5 {
        let tile = frag.fields.get(&Field::Dimension(dim))?.get(slot)?;
        return Some(tile.cell(cell));
    }
    // v1-v4: one __coords tile, unzipped (dimension after dimension) from v2
    // and in v1 under compression, otherwise zipped.
    let tile = frag.fields.get(&Field::Coords)?.get(slot)?;
    let size = f.schema.dimensions.get(dim)?.coord_size() as usize;
    let dims = f.schema.dimensions.len();
    let n = tile.cells as usize;
    let compressed = f.schema.coords_filters.filters.iter().any(|x| {
        matches!(
            x,
            crate::filter::Filter::Gzip { .. }
                | crate::filter::Filter::Zstd { .. }
                | crate::filter::Filter::Lz4 { .. }
                | crate::filter::Filter::Bzip2 { .. }
                | crate::filter::Filter::Rle { .. }
                | crate::filter::Filter::DoubleDelta { .. }
        )
    });
    let start = if f.version >= 2 || compressed {
        dim * n * size + cell as usize * size
    } else {
        (cell as usize * dims + dim) * size
    };
    tile.data.get(start..start + size)
}

fn condition_fields(c: &Condition, out: &mut HashSet<String>) {
    match c {
        Condition::And(v) | Condition::Or(v) => v.iter().for_each(|c| condition_fields(c, out)),
        Condition::Not(c) => condition_fields(c, out),
        Condition::Compare { field, .. } => {
            out.insert(field.clone());
        }
    }
}

fn u64_at(tile: Option<&TileData>, cell: u64) -> Option<u64> {
    tile.and_then(|t| t.cell(cell).try_into().ok())
        .map(u64::from_le_bytes)
}

struct Candidate {
    frag: usize,
    slot: usize,
    cell: u64,
    coords: Vec<Scalar>,
    timestamp: u64,
    /// Removed by a delete; still hides older duplicates (TileDB resolves
    /// duplicates before it applies deletes).
    deleted: bool,
    /// Consolidation only: the delete that removed the cell, as its
    /// timestamp and its index in the array's conditions.
    deleted_by: Option<(u64, u64)>,
    /// How many times the cell is returned: the number of query ranges
    /// holding it (overlapping ranges repeat it), multiplied across dimensions.
    copies: usize,
}

fn range_hits(value: &Scalar, ranges: &[(Scalar, Scalar)]) -> usize {
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
fn coalesce(ranges: &[(Scalar, Scalar)]) -> Vec<(Scalar, Scalar)> {
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
fn merge_string_ranges(ranges: &[Range]) -> Vec<Range> {
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

/// Every cell of every visible fragment as fragment consolidation reads
/// them (TileDB's reader "with timestamps" and without purging deletes): no
/// deduplication, no cell dropped by a delete; instead each cell carries its
/// timestamp and the delete that removed it.
pub(crate) struct TimedCells {
    /// The cells, in global order (equal coordinates newest first).
    pub(crate) result: ReadResult,
    /// Each cell's write timestamp (its `t`, else its fragment's t1).
    pub(crate) timestamps: Vec<u64>,
    /// The delete that removed each cell: its timestamp and its index in
    /// [`Snapshot::conditions`].
    pub(crate) deleted_by: Vec<Option<(u64, u64)>>,
}

/// The tiles of a sparse fragment whose MBR meets `ranges`, in stored order.
fn touched_tiles(
    array: &Snapshot,
    fragment: &FragmentMetadata,
    ranges: &[Vec<(Scalar, Scalar)>],
) -> Result<Vec<u64>> {
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

/// Cells a row- or column-major sparse read sorts at once. Above this the
/// read is cut into bands along the outermost dimension of the result
/// order (see [`sorted_bands`]): each band's tiles are decoded, its cells
/// sorted and gathered, and appended to the result before the next band,
/// so that memory holds the result and one band's work rather than every
/// decoded tile and a sort key for every cell.
const BAND_CELLS: u64 = 4 << 20;

/// A band of the outer dimension's values, both ends included.
type Band = (i128, i128);

/// Bands of the outermost dimension (in the result order) that cut a row-
/// or column-major read into parts of about `budget` cells, each part
/// sorted on its own and the parts in order: `(dimension, [(lo, hi)])`.
/// `None` when the read is not worth cutting or cannot be cut this way: it
/// is small, not row- or column-major, gives several ranges for a
/// dimension (the order of the results then depends on the ranges), the
/// outer dimension is not an integer, or the tiles overlap so much along it
/// that the bands would decode much of the data more than once.
fn sorted_bands(
    array: &Snapshot,
    query: &ReadQuery,
    budget: u64,
) -> Result<Option<(usize, Vec<Band>)>> {
    let schema = array.schema();
    let n = schema.dimensions.len();
    let outer = match query.layout {
        Layout::RowMajor => 0,
        Layout::ColMajor => n.saturating_sub(1),
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
fn read_in_bands(
    array: &Snapshot,
    query: &ReadQuery,
    outer: usize,
    bands: &[Band],
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
        let (part, _) = run(array, &band, false)?;
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
struct Filled {
    data: usize,
    validity: usize,
}

impl Filled {
    /// Gives `col` room for about `cells` cells like those of `first`, as
    /// untouched zeroed memory (its length is the room; `Filled` counts
    /// what holds cells).
    fn with_room(col: &mut Column, first: &Column, cells: usize) -> Filled {
        const MOST: usize = 1 << 30;
        let per_cell = first.data.len().div_ceil(first.len().max(1));
        col.data = crate::read::memory::zeroed_bytes(cells.saturating_mul(per_cell).min(MOST));
        if let Some(o) = col.offsets.as_mut() {
            crate::read::memory::reserve_hint(o, cells);
        }
        if let Some(v) = col.validity.as_mut() {
            *v = crate::read::memory::zeroed_bytes(cells.min(MOST));
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
fn fill(room: &mut Vec<u8>, filled: &mut usize, bytes: &[u8]) {
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
fn append_result(into: &mut ReadResult, filled: &mut [Filled], part: ReadResult) {
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

/// Consolidation: one cell's timestamp and the delete that removed it.
type CellHistory = (u64, Option<(u64, u64)>);

/// Runs a sparse read.
pub fn read(array: &Snapshot, query: &ReadQuery) -> Result<ReadResult> {
    let merged;
    let query = if matches!(query.layout, Layout::Global | Layout::Unordered)
        && query.ranges.iter().any(|r| r.len() > 1)
    {
        let mut q = query.clone();
        for (ranges, dim) in q.ranges.iter_mut().zip(&array.schema().dimensions) {
            if dim.var {
                *ranges = merge_string_ranges(ranges);
            }
        }
        merged = q;
        &merged
    } else {
        query
    };
    read_with_band_budget(array, query, BAND_CELLS)
}

fn read_with_band_budget(array: &Snapshot, query: &ReadQuery, budget: u64) -> Result<ReadResult> {
    if let Some((outer, bands)) = sorted_bands(array, query, budget)? {
        return read_in_bands(array, query, outer, &bands);
    }
    run(array, query, false).map(|(result, _)| result)
}

/// Reads every cell for consolidation (see [`TimedCells`]).
pub(crate) fn read_for_consolidation(array: &Snapshot) -> Result<TimedCells> {
    let query = ReadQuery {
        layout: Layout::Global,
        ..Default::default()
    };
    let (result, cells) = run(array, &query, true)?;
    Ok(TimedCells {
        result,
        timestamps: cells.iter().map(|c| c.0).collect(),
        deleted_by: cells.into_iter().map(|c| c.1).collect(),
    })
}

/// The delete that a fragment's own delete metadata records for one cell
/// (`dt`, `dci`), its index converted from the fragment's processed
/// conditions to the array's conditions (by marker).
fn stored_delete(
    frag: &FragmentTiles<'_>,
    processed: &[String],
    conditions: &[crate::condition::DeleteCondition],
    slot: usize,
    cell: u64,
) -> Result<Option<(u64, u64)>> {
    let tile_of = |field| frag.fields.get(&field).and_then(|t| t.get(slot));
    let name = &frag.fragment.name;
    let (Some(dt), Some(dci)) = (
        u64_at(tile_of(Field::DeleteTimestamps), cell),
        u64_at(tile_of(Field::DeleteConditionIndex), cell),
    ) else {
        return Err(Error::corrupt(
            0,
            "delete metadata",
            format!("a dt or dci tile of {name} is short"),
        ));
    };
    if dt == u64::MAX {
        return Ok(None);
    }
    if dci == u64::MAX {
        return Ok(Some((dt, u64::MAX)));
    }
    let marker = usize::try_from(dci)
        .ok()
        .and_then(|i| processed.get(i))
        .ok_or_else(|| {
            Error::corrupt(
                0,
                "dci",
                format!(
                    "condition index {dci} of {name} beyond its {} processed conditions",
                    processed.len()
                ),
            )
        })?;
    let index = conditions
        .iter()
        .position(|c| &c.marker == marker)
        .ok_or_else(|| {
            Error::corrupt(
                0,
                "processed conditions",
                format!("{name} refers to {marker}, which the array does not hold"),
            )
        })?;
    Ok(Some((dt, index as u64)))
}

/// A sparse read; with `consolidating`, the cells of every fragment without
/// deduplication or deletes, each with its timestamp and the delete that
/// removed it.
fn run(
    array: &Snapshot,
    query: &ReadQuery,
    consolidating: bool,
) -> Result<(ReadResult, Vec<CellHistory>)> {
    let schema = array.schema();
    let storage = array.storage();
    let key = array.options().key;
    let (open_start, open_end) = (
        array.options().timestamp_start,
        array.options().timestamp_end,
    );
    let ranges = decode_ranges(schema, query)?;
    let attributes = output_attributes(schema, query)?;

    let mut loaded: Vec<FragmentTiles<'_>> = Vec::new();
    // Per fragment: the tiles the ranges touch and the fields to load.
    let mut planned: Vec<(&FragmentMetadata, Vec<u64>, Vec<Field>)> = Vec::new();
    for fragment in array.fragments() {
        let fragment: &FragmentMetadata = fragment;
        if fragment.dense || fragment.non_empty_domain.is_none() {
            continue;
        }
        let fschema = &fragment.schema;
        let tiles = touched_tiles(array, fragment, &ranges)?;
        // Fields: coordinates, timestamps, delete metadata, condition
        // fields and the output attributes.
        let mut fields: Vec<Field> = if fragment.version >= 5 {
            (0..fschema.dimensions.len())
                .map(Field::Dimension)
                .collect()
        } else {
            vec![Field::Coords]
        };
        if fragment.has_timestamps {
            fields.push(Field::Timestamps);
        }
        if fragment.has_delete_meta {
            fields.push(Field::DeleteTimestamps);
            if consolidating {
                fields.push(Field::DeleteConditionIndex);
            }
        }
        let mut names = HashSet::new();
        for c in array.conditions() {
            condition_fields(&c.keep, &mut names);
        }
        for &a in &attributes {
            names.insert(schema.attributes[a].name.clone());
        }
        for name in names {
            if let Some((i, _)) = fschema.attribute(&name) {
                fields.push(Field::Attribute(i));
            }
        }
        planned.push((fragment, tiles, fields));
    }

    // A stored-order read of one fragment streams its tiles into the result
    // instead of holding them all.
    if !consolidating {
        let mut touched = planned.iter().filter(|(_, tiles, _)| !tiles.is_empty());
        if let (Some((fragment, tiles, _)), None) = (touched.next(), touched.next()) {
            if let Some(result) = crate::read::sparse_sorted::stream_stored_order(
                array,
                query,
                fragment,
                tiles,
                &attributes,
            ) {
                return result.map(|r| (r, Vec::new()));
            }
        }
    }

    for (fragment, tiles, fields) in planned {
        let mut map = FieldTiles::default();
        if !tiles.is_empty() {
            for field in fields {
                if map.contains_key(&field) {
                    continue;
                }
                let data = load_tiles(storage, fragment, field, &tiles, 0, key.as_ref())?;
                map.insert(field, data);
            }
        }
        loaded.push(FragmentTiles {
            fragment,
            tiles,
            fields: map,
        });
    }

    if !consolidating {
        if let Some(result) =
            crate::read::sparse_sorted::try_read(array, query, &loaded, &attributes)
        {
            return result.map(|r| (r, Vec::new()));
        }
    }

    // Candidates inside the ranges and the open time range, marked when a
    // delete removes them.
    let mut candidates: Vec<Candidate> = Vec::new();
    for (fi, frag) in loaded.iter().enumerate() {
        let f = frag.fragment;
        let (t1, t2) = f.name.timestamp_range();
        let processed: Vec<String> = if f.has_delete_meta {
            f.processed_conditions(storage)?
        } else {
            Vec::new()
        };
        let applicable: Vec<_> = array
            .conditions()
            .iter()
            .enumerate()
            .filter(|(_, c)| !(f.has_delete_meta && processed.iter().any(|p| p == &c.marker)))
            .filter(|(_, c)| c.timestamp >= t1)
            .collect();
        for (slot, &tile) in frag.tiles.iter().enumerate() {
            let cells = f.cell_num(tile, 0);
            for cell in 0..cells {
                let mut coords = Vec::with_capacity(schema.dimensions.len());
                for (d, dim) in f.schema.dimensions.iter().enumerate() {
                    let bytes = coord_bytes(frag, d, slot, cell).ok_or_else(|| {
                        Error::corrupt(
                            0,
                            "coordinates",
                            format!("tile {tile} of {} is short", f.name),
                        )
                    })?;
                    coords.push(Scalar::decode(dim.datatype, bytes).ok_or_else(|| {
                        Error::corrupt(0, "coordinates", "a coordinate of the wrong size")
                    })?);
                }
                let copies: usize = coords
                    .iter()
                    .zip(&ranges)
                    .map(|(c, r)| range_hits(c, r))
                    .product();
                if copies == 0 {
                    continue;
                }
                let cell_t = u64_at(
                    frag.fields
                        .get(&Field::Timestamps)
                        .and_then(|t| t.get(slot)),
                    cell,
                );
                let timestamp = cell_t.unwrap_or(t1);
                if timestamp < open_start || timestamp > open_end {
                    continue;
                }
                // The first delete (in timestamp order) that removes the cell.
                let view = CellRef { frag, slot, cell };
                let deleted_by = applicable
                    .iter()
                    .find(|(_, c)| {
                        let keep = if cell_t.is_none() || c.timestamp > t2 {
                            c.keep.eval(&view)
                        } else {
                            c.keep.eval(&view) || timestamp > c.timestamp
                        };
                        !keep
                    })
                    .map(|(i, c)| (c.timestamp, *i as u64));
                let mut kept = deleted_by.is_none();
                if consolidating {
                    // Deletes recorded in the fragment's own metadata win
                    // unless an unprocessed one came strictly earlier.
                    let stored = if f.has_delete_meta {
                        stored_delete(frag, &processed, array.conditions(), slot, cell)?
                    } else {
                        None
                    };
                    let deleted_by = match (deleted_by, stored) {
                        (Some(new), Some(old)) if new.0 < old.0 => Some(new),
                        (new, None) => new,
                        (_, old) => old,
                    };
                    candidates.push(Candidate {
                        frag: fi,
                        slot,
                        cell,
                        coords,
                        timestamp,
                        deleted: false,
                        deleted_by,
                        copies,
                    });
                    continue;
                }
                if kept && f.has_delete_meta {
                    if let Some(dt) = u64_at(
                        frag.fields
                            .get(&Field::DeleteTimestamps)
                            .and_then(|t| t.get(slot)),
                        cell,
                    ) {
                        let deleted = if open_end == u64::MAX {
                            dt < open_end
                        } else {
                            dt <= open_end
                        };
                        if deleted {
                            kept = false;
                        }
                    }
                }
                candidates.push(Candidate {
                    frag: fi,
                    slot,
                    cell,
                    coords,
                    timestamp,
                    deleted: !kept,
                    deleted_by: None,
                    copies,
                });
            }
        }
    }

    // Duplicates: the latest (timestamp, fragment index) wins.
    if !schema.allows_dups && !consolidating {
        candidates.sort_by(|a, b| {
            compare_coords(&a.coords, &b.coords, false)
                .then_with(|| (a.timestamp, a.frag).cmp(&(b.timestamp, b.frag)))
        });
        let mut kept: Vec<Candidate> = Vec::with_capacity(candidates.len());
        for c in candidates {
            if let Some(last) = kept.last_mut() {
                if compare_coords(&last.coords, &c.coords, false).is_eq() {
                    *last = c;
                    continue;
                }
            }
            kept.push(c);
        }
        candidates = kept;
    }
    // TileDB decides between range order and coordinate order (below) on the
    // results before it applies deletes (query/legacy/reader.cc: conditions
    // run on the result cell slabs, after the result coordinates are sorted).
    let one_fragment = candidates.windows(2).all(|w| w[0].frag == w[1].frag);
    candidates.retain(|c| !c.deleted);

    // Cells with equal coordinates (duplicates) come newest fragment first,
    // then in their stored order, as TileDB returns them.
    let tie = |a: &Candidate, b: &Candidate| {
        (b.timestamp, b.frag)
            .cmp(&(a.timestamp, a.frag))
            .then_with(|| (a.slot, a.cell).cmp(&(b.slot, b.cell)))
    };
    match query.layout {
        Layout::RowMajor => candidates
            .sort_by(|a, b| compare_coords(&a.coords, &b.coords, false).then_with(|| tie(a, b))),
        Layout::ColMajor => candidates
            .sort_by(|a, b| compare_coords(&a.coords, &b.coords, true).then_with(|| tie(a, b))),
        Layout::Global | Layout::Unordered => {
            let order = GlobalOrder::new(schema);
            let mut keyed: Vec<_> = candidates
                .into_iter()
                .map(|c| (order.key(&c.coords), c))
                .collect();
            keyed.sort_by(|(ka, a), (kb, b)| {
                order
                    .compare(ka, &a.coords, kb, &b.coords)
                    .then_with(|| tie(a, b))
            });
            candidates = keyed.into_iter().map(|(_, c)| c).collect();
        }
    }

    // Several ranges (checked against TileDB 2.30): global and unordered
    // reads merge overlapping ranges, so every cell comes once; row- and
    // column-major reads return a cell once per range combination holding
    // it. TileDB's row/col-major sparse reader (query/legacy/reader.cc,
    // compute_subarray_coords) collects results range by range and sorts
    // them all by coordinate, except on a one-dimensional array whose
    // results (deleted cells included) all come from one fragment: those
    // stay in range order (the
    // ranges as given, contiguous integer ranges coalesced), each range in
    // coordinate order.
    let ordered = matches!(query.layout, Layout::RowMajor | Layout::ColMajor);
    let mut order: Vec<usize> = Vec::with_capacity(candidates.len());
    match (ordered, ranges.as_slice()) {
        (true, [only]) if one_fragment && only.len() > 1 => {
            for (lo, hi) in coalesce(only) {
                order.extend(candidates.iter().enumerate().filter_map(|(i, c)| {
                    let v = &c.coords[0];
                    (!v.compare(&lo).is_lt() && !v.compare(&hi).is_gt()).then_some(i)
                }));
            }
        }
        _ => {
            for (i, c) in candidates.iter().enumerate() {
                order.extend(std::iter::repeat_n(i, if ordered { c.copies } else { 1 }));
            }
        }
    }

    // Gather.
    let mut dims: Vec<Column> = schema
        .dimensions
        .iter()
        .map(|d| {
            Column::new(
                &d.name,
                d.datatype,
                if d.var { None } else { Some(1) },
                false,
            )
        })
        .collect();
    let mut attrs: Vec<Column> = attributes
        .iter()
        .map(|&a| {
            let a = &schema.attributes[a];
            Column::new(&a.name, a.datatype, a.cell_val_num, a.nullable)
        })
        .collect();
    // Each output attribute's index in each fragment's own schema (found by
    // name once, not per cell: schemas evolve, so indices may differ).
    let fragment_attributes: Vec<Vec<Option<usize>>> = loaded
        .iter()
        .map(|frag| {
            attributes
                .iter()
                .map(|&a| {
                    let name = &schema.attributes[a].name;
                    frag.fragment.schema.attribute(name).map(|(i, _)| i)
                })
                .collect()
        })
        .collect();
    for c in order.iter().map(|&i| &candidates[i]) {
        let frag = &loaded[c.frag];
        for (d, col) in dims.iter_mut().enumerate() {
            col.push(
                coord_bytes(frag, d, c.slot, c.cell).unwrap_or_default(),
                true,
            );
        }
        for ((col, &a), index) in attrs
            .iter_mut()
            .zip(&attributes)
            .zip(&fragment_attributes[c.frag])
        {
            let attr = &schema.attributes[a];
            let tile = index.and_then(|i| frag.fields.get(&Field::Attribute(i))?.get(c.slot));
            match tile {
                Some(tile) => col.push(tile.cell(c.cell), tile.valid(c.cell)),
                None => col.push(&attr.fill, attr.fill_validity),
            }
        }
    }
    let history = if consolidating {
        order
            .iter()
            .map(|&i| (candidates[i].timestamp, candidates[i].deleted_by))
            .collect()
    } else {
        Vec::new()
    };
    Ok((
        ReadResult {
            dimensions: dims,
            attributes: attrs,
        },
        history,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::OpenOptions;

    /// Two overlapping fragments (duplicates resolved across them), a
    /// delete, a nullable and a var-sized attribute, capacity 3, stored in
    /// row-major and in column-major order: read row- and column-major,
    /// whole and through ranges, cut into bands of a few dozen cells, the
    /// result is the unbanded read's, cell for cell. Bands are only cut
    /// where the tiles allow it (along the first dimension of the stored
    /// order); where they are, the test requires several.
    #[test]
    fn banded_sorted_reads_equal_the_whole_read() {
        for order in ["row-major", "col-major"] {
            let array_dir = banded_test_array(order);
            let array = Snapshot::open_path(array_dir.path().join("array"), OpenOptions::default())
                .expect("open");
            let range64 =
                |lo: i64, hi: i64| vec![(lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec())];
            let range32 =
                |lo: i32, hi: i32| vec![(lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec())];
            for layout in [Layout::RowMajor, Layout::ColMajor] {
                for ranges in [
                    Vec::new(),
                    vec![range64(7, 41)],
                    vec![Vec::new(), range32(3, 17)],
                ] {
                    let query = ReadQuery {
                        ranges,
                        layout,
                        ..Default::default()
                    };
                    let whole = run(&array, &query, false).unwrap().0;
                    assert!(whole.cell_count() > 20, "{order} {layout:?}");
                    let banded = read_with_band_budget(&array, &query, 30).unwrap();
                    assert_eq!(
                        result_cells(&banded),
                        result_cells(&whole),
                        "{order} {layout:?} {:?}",
                        query.ranges
                    );
                    let along_stored_order = (order == "row-major") == (layout == Layout::RowMajor);
                    if along_stored_order {
                        let (outer, bands) = sorted_bands(&array, &query, 30)
                            .unwrap()
                            .unwrap_or_else(|| panic!("{order} {layout:?}: not cut into bands"));
                        let least = if query.ranges.is_empty() { 3 } else { 2 };
                        assert!(
                            bands.len() >= least,
                            "{order} {layout:?} {:?}: {} bands",
                            query.ranges,
                            bands.len()
                        );
                        assert_eq!(outer, if layout == Layout::RowMajor { 0 } else { 1 });
                    }
                }
            }
        }
    }

    fn result_cells(r: &ReadResult) -> Vec<Vec<(Vec<u8>, bool)>> {
        r.dimensions
            .iter()
            .chain(&r.attributes)
            .map(|c| {
                (0..c.len())
                    .map(|i| (c.cell(i).0.to_vec(), c.cell(i).1))
                    .collect()
            })
            .collect()
    }

    fn banded_test_array(order: &str) -> tempfile::TempDir {
        let n = 400;
        let x: Vec<String> = (0..n).map(|i| ((i * 37) % 50).to_string()).collect();
        let y: Vec<String> = (0..n).map(|i| ((i * 11) % 23).to_string()).collect();
        let a: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        let s: Vec<String> = (0..n)
            .map(|i| format!("\"{}\"", "s".repeat(i % 4)))
            .collect();
        let v: Vec<String> = (0..n).map(|i| ((i % 3 != 0) as u8).to_string()).collect();
        let half = n / 2;
        let recipe = format!(
            r#"id = "banded"
title = "banded"
level = "required"
[schema]
type = "sparse"
capacity = 3
tile_order = "{order}"
cell_order = "{order}"
dims = [
  {{ name = "x", type = "INT64", domain = [0, 99], tile = 10 }},
  {{ name = "y", type = "INT32", domain = [0, 99], tile = 10 }},
]
attrs = [
  {{ name = "a", type = "INT32", nullable = true }},
  {{ name = "s", type = "STRING_UTF8", cell_val_num = "var" }},
]

[[steps]]
op = "write"
timestamp = 10
coords = {{ x = [{x1}], y = [{y1}] }}
data = {{ a = [{a1}], s = [{s1}] }}
validity = {{ a = [{v1}] }}

[[steps]]
op = "delete"
timestamp = 20
condition = "a < 5"

[[steps]]
op = "write"
timestamp = 30
coords = {{ x = [{x2}], y = [{y2}] }}
data = {{ a = [{a2}], s = [{s2}] }}
validity = {{ a = [{v2}] }}
"#,
            x1 = x[..half].join(", "),
            y1 = y[..half].join(", "),
            a1 = a[..half].join(", "),
            s1 = s[..half].join(", "),
            v1 = v[..half].join(", "),
            x2 = x[half..].join(", "),
            y2 = y[half..].join(", "),
            a2 = a[half..].join(", "),
            s2 = s[half..].join(", "),
            v2 = v[half..].join(", "),
        );
        let dir = tempfile::tempdir().unwrap();
        crate::recipe::replay_case(&recipe, dir.path()).expect("replay");
        dir
    }
}
