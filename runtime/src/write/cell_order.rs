//! Putting a sparse write's cells in global order without copying them: a
//! parallel sort of cell indexes. Each cell's key (the rank of its space
//! tile in tile order, or its Hilbert value) is computed once, in
//! parallel; cells of one key are compared by their coordinates, read
//! straight from the input columns. Ties keep the input's order (the sort
//! breaks them by index), as TileDB's stable sorts do.

use std::cmp::Ordering;

use rayon::prelude::*;

use crate::error::Result;
use crate::filter::Datatype;
use crate::read::order::{GlobalKey, GlobalOrder};
use crate::schema::{ArraySchema, Scalar, SchemaOrder};

use super::fragment_input::{usage, Column};

/// Each cell's key in global order.
enum Keys {
    /// One number per cell: the tile's rank in tile order, or the Hilbert
    /// value.
    Numbers(Vec<u64>),
    /// Where tile ranks overflow a u64: the keys themselves.
    Full(Vec<GlobalKey>),
}

/// How a numeric coordinate becomes a u64 that sorts as `Scalar::compare`
/// sorts the value: integers by value, floats numerically with -0 equal to
/// 0 and NaN after everything.
#[derive(Clone, Copy)]
enum NumKey {
    Signed(usize),
    Unsigned(usize),
    F32,
    F64,
}

impl NumKey {
    fn of(datatype: Datatype) -> Option<NumKey> {
        use Datatype::*;
        Some(match datatype {
            Float32 => NumKey::F32,
            Float64 => NumKey::F64,
            Int8 => NumKey::Signed(1),
            Int16 => NumKey::Signed(2),
            Int32 => NumKey::Signed(4),
            Uint8 | Bool => NumKey::Unsigned(1),
            Uint16 => NumKey::Unsigned(2),
            Uint32 => NumKey::Unsigned(4),
            Uint64 => NumKey::Unsigned(8),
            // INT64, DATETIME_*, TIME_*, as `Scalar::decode` reads them.
            t if t.size() == 8 && matches!(Scalar::decode(t, &[0; 8]), Some(Scalar::Int(_))) => {
                NumKey::Signed(8)
            }
            _ => return None,
        })
    }

    fn float(f: f64) -> u64 {
        if f.is_nan() {
            return u64::MAX;
        }
        // -0 compares equal to 0.
        let bits = if f == 0.0 { 0 } else { f.to_bits() };
        if bits >> 63 == 1 {
            !bits
        } else {
            bits | 1 << 63
        }
    }

    fn key(self, bytes: &[u8]) -> u64 {
        let mut raw = [0u8; 8];
        match self {
            NumKey::Signed(n) => {
                raw[..n].copy_from_slice(&bytes[..n]);
                let shift = 64 - 8 * n as u32;
                // Sign-extended, then the sign bit flipped.
                (((u64::from_le_bytes(raw) << shift) as i64 >> shift) as u64) ^ 1 << 63
            }
            NumKey::Unsigned(n) => {
                raw[..n].copy_from_slice(&bytes[..n]);
                u64::from_le_bytes(raw)
            }
            NumKey::F32 => {
                raw[..4].copy_from_slice(&bytes[..4]);
                Self::float(f32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]) as f64)
            }
            NumKey::F64 => {
                raw.copy_from_slice(&bytes[..8]);
                Self::float(f64::from_le_bytes(raw))
            }
        }
    }
}

/// The coordinates of a sparse write, read in place.
pub(crate) struct Coordinates<'a> {
    schema: &'a ArraySchema,
    dims: Vec<&'a Column>,
    /// Per dimension, with its cell size, when every dimension is numeric
    /// and its column of that size: coordinates then compare as u64 keys.
    num_keys: Option<Vec<(NumKey, usize)>>,
    types: Vec<Datatype>,
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
        Coordinates {
            schema,
            dims: dims.to_vec(),
            num_keys,
            types: schema.dimensions.iter().map(|d| d.datatype).collect(),
            order: GlobalOrder::new(schema),
            cell_col_major: schema.cell_order == SchemaOrder::ColMajor,
        }
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
        if let Some(counts) = self.tile_counts() {
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

    /// GlobalOrderWriter::check_global_order and check_coord_dups: adjacent
    /// cells as given in global order (for Hilbert arrays by Hilbert value
    /// alone) and, unless `allows_dups`, never of the same coordinates.
    /// The first offending pair is reported.
    pub(crate) fn check_written_order(&self, n: usize, allows_dups: bool) -> Result<()> {
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
            Some(i) if out_of_order(i) => Err(usage(format!(
                "cells {} and {i} are not in the global order",
                i - 1
            ))),
            Some(i) => Err(usage(format!(
                "cells {} and {i} share coordinates, and the array allows no duplicates",
                i - 1
            ))),
            None => Ok(()),
        }
    }

    /// UnorderedWriter's check_coord_dups: no two cells of `sorted` (cells
    /// in global order, where equal coordinates are adjacent) share
    /// coordinates.
    pub(crate) fn check_duplicates(&self, sorted: &[usize]) -> Result<()> {
        let first = (1..sorted.len())
            .into_par_iter()
            .find_first(|&k| self.same(sorted[k - 1], sorted[k]));
        match first {
            Some(k) => {
                let (a, b) = (sorted[k - 1], sorted[k]);
                Err(usage(format!(
                    "cells {} and {} share coordinates, and the array allows no duplicates",
                    a.min(b),
                    a.max(b)
                )))
            }
            None => Ok(()),
        }
    }
}
