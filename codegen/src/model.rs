//! Stage 2: the validated, typed form of the spec that the emitters work from.

use std::collections::BTreeMap;

/// A fixed-size number on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Prim {
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F32,
    F64,
}

impl Prim {
    pub fn parse(name: &str) -> Option<Prim> {
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

    pub fn size(self) -> u64 {
        match self {
            Prim::U8 | Prim::I8 => 1,
            Prim::U16 | Prim::I16 => 2,
            Prim::U32 | Prim::I32 | Prim::F32 => 4,
            Prim::U64 | Prim::I64 | Prim::F64 => 8,
        }
    }

    pub fn is_integer(self) -> bool {
        !matches!(self, Prim::F32 | Prim::F64)
    }

    pub fn is_signed(self) -> bool {
        matches!(self, Prim::I8 | Prim::I16 | Prim::I32 | Prim::I64)
    }
}

/// The type of a field, param, context field or expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    Prim(Prim),
    Bool,
    Enum(String),
    Struct(String),
    Context(String),
    /// The generated enum of a switch field.
    Switch(String),
    /// Raw bytes (`Vec<u8>`).
    Bytes,
    List(Box<Ty>),
    Option(Box<Ty>),
    /// An integer literal, whose type adapts to its use.
    IntLit,
    /// `None`, before it meets the type it is compared or passed to.
    NoneLit,
    /// A byte string literal (`b".del"`), for `starts_with`/`ends_with`.
    ByteStrLit,
}

impl Ty {
    pub fn is_copy(&self) -> bool {
        match self {
            Ty::Prim(_) | Ty::Bool | Ty::Enum(_) | Ty::IntLit | Ty::NoneLit | Ty::ByteStrLit => {
                true
            }
            Ty::Option(inner) => inner.is_copy(),
            _ => false,
        }
    }

    pub fn is_integer(&self) -> bool {
        matches!(self, Ty::IntLit) || matches!(self, Ty::Prim(p) if p.is_integer())
    }

    /// How the spec spells it, for messages and tables.
    pub fn spec_name(&self) -> String {
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

#[derive(Debug, Clone)]
pub struct Spec {
    pub current: u32,
    pub oldest: u32,
    pub format_title: String,
    /// The generated module of `format.toml`.
    pub format_module: String,
    pub format_source: Option<String>,
    pub versions: Vec<Version>,
    pub files: Vec<SpecFile>,
}

#[derive(Debug, Clone)]
pub struct Version {
    pub number: u32,
    pub release: Option<String>,
    pub source: Option<String>,
    pub erratum: Option<String>,
    pub changes: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct SpecFile {
    /// `spec/<name>.toml`
    pub display: String,
    /// `<name>` without extension.
    pub stem: String,
    pub title: String,
    pub module: String,
    pub source: Option<String>,
    pub doc: Option<String>,
    pub enums: Vec<Enum>,
    pub contexts: Vec<Context>,
    pub structs: Vec<Struct>,
}

#[derive(Debug, Clone)]
pub struct Enum {
    pub name: String,
    pub repr: Prim,
    pub doc: Option<String>,
    pub source: Option<String>,
    pub erratum: Option<String>,
    /// Declared properties with their types, sorted by name.
    pub properties: Vec<(String, PropTy)>,
    pub variants: Vec<Variant>,
}

impl Enum {
    pub fn variant(&self, spec_name: &str) -> Option<&Variant> {
        self.variants.iter().find(|v| v.name == spec_name)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropTy {
    Int(Prim),
    Bool,
    Str,
}

#[derive(Debug, Clone)]
pub struct Variant {
    pub name: String,
    pub rust_name: String,
    pub value: i128,
    pub doc: Option<String>,
    pub source: Option<String>,
    pub erratum: Option<String>,
    pub deprecated: bool,
    pub since: Option<u32>,
    pub until: Option<u32>,
    /// One value per declared property, in the order of `Enum::properties`.
    pub props: Vec<toml::Value>,
}

#[derive(Debug, Clone)]
pub struct Context {
    pub name: String,
    pub doc: Option<String>,
    pub source: Option<String>,
    /// The struct this context is computed from, if any.
    pub from: Option<String>,
    pub fields: Vec<Named>,
}

#[derive(Debug, Clone)]
pub struct Named {
    pub name: String,
    pub ident: String,
    pub ty: Ty,
    pub doc: Option<String>,
    /// How a field of a derived context is computed from its struct.
    pub value: Option<Expr>,
}

#[derive(Debug, Clone)]
pub struct Struct {
    pub name: String,
    pub doc: Option<String>,
    pub source: Option<String>,
    pub erratum: Option<String>,
    pub container: Option<String>,
    pub params: Vec<Named>,
    /// The expression `since`/`until` compare against.
    pub version: syn::Expr,
    pub version_text: String,
    pub fields: Vec<Field>,
}

#[derive(Debug, Clone)]
pub struct Expr {
    pub text: String,
    pub parsed: syn::Expr,
}

#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub ident: String,
    pub doc: Option<String>,
    pub source: Option<String>,
    pub erratum: Option<String>,
    pub since: Option<u32>,
    pub until: Option<u32>,
    pub condition: Option<Expr>,
    pub default: Option<Expr>,
    pub layout: Layout,
    pub role: Role,
    /// Arguments for the params of a struct-typed (or switch) field, by param name.
    pub args: BTreeMap<String, Expr>,
    pub max: Option<u64>,
    /// For a struct or switch field: it occupies exactly this many bytes.
    pub sized: Option<Expr>,
}

impl Field {
    /// Present only under a version gate or a condition.
    pub fn is_conditional(&self) -> bool {
        self.since.is_some() || self.until.is_some() || self.condition.is_some()
    }

    /// Kept in the generated struct (not a length, size or fixed value).
    pub fn is_stored(&self) -> bool {
        matches!(self.role, Role::Stored)
    }

    /// An `Option` in the struct: conditional without a default.
    pub fn is_optional(&self) -> bool {
        self.is_stored() && self.is_conditional() && self.default.is_none()
    }

    /// The type of the value a single instance holds, ignoring optionality.
    pub fn base_ty(&self) -> Ty {
        match &self.layout {
            Layout::Single(ty) => ty.clone(),
            Layout::Bytes { .. } => Ty::Bytes,
            Layout::List { elem, .. } => Ty::List(Box::new(elem.clone())),
            Layout::Switch(switch) => Ty::Switch(switch.rust_name.clone()),
        }
    }

    /// The type an expression sees when it names this field.
    pub fn value_ty(&self) -> Ty {
        if self.is_optional() {
            Ty::Option(Box::new(self.base_ty()))
        } else {
            self.base_ty()
        }
    }
}

#[derive(Debug, Clone)]
pub enum Layout {
    /// A primitive, bool, enum or struct.
    Single(Ty),
    Bytes {
        len: BytesLen,
    },
    List {
        elem: Ty,
        len: ListLen,
    },
    Switch(Switch),
}

#[derive(Debug, Clone)]
pub enum BytesLen {
    Size(Expr),
    UntilEof,
    /// Up to (and consuming) this byte.
    Terminated(u8),
}

#[derive(Debug, Clone)]
pub enum ListLen {
    Count(Expr),
    Each { over: String, entry: String },
    UntilEof,
}

#[derive(Debug, Clone)]
pub enum Role {
    Stored,
    LengthOf(String),
    SizeOf(String),
    Value(Expr),
}

#[derive(Debug, Clone)]
pub struct Switch {
    /// The generated enum's name.
    pub rust_name: String,
    /// The expression the switch looks at (an earlier field or a param).
    pub on: Expr,
    pub on_ty: Ty,
    /// Case type, with the keys that select it (in value order); the default last.
    pub cases: Vec<SwitchCase>,
    pub default: Option<String>,
    /// Selector values that are read errors (spec key, reason).
    pub errors: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct SwitchCase {
    pub ty: String,
    /// Spec keys (variant names, or integers for integer switches).
    pub keys: Vec<String>,
}
