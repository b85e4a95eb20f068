//! [`QueryCondition`]: a condition on cells, parsed from tiledb-py's `cond=`
//! syntax ([`super::text`]) and checked against a schema ([`super::typing`]),
//! evaluated with TileDB's semantics:
//!
//! - a null cell fails every comparison with a value (`!=` and `not in`
//!   too); `x == None` holds for null cells only, `x != None` for the others;
//! - `not` is TileDB's negation, not a complement: it flips each comparison
//!   (`not (a < 3)` is `a >= 3`, so a null or NaN cell fails both);
//! - floats compare as IEEE numbers (NaN fails all but `!=`); `in` compares
//!   the stored bytes (`-0.0 in [0.0]` fails, as in TileDB);
//! - strings compare byte-wise, a prefix before the longer string;
//! - an enumerated attribute is compared by its values: the value is looked
//!   up in the enumeration and the stored index compared.

use std::cmp::Ordering;

use crate::column::Column;
use crate::error::{Error, Result};
use crate::filter::Datatype;
use crate::format::generated as stored;
use crate::schema::{ArraySchema, Scalar};

pub use super::bounds::FieldBounds;
pub use super::node::{Comparison, Node};

/// A query condition checked against a schema: parse one with
/// [`QueryCondition::parse`], read with it
/// ([`QueryBuilder::condition`](crate::read::QueryBuilder::condition)),
/// aggregate under it, or delete the cells it selects
/// ([`Array::delete`](crate::array::Array::delete)).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryCondition {
    text: String,
    root: Node,
    /// Reads may leave out tiles and fragments whose recorded statistics
    /// show that no cell can pass (see [`QueryCondition::skipping_tiles`]).
    skip_tiles: bool,
}

impl std::fmt::Display for QueryCondition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// The columns a condition reads, found by name.
fn column<'c>(columns: &[&'c Column], name: &str) -> Result<&'c Column> {
    columns
        .iter()
        .find(|c| c.name == name)
        .copied()
        .ok_or_else(|| Error::Usage(format!("the query condition needs the field {name:?}")))
}

impl QueryCondition {
    /// Parses `text` (tiledb-py's `QueryCondition` syntax) and checks it
    /// against `schema`: an unknown field, a value of the wrong type, an
    /// operator the field does not allow is a usage error naming it.
    pub fn parse(text: &str, schema: &ArraySchema) -> Result<QueryCondition> {
        let expr = super::text::parse(text)?;
        let root = super::typing::check(text, &expr, schema)?;
        Ok(QueryCondition {
            text: text.to_string(),
            root,
            skip_tiles: true,
        })
    }

    /// The text the condition was parsed from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The checked tree.
    pub fn root(&self) -> &Node {
        &self.root
    }

    /// TileDB's negation of the condition (`not (...)`).
    pub fn negated(&self) -> QueryCondition {
        QueryCondition {
            text: format!("not ({})", self.text),
            root: self.root.negated(),
            skip_tiles: self.skip_tiles,
        }
    }

    /// The same condition, with reads under it allowed (`true`, the
    /// default) or not to leave out the tiles and fragments whose recorded
    /// minimums, maximums and null counts show that no cell can pass. The
    /// results are the same either way; off, every tile is decoded and
    /// tested, which tests use to compare the two.
    pub fn skipping_tiles(mut self, on: bool) -> QueryCondition {
        self.skip_tiles = on;
        self
    }

    /// Whether reads under this condition may leave out tiles.
    pub fn skips_tiles(&self) -> bool {
        self.skip_tiles
    }

    /// Whether some cell of a group (a tile, a fragment) whose fields
    /// `bounds` describes (by name) may satisfy the condition; `false` only
    /// when none can.
    pub fn may_match(&self, bounds: &dyn Fn(&str) -> FieldBounds) -> bool {
        super::bounds::may_match(&self.root, bounds)
    }

    /// The attributes and dimensions the condition reads, each once.
    pub fn fields(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.root.fields(&mut out);
        out.into_iter().map(String::from).collect()
    }

    /// For each cell of `columns` (which must hold every field of
    /// [`fields`](Self::fields), with as many cells each as `cells`),
    /// whether it satisfies the condition.
    pub fn evaluate(&self, columns: &[&Column], cells: usize) -> Result<Vec<bool>> {
        for name in self.fields() {
            let c = column(columns, &name)?;
            if c.len() != cells {
                return Err(Error::Usage(format!(
                    "the column {name:?} has {} cells, not {cells}",
                    c.len()
                )));
            }
        }
        let mut out = vec![true; cells];
        eval_into(&self.root, columns, &mut out)?;
        Ok(out)
    }

    /// The condition as TileDB stores it in a commit's AST; `None` when it
    /// is constant (it selects every cell or none, whatever they hold).
    pub fn to_stored(&self) -> Option<stored::AstNode> {
        to_ast(&self.root.clone().folded())
    }
}

/// Narrows `keep` (true = still possible) to the cells `node` accepts.
fn eval_into(node: &Node, columns: &[&Column], keep: &mut [bool]) -> Result<()> {
    match node {
        Node::And(children) => {
            for c in children {
                eval_into(c, columns, keep)?;
            }
        }
        Node::Or(children) => {
            let mut any = vec![false; keep.len()];
            for c in children {
                let mut this = keep.to_vec();
                eval_into(c, columns, &mut this)?;
                any.iter_mut().zip(&this).for_each(|(a, t)| *a |= *t);
            }
            keep.iter_mut().zip(&any).for_each(|(k, a)| *k &= *a);
        }
        Node::Constant(v) => {
            if !v {
                keep.fill(false);
            }
        }
        Node::Null { field, is_null } => {
            let c = column(columns, field)?;
            for (i, k) in keep.iter_mut().enumerate().filter(|(_, k)| **k) {
                *k = c.is_valid(i) != *is_null;
            }
        }
        Node::Set {
            field,
            members,
            negated,
        } => {
            let c = column(columns, field)?;
            for (i, k) in keep.iter_mut().enumerate().filter(|(_, k)| **k) {
                let (bytes, valid) = c.cell(i);
                *k = valid && members.iter().any(|m| m == bytes) != *negated;
            }
        }
        Node::Compare {
            field,
            datatype,
            op,
            value,
        } => {
            let c = column(columns, field)?;
            let operand = Scalar::decode(*datatype, value);
            for (i, k) in keep.iter_mut().enumerate().filter(|(_, k)| **k) {
                let (bytes, valid) = c.cell(i);
                *k = valid && op.holds(order(*datatype, bytes, operand.as_ref()));
            }
        }
    }
    Ok(())
}

/// The order of a cell against the operand; `None` when unordered (NaN).
fn order(datatype: Datatype, cell: &[u8], operand: Option<&Scalar>) -> Option<Ordering> {
    let cell = Scalar::decode(datatype, cell)?;
    match (&cell, operand?) {
        (Scalar::Float(a), Scalar::Float(b)) => a.partial_cmp(b),
        (a, b) => Some(a.compare(b)),
    }
}

fn value_node(
    op: stored::QueryConditionOp,
    field: &str,
    value: Vec<u8>,
    offsets: Option<Vec<u8>>,
) -> stored::AstNode {
    stored::AstNode {
        node_type: stored::AstNodeType::Value,
        node: stored::AstNodeNode::AstValue(stored::AstValue {
            op,
            field_name: field.as_bytes().to_vec(),
            value,
            offsets,
        }),
    }
}

fn to_ast(node: &Node) -> Option<stored::AstNode> {
    use stored::QueryConditionOp as Op;
    Some(match node {
        Node::And(c) | Node::Or(c) => stored::AstNode {
            node_type: stored::AstNodeType::Expression,
            node: stored::AstNodeNode::AstExpression(stored::AstExpression {
                combination_op: if matches!(node, Node::And(_)) {
                    stored::CombinationOp::And
                } else {
                    stored::CombinationOp::Or
                },
                children: c.iter().map(to_ast).collect::<Option<Vec<_>>>()?,
            }),
        },
        Node::Compare {
            field, op, value, ..
        } => value_node(op.stored(), field, value.clone(), None),
        // TileDB stores a null test as `==`/`!=` with no value.
        Node::Null { field, is_null } => value_node(
            if *is_null { Op::Eq } else { Op::Ne },
            field,
            Vec::new(),
            None,
        ),
        Node::Set {
            field,
            members,
            negated,
        } => {
            let mut offsets = Vec::new();
            let mut value = Vec::new();
            for m in members {
                offsets.extend_from_slice(&(value.len() as u64).to_le_bytes());
                value.extend_from_slice(m);
            }
            let op = if *negated { Op::NotIn } else { Op::In };
            value_node(op, field, value, Some(offsets))
        }
        Node::Constant(_) => return None,
    })
}
