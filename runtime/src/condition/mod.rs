//! Query conditions as stored in delete (`.del`) and update (`.upd`)
//! commits: the AST of the negated delete condition, i.e. the condition a
//! cell must satisfy to be kept. Updates are read as deletes (their values
//! are never applied), as TileDB does.
//!
//! [`QueryCondition`] is the condition a user writes (tiledb-py's `cond=`
//! syntax), checked against a schema: reads filter with it, aggregates
//! count under it and deletes store it as the AST above.

mod bounds;
mod node;
mod query;
mod text;
mod typing;

pub use query::{Comparison, FieldBounds, Node, QueryCondition};

use std::cmp::Ordering;

use crate::directory::{ConditionCommit, ConditionKind};
use crate::error::{Cause, Error, Result};
use crate::filter::Datatype;
use crate::format::generated as stored;
use crate::schema::Scalar;
use crate::storage::Storage;
use crate::tile::generic::{load_generic_tile, GenericTile};

/// A condition tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// Every child holds.
    And(Vec<Condition>),
    /// At least one child holds.
    Or(Vec<Condition>),
    /// The child does not hold.
    Not(Box<Condition>),
    /// A field compared with a value.
    Compare {
        /// The dimension or attribute compared.
        field: String,
        /// The comparison (`<`, `==`, IN, ...), as stored.
        op: stored::QueryConditionOp,
        /// The operand bytes (for IN/NOT_IN, all members concatenated).
        value: Vec<u8>,
        /// IN/NOT_IN: the start of each member in `value`.
        offsets: Option<Vec<u64>>,
    },
}

/// A delete or update commit loaded for reading.
#[derive(Debug, Clone)]
pub struct DeleteCondition {
    /// The time of the commit (its name's t1).
    pub timestamp: u64,
    /// The array-relative marker fragments record once they applied it
    /// (`__commits/<name>`).
    pub marker: String,
    /// The cells to keep.
    pub keep: Condition,
    /// A delete (the cells it matches go) or an update.
    pub kind: ConditionKind,
}

fn convert(node: &stored::AstNode) -> Result<Condition> {
    Ok(match &node.node {
        stored::AstNodeNode::AstExpression(e) => {
            let children = e.children.iter().map(convert).collect::<Result<Vec<_>>>()?;
            match e.combination_op {
                stored::CombinationOp::And => Condition::And(children),
                stored::CombinationOp::Or => Condition::Or(children),
                stored::CombinationOp::Not => {
                    Condition::Not(Box::new(children.into_iter().next().ok_or_else(|| {
                        let what = "the operand of a NOT";
                        Error::corrupt(0, "AstExpression", Cause::Missing { what })
                    })?))
                }
            }
        }
        stored::AstNodeNode::AstValue(v) => Condition::Compare {
            field: String::from_utf8_lossy(&v.field_name).into_owned(),
            op: v.op,
            value: v.value.clone(),
            offsets: v.offsets.as_ref().map(|o| {
                o.chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                    .collect()
            }),
        },
    })
}

/// A delete or update commit's tile (`.del`, `.upd`, or one embedded in a
/// `.con` file): the one loader of commits, which the reader
/// ([`load_condition`]), `tdb check` and the fuzz targets call. Returns the
/// condition and the payload bytes the commit took. An update's values
/// follow its condition; they are parsed (TileDB deserializes them with
/// the condition, `deserialize_update_condition_and_values`) and dropped:
/// updates are read as deletes. Bytes after the commit are left to the
/// caller (`tdb check` reports them).
pub fn parse_commit(tile: &GenericTile, kind: ConditionKind) -> Result<(stored::AstNode, u64)> {
    match kind {
        ConditionKind::Delete => tile
            .parse_prefix::<stored::DeleteCommit>((), "DeleteCommit")
            .map(|(c, used)| (c.condition, used)),
        ConditionKind::Update => tile
            .parse_prefix::<stored::UpdateCommit>((), "UpdateCommit")
            .map(|(c, used)| (c.condition, used)),
    }
}

/// Loads a delete or update commit.
pub fn load_condition(
    storage: &dyn Storage,
    commit: &ConditionCommit,
    key: Option<&[u8; 32]>,
) -> Result<DeleteCondition> {
    let describe = storage.describe(&commit.file);
    // The commit's region (its own file, or its part of a consolidated
    // one) bounds the tile; only the tile itself is read.
    let end = commit.offset.checked_add(commit.size).ok_or_else(|| {
        let cause = Cause::OutOfRange {
            value: commit.size,
            limit: u64::MAX - commit.offset,
        };
        Error::corrupt(commit.offset, "commit size", cause).in_file(&describe)
    })?;
    let tile = load_generic_tile(storage, &commit.file, end, commit.offset, key)
        .map_err(|e| e.in_file(&describe))?;
    let (ast, _) = parse_commit(&tile, commit.kind).map_err(|e| e.in_file(&describe))?;
    Ok(DeleteCondition {
        timestamp: commit.name.timestamp_start(),
        marker: format!("{}/{}", crate::directory::COMMITS_DIR, commit.name.as_str()),
        keep: convert(&ast)?,
        kind: commit.kind,
    })
}

/// What a condition sees of one cell.
pub trait CellView {
    /// The value of `field` (its datatype, bytes and validity), or `None`
    /// when the field does not exist for this cell (schema evolution).
    fn field(&self, name: &str) -> Option<(Datatype, &[u8], bool)>;
}

fn compare(datatype: Datatype, cell: &[u8], operand: &[u8]) -> Option<Ordering> {
    let a = Scalar::decode(datatype, cell)?;
    let b = Scalar::decode(datatype, operand)?;
    if let (Scalar::Float(x), Scalar::Float(y)) = (&a, &b) {
        return x.partial_cmp(y);
    }
    Some(a.compare(&b))
}

impl Condition {
    /// Whether `cell` satisfies the condition.
    pub fn eval(&self, cell: &dyn CellView) -> bool {
        use stored::QueryConditionOp as Op;
        match self {
            Condition::And(c) => c.iter().all(|c| c.eval(cell)),
            Condition::Or(c) => c.iter().any(|c| c.eval(cell)),
            Condition::Not(c) => !c.eval(cell),
            Condition::Compare {
                field,
                op,
                value,
                offsets,
            } => {
                let Some((datatype, bytes, valid)) = cell.field(field) else {
                    return false;
                };
                if !valid {
                    return false;
                }
                match op {
                    Op::AlwaysTrue => true,
                    Op::AlwaysFalse => false,
                    Op::In | Op::NotIn => {
                        let starts = offsets.clone().unwrap_or_default();
                        let member = starts.iter().enumerate().any(|(i, s)| {
                            let end = starts.get(i + 1).copied().unwrap_or(value.len() as u64);
                            value.get(*s as usize..end as usize).is_some_and(|m| {
                                compare(datatype, bytes, m) == Some(Ordering::Equal)
                            })
                        });
                        member == (*op == Op::In)
                    }
                    _ => {
                        let Some(ord) = compare(datatype, bytes, value) else {
                            return *op == Op::Ne;
                        };
                        match op {
                            Op::Lt => ord == Ordering::Less,
                            Op::Le => ord != Ordering::Greater,
                            Op::Gt => ord == Ordering::Greater,
                            Op::Ge => ord != Ordering::Less,
                            Op::Eq => ord == Ordering::Equal,
                            _ => ord != Ordering::Equal,
                        }
                    }
                }
            }
        }
    }
}
