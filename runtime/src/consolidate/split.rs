//! The output of one consolidation step: one fragment, or, under
//! `sm.consolidation.max_fragment_size`, several, cut where TileDB's global
//! order writer cuts them (`GlobalOrderWriter::identify_fragment_tile_boundaries`).
//!
//! The tiles are weighed in global order, each by its stored bytes over
//! every field written. A fragment takes tiles while their sum stays within
//! the limit; a single tile over the limit is refused. Dense fragments must
//! also cover a rectangle of whole tiles (their non-empty domain is that
//! rectangle cut to the consolidated union), so a dense fragment ends at
//! the last tile where its tiles still formed a rectangle, and the tiles
//! after it start the next one. A sparse fragment's last, partial tile is
//! written when the writer finishes, without weighing: it always joins the
//! last fragment. All fragments carry the run's time span and are committed
//! together by one `.con` file listing their markers; the `.vac` file is
//! named after the first, and only the first takes the run's place among
//! the candidates of the next step.

use super::select::IntRect;
use super::span_name;
use crate::column::Column;
use crate::directory::text_files::{encode_consolidated_commits, encode_lines};
use crate::directory::{Extension, COMMITS_DIR};
use crate::error::{Error, Result};
use crate::schema::{ArraySchema, Scalar};
use crate::storage::{RelPath, Storage};
use crate::write::fragment::{
    commit, tile_sizes, write_fragment_uncommitted, DeleteMeta, FragmentInput, TileCells,
};

/// What one step writes: the cells, the run they come from, and how.
pub(super) struct StepOutput<'a> {
    pub storage: &'a dyn Storage,
    pub schema: &'a ArraySchema,
    pub input: FragmentInput,
    pub inputs: &'a [crate::directory::Fragment],
    pub processed: &'a [String],
    /// Dense: the union of the run's non-empty domains (the input's
    /// subarray is that union expanded to whole tiles).
    pub union: Option<&'a IntRect>,
    pub max_fragment_size: u64,
}

/// Writes the step's fragments, then the `.vac` file listing the run.
/// Returns the fragments' names, first written first.
pub(super) fn write_step(out: StepOutput<'_>) -> Result<Vec<String>> {
    let t1 = out
        .inputs
        .iter()
        .map(|f| f.name.timestamp_start())
        .min()
        .unwrap_or(0);
    let t2 = out
        .inputs
        .iter()
        .map(|f| f.name.timestamp_end())
        .max()
        .unwrap_or(0);
    let parts = if out.max_fragment_size == u64::MAX {
        vec![out.input]
    } else {
        cut(
            out.schema,
            out.input,
            out.union,
            out.max_fragment_size,
            out.processed,
        )?
    };
    let mut names = Vec::with_capacity(parts.len());
    for part in &parts {
        let name = span_name(t1, t2, true, None)?;
        write_fragment_uncommitted(out.storage, out.schema, part, &name, out.processed)?;
        names.push(name);
    }
    let Some(first) = names.first() else {
        return Ok(Vec::new());
    };
    // One fragment gets its marker; several are committed together, by one
    // `.con` file listing their markers, as TileDB's writer does: all of
    // them become visible at once.
    if let [only] = &names[..] {
        commit(out.storage, only)?;
    } else {
        let commits = RelPath::parse(COMMITS_DIR)?;
        let markers = names
            .iter()
            .map(|n| commits.join(n.with_extension(Some(Extension::Wrt)).as_str()))
            .collect::<Result<Vec<_>>>()?;
        let bytes = encode_consolidated_commits(markers.iter().map(|m| (m, None)))?;
        let con = span_name(t1, t2, true, Some(Extension::Con))?;
        out.storage.write(&commits.join(con.as_str())?, &bytes)?;
    }
    let lines: Vec<String> = out
        .inputs
        .iter()
        .map(|f| format!("/{}", f.path.as_str()))
        .collect();
    let vac = first.with_extension(Some(Extension::Vac));
    out.storage.write(
        &RelPath::parse(COMMITS_DIR)?.join(vac.as_str())?,
        &encode_lines(lines.iter().map(String::as_str))?,
    )?;
    Ok(names.iter().map(|n| n.as_str().to_string()).collect())
}

/// The cells `keep` lists, in that order, of a column.
pub(super) fn gather(column: &Column, keep: &[usize]) -> Column {
    let mut out = Column::new(
        &column.name,
        column.datatype,
        column.cell_val_num,
        column.nullable,
    );
    for &i in keep {
        let (bytes, valid) = column.cell(i);
        out.push(bytes, valid);
    }
    out
}

/// The cells `keep` lists of every column of a sparse input.
pub(super) fn gather_input(input: &FragmentInput, keep: &[usize]) -> FragmentInput {
    let pick = |v: &[u64]| keep.iter().map(|&i| v[i]).collect::<Vec<u64>>();
    FragmentInput {
        dims: input.dims.iter().map(|c| gather(c, keep)).collect(),
        attrs: input.attrs.iter().map(|c| gather(c, keep)).collect(),
        timestamps: input.timestamps.as_deref().map(pick),
        delete_meta: input.delete_meta.as_ref().map(|d| DeleteMeta {
            timestamps: pick(&d.timestamps),
            condition_indexes: pick(&d.condition_indexes),
        }),
        key: input.key,
        ..Default::default()
    }
}

/// Cuts the step's cells into fragments of at most `max` bytes of tiles.
fn cut(
    schema: &ArraySchema,
    input: FragmentInput,
    union: Option<&IntRect>,
    max: u64,
    processed: &[String],
) -> Result<Vec<FragmentInput>> {
    let (tiles, sizes) = tile_sizes(schema, &input, processed)?;
    let dense = input.subarray.clone().zip(union.cloned());
    let Some((subarray, union)) = dense else {
        return cut_sparse(schema, input, &tiles, &sizes, max);
    };
    let grid = TileGrid::new(schema, &subarray)?;
    let starts = boundaries(&sizes, sizes.len(), max, Some(&grid))?;
    let mut parts = Vec::with_capacity(starts.len());
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(sizes.len());
        let Some(rect) = grid.rectangle(start, end - start) else {
            return Err(Error::Usage(
                "max_fragment_size: the dense tiles of a fragment form no rectangle".into(),
            ));
        };
        // The cells written: the rectangle of whole tiles, within the
        // written subarray; its non-empty domain: that cut to the union.
        let cells: IntRect = rect
            .iter()
            .zip(&subarray)
            .map(|(&(lo, hi), &(slo, shi))| (lo.max(slo), hi.min(shi)))
            .collect();
        let ned: IntRect = cells
            .iter()
            .zip(&union)
            .map(|(&(lo, hi), &(ulo, uhi))| (lo.max(ulo), hi.min(uhi)))
            .collect();
        let keep = row_major_indexes(&subarray, &cells);
        parts.push(FragmentInput {
            attrs: input.attrs.iter().map(|c| gather(c, &keep)).collect(),
            subarray: Some(cells),
            non_empty_domain: Some(ned),
            key: input.key,
            ..Default::default()
        });
    }
    Ok(parts)
}

/// Sparse: whole tiles by size; the partial last tile joins the last part.
fn cut_sparse(
    schema: &ArraySchema,
    input: FragmentInput,
    tiles: &[TileCells],
    sizes: &[u64],
    max: u64,
) -> Result<Vec<FragmentInput>> {
    let capacity = schema.capacity.max(1) as usize;
    let full = tiles.iter().filter(|t| t.len() == capacity).count();
    let mut starts = boundaries(sizes, full, max, None)?;
    if starts.is_empty() {
        starts.push(0);
    }
    let mut parts = Vec::with_capacity(starts.len());
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(tiles.len());
        let keep: Vec<usize> = tiles[start..end]
            .iter()
            .flatten()
            .flatten()
            .copied()
            .collect();
        parts.push(gather_input(&input, &keep));
    }
    Ok(parts)
}

/// The first tile of each fragment, for the first `weighed` tiles of
/// `sizes` (the rest join the last fragment), as TileDB's writer decides.
fn boundaries(
    sizes: &[u64],
    weighed: usize,
    max: u64,
    grid: Option<&TileGrid>,
) -> Result<Vec<usize>> {
    let too_small = |what: &str| {
        Error::Usage(format!(
            "sm.consolidation.max_fragment_size {max} is too small to {what}"
        ))
    };
    let shape = |start: usize, t: usize| grid.map(|g| g.shape(start, t - start + 1));
    let mut running = 0u64;
    let mut fragment_size = 0u64;
    let mut start = 0usize;
    let mut end: Option<usize> = None;
    let mut starts = Vec::new();
    for (t, &size) in sizes.iter().enumerate().take(weighed) {
        if size > max {
            return Err(too_small("write a single tile"));
        }
        let new_fragment = if running.saturating_add(size) > max {
            if end.is_none() && fragment_size == 0 {
                return Err(too_small("subdivide the dense subarray into rectangles"));
            }
            true
        } else {
            shape(start, t) == Some(Shape::Never)
        };
        if new_fragment {
            starts.push(start);
            running -= fragment_size;
            start = end.unwrap_or(start);
            end = None;
        }
        if matches!(shape(start, t), None | Some(Shape::Yes)) {
            fragment_size = running + size;
            end = Some(t + 1);
        }
        running += size;
    }
    if end.is_some() || starts.is_empty() {
        starts.push(start);
    }
    Ok(starts)
}

/// Whether a run of tiles is a rectangle (TileDB's `IsRectangularDomain`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Not yet; more tiles may make it one.
    No,
    /// Never, whatever follows.
    Never,
    /// A rectangle.
    Yes,
}

/// The space tiles of a dense subarray (aligned to whole tiles), in tile
/// order.
struct TileGrid {
    /// Per dimension, in the tile order's significance (outermost first):
    /// the dimension index, the aligned start, the extent and the tile count.
    axes: Vec<(usize, i128, i128, u64)>,
}

impl TileGrid {
    fn new(schema: &ArraySchema, subarray: &IntRect) -> Result<TileGrid> {
        let mut axes = Vec::with_capacity(subarray.len());
        for (d, (dim, &(lo, hi))) in schema.dimensions.iter().zip(subarray).enumerate() {
            let (Some((Scalar::Int(dlo), _)), Some(Scalar::Int(ext))) =
                (dim.domain_scalars(), dim.extent_scalar())
            else {
                return Err(Error::Usage(format!(
                    "max_fragment_size: dimension {} has no integer tile extent",
                    dim.name
                )));
            };
            let ext = ext.max(1);
            let start = dlo + (lo - dlo).div_euclid(ext) * ext;
            let count = u64::try_from((hi - start).div_euclid(ext) + 1).unwrap_or(0);
            axes.push((d, start, ext, count));
        }
        if schema.tile_order == crate::schema::SchemaOrder::ColMajor {
            axes.reverse();
        }
        Ok(TileGrid { axes })
    }

    /// Tiles in one hyperrow of axis `k`: the product of the inner counts.
    fn hyperrow(&self, k: usize) -> u64 {
        self.axes[k + 1..]
            .iter()
            .fold(1u64, |acc, a| acc.saturating_mul(a.3))
    }

    fn shape(&self, start: usize, num: usize) -> Shape {
        let (start, num) = (start as u64, num as u64);
        for k in 0..self.axes.len() {
            let row = self.hyperrow(k).max(1);
            let offset = start % row;
            if offset + num > row {
                if offset != 0 {
                    return Shape::Never;
                } else if num % row != 0 {
                    return Shape::No;
                }
            }
        }
        Shape::Yes
    }

    /// The rectangle of tiles `[start, start + num)` in coordinates (whole
    /// tiles), `None` when those tiles form none.
    fn rectangle(&self, start: usize, num: usize) -> Option<IntRect> {
        let (start, num) = (start as u64, num as u64);
        let mut rect = vec![(0i128, 0i128); self.axes.len()];
        for (k, &(d, origin, ext, count)) in self.axes.iter().enumerate() {
            let row = self.hyperrow(k).max(1);
            let outer = row.saturating_mul(count).max(1);
            let first = (start / row) % (outer / row);
            let last = ((start + num - 1) / row) % (outer / row);
            let offset = start % row;
            if (offset == 0 && num > row && num % row != 0) || (offset != 0 && offset + num > row) {
                return None;
            }
            rect[d] = (
                origin + i128::from(first) * ext,
                origin + i128::from(last) * ext + ext - 1,
            );
        }
        Some(rect)
    }
}

/// The positions, in the row-major order of `outer`, of the cells of
/// `inner` in its row-major order.
fn row_major_indexes(outer: &IntRect, inner: &IntRect) -> Vec<usize> {
    let widths: Vec<i128> = outer.iter().map(|(lo, hi)| hi - lo + 1).collect();
    let mut out = Vec::new();
    let mut idx: Vec<i128> = inner.iter().map(|r| r.0).collect();
    if inner.iter().any(|(lo, hi)| lo > hi) {
        return out;
    }
    loop {
        let mut pos: i128 = 0;
        for (d, &i) in idx.iter().enumerate() {
            pos = pos * widths[d] + (i - outer[d].0);
        }
        out.push(pos as usize);
        let mut d = idx.len();
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            if idx[d] < inner[d].1 {
                idx[d] += 1;
                break;
            }
            idx[d] = inner[d].0;
        }
    }
}
