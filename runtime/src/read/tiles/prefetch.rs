//! [`prefetch_tiles`]: the tiles a read is about to load from many
//! fragments, fetched ahead in two batches across all of them — first
//! every fragment's tile offsets (the fragments at once), then every tile's
//! stored bytes (one [`Storage::prefetch`]: an object store issues them
//! concurrently, a bounded number in flight, merged per file) — so that the
//! loads, which go fragment after fragment, find them at hand instead of
//! waiting on a round trip each. Nothing is decoded here, and nothing is
//! reported: a load that finds a range missing or corrupt reports it.

use std::sync::Arc;

use rayon::prelude::*;

use crate::fragment::{Field, FieldTileTables, FragmentMetadata};
use crate::storage::{on_io_threads, RelPath, Storage};

use crate::read::tiles::data::FieldShape;
use crate::read::tiles::plain::plain_part;

/// Tiles `tiles` of `field` of `fragment`, which a read will load.
#[derive(Clone, Copy)]
pub(crate) struct WantedTiles<'a> {
    pub(crate) fragment: &'a FragmentMetadata,
    pub(crate) field: Field,
    pub(crate) tiles: &'a [u64],
}

/// The cells a read takes of each of a [`WantedTiles`]' tiles (first and
/// last, in the tile's cell order), when it decodes only the chunks holding
/// them ([`super::TileSource::scatter`]): a tile stored plainly is then
/// fetched only in part ([`plain_part`]), as the load will ask for it.
#[derive(Clone, Copy)]
pub(crate) struct WantedCells<'a> {
    /// Per tile, in the order of the tiles.
    pub(crate) cells: &'a [(u64, u64)],
    /// The cells of a dense tile.
    pub(crate) cells_per_dense_tile: u64,
}

/// Fetches ahead what loading `wanted` will read, when the storage gains
/// from it (it takes many requests at once: an object store).
pub(crate) fn prefetch_tiles(storage: &dyn Storage, wanted: &[WantedTiles<'_>]) {
    prefetch_tile_parts(storage, wanted, &[]);
}

/// [`prefetch_tiles`], with the cells each entry of `wanted` takes of its
/// tiles where `cells` (by entry; missing or `None`: the whole tiles) says.
pub(crate) fn prefetch_tile_parts(
    storage: &dyn Storage,
    wanted: &[WantedTiles<'_>],
    cells: &[Option<WantedCells<'_>>],
) {
    if storage.concurrent_reads() == 0 || wanted.iter().all(|w| w.tiles.is_empty()) {
        return;
    }
    // Per fragment (its entries are adjacent), its fields in turn: their
    // tables lie in the one metadata file, often in one fetched range.
    let mut groups: Vec<&[WantedTiles<'_>]> = Vec::new();
    let mut start = 0;
    for i in 1..=wanted.len() {
        if i == wanted.len() || !std::ptr::eq(wanted[i].fragment, wanted[start].fragment) {
            groups.push(&wanted[start..i]);
            start = i;
        }
    }
    let tables: Vec<Vec<Option<Arc<FieldTileTables>>>> =
        on_io_threads(storage, groups.len(), || {
            groups
                .par_iter()
                .map(|group| {
                    group
                        .iter()
                        .map(|w| w.fragment.field_tiles(storage, w.field).ok())
                        .collect()
                })
                .collect()
        });
    let mut files: Vec<(RelPath, Vec<(u64, u64)>)> = Vec::new();
    let mut entry = 0;
    for (group, tables) in groups.iter().zip(&tables) {
        for (w, tables) in group.iter().zip(tables) {
            let parts = cells.get(entry).copied().flatten();
            entry += 1;
            if let Some(tables) = tables {
                stored_ranges(w, parts, tables, &mut files);
            }
        }
    }
    storage.prefetch(&files);
}

/// The ranges of each of `w`'s files that loading its tiles reads (with
/// `parts`, of a plainly stored tile only the chunks holding those cells).
fn stored_ranges(
    w: &WantedTiles<'_>,
    parts: Option<WantedCells<'_>>,
    tables: &FieldTileTables,
    files: &mut Vec<(RelPath, Vec<(u64, u64)>)>,
) {
    let Some(shape) = FieldShape::of(w.fragment, w.field) else {
        return;
    };
    let (fixed_size, var_size, validity_size) = w.fragment.file_sizes(w.field);
    let var = shape.cell_val_num.is_none();
    // Each file, and the size of its cells when it may be read in part
    // (fixed-size cells or validity without filters).
    let mut stored: Vec<(&str, &[u64], u64, Option<u64>)> = Vec::new();
    if !(var
        && shape
            .filters
            .skips_offsets(shape.datatype, w.fragment.version))
    {
        let cell_size = shape
            .cell_val_num
            .filter(|_| shape.filters.filters.is_empty())
            .map(|n| shape.datatype.size() * u64::from(n));
        stored.push(("", &tables.offsets, fixed_size, cell_size));
    }
    if var {
        stored.push(("_var", &tables.var_offsets, var_size, None));
    }
    if shape.nullable && crate::format::generated::validity_stored(w.fragment.version) {
        let plain = w.fragment.schema.validity_filters.filters.is_empty();
        stored.push((
            "_validity",
            &tables.validity_offsets,
            validity_size,
            plain.then_some(1),
        ));
    }
    for (suffix, offsets, size, cell_size) in stored {
        let Ok(path) = w.fragment.data_path(w.field, suffix) else {
            continue;
        };
        let ranges: Vec<(u64, u64)> = w
            .tiles
            .iter()
            .enumerate()
            .filter_map(|(i, &t)| {
                let start = *offsets.get(usize::try_from(t).ok()?)?;
                let end = offsets.get(t as usize + 1).copied().unwrap_or(size);
                if end <= start {
                    return None;
                }
                let part = parts.zip(cell_size).and_then(|(parts, cell_size)| {
                    let &(first, last) = parts.cells.get(i)?;
                    let cells = w.fragment.cell_num(t, parts.cells_per_dense_tile);
                    let wanted =
                        first.checked_mul(cell_size)?..(last + 1).checked_mul(cell_size)?;
                    plain_part(
                        end - start,
                        cells.checked_mul(cell_size)?,
                        cell_size,
                        wanted,
                    )
                });
                Some(match part {
                    Some(part) if w.fragment.version != 0 => (
                        start + part.stored.start,
                        part.stored.end - part.stored.start,
                    ),
                    _ => (start, end - start),
                })
            })
            .collect();
        if !ranges.is_empty() {
            files.push((path, ranges));
        }
    }
}
