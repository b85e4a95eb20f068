//! One small malformed spec per kind of mistake the codegen must reject; each
//! test asserts the exact message: the file, the key path and what is wrong.

use std::path::Path;

use tiledb_codegen::{generate, SpecError, SpecErrorKind};

const FORMAT: &str = r#"
current = 23
oldest = 1

[file]
title = "Format versions"
module = "format"
"#;

const ENUMS: &str = r#"
[file]
title = "Enumerations"
module = "enums"

[[enum]]
name = "Datatype"
repr = "u8"
properties = { size = "u64" }

[[enum.variant]]
name = "INT32"
value = 0
size = 4

[[enum.variant]]
name = "STRING_ASCII"
value = 11
size = 1
"#;

/// Generates from a spec made of format.toml, a small enums.toml and `test.toml`.
fn run(test_toml: &str) -> Result<(), SpecError> {
    let dir = tempfile::tempdir().expect("temp dir");
    write(dir.path(), "format.toml", FORMAT);
    write(dir.path(), "enums.toml", ENUMS);
    write(dir.path(), "test.toml", test_toml);
    generate(dir.path()).map(|_| ())
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write spec file");
}

/// The message of the error, asserting that generation failed.
fn error(test_toml: &str) -> String {
    match run(test_toml) {
        Ok(()) => panic!("the spec was accepted:\n{test_toml}"),
        Err(err) => err.to_string(),
    }
}

const HEADER: &str = r#"
[file]
title = "Test"
module = "test"
"#;

fn spec(body: &str) -> String {
    format!("{HEADER}\n{body}")
}

#[test]
fn a_well_formed_spec_is_accepted() {
    let body = spec(
        r#"
[[struct]]
name = "S"
params = [{ name = "version", type = "u32" }]

[[struct.field]]
name = "name_len"
type = "u32"
length_of = "name"

[[struct.field]]
name = "name"
type = "bytes"
size = "name_len"

[[struct.field]]
name = "datatype"
type = "Datatype"
since = 5
default = "Datatype::INT32"

[[struct.field]]
name = "extent"
type = "bytes"
size = "datatype.size()"
if = "name_len > 0"
"#,
    );
    run(&body).expect("a valid spec");
}

#[test]
fn unknown_type() {
    let body = spec(
        r#"
[[struct]]
name = "S"

[[struct.field]]
name = "a"
type = "u33"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field a: unknown type \"u33\" (not a primitive, bytes, or a declared enum, struct or context)"
    );
}

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
fn inverted_gate() {
    let body = spec(
        r#"
[[struct]]
name = "S"
params = [{ name = "version", type = "u32" }]

[[struct.field]]
name = "a"
type = "u8"
since = 10
until = 5
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field a: since = 10 is not lower than until = 5, so the field is never present"
    );
}

#[test]
fn equal_since_and_until_is_inverted_too() {
    let body = spec(
        r#"
[[struct]]
name = "S"
params = [{ name = "version", type = "u32" }]

[[struct.field]]
name = "a"
type = "u8"
since = 7
until = 7
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field a: since = 7 is not lower than until = 7, so the field is never present"
    );
}

#[test]
fn gate_beyond_the_next_version() {
    let body = spec(
        r#"
[[struct]]
name = "S"
params = [{ name = "version", type = "u32" }]

[[struct.field]]
name = "a"
type = "u8"
since = 25
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field a: since = 25 is outside the versions 1..=24 (oldest..=current+1)"
    );
}

#[test]
fn gate_below_the_oldest_version() {
    let body = spec(
        r#"
[[struct]]
name = "S"
params = [{ name = "version", type = "u32" }]

[[struct.field]]
name = "a"
type = "u8"
until = 0
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field a: until = 0 is outside the versions 1..=24 (oldest..=current+1)"
    );
}

#[test]
fn a_gate_at_current_plus_one_is_accepted() {
    let body = spec(
        r#"
[[struct]]
name = "S"
params = [{ name = "version", type = "u32" }]

[[struct.field]]
name = "a"
type = "u8"
since = 24
"#,
    );
    run(&body).expect("a gate at current + 1 prepares a future field");
}

#[test]
fn duplicate_enum_value() {
    let body = spec(
        r#"
[[enum]]
name = "Layout"
repr = "u8"

[[enum.variant]]
name = "ROW_MAJOR"
value = 0

[[enum.variant]]
name = "COL_MAJOR"
value = 0
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: enum Layout, variant COL_MAJOR: value 0 is used by both ROW_MAJOR and COL_MAJOR"
    );
}

#[test]
fn duplicate_enum_name() {
    let body = spec(
        r#"
[[enum]]
name = "Layout"
repr = "u8"

[[enum.variant]]
name = "ROW_MAJOR"
value = 0

[[enum.variant]]
name = "ROW_MAJOR"
value = 1
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: enum Layout, variant ROW_MAJOR: variant \"ROW_MAJOR\" is declared twice"
    );
}

#[test]
fn duplicate_type_name_across_files() {
    let body = spec(
        r#"
[[struct]]
name = "Datatype"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct Datatype: type \"Datatype\" is declared twice"
    );
}

#[test]
fn duplicate_field_name() {
    let body = spec(
        r#"
[[struct]]
name = "S"

[[struct.field]]
name = "a"
type = "u8"

[[struct.field]]
name = "a"
type = "u16"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field a: field \"a\" is declared twice"
    );
}

#[test]
fn enum_property_missing_on_a_variant() {
    let body = spec(
        r#"
[[enum]]
name = "Kind"
repr = "u8"
properties = { size = "u64" }

[[enum.variant]]
name = "SMALL"
value = 0
size = 1

[[enum.variant]]
name = "LARGE"
value = 1
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: enum Kind, variant LARGE: property \"size\" is declared by the enum but not set"
    );
}

#[test]
fn enum_variant_sets_an_undeclared_property() {
    let body = spec(
        r#"
[[enum]]
name = "Kind"
repr = "u8"

[[enum.variant]]
name = "SMALL"
value = 0
size = 1
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: enum Kind, variant SMALL: key \"size\" is neither a variant key nor a property declared by the enum"
    );
}

#[test]
fn length_of_a_missing_field() {
    let body = spec(
        r#"
[[struct]]
name = "S"

[[struct.field]]
name = "name_len"
type = "u32"
length_of = "nmae"

[[struct.field]]
name = "name"
type = "bytes"
size = "name_len"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field name_len: length_of = \"nmae\": there is no such field"
    );
}

#[test]
fn length_of_an_earlier_field() {
    let body = spec(
        r#"
[[struct]]
name = "S"

[[struct.field]]
name = "name"
type = "bytes"
size = "4"

[[struct.field]]
name = "name_len"
type = "u32"
length_of = "name"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field name_len: length_of = \"name\": that field comes earlier; a length must precede what it measures"
    );
}

#[test]
fn size_of_a_missing_field() {
    let body = spec(
        r#"
[[struct]]
name = "S"

[[struct.field]]
name = "options_len"
type = "u32"
size_of = "options"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field options_len: size_of = \"options\": there is no such field"
    );
}

#[test]
fn switch_case_naming_an_unknown_variant() {
    let body = spec(
        r#"
[[struct]]
name = "Small"

[[struct]]
name = "S"

[[struct.field]]
name = "datatype"
type = "Datatype"

[[struct.field]]
name = "options"
type = { switch_on = "datatype", cases = { INT32 = "Small", INT128 = "Small" } }
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field options: switch case \"INT128\" is not a variant of Datatype"
    );
}

#[test]
fn unknown_key_is_a_syntax_error() {
    let body = spec(
        r#"
[[struct]]
name = "S"

[[struct.field]]
name = "a"
type = "u8"
sincee = 5
"#,
    );
    let message = error(&body);
    assert!(
        message.starts_with("spec/test.toml: ") && message.contains("unknown field `sincee`"),
        "{message}"
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

#[test]
fn error_values_name_file_path_and_kind() {
    let body = spec(
        r#"
[[struct]]
name = "S"
params = [{ name = "version", type = "u32" }]

[[struct.field]]
name = "a"
type = "u8"
since = 9
until = 3
"#,
    );
    let err = run(&body).expect_err("inverted gate");
    assert_eq!(
        err,
        SpecError {
            file: "spec/test.toml".into(),
            path: "struct S, field a".into(),
            kind: SpecErrorKind::InvertedGate { since: 9, until: 3 },
        }
    );
}

#[test]
fn variant_names_are_upper_camel_case() {
    use tiledb_codegen::expr::upper_camel;
    assert_eq!(upper_camel("INT32"), "Int32");
    assert_eq!(upper_camel("DATETIME_YEAR"), "DatetimeYear");
    assert_eq!(upper_camel("STRING_ASCII"), "StringAscii");
    assert_eq!(upper_camel("BIT_WIDTH_REDUCTION"), "BitWidthReduction");
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
    write(dir.path(), "format.toml", FORMAT);
    write(dir.path(), "enums.toml", ENUMS);
    write(dir.path(), "test.toml", &spec(DERIVED));
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

#[test]
fn size_on_a_list_of_structs() {
    let body = spec(
        r#"
[[struct]]
name = "Item"

[[struct]]
name = "S"

[[struct.field]]
name = "n"
type = "u32"

[[struct.field]]
name = "items"
type = "Item"
count = "n"
size = "n"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field items: size applies to bytes and to a single struct; lists take count"
    );
}

#[test]
fn switch_value_both_a_case_and_an_error() {
    let body = spec(
        r#"
[[struct]]
name = "Small"

[[struct]]
name = "S"

[[struct.field]]
name = "datatype"
type = "Datatype"

[[struct.field]]
name = "options"
type = { switch_on = "datatype", cases = { INT32 = "Small" }, errors = { INT32 = "no" } }
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field options: switch value INT32 is both a case and an error"
    );
}

#[test]
fn switch_error_naming_an_unknown_variant() {
    let body = spec(
        r#"
[[struct]]
name = "Small"

[[struct]]
name = "S"

[[struct.field]]
name = "datatype"
type = "Datatype"

[[struct.field]]
name = "options"
type = { switch_on = "datatype", cases = { INT32 = "Small" }, errors = { INT99 = "no" } }
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field options: switch case \"INT99\" is not a variant of Datatype"
    );
}

#[test]
fn a_name_the_generated_code_uses_itself() {
    let body = spec(
        r#"
[[struct]]
name = "S"

[[struct.field]]
name = "size_sink"
type = "u8"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field size_sink: \"size_sink\" is reserved for the generated code"
    );
}

#[test]
fn a_struct_containing_itself_without_a_list() {
    let body = spec(
        r#"
[[struct]]
name = "Node"

[[struct.field]]
name = "tag"
type = "u8"

[[struct.field]]
name = "child"
type = "Wrapper"

[[struct]]
name = "Wrapper"

[[struct.field]]
name = "node"
type = "Node"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct Node, field child: Node contains itself through this field; recursion needs a list"
    );
}
