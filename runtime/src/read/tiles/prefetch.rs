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

/// Tiles `tiles` of `field` of `fragment`, which a read will load.
#[derive(Clone, Copy)]
pub(crate) struct WantedTiles<'a> {
    pub(crate) fragment: &'a FragmentMetadata,
    pub(crate) field: Field,
    pub(crate) tiles: &'a [u64],
}

/// Fetches ahead what loading `wanted` will read, when the storage gains
/// from it (it takes many requests at once: an object store).
pub(crate) fn prefetch_tiles(storage: &dyn Storage, wanted: &[WantedTiles<'_>]) {
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
    for (group, tables) in groups.iter().zip(&tables) {
        for (w, tables) in group.iter().zip(tables) {
            if let Some(tables) = tables {
                stored_ranges(w, tables, &mut files);
            }
        }
    }
    storage.prefetch(&files);
}

/// The ranges of each of `w`'s files that loading its tiles reads.
fn stored_ranges(
    w: &WantedTiles<'_>,
    tables: &FieldTileTables,
    files: &mut Vec<(RelPath, Vec<(u64, u64)>)>,
) {
    let Some(shape) = FieldShape::of(w.fragment, w.field) else {
        return;
    };
    let (fixed_size, var_size, validity_size) = w.fragment.file_sizes(w.field);
    let var = shape.cell_val_num.is_none();
    let mut stored: Vec<(&str, &[u64], u64)> = Vec::new();
    if !(var
        && shape
            .filters
            .skips_offsets(shape.datatype, w.fragment.version))
    {
        stored.push(("", &tables.offsets, fixed_size));
    }
    if var {
        stored.push(("_var", &tables.var_offsets, var_size));
    }
    if shape.nullable && crate::format::generated::validity_stored(w.fragment.version) {
        stored.push(("_validity", &tables.validity_offsets, validity_size));
    }
    for (suffix, offsets, size) in stored {
        let Ok(path) = w.fragment.data_path(w.field, suffix) else {
            continue;
        };
        let ranges: Vec<(u64, u64)> = w
            .tiles
            .iter()
            .filter_map(|&t| {
                let start = *offsets.get(usize::try_from(t).ok()?)?;
                let end = offsets.get(t as usize + 1).copied().unwrap_or(size);
                (end > start).then(|| (start, end - start))
            })
            .collect();
        if !ranges.is_empty() {
            files.push((path, ranges));
        }
    }
}
