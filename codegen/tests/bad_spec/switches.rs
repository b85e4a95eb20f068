//! Malformed specs, switches: unknown variants, values both a case and an
//! error, and a switch over an enum that does not list every variant.
//! Each test asserts the exact message: the file, the key path and what is wrong.

use crate::spec_fixture::{error, run, spec};

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

const SWITCH: &str = r#"
[[struct]]
name = "Small"

[[struct]]
name = "Other"

[[struct]]
name = "S"

[[struct.field]]
name = "datatype"
type = "Datatype"

[[struct.field]]
name = "options"
"#;

#[test]
fn a_switch_listing_every_variant_is_accepted() {
    let body = spec(&format!(
        "{SWITCH}type = {{ switch_on = \"datatype\", cases = {{ INT32 = \"Small\", STRING_ASCII = \"Other\" }} }}\n"
    ));
    run(&body).expect("an exhaustive switch");
}

/// A variant added to the enum but not to the switch: without a default the
/// value would have no layout at all.
#[test]
fn a_switch_leaving_a_variant_out() {
    let body = spec(&format!(
        "{SWITCH}type = {{ switch_on = \"datatype\", cases = {{ INT32 = \"Small\" }} }}\n"
    ));
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field options: type.cases: the switch over Datatype does not list STRING_ASCII; list them in cases or errors, or give a default with default_reason"
    );
}

/// The measured failure: a filter type missing from the options switch fell
/// back to "no options" and would misread the next field.
#[test]
fn a_default_catching_variants_without_a_reason() {
    let body = spec(&format!(
        "{SWITCH}type = {{ switch_on = \"datatype\", cases = {{ INT32 = \"Small\" }}, default = \"Other\" }}\n"
    ));
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field options: type.cases: the switch over Datatype sends STRING_ASCII to its default without saying why; list them in cases or errors, or give default_reason"
    );
}

#[test]
fn a_default_on_purpose_is_accepted() {
    let body = spec(&format!(
        "{SWITCH}type = {{ switch_on = \"datatype\", cases = {{ INT32 = \"Small\" }}, default = \"Other\", default_reason = \"every other type has no options\" }}\n"
    ));
    run(&body).expect("a default with its reason");
}

#[test]
fn an_error_counts_as_listing_a_variant() {
    let body = spec(&format!(
        "{SWITCH}type = {{ switch_on = \"datatype\", cases = {{ INT32 = \"Small\" }}, errors = {{ STRING_ASCII = \"retired\" }} }}\n"
    ));
    run(&body).expect("every variant is a case or an error");
}

#[test]
fn a_default_reason_without_a_default() {
    let body = spec(&format!(
        "{SWITCH}type = {{ switch_on = \"datatype\", cases = {{ INT32 = \"Small\", STRING_ASCII = \"Other\" }}, default_reason = \"why\" }}\n"
    ));
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field options: type.default_reason: there is no default for it to explain"
    );
}
