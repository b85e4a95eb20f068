//! Delete conditions of recipes (TileDB's Python-like syntax: `a == 9`,
//! `a > 6 and d < 7`, parentheses, `and`/`or`/`&`/`|`, numbers and quoted
//! strings) parsed into the stored AST, and negated as TileDB stores a
//! delete (FORMAT_NOTES §2.17: the condition of the cells to keep).

use tiledb_runtime::error::{Error, Result};
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::format::generated as stored;
use tiledb_runtime::schema::ArraySchema;

use super::values::value_bytes;

fn usage(what: impl Into<String>) -> Error {
    Error::Usage(what.into())
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Number(String),
    Str(String),
    Op(String),
    Open,
    Close,
}

fn tokenize(text: &str) -> Result<Vec<Token>> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' {
            out.push(Token::Open);
            i += 1;
        } else if c == ')' {
            out.push(Token::Close);
            i += 1;
        } else if c == '"' || c == '\'' {
            let end = chars[i + 1..]
                .iter()
                .position(|&x| x == c)
                .ok_or_else(|| usage("an unterminated string in a condition"))?;
            out.push(Token::Str(chars[i + 1..i + 1 + end].iter().collect()));
            i += end + 2;
        } else if c.is_ascii_digit()
            || (c == '-' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let start = i;
            i += 1;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            out.push(Token::Number(chars[start..i].iter().collect()));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
        } else {
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            let op = if ["==", "!=", "<=", ">="].contains(&two.as_str()) {
                two
            } else if "<>&|".contains(c) {
                c.to_string()
            } else {
                return Err(usage(format!("unexpected {c:?} in a condition")));
            };
            i += op.len();
            out.push(Token::Op(op));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    schema: &'a ArraySchema,
}

fn combination(token: &Token) -> Option<stored::CombinationOp> {
    match token {
        Token::Ident(w) if w == "and" => Some(stored::CombinationOp::And),
        Token::Ident(w) if w == "or" => Some(stored::CombinationOp::Or),
        Token::Op(o) if o == "&" => Some(stored::CombinationOp::And),
        Token::Op(o) if o == "|" => Some(stored::CombinationOp::Or),
        _ => None,
    }
}

fn combine(op: stored::CombinationOp, a: stored::AstNode, b: stored::AstNode) -> stored::AstNode {
    // Same-operator chains become one node with every operand, as TileDB
    // combines them.
    let mut children = Vec::new();
    for n in [a, b] {
        match n.node {
            stored::AstNodeNode::AstExpression(e) if e.combination_op == op => {
                children.extend(e.children);
            }
            node => children.push(stored::AstNode {
                node_type: n.node_type,
                node,
            }),
        }
    }
    stored::AstNode {
        node_type: stored::AstNodeType::Expression,
        node: stored::AstNodeNode::AstExpression(stored::AstExpression {
            combination_op: op,
            children,
        }),
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Result<Token> {
        let t = self
            .tokens
            .get(self.at)
            .cloned()
            .ok_or_else(|| usage("a condition ends too early"))?;
        self.at += 1;
        Ok(t)
    }

    /// `or` binds looser than `and`.
    fn expr(&mut self) -> Result<stored::AstNode> {
        let mut left = self.conjunction()?;
        while self.peek().and_then(combination) == Some(stored::CombinationOp::Or) {
            self.at += 1;
            let right = self.conjunction()?;
            left = combine(stored::CombinationOp::Or, left, right);
        }
        Ok(left)
    }

    fn conjunction(&mut self) -> Result<stored::AstNode> {
        let mut left = self.term()?;
        while self.peek().and_then(combination) == Some(stored::CombinationOp::And) {
            self.at += 1;
            let right = self.term()?;
            left = combine(stored::CombinationOp::And, left, right);
        }
        Ok(left)
    }

    fn term(&mut self) -> Result<stored::AstNode> {
        if self.peek() == Some(&Token::Open) {
            self.at += 1;
            let inner = self.expr()?;
            if self.next()? != Token::Close {
                return Err(usage("a missing ) in a condition"));
            }
            return Ok(inner);
        }
        let Token::Ident(field) = self.next()? else {
            return Err(usage("a condition term must start with a field name"));
        };
        let Token::Op(op) = self.next()? else {
            return Err(usage("a comparison operator was expected"));
        };
        let op = match op.as_str() {
            "==" => stored::QueryConditionOp::Eq,
            "!=" => stored::QueryConditionOp::Ne,
            "<" => stored::QueryConditionOp::Lt,
            "<=" => stored::QueryConditionOp::Le,
            ">" => stored::QueryConditionOp::Gt,
            ">=" => stored::QueryConditionOp::Ge,
            other => return Err(usage(format!("unsupported operator {other}"))),
        };
        let datatype = self.field_type(&field)?;
        let value = match self.next()? {
            Token::Str(s) => s.into_bytes(),
            Token::Number(n) => {
                let v = if n.contains('.') || n.contains('e') {
                    toml::Value::Float(n.parse().map_err(|_| usage(format!("bad number {n}")))?)
                } else {
                    toml::Value::String(n)
                };
                value_bytes(datatype, &v)?
            }
            _ => return Err(usage("a value was expected")),
        };
        Ok(stored::AstNode {
            node_type: stored::AstNodeType::Value,
            node: stored::AstNodeNode::AstValue(stored::AstValue {
                op,
                field_name: field.into_bytes(),
                value,
                offsets: None,
            }),
        })
    }

    fn field_type(&self, name: &str) -> Result<Datatype> {
        if let Some((_, a)) = self.schema.attribute(name) {
            return Ok(a.datatype);
        }
        if let Some((_, d)) = self.schema.dimension(name) {
            return Ok(d.datatype);
        }
        Err(usage(format!("no field {name} in the schema")))
    }
}

/// Parses `text` against `schema`.
pub fn parse(text: &str, schema: &ArraySchema) -> Result<stored::AstNode> {
    let mut p = Parser {
        tokens: tokenize(text)?,
        at: 0,
        schema,
    };
    let node = p.expr()?;
    if p.at != p.tokens.len() {
        return Err(usage(format!("trailing text in condition {text:?}")));
    }
    Ok(node)
}

/// The negation TileDB stores for a delete.
pub(crate) fn negate(node: stored::AstNode) -> stored::AstNode {
    use stored::{CombinationOp as C, QueryConditionOp as Q};
    let node_type = node.node_type;
    let inner = match node.node {
        stored::AstNodeNode::AstValue(mut v) => {
            v.op = match v.op {
                Q::Lt => Q::Ge,
                Q::Ge => Q::Lt,
                Q::Gt => Q::Le,
                Q::Le => Q::Gt,
                Q::Eq => Q::Ne,
                Q::Ne => Q::Eq,
                Q::In => Q::NotIn,
                Q::NotIn => Q::In,
                Q::AlwaysTrue => Q::AlwaysFalse,
                Q::AlwaysFalse => Q::AlwaysTrue,
            };
            stored::AstNodeNode::AstValue(v)
        }
        stored::AstNodeNode::AstExpression(e) => {
            let combination_op = match e.combination_op {
                C::And => C::Or,
                C::Or => C::And,
                C::Not => C::Not,
            };
            stored::AstNodeNode::AstExpression(stored::AstExpression {
                combination_op,
                children: e.children.into_iter().map(negate).collect(),
            })
        }
    };
    stored::AstNode {
        node_type,
        node: inner,
    }
}
