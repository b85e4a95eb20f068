//! Putting a sparse write's cells in global order without copying them: a
//! parallel sort of cell indexes. Each cell's key (the rank of its space
//! tile in tile order, or its Hilbert value) is computed once, in
//! parallel; cells of one key are compared by their coordinates, read
//! straight from the input columns. Ties keep the input's order (the sort
//! breaks them by index), as TileDB's stable sorts do.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use rayon::prelude::*;

use crate::error::Result;
use crate::filter::Datatype;
use crate::read::order::{GlobalKey, GlobalOrder};
use crate::schema::{ArraySchema, Scalar, SchemaOrder};

use super::fragment_input::{usage, Column};
use super::num_key::NumKey;
use super::tile_rank::TileRanks;

/// Each cell's key in global order.
enum Keys {
    /// One number per cell: the tile's rank in tile order, or the Hilbert
    /// value.
    Numbers(Vec<u64>),
    /// Where tile ranks overflow a u64: the keys themselves.
    Full(Vec<GlobalKey>),
}

/// One dimension of a [`Grid`]: its coordinates' keys, the keys of its
/// domain's ends, its tile extent and number of tiles.
#[derive(Clone, Copy)]
struct Axis<'a> {
    kind: NumKey,
    /// For 8-byte integers, what turns the stored word into its key (the
    /// sign bit for signed types): read without the per-kind dispatch.
    word_flip: Option<u64>,
    size: usize,
    data: &'a [u8],
    low: u64,
    high: u64,
    extent: u64,
    tiles: u64,
}

impl Axis<'_> {
    /// Cell `i`'s distance from the domain's low end; `None` outside the
    /// domain (integer keys differ as the values do).
    #[inline(always)]
    fn offset(&self, i: usize) -> Option<u64> {
        let k = match self.word_flip {
            Some(flip) => u64::from_le_bytes(*self.data.get(i * 8..)?.first_chunk::<8>()?) ^ flip,
            None => self.kind.key(self.data.get(i * self.size..)?),
        };
        (self.low..=self.high).contains(&k).then(|| k - self.low)
    }
}

/// The global order of cells whose dimensions are all integers with tile
/// extents, as one u64 per cell: the rank of the cell's space tile in tile
/// order times the cells of a tile, plus the cell's rank inside its tile
/// in cell order. Cells sort by this number alone, and two cells share
/// coordinates exactly when they share it; no coordinate is decoded into
/// a `Scalar` and no tile is computed by i128 division.
struct Grid<'a> {
    axes: Vec<Axis<'a>>,
    /// The axes from the slowest-varying to the fastest: for the tile
    /// rank (tile order) and for the rank inside the tile (cell order).
    tile_axes: Vec<usize>,
    cell_axes: Vec<usize>,
    /// Tile and cell order are the same: one division per axis gives both
    /// ranks (kept, not compared per cell: a comparison of two vectors).
    same_order: bool,
    cells_per_tile: u64,
    /// One past the largest key.
    key_end: u64,
}

impl<'a> Grid<'a> {
    /// The grid of `schema`, when every dimension fits one and the keys of
    /// the whole domain fit a u64.
    fn new(schema: &ArraySchema, dims: &[&'a Column]) -> Option<Grid<'a>> {
        if schema.cell_order == SchemaOrder::Hilbert || dims.len() != schema.dimensions.len() {
            return None;
        }
        let mut axes = Vec::with_capacity(dims.len());
        for (dim, column) in schema.dimensions.iter().zip(dims) {
            let kind = NumKey::of(dim.datatype)?;
            let size = dim.datatype.size() as usize;
            if matches!(kind, NumKey::F32 | NumKey::F64)
                || dim.var
                || column.offsets.is_some()
                || column.cell_size() != Some(size)
            {
                return None;
            }
            let (lo, hi) = dim.domain_scalars()?;
            let (low, high) = (kind.of_scalar(&lo)?, kind.of_scalar(&hi)?);
            let extent = match dim.extent_scalar()? {
                Scalar::Int(e) if e > 0 => u64::try_from(e).ok()?,
                _ => return None,
            };
            let tiles = (high.checked_sub(low)? / extent).checked_add(1)?;
            axes.push(Axis {
                kind,
                word_flip: match kind {
                    NumKey::Signed(8) => Some(1 << 63),
                    NumKey::Unsigned(8) => Some(0),
                    _ => None,
                },
                size,
                data: &column.data,
                low,
                high,
                extent,
                tiles,
            });
        }
        let tile_num = axes
            .iter()
            .try_fold(1u64, |acc, a| acc.checked_mul(a.tiles))?;
        let cells_per_tile = axes
            .iter()
            .try_fold(1u64, |acc, a| acc.checked_mul(a.extent))?;
        let key_end = tile_num.checked_mul(cells_per_tile)?;
        let slowest_first = |col_major: bool| -> Vec<usize> {
            if col_major {
                (0..axes.len()).rev().collect()
            } else {
                (0..axes.len()).collect()
            }
        };
        let tile_axes = slowest_first(schema.tile_order == SchemaOrder::ColMajor);
        let cell_axes = slowest_first(schema.cell_order == SchemaOrder::ColMajor);
        Some(Grid {
            same_order: tile_axes == cell_axes,
            tile_axes,
            cell_axes,
            axes,
            cells_per_tile,
            key_end,
        })
    }

    /// Cell `i`'s key; `None` for a cell outside the domain.
    #[inline]
    fn key(&self, i: usize) -> Option<u64> {
        let (mut tile, mut cell) = (0u64, 0u64);
        if self.same_order {
            // One division per axis gives both ranks.
            for &d in &self.tile_axes {
                let a = &self.axes[d];
                let offset = a.offset(i)?;
                let t = offset / a.extent;
                tile = tile * a.tiles + t;
                cell = cell * a.extent + (offset - t * a.extent);
            }
        } else {
            for &d in &self.tile_axes {
                let a = &self.axes[d];
                tile = tile * a.tiles + a.offset(i)? / a.extent;
            }
            for &d in &self.cell_axes {
                let a = &self.axes[d];
                cell = cell * a.extent + a.offset(i)? % a.extent;
            }
        }
        Some(tile * self.cells_per_tile + cell)
    }

    /// [`Self::key`] for cells read in order: `last` holds, per axis, the
    /// tile of the cell before (its index and first offset; `None` before
    /// the first cell), and a cell in the same tile along an axis (the
    /// common case in global order) needs no division there.
    #[inline(always)]
    fn key_after(&self, i: usize, last: &mut [Option<(u64, u64)>]) -> Option<u64> {
        let (mut tile, mut cell) = (0u64, 0u64);
        let same_order = self.same_order;
        for &d in &self.tile_axes {
            let a = &self.axes[d];
            let offset = a.offset(i)?;
            let (t, start) = match last[d] {
                Some((t, start)) if offset >= start && offset - start < a.extent => (t, start),
                _ => {
                    let t = offset / a.extent;
                    (t, t * a.extent)
                }
            };
            last[d] = Some((t, start));
            tile = tile * a.tiles + t;
            if same_order {
                cell = cell * a.extent + (offset - start);
            }
        }
        if same_order {
            return Some(tile * self.cells_per_tile + cell);
        }
        for &d in &self.cell_axes {
            let a = &self.axes[d];
            let start = last[d].map_or(0, |(_, start)| start);
            cell = cell * a.extent + (a.offset(i)? - start);
        }
        Some(tile * self.cells_per_tile + cell)
    }

    /// The first cell `i` (from 1) that does not follow cell `i - 1` in
    /// global order (with `strict`, that does not follow it or shares its
    /// coordinates), with the two keys (`None` for a cell outside the
    /// domain). Chunks of cells are checked in parallel, each key computed
    /// once.
    fn first_unordered(&self, n: usize, strict: bool) -> Option<(usize, Option<(u64, u64)>)> {
        const CHUNK: usize = 1 << 16;
        (0..n.div_ceil(CHUNK)).into_par_iter().find_map_first(|c| {
            let start = (c * CHUNK).max(1);
            let mut last = vec![None; self.axes.len()];
            let mut previous = self.key_after(start - 1, &mut last);
            for i in start..((c + 1) * CHUNK).min(n) {
                let current = self.key_after(i, &mut last);
                match previous.zip(current) {
                    Some((a, b)) if a < b || (a == b && !strict) => {}
                    pair => return Some((i, pair)),
                }
                previous = current;
            }
            None
        })
    }

    /// The cells `0..n` in global order (ties in input order) when a key
    /// and a cell index fit one u64: each cell is `key << bits | index`
    /// (returned with `bits`), half the memory of key and index apart, and
    /// the sort compares plain numbers. `None` when they do not fit or a
    /// cell lies outside the domain.
    fn sorted_packed(&self, n: usize) -> Option<(Vec<u64>, u32)> {
        let bits = 64 - (n.saturating_sub(1) as u64).leading_zeros();
        let fits = bits < 64 && (self.key_end - 1).checked_shr(64 - bits).unwrap_or(0) == 0;
        if !fits {
            return None;
        }
        let outside = AtomicBool::new(false);
        let mut packed = Vec::new();
        (0..n)
            .into_par_iter()
            .map(|i| match self.key(i) {
                Some(k) => k << bits | i as u64,
                None => {
                    outside.store(true, AtomicOrdering::Relaxed);
                    0
                }
            })
            .collect_into_vec(&mut packed);
        if outside.into_inner() {
            return None;
        }
        packed.par_sort_unstable();
        Some((packed, bits))
    }

    /// The cells `0..n` with their keys, in global order (ties: with
    /// `timestamps` newest first, then in input order); `None` when a cell
    /// lies outside the domain.
    fn sorted(&self, n: usize, timestamps: Option<&[u64]>) -> Option<Vec<(u64, usize)>> {
        // Collected in place (an indexed collect: no chunks joined after),
        // a cell outside the domain flagged on the side.
        let outside = AtomicBool::new(false);
        let mut pairs: Vec<(u64, usize)> = Vec::new();
        (0..n)
            .into_par_iter()
            .map(|i| match self.key(i) {
                Some(k) => (k, i),
                None => {
                    outside.store(true, AtomicOrdering::Relaxed);
                    (0, i)
                }
            })
            .collect_into_vec(&mut pairs);
        if outside.into_inner() {
            return None;
        }
        match timestamps {
            None => pairs.par_sort_unstable(),
            Some(t) => pairs.par_sort_unstable_by(|x, y| {
                x.0.cmp(&y.0)
                    .then_with(|| t[y.1].cmp(&t[x.1]))
                    .then_with(|| x.1.cmp(&y.1))
            }),
        }
        Some(pairs)
    }
}

/// The refusal of two cells of the same coordinates.
fn duplicate_error(a: usize, b: usize) -> crate::error::Error {
    usage(format!(
        "cells {} and {} share coordinates, and the array allows no duplicates",
        a.min(b),
        a.max(b)
    ))
}

/// The coordinates of a sparse write, read in place.
pub(crate) struct Coordinates<'a> {
    schema: &'a ArraySchema,
    dims: Vec<&'a Column>,
    /// Per dimension, with its cell size, when every dimension is numeric
    /// and its column of that size: coordinates then compare as u64 keys.
    num_keys: Option<Vec<(NumKey, usize)>>,
    types: Vec<Datatype>,
    /// The one-number global order, where the dimensions allow it.
    grid: Option<Grid<'a>>,
    /// Each cell's tile rank read typed off the columns, where every tiled
    /// dimension is a fixed-size number (float dimensions among them).
    ranks: Option<TileRanks<'a>>,
    order: GlobalOrder,
    /// Cells of one tile compare in column-major order.
    cell_col_major: bool,
}

impl<'a> Coordinates<'a> {
    /// The coordinates `dims` (one column per dimension of `schema`).
    pub(crate) fn new(schema: &'a ArraySchema, dims: &[&'a Column]) -> Coordinates<'a> {
        let num_keys = schema
            .dimensions
            .iter()
            .zip(dims)
            .map(|(d, c)| {
                let size = d.datatype.size() as usize;
                let fits = !d.var && c.offsets.is_none() && c.cell_size() == Some(size);
                NumKey::of(d.datatype).filter(|_| fits).map(|k| (k, size))
            })
            .collect();
        let mut coords = Coordinates {
            schema,
            dims: dims.to_vec(),
            num_keys,
            types: schema.dimensions.iter().map(|d| d.datatype).collect(),
            grid: Grid::new(schema, dims),
            ranks: None,
            order: GlobalOrder::new(schema),
            cell_col_major: schema.cell_order == SchemaOrder::ColMajor,
        };
        if coords.grid.is_none() && !coords.order.is_hilbert() {
            coords.ranks = coords
                .tile_counts()
                .and_then(|counts| TileRanks::new(schema, dims, &counts));
        }
        coords
    }

    fn coord(&self, d: usize, i: usize) -> Result<Scalar> {
        Scalar::decode(self.types[d], self.dims[d].cell_bytes(i)).ok_or_else(|| {
            usage(format!(
                "bad coordinate of {}",
                self.schema.dimensions[d].name
            ))
        })
    }

    fn coords(&self, i: usize) -> Result<Vec<Scalar>> {
        (0..self.dims.len()).map(|d| self.coord(d, i)).collect()
    }

    /// Compares two cells' coordinates in the cell order (row-major for
    /// Hilbert arrays), as `compare_coords` does.
    fn compare_coords(&self, a: usize, b: usize) -> Ordering {
        let n = self.dims.len();
        if let Some(keys) = &self.num_keys {
            for k in 0..n {
                let d = if self.cell_col_major { n - 1 - k } else { k };
                let (key, size) = keys[d];
                let data = &self.dims[d].data;
                let o = key.key(&data[a * size..]).cmp(&key.key(&data[b * size..]));
                if o != Ordering::Equal {
                    return o;
                }
            }
            return Ordering::Equal;
        }
        for k in 0..n {
            let d = if self.cell_col_major { n - 1 - k } else { k };
            let (Ok(x), Ok(y)) = (self.coord(d, a), self.coord(d, b)) else {
                return Ordering::Equal;
            };
            let o = x.compare(&y);
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    /// Whether two cells share coordinates.
    fn same(&self, a: usize, b: usize) -> bool {
        if self.num_keys.is_some() {
            return self.compare_coords(a, b) == Ordering::Equal;
        }
        (0..self.dims.len()).all(|d| match (self.coord(d, a), self.coord(d, b)) {
            (Ok(x), Ok(y)) => x.compare(&y) == Ordering::Equal,
            _ => false,
        })
    }

    /// The tile of each tiled dimension, in key order, with the tiles per
    /// dimension; `None` where a rank would not fit a u64.
    fn tile_counts(&self) -> Option<Vec<(usize, u64)>> {
        let mut counts = Vec::new();
        for (d, dim) in self.schema.dimensions.iter().enumerate() {
            let Some((_, hi)) = dim.domain_scalars() else {
                continue;
            };
            if let Some(last) = self.order.tile_of(d, &hi) {
                counts.push((d, u64::try_from(last.checked_add(1)?).ok()?));
            }
        }
        if self.order.tile_col_major() {
            counts.reverse();
        }
        counts
            .iter()
            .try_fold(1u64, |acc, (_, c)| acc.checked_mul(*c))?;
        Some(counts)
    }

    /// The key of every cell, computed in parallel.
    fn keys(&self, n: usize) -> Result<Keys> {
        if self.order.is_hilbert() {
            let numbers = (0..n)
                .into_par_iter()
                .map(|i| Ok(GlobalOrder::hilbert_of(&self.order.key(&self.coords(i)?))))
                .collect::<Result<_>>()?;
            return Ok(Keys::Numbers(numbers));
        }
        if let Some(typed) = &self.ranks {
            let ranks: Option<Vec<u64>> = (0..n).into_par_iter().map(|i| typed.rank(i)).collect();
            if let Some(ranks) = ranks {
                return Ok(Keys::Numbers(ranks));
            }
        } else if let Some(counts) = self.tile_counts() {
            let ranks: Option<Vec<u64>> = (0..n)
                .into_par_iter()
                .map(|i| {
                    let mut rank = 0u64;
                    for &(d, count) in &counts {
                        let c = self.coord(d, i).ok()?;
                        let t = u64::try_from(self.order.tile_of(d, &c)?).ok()?;
                        if t >= count {
                            return None;
                        }
                        rank = rank * count + t;
                    }
                    Some(rank)
                })
                .collect();
            if let Some(ranks) = ranks {
                return Ok(Keys::Numbers(ranks));
            }
        }
        let keys = (0..n)
            .into_par_iter()
            .map(|i| Ok(self.order.key(&self.coords(i)?)))
            .collect::<Result<_>>()?;
        Ok(Keys::Full(keys))
    }

    /// The cells `0..n` in global order; with `timestamps`, equal
    /// coordinates newest first. Ties keep the input order.
    pub(crate) fn global_order(&self, n: usize, timestamps: Option<&[u64]>) -> Result<Vec<usize>> {
        // Every coordinate decodes (the comparator cannot report errors).
        for d in 0..self.dims.len() {
            if self.dims[d].len() < n {
                return Err(usage("columns of different lengths"));
            }
        }
        if let Some(pairs) = self.grid.as_ref().and_then(|g| g.sorted(n, timestamps)) {
            return Ok(pairs.into_iter().map(|(_, i)| i).collect());
        }
        let newest_first = |a: usize, b: usize| match timestamps {
            Some(t) => t[b].cmp(&t[a]),
            None => Ordering::Equal,
        };
        let by_cells = |a: usize, b: usize| {
            self.compare_coords(a, b)
                .then_with(|| newest_first(a, b))
                .then_with(|| a.cmp(&b))
        };
        Ok(match self.keys(n)? {
            Keys::Numbers(numbers) => {
                let mut pairs: Vec<(u64, usize)> = numbers.into_iter().zip(0..n).collect();
                pairs.par_sort_unstable_by(|x, y| x.0.cmp(&y.0).then_with(|| by_cells(x.1, y.1)));
                pairs.into_iter().map(|(_, i)| i).collect()
            }
            Keys::Full(keys) => {
                let mut perm: Vec<usize> = (0..n).collect();
                perm.par_sort_unstable_by(|&a, &b| {
                    keys[a].tile_cmp(&keys[b]).then_with(|| by_cells(a, b))
                });
                perm
            }
        })
    }

    /// Whether a global-order write passes both the domain check and the
    /// order check in the grid's one pass: every cell inside the domain
    /// (the grid finds no key for a cell outside it), in global order and,
    /// unless `allows_dups`, never repeated. Only where the grid's bounds
    /// are the bounds the domain check applies (no current domain
    /// narrowing them) and every cell is looked at (two or more: the pass
    /// reads each cell as the second of a pair or the first of a chunk).
    /// `false` says nothing: the caller then runs both checks, which name
    /// the first refusal as TileDB orders them (domain first).
    pub(crate) fn written_in_order_within_domain(&self, n: usize, allows_dups: bool) -> bool {
        let Some(grid) = &self.grid else {
            return false;
        };
        let narrowed = self.schema.current_domain.as_ref().is_some_and(|cd| {
            cd.iter()
                .zip(&self.schema.dimensions)
                .any(|(cd, dim)| dim.domain.as_ref() != Some(cd))
        });
        n >= 2
            && !narrowed
            && self.dims.iter().all(|c| c.len() >= n)
            && grid.first_unordered(n, !allows_dups).is_none()
    }

    /// GlobalOrderWriter::check_global_order and check_coord_dups: adjacent
    /// cells as given in global order (for Hilbert arrays by Hilbert value
    /// alone) and, unless `allows_dups`, never of the same coordinates.
    /// The first offending pair is reported.
    pub(crate) fn check_written_order(&self, n: usize, allows_dups: bool) -> Result<()> {
        if let Some(grid) = &self.grid {
            // One pass, keys computed on the fly: no sort, no key array.
            match grid.first_unordered(n, !allows_dups) {
                None => return Ok(()),
                Some((i, Some((a, b)))) if a > b => return Err(order_error(i)),
                Some((i, Some(_))) => return Err(duplicate_error(i - 1, i)),
                // A cell outside the domain: the general check below.
                Some((_, None)) => {}
            }
        }
        let keys = self.keys(n)?;
        let hilbert = self.order.is_hilbert();
        let out_of_order = |i: usize| match &keys {
            Keys::Numbers(k) => {
                k[i - 1] > k[i]
                    || (!hilbert && k[i - 1] == k[i] && self.compare_coords(i - 1, i).is_gt())
            }
            Keys::Full(k) => k[i - 1]
                .tile_cmp(&k[i])
                .then_with(|| self.compare_coords(i - 1, i))
                .is_gt(),
        };
        let first = (1..n)
            .into_par_iter()
            .find_first(|&i| out_of_order(i) || (!allows_dups && self.same(i - 1, i)));
        match first {
            Some(i) if out_of_order(i) => Err(order_error(i)),
            Some(i) => Err(duplicate_error(i - 1, i)),
            None => Ok(()),
        }
    }

    /// The cells `0..n` in global order, as [`Self::global_order`] gives
    /// them, refused (UnorderedWriter's check_coord_dups) when two share
    /// coordinates unless `allows_dups`.
    pub(crate) fn sorted_cells(&self, n: usize, allows_dups: bool) -> Result<Vec<usize>> {
        if let Some((packed, bits)) = self.grid.as_ref().and_then(|g| g.sorted_packed(n)) {
            let index = |p: u64| (p & ((1u64 << bits) - 1)) as usize;
            if !allows_dups {
                let first = (1..packed.len())
                    .into_par_iter()
                    .find_first(|&k| packed[k - 1] >> bits == packed[k] >> bits);
                if let Some(k) = first {
                    return Err(duplicate_error(index(packed[k - 1]), index(packed[k])));
                }
            }
            // In place: a u64 becomes a usize of the same size.
            return Ok(packed.into_iter().map(index).collect());
        }
        if let Some(pairs) = self.grid.as_ref().and_then(|g| g.sorted(n, None)) {
            if !allows_dups {
                // Equal keys are equal coordinates, and they are adjacent.
                let first = (1..pairs.len())
                    .into_par_iter()
                    .find_first(|&k| pairs[k - 1].0 == pairs[k].0);
                if let Some(k) = first {
                    return Err(duplicate_error(pairs[k - 1].1, pairs[k].1));
                }
            }
            return Ok(pairs.into_iter().map(|(_, i)| i).collect());
        }
        let sorted = self.global_order(n, None)?;
        if !allows_dups {
            self.check_duplicates(&sorted)?;
        }
        Ok(sorted)
    }

    /// UnorderedWriter's check_coord_dups: no two cells of `sorted` (cells
    /// in global order, where equal coordinates are adjacent) share
    /// coordinates.
    fn check_duplicates(&self, sorted: &[usize]) -> Result<()> {
        let first = (1..sorted.len())
            .into_par_iter()
            .find_first(|&k| self.same(sorted[k - 1], sorted[k]));
        match first {
            Some(k) => Err(duplicate_error(sorted[k - 1], sorted[k])),
            None => Ok(()),
        }
    }
}

/// The refusal of cells `i - 1` and `i` out of global order.
fn order_error(i: usize) -> crate::error::Error {
    usage(format!(
        "cells {} and {i} are not in the global order",
        i - 1
    ))
}

#[cfg(test)]
#[path = "cell_order_tests.rs"]
mod tests;
