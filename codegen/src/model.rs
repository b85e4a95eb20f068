//! The validated, typed form of the spec: what `validate` gives and the
//! emitters take. Every expression in it is a checked [`Checked`] (its text
//! and its typed tree), so nothing downstream parses or type-checks again.
//!
//! The items that hold expressions are generic over the expression type `E`:
//! `validate` first builds them with expressions parsed but unchecked (the
//! types of other structs must all be known before any expression can be
//! checked), then checks each one into a [`Checked`]. The default `E` is the
//! checked form, the only one the emitters see.

use std::collections::BTreeMap;

pub use crate::expr::{Prim, Ty};

/// An expression of the spec: its text as written (for docs, tables and
/// messages) and its checked, typed tree.
#[derive(Debug, Clone)]
pub struct Checked {
    pub text: String,
    pub expr: crate::expr::Expr,
}

/// Every named type of the spec, for resolving expressions and types.
#[derive(Debug)]
pub struct TypeTable<E = Checked> {
    pub enums: BTreeMap<String, Enum>,
    pub contexts: BTreeMap<String, Context<E>>,
    pub structs: BTreeMap<String, Struct<E>>,
}

impl<E> Default for TypeTable<E> {
    fn default() -> Self {
        TypeTable {
            enums: BTreeMap::new(),
            contexts: BTreeMap::new(),
            structs: BTreeMap::new(),
        }
    }
}

impl<E> TypeTable<E> {
    /// The params (name → type) a struct-typed or switch field passes arguments to.
    pub fn arg_param_types(&self, field: &Field<E>) -> BTreeMap<String, Ty> {
        let mut out = BTreeMap::new();
        for target in field.arg_targets() {
            if let Some(structure) = self.structs.get(target) {
                for param in &structure.params {
                    out.entry(param.name.clone())
                        .or_insert_with(|| param.ty.clone());
                }
            }
        }
        out
    }
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Spec {
    pub current: u32,
    pub oldest: u32,
    /// The newest version the runtime reads.
    pub reads: u32,
    /// The version the runtime writes.
    pub writes: u32,
    pub format_title: String,
    /// The generated module of `format.toml`.
    pub format_module: String,
    pub format_source: Option<String>,
    pub versions: Vec<Version>,
    pub upstream: Upstream,
    pub facts: Vec<Fact>,
    pub files: Vec<SpecFile>,
}

/// Which TileDB-Inc/TileDB commits spec/ follows.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Upstream {
    pub repository: String,
    pub format_spec_commit: String,
    pub format_spec_date: Option<String>,
    pub release_tag: String,
    pub release_commit: String,
    pub doc: Option<String>,
}

/// A fact upstream's documents lack or get wrong.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Fact {
    pub name: String,
    /// `true`: upstream's document is wrong; `false`: it says nothing.
    pub erratum: bool,
    pub statement: String,
    pub source: String,
    pub upstream: Option<String>,
    pub value: Option<u64>,
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Version {
    pub number: u32,
    pub release: Option<String>,
    pub source: Option<String>,
    pub erratum: Option<String>,
    pub changes: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
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
    pub folders: Vec<Folder>,
}

/// A folder of an array or a group.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Folder {
    pub path: String,
    pub in_array: bool,
    pub in_group: bool,
    pub since: Option<u32>,
    pub doc: Option<String>,
    pub listed_whole: bool,
    /// Set when `listed_whole`.
    pub loaded_as: String,
    /// Set when `listed_whole`.
    pub refusal: String,
    pub reason: String,
    pub source: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Enum {
    pub name: String,
    /// Why no runtime code uses the generated type.
    pub unused_reason: Option<String>,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub enum PropTy {
    Int(Prim),
    Bool,
    Str,
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
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
    #[schemars(with = "Vec<serde_json::Value>")]
    pub props: Vec<toml::Value>,
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Context<E = Checked> {
    pub name: String,
    /// Why no runtime code uses the generated type.
    pub unused_reason: Option<String>,
    pub doc: Option<String>,
    pub source: Option<String>,
    /// The struct this context is computed from, if any.
    pub from: Option<String>,
    pub fields: Vec<Named<E>>,
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Named<E = Checked> {
    pub name: String,
    pub ident: String,
    pub ty: Ty,
    pub doc: Option<String>,
    /// How a field of a derived context is computed from its struct.
    pub value: Option<E>,
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Struct<E = Checked> {
    pub name: String,
    /// Why no runtime code uses the generated type.
    pub unused_reason: Option<String>,
    pub doc: Option<String>,
    pub source: Option<String>,
    pub erratum: Option<String>,
    pub container: Option<String>,
    pub params: Vec<Named<E>>,
    /// The expression `since`/`until` compare against; once checked, present
    /// only when some field is gated (it is not checked otherwise).
    pub version: Option<E>,
    pub version_text: String,
    pub fields: Vec<Field<E>>,
    /// `view = true`: the zero-copy view's plan, computed once the
    /// expressions are checked (`validate::views`).
    pub view: Option<ViewPlan>,
}

/// How a zero-copy view reads a struct: its fields cut into runs of
/// fixed-size fields at constant offsets, and the variable-size fields
/// (bytes, lists) between them, each borrowed from the input.
#[derive(Debug, Clone, Default, serde::Serialize, schemars::JsonSchema)]
pub struct ViewPlan {
    pub items: Vec<ViewItem>,
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum ViewItem {
    /// Fixed-size fields, `size` bytes in all.
    Run { size: u64, fields: Vec<ViewScalar> },
    /// A `bytes` field whose length is an earlier field or a param.
    Bytes { field: usize, len: ViewLen },
    /// A list counted by an earlier field.
    List {
        field: usize,
        count: usize,
        elem: ViewElem,
    },
}

/// A fixed-size field inside a run.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct ViewScalar {
    /// Index into the struct's fields.
    pub field: usize,
    /// Byte offset within the run.
    pub offset: u64,
    pub kind: ScalarKind,
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum ScalarKind {
    Prim(Prim),
    Enum {
        name: String,
        repr: Prim,
    },
    /// Bytes of a literal size.
    Bytes(u64),
}

impl ScalarKind {
    pub fn size(&self) -> u64 {
        match self {
            ScalarKind::Prim(p) | ScalarKind::Enum { repr: p, .. } => p.size(),
            ScalarKind::Bytes(n) => *n,
        }
    }
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum ViewLen {
    /// An earlier field (its index).
    Field(usize),
    /// A param (its name).
    Param(String),
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum ViewElem {
    Prim(Prim),
    /// A struct with a view; its params get the arguments, in its param order.
    Struct {
        name: String,
        args: Vec<ViewArg>,
    },
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum ViewArg {
    Param(String),
    Literal(u64),
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Field<E = Checked> {
    pub name: String,
    pub ident: String,
    pub doc: Option<String>,
    pub source: Option<String>,
    pub erratum: Option<String>,
    pub since: Option<u32>,
    pub until: Option<u32>,
    pub condition: Option<E>,
    pub default: Option<E>,
    pub layout: Layout<E>,
    pub role: Role<E>,
    /// Arguments for the params of a struct-typed (or switch) field, by param name.
    pub args: BTreeMap<String, E>,
    pub max: Option<u64>,
    /// For a struct or switch field: it occupies exactly this many bytes.
    pub sized: Option<E>,
}

impl<E> Field<E> {
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

    /// The structs a struct-typed, list-of-struct or switch field reads.
    pub fn arg_targets(&self) -> Vec<&String> {
        match &self.layout {
            Layout::Single(Ty::Struct(name))
            | Layout::List {
                elem: Ty::Struct(name),
                ..
            } => vec![name],
            Layout::Switch(switch) => switch.types().collect(),
            _ => vec![],
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

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum Layout<E = Checked> {
    /// A primitive, bool, enum or struct.
    Single(Ty),
    Bytes {
        len: BytesLen<E>,
    },
    List {
        elem: Ty,
        len: ListLen<E>,
    },
    Switch(Switch<E>),
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum BytesLen<E = Checked> {
    Size(E),
    UntilEof,
    /// Up to (and consuming) this byte.
    Terminated(u8),
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum ListLen<E = Checked> {
    Count(E),
    /// One element per entry of `over` (a list param or an earlier list field).
    Each {
        over: E,
        entry: String,
    },
    UntilEof,
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum Role<E = Checked> {
    Stored,
    LengthOf(String),
    SizeOf(String),
    Value(E),
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Switch<E = Checked> {
    /// The generated enum's name.
    pub rust_name: String,
    /// The expression the switch looks at (an earlier field or a param); an
    /// enum or an integer once checked.
    pub on: E,
    /// Case type, with the keys that select it (in value order); the default last.
    pub cases: Vec<SwitchCase>,
    pub default: Option<String>,
    /// Why the enum variants no case names take the default (required when
    /// a switch over an enum leaves variants out).
    pub default_reason: Option<String>,
    /// Selector values that are read errors (spec key, reason).
    pub errors: Vec<(String, String)>,
}

#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct SwitchCase {
    pub ty: String,
    /// Spec keys (variant names, or integers for integer switches).
    pub keys: Vec<String>,
}

impl<E> Switch<E> {
    /// Every case type, then the default (a type may appear twice).
    pub fn types(&self) -> impl Iterator<Item = &String> {
        self.cases.iter().map(|c| &c.ty).chain(self.default.iter())
    }
}
