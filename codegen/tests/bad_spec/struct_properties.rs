//! Malformed specs, `struct` enum properties (`FilterType.chunk_metadata`):
//! a struct that does not exist, a param left without an argument, an
//! argument for no param, a name argument for a param that is not a `u64`,
//! a value of the wrong shape. Each test asserts the exact message.

use crate::spec_fixture::{error, run, spec};

/// A `Kind` enum with a `struct` property, its variants' values given.
fn with_values(one: &str, two: &str, structs: &str) -> String {
    spec(&format!(
        r#"
[[enum]]
name = "Kind"
repr = "u8"
properties = {{ metadata = "struct" }}

[[enum.variant]]
name = "ONE"
value = 1
metadata = {one}

[[enum.variant]]
name = "TWO"
value = 2
metadata = {two}

[[struct]]
name = "Plain"

[[struct.field]]
name = "n"
type = "u32"

[[struct]]
name = "Sized"
params = [{{ name = "width", type = "u64" }}]

[[struct.field]]
name = "b"
type = "bytes"
size = "width"
{structs}
"#
    ))
}

#[test]
fn well_formed_struct_properties_are_accepted() {
    let body = with_values(
        r#""Plain""#,
        r#"{ struct = "Sized", args = { width = "value_size" } }"#,
        "",
    );
    run(&body).unwrap();
    let none = with_values(
        r#""""#,
        r#"{ struct = "Sized", args = { width = "16" } }"#,
        "",
    );
    run(&none).unwrap();
}

#[test]
fn a_struct_property_naming_no_struct() {
    let body = with_values(r#""Plian""#, r#""""#, "");
    assert_eq!(
        error(&body),
        "spec/test.toml: enum Kind, variant ONE, metadata: \"Plian\" names no struct of spec/"
    );
}

#[test]
fn a_struct_property_naming_an_enum() {
    let body = with_values(r#""Kind""#, r#""""#, "");
    assert_eq!(
        error(&body),
        "spec/test.toml: enum Kind, variant ONE, metadata: \"Kind\" is an enum, not a struct"
    );
}

#[test]
fn a_param_without_an_argument() {
    let body = with_values(r#""Sized""#, r#""""#, "");
    assert_eq!(
        error(&body),
        "spec/test.toml: enum Kind, variant ONE, metadata: Sized takes param width but no argument gives it"
    );
}

#[test]
fn an_argument_for_no_param() {
    let body = with_values(
        r#"{ struct = "Plain", args = { width = "4" } }"#,
        r#""""#,
        "",
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: enum Kind, variant ONE, metadata: Plain has no param width"
    );
}

#[test]
fn a_name_argument_for_a_param_that_is_not_u64() {
    let body = with_values(
        r#"{ struct = "Narrow", args = { width = "value_size" } }"#,
        r#""""#,
        r#"
[[struct]]
name = "Narrow"
params = [{ name = "width", type = "u8" }]

[[struct.field]]
name = "b"
type = "bytes"
size = "width"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: enum Kind, variant ONE, metadata: argument width = \"value_size\" names an input, which is a u64, but Narrow.width is not"
    );
}

#[test]
fn a_struct_property_of_the_wrong_shape() {
    let body = with_values("4", r#""""#, "");
    assert_eq!(
        error(&body),
        "spec/test.toml: enum Kind, variant ONE, metadata: 4 is not a struct name, \"\" or { struct = \"Name\", args = { … } }"
    );
    let body = with_values(r#"{ name = "Plain" }"#, r#""""#, "");
    assert_eq!(
        error(&body),
        "spec/test.toml: enum Kind, variant ONE, metadata: key \"name\" is not `struct` or `args` of a struct property"
    );
    let body = with_values(
        r#"{ struct = "Sized", args = { width = "2 + 2" } }"#,
        r#""""#,
        "",
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: enum Kind, variant ONE, metadata: argument width = \"2 + 2\" is neither an integer nor a snake_case name"
    );
}

#[test]
fn a_variant_without_the_struct_property() {
    let body = spec(
        r#"
[[enum]]
name = "Kind"
repr = "u8"
properties = { metadata = "struct" }

[[enum.variant]]
name = "ONE"
value = 1
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: enum Kind, variant ONE: property \"metadata\" is declared by the enum but not set"
    );
}

#[test]
fn a_struct_property_used_as_a_value_in_an_expression() {
    let body = with_values(
        r#""Plain""#,
        r#""""#,
        r#"
[[struct]]
name = "User"

[[struct.field]]
name = "kind"
type = "Kind"

[[struct.field]]
name = "n"
type = "u32"
if = "kind.metadata() == 1"
"#,
    );
    let message = error(&body);
    assert!(
        message.starts_with("spec/test.toml: struct User, field n")
            && message.contains("property metadata names a struct, not a value"),
        "{message}"
    );
}
