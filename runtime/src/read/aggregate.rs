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
//! Every aggregate is answered from the cells the read returns (in global
//! order); tile and fragment metadata are not used yet. Where TileDB's
//! answer depends on the order it visits tiles in (min/max and sums over
//! floats holding NaN, integer sums near overflow), ours may differ.

use crate::column::Column;
use crate::condition::QueryCondition;
use crate::error::{Error, Result};
use crate::filter::Datatype;
use crate::read::conditioned::{mask, widened};
use crate::read::query::{ReadQuery, ResultOrder};
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
/// attributes and layout are ignored) that satisfy `condition`.
pub fn aggregate(
    snapshot: &Snapshot,
    query: &ReadQuery,
    condition: Option<&QueryCondition>,
    aggregates: &[Aggregate],
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
    let mut query = ReadQuery {
        attributes: Some(names),
        layout: ResultOrder::Global,
        skip_coordinates: true,
        ..query.clone()
    };
    if !crate::read::typed::fill_dense_ranges(snapshot, &mut query) {
        return aggregates
            .iter()
            .map(|a| Ok(answer(a, None, &[], schema)))
            .collect();
    }
    let (result, keep) = match condition {
        Some(c) => {
            let (wide, _) = widened(snapshot, &query, c);
            let result = crate::read::read_pruned(snapshot, &wide, Some(c))?;
            let keep = mask(&result, c)?;
            (result, keep)
        }
        None => {
            let result = crate::read::read(snapshot, &query)?;
            let keep = vec![true; result.cell_count()];
            (result, keep)
        }
    };
    aggregates
        .iter()
        .map(|a| {
            let column = a
                .attribute
                .as_ref()
                .and_then(|n| result.attributes.iter().find(|c| c.name == *n));
            Ok(answer(a, column, &keep, schema))
        })
        .collect()
}

fn answer(
    aggregate: &Aggregate,
    column: Option<&Column>,
    keep: &[bool],
    schema: &crate::schema::ArraySchema,
) -> AggregateValue {
    let count = keep.iter().filter(|k| **k).count() as u64;
    if aggregate.op == AggregateOp::Count {
        return AggregateValue::UInt(count);
    }
    let Some(column) = column else {
        // No cells read (an empty dense array): the answers of no cells.
        return match aggregate.op {
            AggregateOp::Count | AggregateOp::NullCount => AggregateValue::UInt(0),
            _ => {
                let nullable = aggregate
                    .attribute
                    .as_ref()
                    .and_then(|n| schema.attribute(n))
                    .is_some_and(|(_, a)| a.nullable);
                empty(
                    aggregate.op,
                    nullable,
                    aggregate
                        .attribute
                        .as_ref()
                        .and_then(|n| schema.attribute(n))
                        .map(|(_, a)| a.datatype),
                )
            }
        };
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
    match aggregate.op {
        AggregateOp::Count => AggregateValue::UInt(count),
        AggregateOp::NullCount => {
            AggregateValue::UInt(cells().filter(|(_, valid)| !valid).count() as u64)
        }
        AggregateOp::Sum => {
            let mut any = false;
            let value = sum(column.datatype, values().inspect(|_| any = true));
            if !any && column.nullable {
                AggregateValue::Null
            } else {
                value
            }
        }
        AggregateOp::Mean => {
            let (mut total, mut n) = (0f64, 0u64);
            for v in values() {
                total += v.as_f64().unwrap_or(f64::NAN);
                n += 1;
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
            let want = if aggregate.op == AggregateOp::Min {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            };
            let mut best: Option<Scalar> = None;
            for v in values() {
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
    let (lo, hi) = if is_unsigned(datatype) {
        (0, u64::MAX as i128)
    } else {
        (i64::MIN as i128, i64::MAX as i128)
    };
    let mut total: i128 = 0;
    for v in values.filter_map(|v| v.as_int()) {
        total += v;
        if total < lo || total > hi {
            total = hi;
            break;
        }
    }
    if is_unsigned(datatype) {
        AggregateValue::UInt(total as u64)
    } else {
        AggregateValue::Int(total as i64)
    }
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
