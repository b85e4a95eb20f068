//! The nodes of a checked query condition ([`Node`], [`Comparison`]) and
//! TileDB's negation of them.

use std::cmp::Ordering;

use crate::filter::Datatype;
use crate::format::generated as stored;

/// A comparison of a field with one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Comparison {
    /// TileDB's negation of the comparison.
    pub fn negated(self) -> Comparison {
        use Comparison::*;
        match self {
            Lt => Ge,
            Ge => Lt,
            Gt => Le,
            Le => Gt,
            Eq => Ne,
            Ne => Eq,
        }
    }

    /// The comparison with its operands swapped (`3 > a` is `a < 3`).
    pub fn reversed(self) -> Comparison {
        use Comparison::*;
        match self {
            Lt => Gt,
            Gt => Lt,
            Le => Ge,
            Ge => Le,
            other => other,
        }
    }

    pub(crate) fn holds(self, order: Option<Ordering>) -> bool {
        use Comparison::*;
        match order {
            // NaN on either side: only `!=` holds, as in C++.
            None => self == Ne,
            Some(o) => match self {
                Lt => o == Ordering::Less,
                Le => o != Ordering::Greater,
                Gt => o == Ordering::Greater,
                Ge => o != Ordering::Less,
                Eq => o == Ordering::Equal,
                Ne => o != Ordering::Equal,
            },
        }
    }

    pub(crate) fn stored(self) -> stored::QueryConditionOp {
        use stored::QueryConditionOp as Op;
        match self {
            Comparison::Lt => Op::Lt,
            Comparison::Le => Op::Le,
            Comparison::Gt => Op::Gt,
            Comparison::Ge => Op::Ge,
            Comparison::Eq => Op::Eq,
            Comparison::Ne => Op::Ne,
        }
    }
}

/// A node of a checked condition. Values are stored as the field's bytes
/// (an enumerated attribute's as the index of the value).
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// Every child holds.
    And(Vec<Node>),
    /// At least one child holds.
    Or(Vec<Node>),
    /// A field compared with a value.
    Compare {
        /// The attribute or dimension.
        field: String,
        /// The type the cell and the value are compared as.
        datatype: Datatype,
        /// The comparison.
        op: Comparison,
        /// The value's bytes.
        value: Vec<u8>,
    },
    /// `field == None` (`is_null`) or `field != None`.
    Null {
        /// The attribute or dimension.
        field: String,
        /// True for `== None`.
        is_null: bool,
    },
    /// `field in [...]` or, `negated`, `field not in [...]`.
    Set {
        /// The attribute or dimension.
        field: String,
        /// Each member's bytes.
        members: Vec<Vec<u8>>,
        /// `not in`.
        negated: bool,
    },
    /// A node whose answer the schema decides alone (a value missing from
    /// an enumeration, a null test of a field that cannot be null).
    Constant(bool),
}

impl Node {
    /// TileDB's negation: comparisons flipped, `and` and `or` swapped.
    pub fn negated(&self) -> Node {
        match self {
            Node::And(c) => Node::Or(c.iter().map(Node::negated).collect()),
            Node::Or(c) => Node::And(c.iter().map(Node::negated).collect()),
            Node::Compare {
                field,
                datatype,
                op,
                value,
            } => Node::Compare {
                field: field.clone(),
                datatype: *datatype,
                op: op.negated(),
                value: value.clone(),
            },
            Node::Null { field, is_null } => Node::Null {
                field: field.clone(),
                is_null: !is_null,
            },
            Node::Set {
                field,
                members,
                negated,
            } => Node::Set {
                field: field.clone(),
                members: members.clone(),
                negated: !negated,
            },
            Node::Constant(v) => Node::Constant(!v),
        }
    }

    pub(crate) fn fields<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Node::And(c) | Node::Or(c) => c.iter().for_each(|c| c.fields(out)),
            Node::Compare { field, .. } | Node::Null { field, .. } | Node::Set { field, .. } => {
                if !out.contains(&field.as_str()) {
                    out.push(field);
                }
            }
            Node::Constant(_) => {}
        }
    }

    /// Constants folded into their parents: `x and False` is `False`, `x
    /// or False` is `x`.
    pub(crate) fn folded(self) -> Node {
        let fold = |children: Vec<Node>, and: bool| {
            let mut kept = Vec::new();
            for c in children.into_iter().map(Node::folded) {
                match c {
                    Node::Constant(v) if v == and => {}
                    Node::Constant(v) => return Node::Constant(v),
                    other => kept.push(other),
                }
            }
            match kept.len() {
                0 => Node::Constant(and),
                1 => kept.remove(0),
                _ if and => Node::And(kept),
                _ => Node::Or(kept),
            }
        };
        match self {
            Node::And(c) => fold(c, true),
            Node::Or(c) => fold(c, false),
            other => other,
        }
    }
}
