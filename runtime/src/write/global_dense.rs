//! Dense writes in global order, as TileDB's `GlobalOrderWriter` takes them:
//! the subarray must coincide with space tile bounds (`WriterBase`: "In
//! global writes for dense arrays, the subarray must coincide with the tile
//! bounds"), and the cells come tile after
//! tile in the schema's tile order, each tile's cells in its cell order.
//! Such a write is the row-major write of the same box with its cells put
//! in row-major order: the fragment TileDB writes from it is the one it
//! writes from the row-major form (a dense fragment stores its tiles in
//! global order whatever the query's layout).

use crate::error::Result;
use crate::schema::{ArraySchema, Scalar, SchemaOrder};

use super::fragment_input::{usage, Column};

/// A dense write's box (`[lo, hi]` per dimension) and its columns.
pub(super) type BoxAndColumns = (Vec<(i128, i128)>, Vec<Column>);

/// The box `subarray` and the `columns` of a dense write in global order,
/// as the box and columns of the equivalent row-major write.
pub(super) fn to_row_major(
    schema: &ArraySchema,
    subarray: Option<&[(i128, i128)]>,
    columns: &[Column],
) -> Result<BoxAndColumns> {
    let sub = subarray
        .ok_or_else(|| usage("a dense write needs a subarray"))?
        .to_vec();
    if sub.len() != schema.dimensions.len() {
        return Err(usage("the subarray needs one range per dimension"));
    }
    // Per dimension: the subarray's first cell, its extent in cells, the
    // tile extent.
    let mut shape = Vec::with_capacity(sub.len());
    for (d, &(lo, hi)) in schema.dimensions.iter().zip(&sub) {
        let Some((Scalar::Int(dlo), Scalar::Int(dhi))) = d.domain_scalars() else {
            return Err(usage(format!(
                "dimension {}: not an integer domain",
                d.name
            )));
        };
        let tile = d
            .extent
            .as_deref()
            .and_then(|e| Scalar::decode(d.datatype, e))
            .and_then(|s| s.as_int())
            .unwrap_or(dhi - dlo + 1);
        if lo > hi || tile <= 0 || (lo - dlo) % tile != 0 || (hi - dlo + 1) % tile != 0 {
            return Err(usage(format!(
                "In global writes for dense arrays, the subarray must coincide with the \
                 tile bounds (dimension {}: [{lo}, {hi}], tiles of {tile} from {dlo})",
                d.name
            )));
        }
        let cells = usize::try_from(hi - lo + 1).map_err(|_| usage("the subarray is too large"))?;
        shape.push((cells, tile as usize));
    }
    let n = shape
        .iter()
        .try_fold(1usize, |acc, (cells, _)| acc.checked_mul(*cells))
        .ok_or_else(|| usage("the subarray is too large"))?;
    if let Some(bad) = columns.iter().find_map(Column::shape_error) {
        return Err(usage(bad));
    }
    if let Some(c) = columns.iter().find(|c| c.len() != n) {
        return Err(usage(format!(
            "{} holds {} cells, the subarray {n}",
            c.name,
            c.len()
        )));
    }
    let order = row_major_order(schema, &shape, n);
    let columns = columns
        .iter()
        .map(|c| {
            let mut sorted = Column::new(&c.name, c.datatype, c.cell_val_num, c.nullable);
            for &k in &order {
                let (bytes, valid) = c.cell(k);
                sorted.push(bytes, valid);
            }
            sorted
        })
        .collect();
    Ok((sub, columns))
}

/// For each cell of the box in row-major order, its index in global order.
fn row_major_order(schema: &ArraySchema, shape: &[(usize, usize)], n: usize) -> Vec<usize> {
    let dims = shape.len();
    let tiles: Vec<usize> = shape.iter().map(|(cells, tile)| cells / tile).collect();
    let tile_cells: usize = shape.iter().map(|(_, tile)| tile).product();
    // Dimension indexes from fastest to slowest for an order.
    let fastest_first = |order: SchemaOrder| -> Vec<usize> {
        match order {
            SchemaOrder::ColMajor => (0..dims).collect(),
            _ => (0..dims).rev().collect(),
        }
    };
    let (tile_dims, cell_dims) = (
        fastest_first(schema.tile_order),
        fastest_first(schema.cell_order),
    );
    let mut order = vec![0usize; n];
    let mut coords = vec![0usize; dims];
    for k in 0..n {
        let (mut t, mut w) = (k / tile_cells, k % tile_cells);
        for &d in &tile_dims {
            coords[d] = (t % tiles[d]) * shape[d].1;
            t /= tiles[d];
        }
        for &d in &cell_dims {
            coords[d] += w % shape[d].1;
            w /= shape[d].1;
        }
        let row_major = coords
            .iter()
            .zip(shape)
            .fold(0usize, |at, (&x, (cells, _))| at * cells + x);
        order[row_major] = k;
    }
    order
}
