//! `--emit json DIR`: the validated model as `tiledb-format.json`, with the
//! JSON Schema (draft 2020-12) that describes it as `tiledb-format.schema.json`.
//!
//! The shape is the model's own ([`crate::model`]), serialized by serde, with
//! one wrapper ([`FormatDocument`]). Every expression (sizes, counts,
//! conditions, defaults, arguments, switch selectors, the `version`
//! expression of a struct) is an object `{ "text": "...", "type": TYPE }`:
//! the text as the spec writes it (the expression language of spec/README.md)
//! and its checked type. Types (`Ty`) are externally tagged enums
//! (`{"Prim": "u32"}`, `{"Struct": "Dimension"}`, `"Bool"`, `"Bytes"`,
//! `{"List": ...}`, `{"Option": ...}`); layouts likewise (`{"Single": TYPE}`,
//! `{"Bytes": {"len": ...}}`, `{"List": {"elem": ..., "len": ...}}`,
//! `{"Switch": ...}`). Version gates are `since` (present when the version
//! is at least it) and `until` (absent from it on) on fields and enum variants.

use schemars::JsonSchema;
use serde::Serialize;

use crate::model::{Checked, Spec, Ty};

/// Bumped when the shape of the document changes incompatibly.
pub const SHAPE_VERSION: u32 = 1;

/// The file the model goes to.
pub const JSON_FILE: &str = "tiledb-format.json";
/// The file its JSON Schema goes to.
pub const SCHEMA_FILE: &str = "tiledb-format.schema.json";

/// The whole document: the shape's version, then the validated spec.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(
    title = "TileDB on-disk format",
    description = "The validated spec/ of tiledb-rs: every structure, enum and context of the TileDB format, with version gates and the version history."
)]
pub struct FormatDocument<'a> {
    /// The version of this document shape (bumped on incompatible changes).
    pub shape_version: u32,
    /// The spec: format versions, then one entry per spec/ file.
    pub spec: &'a Spec,
}

/// How an expression is written out: its spec text and checked type.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Expression")]
struct ExpressionShape<'a> {
    /// The expression as written in spec/ (see spec/README.md, *Expressions*).
    text: &'a str,
    /// The type the checker gave it.
    #[serde(rename = "type")]
    ty: &'a Ty,
}

impl Serialize for Checked {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ExpressionShape {
            text: &self.text,
            ty: &self.expr.ty,
        }
        .serialize(serializer)
    }
}

impl JsonSchema for Checked {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Expression".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <ExpressionShape<'static>>::json_schema(generator)
    }
}

/// The model as pretty JSON.
pub fn render_json(spec: &Spec) -> String {
    let document = FormatDocument {
        shape_version: SHAPE_VERSION,
        spec,
    };
    let mut text = serde_json::to_string_pretty(&document).expect("the model serializes");
    text.push('\n');
    text
}

/// The JSON Schema (draft 2020-12) of [`render_json`]'s output.
pub fn render_schema() -> String {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<FormatDocument<'static>>();
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema serializes");
    text.push('\n');
    text
}

/// Both files, by name.
pub fn render(spec: &Spec) -> Vec<(String, String)> {
    vec![
        (JSON_FILE.to_string(), render_json(spec)),
        (SCHEMA_FILE.to_string(), render_schema()),
    ]
}
