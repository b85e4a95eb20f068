//! The text of a query condition, as tiledb-py's `QueryCondition` takes it
//! (a Python expression: `a > 5 and s == 'x'`, `not (f < 1.5)`,
//! `c in ['red', 'blue']`, `attr("my attr") == None`, `1 < a <= 9`),
//! tokenized and parsed into a syntax tree that the checker
//! ([`super::query`]) types against a schema.
//!
//! Python's precedence is kept: `or` binds loosest, then `and`, then
//! `not`, then the comparisons (which chain: `1 < a < 5` is `1 < a and
//! a < 5`), then `|`, then `&` — so `a == 1 | a == 2` is refused, as in
//! tiledb-py, and `(a == 1) | (a == 2)` is an `or`.

use crate::error::{Error, Result};

/// A constant of the expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Literal {
    Int(i128),
    Float(f64),
    Str(String),
    Bool(bool),
    None,
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    In,
    NotIn,
}

/// A node of the parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    Or(Vec<Expr>),
    And(Vec<Expr>),
    Not(Box<Expr>),
    BitOr(Box<Expr>, Box<Expr>),
    BitAnd(Box<Expr>, Box<Expr>),
    /// `first op1 e1 op2 e2 …` (a chain of comparisons).
    Compare(Box<Expr>, Vec<(CmpOp, Expr)>),
    Name(String),
    /// `attr(...)`, `dim(...)` or `val(...)`.
    Call(String, Box<Expr>),
    Literal(Literal),
    List(Vec<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Int(i128),
    Float(f64),
    Str(String),
    Punct(&'static str),
}

/// Deeper nesting than this is refused (a hostile text must not exhaust
/// the stack).
const MAX_DEPTH: usize = 64;

fn usage(text: &str, what: impl std::fmt::Display) -> Error {
    Error::Usage(format!("query condition {text:?}: {what}"))
}

const PUNCTS: [&str; 14] = [
    "==", "!=", "<=", ">=", "<", ">", "(", ")", "[", "]", ",", "&", "|", "-",
];

fn tokenize(text: &str) -> Result<Vec<Token>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' || c == b'\'' {
            let (s, used) = string_literal(text, i)?;
            out.push(Token::Str(s));
            i += used;
        } else if c.is_ascii_digit()
            || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let (token, used) = number(text, i)?;
            out.push(token);
            i += used;
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let end = text[i..]
                .find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                .map_or(text.len(), |e| i + e);
            out.push(Token::Word(text[i..end].to_string()));
            i = end;
        } else if let Some(p) = PUNCTS.iter().find(|p| text[i..].starts_with(**p)) {
            out.push(Token::Punct(p));
            i += p.len();
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            return Err(usage(text, format!("unexpected {ch:?} at byte {i}")));
        }
    }
    Ok(out)
}

/// A quoted string starting at `start`, with Python's common escapes.
fn string_literal(text: &str, start: usize) -> Result<(String, usize)> {
    let quote = text.as_bytes()[start] as char;
    let mut out = String::new();
    let mut chars = text[start + 1..].char_indices();
    while let Some((at, ch)) = chars.next() {
        match ch {
            c if c == quote => return Ok((out, at + 2)),
            '\\' => {
                let Some((_, escaped)) = chars.next() else {
                    break;
                };
                out.push(match escaped {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    '0' => '\0',
                    other => other,
                });
            }
            c => out.push(c),
        }
    }
    Err(usage(
        text,
        format!("the string at byte {start} is not closed"),
    ))
}

fn number(text: &str, start: usize) -> Result<(Token, usize)> {
    let rest = &text[start..];
    let mut end = 0;
    let bytes = rest.as_bytes();
    while end < bytes.len() {
        let c = bytes[end];
        let exponent_sign =
            (c == b'+' || c == b'-') && end > 0 && matches!(bytes[end - 1], b'e' | b'E');
        if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || exponent_sign {
            end += 1;
        } else {
            break;
        }
    }
    let literal = rest[..end].replace('_', "");
    let bad = || usage(text, format!("{:?} is not a number", &rest[..end]));
    let token = if let Some(hex) = literal.strip_prefix("0x") {
        Token::Int(i128::from_str_radix(hex, 16).map_err(|_| bad())?)
    } else if literal.contains(['.', 'e', 'E']) {
        Token::Float(literal.parse().map_err(|_| bad())?)
    } else {
        Token::Int(literal.parse().map_err(|_| bad())?)
    };
    Ok((token, end))
}

struct Parser<'t> {
    text: &'t str,
    tokens: Vec<Token>,
    at: usize,
    depth: usize,
}

/// Parses the text of a condition into its syntax tree.
pub(crate) fn parse(text: &str) -> Result<Expr> {
    let mut parser = Parser {
        text,
        tokens: tokenize(text)?,
        at: 0,
        depth: 0,
    };
    if parser.tokens.is_empty() {
        return Err(usage(text, "the condition is empty"));
    }
    let expr = parser.or()?;
    if let Some(t) = parser.tokens.get(parser.at) {
        return Err(usage(
            text,
            format!("unexpected {} after the condition", describe(t)),
        ));
    }
    Ok(expr)
}

fn describe(token: &Token) -> String {
    match token {
        Token::Word(w) => format!("{w:?}"),
        Token::Int(v) => v.to_string(),
        Token::Float(v) => v.to_string(),
        Token::Str(s) => format!("the string {s:?}"),
        Token::Punct(p) => format!("{p:?}"),
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn is_word(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(w)) if w == word)
    }

    fn is_punct(&self, punct: &str) -> bool {
        matches!(self.peek(), Some(Token::Punct(p)) if *p == punct)
    }

    fn expect_punct(&mut self, punct: &str) -> Result<()> {
        if self.is_punct(punct) {
            self.at += 1;
            return Ok(());
        }
        let found = self.peek().map_or("the end".to_string(), describe);
        Err(usage(
            self.text,
            format!("expected {punct:?}, found {found}"),
        ))
    }

    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(usage(
                self.text,
                format!("nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        let out = f(self);
        self.depth -= 1;
        out
    }

    fn or(&mut self) -> Result<Expr> {
        let mut items = vec![self.and()?];
        while self.is_word("or") {
            self.at += 1;
            items.push(self.and()?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            Expr::Or(items)
        })
    }

    fn and(&mut self) -> Result<Expr> {
        let mut items = vec![self.not()?];
        while self.is_word("and") {
            self.at += 1;
            items.push(self.not()?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            Expr::And(items)
        })
    }

    fn not(&mut self) -> Result<Expr> {
        if self.is_word("not") {
            self.at += 1;
            return self.nested(|p| Ok(Expr::Not(Box::new(p.not()?))));
        }
        self.comparison()
    }

    fn comparison_op(&mut self) -> Result<Option<CmpOp>> {
        let op = match self.peek() {
            Some(Token::Punct(p)) => match *p {
                "<" => CmpOp::Lt,
                "<=" => CmpOp::Le,
                ">" => CmpOp::Gt,
                ">=" => CmpOp::Ge,
                "==" => CmpOp::Eq,
                "!=" => CmpOp::Ne,
                _ => return Ok(None),
            },
            Some(Token::Word(w)) if w == "in" => CmpOp::In,
            Some(Token::Word(w)) if w == "not" => {
                match self.tokens.get(self.at + 1) {
                    Some(Token::Word(w)) if w == "in" => {}
                    _ => return Ok(None),
                }
                self.at += 1;
                CmpOp::NotIn
            }
            Some(Token::Word(w)) if w == "is" => {
                return Err(usage(
                    self.text,
                    "the `is` operator is not supported (use == None)",
                ))
            }
            _ => return Ok(None),
        };
        self.at += 1;
        Ok(Some(op))
    }

    fn comparison(&mut self) -> Result<Expr> {
        let first = self.bit_or()?;
        let mut rest = Vec::new();
        while let Some(op) = self.comparison_op()? {
            rest.push((op, self.bit_or()?));
        }
        Ok(if rest.is_empty() {
            first
        } else {
            Expr::Compare(Box::new(first), rest)
        })
    }

    fn bit_or(&mut self) -> Result<Expr> {
        let mut left = self.bit_and()?;
        while self.is_punct("|") {
            self.at += 1;
            left = Expr::BitOr(Box::new(left), Box::new(self.bit_and()?));
        }
        Ok(left)
    }

    fn bit_and(&mut self) -> Result<Expr> {
        let mut left = self.unary()?;
        while self.is_punct("&") {
            self.at += 1;
            left = Expr::BitAnd(Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr> {
        if self.is_punct("-") {
            self.at += 1;
            return match self.nested(Self::unary)? {
                Expr::Literal(Literal::Int(v)) => Ok(Expr::Literal(Literal::Int(-v))),
                Expr::Literal(Literal::Float(v)) => Ok(Expr::Literal(Literal::Float(-v))),
                _ => Err(usage(self.text, "`-` applies to numbers only")),
            };
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Expr> {
        let token = self
            .tokens
            .get(self.at)
            .cloned()
            .ok_or_else(|| usage(self.text, "the condition ends too early"))?;
        self.at += 1;
        Ok(match token {
            Token::Int(v) => Expr::Literal(Literal::Int(v)),
            Token::Float(v) => Expr::Literal(Literal::Float(v)),
            Token::Str(s) => Expr::Literal(Literal::Str(s)),
            Token::Punct("(") => {
                let inner = self.nested(Self::or)?;
                self.expect_punct(")")?;
                inner
            }
            Token::Punct("[") => self.list()?,
            Token::Word(w) => self.word(w)?,
            Token::Punct(p) => return Err(usage(self.text, format!("unexpected {p:?}"))),
        })
    }

    fn list(&mut self) -> Result<Expr> {
        let mut items = Vec::new();
        while !self.is_punct("]") {
            items.push(self.nested(Self::unary)?);
            if !self.is_punct(",") {
                break;
            }
            self.at += 1;
        }
        self.expect_punct("]")?;
        Ok(Expr::List(items))
    }

    fn word(&mut self, word: String) -> Result<Expr> {
        Ok(match word.as_str() {
            "None" => Expr::Literal(Literal::None),
            "True" => Expr::Literal(Literal::Bool(true)),
            "False" => Expr::Literal(Literal::Bool(false)),
            "and" | "or" | "in" | "is" => {
                return Err(usage(
                    self.text,
                    format!("{word:?} where a value was expected"),
                ))
            }
            _ if self.is_punct("(") => {
                if !matches!(word.as_str(), "attr" | "dim" | "val") {
                    return Err(usage(
                        self.text,
                        format!("{word}() is not a function: valid are attr(), dim() and val()"),
                    ));
                }
                self.at += 1;
                let argument = self.nested(Self::unary)?;
                self.expect_punct(")")?;
                Expr::Call(word, Box::new(argument))
            }
            _ => Expr::Name(word),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> Box<Expr> {
        Box::new(Expr::Name(n.into()))
    }

    #[test]
    fn precedence_follows_python() {
        let e = parse("a > 1 or b == 'x' and not c != 2.5").unwrap();
        let Expr::Or(items) = e else { panic!("{e:?}") };
        assert_eq!(items.len(), 2);
        assert!(matches!(&items[1], Expr::And(v) if matches!(v[1], Expr::Not(_))));
        let chained = parse("1 < a <= -3").unwrap();
        assert_eq!(
            chained,
            Expr::Compare(
                Box::new(Expr::Literal(Literal::Int(1))),
                vec![
                    (CmpOp::Lt, Expr::Name("a".into())),
                    (CmpOp::Le, Expr::Literal(Literal::Int(-3)))
                ]
            )
        );
        assert_eq!(
            parse("attr('my a') not in [1, 2e3]").unwrap(),
            Expr::Compare(
                Box::new(Expr::Call(
                    "attr".into(),
                    Box::new(Expr::Literal(Literal::Str("my a".into())))
                )),
                vec![(
                    CmpOp::NotIn,
                    Expr::List(vec![
                        Expr::Literal(Literal::Int(1)),
                        Expr::Literal(Literal::Float(2000.0))
                    ])
                )]
            )
        );
        // `|` binds tighter than `==`, as in Python.
        assert_eq!(
            parse("a == 1 | b").unwrap(),
            Expr::Compare(
                name("a"),
                vec![(
                    CmpOp::Eq,
                    Expr::BitOr(Box::new(Expr::Literal(Literal::Int(1))), name("b"))
                )]
            )
        );
    }

    #[test]
    fn bad_text_is_a_usage_error() {
        for text in [
            "",
            "a >",
            "a == 'x",
            "(a == 1",
            "a is None",
            "f(a) == 1",
            "a == 1 )",
            "a $ 1",
        ] {
            assert!(matches!(parse(text), Err(Error::Usage(_))), "{text}");
        }
        let deep = format!("{}a == 1{}", "(".repeat(500), ")".repeat(500));
        assert!(matches!(parse(&deep), Err(Error::Usage(_))));
    }
}
