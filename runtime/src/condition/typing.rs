//! The parsed text of a condition checked against a schema and turned into
//! [`Node`]s: names resolved to attributes or dimensions, values encoded in
//! the field's datatype (never silently converted: `2.5` on an integer
//! field, a number on a string field, an integer out of the field's range
//! are usage errors), enumeration values looked up, refusals as tiledb-py
//! and TileDB refuse (dimensions of dense arrays, `<` on an unordered
//! enumeration, `x < None`).

use super::node::{Comparison, Node};
use super::text::{CmpOp, Expr, Literal};
use crate::error::{Error, Result};
use crate::filter::Datatype;
use crate::schema::value::int_limits;
use crate::schema::{ArraySchema, Enumeration};

struct Checker<'a> {
    text: &'a str,
    schema: &'a ArraySchema,
}

/// What a condition needs to know of a field.
struct Field<'a> {
    name: String,
    datatype: Datatype,
    nullable: bool,
    enumeration: Option<&'a Enumeration>,
}

/// Checks `expr` (parsed from `text`) against `schema`.
pub(crate) fn check(text: &str, expr: &Expr, schema: &ArraySchema) -> Result<Node> {
    Checker { text, schema }.node(expr)
}

/// Compared as bytes: strings (`CHAR` too) and the byte types (spec/'s
/// `is_string`, `is_text` and `is_byte` classes).
fn is_stringy(datatype: Datatype) -> bool {
    datatype.is_string() || datatype.is_text() || datatype.is_byte()
}

impl<'a> Checker<'a> {
    fn usage(&self, what: impl std::fmt::Display) -> Error {
        Error::Usage(format!("query condition {:?}: {what}", self.text))
    }

    fn node(&self, expr: &Expr) -> Result<Node> {
        Ok(match expr {
            Expr::Or(items) => Node::Or(items.iter().map(|e| self.node(e)).collect::<Result<_>>()?),
            Expr::And(items) => {
                Node::And(items.iter().map(|e| self.node(e)).collect::<Result<_>>()?)
            }
            Expr::BitOr(a, b) => Node::Or(vec![self.operand(a)?, self.operand(b)?]),
            Expr::BitAnd(a, b) => Node::And(vec![self.operand(a)?, self.operand(b)?]),
            Expr::Not(inner) => self.node(inner)?.negated(),
            Expr::Compare(first, rest) => self.compare_chain(first, rest)?,
            other => {
                return Err(self.usage(format!(
                    "{} is not a comparison; a condition is made of comparisons",
                    show(other)
                )))
            }
        })
    }

    /// An operand of `&` or `|`: a condition, never a bare value.
    fn operand(&self, expr: &Expr) -> Result<Node> {
        match expr {
            Expr::Name(_) | Expr::Literal(_) | Expr::Call(..) | Expr::List(_) => Err(self.usage(format!(
                "{} is not a condition: `&` and `|` bind tighter than comparisons, so parenthesize them: (a == 1) | (a == 2)",
                show(expr)
            ))),
            _ => self.node(expr),
        }
    }

    fn compare_chain(&self, first: &Expr, rest: &[(CmpOp, Expr)]) -> Result<Node> {
        let mut nodes = Vec::new();
        let mut left = first;
        for (op, right) in rest {
            nodes.push(self.comparison(left, *op, right)?);
            left = right;
        }
        Ok(if nodes.len() == 1 {
            nodes.remove(0)
        } else {
            Node::And(nodes)
        })
    }

    fn comparison(&self, left: &Expr, op: CmpOp, right: &Expr) -> Result<Node> {
        let simple = |op: CmpOp| match op {
            CmpOp::Lt => Some(Comparison::Lt),
            CmpOp::Le => Some(Comparison::Le),
            CmpOp::Gt => Some(Comparison::Gt),
            CmpOp::Ge => Some(Comparison::Ge),
            CmpOp::Eq => Some(Comparison::Eq),
            CmpOp::Ne => Some(Comparison::Ne),
            CmpOp::In | CmpOp::NotIn => None,
        };
        let Some(comparison) = simple(op) else {
            let field = self.field(left)?;
            let Expr::List(items) = right else {
                return Err(self.usage("`in` takes a list: field in [1, 2, 3]"));
            };
            return self.membership(&field, items, op == CmpOp::NotIn);
        };
        let (variable, value, comparison) = if is_variable(left) {
            (left, right, comparison)
        } else if is_variable(right) {
            (right, left, comparison.reversed())
        } else {
            return Err(self.usage(format!(
                "{} {} compares no attribute or dimension",
                show(left),
                show(right)
            )));
        };
        let field = self.field(variable)?;
        let literal = self.literal(value)?;
        self.compare(&field, comparison, literal)
    }

    fn compare(&self, field: &Field, op: Comparison, literal: &Literal) -> Result<Node> {
        if *literal == Literal::None {
            return match (op, field.nullable) {
                (Comparison::Eq | Comparison::Ne, true) => Ok(Node::Null {
                    field: field.name.clone(),
                    is_null: op == Comparison::Eq,
                }),
                // A field that cannot be null: `== None` holds nowhere.
                (Comparison::Eq | Comparison::Ne, false) => {
                    Ok(Node::Constant(op == Comparison::Ne))
                }
                _ => Err(self.usage(format!(
                    "None can only be compared with == or != (field {:?})",
                    field.name
                ))),
            };
        }
        let Some(enumeration) = field.enumeration else {
            return Ok(Node::Compare {
                field: field.name.clone(),
                datatype: field.datatype,
                op,
                value: self.encode(field, field.datatype, literal)?,
            });
        };
        let index = self.enumeration_index(field, enumeration, literal)?;
        if !matches!(op, Comparison::Eq | Comparison::Ne) && !enumeration.ordered {
            return Err(self.usage(format!(
                "{:?} is enumerated by the unordered enumeration {:?}: only ==, !=, in and not in apply",
                field.name, enumeration.name
            )));
        }
        match index {
            Some(value) => Ok(Node::Compare {
                field: field.name.clone(),
                datatype: field.datatype,
                op,
                value,
            }),
            // A value the enumeration lacks: no cell holds it.
            None if matches!(op, Comparison::Eq | Comparison::Ne) => {
                Ok(Node::Constant(op == Comparison::Ne))
            }
            None => Err(self.usage(format!(
                "{} is not a value of the enumeration {:?}",
                show_literal(literal),
                enumeration.name
            ))),
        }
    }

    fn membership(&self, field: &Field, items: &[Expr], negated: bool) -> Result<Node> {
        if items.is_empty() {
            return Err(self.usage("`in` needs at least one value"));
        }
        let mut members = Vec::new();
        for item in items {
            let literal = self.literal(item)?;
            if *literal == Literal::None {
                return Err(self.usage("None cannot be a member of an `in` list"));
            }
            let member = match field.enumeration {
                Some(e) => self.enumeration_index(field, e, literal)?,
                None => Some(self.encode(field, field.datatype, literal)?),
            };
            members.extend(member);
        }
        if members.is_empty() {
            // No value is in the enumeration.
            return Ok(Node::Constant(negated));
        }
        Ok(Node::Set {
            field: field.name.clone(),
            members,
            negated,
        })
    }

    /// The index (in the attribute's datatype) of `literal` among the
    /// enumeration's values; `None` when it is not one of them.
    fn enumeration_index(
        &self,
        field: &Field,
        enumeration: &Enumeration,
        literal: &Literal,
    ) -> Result<Option<Vec<u8>>> {
        let value = self.encode(field, enumeration.datatype, literal)?;
        let Some(index) = enumeration.values.iter().position(|v| *v == value) else {
            return Ok(None);
        };
        let size = field.datatype.size() as usize;
        Ok(Some((index as u128).to_le_bytes()[..size.min(16)].to_vec()))
    }

    fn field(&self, expr: &Expr) -> Result<Field<'a>> {
        let (name, wanted) = match expr {
            Expr::Name(n) => (n.as_str(), None),
            Expr::Call(f, arg) if f == "attr" || f == "dim" => match &**arg {
                Expr::Literal(Literal::Str(s)) => (s.as_str(), Some(f.as_str())),
                Expr::Name(n) => (n.as_str(), Some(f.as_str())),
                other => return Err(self.usage(format!("{f}() takes a name, not {}", show(other)))),
            },
            other => {
                return Err(self.usage(format!("{} is not an attribute or dimension", show(other))))
            }
        };
        let schema = self.schema;
        if let Some((_, a)) = schema.attribute(name).filter(|_| wanted != Some("dim")) {
            if a.cell_val_num.is_some_and(|n| n != 1) && !is_stringy(a.datatype) {
                return Err(self.usage(format!("{name:?} holds several values per cell; conditions apply to single-value attributes")));
            }
            return Ok(Field {
                name: name.to_string(),
                datatype: a.datatype,
                nullable: a.nullable,
                enumeration: a.enumeration.as_ref().and_then(|e| schema.enumeration(e)),
            });
        }
        if let Some((_, d)) = schema.dimension(name).filter(|_| wanted != Some("attr")) {
            if schema.is_dense() {
                return Err(self.usage(format!(
                    "{name:?} is a dimension of a dense array; conditions apply to its attributes only"
                )));
            }
            return Ok(Field {
                name: name.to_string(),
                datatype: d.datatype,
                nullable: false,
                enumeration: None,
            });
        }
        Err(self.usage(match wanted {
            Some("attr") => format!("the array has no attribute named {name:?}"),
            Some(_) => format!("the array has no dimension named {name:?}"),
            None => format!("the array has no attribute or dimension named {name:?}"),
        }))
    }

    fn literal<'e>(&self, expr: &'e Expr) -> Result<&'e Literal> {
        match expr {
            Expr::Literal(l) => Ok(l),
            Expr::Call(f, arg) if f == "val" => self.literal(arg),
            other => Err(self.usage(format!(
                "{} is not a constant: the other side of a comparison must be a value (quote strings)",
                show(other)
            ))),
        }
    }

    /// The bytes of `literal` as a value of `datatype`.
    fn encode(&self, field: &Field, datatype: Datatype, literal: &Literal) -> Result<Vec<u8>> {
        let mismatch = || {
            self.usage(format!(
                "{:?} holds {} values; {} is not one",
                field.name,
                datatype.name(),
                show_literal(literal)
            ))
        };
        if is_stringy(datatype) {
            return match literal {
                Literal::Str(s) => Ok(s.as_bytes().to_vec()),
                _ => Err(mismatch()),
            };
        }
        match (datatype, literal) {
            (Datatype::Float32, Literal::Int(v)) => Ok((*v as f32).to_le_bytes().to_vec()),
            (Datatype::Float32, Literal::Float(v)) => Ok((*v as f32).to_le_bytes().to_vec()),
            (Datatype::Float64, Literal::Int(v)) => Ok((*v as f64).to_le_bytes().to_vec()),
            (Datatype::Float64, Literal::Float(v)) => Ok(v.to_le_bytes().to_vec()),
            (_, Literal::Int(_) | Literal::Bool(_) | Literal::Float(_)) => {
                let value = match literal {
                    Literal::Int(v) => *v,
                    Literal::Bool(b) => i128::from(*b),
                    // Only a float that is an integer: `2.5` is refused, not truncated.
                    Literal::Float(f) if f.fract() == 0.0 && f.abs() < 1e38 => *f as i128,
                    _ => return Err(mismatch()),
                };
                let (lo, hi) = int_limits(datatype).ok_or_else(mismatch)?;
                if value < lo || value > hi {
                    return Err(self.usage(format!(
                        "{value} is outside the range of {:?} ({} values, {lo} to {hi})",
                        field.name,
                        datatype.name()
                    )));
                }
                Ok(value.to_le_bytes()[..datatype.size() as usize].to_vec())
            }
            _ => Err(mismatch()),
        }
    }
}

fn is_variable(expr: &Expr) -> bool {
    matches!(expr, Expr::Name(_)) || matches!(expr, Expr::Call(f, _) if f == "attr" || f == "dim")
}

fn show_literal(literal: &Literal) -> String {
    match literal {
        Literal::Int(v) => v.to_string(),
        Literal::Float(v) => format!("{v:?}"),
        Literal::Str(s) => format!("the string {s:?}"),
        Literal::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        Literal::None => "None".to_string(),
    }
}

fn show(expr: &Expr) -> String {
    match expr {
        Expr::Name(n) => n.clone(),
        Expr::Literal(l) => show_literal(l),
        Expr::Call(f, _) => format!("{f}(...)"),
        Expr::List(_) => "a list".to_string(),
        _ => "an expression".to_string(),
    }
}
