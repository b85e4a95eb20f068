//! Stage 1: the TOML as written, deserialized with serde and not yet checked.

use std::collections::BTreeMap;

use serde::Deserialize;

/// `format.toml`: the versions the spec describes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFormat {
    pub current: u32,
    pub oldest: u32,
    /// The newest version this implementation reads (not implied by `current`).
    pub reads: u32,
    /// The version this implementation writes.
    pub writes: u32,
    pub file: RawFileHeader,
    /// The upstream commits these tables follow.
    pub upstream: RawUpstream,
    #[serde(default, rename = "version")]
    pub versions: Vec<RawVersion>,
    /// Facts upstream's documents lack or get wrong, beyond the `erratum`
    /// keys on the items they concern.
    #[serde(default, rename = "fact")]
    pub facts: Vec<RawFact>,
    /// Behaviours that change with the format version ("from version N, X").
    #[serde(default, rename = "gate")]
    pub gates: Vec<RawGate>,
}

/// A behaviour of the format that holds from (`since`) or until (`until`)
/// a version: generated as a `const fn name(version: u32) -> bool`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGate {
    /// snake_case; the name of the generated function.
    pub name: String,
    #[serde(default)]
    pub since: Option<u32>,
    #[serde(default)]
    pub until: Option<u32>,
    /// What holds within the gate.
    pub doc: String,
    pub source: String,
}

/// Which TileDB-Inc/TileDB commits spec/ follows.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawUpstream {
    pub repository: String,
    /// The newest commit touching `format_spec/` that spec/ was checked against.
    pub format_spec_commit: String,
    #[serde(default)]
    pub format_spec_date: Option<String>,
    /// The release whose behaviour the runtime matches, and its commit.
    pub release_tag: String,
    pub release_commit: String,
    #[serde(default)]
    pub doc: Option<String>,
}

/// A fact upstream's documents lack (`kind = "missing"`) or get wrong
/// (`kind = "erratum"`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFact {
    /// snake_case; a fact with a `value` becomes the constant of this name in upper case.
    pub name: String,
    pub kind: String,
    pub statement: String,
    pub source: String,
    /// The upstream document concerned.
    #[serde(default)]
    pub upstream: Option<String>,
    /// A number the runtime uses (generated as a `u64` constant).
    #[serde(default)]
    pub value: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawVersion {
    pub number: u32,
    #[serde(default)]
    pub release: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub erratum: Option<String>,
    #[serde(default)]
    pub changes: Vec<String>,
}

/// Any other spec file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFile {
    pub file: RawFileHeader,
    #[serde(default, rename = "enum")]
    pub enums: Vec<RawEnum>,
    #[serde(default, rename = "context")]
    pub contexts: Vec<RawContext>,
    #[serde(default, rename = "struct")]
    pub structs: Vec<RawStruct>,
    /// The folders of arrays and groups (one file holds them all).
    #[serde(default, rename = "folder")]
    pub folders: Vec<RawFolder>,
    /// The fixed file names and name suffixes of arrays, groups and fragments.
    #[serde(default, rename = "file_name")]
    pub file_names: Vec<RawFileName>,
    /// The extensions of timestamped names (`.ok`, `.wrt`, …).
    #[serde(default, rename = "extension")]
    pub extensions: Vec<RawExtension>,
}

/// A fixed file name (or name suffix) of an array, a group or a fragment.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFileName {
    /// The name as stored, e.g. `__fragment_metadata.tdb`, or a suffix, e.g. `_var.tdb`.
    pub name: String,
    /// The generated constant, SCREAMING_SNAKE_CASE.
    pub constant: String,
    /// `array`, `group` or `fragment`: where the file is.
    #[serde(rename = "in")]
    pub object: String,
    #[serde(default)]
    pub since: Option<u32>,
    #[serde(default)]
    pub until: Option<u32>,
    pub doc: String,
    #[serde(default)]
    pub source: Option<String>,
}

/// An extension a timestamped name can carry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExtension {
    /// The variant of the generated `Extension` enum, UpperCamelCase.
    pub variant: String,
    /// The suffix as written, with its dot.
    pub suffix: String,
    /// The folder the files are in (`""`: the root), when there is one.
    #[serde(default)]
    pub folder: Option<String>,
    #[serde(default)]
    pub since: Option<u32>,
    #[serde(default)]
    pub until: Option<u32>,
    pub doc: String,
    #[serde(default)]
    pub source: Option<String>,
}

/// A folder of an array or a group, and whether TileDB lists it whole.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFolder {
    /// Relative to the array or group, e.g. `__schema/__enumerations`.
    pub path: String,
    /// The generated constant holding the folder's own name, SCREAMING_SNAKE_CASE.
    #[serde(default)]
    pub constant: Option<String>,
    /// `array`, `group` or both.
    #[serde(rename = "in")]
    pub objects: Vec<String>,
    #[serde(default)]
    pub since: Option<u32>,
    #[serde(default)]
    pub doc: Option<String>,
    /// TileDB loads every file in it and fails on any name it does not expect.
    #[serde(default)]
    pub listed_whole: bool,
    /// For a folder listed whole: what TileDB loads each file as.
    #[serde(default)]
    pub loaded_as: Option<String>,
    /// For a folder listed whole: what TileDB cannot do beside an unexpected file.
    #[serde(default)]
    pub refusal: Option<String>,
    /// Why: where upstream's code shows it, or how it was measured.
    pub reason: String,
    #[serde(default)]
    pub source: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFileHeader {
    pub title: String,
    pub module: String,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub doc: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEnum {
    pub name: String,
    /// Why no runtime code uses the generated type (`--unused` reports it).
    #[serde(default)]
    pub unused_reason: Option<String>,
    pub repr: String,
    #[serde(default)]
    pub doc: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub erratum: Option<String>,
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    #[serde(default, rename = "variant")]
    pub variants: Vec<RawVariant>,
}

/// A variant: the fixed keys, plus one key per declared property (kept in `rest`).
#[derive(Debug, Deserialize)]
pub struct RawVariant {
    pub name: String,
    pub value: i64,
    #[serde(default)]
    pub doc: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub erratum: Option<String>,
    #[serde(default)]
    pub deprecated: bool,
    #[serde(default)]
    pub since: Option<u32>,
    #[serde(default)]
    pub until: Option<u32>,
    #[serde(flatten)]
    pub rest: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawContext {
    pub name: String,
    /// Why no runtime code uses the generated type (`--unused` reports it).
    #[serde(default)]
    pub unused_reason: Option<String>,
    #[serde(default)]
    pub doc: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    /// A struct each value of this context is computed from (one `value` per field).
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default, alias = "field")]
    pub fields: Vec<RawNamed>,
}

/// A param or a context field: a name, a type and a description.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNamed {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(default)]
    pub doc: Option<String>,
    /// For a field of a context declared `from` a struct: how it is computed.
    #[serde(default)]
    pub value: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStruct {
    pub name: String,
    /// Why no runtime code uses the generated type (`--unused` reports it).
    #[serde(default)]
    pub unused_reason: Option<String>,
    #[serde(default)]
    pub doc: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub erratum: Option<String>,
    #[serde(default)]
    pub container: Option<String>,
    #[serde(default)]
    pub params: Vec<RawNamed>,
    #[serde(default)]
    pub version: Option<String>,
    /// The stored length of the struct in bytes, as upstream documents it;
    /// the codegen checks it against the sum of its fields.
    #[serde(default)]
    pub fixed_size: Option<u64>,
    /// Also generate a zero-copy view (`<Name>View<'a>` over `&'a [u8]`)
    /// with a mirrored writer; the codegen checks the layout allows one.
    #[serde(default)]
    pub view: bool,
    /// `[struct.known_size]`: the struct's stored size, computed before
    /// reading it from its params and the inputs it declares.
    #[serde(default)]
    pub known_size: Option<RawKnownSize>,
    #[serde(default, rename = "field", alias = "fields")]
    pub fields: Vec<RawField>,
}

/// `[struct.known_size]`: where and how the stored size of a struct follows
/// from what a reader knows before reading it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKnownSize {
    pub doc: String,
    #[serde(default)]
    pub source: Option<String>,
    /// Values beyond the struct's params the size depends on (a version
    /// taken from a file name, say).
    #[serde(default)]
    pub inputs: Vec<RawNamed>,
    /// Where the size is known (a condition over the params and inputs).
    pub when: RawExpr,
    /// The size in bytes where `when` holds.
    pub size: RawExpr,
}

/// An expression: a string in the expression language, or a bare TOML integer or boolean.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RawExpr {
    Text(String),
    Integer(i64),
    Boolean(bool),
}

impl RawExpr {
    pub fn text(&self) -> String {
        match self {
            RawExpr::Text(text) => text.clone(),
            RawExpr::Integer(value) => value.to_string(),
            RawExpr::Boolean(value) => value.to_string(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawType {
    Name(String),
    Switch(RawSwitch),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSwitch {
    pub switch_on: String,
    pub cases: BTreeMap<String, String>,
    #[serde(default)]
    pub default: Option<String>,
    /// Why the variants of the switched enum that no case names may take
    /// the default: without it, a switch over an enum must list every variant.
    #[serde(default)]
    pub default_reason: Option<String>,
    /// Selector values that are read errors, with the reason.
    #[serde(default)]
    pub errors: BTreeMap<String, String>,
    /// An open enum: the selector is a plain integer (values this enum does
    /// not know must still be read, so it cannot be the enum itself), the
    /// keys name this enum's variants, and `default` is required (it takes
    /// the unknown values).
    #[serde(default, rename = "enum")]
    pub open_enum: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEach {
    pub over: String,
    #[serde(rename = "as")]
    pub entry: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawField {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: RawType,
    #[serde(default)]
    pub doc: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub erratum: Option<String>,
    #[serde(default)]
    pub since: Option<u32>,
    #[serde(default)]
    pub until: Option<u32>,
    #[serde(default, rename = "if")]
    pub condition: Option<RawExpr>,
    #[serde(default)]
    pub default: Option<RawExpr>,
    #[serde(default)]
    pub size: Option<RawExpr>,
    #[serde(default)]
    pub count: Option<RawExpr>,
    #[serde(default)]
    pub each: Option<RawEach>,
    #[serde(default)]
    pub until_eof: bool,
    #[serde(default)]
    pub args: BTreeMap<String, RawExpr>,
    #[serde(default)]
    pub length_of: Option<String>,
    #[serde(default)]
    pub size_of: Option<String>,
    #[serde(default)]
    pub value: Option<RawExpr>,
    #[serde(default)]
    pub max: Option<u64>,
    /// For `bytes`: the one-byte delimiter that ends them (consumed, not kept).
    #[serde(default)]
    pub terminator: Option<String>,
    /// With `terminator`: the end of the enclosing structure ends them too
    /// (a last line without its newline).
    #[serde(default)]
    pub or_end: bool,
    /// The value the generated `Default` gives this field (a bool or integer
    /// literal; otherwise the type's default).
    #[serde(default)]
    pub initial: Option<RawExpr>,
}
