//! Sorting coordinates: row-major, column-major and the global order (space
//! tiles in tile order, then cells in cell order, or the Hilbert order).

use std::cmp::Ordering;

use crate::read::hilbert;
use crate::schema::{ArraySchema, Scalar, SchemaOrder};

/// Compares two coordinate tuples dimension by dimension, in `order`.
pub fn compare_coords(a: &[Scalar], b: &[Scalar], col_major: bool) -> Ordering {
    let n = a.len().min(b.len());
    let mut dims: Vec<usize> = (0..n).collect();
    if col_major {
        dims.reverse();
    }
    for d in dims {
        let o = a[d].compare(&b[d]);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// The keys that put coordinates in the array's global order.
pub struct GlobalOrder {
    /// Per dimension: `(domain low, extent)` when the dimension has tiles.
    tiles: Vec<Option<(Scalar, Scalar)>>,
    tile_col_major: bool,
    cell_order: SchemaOrder,
    /// Per dimension, the numeric domain for Hilbert mapping.
    hilbert_domains: Vec<Option<(f64, f64)>>,
}

/// A sort key in global order.
#[derive(Debug, Clone)]
pub struct GlobalKey {
    tile: Vec<i128>,
    hilbert: u64,
}

impl GlobalKey {
    /// Compares two keys: tiles, then Hilbert values.
    pub(crate) fn tile_cmp(&self, other: &GlobalKey) -> Ordering {
        self.tile
            .cmp(&other.tile)
            .then(self.hilbert.cmp(&other.hilbert))
    }
}

impl GlobalOrder {
    /// The global order of `schema`: its tile order, then its cell order (Hilbert when the schema says so).
    pub fn new(schema: &ArraySchema) -> GlobalOrder {
        let tiles = schema
            .dimensions
            .iter()
            .map(|d| {
                if d.var {
                    return None;
                }
                let (lo, _) = d.domain_scalars()?;
                Some((lo, d.extent_scalar()?))
            })
            .collect();
        let hilbert_domains = schema
            .dimensions
            .iter()
            .map(|d| {
                let (lo, hi) = d.domain_scalars()?;
                Some((lo.as_f64()?, hi.as_f64()?))
            })
            .collect();
        GlobalOrder {
            tiles,
            tile_col_major: schema.tile_order == SchemaOrder::ColMajor,
            cell_order: schema.cell_order,
            hilbert_domains,
        }
    }

    /// The sort key of the cell at `coords`, one scalar per dimension.
    pub fn key(&self, coords: &[Scalar]) -> GlobalKey {
        if self.cell_order == SchemaOrder::Hilbert {
            let bits = hilbert::bits_per_dim(coords.len());
            let max = hilbert::max_bucket(bits);
            let mut mapped: Vec<u64> = coords
                .iter()
                .enumerate()
                .map(|(d, c)| match c {
                    Scalar::Bytes(b) => hilbert::map_string(b, bits),
                    other => {
                        let (lo, hi) = self
                            .hilbert_domains
                            .get(d)
                            .copied()
                            .flatten()
                            .unwrap_or((0.0, 1.0));
                        hilbert::map_numeric(other.as_f64().unwrap_or(0.0), lo, hi, max)
                    }
                })
                .collect();
            return GlobalKey {
                tile: Vec::new(),
                hilbert: hilbert::hilbert_value(&mut mapped, bits),
            };
        }
        let mut tile: Vec<i128> = coords
            .iter()
            .enumerate()
            .filter_map(|(d, c)| self.tile_of(d, c))
            .collect();
        if self.tile_col_major {
            tile.reverse();
        }
        GlobalKey { tile, hilbert: 0 }
    }

    /// The space tile of coordinate `c` along dimension `d` (its place in
    /// the key); `None` when the dimension has no tiles (var-sized) and so
    /// no place in the key.
    pub(crate) fn tile_of(&self, d: usize, c: &Scalar) -> Option<i128> {
        let (lo, ext) = self.tiles.get(d)?.as_ref()?;
        Some(match (c, lo, ext) {
            (Scalar::Int(x), Scalar::Int(lo), Scalar::Int(e)) if *e > 0 => (x - lo).div_euclid(*e),
            _ => {
                let (x, lo, e) = (c.as_f64()?, lo.as_f64()?, ext.as_f64()?);
                if e > 0.0 {
                    ((x - lo) / e).floor() as i128
                } else {
                    0
                }
            }
        })
    }

    /// Whether the cell order is Hilbert's (the key is then one number).
    pub(crate) fn is_hilbert(&self) -> bool {
        self.cell_order == SchemaOrder::Hilbert
    }

    /// Whether the tiles go in column-major order.
    pub(crate) fn tile_col_major(&self) -> bool {
        self.tile_col_major
    }

    /// The Hilbert value of a key (0 unless the cell order is Hilbert).
    pub(crate) fn hilbert_of(key: &GlobalKey) -> u64 {
        key.hilbert
    }

    /// Compares two cells given their keys and coordinates.
    pub fn compare(&self, ka: &GlobalKey, a: &[Scalar], kb: &GlobalKey, b: &[Scalar]) -> Ordering {
        if self.cell_order == SchemaOrder::Hilbert {
            return ka
                .hilbert
                .cmp(&kb.hilbert)
                .then_with(|| compare_coords(a, b, false));
        }
        ka.tile
            .cmp(&kb.tile)
            .then_with(|| compare_coords(a, b, self.cell_order == SchemaOrder::ColMajor))
    }
}
