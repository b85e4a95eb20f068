//! Malformed specs, expressions: names that are missing or declared later,
//! expressions outside the language, contexts computed from structs.
//! Each test asserts the exact message: the file, the key path and what is wrong.

use crate::spec_fixture::{error, format, run, spec, write_spec};
use tiledb_codegen::generate;

#[test]
fn size_refers_to_a_missing_field() {
    let body = spec(
        r#"
[[struct]]
name = "Attribute"

[[struct.field]]
name = "fill_size"
type = "u64"

[[struct.field]]
name = "fill"
type = "bytes"
size = "fill_sz"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct Attribute, field fill: size refers to \"fill_sz\", which is not an earlier field or a param"
    );
}

#[test]
fn condition_refers_to_a_later_field() {
    let body = spec(
        r#"
[[struct]]
name = "S"

[[struct.field]]
name = "a"
type = "u8"
if = "b > 0"

[[struct.field]]
name = "b"
type = "u8"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field a: if refers to \"b\", which is declared later; only earlier fields and params can be used"
    );
}

#[test]
fn argument_refers_to_an_unknown_name() {
    let body = spec(
        r#"
[[struct]]
name = "Inner"
params = [{ name = "version", type = "u32" }]

[[struct]]
name = "Outer"

[[struct.field]]
name = "inner"
type = "Inner"
args = { version = "format_version" }
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct Outer, field inner: args.version refers to \"format_version\", which is not an earlier field or a param"
    );
}

#[test]
fn expression_outside_the_language() {
    let body = spec(
        r#"
[[struct]]
name = "S"

[[struct.field]]
name = "n"
type = "u32"

[[struct.field]]
name = "data"
type = "bytes"
size = "n.pow(2)"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field data: size: method `pow` with 1 argument(s) does not apply to a u32"
    );
}

/// A literal left of arithmetic on a typed value is spelled with a suffix
/// (`2u32`); a parenthesised one has no such spelling, so it is refused
/// while checking instead of failing while emitting.
#[test]
fn arithmetic_on_a_parenthesised_literal() {
    let body = spec(
        r#"
[[struct]]
name = "S"

[[struct.field]]
name = "n"
type = "u32"

[[struct.field]]
name = "data"
type = "bytes"
size = "(2) * n"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field data: size: a literal left of an arithmetic operator must be a plain integer"
    );
}

/// A plain literal on the left is accepted (it becomes `2u32`).
#[test]
fn arithmetic_on_a_plain_literal_is_accepted() {
    let body = spec(
        r#"
[[struct]]
name = "S"

[[struct.field]]
name = "n"
type = "u32"

[[struct.field]]
name = "data"
type = "bytes"
size = "2 * n"
"#,
    );
    run(&body).expect("a plain literal left of arithmetic is accepted");
}

#[test]
fn condition_that_is_not_a_boolean() {
    let body = spec(
        r#"
[[struct]]
name = "S"

[[struct.field]]
name = "n"
type = "u32"

[[struct.field]]
name = "a"
type = "u8"
if = "n + 1"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field a: if: is a u32 where a condition (bool) is expected"
    );
}

#[test]
fn unknown_enum_variant_in_an_expression() {
    let body = spec(
        r#"
[[struct]]
name = "S"
params = [{ name = "version", type = "u32" }]

[[struct.field]]
name = "datatype"
type = "Datatype"
since = 5
default = "Datatype::INT64"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field datatype: default: Datatype has no variant INT64"
    );
}

const DERIVED: &str = r#"
[[context]]
name = "Shape"
from = "Dim"
fields = [{ name = "size", type = "u64", value = "datatype.size()" }]

[[struct]]
name = "Dim"

[[struct.field]]
name = "datatype"
type = "Datatype"

[[struct]]
name = "Ranges"
params = [{ name = "shapes", type = "Vec<Shape>" }]

[[struct.field]]
name = "values"
type = "u8"
each = { over = "shapes", as = "shape" }

[[struct]]
name = "Outer"

[[struct.field]]
name = "n"
type = "u32"
length_of = "dims"

[[struct.field]]
name = "dims"
type = "Dim"
count = "n"

[[struct.field]]
name = "ranges"
type = "Ranges"
args = { shapes = "dims" }
"#;

#[test]
fn a_context_computed_from_a_struct_converts_lists_of_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_spec(dir.path(), &format(), &spec(DERIVED));
    let generated = generate(dir.path()).expect("valid");
    let code = generated
        .get("runtime/src/format/generated/test.rs")
        .expect("test.rs");
    assert!(code.contains("impl From<&Dim> for Shape"), "{code}");
    assert!(code.contains("size: source.datatype.size()"), "{code}");
    assert!(
        code.contains("shapes(dims.iter().map(Shape::from).collect::<Vec<_>>())"),
        "{code}"
    );
}

#[test]
fn a_computed_context_field_naming_a_missing_field() {
    let body = spec(&DERIVED.replace("datatype.size()", "datatyp.size()"));
    assert_eq!(
        error(&body),
        "spec/test.toml: context Shape, field size: value refers to \"datatyp\", which is not an earlier field or a param"
    );
}

#[test]
fn a_computed_context_field_without_a_value() {
    let body = spec(&DERIVED.replace(", value = \"datatype.size()\"", ""));
    assert_eq!(
        error(&body),
        "spec/test.toml: context Shape, field size: the context is computed from Dim, so every field needs a value"
    );
}

#[test]
fn a_context_computed_from_an_unknown_struct() {
    let body = spec(&DERIVED.replace("from = \"Dim\"", "from = \"Dimension\""));
    assert_eq!(
        error(&body),
        "spec/test.toml: context Shape, from: unknown type \"Dimension\" (not a primitive, bytes, or a declared enum, struct or context)"
    );
}
