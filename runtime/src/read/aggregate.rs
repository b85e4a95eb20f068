//! Aggregates over the cells of a read: count, and per attribute sum, min,
//! max, mean and null count, under an optional [`QueryCondition`] and a
//! subarray — TileDB's aggregates (`A.query(cond=…).agg({...})[…]` in
//! tiledb-py), with TileDB's rules:
//!
//! - `count` counts the cells (null or not) that satisfy the condition;
//! - `sum` of signed integers is an `i64`, of unsigned integers a `u64`,
//!   of floats an `f64`; an integer sum that overflows (either way)
//!   becomes the type's maximum, as TileDB's does;
//! - `min`/`max` keep the attribute's type; the first value is kept until
//!   a later one is strictly smaller (larger), so a NaN first stays;
//!   strings compare byte-wise and only ASCII strings are allowed (TileDB
//!   refuses UTF-8);
//! - a float sum that overflows upwards becomes `f64::MAX` and stops;
//! - `mean` is an `f64` (`f64::MAX` when the sum overflowed upwards); nulls are skipped by `sum`, `min`, `max` and
//!   `mean`, and with no value left a nullable attribute's answer is null;
//! - `null_count` applies to nullable attributes only; dimensions are
//!   not aggregated (TileDB refuses them).
//!
//! - on a dense array, `count` counts the cells no fragment wrote, and
//!   the other aggregates leave them out (not their fill value);
//! - on a dense array under a condition, `count` counts every cell of the
//!   subarray, passing or not; with no cell passing, the min and max of a
//!   non-nullable attribute are zero (TileDB 2.30's dense reader).
//!
//! A sparse read with no condition and no delete takes the count, null
//! count, sum, minimum and maximum (of numbers, and of ASCII strings) of
//! each tile wholly inside one of its ranges on each dimension (and
//! meeting no other) from the tile metadata, as TileDB does, and decodes
//! only the other tiles (`read::tile_aggregates`); a dense read does the
//! same for tiles wholly inside their fragment's non-empty domain that no
//! newer fragment meets (`read/dense/answered.rs`). Under a condition,
//! tiles no cell of which can pass are left out (`read::skip`). Where TileDB's answer
//! depends on the order it visits tiles in (min/max and sums over floats
//! holding NaN, integer sums near overflow), ours may differ.

use crate::column::Column;
use crate::condition::QueryCondition;
use crate::error::{Error, Result};
use crate::filter::Datatype;
use crate::read::conditioned::{mask, widened};
use crate::read::query::{ReadQuery, ResultOrder};
use crate::read::skip::Prune;
use crate::read::tile_aggregates::{from_metadata as from_metadata_tiles, FromMetadata};
use crate::read::typed::QueryBuilder;
use crate::schema::{Attribute, Scalar};
use crate::snapshot::Snapshot;

/// What to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggregateOp {
    /// The number of cells.
    Count,
    /// The sum of an attribute's values.
    Sum,
    /// The smallest value.
    Min,
    /// The largest value.
    Max,
    /// The mean of the values.
    Mean,
    /// The number of null cells.
    NullCount,
}

/// One aggregate: an operation and, except for `count`, its attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aggregate {
    /// The operation.
    pub op: AggregateOp,
    /// The attribute (`None` for `count`).
    pub attribute: Option<String>,
}

impl Aggregate {
    /// Parses `count`, or `OP:ATTRIBUTE` with OP one of `sum`, `min`,
    /// `max`, `mean`, `null_count` (`count:ATTRIBUTE` is `count`).
    pub fn parse(text: &str) -> Result<Aggregate> {
        let (op, attribute) = match text.split_once(':') {
            Some((op, attribute)) => (op, Some(attribute.to_string())),
            None => (text, None),
        };
        let op = match op {
            "count" => AggregateOp::Count,
            "sum" => AggregateOp::Sum,
            "min" => AggregateOp::Min,
            "max" => AggregateOp::Max,
            "mean" => AggregateOp::Mean,
            "null_count" => AggregateOp::NullCount,
            other => {
                return Err(Error::Usage(format!(
                    "{other:?} is not an aggregate: count, sum, min, max, mean or null_count"
                )))
            }
        };
        if op != AggregateOp::Count && attribute.is_none() {
            return Err(Error::Usage(format!(
                "{text:?}: the aggregate needs an attribute (OP:ATTRIBUTE)"
            )));
        }
        Ok(Aggregate {
            op,
            attribute: attribute.filter(|_| op != AggregateOp::Count),
        })
    }
}

/// An aggregate's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum AggregateValue {
    /// No value (a nullable attribute with no valid cell).
    Null,
    /// Counts, sums of unsigned integers, min/max of unsigned integers.
    UInt(u64),
    /// Sums of signed integers, min/max of signed integers, dates and times.
    Int(i64),
    /// Sums and means, min/max of floats.
    Float(f64),
    /// Min/max of strings.
    Bytes(Vec<u8>),
}

fn check(attribute: &Attribute, op: AggregateOp) -> Result<()> {
    let refuse = |why: &str| {
        Err(Error::Usage(format!(
            "{op:?} of {:?}: {why}",
            attribute.name
        )))
    };
    let t = attribute.datatype;
    let numeric =
        t.is_integer() || t.is_real() || t.is_datetime() || t.is_time() || t == Datatype::Bool;
    match op {
        AggregateOp::NullCount if !attribute.nullable => refuse("the attribute is not nullable"),
        AggregateOp::Sum | AggregateOp::Mean | AggregateOp::Min | AggregateOp::Max
            if attribute.cell_val_num != Some(1) && numeric =>
        {
            refuse("only single-value attributes are aggregated")
        }
        AggregateOp::Sum | AggregateOp::Mean if !numeric => refuse("not a numeric attribute"),
        AggregateOp::Min | AggregateOp::Max
            if !numeric && !matches!(t, Datatype::StringAscii | Datatype::Char) =>
        {
            refuse("min and max apply to numbers and ASCII strings (TileDB refuses other types)")
        }
        _ => Ok(()),
    }
}

impl QueryBuilder<'_> {
    /// Computes `aggregates` over the cells this query selects (its ranges
    /// and condition; a dense array without ranges: its non-empty domain).
    pub fn aggregate(&self, aggregates: &[Aggregate]) -> Result<Vec<AggregateValue>> {
        let (snapshot, query, condition) = self.parts();
        aggregate(snapshot, query, condition, aggregates)
    }
}

/// Computes `aggregates` over the cells `query` reads (its ranges; its
/// attributes and layout are ignored) that satisfy `condition`. Where
/// TileDB's rules allow (a sparse read with no condition and no delete),
/// the tiles wholly inside the ranges are answered from their metadata and
/// not decoded; under a condition, the tiles no cell of which can pass are
/// left out.
pub fn aggregate(
    snapshot: &Snapshot,
    query: &ReadQuery,
    condition: Option<&QueryCondition>,
    aggregates: &[Aggregate],
) -> Result<Vec<AggregateValue>> {
    aggregate_with(snapshot, query, condition, aggregates, true)
}

/// [`aggregate`] with every tile decoded: no answer from tile metadata and
/// no tile left out. The answers are the same, except where TileDB's own
/// depend on the order it visits tiles in (floats holding NaN, integer sums
/// near overflow); tests compare the two.
pub fn aggregate_decoding(
    snapshot: &Snapshot,
    query: &ReadQuery,
    condition: Option<&QueryCondition>,
    aggregates: &[Aggregate],
) -> Result<Vec<AggregateValue>> {
    let unskipped = condition.map(|c| c.clone().skipping_tiles(false));
    aggregate_with(snapshot, query, unskipped.as_ref(), aggregates, false)
}

fn aggregate_with(
    snapshot: &Snapshot,
    query: &ReadQuery,
    condition: Option<&QueryCondition>,
    aggregates: &[Aggregate],
    from_metadata: bool,
) -> Result<Vec<AggregateValue>> {
    let schema = snapshot.schema();
    let mut names: Vec<String> = Vec::new();
    for a in aggregates {
        let Some(name) = &a.attribute else { continue };
        let (_, attribute) = schema.attribute(name).ok_or_else(|| {
            Error::Usage(format!(
                "the array has no attribute named {name:?} (dimensions are not aggregated)"
            ))
        })?;
        check(attribute, a.op)?;
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    // A count alone still reads one field, which gives the cells.
    let read_names = match (names.is_empty(), schema.attributes.first()) {
        (true, Some(first)) => vec![first.name.clone()],
        _ => names.clone(),
    };
    let mut query = ReadQuery {
        attributes: Some(read_names),
        layout: ResultOrder::Global,
        skip_coordinates: true,
        ..query.clone()
    };
    if !crate::read::typed::fill_dense_ranges(snapshot, &mut query) {
        return aggregates
            .iter()
            .map(|a| Ok(answer(a, None, &[], schema, None)))
            .collect();
    }
    // A dense read: the coordinates say which cells no fragment wrote.
    if schema.is_dense() {
        query.skip_coordinates = false;
    }
    let mut metadata = None;
    let (result, keep) = match condition {
        Some(c) => {
            let (wide, _) = widened(snapshot, &query, c);
            let prune = Prune {
                condition: Some(c),
                answered: None,
                only: None,
            };
            let result = crate::read::read_pruned(snapshot, &wide, prune)?;
            let mut keep = mask(&result, c)?;
            if schema.is_dense() {
                // Cells of dense tiles left out read as fill, which may
                // pass where their values would not.
                let left_out = crate::read::dense::left_out(snapshot, prune, &result)?;
                keep.iter_mut().zip(left_out).for_each(|(k, l)| *k &= !l);
            }
            (result, keep)
        }
        None => {
            if from_metadata && schema.is_dense() {
                metadata = crate::read::dense::answered::from_metadata(snapshot, &query, &names)?;
            } else if from_metadata {
                metadata = from_metadata_tiles(snapshot, &query, &names)?;
            }
            let prune = Prune {
                condition: None,
                answered: metadata.as_ref().map(|m| &m.answered),
                only: None,
            };
            let result = crate::read::read_pruned(snapshot, &query, prune)?;
            let mut keep = vec![true; result.cell_count()];
            if schema.is_dense() && metadata.as_ref().is_some_and(|m| !m.answered.is_empty()) {
                // The answered tiles' cells read as fill: counted already.
                let left_out = crate::read::dense::left_out(snapshot, prune, &result)?;
                keep.iter_mut().zip(left_out).for_each(|(k, l)| *k &= !l);
            }
            (result, keep)
        }
    };
    // The cells the aggregates of values see.
    let mut keep_values = keep.clone();
    if schema.is_dense() {
        let unwritten = unwritten(snapshot, &result);
        keep_values
            .iter_mut()
            .zip(unwritten)
            .for_each(|(k, u)| *k &= !u);
    }
    // TileDB's dense reader counts every cell of the subarray, passing the
    // condition or not, and answers the others over the passing cells,
    // null when none passes (TileDB 2.30, conditions_oracle).
    let dense_condition = schema.is_dense() && condition.is_some();
    aggregates
        .iter()
        .map(|a| {
            if dense_condition && a.op == AggregateOp::Count {
                return Ok(AggregateValue::UInt(keep.len() as u64));
            }
            if a.op == AggregateOp::Count {
                let passing = keep.iter().filter(|k| **k).count() as u64;
                return Ok(AggregateValue::UInt(
                    passing + metadata.as_ref().map_or(0, |m| m.cells),
                ));
            }
            let column = a
                .attribute
                .as_ref()
                .and_then(|n| result.attributes.iter().find(|c| c.name == *n));
            let value = answer(a, column, &keep_values, schema, metadata.as_ref());
            // With no cell passing, TileDB's dense min and max of a
            // non-nullable attribute are zero (its initial value).
            let none_passed = dense_condition && !keep_values.iter().any(|k| *k);
            if none_passed && matches!(a.op, AggregateOp::Min | AggregateOp::Max) {
                if let Some(c) = column.filter(|c| !c.nullable) {
                    let zero = if c.datatype.is_real() {
                        Scalar::Float(0.0)
                    } else {
                        Scalar::Int(0)
                    };
                    return Ok(typed(c.datatype, zero));
                }
            }
            Ok(value)
        })
        .collect()
}

fn answer(
    aggregate: &Aggregate,
    column: Option<&Column>,
    keep: &[bool],
    schema: &crate::schema::ArraySchema,
    metadata: Option<&FromMetadata>,
) -> AggregateValue {
    let count = keep.iter().filter(|k| **k).count() as u64 + metadata.map_or(0, |m| m.cells);
    if aggregate.op == AggregateOp::Count {
        return AggregateValue::UInt(count);
    }
    let attribute = aggregate
        .attribute
        .as_ref()
        .and_then(|n| schema.attribute(n))
        .map(|(_, a)| a);
    let part = aggregate
        .attribute
        .as_ref()
        .and_then(|n| metadata.and_then(|m| m.field(n)));
    // No cells read (an empty dense array, or every tile answered from
    // metadata): an empty column of the attribute.
    let no_cells;
    let column = match (column, attribute) {
        (Some(c), _) => c,
        (None, Some(a)) if keep.is_empty() => {
            no_cells = Column::new(&a.name, a.datatype, a.cell_val_num, a.nullable);
            &no_cells
        }
        _ => {
            return match aggregate.op {
                AggregateOp::Count | AggregateOp::NullCount => AggregateValue::UInt(0),
                op => empty(
                    op,
                    attribute.is_some_and(|a| a.nullable),
                    attribute.map(|a| a.datatype),
                ),
            }
        }
    };
    let cells = || {
        keep.iter()
            .enumerate()
            .filter(|(_, k)| **k)
            .map(|(i, _)| column.cell(i))
    };
    let values = || {
        cells()
            .filter(|(_, valid)| *valid)
            .filter_map(|(b, _)| Scalar::decode(column.datatype, b))
    };
    let tile_sums = || part.into_iter().flat_map(|p| p.sums.iter().cloned());
    let tile_values = part.map_or(0, |p| p.values);
    match aggregate.op {
        AggregateOp::Count => AggregateValue::UInt(count),
        AggregateOp::NullCount => AggregateValue::UInt(
            cells().filter(|(_, valid)| !valid).count() as u64 + part.map_or(0, |p| p.nulls),
        ),
        AggregateOp::Sum => {
            let mut any = tile_values > 0;
            let value = sum(
                column.datatype,
                tile_sums().chain(values()).inspect(|_| any = true),
            );
            if !any && column.nullable {
                AggregateValue::Null
            } else {
                value
            }
        }
        AggregateOp::Mean if !column.datatype.is_real() => {
            // TileDB sums integers in their sum type and divides once: a
            // sum that overflows makes the mean f64::MAX.
            let mut n = tile_values;
            let total = int_total(
                column.datatype,
                tile_sums().chain(values().inspect(|_| n += 1)),
            );
            match (n, total) {
                (0, _) => empty(AggregateOp::Mean, column.nullable, Some(column.datatype)),
                (_, None) => AggregateValue::Float(f64::MAX),
                (_, Some(t)) => AggregateValue::Float(t as f64 / n as f64),
            }
        }
        AggregateOp::Mean => {
            let (mut total, mut n) = (0f64, tile_values);
            let counted = tile_sums().map(|v| (v, 0)).chain(values().map(|v| (v, 1)));
            for (v, one) in counted {
                total += v.as_f64().unwrap_or(f64::NAN);
                n += one;
                if total == f64::INFINITY {
                    // TileDB's sum saturated: its mean is that limit.
                    return AggregateValue::Float(f64::MAX);
                }
            }
            match n {
                0 => empty(AggregateOp::Mean, column.nullable, Some(column.datatype)),
                _ => AggregateValue::Float(total / n as f64),
            }
        }
        AggregateOp::Min | AggregateOp::Max => {
            let min = aggregate.op == AggregateOp::Min;
            let want = if min {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            };
            let tile_bounds = part
                .into_iter()
                .flat_map(|p| p.min_max.iter())
                .map(|(lo, hi)| if min { lo.clone() } else { hi.clone() });
            let mut best: Option<Scalar> = None;
            for v in tile_bounds.chain(values()) {
                let better = match (&best, &v) {
                    (None, _) => true,
                    (Some(Scalar::Float(b)), Scalar::Float(x)) => x.partial_cmp(b) == Some(want),
                    (Some(b), x) => x.compare(b) == want,
                };
                if better {
                    best = Some(v);
                }
            }
            match best {
                Some(v) => typed(column.datatype, v),
                None => empty(aggregate.op, column.nullable, Some(column.datatype)),
            }
        }
    }
}

/// Which cells of a dense result no fragment wrote (outside every
/// fragment's non-empty domain): TileDB's dense aggregates count them but
/// leave them out of every other aggregate, as if they held no value
/// (TileDB 2.30, corpus dense.consolidate.amplification).
fn unwritten(snapshot: &Snapshot, result: &crate::read::result::ReadResult) -> Vec<bool> {
    let schema = snapshot.schema();
    let domains: Vec<Vec<(Scalar, Scalar)>> = snapshot
        .fragments()
        .iter()
        .filter_map(|f| f.non_empty_domain.as_ref())
        .map(|rect| {
            rect.iter()
                .zip(&schema.dimensions)
                .filter_map(|((lo, hi), dim)| {
                    Some((
                        Scalar::decode(dim.datatype, lo)?,
                        Scalar::decode(dim.datatype, hi)?,
                    ))
                })
                .collect()
        })
        .collect();
    let written = |i: usize| {
        domains.iter().any(|domain| {
            domain.len() == result.dimensions.len()
                && result.dimensions.iter().zip(domain).all(|(c, (lo, hi))| {
                    Scalar::decode(c.datatype, c.cell(i).0)
                        .is_some_and(|v| !v.compare(lo).is_lt() && !v.compare(hi).is_gt())
                })
        })
    };
    (0..result.cell_count()).map(|i| !written(i)).collect()
}

/// The answer over no values.
fn empty(op: AggregateOp, nullable: bool, datatype: Option<Datatype>) -> AggregateValue {
    match (op, nullable) {
        (_, true) => AggregateValue::Null,
        (AggregateOp::Mean, false) => AggregateValue::Float(f64::NAN),
        (AggregateOp::Sum, false) => sum(datatype.unwrap_or(Datatype::Int64), std::iter::empty()),
        _ => AggregateValue::Null,
    }
}

fn is_unsigned(datatype: Datatype) -> bool {
    matches!(
        datatype,
        Datatype::Uint8 | Datatype::Uint16 | Datatype::Uint32 | Datatype::Uint64 | Datatype::Bool
    )
}

/// A sum in TileDB's result type. An integer sum that overflows either
/// way becomes the type's maximum and stops there (TileDB 2.30 answers
/// `i64::MAX` for a sum that ran below `i64::MIN` too); a float sum that
/// overflows upwards (an infinity included) becomes `f64::MAX` and stops,
/// one that overflows downwards reaches `-inf`, as TileDB's do.
fn sum(datatype: Datatype, values: impl Iterator<Item = Scalar>) -> AggregateValue {
    if datatype.is_real() {
        // From +0.0: an empty sum is 0, not Iterator::sum's -0.0.
        let mut total = 0f64;
        for v in values.filter_map(|v| v.as_f64()) {
            total += v;
            if total == f64::INFINITY {
                total = f64::MAX;
                break;
            }
        }
        return AggregateValue::Float(total);
    }
    let hi = if is_unsigned(datatype) {
        u64::MAX as i128
    } else {
        i64::MAX as i128
    };
    let total = int_total(datatype, values).unwrap_or(hi);
    if is_unsigned(datatype) {
        AggregateValue::UInt(total as u64)
    } else {
        AggregateValue::Int(total as i64)
    }
}

/// An integer sum in TileDB's sum type (`u64` for unsigned types, else
/// `i64`); `None` once it overflows either way (TileDB stops there).
fn int_total(datatype: Datatype, values: impl Iterator<Item = Scalar>) -> Option<i128> {
    let (lo, hi) = if is_unsigned(datatype) {
        (0, u64::MAX as i128)
    } else {
        (i64::MIN as i128, i64::MAX as i128)
    };
    let mut total: i128 = 0;
    for v in values.filter_map(|v| v.as_int()) {
        total += v;
        if total < lo || total > hi {
            return None;
        }
    }
    Some(total)
}

/// A min or max in the attribute's type.
fn typed(datatype: Datatype, value: Scalar) -> AggregateValue {
    match value {
        Scalar::Bytes(b) => AggregateValue::Bytes(b),
        Scalar::Float(f) => AggregateValue::Float(f),
        Scalar::Int(v) if is_unsigned(datatype) => AggregateValue::UInt(v as u64),
        Scalar::Int(v) => AggregateValue::Int(v as i64),
    }
}
