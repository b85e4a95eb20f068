//! A dense write from cells that carry their coordinates (as `tdb read`
//! prints them, or as an Arrow record batch holds them): the coordinates
//! must cover a box, which becomes the write's subarray, and the cells are
//! put in its row-major order.

use crate::column::Column;
use crate::error::{Error, Result};
use crate::schema::{ArraySchema, Scalar};
use crate::write::{Write, WriteLayout};

/// A dense write of `attrs`, whose cells sit at the coordinates `coords`
/// (one column per dimension, in any order). Refused (usage error) unless
/// the coordinates cover a box exactly once.
pub fn dense_from_coordinates(
    schema: &ArraySchema,
    coords: &[Column],
    attrs: Vec<Column>,
) -> Result<Write> {
    let usage = |m: String| Error::Usage(m);
    let mut per_dim = Vec::new();
    for d in &schema.dimensions {
        let c = coords
            .iter()
            .find(|c| c.name == d.name)
            .ok_or_else(|| usage(format!("no coordinates for dimension {}", d.name)))?;
        let xs: Vec<i128> = (0..c.len())
            .map(|i| {
                Scalar::decode(d.datatype, c.cell_bytes(i))
                    .and_then(|s| s.as_int())
                    .ok_or_else(|| usage(format!("{}: an integer coordinate", d.name)))
            })
            .collect::<Result<_>>()?;
        per_dim.push(xs);
    }
    let n = per_dim.first().map_or(0, Vec::len);
    if let Some(c) = per_dim
        .iter()
        .zip(&schema.dimensions)
        .find(|(xs, _)| xs.len() != n)
    {
        return Err(usage(format!(
            "dimension {} has {} coordinates, not {n}",
            c.1.name,
            c.0.len()
        )));
    }
    let sub: Vec<(i128, i128)> = per_dim
        .iter()
        .map(|xs| {
            (
                xs.iter().copied().min().unwrap_or(0),
                xs.iter().copied().max().unwrap_or(-1),
            )
        })
        .collect();
    let cells = sub
        .iter()
        .try_fold(1i128, |acc, (lo, hi)| acc.checked_mul(hi - lo + 1))
        .unwrap_or(i128::MAX);
    if cells != n as i128 {
        return Err(usage(format!(
            "the {n} coordinates do not cover the box {sub:?} ({cells} cells)"
        )));
    }
    // Each cell's place in the box, row-major.
    let mut order = vec![usize::MAX; n];
    for i in 0..n {
        let mut at = 0i128;
        for (xs, (lo, hi)) in per_dim.iter().zip(&sub) {
            at = at * (hi - lo + 1) + (xs[i] - lo);
        }
        let slot = &mut order[at as usize];
        if *slot != usize::MAX {
            return Err(usage(format!(
                "the coordinates of cells {} and {i} are the same",
                *slot
            )));
        }
        *slot = i;
    }
    let attrs = attrs
        .into_iter()
        .map(|c| {
            let mut sorted = Column::new(&c.name, c.datatype, c.cell_val_num, c.nullable);
            for &i in &order {
                let (bytes, valid) = c.cell(i);
                sorted.push(bytes, valid);
            }
            sorted
        })
        .collect();
    Ok(Write::dense(sub, attrs).with_layout(WriteLayout::RowMajor))
}
