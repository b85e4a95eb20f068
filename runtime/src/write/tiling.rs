//! How a fragment's cells are cut into tiles, described rather than
//! listed: a dense write's tiles by the geometry of the subarray in the
//! space tiles (each tile's cells then come as runs of input cells and of
//! fill cells), a sparse write's by the global-order permutation of its
//! cells, `capacity` per tile. Tiles are produced one at a time, so that
//! writing needs no list of every cell of every tile.

use crate::error::{Error, Result};
use crate::schema::{ArraySchema, Scalar, SchemaOrder};

use super::fragment_input::usage;

/// Where one tile's cells come from: an input cell, or a fill cell.
pub(crate) type TileCells = Vec<Option<usize>>;

/// A run of a dense tile's cells, in cell order: `len` input cells from
/// `from` on, `step` apart in the input, or (`from` = `None`) `len` fill
/// cells.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Run {
    pub(crate) from: Option<usize>,
    pub(crate) step: usize,
    pub(crate) len: usize,
}

/// The cells of one tile.
pub(crate) enum Cells<'p> {
    /// A dense tile: runs of input and fill cells.
    Runs(Vec<Run>),
    /// A sparse tile: input cells by index.
    Listed(&'p [usize]),
}

impl Cells<'_> {
    /// The number of cells, fill included.
    pub(crate) fn len(&self) -> usize {
        match self {
            Cells::Runs(runs) => runs.iter().map(|r| r.len).sum(),
            Cells::Listed(cells) => cells.len(),
        }
    }

    /// Whether some cell is a fill cell.
    pub(crate) fn has_fill(&self) -> bool {
        match self {
            Cells::Runs(runs) => runs.iter().any(|r| r.from.is_none()),
            Cells::Listed(_) => false,
        }
    }

    /// Calls `f` with each input cell in order (`None` for a fill cell).
    pub(crate) fn for_each(&self, mut f: impl FnMut(Option<usize>)) {
        match self {
            Cells::Runs(runs) => {
                for r in runs {
                    for k in 0..r.len {
                        f(r.from.map(|s| s + k * r.step));
                    }
                }
            }
            Cells::Listed(cells) => cells.iter().for_each(|&i| f(Some(i))),
        }
    }

    /// The cells as a list.
    pub(crate) fn listed(&self) -> TileCells {
        let mut out = Vec::with_capacity(self.len());
        self.for_each(|c| out.push(c));
        out
    }
}

/// Appends the cells `cells` of `data` (cells of `cell_size` bytes) to
/// `out`, in that order: a sparse tile gathered through the global-order
/// permutation. Common cell sizes copy as fixed-size moves rather than one
/// `memcpy` call per cell, which lets the processor overlap the cache
/// misses of a random permutation.
pub(crate) fn gather(cells: &[usize], data: &[u8], cell_size: usize, out: &mut Vec<u8>) {
    fn fixed<const N: usize>(cells: &[usize], data: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        out.resize(start + cells.len() * N, 0);
        for (to, &i) in out[start..].chunks_exact_mut(N).zip(cells) {
            to.copy_from_slice(&data[i * N..(i + 1) * N]);
        }
    }
    match cell_size {
        1 => fixed::<1>(cells, data, out),
        2 => fixed::<2>(cells, data, out),
        4 => fixed::<4>(cells, data, out),
        8 => fixed::<8>(cells, data, out),
        16 => fixed::<16>(cells, data, out),
        _ => cells
            .iter()
            .for_each(|&i| out.extend_from_slice(&data[i * cell_size..(i + 1) * cell_size])),
    }
}

/// Per dimension of a dense write: the domain's low end, the tile extent,
/// the first and last space tile the subarray touches.
#[derive(Debug, Clone, Copy)]
struct Axis {
    low: i128,
    extent: i128,
    first_tile: i128,
    last_tile: i128,
}

/// The order in which a dense write gives its subarray's cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DenseInputOrder {
    /// The last dimension fastest.
    RowMajor,
    /// The first dimension fastest.
    ColMajor,
    /// Tile after tile in the tile order, each tile's cells in the cell
    /// order (the subarray on space tile bounds): tile `t` is then the
    /// input's cells `t × cells_per_tile ..`, one run read in place.
    Global,
}

/// A dense write's tiles.
pub(crate) struct DenseGrid {
    axes: Vec<Axis>,
    subarray: Vec<(i128, i128)>,
    /// Per dimension, the input cells between neighbours along it.
    strides: Vec<i128>,
    tile_col_major: bool,
    cell_col_major: bool,
    /// The input is in global order: each tile one run of input cells.
    global: bool,
}

/// A sparse write's cells in global order.
pub(crate) enum SparseOrder {
    /// As the input gives them (a checked global-order write): each tile
    /// is then one run of input cells, copied whole.
    AsGiven,
    /// The input's cells by index.
    Permuted(Vec<usize>),
}

/// How a fragment's cells are cut into tiles.
pub(crate) enum TilePlan {
    /// Dense: every space tile the subarray touches, whole.
    Dense(DenseGrid),
    /// Sparse: the `cells` in global order, `capacity` per tile.
    Sparse {
        order: SparseOrder,
        cells: usize,
        capacity: usize,
    },
}

fn int_of(s: &Scalar) -> Option<i128> {
    match s {
        Scalar::Int(i) => Some(*i),
        _ => None,
    }
}

impl DenseGrid {
    /// The tiles of a dense write of `subarray`, its cells given in
    /// `input_order`. A global-order input needs a subarray on space tile
    /// bounds.
    pub(crate) fn new(
        schema: &ArraySchema,
        subarray: &[(i128, i128)],
        input_order: DenseInputOrder,
    ) -> Result<DenseGrid> {
        let mut axes = Vec::new();
        for (d, dim) in schema.dimensions.iter().enumerate() {
            let (lo, hi) = dim
                .domain_scalars()
                .ok_or_else(|| usage(format!("dimension {} has no domain", dim.name)))?;
            let (lo, hi) = (int_of(&lo), int_of(&hi));
            let ext = dim.extent_scalar().as_ref().and_then(int_of);
            let (Some(lo), Some(hi), Some(ext)) = (lo, hi, ext) else {
                return Err(Error::Unsupported {
                    file: Default::default(),
                    what: format!(
                        "dense writes need integer dimensions with tile extents ({})",
                        dim.name
                    ),
                });
            };
            let (s_lo, s_hi) = subarray[d];
            if ext <= 0 || s_lo < lo || s_hi > hi || s_lo > s_hi {
                return Err(usage(format!(
                    "subarray [{s_lo}, {s_hi}] outside domain [{lo}, {hi}]"
                )));
            }
            if input_order == DenseInputOrder::Global
                && ((s_lo - lo) % ext != 0 || (s_hi - lo + 1) % ext != 0)
            {
                return Err(super::global_dense::off_tile_bounds(
                    &dim.name,
                    (s_lo, s_hi),
                    ext,
                    lo,
                ));
            }
            axes.push(Axis {
                low: lo,
                extent: ext,
                first_tile: (s_lo - lo) / ext,
                last_tile: (s_hi - lo) / ext,
            });
        }
        let lens: Vec<i128> = subarray.iter().map(|(a, b)| b - a + 1).collect();
        let mut strides = vec![1i128; lens.len()];
        if input_order == DenseInputOrder::ColMajor {
            for d in 1..lens.len() {
                strides[d] = strides[d - 1] * lens[d - 1];
            }
        } else {
            for d in (0..lens.len().saturating_sub(1)).rev() {
                strides[d] = strides[d + 1] * lens[d + 1];
            }
        }
        Ok(DenseGrid {
            axes,
            subarray: subarray.to_vec(),
            strides,
            tile_col_major: schema.tile_order == SchemaOrder::ColMajor,
            cell_col_major: schema.cell_order == SchemaOrder::ColMajor,
            global: input_order == DenseInputOrder::Global,
        })
    }

    fn tile_num(&self) -> usize {
        self.axes
            .iter()
            .map(|a| (a.last_tile - a.first_tile + 1) as usize)
            .product()
    }

    /// The cells of a space tile.
    pub(crate) fn cells_per_tile(&self) -> u64 {
        self.axes.iter().map(|a| a.extent as u64).product()
    }

    /// The space tile coordinates of the `t`-th tile in tile order.
    fn tile_at(&self, mut t: usize) -> Vec<i128> {
        let n = self.axes.len();
        let mut at = vec![0i128; n];
        for k in 0..n {
            // The fastest-varying dimension first.
            let d = if self.tile_col_major { k } else { n - 1 - k };
            let a = self.axes[d];
            let count = (a.last_tile - a.first_tile + 1) as usize;
            at[d] = a.first_tile + (t % count) as i128;
            t /= count;
        }
        at
    }

    /// The runs of the `t`-th tile: along the cell order's fastest
    /// dimension, each line of the tile is fill, or fill around a run of
    /// input cells.
    fn runs(&self, t: usize) -> Vec<Run> {
        if self.global {
            let len = self.cells_per_tile() as usize;
            return vec![Run {
                from: Some(t * len),
                step: 1,
                len,
            }];
        }
        let tile = self.tile_at(t);
        let n = self.axes.len();
        let fast = if self.cell_col_major { 0 } else { n - 1 };
        let ranges: Vec<(i128, i128)> = self
            .axes
            .iter()
            .zip(&tile)
            .map(|(a, ti)| (a.low + ti * a.extent, a.low + (ti + 1) * a.extent - 1))
            .collect();
        let (line_lo, line_hi) = ranges[fast];
        let line_len = (line_hi - line_lo + 1) as usize;
        let (s_lo, s_hi) = self.subarray[fast];
        let (in_lo, in_hi) = (line_lo.max(s_lo), line_hi.min(s_hi));
        let mut outer = ranges.clone();
        outer[fast] = (line_lo, line_lo);
        let mut runs = Vec::new();
        let mut push = |run: Run| match runs.last_mut() {
            Some(Run {
                from: None, len, ..
            }) if run.from.is_none() => *len += run.len,
            _ => runs.push(run),
        };
        for_each_index(&outer, self.cell_col_major, &mut |c| {
            let inside = (0..n)
                .all(|d| d == fast || (c[d] >= self.subarray[d].0 && c[d] <= self.subarray[d].1));
            if !inside || in_lo > in_hi {
                push(Run {
                    from: None,
                    step: 0,
                    len: line_len,
                });
                return;
            }
            let start: i128 = (0..n)
                .map(|d| {
                    let x = if d == fast { in_lo } else { c[d] };
                    (x - self.subarray[d].0) * self.strides[d]
                })
                .sum();
            let before = (in_lo - line_lo) as usize;
            let inner = (in_hi - in_lo + 1) as usize;
            if before > 0 {
                push(Run {
                    from: None,
                    step: 0,
                    len: before,
                });
            }
            push(Run {
                from: Some(start as usize),
                step: self.strides[fast] as usize,
                len: inner,
            });
            let after = line_len - before - inner;
            if after > 0 {
                push(Run {
                    from: None,
                    step: 0,
                    len: after,
                });
            }
        });
        runs
    }
}

/// Calls `f` with every index of the box `ranges`, the last dimension
/// varying fastest (or the first, when `col_major`).
fn for_each_index(ranges: &[(i128, i128)], col_major: bool, f: &mut dyn FnMut(&[i128])) {
    if ranges.iter().any(|(lo, hi)| lo > hi) {
        return;
    }
    let mut idx: Vec<i128> = ranges.iter().map(|r| r.0).collect();
    let order: Vec<usize> = if col_major {
        (0..ranges.len()).collect()
    } else {
        (0..ranges.len()).rev().collect()
    };
    loop {
        f(&idx);
        let mut carried = true;
        for &d in &order {
            if idx[d] < ranges[d].1 {
                idx[d] += 1;
                carried = false;
                break;
            }
            idx[d] = ranges[d].0;
        }
        if carried {
            return;
        }
    }
}

impl TilePlan {
    /// The number of tiles.
    pub(crate) fn len(&self) -> usize {
        match self {
            TilePlan::Dense(grid) => grid.tile_num(),
            TilePlan::Sparse {
                cells, capacity, ..
            } => cells.div_ceil(*capacity),
        }
    }

    /// The cells of tile `t`, fill included.
    pub(crate) fn cell_num(&self, t: usize) -> u64 {
        match self {
            TilePlan::Dense(grid) => grid.cells_per_tile(),
            TilePlan::Sparse {
                cells, capacity, ..
            } => (cells - t * capacity).min(*capacity) as u64,
        }
    }

    /// The cells of tile `t`.
    pub(crate) fn cells(&self, t: usize) -> Cells<'_> {
        match self {
            TilePlan::Dense(grid) => Cells::Runs(grid.runs(t)),
            TilePlan::Sparse {
                order,
                cells,
                capacity,
            } => {
                let (start, end) = (t * capacity, ((t + 1) * capacity).min(*cells));
                match order {
                    SparseOrder::AsGiven => Cells::Runs(vec![Run {
                        from: Some(start),
                        step: 1,
                        len: end - start,
                    }]),
                    SparseOrder::Permuted(order) => Cells::Listed(&order[start..end]),
                }
            }
        }
    }

    /// Dense: the cells of a space tile (0 for sparse).
    pub(crate) fn cells_per_tile(&self) -> u64 {
        match self {
            TilePlan::Dense(grid) => grid.cells_per_tile(),
            TilePlan::Sparse { .. } => 0,
        }
    }
}
