//! `view = true` (zero-copy views): the layouts a view cannot read in place
//! are refused, each naming the file, the struct, the field and why; a
//! layout it can read is accepted and gets its view.

use crate::spec_fixture::{error, run, spec};

/// A struct with a view, then `field` (TOML of one or more fields) after a
/// `u32` count `n` and a `u64` param `width`.
fn with_field(field: &str) -> String {
    spec(&format!(
        r#"
[[struct]]
name = "S"
view = true
params = [{{ name = "width", type = "u64", doc = "a width" }}, {{ name = "version", type = "u32" }}]

[[struct.field]]
name = "n"
type = "u32"
{field}
"#
    ))
}

#[test]
fn a_readable_layout_gets_its_view() {
    let body = spec(
        r#"
[[struct]]
name = "Elem"
view = true
params = [{ name = "width", type = "u64" }]

[[struct.field]]
name = "value"
type = "bytes"
size = "width"

[[struct.field]]
name = "tag"
type = "u16"

[[struct]]
name = "S"
view = true
params = [{ name = "width", type = "u64" }]

[[struct.field]]
name = "zero"
type = "u32"
value = "0"

[[struct.field]]
name = "kind"
type = "Datatype"

[[struct.field]]
name = "n"
type = "u32"
length_of = "items"

[[struct.field]]
name = "len"
type = "u8"
length_of = "blob"

[[struct.field]]
name = "items"
type = "Elem"
count = "n"
args = { width = "width" }

[[struct.field]]
name = "blob"
type = "bytes"
size = "len"

[[struct.field]]
name = "sums"
type = "u64"
count = "n"

[[struct.field]]
name = "digest"
type = "bytes"
size = "16"
"#,
    );
    assert_eq!(run(&body), Ok(()));
    let dir = tempfile::tempdir().expect("temp dir");
    crate::spec_fixture::write_spec(dir.path(), &crate::spec_fixture::format(), &body);
    let files = tiledb_codegen::generate(dir.path()).expect("generates");
    let text = files
        .get("runtime/src/format/generated/test.rs")
        .expect("the test module");
    for expected in [
        "pub struct SView<'a>",
        "pub struct ElemView<'a>",
        "pub fn kind(&self) -> crate::Result<Datatype>",
        "crate::format::view::ViewList<'a, ElemView<'a>>",
        "impl crate::format::view::Element<Elem, (u64,)> for Elem",
        "crate::format::view::check_value(",
    ] {
        assert!(text.contains(expected), "no `{expected}` in:\n{text}");
    }
}

#[test]
fn a_gated_field() {
    assert_eq!(
        error(&with_field(
            "\n[[struct.field]]\nname = \"late\"\ntype = \"u8\"\nsince = 10\n"
        )),
        "spec/test.toml: struct S, field late: view = true, but the field is gated or conditional; a view reads every field at a fixed place"
    );
}

#[test]
fn a_bounded_length() {
    assert_eq!(
        error(&with_field(
            "\n[[struct.field]]\nname = \"blob\"\ntype = \"bytes\"\nsize = \"n\"\nmax = 10\n"
        )),
        "spec/test.toml: struct S, field blob: view = true, but the field has `max` or `sized`, which a view does not check"
    );
}

#[test]
fn a_size_of() {
    assert_eq!(
        error(&spec(
            r#"
[[struct]]
name = "Inner"

[[struct.field]]
name = "a"
type = "u8"

[[struct]]
name = "S"
view = true

[[struct.field]]
name = "size"
type = "u32"
size_of = "inner"

[[struct.field]]
name = "inner"
type = "Inner"
"#
        )),
        "spec/test.toml: struct S, field size: view = true, but the field is a size_of, which a view's writer cannot compute without serializing"
    );
}

#[test]
fn a_nested_struct() {
    assert_eq!(
        error(&spec(
            r#"
[[struct]]
name = "Inner"

[[struct.field]]
name = "a"
type = "u8"

[[struct]]
name = "S"
view = true

[[struct.field]]
name = "inner"
type = "Inner"
"#
        )),
        "spec/test.toml: struct S, field inner: view = true, but the field is a nested struct, which a view cannot read in place"
    );
}

#[test]
fn an_enum_after_a_variable_field() {
    assert_eq!(
        error(&with_field(
            "\n[[struct.field]]\nname = \"blob\"\ntype = \"bytes\"\nsize = \"n\"\n\n[[struct.field]]\nname = \"kind\"\ntype = \"Datatype\"\n"
        )),
        "spec/test.toml: struct S, field kind: view = true, but the field is an enum after a variable-size field; a view decodes enums only at constant offsets"
    );
}

#[test]
fn a_computed_byte_size() {
    assert_eq!(
        error(&with_field(
            "\n[[struct.field]]\nname = \"blob\"\ntype = \"bytes\"\nsize = \"n * 2\"\n"
        )),
        "spec/test.toml: struct S, field blob: view = true, but the field has size `n * 2`; a view needs a literal, a param or an earlier integer field"
    );
}

#[test]
fn a_list_counted_by_a_literal() {
    assert_eq!(
        error(&with_field(
            "\n[[struct.field]]\nname = \"items\"\ntype = \"u32\"\ncount = \"3\"\n"
        )),
        "spec/test.toml: struct S, field items: view = true, but the field has count `3`; a view's list is counted by an earlier integer field"
    );
}

#[test]
fn a_list_of_structs_without_a_view() {
    let body = spec(
        r#"
[[struct]]
name = "Elem"

[[struct.field]]
name = "a"
type = "u8"

[[struct]]
name = "S"
view = true

[[struct.field]]
name = "n"
type = "u32"

[[struct.field]]
name = "items"
type = "Elem"
count = "n"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field items: view = true, but the field lists Elem, which has no view; set `view = true` on it too"
    );
}

#[test]
fn an_element_argument_computed_from_a_field() {
    let body = spec(
        r#"
[[struct]]
name = "Elem"
view = true
params = [{ name = "width", type = "u64" }]

[[struct.field]]
name = "value"
type = "bytes"
size = "width"

[[struct]]
name = "S"
view = true

[[struct.field]]
name = "n"
type = "u32"

[[struct.field]]
name = "items"
type = "Elem"
count = "n"
args = { width = "n" }
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field items: view = true, but the field passes `n` to Elem; a view passes only params and literals to its elements"
    );
}

#[test]
fn a_signed_count() {
    let body = spec(
        r#"
[[struct]]
name = "S"
view = true

[[struct.field]]
name = "n"
type = "i32"

[[struct.field]]
name = "items"
type = "u8"
count = "n"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field items: view = true, but the field has count `n`; a view's list is counted by an earlier integer field"
    );
}

#[test]
fn a_computed_fixed_value() {
    assert_eq!(
        error(&with_field(
            "\n[[struct.field]]\nname = \"magic\"\ntype = \"u8\"\nvalue = \"1 + 1\"\n"
        )),
        "spec/test.toml: struct S, field magic: view = true, but the field has a `value` a view cannot check (only integer literals on integer fields)"
    );
}
