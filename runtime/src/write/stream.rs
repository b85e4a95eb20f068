//! A streaming writer: batches of typed columns in, fragments out, each cut
//! when the cells held reach a size limit, so an input larger than memory is
//! written with at most about one limit (plus one batch) held at a time.
//!
//! Every fragment is checked ([`validate`](crate::write::validate())) and
//! committed as it is cut (data files, fragment metadata, then the commit
//! marker: see the module [`crate::write`]), so a stream that stops part way
//! — an error, a crash — leaves whole fragments only: those cut before, each
//! readable by itself.
//!
//! - Sparse: the batches hold the cells (coordinates among the columns) in
//!   any order; a fragment takes whatever the held batches hold. Each
//!   fragment is checked alone: duplicate coordinates where the schema
//!   forbids them are refused within one fragment, while across fragments
//!   the later fragment's cell wins on read, as for any two writes.
//! - Dense: one box given up front, its cells given in row-major order
//!   across the batches; a fragment is cut at whole rows of the first
//!   dimension (the box's slab `[r0, r1] × the rest`), so each fragment is
//!   a box TileDB writes as a dense write of its own. In column-major order
//!   ([`StreamWriter::col_major`]) the last dimension varies slowest, so
//!   fragments are cut at whole slabs of the last dimension (`the rest ×
//!   [c0, c1]`), each a column-major dense write of its own.
//! - Dense in global order ([`StreamWriter::global_order`]), as TileDB's
//!   global-order writer takes several submits: the box on space tile
//!   bounds, its cells tile after tile in the tile order (each tile's cells
//!   in the cell order), batches of any size (a tile may span batches, as
//!   TileDB carries a partial last tile from one submit to the next). The
//!   tiles of one slab of tiles along the slowest dimension of the tile
//!   order (the first for a row-major tile order, the last for column-major)
//!   are contiguous, so a fragment is cut at whole slabs of tiles: a box on
//!   tile bounds, each a global-order dense write of its own. As TileDB's
//!   finalize, a stream whose cells do not fill its box is refused.

use crate::directory::{Extension, TimestampedName, COMMITS_DIR, FRAGMENTS_DIR};
use crate::error::Result;
use crate::schema::{ArraySchema, SchemaOrder};
use crate::storage::{RelPath, Storage};

use super::fragment::write_fragment_in_order;
use super::fragment_input::{usage, Column};
use super::validate::{validate_ordered, Write, WriteLayout};

/// The cells of a dense stream: the box and how far the committed
/// fragments and the held cells reach.
#[derive(Debug)]
struct DenseBox {
    subarray: Vec<(i128, i128)>,
    /// The order of the cells: row-major (fragments cut along the first
    /// dimension) or column-major (along the last).
    layout: WriteLayout,
    /// The dimension fragments are cut along: the slowest-varying one.
    cut_dim: usize,
    /// The first row (index of `cut_dim`) not yet committed.
    next_row: i128,
    /// The rows a fragment is cut at a multiple of: 1, or in global order
    /// the tile extent along `cut_dim` (a slab of tiles).
    unit_rows: i128,
    /// Cells in one unit of `unit_rows` rows: the product of the other
    /// dimensions' extents, times `unit_rows`.
    row_cells: u64,
}

impl DenseBox {
    /// `(first, last)` row of the box along the dimension cut.
    fn rows(&self) -> (i128, i128) {
        self.subarray[self.cut_dim]
    }
}

/// Writes batches of columns as fragments cut at a size limit (see the
/// module documentation). Call [`StreamWriter::finish`] at the end: the
/// cells still held are written only then.
pub struct StreamWriter<'a> {
    storage: &'a dyn Storage,
    schema: &'a ArraySchema,
    key: Option<[u8; 32]>,
    limit: u64,
    timestamp: u64,
    /// The stamp of the last fragment cut.
    last_stamp: u64,
    dense: Option<DenseBox>,
    held: Vec<Column>,
    held_bytes: u64,
    fragments: Vec<String>,
}

impl<'a> StreamWriter<'a> {
    /// A sparse stream (cells in any order) cutting fragments once the held
    /// cells reach `limit` bytes (at least one batch per fragment).
    pub fn sparse(
        storage: &'a dyn Storage,
        schema: &'a ArraySchema,
        key: Option<[u8; 32]>,
        limit: u64,
    ) -> Result<StreamWriter<'a>> {
        if schema.is_dense() {
            return Err(usage("a sparse stream needs a sparse array"));
        }
        Ok(Self::new(storage, schema, key, limit, None))
    }

    /// A dense stream of the box `subarray` (inclusive, one `[lo, hi]` per
    /// dimension), its cells in row-major order, cutting fragments at whole
    /// rows of the first dimension once the held cells reach `limit` bytes.
    pub fn dense(
        storage: &'a dyn Storage,
        schema: &'a ArraySchema,
        key: Option<[u8; 32]>,
        limit: u64,
        subarray: Vec<(i128, i128)>,
    ) -> Result<StreamWriter<'a>> {
        if !schema.is_dense() {
            return Err(usage("a dense stream needs a dense array"));
        }
        if subarray.len() != schema.dimensions.len() || subarray.iter().any(|(l, h)| l > h) {
            return Err(usage(
                "the stream's subarray needs one increasing [lo, hi] per dimension",
            ));
        }
        let row_cells = subarray[1..]
            .iter()
            .try_fold(1u64, |n, (l, h)| {
                u64::try_from(h - l + 1).ok().and_then(|e| n.checked_mul(e))
            })
            .ok_or_else(|| usage("the stream's subarray has too many cells per row"))?;
        let next_row = subarray[0].0;
        let dense = DenseBox {
            subarray,
            layout: WriteLayout::RowMajor,
            cut_dim: 0,
            next_row,
            unit_rows: 1,
            row_cells,
        };
        Ok(Self::new(storage, schema, key, limit, Some(dense)))
    }

    /// A dense stream takes its box's cells in column-major order (the
    /// first dimension fastest) instead, and cuts fragments at whole slabs
    /// of the last dimension. Refused on a sparse stream or once cells
    /// were given.
    pub fn col_major(mut self) -> Result<StreamWriter<'a>> {
        if !self.held.is_empty() || !self.fragments.is_empty() {
            return Err(usage("a stream's order is set before its first batch"));
        }
        let Some(d) = &mut self.dense else {
            return Err(usage("only a dense stream has a column-major order"));
        };
        let last = d.subarray.len() - 1;
        d.row_cells = d.subarray[..last]
            .iter()
            .try_fold(1u64, |n, (l, h)| {
                u64::try_from(h - l + 1).ok().and_then(|e| n.checked_mul(e))
            })
            .ok_or_else(|| usage("the stream's subarray has too many cells per slab"))?;
        d.layout = WriteLayout::ColMajor;
        d.cut_dim = last;
        d.next_row = d.subarray[last].0;
        Ok(self)
    }

    /// A dense stream takes its box's cells in global order instead (see
    /// the module documentation): the box must coincide with space tile
    /// bounds, as TileDB requires of a global-order dense write, and
    /// fragments are cut at whole slabs of tiles. Refused on a sparse
    /// stream or once cells were given.
    pub fn global_order(mut self) -> Result<StreamWriter<'a>> {
        if !self.held.is_empty() || !self.fragments.is_empty() {
            return Err(usage("a stream's order is set before its first batch"));
        }
        let Some(d) = &mut self.dense else {
            return Err(usage(
                "a sparse stream takes its cells in any order; a global-order stream is dense",
            ));
        };
        let extents = super::global_dense::check_tile_bounds(self.schema, Some(&d.subarray))?;
        let cut_dim = match self.schema.tile_order {
            SchemaOrder::ColMajor => d.subarray.len() - 1,
            _ => 0,
        };
        let unit_rows = extents[cut_dim];
        d.row_cells = d
            .subarray
            .iter()
            .enumerate()
            .map(|(i, &(l, h))| if i == cut_dim { unit_rows } else { h - l + 1 })
            .try_fold(1u64, |n, e| {
                u64::try_from(e).ok().and_then(|e| n.checked_mul(e))
            })
            .ok_or_else(|| usage("the stream's subarray has too many cells per slab of tiles"))?;
        d.layout = WriteLayout::GlobalOrder;
        d.cut_dim = cut_dim;
        d.unit_rows = unit_rows;
        d.next_row = d.subarray[cut_dim].0;
        Ok(self)
    }

    fn new(
        storage: &'a dyn Storage,
        schema: &'a ArraySchema,
        key: Option<[u8; 32]>,
        limit: u64,
        dense: Option<DenseBox>,
    ) -> StreamWriter<'a> {
        StreamWriter {
            storage,
            schema,
            key,
            limit: limit.max(1),
            timestamp: 0,
            last_stamp: 0,
            dense,
            held: Vec::new(),
            held_bytes: 0,
            fragments: Vec::new(),
        }
    }

    /// Stamps every fragment `timestamp` (milliseconds; 0, the default,
    /// means the time each fragment is cut).
    pub fn at(mut self, timestamp: u64) -> StreamWriter<'a> {
        self.timestamp = timestamp;
        self
    }

    /// The fragments committed so far, oldest first.
    pub fn fragments(&self) -> &[String] {
        &self.fragments
    }

    /// Adds one batch: the same fields in every batch (for a dense stream
    /// the attributes, for a sparse one the dimensions too), of equal cell
    /// counts. Cuts and commits fragments once the held cells reach the
    /// limit. A refused batch is not held; the fragments committed stay.
    pub fn push(&mut self, columns: Vec<Column>) -> Result<()> {
        if let Some(bad) = columns.iter().find_map(Column::shape_error) {
            return Err(usage(bad));
        }
        let n = columns.first().map_or(0, Column::len);
        if columns.iter().any(|c| c.len() != n) {
            return Err(usage("the columns of a batch hold different cell counts"));
        }
        if self.held.is_empty() {
            self.held = columns;
        } else {
            self.append(columns)?;
        }
        self.held_bytes = self.held.iter().map(column_bytes).sum();
        if self.held_bytes >= self.limit {
            self.cut(false)?;
        }
        Ok(())
    }

    /// Writes the cells still held (a dense stream: they must end at a
    /// whole row), keeping the stream: a caller that may still give it up
    /// ([`abandon`](Self::abandon)) flushes, then finishes.
    pub fn flush(&mut self) -> Result<()> {
        self.cut(true)
    }

    /// Writes the cells still held and returns every fragment committed,
    /// oldest first. A dense stream must have filled its box exactly.
    pub fn finish(mut self) -> Result<Vec<String>> {
        self.cut(true)?;
        if let Some(d) = &self.dense {
            let (first, last) = d.rows();
            if d.next_row <= last {
                return Err(usage(format!(
                    "the dense stream ended at row {} of rows {first}..={last} (its fragments so far stay)",
                    d.next_row
                )));
            }
        }
        Ok(self.fragments)
    }

    /// Gives the stream up, undoing it: the cells held are dropped and every
    /// fragment it committed is removed (each commit marker first, then the
    /// fragment's folder, as vacuum removes a fragment), so the array is as
    /// before the stream. A writer that must leave the array unchanged when
    /// a later batch is refused (`tdb write`) calls this. Readers that
    /// opened the array in between may have seen the removed fragments;
    /// a crash part way leaves fragments whole or gone, never torn.
    pub fn abandon(self) -> Result<usize> {
        let commits = RelPath::parse(COMMITS_DIR)?;
        let fragments = RelPath::parse(FRAGMENTS_DIR)?;
        for name in self.fragments.iter().rev() {
            let name = TimestampedName::parse(name)?;
            let marker = commits.join(name.with_extension(Some(Extension::Wrt)).as_str())?;
            if self.storage.kind(&marker)?.is_some() {
                self.storage.remove_file(&marker)?;
            }
            let folder = fragments.join(name.as_str())?;
            if self.storage.kind(&folder)?.is_some() {
                self.storage.remove_dir(&folder)?;
            }
        }
        Ok(self.fragments.len())
    }

    /// Appends a batch to the held columns, matched by name.
    fn append(&mut self, columns: Vec<Column>) -> Result<()> {
        if columns.len() != self.held.len() {
            return Err(usage("every batch of a stream takes the same fields"));
        }
        // Check every name and shape first, so a refused batch changes nothing.
        let mut matched = Vec::with_capacity(columns.len());
        for c in &columns {
            let i = self
                .held
                .iter()
                .position(|h| h.name == c.name)
                .ok_or_else(|| {
                    usage(format!("{} is not a field of the stream's batches", c.name))
                })?;
            let h = &self.held[i];
            if (h.datatype, h.cell_val_num, h.nullable) != (c.datatype, c.cell_val_num, c.nullable)
            {
                return Err(usage(format!(
                    "{} changes type or shape between batches",
                    c.name
                )));
            }
            matched.push(i);
        }
        for (c, i) in columns.into_iter().zip(matched) {
            extend(&mut self.held[i], c);
        }
        Ok(())
    }

    /// Writes the held cells as a fragment: all of them (`last`, or
    /// sparse), or for a dense stream its whole rows, keeping the rest.
    fn cut(&mut self, last: bool) -> Result<()> {
        let cells = self.held.first().map_or(0, Column::len) as u64;
        if cells == 0 {
            return Ok(());
        }
        let write = match &self.dense {
            None => Write::sparse(std::mem::take(&mut self.held)),
            Some(d) => {
                let units = cells / d.row_cells;
                if last && !cells.is_multiple_of(d.row_cells) {
                    return Err(usage(match d.layout {
                        WriteLayout::GlobalOrder => "the dense stream ended within a slab of tiles",
                        _ => "the dense stream ended within a row",
                    }));
                }
                let rows = i128::from(units) * d.unit_rows;
                let left = d.rows().1 - d.next_row + 1;
                if rows > left {
                    return Err(usage("the dense stream holds more cells than its box"));
                }
                if units == 0 {
                    return Ok(());
                }
                let keep = (units * d.row_cells) as usize;
                let rest: Vec<Column> = self.held.iter_mut().map(|c| split_off(c, keep)).collect();
                let mut slab = d.subarray.clone();
                slab[d.cut_dim] = (d.next_row, d.next_row + rows - 1);
                Write::dense(slab, std::mem::replace(&mut self.held, rest)).with_layout(d.layout)
            }
        };
        // Fragments stamped "now" get strictly increasing stamps, so a later
        // fragment's cell wins over an equal one of an earlier fragment
        // even when both are cut within one millisecond.
        let stamp = match self.timestamp {
            0 => crate::directory::timestamped_name::now_ms().max(self.last_stamp + 1),
            t => t,
        };
        self.last_stamp = stamp;
        let write = write.at(stamp);
        let fragment = self.commit(&write);
        if let (Ok(_), Some(d)) = (&fragment, &mut self.dense) {
            d.next_row = write_rows_end(&write, d.cut_dim);
        }
        if let Some(name) = fragment? {
            self.fragments.push(name);
        }
        self.held_bytes = self.held.iter().map(column_bytes).sum();
        Ok(())
    }

    /// Checks and writes one fragment, its columns lent (not copied) to
    /// the writer, so a cut holds the cells once.
    fn commit(&self, write: &Write) -> Result<Option<String>> {
        let Some(mut checked) = validate_ordered(self.schema, write)? else {
            return Ok(None);
        };
        checked.input.key = self.key;
        write_fragment_in_order(
            self.storage,
            self.schema,
            &checked.input,
            &checked.columns,
            checked.order,
        )
        .map(Some)
    }
}

/// The row (along dimension `cut_dim`) after a dense slab's last.
fn write_rows_end(write: &Write, cut_dim: usize) -> i128 {
    write
        .subarray
        .as_ref()
        .and_then(|s| s.get(cut_dim))
        .map_or(0, |(_, hi)| hi + 1)
}

/// The bytes a column holds: its data, offsets and validity.
fn column_bytes(c: &Column) -> u64 {
    let offsets = c.offsets.as_ref().map_or(0, |o| o.len() * 8);
    let validity = c.validity.as_ref().map_or(0, Vec::len);
    (c.data.len() + offsets + validity) as u64
}

/// Appends the cells of `more` (of `into`'s shape) to `into`.
fn extend(into: &mut Column, more: Column) {
    let base = into.data.len() as u64;
    if let (Some(o), Some(m)) = (&mut into.offsets, &more.offsets) {
        o.extend(m.iter().skip(1).map(|x| x + base));
    }
    if let (Some(v), Some(m)) = (&mut into.validity, &more.validity) {
        v.extend_from_slice(m);
    }
    into.data.extend_from_slice(&more.data);
}

/// Splits `c` after its first `keep` cells: `c` keeps them, the rest is returned.
fn split_off(c: &mut Column, keep: usize) -> Column {
    let mut rest = Column::new(&c.name, c.datatype, c.cell_val_num, c.nullable);
    let cell_size = c.cell_size();
    let cut = match (&mut c.offsets, cell_size) {
        (Some(o), _) => {
            let at = o.get(keep).copied().unwrap_or(0);
            rest.offsets = Some(o[keep..].iter().map(|x| x - at).collect());
            o.truncate(keep + 1);
            at as usize
        }
        (None, Some(size)) => keep * size,
        (None, None) => 0,
    };
    rest.data = c.data.split_off(cut.min(c.data.len()));
    if let Some(v) = &mut c.validity {
        rest.validity = Some(v.split_off(keep.min(v.len())));
    }
    rest
}
