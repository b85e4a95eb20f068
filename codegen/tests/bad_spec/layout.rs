//! Malformed specs, layouts: version gates, `length_of`/`size_of` targets,
//! sizes on lists, structs that contain themselves, `fixed_size`.
//! Each test asserts the exact message: the file, the key path and what is wrong.

use crate::spec_fixture::{error, run, spec};

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

/// Options upstream documents as 9 bytes: the fields must add up to it.
const FIXED: &str = r#"
[[struct]]
name = "Options"
fixed_size = 9

[[struct.field]]
name = "datatype"
type = "Datatype"

[[struct.field]]
name = "level"
type = "i32"

[[struct.field]]
name = "window"
type = "u32"
"#;

#[test]
fn a_fixed_size_matching_the_fields_is_accepted() {
    run(&spec(FIXED)).expect("1 + 4 + 4 bytes");
}

/// A field added to the options (or removed) without updating the stored
/// length: caught here instead of misreading the field after the options.
#[test]
fn a_fixed_size_disagreeing_with_the_fields() {
    let body = spec(&FIXED.replace("fixed_size = 9", "fixed_size = 5"));
    assert_eq!(
        error(&body),
        "spec/test.toml: struct Options, fixed_size: fixed_size = 5, but the fields take 9 bytes"
    );
}

#[test]
fn a_fixed_size_on_a_struct_with_a_gated_field() {
    let body = spec(&format!(
        "{}since = 19\ndefault = \"0\"\n",
        FIXED.replace(
            "[[struct]]\nname = \"Options\"",
            "[[struct]]\nname = \"Options\"\nparams = [{ name = \"version\", type = \"u32\" }]"
        )
    ));
    assert_eq!(
        error(&body),
        "spec/test.toml: struct Options, fixed_size: fixed_size = 9, but the fields take no fixed number of bytes (field window is gated or conditional)"
    );
}

#[test]
fn a_folder_listed_whole_without_what_fails() {
    let body = spec(
        r#"
[[folder]]
path = "__schema"
in = ["array"]
listed_whole = true
loaded_as = "a schema"
reason = "every file is loaded"
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: folder \"__schema\": listed_whole needs loaded_as and refusal (what TileDB loads each file as, what fails beside an unexpected one)"
    );
}

#[test]
fn initial_on_a_gated_field() {
    let body = spec(
        r#"
[[struct]]
name = "S"
params = [{ name = "version", type = "u32" }]

[[struct.field]]
name = "a"
type = "bool"
since = 5
initial = true
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field a: initial applies to a kept field that is always present"
    );
}

#[test]
fn initial_of_the_wrong_type() {
    let body = spec(
        r#"
[[struct]]
name = "S"

[[struct.field]]
name = "a"
type = "u32"
initial = true
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field a: initial is a bool literal for a bool, an integer literal for an integer"
    );
}

#[test]
fn or_end_without_a_terminator() {
    let body = spec(
        r#"
[[struct]]
name = "S"

[[struct.field]]
name = "a"
type = "bytes"
until_eof = true
or_end = true
"#,
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field a: or_end applies to bytes with a terminator"
    );
}
