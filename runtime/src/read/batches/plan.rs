//! Cutting a read into parts that follow its result order.
//!
//! A result order is lexicographic over a list of *digits*: row-major is
//! the first dimension's coordinate, then the second's, …; global order is
//! each dimension's space-tile index (in tile order), then each
//! coordinate (in cell order). Fixing the leading digits and giving the
//! next one an interval selects cells that are contiguous in the result,
//! and that selection is a box of ranges — a query the whole-result
//! readers answer in the same order. So a read is cut into a sequence of
//! such boxes: start with the first digit's whole interval, halve it while
//! the box is estimated larger than the target, fix it and move to the
//! next digit when a single value is still too large. The parts are made
//! lazily (a stack of pending halves), so a huge domain costs no memory.
//!
//! Digits exist for integer and float dimensions (a float's space tiles
//! found from its keys by halving) and for string dimensions (strings
//! numbered by their rank among the tiles' bounds, `strings`); the cut
//! stops at the first digit of another dimension (a string whose tiles do
//! not record their bounds), whose part is then read whole. Hilbert order
//! has one digit of its own, the Hilbert value (`orders`).

use std::collections::HashSet;
use std::rc::Rc;

use crate::error::Result;
use crate::filter::Datatype;
use crate::read::batches::estimate::{CellBytes, SparseTiles};
use crate::read::batches::key::Scale;
use crate::read::batches::strings::StringUnits;
use crate::read::dense::{dense_dimensions, query_spans};
use crate::read::query::{decode_ranges, ReadQuery, ResultOrder};
use crate::read::sparse::ranges::merge_string_ranges;
use crate::read::sparse::RangeOrder;
use crate::schema::{ArraySchema, Scalar, SchemaOrder};
use crate::snapshot::Snapshot;
use crate::storage::RelPath;

mod orders;
use orders::{hilbert_plan, range_order};

/// What the units of a digit are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// Positions in the dimension's ranges taken one after the other
    /// (dense row- and column-major reads: multi-range results follow
    /// the ranges as given).
    Position,
    /// Space-tile indices of the dimension (global order).
    Tile,
    /// Coordinate values.
    Value,
}

#[derive(Debug, Clone, Copy)]
struct Digit {
    dim: usize,
    unit: Unit,
}

/// Per dimension, the spans a part keeps (`None`: a dimension without an
/// axis, whose ranges are the query's).
type BoxSpans = Vec<Option<Vec<(i128, i128)>>>;

/// One integer dimension as the plan cuts it.
#[derive(Debug, Clone)]
struct Axis {
    /// The query's spans on it, as given.
    spans: Vec<(i128, i128)>,
    /// The domain's lower bound and the space-tile extent (tile digits).
    low: i128,
    extent: i128,
    datatype: Datatype,
    /// How its values are keys (the spans and bounds are keys).
    scale: Scale,
    /// A float dimension's domain low bound and tile extent as numbers:
    /// its tile of a value is `floor((value - low) / extent)`, as the
    /// global order computes it (`read::order`).
    float_tiles: Option<(f64, f64)>,
    /// A string dimension's keys (`strings`).
    strings: Option<Rc<StringUnits>>,
}

impl Axis {
    /// The space tile of the value of `key`.
    fn tile_of(&self, key: i128) -> i128 {
        match self.float_tiles {
            Some((low, extent)) => ((self.scale.value(key) - low) / extent).floor() as i128,
            None => (key - self.low).div_euclid(self.extent),
        }
    }

    /// The keys of tiles `a..=b` within `lo..=hi` (keys): the first key
    /// whose tile is `a` or later and the last whose tile is `b` or
    /// earlier, found by halving (the tile of a value never decreases as
    /// the value grows); `None` when no key there is in those tiles.
    fn tile_keys(&self, a: i128, b: i128, lo: i128, hi: i128) -> Option<(i128, i128)> {
        let first = |pred: &dyn Fn(i128) -> bool| -> i128 {
            // The first key in lo..=hi+1 where `pred` holds (hi + 1: none).
            let (mut l, mut h) = (lo, hi.saturating_add(1));
            while l < h {
                let m = l + (h - l) / 2;
                if pred(m) {
                    h = m;
                } else {
                    l = m + 1;
                }
            }
            l
        };
        let from = first(&|k| self.tile_of(k) >= a);
        let to = first(&|k| self.tile_of(k) > b) - 1;
        (from <= to).then_some((from, to))
    }
}

/// A part of the read: digits before the last fixed to one unit, the last
/// an interval (inclusive); the tiles (sparse) that may hold its cells.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    bounds: Vec<(i128, i128)>,
    tiles: Option<Rc<[u32]>>,
}

/// A part ready to read: its query, and whether it can still be cut.
#[derive(Debug)]
pub(crate) struct PlannedPart {
    pub(crate) query: ReadQuery,
    pub(crate) part: Option<Part>,
    /// A Hilbert-ordered read: the Hilbert values of the part's cells, and
    /// the only tiles that may hold them (the query reads more).
    pub(crate) hilbert: Option<((i128, i128), TileSet)>,
}

/// Tiles by fragment folder and index in it.
pub(crate) type TileSet = HashSet<(RelPath, u64)>;

/// The plan of a read: its digits and the parts still to read.
pub(crate) struct Plan {
    base: ReadQuery,
    /// Per dimension, the axis when the dimension is integral.
    axes: Vec<Option<Axis>>,
    digits: Vec<Digit>,
    dense: bool,
    /// Dense global order: parts never span two space tiles (each is then
    /// read in cell order, the fast dense path).
    tile_digits: usize,
    /// The cell order as a layout (dense global parts are read in it).
    cell_layout: ResultOrder,
    cell_bytes: CellBytes,
    sparse: Option<SparseTiles>,
    /// Pending parts, the next on top; `None` once the unsplittable read
    /// has been handed out.
    stack: Vec<Part>,
    whole: Option<()>,
    /// How the parts of a one-dimensional multi-range sparse read order
    /// their cells (see `range_order`).
    range_order: RangeOrder,
    /// A sparse global read in Hilbert order: one digit, the Hilbert value
    /// (see `hilbert_plan`).
    hilbert: bool,
}

/// The most cells of one dense part (the dense reader's own limit, halved).
const MAX_DENSE_PART: u128 = crate::read::dense::MAX_DENSE_CELLS / 2;

impl Plan {
    /// The plan of `query` (already checked by the readers' decoding),
    /// read under `budget` bytes.
    pub(crate) fn new(snapshot: &Snapshot, query: &ReadQuery, budget: u64) -> Result<Plan> {
        let schema = snapshot.schema();
        let dense = schema.is_dense();
        let n = schema.dimensions.len();
        let mut layout = query.layout;
        if dense && n == 1 && matches!(layout, ResultOrder::Global | ResultOrder::Unordered) {
            layout = ResultOrder::RowMajor;
        }
        let mut sparse = if dense {
            None
        } else {
            Some(SparseTiles::new(snapshot, query)?)
        };
        let mut axes = axes(snapshot, query, dense, sparse.as_mut())?;
        let (mut digits, tile_digits) = digits(schema, &axes, layout, dense);
        let hilbert = !dense
            && schema.cell_order == SchemaOrder::Hilbert
            && matches!(layout, ResultOrder::Global | ResultOrder::Unordered);
        if hilbert {
            (sparse, axes, digits) = hilbert_plan(schema, sparse);
        }
        let mut order = RangeOrder::ByFragments;
        let ordered = matches!(layout, ResultOrder::RowMajor | ResultOrder::ColMajor);
        if !dense && ordered && n == 1 && !ascending_apart(&axes) && !digits.is_empty() {
            // Several overlapping or unsorted ranges, row- or column-major.
            // The fragments are found with a sparse part's share of the
            // budget in decoded coordinates.
            order = range_order(snapshot, query, &axes, &digits, budget / 8)?;
            if order == RangeOrder::ByFragments {
                // Range order: the cells of the ranges as given, one
                // range after the other, each in coordinate order.
                digits[0].unit = Unit::Position;
            }
        }
        let cell_bytes = CellBytes::new(snapshot, query)?;
        let mut base = query.clone();
        base.layout = layout;
        let mut plan = Plan {
            base,
            axes,
            digits,
            dense,
            tile_digits: if dense { tile_digits } else { 0 },
            cell_layout: if schema.cell_order == SchemaOrder::ColMajor {
                ResultOrder::ColMajor
            } else {
                ResultOrder::RowMajor
            },
            cell_bytes,
            sparse,
            stack: Vec::new(),
            whole: None,
            range_order: order,
            hilbert,
        };
        match plan.first_part() {
            Some(part) => plan.stack.push(part),
            None => plan.whole = Some(()),
        }
        Ok(plan)
    }

    /// Whether the read has no digit to cut by (it is read whole).
    pub(crate) fn reads_whole(&self) -> bool {
        self.whole.is_some()
    }

    /// How the parts order a one-dimensional multi-range sparse read.
    pub(crate) fn range_order(&self) -> RangeOrder {
        self.range_order
    }

    /// The estimated bytes of one result cell (raised by what reads show).
    pub(crate) fn cell_bytes(&mut self) -> &mut CellBytes {
        &mut self.cell_bytes
    }

    /// The part covering every unit of the first digit; `None` when the
    /// read has no digit (it is read whole).
    fn first_part(&self) -> Option<Part> {
        let digit = self.digits.first()?;
        let boxed = self.spans_before(&[], 0)?;
        let interval = self.interval(digit, &boxed[digit.dim])?;
        Some(Part {
            bounds: vec![interval],
            tiles: self.sparse.as_ref().map(SparseTiles::all),
        })
    }

    /// The next part in result order, at most about `target` bytes where
    /// the digits allow; `None` at the end.
    pub(crate) fn next_part(&mut self, target: u64) -> Option<PlannedPart> {
        if self.whole.take().is_some() {
            return Some(PlannedPart {
                query: self.base.clone(),
                part: None,
                hilbert: None,
            });
        }
        while let Some(mut part) = self.stack.pop() {
            let Some(boxed) = self.spans_before(&part.bounds, part.bounds.len()) else {
                continue;
            };
            let (cells, tiles) = self.estimate(&boxed, part.tiles.as_deref());
            if cells == 0 {
                continue;
            }
            part.tiles = tiles;
            let bytes = self.cell_bytes.bytes(cells);
            let whole_tile = part.bounds.len() > self.tile_digits
                || (part.bounds.len() == self.tile_digits && {
                    let (a, b) = part.bounds[part.bounds.len() - 1];
                    a == b
                });
            let small = cells <= MAX_DENSE_PART || !self.dense;
            // A part of about one cell is never cut further: the budget
            // then says when it is too large, once read.
            let fits = bytes <= u128::from(target) || cells <= 1;
            if fits && small && whole_tile {
                return Some(self.planned(part, &boxed));
            }
            if !self.split(&part) {
                return Some(self.planned(part, &boxed));
            }
        }
        None
    }

    /// Pushes the parts that replace `part` (its halves, or its one value
    /// with the next digit opened); false when it cannot be cut.
    pub(crate) fn split(&mut self, part: &Part) -> bool {
        let k = part.bounds.len() - 1;
        let (a, b) = part.bounds[k];
        if a < b {
            // Tile indices and positions are integers whatever the
            // dimension's values.
            let scale = match self.digits[k].unit {
                Unit::Tile | Unit::Position => Scale::Int,
                _ => self.axes[self.digits[k].dim]
                    .as_ref()
                    .map_or(Scale::Int, |axis| axis.scale),
            };
            let strings = self.axes[self.digits[k].dim]
                .as_ref()
                .and_then(|axis| axis.strings.as_ref());
            let mid = match strings {
                Some(units) if self.digits[k].unit == Unit::Value => units.midpoint(a, b),
                _ => scale.midpoint(a, b),
            };
            for half in [(mid + 1, b), (a, mid)] {
                let mut bounds = part.bounds.clone();
                bounds[k] = half;
                self.stack.push(Part {
                    bounds,
                    tiles: part.tiles.clone(),
                });
            }
            return true;
        }
        let Some(next) = self.digits.get(k + 1).copied() else {
            return false;
        };
        let digit = self.digits[k];
        let string = self.axes[digit.dim]
            .as_ref()
            .and_then(|a| a.strings.as_ref());
        if string.is_some() && digit.unit == Unit::Value && a % 2 != 0 {
            // Strings between two MBR bounds: several values, so the next
            // digit cannot be opened under them.
            return false;
        }
        let Some(boxed) = self.spans_before(&part.bounds, k + 1) else {
            return false;
        };
        let Some(interval) = self.interval(&next, &boxed[next.dim]) else {
            return false;
        };
        let mut bounds = part.bounds.clone();
        bounds.push(interval);
        self.stack.push(Part {
            bounds,
            tiles: part.tiles.clone(),
        });
        true
    }

    /// The query of a part.
    fn planned(&self, part: Part, boxed: &BoxSpans) -> PlannedPart {
        if self.hilbert {
            // The one digit is the Hilbert value: the query's ranges stay,
            // the part's tiles and values select its cells.
            let tiles = match (&self.sparse, &part.tiles) {
                (Some(sparse), Some(tiles)) => sparse.ids(tiles),
                _ => HashSet::new(),
            };
            return PlannedPart {
                query: self.base.clone(),
                hilbert: Some((part.bounds[0], tiles)),
                part: Some(part),
            };
        }
        let mut query = self.base.clone();
        let schema_dims = query.ranges.len().max(boxed.len());
        query.ranges.resize(schema_dims, Vec::new());
        for (d, spans) in boxed.iter().enumerate() {
            if let (Some(spans), Some(axis)) = (spans, &self.axes[d]) {
                query.ranges[d] = match &axis.strings {
                    // `spans_before` kept only spans holding strings.
                    Some(units) => spans
                        .iter()
                        .filter_map(|&(lo, hi)| units.bounds(lo, hi))
                        .collect(),
                    None => spans
                        .iter()
                        .map(|&(lo, hi)| {
                            let encode = |k| axis.scale.encode(axis.datatype, k);
                            (encode(lo), encode(hi))
                        })
                        .collect(),
                };
            }
        }
        if self.dense && self.tile_digits > 0 {
            // One space tile: its cells in cell order are its global order.
            query.layout = self.cell_layout;
        }
        PlannedPart {
            query,
            part: Some(part),
            hilbert: None,
        }
    }

    /// Per dimension, the spans left once digits `..upto` take the units
    /// of `bounds`; `None` when some dimension keeps none (an empty part).
    fn spans_before(&self, bounds: &[(i128, i128)], upto: usize) -> Option<BoxSpans> {
        let mut boxed: BoxSpans = self
            .axes
            .iter()
            .map(|a| a.as_ref().map(|a| a.spans.clone()))
            .collect();
        for (digit, &(a, b)) in self.digits.iter().zip(bounds).take(upto) {
            let axis = self.axes[digit.dim].as_ref()?;
            let spans = boxed[digit.dim].as_mut()?;
            *spans = match digit.unit {
                Unit::Position => positions(spans, a, b),
                Unit::Tile if axis.float_tiles.is_some() => {
                    let lo = spans.iter().map(|s| s.0).min()?;
                    let hi = spans.iter().map(|s| s.1).max()?;
                    match axis.tile_keys(a, b, lo, hi) {
                        Some((lo, hi)) => intersect(spans, lo, hi),
                        None => Vec::new(),
                    }
                }
                Unit::Tile => {
                    let lo = axis.low.saturating_add(a.saturating_mul(axis.extent));
                    let hi = axis
                        .low
                        .saturating_add((b.saturating_add(1)).saturating_mul(axis.extent))
                        .saturating_sub(1);
                    intersect(spans, lo, hi)
                }
                Unit::Value => intersect(spans, a, b),
            };
            if spans.is_empty() {
                return None;
            }
        }
        for (spans, axis) in boxed.iter_mut().zip(&self.axes) {
            if let (Some(spans), Some(units)) =
                (spans, axis.as_ref().and_then(|a| a.strings.as_ref()))
            {
                spans.retain(|&(a, b)| units.bounds(a, b).is_some());
                if spans.is_empty() {
                    return None;
                }
            }
        }
        if self.tile_digits > 0 {
            // Dense global: within a tile the cells come in cell order,
            // whatever the order of the ranges.
            for spans in boxed.iter_mut().flatten() {
                spans.sort_unstable();
            }
        }
        Some(boxed)
    }

    /// The units of `digit` over the dimension's remaining spans.
    fn interval(&self, digit: &Digit, spans: &Option<Vec<(i128, i128)>>) -> Option<(i128, i128)> {
        let spans = spans.as_ref()?;
        let axis = self.axes[digit.dim].as_ref()?;
        let lo = spans.iter().map(|s| s.0).min()?;
        let hi = spans.iter().map(|s| s.1).max()?;
        Some(match digit.unit {
            Unit::Position => {
                let len = spans
                    .iter()
                    .map(|(a, b)| b - a + 1)
                    .fold(0i128, i128::saturating_add);
                (0, len - 1)
            }
            Unit::Tile => (axis.tile_of(lo), axis.tile_of(hi)),
            Unit::Value => (lo, hi),
        })
    }

    /// The estimated cells of a box, and (sparse) the tiles it meets.
    fn estimate(
        &self,
        boxed: &[Option<Vec<(i128, i128)>>],
        tiles: Option<&[u32]>,
    ) -> (u128, Option<Rc<[u32]>>) {
        match &self.sparse {
            Some(sparse) => {
                let (cells, met) = sparse.estimate(boxed, tiles.unwrap_or(&[]));
                (cells, Some(met))
            }
            None => {
                let cells = boxed
                    .iter()
                    .flatten()
                    .map(|spans| {
                        spans
                            .iter()
                            .map(|(a, b)| (b - a + 1) as u128)
                            .fold(0u128, u128::saturating_add)
                    })
                    .fold(1u128, u128::saturating_mul);
                (cells, None)
            }
        }
    }
}

/// Per dimension, its axis when it is a number: the query's spans (the
/// whole domain where it gives none; a dense read's current domain as the
/// dense reader takes it), its domain's low bound and tile extent.
fn axes(
    snapshot: &Snapshot,
    query: &ReadQuery,
    dense: bool,
    mut sparse: Option<&mut SparseTiles>,
) -> Result<Vec<Option<Axis>>> {
    let schema = snapshot.schema();
    let ranges = decode_ranges(schema, query)?;
    if dense {
        let dims = dense_dimensions(schema)?;
        let (all_spans, _, _) = query_spans(schema, &dims, &ranges, u128::MAX)?;
        return Ok(dims
            .iter()
            .zip(all_spans)
            .zip(&schema.dimensions)
            .map(|((dim, spans), d)| {
                Some(Axis {
                    spans,
                    low: dim.low,
                    extent: dim.extent,
                    datatype: d.datatype,
                    scale: Scale::Int,
                    float_tiles: None,
                    strings: None,
                })
            })
            .collect());
    }
    Ok(schema
        .dimensions
        .iter()
        .zip(&ranges)
        .enumerate()
        .map(|(d, (dim, ranges))| {
            if dim.var {
                return string_axis(query, d, dim.datatype, sparse.as_deref_mut()?);
            }
            let scale = Scale::of(dim.datatype);
            let (lo, hi) = dim.domain_scalars()?;
            let (lo, hi) = (scale.key(&lo)?, scale.key(&hi)?);
            let spans = if ranges.is_empty() {
                vec![(lo, hi)]
            } else {
                ranges
                    .iter()
                    .map(|(a, b)| Some((scale.key(a)?, scale.key(b)?)))
                    .collect::<Option<Vec<_>>>()?
            };
            let extent = dim
                .extent_scalar()
                .and_then(|e| e.as_int())
                .filter(|e| *e > 0)
                .unwrap_or(hi - lo + 1);
            let float_tiles = match (scale, dim.domain_scalars(), dim.extent_scalar()) {
                (Scale::Int, _, _) => None,
                (_, Some((low, _)), Some(extent)) => Some((low.as_f64()?, extent.as_f64()?))
                    .filter(|(low, e)| *e > 0.0 && low.is_finite()),
                _ => None,
            };
            Some(Axis {
                spans,
                low: lo,
                extent,
                datatype: dim.datatype,
                scale,
                float_tiles,
                strings: None,
            })
        })
        .collect())
}

/// The axis of string dimension `d` (keys as `strings` numbers them),
/// when the touched tiles record their bounds and sizes. Global and
/// unordered reads merge the dimension's ranges first, as the sparse
/// reader does (`sparse::ranges::merge_string_ranges`); row- and
/// column-major reads keep them as given (a cell once per range holding
/// it), as for numbers.
fn string_axis(
    query: &ReadQuery,
    d: usize,
    datatype: Datatype,
    sparse: &mut SparseTiles,
) -> Option<Axis> {
    let given = query.ranges.get(d).map_or(&[][..], Vec::as_slice);
    let ranges = match query.layout {
        ResultOrder::Global | ResultOrder::Unordered => merge_string_ranges(given),
        ResultOrder::RowMajor | ResultOrder::ColMajor => given.to_vec(),
    };
    let (units, spans) = sparse.string_units(d, &ranges)?;
    Some(Axis {
        spans,
        low: 0,
        extent: 1,
        datatype,
        scale: Scale::Int,
        float_tiles: None,
        strings: Some(Rc::new(units)),
    })
}

/// The digits of the result order, cut at the first one of a dimension
/// without an axis; and how many of them are tile digits.
fn digits(
    schema: &ArraySchema,
    axes: &[Option<Axis>],
    layout: ResultOrder,
    dense: bool,
) -> (Vec<Digit>, usize) {
    let n = schema.dimensions.len();
    let order = |col: bool| -> Vec<usize> {
        if col {
            (0..n).rev().collect()
        } else {
            (0..n).collect()
        }
    };
    let (mut digits, tiles): (Vec<Digit>, usize) = match layout {
        ResultOrder::RowMajor | ResultOrder::ColMajor => {
            let unit = if dense { Unit::Position } else { Unit::Value };
            let list = order(layout == ResultOrder::ColMajor)
                .into_iter()
                .map(|dim| Digit { dim, unit })
                .collect();
            // One sparse dimension read with several ranges that are not
            // ascending and apart: TileDB returns them in range order or
            // in coordinate order depending on the fragments the cells
            // come from (`Plan::new` decides, see `range_order`).
            (list, 0)
        }
        ResultOrder::Global | ResultOrder::Unordered => {
            if !dense && schema.cell_order == SchemaOrder::Hilbert {
                return (Vec::new(), 0);
            }
            let tiled: Vec<Digit> = order(schema.tile_order == SchemaOrder::ColMajor)
                .into_iter()
                .filter(|&d| dense || (n > 1 && tiles_order(&schema.dimensions[d])))
                .map(|dim| Digit {
                    dim,
                    unit: Unit::Tile,
                })
                .collect();
            let count = tiled.len();
            let mut list = tiled;
            list.extend(
                order(schema.cell_order == SchemaOrder::ColMajor)
                    .into_iter()
                    .map(|dim| Digit {
                        dim,
                        unit: Unit::Value,
                    }),
            );
            (list, count)
        }
    };
    // The tiles of a float dimension are found from its keys by halving
    // (`Axis::tile_keys`); one without a usable extent is cut no further.
    let cut_at = |d: &Digit| match &axes[d.dim] {
        None => true,
        Some(axis) => {
            d.unit == Unit::Tile && axis.scale != Scale::Int && axis.float_tiles.is_none()
        }
    };
    if let Some(cut) = digits.iter().position(cut_at) {
        digits.truncate(cut);
    }
    let tiles = tiles.min(digits.len());
    (digits, tiles)
}

/// Whether a sparse dimension's space tiles take part in the global order
/// ahead of the coordinates: it has a tile extent, and (a float dimension)
/// more than one tile. With one dimension, tile order then coordinate
/// order is coordinate order, so none is needed.
fn tiles_order(dim: &crate::schema::Dimension) -> bool {
    let Some(extent) = dim.extent_scalar() else {
        return false;
    };
    match (dim.domain_scalars(), extent) {
        (Some((Scalar::Float(lo), Scalar::Float(hi))), Scalar::Float(e)) => e <= hi - lo,
        _ => true,
    }
}

/// The one axis's spans each start after the previous one ends.
fn ascending_apart(axes: &[Option<Axis>]) -> bool {
    match axes.first() {
        Some(Some(axis)) => axis.spans.windows(2).all(|w| w[1].0 > w[0].1),
        _ => true,
    }
}

/// The parts of `spans` (taken one after the other) at positions `a..=b`.
fn positions(spans: &[(i128, i128)], a: i128, b: i128) -> Vec<(i128, i128)> {
    let mut out = Vec::new();
    let mut at = 0i128;
    for &(lo, hi) in spans {
        let len = hi - lo + 1;
        let (from, to) = (a.max(at), b.min(at + len - 1));
        if from <= to {
            out.push((lo + (from - at), lo + (to - at)));
        }
        at += len;
        if at > b {
            break;
        }
    }
    out
}

/// Each span cut to `[lo, hi]`, the empty ones dropped.
fn intersect(spans: &[(i128, i128)], lo: i128, hi: i128) -> Vec<(i128, i128)> {
    spans
        .iter()
        .filter_map(|&(a, b)| {
            let (a, b) = (a.max(lo), b.min(hi));
            (a <= b).then_some((a, b))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_follow_the_spans_as_given() {
        let spans = [(5, 7), (1, 2), (10, 10)];
        assert_eq!(positions(&spans, 0, 5), spans.to_vec());
        assert_eq!(positions(&spans, 2, 3), vec![(7, 7), (1, 1)]);
        assert_eq!(positions(&spans, 4, 5), vec![(2, 2), (10, 10)]);
        assert_eq!(intersect(&spans, 2, 6), vec![(5, 6), (2, 2)]);
    }
}
