//! The expression language's types: the number types ([`Prim`]), the types
//! of values ([`Ty`]) and the typed expression tree (`Expr`) that
//! `check` builds from text and the model keeps.
//!
//! A tree here has been checked: every name is resolved to the kind of thing
//! it names, every coercion the checker decided on is an explicit node, so
//! turning it into Rust (emit/expr.rs) is a plain walk that cannot fail.
//!
//! Integers of different widths meet in u64 (i64 if one is signed);
//! `+ - *` saturate and `/ %` by a zero yield 0, so that hostile lengths make
//! the later bound checks fail instead of panicking.

pub(crate) mod check;

pub(crate) use crate::naming::rust_ident;
pub use crate::naming::upper_camel;

/// A fixed-size number on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Prim {
    /// Unsigned, 1 byte.
    U8,
    /// Unsigned, 2 bytes, little-endian.
    U16,
    /// Unsigned, 4 bytes, little-endian.
    U32,
    /// Unsigned, 8 bytes, little-endian.
    U64,
    /// Signed, 1 byte.
    I8,
    /// Signed, 2 bytes, little-endian.
    I16,
    /// Signed, 4 bytes, little-endian.
    I32,
    /// Signed, 8 bytes, little-endian.
    I64,
    /// IEEE 754 single precision, little-endian.
    F32,
    /// IEEE 754 double precision, little-endian.
    F64,
}

impl Prim {
    pub(crate) fn parse(name: &str) -> Option<Prim> {
        Some(match name {
            "u8" => Prim::U8,
            "u16" => Prim::U16,
            "u32" => Prim::U32,
            "u64" => Prim::U64,
            "i8" => Prim::I8,
            "i16" => Prim::I16,
            "i32" => Prim::I32,
            "i64" => Prim::I64,
            "f32" => Prim::F32,
            "f64" => Prim::F64,
            _ => return None,
        })
    }

    /// How the spec spells it (`u32`), as the JSON export writes it.
    pub fn name(self) -> &'static str {
        match self {
            Prim::U8 => "u8",
            Prim::U16 => "u16",
            Prim::U32 => "u32",
            Prim::U64 => "u64",
            Prim::I8 => "i8",
            Prim::I16 => "i16",
            Prim::I32 => "i32",
            Prim::I64 => "i64",
            Prim::F32 => "f32",
            Prim::F64 => "f64",
        }
    }

    pub(crate) fn size(self) -> u64 {
        match self {
            Prim::U8 | Prim::I8 => 1,
            Prim::U16 | Prim::I16 => 2,
            Prim::U32 | Prim::I32 | Prim::F32 => 4,
            Prim::U64 | Prim::I64 | Prim::F64 => 8,
        }
    }

    pub(crate) fn is_integer(self) -> bool {
        !matches!(self, Prim::F32 | Prim::F64)
    }

    pub(crate) fn is_signed(self) -> bool {
        matches!(self, Prim::I8 | Prim::I16 | Prim::I32 | Prim::I64)
    }
}

/// The type of a field, param, context field or expression.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub enum Ty {
    /// A fixed-size number.
    Prim(Prim),
    /// One byte that must be 0 or 1.
    Bool,
    /// A spec enum, by Rust name.
    Enum(String),
    /// A spec struct, by name.
    Struct(String),
    /// A context, by name (params and context fields only).
    Context(String),
    /// The generated enum of a switch field.
    Switch(String),
    /// Raw bytes (`Vec<u8>`).
    Bytes,
    /// A list of values of the inner type (`Vec<T>`).
    List(Box<Ty>),
    /// A value that may be absent.
    Option(Box<Ty>),
    /// An integer literal, whose type adapts to its use.
    IntLit,
    /// `None`, before it meets the type it is compared or passed to.
    NoneLit,
    /// A byte string literal (`b".del"`), for `starts_with`/`ends_with`.
    ByteStrLit,
}

impl Ty {
    pub(crate) fn is_copy(&self) -> bool {
        match self {
            Ty::Prim(_) | Ty::Bool | Ty::Enum(_) | Ty::IntLit | Ty::NoneLit | Ty::ByteStrLit => {
                true
            }
            Ty::Option(inner) => inner.is_copy(),
            _ => false,
        }
    }

    pub(crate) fn is_integer(&self) -> bool {
        matches!(self, Ty::IntLit) || matches!(self, Ty::Prim(p) if p.is_integer())
    }

    /// How the spec spells it, for messages and tables.
    pub(crate) fn spec_name(&self) -> String {
        match self {
            Ty::Prim(p) => p.name().to_string(),
            Ty::Bool => "bool".into(),
            Ty::Enum(n) | Ty::Struct(n) | Ty::Context(n) | Ty::Switch(n) => n.clone(),
            Ty::Bytes => "bytes".into(),
            Ty::List(inner) => format!("[{}]", inner.spec_name()),
            Ty::Option(inner) => format!("Option<{}>", inner.spec_name()),
            Ty::IntLit => "integer".into(),
            Ty::NoneLit => "None".into(),
            Ty::ByteStrLit => "byte string".into(),
        }
    }
}

/// A checked expression: what it computes and the type of the result.
#[derive(Debug, Clone)]
pub(crate) struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
}

/// What a name in an expression stands for; the read and the write side of
/// a binrw structure reach each kind differently (a local value, a reference
/// into the struct, a recomputation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameKind {
    /// A param of the struct (a binrw import).
    Param,
    /// A field kept in the struct: a local value when reading, a reference when writing.
    Field,
    /// A length, size or fixed value: a local when reading, recomputed when writing.
    Temp,
    /// The entry of an `each` list (a reference to a context).
    Entry,
    /// A stored field of the struct a derived context is computed from (`source.field`).
    Source,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

/// How integer arithmetic is carried out.
#[derive(Debug, Clone)]
pub(crate) enum Arith {
    /// Both sides are literals: the expression stays as written.
    Literal,
    /// Saturating (`+ - *`) or zero-safe (`/ %`) arithmetic on a number type.
    Checked {
        /// A literal left operand, spelled with its type (`2u64`), since a
        /// method call on an unsuffixed literal does not compile.
        receiver: Option<syn::LitInt>,
        /// The right operand is a non-zero literal, so `/` and `%` need no guard.
        nonzero_divisor: bool,
    },
}

#[derive(Debug, Clone)]
pub(crate) enum ExprKind {
    Int(syn::LitInt),
    Bool(bool),
    ByteStr(syn::LitByteStr),
    None,
    Paren(Box<Expr>),
    Name {
        /// The spec's name (a temp is recomputed by it on the write side).
        name: String,
        ident: String,
        kind: NameKind,
    },
    /// `Enum::VARIANT`, with the variant's Rust name.
    Variant {
        enum_name: String,
        variant: String,
    },
    Not(Box<Expr>),
    /// `-x`; `literal` when x is an integer literal (no parentheses then).
    Neg {
        inner: Box<Expr>,
        literal: bool,
    },
    /// Both branches already coerced to the type of the whole.
    If {
        cond: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    /// `&&`, `||` and comparisons, operands already coerced to a common type.
    Binary {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `+ - * / %`, operands already coerced to the type of the whole.
    Arith {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
        mode: Arith,
    },
    /// `x.len()`, as a u64.
    Len(Box<Expr>),
    /// A method of the generated code or of std: `value()`, a property,
    /// `is_some()`, `starts_with(b"..")`, `unwrap_or(x)`, `size()`.
    Method {
        receiver: Box<Expr>,
        method: String,
        args: Vec<Expr>,
    },
    /// `base.member`, with the member's Rust name.
    Member {
        base: Box<Expr>,
        member: String,
    },
    /// An integer converted to another integer type.
    Cast {
        inner: Box<Expr>,
        to: Prim,
    },
    /// A value that is not `Copy`, used where an owned value is needed.
    Clone(Box<Expr>),
    Some(Box<Expr>),
    /// A behaviour gate of `format.toml` called on a version:
    /// `super::<module>::<gate>(version)`.
    Gate {
        module: String,
        gate: String,
        version: Box<Expr>,
    },
    /// `sum(list, |x| body)` (saturating, as u64) or `any(list, |x| body)`:
    /// the body evaluated once per element, the element bound to `var`.
    Fold {
        list: Box<Expr>,
        var: String,
        body: Box<Expr>,
        any: bool,
    },
    /// A list of structs converted to a list of a context derived from them.
    DeriveList {
        inner: Box<Expr>,
        context: String,
    },
}
