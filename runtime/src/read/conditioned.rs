//! Reads under a [`QueryCondition`], as TileDB answers them: a sparse read
//! returns only the cells that satisfy the condition; a dense read keeps
//! its shape and gives each cell that fails the attributes' fill values
//! (null for a nullable attribute whose fill is null; var-sized attributes
//! included). Tiles no cell of which can pass are not decoded (`skip`).
//!
//! The fields the condition reads but the query does not return are read
//! alongside and dropped afterwards.

use crate::column::Column;
use crate::condition::QueryCondition;
use crate::error::Result;
use crate::read::batches::Batches;
use crate::read::query::ReadQuery;
use crate::read::result::ReadResult;
use crate::snapshot::Snapshot;

/// The query extended to read what the condition needs: its attributes
/// (after those asked for) and the coordinates when it tests a dimension.
/// Returns the query and how many attributes the caller asked for.
pub(crate) fn widened(
    snapshot: &Snapshot,
    query: &ReadQuery,
    condition: &QueryCondition,
) -> (ReadQuery, usize) {
    let schema = snapshot.schema();
    let mut wide = query.clone();
    let mut names: Vec<String> = match &query.attributes {
        Some(names) => names.clone(),
        None => schema.attributes.iter().map(|a| a.name.clone()).collect(),
    };
    let asked = names.len();
    for field in condition.fields() {
        if schema.attribute(&field).is_some() && !names.contains(&field) {
            names.push(field);
        } else if schema.dimension(&field).is_some() {
            wide.skip_coordinates = false;
        }
    }
    wide.attributes = Some(names);
    (wide, asked)
}

/// Which cells of `result` satisfy `condition` (its columns must hold
/// every field the condition reads).
pub(crate) fn mask(result: &ReadResult, condition: &QueryCondition) -> Result<Vec<bool>> {
    let columns: Vec<&Column> = result.dimensions.iter().chain(&result.attributes).collect();
    condition.evaluate(&columns, result.cell_count())
}

/// Runs `query` on `snapshot`, keeping (sparse) or filling (dense) by `condition`.
pub fn read_where(
    snapshot: &Snapshot,
    query: &ReadQuery,
    condition: &QueryCondition,
) -> Result<ReadResult> {
    let (wide, asked) = widened(snapshot, query, condition);
    let result = crate::read::read_pruned(
        snapshot,
        &wide,
        crate::read::skip::Prune {
            condition: Some(condition),
            answered: None,
            only: None,
        },
    )?;
    narrowed(snapshot, query, condition, asked, result)
}

/// `result`, read by the [`widened`] query, kept (sparse) or filled (dense)
/// by `condition`, with only the fields `query` asks for.
fn narrowed(
    snapshot: &Snapshot,
    query: &ReadQuery,
    condition: &QueryCondition,
    asked: usize,
    mut result: ReadResult,
) -> Result<ReadResult> {
    let keep = mask(&result, condition)?;
    result.attributes.truncate(asked);
    if query.skip_coordinates {
        result.dimensions.clear();
    }
    if snapshot.schema().is_dense() {
        let schema = snapshot.schema();
        for column in &mut result.attributes {
            if let Some((_, attribute)) = schema.attribute(&column.name) {
                // A var-sized cell that fails takes the fill value too
                // (TileDB 2.30 gives "zz" for a string attribute filled
                // with "zz"; tiledb-py shows the default fill, one NUL
                // byte, as an empty string): the same as the cells of a
                // tile left out under the condition, which read as fill.
                *column = filled(column, &keep, &attribute.fill, attribute.fill_validity);
            }
        }
    } else {
        for column in result.dimensions.iter_mut().chain(&mut result.attributes) {
            *column = selected(column, &keep);
        }
    }
    Ok(result)
}

/// The cells of `column` where `keep` holds.
pub(crate) fn selected(column: &Column, keep: &[bool]) -> Column {
    let mut out = Column::new(
        &column.name,
        column.datatype,
        column.cell_val_num,
        column.nullable,
    );
    for (i, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
        let (bytes, valid) = column.cell(i);
        out.push(bytes, valid);
    }
    out
}

/// `column` with each cell where `keep` fails replaced by the fill value.
fn filled(column: &Column, keep: &[bool], fill: &[u8], fill_valid: bool) -> Column {
    if keep.iter().all(|k| *k) {
        return column.clone();
    }
    let mut out = Column::new(
        &column.name,
        column.datatype,
        column.cell_val_num,
        column.nullable,
    );
    for (i, k) in keep.iter().enumerate() {
        if *k {
            let (bytes, valid) = column.cell(i);
            out.push(bytes, valid);
        } else {
            out.push(fill, fill_valid);
        }
    }
    out
}

/// The batches of a read under a memory budget ([`crate::read::batches()`]),
/// each kept or filled by a condition when there is one. A sparse batch
/// left without cells is skipped, so no batch is empty.
pub struct BatchesWhere<'a> {
    batches: Batches<'a>,
    snapshot: &'a Snapshot,
    /// The query as asked, the condition, and how many attributes were asked for.
    condition: Option<(ReadQuery, QueryCondition, usize)>,
}

/// Runs `query` in batches of at most `budget` bytes (counting the fields
/// the condition reads besides those asked for), under `condition` when
/// one is given.
pub fn batches_where<'a>(
    snapshot: &'a Snapshot,
    query: &ReadQuery,
    condition: Option<&QueryCondition>,
    budget: u64,
) -> Result<BatchesWhere<'a>> {
    let Some(condition) = condition else {
        return Ok(BatchesWhere {
            batches: crate::read::batches(snapshot, query, budget)?,
            snapshot,
            condition: None,
        });
    };
    let (wide, asked) = widened(snapshot, query, condition);
    let mut batches = crate::read::batches(snapshot, &wide, budget)?;
    batches.prune_by(condition);
    Ok(BatchesWhere {
        batches,
        snapshot,
        condition: Some((query.clone(), condition.clone(), asked)),
    })
}

impl std::fmt::Debug for BatchesWhere<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchesWhere")
            .field("batches", &self.batches)
            .field("condition", &self.condition.as_ref().map(|(_, c, _)| c))
            .finish_non_exhaustive()
    }
}

impl BatchesWhere<'_> {
    /// Ends the read: the iterator gives nothing more.
    pub fn finish(&mut self) {
        self.batches.finish();
    }
}

impl Iterator for BatchesWhere<'_> {
    type Item = Result<ReadResult>;

    fn next(&mut self) -> Option<Result<ReadResult>> {
        loop {
            let batch = self.batches.next()?;
            let Some((query, condition, asked)) = &self.condition else {
                return Some(batch);
            };
            let narrowed = batch.and_then(|b| narrowed(self.snapshot, query, condition, *asked, b));
            match narrowed {
                Ok(result) if result.cell_count() == 0 => continue,
                other => return Some(other),
            }
        }
    }
}
