//! Malformed specs, names and keys: unknown types, duplicates, undeclared
//! enum properties, unknown keys, reserved names.
//! Each test asserts the exact message: the file, the key path and what is wrong.

use crate::spec_fixture::{error, run, spec};
use tiledb_codegen::{SpecError, SpecErrorKind};

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
