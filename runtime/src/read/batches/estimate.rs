//! How large a part of a read will be, before reading it: the bytes of one
//! result cell, and (sparse) the cells the fragments' tiles may hold in a
//! box, from their MBRs.

use std::rc::Rc;

use crate::error::Result;
use crate::fragment::Field;
use crate::read::batches::key::Scale;
use crate::read::batches::strings::StringUnits;
use crate::read::query::{decode_ranges, output_attributes, Range, ReadQuery};
use crate::read::result::{Column, ReadResult};
use crate::read::sparse::ranges::touched_tiles;
use crate::schema::Scalar;
use crate::snapshot::Snapshot;
use crate::storage::RelPath;

/// A first guess at the bytes of one var-sized cell; what reads return
/// raises it (see [`CellBytes::observe`]).
const VAR_CELL_GUESS: u64 = 16;

/// The bytes one result cell takes in the result's buffers.
#[derive(Debug, Clone)]
pub(crate) struct CellBytes {
    /// Fixed-size values, offsets and validity bytes.
    fixed: u64,
    /// Var-sized fields.
    var_fields: u64,
    /// The most bytes per cell a part read so far returned.
    observed: u64,
}

impl CellBytes {
    /// The fields of `query`: coordinates (unless skipped), attributes.
    pub(crate) fn new(snapshot: &Snapshot, query: &ReadQuery) -> Result<CellBytes> {
        let schema = snapshot.schema();
        let mut bytes = CellBytes {
            fixed: 0,
            var_fields: 0,
            observed: 0,
        };
        if !query.skip_coordinates {
            for dim in &schema.dimensions {
                if dim.var {
                    bytes.fixed += 8;
                    bytes.var_fields += 1;
                } else {
                    bytes.fixed += dim.datatype.size();
                }
            }
        }
        for a in output_attributes(schema, query)? {
            let attr = &schema.attributes[a];
            match attr.cell_val_num {
                Some(v) => bytes.fixed += u64::from(v) * attr.datatype.size(),
                None => {
                    bytes.fixed += 8;
                    bytes.var_fields += 1;
                }
            }
            bytes.fixed += u64::from(attr.nullable);
        }
        Ok(bytes)
    }

    /// The estimated bytes of `cells` cells.
    pub(crate) fn bytes(&self, cells: u128) -> u128 {
        let guess = self.fixed + self.var_fields * VAR_CELL_GUESS;
        cells.saturating_mul(u128::from(guess.max(self.observed).max(1)))
    }

    /// Learns from a part's result: var-sized cells larger than guessed
    /// make the next parts smaller.
    pub(crate) fn observe(&mut self, result: &ReadResult) {
        let cells = result.cell_count() as u64;
        if cells > 0 && self.var_fields > 0 {
            self.observed = self.observed.max(result_bytes(result).div_ceil(cells));
        }
    }
}

/// The bytes of a column's buffers: values, offsets and validity.
pub(crate) fn column_bytes(column: &Column) -> u64 {
    let offsets = column.offsets.as_ref().map_or(0, |o| o.len() * 8);
    let validity = column.validity.as_ref().map_or(0, Vec::len);
    (column.data.len() + offsets + validity) as u64
}

/// The bytes of a result's buffers.
pub(crate) fn result_bytes(result: &ReadResult) -> u64 {
    result
        .dimensions
        .iter()
        .chain(&result.attributes)
        .map(column_bytes)
        .sum()
}

/// Every tile of the sparse fragments the query touches: its cells and,
/// per dimension, its MBR as keys when the dimension is a number.
#[derive(Debug)]
pub(crate) struct SparseTiles {
    dims: usize,
    scales: Vec<Scale>,
    /// `dims` per tile.
    mbrs: Vec<Option<(i128, i128)>>,
    cells: Vec<u64>,
    /// `dims` per tile: a string dimension's MBR bounds (keyed once the
    /// dimension's units are known, see [`SparseTiles::string_units`]).
    strings: Vec<Option<(Vec<u8>, Vec<u8>)>>,
    /// Per dimension, the largest var-sized tile touched (`None` when a
    /// fragment does not record it).
    longest: Vec<Option<u64>>,
    /// Each tile's fragment folder and index in it.
    ids: Vec<(RelPath, u64)>,
}

impl SparseTiles {
    /// The tiles `query` touches in every visible sparse fragment.
    pub(crate) fn new(snapshot: &Snapshot, query: &ReadQuery) -> Result<SparseTiles> {
        let schema = snapshot.schema();
        let ranges = decode_ranges(schema, query)?;
        let dims = schema.dimensions.len();
        let scales: Vec<Scale> = schema
            .dimensions
            .iter()
            .map(|d| Scale::of(d.datatype))
            .collect();
        let mut tiles = SparseTiles {
            dims,
            scales: scales.clone(),
            mbrs: Vec::new(),
            cells: Vec::new(),
            strings: Vec::new(),
            longest: vec![Some(0); dims],
            ids: Vec::new(),
        };
        crate::read::sparse::ranges::load_rtrees(snapshot);
        for fragment in snapshot.fragments() {
            if fragment.dense || fragment.non_empty_domain.is_none() {
                continue;
            }
            let mbrs = fragment.mbrs(snapshot.storage())?;
            let touched = touched_tiles(snapshot, fragment, &ranges)?;
            tiles.note_longest(snapshot, fragment, &touched)?;
            for t in touched {
                tiles.cells.push(fragment.cell_num(t, 0));
                tiles.ids.push((fragment.path.clone(), t));
                let mbr = mbrs.get(t as usize);
                for (d, dim) in schema.dimensions.iter().enumerate() {
                    let bounds = mbr.and_then(|m| m.get(d)).filter(|_| dim.var);
                    tiles.strings.push(bounds.cloned());
                }
                for (d, scale) in scales.iter().enumerate() {
                    let bounds = mbr.and_then(|m| m.get(d)).and_then(|(lo, hi)| {
                        let datatype = fragment.schema.dimensions.get(d)?.datatype;
                        let int = |b: &[u8]| scale.key(&Scalar::decode(datatype, b)?);
                        Some((int(lo)?, int(hi)?)).filter(|(a, b)| a <= b)
                    });
                    tiles.mbrs.push(bounds);
                }
            }
        }
        Ok(tiles)
    }

    /// Raises each string dimension's longest var-sized tile by the
    /// `touched` tiles of `fragment`.
    fn note_longest(
        &mut self,
        snapshot: &Snapshot,
        fragment: &crate::fragment::FragmentMetadata,
        touched: &[u64],
    ) -> Result<()> {
        for (d, dim) in fragment.schema.dimensions.iter().enumerate() {
            if !dim.var || touched.is_empty() || d >= self.dims {
                continue;
            }
            let tables = fragment.field_tiles(snapshot.storage(), Field::Dimension(d))?;
            let most = touched
                .iter()
                .map(|&t| tables.var_sizes.get(t as usize).copied())
                .try_fold(0u64, |m, s| Some(m.max(s?)));
            self.longest[d] = match (self.longest[d], most) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            };
        }
        Ok(())
    }

    /// The keys of string dimension `d` read within `ranges` (see
    /// `strings`: numbered by the touched tiles' MBR bounds and the
    /// ranges' ends) and each range's keys (the span of the tiles when
    /// there is none), its tiles' MBRs then keyed; `None` when some touched
    /// tile does not record its bounds or sizes, or no tile is touched.
    pub(crate) fn string_units(
        &mut self,
        d: usize,
        ranges: &[Range],
    ) -> Option<(StringUnits, Vec<(i128, i128)>)> {
        let longest = self.longest.get(d).copied().flatten()?;
        let mut bounds = Vec::with_capacity(2 * self.cells.len() + 2 * ranges.len());
        for t in 0..self.cells.len() {
            let (lo, hi) = self.strings[t * self.dims + d].as_ref()?;
            bounds.extend([lo.clone(), hi.clone()]);
        }
        if bounds.is_empty() {
            return None;
        }
        for (lo, hi) in ranges {
            bounds.extend([lo.clone(), hi.clone()]);
        }
        let units = StringUnits::new(longest, bounds);
        for t in 0..self.cells.len() {
            let (lo, hi) = self.strings[t * self.dims + d].as_ref()?;
            let keys = (units.key(lo), units.key(hi));
            self.mbrs[t * self.dims + d] = Some(keys).filter(|(a, b)| a <= b);
        }
        let spans: Vec<(i128, i128)> = if ranges.is_empty() {
            let lo = self.mbrs.iter().skip(d).step_by(self.dims).flatten();
            let first = lo.clone().map(|m| m.0).min()?;
            vec![(first, lo.map(|m| m.1).max()?)]
        } else {
            ranges
                .iter()
                .map(|(lo, hi)| (units.key(lo), units.key(hi)))
                .filter(|(a, b)| a <= b)
                .collect()
        };
        (!spans.is_empty()).then_some((units, spans))
    }

    /// The tiles of a Hilbert-ordered array seen along one axis, the
    /// Hilbert value: each tile's MBR becomes bounds of its cells' values
    /// (`hilbert::value_bounds`, the coordinates mapped as the global
    /// order maps them). `None` when a dimension is not a number (a
    /// string's mapping does not keep its order) or a tile has no MBR.
    pub(crate) fn hilbert(mut self, schema: &crate::schema::ArraySchema) -> Option<SparseTiles> {
        let n = schema.dimensions.len();
        let bits = crate::read::hilbert::bits_per_dim(n);
        let max = crate::read::hilbert::max_bucket(bits);
        let mut domains = Vec::with_capacity(n);
        for dim in &schema.dimensions {
            let (lo, hi) = dim.domain_scalars().filter(|_| !dim.var)?;
            domains.push((lo.as_f64()?, hi.as_f64()?));
        }
        let depth = (6 / n as u32).max(1);
        let mut ranges = Vec::with_capacity(self.cells.len());
        for t in 0..self.cells.len() {
            let (mut lo, mut hi) = (Vec::with_capacity(n), Vec::with_capacity(n));
            for (d, &(dlo, dhi)) in domains.iter().enumerate() {
                let (a, b) = self.mbrs[t * self.dims + d]?;
                let map = |k| {
                    let value = self.scales[d].value(k);
                    crate::read::hilbert::map_numeric(value, dlo, dhi, max)
                };
                lo.push(map(a));
                hi.push(map(b));
            }
            let (a, b) = crate::read::hilbert::value_bounds(&lo, &hi, bits, depth);
            ranges.push(Some((i128::from(a), i128::from(b))));
        }
        self.dims = 1;
        self.scales = vec![Scale::Int];
        self.mbrs = ranges;
        self.strings = vec![None; self.cells.len()];
        self.longest = vec![None];
        Some(self)
    }

    /// The fragment folder and index of each of `tiles`.
    pub(crate) fn ids(&self, tiles: &[u32]) -> std::collections::HashSet<(RelPath, u64)> {
        tiles
            .iter()
            .map(|&t| self.ids[t as usize].clone())
            .collect()
    }

    /// Every tile, by index.
    pub(crate) fn all(&self) -> Rc<[u32]> {
        (0..self.cells.len() as u32).collect()
    }

    /// The cells of `candidates` expected in the box (each tile's cells
    /// spread evenly over its MBR), and the candidates that meet it.
    pub(crate) fn estimate(
        &self,
        boxed: &[Option<Vec<(i128, i128)>>],
        candidates: &[u32],
    ) -> (u128, Rc<[u32]>) {
        let mut met = Vec::new();
        let mut cells = 0f64;
        'tiles: for &t in candidates {
            let mut share = 1f64;
            for (d, spans) in boxed.iter().enumerate() {
                let (Some(spans), Some(mbr)) = (spans, self.mbrs[t as usize * self.dims + d])
                else {
                    continue;
                };
                match self.scales[d].share(mbr, spans) {
                    Some(part) => share *= part,
                    None => continue 'tiles,
                }
            }
            met.push(t);
            cells += self.cells[t as usize] as f64 * share;
        }
        let cells = if met.is_empty() {
            0
        } else {
            (cells.ceil() as u128).max(1)
        };
        (cells, met.into())
    }
}
