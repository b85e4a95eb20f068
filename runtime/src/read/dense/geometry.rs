//! Where a cell of a dense array lives: which space tile of a fragment, and
//! which position inside that tile.
//!
//! Dense dimensions are integral (integers and date/time types), so every
//! coordinate fits in an `i128` whatever its datatype; working in `i128`
//! avoids the unsigned wrap-around tricks TileDB needs in the type itself.
//!
//! A dense fragment covers its non-empty domain expanded outwards to tile
//! boundaries. Its tiles are numbered in the schema's tile order over that
//! expanded box, and the cells of one tile are laid out in the cell order over
//! the tile's full extent box — including cells outside the non-empty domain,
//! which TileDB fills with zeros and which a reader must never show.

/// Row- or column-major: the only orders a dense array uses for tiles and cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The last dimension varies fastest.
    RowMajor,
    /// The first dimension varies fastest.
    ColMajor,
}

/// One dimension of a dense domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DenseDimension {
    /// The domain's lower bound.
    pub low: i128,
    /// The domain's upper bound (inclusive).
    pub high: i128,
    /// The space-tile extent, at least 1.
    pub extent: i128,
}

/// An inclusive range of coordinates along one dimension.
pub type Span = (i128, i128);

impl DenseDimension {
    /// The index of the space tile holding `coord`, counted from the domain's
    /// lower bound.
    pub fn tile_index(&self, coord: i128) -> i128 {
        (coord - self.low).div_euclid(self.extent)
    }

    /// The first coordinate of tile `index`.
    pub fn tile_low(&self, index: i128) -> i128 {
        self.low + index * self.extent
    }

    /// `span` widened to whole tiles.
    pub fn expand_to_tiles(&self, span: Span) -> Span {
        let first = self.tile_index(span.0);
        let last = self.tile_index(span.1);
        (self.tile_low(first), self.tile_low(last + 1) - 1)
    }
}

/// The tile layout of one dense fragment: its expanded box and the orders.
#[derive(Debug, Clone)]
pub struct FragmentTiling {
    dims: Vec<DenseDimension>,
    /// The non-empty domain widened to tile boundaries.
    expanded: Vec<Span>,
    tile_order: Order,
    cell_order: Order,
}

impl FragmentTiling {
    /// `non_empty` has one span per dimension of `dims`.
    pub fn new(
        dims: &[DenseDimension],
        non_empty: &[Span],
        tile_order: Order,
        cell_order: Order,
    ) -> Self {
        let expanded = dims
            .iter()
            .zip(non_empty)
            .map(|(dim, span)| dim.expand_to_tiles(*span))
            .collect();
        FragmentTiling {
            dims: dims.to_vec(),
            expanded,
            tile_order,
            cell_order,
        }
    }

    /// Number of cells in one tile: the product of the extents.
    pub fn cells_per_tile(&self) -> u64 {
        self.dims.iter().map(|d| d.extent as u64).product()
    }

    /// Number of tiles of the fragment (the unit tests' measure of a tiling).
    #[cfg(test)]
    pub fn tile_count(&self) -> u64 {
        (0..self.dims.len())
            .map(|d| self.tiles_along(d) as u64)
            .product()
    }

    fn tiles_along(&self, d: usize) -> i128 {
        let (lo, hi) = self.expanded[d];
        (hi - lo + 1) / self.dims[d].extent
    }

    /// The position of the tile that holds `coords` among the fragment's
    /// tiles, in tile order.
    pub fn tile_position(&self, coords: &[i128]) -> u64 {
        let per_dim = (0..self.dims.len()).map(|d| {
            let first = self.dims[d].tile_index(self.expanded[d].0);
            (
                self.dims[d].tile_index(coords[d]) - first,
                self.tiles_along(d),
            )
        });
        linearize(per_dim.collect::<Vec<_>>(), self.tile_order) as u64
    }

    /// How far apart, in cell positions inside a tile, two cells are that
    /// differ by one along dimension `d`.
    pub fn cell_stride(&self, d: usize) -> u64 {
        let extents = self.dims.iter().map(|x| x.extent as u64);
        match self.cell_order {
            Order::RowMajor => extents.skip(d + 1).product(),
            Order::ColMajor => extents.take(d).product(),
        }
    }

    /// How many cells TileDB's dense writer copies into tile `tile` at a
    /// time when the write covered `written` in the tile's cell order:
    /// along the innermost dimension the cells the write holds in the tile,
    /// times those of the next dimension out for as long as the write's
    /// range along a dimension is exactly the tile's (its cells are then
    /// consecutive both in the tile and in the written buffer). `None`
    /// when the write holds no cell of the tile.
    pub fn slab_cells(&self, tile: u64, written: &[Span]) -> Option<u64> {
        let n = self.dims.len();
        let along: Vec<i128> = (0..n).map(|d| self.tiles_along(d).max(1)).collect();
        let tile_index = delinearize(tile as i128, &along, self.tile_order);
        let inner_first: Vec<usize> = match self.cell_order {
            Order::RowMajor => (0..n).rev().collect(),
            Order::ColMajor => (0..n).collect(),
        };
        let mut cells: u64 = 1;
        for d in inner_first {
            let extent = self.dims[d].extent.max(1);
            let low = self.expanded[d].0 + tile_index[d] * extent;
            let high = low + extent - 1;
            let (lo, hi) = *written.get(d)?;
            let (from, to) = (lo.max(low), hi.min(high));
            if from > to {
                return None;
            }
            cells = cells.saturating_mul((to - from + 1) as u64);
            if (lo, hi) != (low, high) {
                break;
            }
        }
        Some(cells)
    }

    /// The first `cells` positions of a tile (in cell order), sorted into
    /// row-major order of their coordinates.
    pub fn row_major_order(&self, cells: usize) -> Vec<usize> {
        let extents: Vec<i128> = self.dims.iter().map(|d| d.extent.max(1)).collect();
        let mut order: Vec<(i128, usize)> = (0..cells)
            .map(|c| {
                let offsets = delinearize(c as i128, &extents, self.cell_order);
                let per_dim = offsets.into_iter().zip(extents.iter().copied()).collect();
                (linearize(per_dim, Order::RowMajor), c)
            })
            .collect();
        order.sort_unstable();
        order.into_iter().map(|(_, c)| c).collect()
    }

    /// The position of the cell `coords` inside its tile, in cell order.
    pub fn cell_position(&self, coords: &[i128]) -> u64 {
        let per_dim = (0..self.dims.len()).map(|d| {
            let dim = &self.dims[d];
            let offset = (coords[d] - dim.low).rem_euclid(dim.extent);
            (offset, dim.extent)
        });
        linearize(per_dim.collect::<Vec<_>>(), self.cell_order) as u64
    }
}

impl FragmentTiling {
    /// Whether each of the first `cells` cells (in cell order) of tile
    /// `tile` lies inside `non_empty`: the cells a dense write wrote; the
    /// rest of the tile is padding.
    pub fn written_cells(&self, tile: u64, cells: usize, non_empty: &[Span]) -> Vec<bool> {
        let n = self.dims.len();
        let along: Vec<i128> = (0..n).map(|d| self.tiles_along(d).max(1)).collect();
        let tile_index = delinearize(tile as i128, &along, self.tile_order);
        let extents: Vec<i128> = self.dims.iter().map(|d| d.extent.max(1)).collect();
        let low: Vec<i128> = (0..n)
            .map(|d| self.expanded[d].0 + tile_index[d] * extents[d])
            .collect();
        (0..cells)
            .map(|c| {
                let offsets = delinearize(c as i128, &extents, self.cell_order);
                (0..n).all(|d| {
                    let x = low[d] + offsets[d];
                    non_empty
                        .get(d)
                        .is_some_and(|(lo, hi)| *lo <= x && x <= *hi)
                })
            })
            .collect()
    }
}

/// The index along each dimension of a linear position, given each
/// dimension's length (the inverse of [`linearize`]).
fn delinearize(mut position: i128, lengths: &[i128], order: Order) -> Vec<i128> {
    let mut out = vec![0; lengths.len()];
    let mut visit = |d: usize| {
        out[d] = position % lengths[d];
        position /= lengths[d];
    };
    match order {
        Order::RowMajor => (0..lengths.len()).rev().for_each(&mut visit),
        Order::ColMajor => (0..lengths.len()).for_each(&mut visit),
    }
    out
}

/// Linear position of a point given `(index, length)` per dimension.
fn linearize(per_dim: Vec<(i128, i128)>, order: Order) -> i128 {
    let mut position = 0i128;
    match order {
        Order::RowMajor => {
            for (index, length) in per_dim {
                position = position * length + index;
            }
        }
        Order::ColMajor => {
            for (index, length) in per_dim.into_iter().rev() {
                position = position * length + index;
            }
        }
    }
    position
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dim(low: i128, high: i128, extent: i128) -> DenseDimension {
        DenseDimension { low, high, extent }
    }

    #[test]
    fn expansion_reaches_tile_boundaries_measured_from_the_domain_low() {
        let d = dim(1, 100, 10);
        assert_eq!(d.expand_to_tiles((1, 1)), (1, 10));
        assert_eq!(d.expand_to_tiles((5, 25)), (1, 30));
        assert_eq!(d.expand_to_tiles((11, 20)), (11, 20));
        let negative = dim(-8, 7, 4);
        assert_eq!(negative.expand_to_tiles((-7, -1)), (-8, 3 - 4));
    }

    /// A 4×4 domain with 2×2 tiles; every cell's (tile, cell) position is
    /// checked against a plain enumeration of the layout.
    #[test]
    fn every_cell_of_a_small_domain_in_all_four_orders() {
        let dims = [dim(1, 4, 2), dim(1, 4, 2)];
        for tile_order in [Order::RowMajor, Order::ColMajor] {
            for cell_order in [Order::RowMajor, Order::ColMajor] {
                let tiling = FragmentTiling::new(&dims, &[(1, 4), (1, 4)], tile_order, cell_order);
                assert_eq!(tiling.tile_count(), 4);
                assert_eq!(tiling.cells_per_tile(), 4);
                // One step along a dimension moves this far inside a tile.
                let strides = match cell_order {
                    Order::RowMajor => (2, 1),
                    Order::ColMajor => (1, 2),
                };
                assert_eq!((tiling.cell_stride(0), tiling.cell_stride(1)), strides);
                let mut seen = std::collections::HashSet::new();
                for r in 1..=4i128 {
                    for c in 1..=4i128 {
                        let (tr, tc) = ((r - 1) / 2, (c - 1) / 2);
                        let (cr, cc) = ((r - 1) % 2, (c - 1) % 2);
                        let tile = match tile_order {
                            Order::RowMajor => tr * 2 + tc,
                            Order::ColMajor => tc * 2 + tr,
                        };
                        let cell = match cell_order {
                            Order::RowMajor => cr * 2 + cc,
                            Order::ColMajor => cc * 2 + cr,
                        };
                        assert_eq!(tiling.tile_position(&[r, c]) as i128, tile);
                        assert_eq!(tiling.cell_position(&[r, c]) as i128, cell);
                        assert!(seen.insert((tile, cell)));
                    }
                }
            }
        }
    }

    /// The written cells of every tile are exactly the cells of the
    /// non-empty domain, found through the forward mapping.
    #[test]
    fn written_cells_are_the_non_empty_domain() {
        let dims = [dim(0, 99, 4), dim(-5, 50, 3)];
        let non_empty = [(6, 13), (-4, 2)];
        for tile_order in [Order::RowMajor, Order::ColMajor] {
            for cell_order in [Order::RowMajor, Order::ColMajor] {
                let tiling = FragmentTiling::new(&dims, &non_empty, tile_order, cell_order);
                let per_tile = tiling.cells_per_tile() as usize;
                let mut expected = vec![vec![false; per_tile]; tiling.tile_count() as usize];
                for r in 6..=13 {
                    for c in -4..=2 {
                        let (t, p) = (tiling.tile_position(&[r, c]), tiling.cell_position(&[r, c]));
                        expected[t as usize][p as usize] = true;
                    }
                }
                for (t, want) in expected.iter().enumerate() {
                    assert_eq!(
                        &tiling.written_cells(t as u64, per_tile, &non_empty),
                        want,
                        "tile {t}, {tile_order:?} tiles, {cell_order:?} cells"
                    );
                }
            }
        }
    }

    #[test]
    fn tiles_count_from_the_expanded_non_empty_domain() {
        let dims = [dim(0, 99, 10), dim(0, 99, 10)];
        let tiling =
            FragmentTiling::new(&dims, &[(25, 44), (3, 3)], Order::RowMajor, Order::RowMajor);
        // Rows 20..49 (3 tiles) × columns 0..9 (1 tile).
        assert_eq!(tiling.tile_count(), 3);
        assert_eq!(tiling.tile_position(&[25, 3]), 0);
        assert_eq!(tiling.tile_position(&[44, 3]), 2);
        assert_eq!(tiling.cell_position(&[25, 3]), 5 * 10 + 3);
    }
}
