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
    /// The expression as the spec writes it.
    pub text: String,
    /// The typed tree the emitters lower to Rust.
    pub(crate) expr: crate::expr::Expr,
}

/// Every named type of the spec, for resolving expressions and types.
#[derive(Debug)]
pub struct TypeTable<E = Checked> {
    /// Every enum of every spec file, by Rust name.
    pub enums: BTreeMap<String, Enum>,
    /// Every context, by name.
    pub contexts: BTreeMap<String, Context<E>>,
    /// Every struct, by name.
    pub structs: BTreeMap<String, Struct<E>>,
    /// The behaviour gates of `format.toml`, callable in expressions as
    /// `gate(version)`, and the generated module that defines them.
    pub gates: (String, std::collections::BTreeSet<String>),
}

impl<E> Default for TypeTable<E> {
    fn default() -> Self {
        TypeTable {
            enums: BTreeMap::new(),
            contexts: BTreeMap::new(),
            structs: BTreeMap::new(),
            gates: (String::new(), std::collections::BTreeSet::new()),
        }
    }
}

impl<E> TypeTable<E> {
    /// The params (name → type) a struct-typed or switch field passes arguments to.
    pub(crate) fn arg_param_types(&self, field: &Field<E>) -> BTreeMap<String, Ty> {
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

/// The whole format: `format.toml`'s versions, upstream commits and facts,
/// then every other spec file in order.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Spec {
    /// The newest format version spec/ describes (`current`).
    pub current: u32,
    /// The oldest format version spec/ describes and the runtime accepts (`oldest`).
    pub oldest: u32,
    /// The newest version the runtime reads.
    pub reads: u32,
    /// The version the runtime writes.
    pub writes: u32,
    /// The heading of `format.toml` (`[file] title`).
    pub format_title: String,
    /// The generated module of `format.toml`.
    pub format_module: String,
    /// The upstream document `format.toml` follows, if any.
    pub format_source: Option<String>,
    /// What each version `oldest..=current` changed, oldest first.
    pub versions: Vec<Version>,
    /// The upstream commits the spec was checked against.
    pub upstream: Upstream,
    /// Facts upstream's documents lack or get wrong (`[[fact]]`).
    pub facts: Vec<Fact>,
    /// Behaviours gated on the format version.
    pub gates: Vec<Gate>,
    /// The spec files other than `format.toml`, each with its enums, contexts,
    /// structs and folders.
    pub files: Vec<SpecFile>,
}

/// A behaviour that holds for the versions `since..until`.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Gate {
    /// The generated function's name (`<name>(version) -> bool`).
    pub name: String,
    /// The first version the behaviour holds in, if it has a start.
    pub since: Option<u32>,
    /// The first version it no longer holds in, if it ended.
    pub until: Option<u32>,
    /// What the behaviour is, in the spec's words.
    pub doc: String,
    /// Where in TileDB's source the behaviour is decided.
    pub source: String,
}

/// Which TileDB-Inc/TileDB commits spec/ follows.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Upstream {
    /// The upstream repository, `owner/name`.
    pub repository: String,
    /// The newest commit touching `format_spec/` that the tables were checked against.
    pub format_spec_commit: String,
    /// That commit's date, for readers.
    pub format_spec_date: Option<String>,
    /// The TileDB release whose behaviour the runtime matches.
    pub release_tag: String,
    /// The full commit id of that release.
    pub release_commit: String,
    /// Prose on how to review spec/ against upstream.
    pub doc: Option<String>,
}

/// A fact upstream's documents lack or get wrong.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Fact {
    /// The fact's snake_case name; a fact with a `value` becomes a constant of that name.
    pub name: String,
    /// `true`: upstream's document is wrong; `false`: it says nothing.
    pub erratum: bool,
    /// What is true, in a sentence.
    pub statement: String,
    /// Where upstream's code shows it.
    pub source: String,
    /// The upstream document concerned, if any.
    pub upstream: Option<String>,
    /// A number the runtime uses, generated as a constant.
    pub value: Option<u64>,
}

/// One `[[version]]` entry of `format.toml`: what a format version changed.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Version {
    /// The format version.
    pub number: u32,
    /// The first TileDB release that writes it.
    pub release: Option<String>,
    /// Where upstream records the change.
    pub source: Option<String>,
    /// Where upstream's account of this version is wrong, and how.
    pub erratum: Option<String>,
    /// What changed in the layout, one item per change.
    pub changes: Vec<String>,
}

/// One `spec/<name>.toml` file and what it declares; it becomes one
/// generated module and one Markdown table.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct SpecFile {
    /// `spec/<name>.toml`
    pub display: String,
    /// `<name>` without extension.
    pub stem: String,
    /// The heading of its tables (`[file] title`).
    pub title: String,
    /// The generated Rust module it becomes.
    pub module: String,
    /// The upstream document it follows.
    pub source: Option<String>,
    /// Prose for what has no struct (the text files).
    pub doc: Option<String>,
    /// Its enums, in spec order.
    pub enums: Vec<Enum>,
    /// Its contexts, in spec order.
    pub contexts: Vec<Context>,
    /// Its structs, in spec order.
    pub structs: Vec<Struct>,
    /// Its folders (only `directory.toml` has any).
    pub folders: Vec<Folder>,
    /// Its fixed file names and name suffixes (only `directory.toml` has any).
    pub file_names: Vec<FileName>,
    /// The extensions of timestamped names (only `directory.toml` has any).
    pub extensions: Vec<NameExtension>,
}

/// A fixed file name (or name suffix) of an array, a group or a fragment.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct FileName {
    /// The name as stored, or the suffix.
    pub name: String,
    /// The generated constant.
    pub constant: String,
    /// `array`, `group` or `fragment`.
    pub object: String,
    /// The first format version with this name.
    pub since: Option<u32>,
    /// The first format version without it.
    pub until: Option<u32>,
    /// What the file is.
    pub doc: String,
    /// Where upstream's code shows it.
    pub source: Option<String>,
}

/// An extension of timestamped names.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct NameExtension {
    /// The variant of the generated `Extension` enum.
    pub variant: String,
    /// The suffix, with its dot.
    pub suffix: String,
    /// The folder its files are in (`""`: the root), when there is one.
    pub folder: Option<String>,
    /// The first format version with it.
    pub since: Option<u32>,
    /// The first format version without it.
    pub until: Option<u32>,
    /// What a file with it is.
    pub doc: String,
    /// Where upstream's code shows it.
    pub source: Option<String>,
}

/// A folder of an array or a group.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Folder {
    /// The folder relative to the array or group root; empty for the root itself.
    pub path: String,
    /// The generated constant holding its own (last) name.
    pub constant: Option<String>,
    /// Arrays have this folder.
    pub in_array: bool,
    /// Groups have this folder.
    pub in_group: bool,
    /// The format version that introduced it.
    pub since: Option<u32>,
    /// What the folder holds.
    pub doc: Option<String>,
    /// TileDB loads every file in it and fails on a name it does not expect.
    pub listed_whole: bool,
    /// Set when `listed_whole`.
    pub loaded_as: String,
    /// Set when `listed_whole`.
    pub refusal: String,
    /// Why the folder is (or is not) listed whole: upstream's code or the measurement.
    pub reason: String,
    /// Where upstream's code shows it.
    pub source: Option<String>,
}

/// An enumeration of the format: a `#[repr]` integer whose unknown values
/// are read errors, with typed per-variant properties.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Enum {
    /// The Rust name (UpperCamelCase).
    pub name: String,
    /// Why no runtime code uses the generated type.
    pub unused_reason: Option<String>,
    /// The integer it is stored as on disk.
    pub repr: Prim,
    /// The spec's description, carried into `///` docs.
    pub doc: Option<String>,
    /// Where the values come from upstream.
    pub source: Option<String>,
    /// Where upstream's document is wrong about it.
    pub erratum: Option<String>,
    /// Declared properties with their types, sorted by name.
    pub properties: Vec<(String, PropTy)>,
    /// The variants, in spec order.
    pub variants: Vec<Variant>,
}

impl Enum {
    /// The variant the spec spells `spec_name`, if any.
    pub(crate) fn variant(&self, spec_name: &str) -> Option<&Variant> {
        self.variants.iter().find(|v| v.name == spec_name)
    }
}

/// The type of an enum property (`properties = { size = "u64" }`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub enum PropTy {
    /// An integer of this width.
    Int(Prim),
    /// `true` or `false`.
    Bool,
    /// A string.
    Str,
    /// A struct of spec/ the value stands for (`chunk_metadata = "struct"`):
    /// each variant names one, with arguments for its params, or `""` for
    /// none. The explain walkers get one dispatch per such property.
    Struct,
}

/// A variant's value of a `struct` property: the struct it names and the
/// argument given for each of the struct's params (an integer literal, or a
/// name the generated dispatch takes as a `u64` parameter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructRef {
    /// The struct's name.
    pub name: String,
    /// `(param, argument)` pairs, sorted by param.
    pub args: Vec<(String, String)>,
}

impl StructRef {
    /// The struct a `struct` property's value names, `None` for `""`
    /// (the value's shape was checked when the enum was validated).
    pub fn parse(value: &toml::Value) -> Option<StructRef> {
        match value {
            toml::Value::String(name) if !name.is_empty() => Some(StructRef {
                name: name.clone(),
                args: Vec::new(),
            }),
            toml::Value::Table(table) => {
                let name = table.get("struct")?.as_str()?.to_string();
                let mut args: Vec<(String, String)> = table
                    .get("args")
                    .and_then(|a| a.as_table())
                    .map(|a| {
                        a.iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                            .collect()
                    })
                    .unwrap_or_default();
                args.sort();
                Some(StructRef { name, args })
            }
            _ => None,
        }
    }

    /// The names among the arguments (not integer literals): the inputs the
    /// generated dispatch takes.
    pub fn inputs(&self) -> impl Iterator<Item = &str> {
        self.args
            .iter()
            .map(|(_, arg)| arg.as_str())
            .filter(|arg| arg.parse::<u64>().is_err())
    }
}

/// One value of an enum.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Variant {
    /// The spec's spelling (`INT32`), which `name()` returns.
    pub name: String,
    /// The Rust variant (`Int32`).
    pub rust_name: String,
    /// The number stored on disk.
    pub value: i128,
    /// The spec's description.
    pub doc: Option<String>,
    /// Where upstream defines it.
    pub source: Option<String>,
    /// Where upstream's document is wrong about it.
    pub erratum: Option<String>,
    /// Upstream deprecates it (still read).
    pub deprecated: bool,
    /// The value is valid from this format version on.
    pub since: Option<u32>,
    /// The value is no longer valid from this format version on.
    pub until: Option<u32>,
    /// One value per declared property, in the order of `Enum::properties`.
    #[schemars(with = "Vec<serde_json::Value>")]
    pub props: Vec<toml::Value>,
}

/// A record the runtime builds and passes down to structs whose layout
/// depends on it; it is never read from a file (or computed `from` a struct).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Context<E = Checked> {
    /// The Rust name.
    pub name: String,
    /// Why no runtime code uses the generated type.
    pub unused_reason: Option<String>,
    /// What it describes.
    pub doc: Option<String>,
    /// Where upstream defines what it holds.
    pub source: Option<String>,
    /// The struct this context is computed from, if any.
    pub from: Option<String>,
    /// Its fields; each has a `value` when the context is derived `from` a struct.
    pub fields: Vec<Named<E>>,
}

/// A named, typed value: a struct param or a context field.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Named<E = Checked> {
    /// The spec's snake_case name.
    pub name: String,
    /// The Rust identifier (`type` becomes `type_`).
    pub ident: String,
    /// Its type.
    pub ty: Ty,
    /// What it holds.
    pub doc: Option<String>,
    /// How a field of a derived context is computed from its struct.
    pub value: Option<E>,
}

/// A byte layout: the fields of a structure in file order, with the params
/// its parent passes and the version its gates compare against.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Struct<E = Checked> {
    /// The Rust name.
    pub name: String,
    /// Why no runtime code uses the generated type.
    pub unused_reason: Option<String>,
    /// The spec's description.
    pub doc: Option<String>,
    /// Where upstream describes it.
    pub source: Option<String>,
    /// Where upstream's document is wrong about it.
    pub erratum: Option<String>,
    /// What holds it, if anything (`generic_tile`: it is a generic tile's payload).
    pub container: Option<String>,
    /// What the parent passes in; the same on read and write.
    pub params: Vec<Named<E>>,
    /// The expression `since`/`until` compare against; once checked, present
    /// only when some field is gated (it is not checked otherwise).
    pub version: Option<E>,
    /// The `version` expression as written (empty when the struct has none).
    pub version_text: String,
    /// The fields, in file order.
    pub fields: Vec<Field<E>>,
    /// `view = true`: the zero-copy view's plan, computed once the
    /// expressions are checked (`validate::views`).
    pub view: Option<ViewPlan>,
    /// `[struct.known_size]`: its stored size before reading it, where known.
    pub known_size: Option<KnownSize<E>>,
}

/// The stored size of a struct as a reader can compute it before reading
/// the struct: from the struct's params and some declared inputs, where a
/// condition holds (a footer found from the end of its file, say).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct KnownSize<E = Checked> {
    /// What the size is for, in the spec's words.
    pub doc: String,
    /// Where upstream computes it.
    pub source: Option<String>,
    /// Values beyond the struct's params the size depends on; the generated
    /// function takes them first, then the params.
    pub inputs: Vec<Named<E>>,
    /// Where the size is known (over the params and inputs only).
    pub when: E,
    /// The size in bytes where `when` holds (over the params and inputs only).
    pub size: E,
}

/// How a zero-copy view reads a struct: its fields cut into runs of
/// fixed-size fields at constant offsets, and the variable-size fields
/// (bytes, lists) between them, each borrowed from the input.
#[derive(Debug, Clone, Default, serde::Serialize, schemars::JsonSchema)]
pub struct ViewPlan {
    /// The struct's fields as the view reads them, in file order.
    pub items: Vec<ViewItem>,
}

/// One step of a view's reading: a run of fixed-size fields, or one
/// variable-size field borrowed from the input.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum ViewItem {
    /// Fixed-size fields, `size` bytes in all.
    Run {
        /// The run's length in bytes (the sum of its fields).
        size: u64,
        /// The fields of the run, each at its offset within it.
        fields: Vec<ViewScalar>,
    },
    /// A `bytes` field whose length is an earlier field or a param.
    Bytes {
        /// Index into the struct's fields.
        field: usize,
        /// Where the length comes from.
        len: ViewLen,
    },
    /// A list counted by an earlier field.
    List {
        /// Index into the struct's fields.
        field: usize,
        /// Index of the earlier field holding the element count.
        count: usize,
        /// What each element is.
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
    /// How the field's bytes are decoded.
    pub kind: ScalarKind,
}

/// The type of a fixed-size field in a view.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum ScalarKind {
    /// A little-endian primitive.
    Prim(Prim),
    /// A generated enum stored as a primitive.
    Enum {
        /// The enum's Rust name.
        name: String,
        /// The primitive it is stored as.
        repr: Prim,
    },
    /// Bytes of a literal size.
    Bytes(u64),
}

impl ScalarKind {
    /// The field's size in bytes.
    pub fn size(&self) -> u64 {
        match self {
            ScalarKind::Prim(p) | ScalarKind::Enum { repr: p, .. } => p.size(),
            ScalarKind::Bytes(n) => *n,
        }
    }
}

/// Where a view's `bytes` field takes its length from.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum ViewLen {
    /// An earlier field (its index).
    Field(usize),
    /// A param (its name).
    Param(String),
}

/// The element of a list a view reads.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum ViewElem {
    /// A little-endian primitive.
    Prim(Prim),
    /// A struct with a view; its params get the arguments, in its param order.
    Struct {
        /// The element struct's Rust name.
        name: String,
        /// The arguments, in the element struct's param order.
        args: Vec<ViewArg>,
    },
}

/// An argument a view passes to the view of a list element.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum ViewArg {
    /// The enclosing struct's param of this name.
    Param(String),
    /// A constant.
    Literal(u64),
}

/// One field of a struct: its layout, when it is present, and whether it is
/// stored or computed on write.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Field<E = Checked> {
    /// The spec's snake_case name.
    pub name: String,
    /// The Rust identifier (`type` becomes `type_`).
    pub ident: String,
    /// The spec's description, carried into `///` docs.
    pub doc: Option<String>,
    /// Where upstream describes it (the struct's when unset).
    pub source: Option<String>,
    /// Where upstream's document is wrong about it.
    pub erratum: Option<String>,
    /// Present from this format version on.
    pub since: Option<u32>,
    /// Absent from this format version on.
    pub until: Option<u32>,
    /// Present only when this holds (`if`), combined with the gates.
    pub condition: Option<E>,
    /// Its value where it is absent; without one, a conditional field is an `Option`.
    pub default: Option<E>,
    /// How its bytes are laid out.
    pub layout: Layout<E>,
    /// Stored, or computed from another field or fixed when writing.
    pub role: Role<E>,
    /// Arguments for the params of a struct-typed (or switch) field, by param name.
    pub args: BTreeMap<String, E>,
    /// The largest length or count accepted, beyond the bytes present.
    pub max: Option<u64>,
    /// For a struct or switch field: it occupies exactly this many bytes.
    pub sized: Option<E>,
    /// The literal (`true`, `7`) the generated `Default` gives this field.
    pub initial: Option<String>,
}

impl<E> Field<E> {
    /// Present only under a version gate or a condition.
    pub(crate) fn is_conditional(&self) -> bool {
        self.since.is_some() || self.until.is_some() || self.condition.is_some()
    }

    /// Kept in the generated struct (not a length, size or fixed value).
    pub(crate) fn is_stored(&self) -> bool {
        matches!(self.role, Role::Stored)
    }

    /// An `Option` in the struct: conditional without a default.
    pub(crate) fn is_optional(&self) -> bool {
        self.is_stored() && self.is_conditional() && self.default.is_none()
    }

    /// The type of the value a single instance holds, ignoring optionality.
    pub(crate) fn base_ty(&self) -> Ty {
        match &self.layout {
            Layout::Single(ty) => ty.clone(),
            Layout::Bytes { .. } => Ty::Bytes,
            Layout::List { elem, .. } => Ty::List(Box::new(elem.clone())),
            Layout::Switch(switch) => Ty::Switch(switch.rust_name.clone()),
        }
    }

    /// The structs a struct-typed, list-of-struct or switch field reads.
    pub(crate) fn arg_targets(&self) -> Vec<&String> {
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
    pub(crate) fn value_ty(&self) -> Ty {
        if self.is_optional() {
            Ty::Option(Box::new(self.base_ty()))
        } else {
            self.base_ty()
        }
    }
}

/// How a field's bytes are laid out.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum Layout<E = Checked> {
    /// A primitive, bool, enum or struct.
    Single(Ty),
    /// Raw bytes.
    Bytes {
        /// How many.
        len: BytesLen<E>,
    },
    /// A list of elements of one type.
    List {
        /// The element type.
        elem: Ty,
        /// How many elements.
        len: ListLen<E>,
    },
    /// A type chosen by an earlier value.
    Switch(Switch<E>),
}

/// How many raw bytes a `bytes` field holds.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum BytesLen<E = Checked> {
    /// This many (the `size` expression).
    Size(E),
    /// Everything to the end of the enclosing structure.
    UntilEof,
    /// Up to (and consuming) `byte`; with `or_end`, the end of the
    /// enclosing structure ends them too.
    Terminated {
        /// The byte that ends the field (consumed, not part of the value).
        byte: u8,
        /// The end of the enclosing structure also ends the field.
        or_end: bool,
    },
}

/// How many elements a list field holds.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum ListLen<E = Checked> {
    /// This many (the `count` expression).
    Count(E),
    /// One element per entry of `over` (a list param or an earlier list field).
    Each {
        /// The list walked.
        over: E,
        /// The name the entry takes inside `args`.
        entry: String,
    },
    /// Elements until the enclosing structure ends.
    UntilEof,
}

/// Whether a field is kept in the generated struct or derived when writing.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub enum Role<E = Checked> {
    /// Kept in the struct.
    Stored,
    /// The length of the named field (elements or bytes); written from it.
    LengthOf(String),
    /// The serialized size in bytes of the named field; written from it.
    SizeOf(String),
    /// A fixed value: reading anything else is an error.
    Value(E),
}

/// A field whose type is chosen by an earlier value (`switch_on`).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Switch<E = Checked> {
    /// The generated enum's name.
    pub rust_name: String,
    /// The expression the switch looks at (an earlier field or a param); an
    /// enum or an integer once checked.
    pub on: E,
    /// Case type, with the keys that select it (in value order); the default last.
    pub cases: Vec<SwitchCase>,
    /// The type every value not listed takes, if any.
    pub default: Option<String>,
    /// Why the enum variants no case names take the default (required when
    /// a switch over an enum leaves variants out).
    pub default_reason: Option<String>,
    /// Selector values that are read errors (spec key, reason).
    pub errors: Vec<(String, String)>,
    /// For a switch over an open enum (an integer selector whose keys name
    /// this enum's variants): the enum. Once checked, the keys are the
    /// variants' integer values, so the emitters see an integer switch.
    pub open_enum: Option<String>,
}

/// One case of a switch: a type and the values that select it.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct SwitchCase {
    /// The struct read for these keys.
    pub ty: String,
    /// Spec keys (variant names, or integers for integer switches).
    pub keys: Vec<String>,
}

impl<E> Switch<E> {
    /// Every case type, then the default (a type may appear twice).
    pub(crate) fn types(&self) -> impl Iterator<Item = &String> {
        self.cases.iter().map(|c| &c.ty).chain(self.default.iter())
    }
}
