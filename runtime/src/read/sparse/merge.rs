//! The general sparse path: every touched cell becomes a candidate, kept
//! when inside the ranges, the open time range and no delete removes it,
//! merged across fragments in the result order with duplicates resolved.

use std::collections::HashSet;

use crate::error::{Cause, Error, Result};
use crate::fragment::{Field, FragmentMetadata};
use crate::read::order::{compare_coords, GlobalOrder};
use crate::read::query::{decode_ranges, output_attributes, ReadQuery, ResultOrder};
use crate::read::result::{Column, ReadResult};
use crate::read::skip::Prune;
use crate::read::sparse::cells::*;
use crate::read::sparse::fragment_tiles::{DecodedTilesByField, FragmentTiles};
use crate::read::sparse::ranges::{coalesce, range_hits, touched_tiles};
use crate::read::tiles::{load_tiles, prefetch_tiles, TileData, WantedTiles};
use crate::schema::{ArraySchema, Scalar};
use crate::snapshot::Snapshot;
use crate::storage::on_io_threads;
use rayon::prelude::*;

/// Consolidation: one cell's timestamp and the delete that removed it.
pub(crate) type CellHistory = (u64, Option<(u64, u64)>);

/// A fragment a sparse read touches: the tiles its ranges meet and the
/// fields to load from them.
type Planned<'a> = (&'a FragmentMetadata, Vec<u64>, Vec<Field>);

/// How a one-dimensional row- or column-major read of several ranges
/// orders its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum RangeOrder {
    /// TileDB's rule (see `result_order`): range order when the results
    /// come from one fragment, coordinate order otherwise.
    #[default]
    ByFragments,
    /// Coordinate order whatever the fragments: a part of a read whose
    /// results, taken whole, come from several fragments.
    Coordinates,
}

/// A sparse read; with `consolidating`, the cells of every fragment without
/// deduplication or deletes, each with its timestamp and the delete that
/// removed it.
pub(crate) fn run(
    array: &Snapshot,
    query: &ReadQuery,
    consolidating: bool,
    prune: Prune<'_>,
) -> Result<(ReadResult, Vec<CellHistory>)> {
    run_ordered(array, query, consolidating, prune, RangeOrder::ByFragments)
}

/// [`run`], with the order of a one-dimensional multi-range read chosen.
pub(crate) fn run_ordered(
    array: &Snapshot,
    query: &ReadQuery,
    consolidating: bool,
    prune: Prune<'_>,
    range_order: RangeOrder,
) -> Result<(ReadResult, Vec<CellHistory>)> {
    let schema = array.schema();
    let ranges = decode_ranges(schema, query)?;
    let attributes = output_attributes(schema, query)?;
    // A one-dimensional row- or column-major read of several ranges keeps
    // range order when its results come from one fragment (see
    // `result_order`): leaving a fragment's tiles out could change that.
    let order_by_fragments = matches!(query.layout, ResultOrder::RowMajor | ResultOrder::ColMajor)
        && ranges.len() == 1
        && ranges[0].len() > 1
        && range_order == RangeOrder::ByFragments;
    let prune = if consolidating || order_by_fragments {
        Prune::default()
    } else {
        prune
    };
    let planned = plan(array, &ranges, &attributes, consolidating, prune)?;

    // A stored-order read of one fragment streams its tiles into the result
    // instead of holding them all.
    if !consolidating {
        let mut touched = planned.iter().filter(|(_, tiles, _)| !tiles.is_empty());
        if let (Some((fragment, tiles, _)), None) = (touched.next(), touched.next()) {
            if let Some(result) = crate::read::sparse::stream::stream_stored_order(
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

    let loaded = load(array, planned)?;

    if !consolidating {
        if let Some(result) =
            crate::read::sparse::sorted::try_read(array, query, &loaded, &attributes)
        {
            return result.map(|r| (r, Vec::new()));
        }
    }

    // Candidates inside the ranges and the open time range, marked when a
    // delete removes them.
    let mut candidates: Vec<Candidate> = Vec::new();
    for (fi, frag) in loaded.iter().enumerate() {
        fragment_candidates(array, fi, frag, &ranges, consolidating, &mut candidates)?;
    }

    // Duplicates: the latest (timestamp, fragment index) wins.
    if !schema.allows_dups && !consolidating {
        candidates = latest_of_duplicates(candidates);
    }
    // TileDB decides between range order and coordinate order (below) on the
    // results before it applies deletes (query/legacy/reader.cc: conditions
    // run on the result cell slabs, after the result coordinates are sorted).
    let one_fragment = candidates.windows(2).all(|w| w[0].frag == w[1].frag)
        && range_order == RangeOrder::ByFragments;
    candidates.retain(|c| !c.deleted);

    sort_candidates(schema, query.layout, &mut candidates);
    let order = result_order(query.layout, &ranges, &candidates, one_fragment);
    let fragments: Vec<&FragmentTiles<'_>> = loaded.iter().collect();
    let result = gather(schema, &attributes, &fragments, &candidates, &order);
    let history = if consolidating {
        order
            .iter()
            .map(|&i| (candidates[i].timestamp, candidates[i].deleted_by))
            .collect()
    } else {
        Vec::new()
    };
    Ok((result, history))
}

/// The fragments (by name) the results of `query` come from, as TileDB's
/// choice between range order and coordinate order counts them: after
/// duplicates are resolved, before deletes apply. Only coordinates,
/// timestamps and delete fields are read.
pub(crate) fn result_fragments(
    array: &Snapshot,
    query: &ReadQuery,
) -> Result<Vec<crate::directory::TimestampedName>> {
    let schema = array.schema();
    let ranges = decode_ranges(schema, query)?;
    let planned = plan(array, &ranges, &[], false, Prune::default())?;
    let loaded = load(array, planned)?;
    let mut candidates: Vec<Candidate> = Vec::new();
    for (fi, frag) in loaded.iter().enumerate() {
        fragment_candidates(array, fi, frag, &ranges, false, &mut candidates)?;
    }
    if !schema.allows_dups {
        candidates = latest_of_duplicates(candidates);
    }
    let mut seen: Vec<usize> = candidates.iter().map(|c| c.frag).collect();
    seen.sort_unstable();
    seen.dedup();
    Ok(seen
        .into_iter()
        .map(|fi| loaded[fi].fragment.name.clone())
        .collect())
}

/// Per visible sparse fragment with cells: the tiles the ranges touch and
/// the fields to load (coordinates, timestamps, delete metadata, condition
/// fields and the output attributes).
fn plan<'a>(
    array: &'a Snapshot,
    ranges: &[Vec<(Scalar, Scalar)>],
    attributes: &[usize],
    consolidating: bool,
    prune: Prune<'_>,
) -> Result<Vec<Planned<'a>>> {
    let fragments: Vec<&FragmentMetadata> = array
        .fragments()
        .iter()
        .map(|f| &**f)
        .filter(|f| !f.dense && f.non_empty_domain.is_some())
        .collect();
    // The R-trees, each a read of its fragment's metadata file: all at once
    // over a network (the first error in fragment order reported).
    let touched: Vec<Result<Vec<u64>>> = on_io_threads(array.storage(), fragments.len(), || {
        fragments
            .par_iter()
            .map(|fragment| touched_tiles(array, fragment, ranges))
            .collect()
    });
    let mut planned: Vec<Planned<'a>> = Vec::new();
    for (fragment, tiles) in fragments.into_iter().zip(touched) {
        let mut tiles = tiles?;
        if !prune.is_empty() {
            tiles = prune.tiles(array, fragment, tiles)?;
        }
        let fields = fields_for(array, fragment, attributes, consolidating);
        planned.push((fragment, tiles, fields));
    }

    Ok(planned)
}

/// The fields a sparse read loads from a fragment's tiles: coordinates,
/// timestamps, delete metadata, condition fields and the output attributes.
pub(super) fn fields_for(
    array: &Snapshot,
    fragment: &FragmentMetadata,
    attributes: &[usize],
    consolidating: bool,
) -> Vec<Field> {
    let schema = array.schema();
    let fschema = &fragment.schema;
    let mut fields: Vec<Field> =
        if crate::format::generated::dimensions_stored_apart(fragment.version) {
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
    for &a in attributes {
        names.insert(schema.attributes[a].name.clone());
    }
    for name in names {
        if let Some((i, _)) = fschema.attribute(&name) {
            fields.push(Field::Attribute(i));
        }
    }
    fields
}

/// Decodes the planned tiles of each fragment.
pub(super) fn load<'a>(
    array: &Snapshot,
    planned: Vec<Planned<'a>>,
) -> Result<Vec<FragmentTiles<'a>>> {
    let storage = array.storage();
    let key = array.options().key;
    let wanted: Vec<WantedTiles<'_>> = planned
        .iter()
        .flat_map(|(fragment, tiles, fields)| {
            fields.iter().map(move |&field| WantedTiles {
                fragment,
                field,
                tiles,
            })
        })
        .collect();
    prefetch_tiles(storage, &wanted);
    drop(wanted);
    let mut loaded: Vec<FragmentTiles<'_>> = Vec::new();
    for (fragment, tiles, mut fields) in planned {
        let mut map = DecodedTilesByField::default();
        if !tiles.is_empty() {
            // The fields side by side, not one after another: a small read
            // (a few tiles of each) would otherwise wait on each field's
            // handful of chunks in turn, with a core idle.
            let mut seen = HashSet::new();
            fields.retain(|field| seen.insert(*field));
            let decoded: Vec<Vec<TileData>> = fields
                .par_iter()
                .map(|&field| load_tiles(storage, fragment, field, &tiles, 0, key.as_ref()))
                .collect::<Result<_>>()?;
            for (field, data) in fields.into_iter().zip(decoded) {
                map.insert(field, data);
            }
        }
        loaded.push(FragmentTiles {
            fragment,
            tiles,
            fields: map,
        });
    }
    Ok(loaded)
}

/// The cells of one fragment inside the ranges and the open time range,
/// marked when a delete removes them (with `consolidating`, each with the
/// delete that removed it instead).
pub(super) fn fragment_candidates(
    array: &Snapshot,
    fi: usize,
    frag: &FragmentTiles<'_>,
    ranges: &[Vec<(Scalar, Scalar)>],
    consolidating: bool,
    candidates: &mut Vec<Candidate>,
) -> Result<()> {
    let schema = array.schema();
    let storage = array.storage();
    let (open_start, open_end) = (
        array.options().timestamp_start,
        array.options().timestamp_end,
    );
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
                    let at = format!("fragment {}, tile {tile}", f.name);
                    Error::corrupt(0, "coordinates", Cause::EndsEarly).within(at)
                })?;
                coords.push(Scalar::decode(dim.datatype, bytes).ok_or_else(|| {
                    let cause = Cause::Inconsistent {
                        what: "a coordinate's byte length",
                        expected: dim.datatype.size(),
                        found: bytes.len() as u64,
                    };
                    Error::corrupt(0, "coordinates", cause)
                })?);
            }
            let copies: usize = coords
                .iter()
                .zip(ranges)
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
    Ok(())
}

/// Of the candidates with equal coordinates, the latest (timestamp,
/// fragment index, then the last stored). In place: the candidates are
/// never held twice.
pub(super) fn latest_of_duplicates(mut candidates: Vec<Candidate>) -> Vec<Candidate> {
    candidates.sort_by(|a, b| {
        compare_coords(&a.coords, &b.coords, false).then_with(|| {
            (b.timestamp, b.frag, b.slot, b.cell).cmp(&(a.timestamp, a.frag, a.slot, a.cell))
        })
    });
    // The first of each run of equal coordinates is the latest.
    candidates.dedup_by(|later, kept| compare_coords(&later.coords, &kept.coords, false).is_eq());
    candidates
}

/// Sorts the candidates into the result order.
pub(super) fn sort_candidates(
    schema: &ArraySchema,
    layout: ResultOrder,
    candidates: &mut [Candidate],
) {
    // Cells with equal coordinates (duplicates) come newest fragment first,
    // then in their stored order, as TileDB returns them.
    let tie = |a: &Candidate, b: &Candidate| {
        (b.timestamp, b.frag)
            .cmp(&(a.timestamp, a.frag))
            .then_with(|| (a.slot, a.cell).cmp(&(b.slot, b.cell)))
    };
    match layout {
        ResultOrder::RowMajor => candidates
            .sort_by(|a, b| compare_coords(&a.coords, &b.coords, false).then_with(|| tie(a, b))),
        ResultOrder::ColMajor => candidates
            .sort_by(|a, b| compare_coords(&a.coords, &b.coords, true).then_with(|| tie(a, b))),
        ResultOrder::Global | ResultOrder::Unordered => {
            // The keys apart and a permutation sorted, then applied in
            // place: the candidates are never held twice (a copy of each
            // beside its key would double the merge's peak).
            let order = GlobalOrder::new(schema);
            let keys: Vec<_> = candidates.iter().map(|c| order.key(&c.coords)).collect();
            let mut permutation: Vec<usize> = (0..candidates.len()).collect();
            permutation.sort_by(|&i, &j| {
                let (a, b) = (&candidates[i], &candidates[j]);
                order
                    .compare(&keys[i], &a.coords, &keys[j], &b.coords)
                    .then_with(|| tie(a, b))
            });
            drop(keys);
            permute_in_place(candidates, permutation);
        }
    }
}

/// Reorders `items` so that item `i` becomes the one at `permutation[i]`,
/// following each cycle of the permutation with swaps.
fn permute_in_place<T>(items: &mut [T], mut permutation: Vec<usize>) {
    const DONE: usize = usize::MAX;
    for start in 0..items.len() {
        let mut current = start;
        while permutation[current] != DONE {
            let next = std::mem::replace(&mut permutation[current], DONE);
            if next == start {
                break;
            }
            items.swap(current, next);
            current = next;
        }
    }
}

/// The candidates in result order, by index, repeated per range
/// combination where the layout asks for it.
pub(super) fn result_order(
    layout: ResultOrder,
    ranges: &[Vec<(Scalar, Scalar)>],
    candidates: &[Candidate],
    one_fragment: bool,
) -> Vec<usize> {
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
    let ordered = matches!(layout, ResultOrder::RowMajor | ResultOrder::ColMajor);
    let mut order: Vec<usize> = Vec::with_capacity(candidates.len());
    match (ordered, ranges) {
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
    order
}

/// The result columns of the candidates in `order`.
pub(super) fn gather(
    schema: &ArraySchema,
    attributes: &[usize],
    loaded: &[&FragmentTiles<'_>],
    candidates: &[Candidate],
    order: &[usize],
) -> ReadResult {
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
            .zip(attributes)
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
    ReadResult {
        dimensions: dims,
        attributes: attrs,
    }
}

#[cfg(test)]
mod tests {
    use crate::read::sparse::merge::permute_in_place;

    #[test]
    fn permutations_apply_in_place() {
        let permutation = vec![3, 0, 4, 1, 2, 5, 7, 6];
        let mut items: Vec<char> = "abcdefgh".chars().collect();
        permute_in_place(&mut items, permutation.clone());
        let expected: Vec<char> = permutation
            .iter()
            .map(|&i| (b'a' + i as u8) as char)
            .collect();
        assert_eq!(items, expected);
    }
}
