//! The persisted bytes of a field's tiles, and the pipelines and contexts
//! that unfilter them.

use std::ops::Range;
use std::path::Path;

use crate::error::{Cause, Error, Result};
use crate::filter::{Datatype, Filter, FilterContext, FilterPipeline};
use crate::fragment::{Field, FragmentMetadata};
use crate::storage::{RelPath, Storage};
use crate::tile::TileJob;

use crate::read::tiles::data::*;
use crate::read::tiles::plain::plain_part;

pub(crate) fn with_key(pipeline: &FilterPipeline, key: Option<&[u8; 32]>) -> FilterPipeline {
    let mut p = pipeline.clone();
    if key.is_some() && !p.has(crate::filter::FilterType::Aes256Gcm) {
        p.filters.push(Filter::Aes256Gcm);
    }
    p
}

pub(crate) fn context(
    datatype: Datatype,
    cell_size: u64,
    version: u32,
    key: Option<&[u8; 32]>,
) -> FilterContext {
    let ctx = FilterContext::new(datatype, cell_size.max(1), version);
    match key {
        Some(k) => ctx.with_key(*k),
        None => ctx,
    }
}

/// Reads the persisted bytes of tiles `tiles` of a file whose tiles start at
/// `offsets` (the last one ends at `file_size`).
/// One decode job per tile: its persisted bytes and where they start in the
/// file, and the unfiltered size its cell count implies.
pub(crate) fn tile_jobs<'a>(
    raw: &[(&'a [u8], u64)],
    tiles: &[u64],
    cells: &[u64],
    cell_size: u64,
) -> Vec<TileJob<'a>> {
    raw.iter()
        .zip(tiles)
        .zip(cells)
        .map(|((&(bytes, at), t), c)| TileJob {
            bytes,
            file_offset: at,
            index: *t,
            expected_len: c * cell_size,
            wanted: None,
        })
        .collect()
}

/// One of a field's data files: its name suffix (`""`, `"_var"`,
/// `"_validity"`), where each tile starts, and its size.
pub(crate) struct StoredFile<'a> {
    pub(crate) suffix: &'a str,
    pub(crate) offsets: &'a [u64],
    pub(crate) size: u64,
}

/// Where tile `t` of one of a field's files lies: `(start, length)`.
fn stored_tile_range(file: &StoredFile<'_>, describe: &Path, t: u64) -> Result<(u64, u64)> {
    let start = *file.offsets.get(t as usize).ok_or_else(|| {
        let cause = Cause::IndexOutOfRange {
            index: t,
            count: file.offsets.len() as u64,
        };
        Error::corrupt(0, "tile offsets", cause).in_file(describe)
    })?;
    let end = file
        .offsets
        .get(t as usize + 1)
        .copied()
        .unwrap_or(file.size);
    if end < start {
        return Err(Error::corrupt(
            start,
            "tile offsets",
            Cause::NotAscending {
                previous: start,
                value: end,
            },
        )
        .in_file(describe));
    }
    Ok((start, end - start))
}

/// The stored bytes of a tile read at `start` (TileDB 1.3's own chunk
/// framing turned into the chunked one).
fn reframe_stored_tile(
    fragment: &FragmentMetadata,
    field: Field,
    file: &StoredFile<'_>,
    describe: &Path,
    start: u64,
    bytes: &mut Vec<u8>,
) -> Result<()> {
    if let Some(reframed) = reframed_stored_tile(fragment, field, file, describe, start, bytes)? {
        *bytes = reframed;
    }
    Ok(())
}

/// A stored tile's bytes in the chunked framing when its fragment frames
/// them otherwise (TileDB 1.3: raw, or its own chunk framing when
/// compressed); `None` when they are chunked already.
fn reframed_stored_tile(
    fragment: &FragmentMetadata,
    field: Field,
    file: &StoredFile<'_>,
    describe: &Path,
    start: u64,
    bytes: &[u8],
) -> Result<Option<Vec<u8>>> {
    if fragment.version != 0 {
        return Ok(None);
    }
    let shape = FieldShape::of(fragment, field);
    let compressed = match file.suffix {
        "" if shape.as_ref().is_some_and(|s| s.cell_val_num.is_none()) => {
            !fragment.schema.offsets_filters.filters.is_empty()
        }
        _ => shape.is_some_and(|s| !s.filters.filters.is_empty()),
    };
    crate::schema::legacy13::reframe(bytes, compressed)
        .map(Some)
        .map_err(|e| e.at_base(start).in_file(describe))
}

/// Reads the stored bytes of tile `t` of one of a field's files into
/// `bytes` (TileDB 1.3's own chunk framing turned into the chunked one).
/// Returns where they start in the file.
pub(crate) fn read_stored_tile(
    storage: &dyn Storage,
    fragment: &FragmentMetadata,
    field: Field,
    file: &StoredFile<'_>,
    (path, describe): (&RelPath, &Path),
    t: u64,
    bytes: &mut Vec<u8>,
) -> Result<u64> {
    let (start, len) = stored_tile_range(file, describe, t)?;
    storage.read_range_into(path, start, len, bytes)?;
    reframe_stored_tile(fragment, field, file, describe, start, bytes)?;
    Ok(start)
}

/// Hands `with` the stored bytes of tile `t` of one of a field's files and
/// where they start in the file, as [`read_stored_tile`] reads them: the
/// storage's own bytes where it holds them in memory (no copy, see
/// [`Storage::read_range_with`]), else read into `scratch`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn with_stored_tile(
    storage: &dyn Storage,
    fragment: &FragmentMetadata,
    field: Field,
    file: &StoredFile<'_>,
    (path, describe): (&RelPath, &Path),
    t: u64,
    scratch: &mut Vec<u8>,
    with: &mut dyn FnMut(u64, &[u8]) -> Result<()>,
) -> Result<()> {
    if fragment.version == 0 {
        // Reframed: a copy of its own.
        let start = read_stored_tile(storage, fragment, field, file, (path, describe), t, scratch)?;
        return with(start, scratch);
    }
    let (start, len) = stored_tile_range(file, describe, t)?;
    storage.read_range_with(path, start, len, scratch, &mut |stored| with(start, stored))
}

/// Reads into `bytes` the part of tile `t` holding its unfiltered bytes
/// `wanted` when the tile is stored plainly and that part is small (see
/// [`plain_part`]), framed as a tile of its own. Returns where the part
/// starts in the file and which of the tile's unfiltered bytes it holds;
/// `None` when the tile is to be read whole (TileDB 1.3's framing, another
/// layout, or headers that do not frame plain chunks).
#[allow(clippy::too_many_arguments)]
pub(crate) fn read_plain_part(
    storage: &dyn Storage,
    fragment: &FragmentMetadata,
    file: &StoredFile<'_>,
    (path, describe): (&RelPath, &Path),
    t: u64,
    (expected_len, cell_size): (u64, u64),
    wanted: Range<u64>,
    bytes: &mut Vec<u8>,
) -> Result<Option<(u64, Range<u64>)>> {
    if fragment.version == 0 {
        return Ok(None);
    }
    let (start, len) = stored_tile_range(file, describe, t)?;
    let Some(part) = plain_part(len, expected_len, cell_size, wanted) else {
        return Ok(None);
    };
    let at = start + part.stored.start;
    storage.read_range_into(path, at, part.stored.end - part.stored.start, bytes)?;
    Ok(part.frame(bytes).then_some((at, part.cells)))
}

/// Hands `with` the stored bytes of `tiles` of one of a field's files, with
/// where each starts: asked of the storage as one batch, which an object
/// store merges and fetches concurrently and hands over without a copy.
/// `buffers` lends the memory of a storage that reads into buffers.
pub(crate) fn with_persisted<R>(
    storage: &dyn Storage,
    fragment: &FragmentMetadata,
    field: Field,
    file: StoredFile<'_>,
    tiles: &[u64],
    buffers: &mut Vec<Vec<u8>>,
    with: impl FnOnce(&[(&[u8], u64)]) -> Result<R>,
) -> Result<R> {
    let path = fragment.data_path(field, file.suffix)?;
    let describe = storage.describe(&path);
    let ranges = tiles
        .iter()
        .map(|&t| stored_tile_range(&file, &describe, t))
        .collect::<Result<Vec<_>>>()?;
    let mut with = Some(with);
    let mut result = None;
    storage.read_ranges_with(&path, &ranges, buffers, &mut |slices| {
        // TileDB 1.3's framing is rewritten into owned copies; any other
        // tile is handed as the storage holds it.
        let mut reframed = Vec::with_capacity(slices.len());
        for (bytes, &(start, _)) in slices.iter().zip(&ranges) {
            reframed.push(reframed_stored_tile(
                fragment, field, &file, &describe, start, bytes,
            )?);
        }
        let raw: Vec<(&[u8], u64)> = slices
            .iter()
            .zip(&reframed)
            .zip(&ranges)
            .map(|((bytes, own), &(start, _))| (own.as_deref().unwrap_or(bytes), start))
            .collect();
        if let Some(with) = with.take() {
            result = Some(with(&raw)?);
        }
        Ok(())
    })?;
    result.ok_or_else(|| {
        Error::Usage(format!(
            "{}: the storage handed no bytes",
            describe.display()
        ))
    })
}

/// A var tile's size that the fragment metadata does not record.
pub(crate) fn no_var_size(tile: u64, recorded: usize) -> Error {
    let cause = Cause::IndexOutOfRange {
        index: tile,
        count: recorded as u64,
    };
    Error::corrupt(0, "tile var sizes", cause)
}

/// What is wrong with the cell starts of a var tile, the data size last:
/// they must ascend, and none may pass the data.
pub(crate) fn var_offsets_fault(starts: &[u64]) -> Option<Cause> {
    let bad = starts.windows(2).position(|w| w[0] > w[1])?;
    let (previous, value) = (starts[bad], starts[bad + 1]);
    Some(if bad + 2 == starts.len() {
        Cause::OutOfRange {
            value: previous,
            limit: value,
        }
    } else {
        Cause::NotAscending { previous, value }
    })
}

/// A tile the geometry needs that the fragment does not have.
pub(crate) fn no_such_tile(fragment: &crate::fragment::FragmentMetadata, tile: u64) -> Error {
    let cause = Cause::IndexOutOfRange {
        index: tile,
        count: fragment.tile_num,
    };
    Error::corrupt(0, "tile offsets", cause).within(format!("fragment {}", fragment.name))
}
