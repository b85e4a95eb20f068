//! Malformed specs, `[struct.known_size]`: the stored size of a struct as a
//! reader computes it before reading it (the fragment footer of versions
//! 3-9, found from the end of its file). Its expressions may use the
//! struct's params and its declared inputs only — never a field, which is
//! unknown until the struct is read — `when` is a condition and `size` an
//! integer. Each test asserts the exact message: the file, the key and what
//! is wrong; the first shows the well-formed entry is accepted.

use crate::spec_fixture::{format, run_with_format, spec};

/// A gate the size condition calls, as the real spec's calls
/// `footer_length_always_stored`.
const GATE: &str = r#"
[[gate]]
name = "length_always_stored"
since = 10
doc = "the length trailer is always written"
source = "test"
"#;

/// A footer-like struct whose known size is replaced by each test.
fn footer(known_size: &str) -> String {
    spec(&format!(
        r#"
[[context]]
name = "Shape"
fields = [
  {{ name = "var", type = "bool" }},
  {{ name = "coord_size", type = "u64" }},
]

[[struct]]
name = "Footer"
params = [
  {{ name = "count", type = "u64" }},
  {{ name = "dims", type = "Vec<Shape>" }},
]

[struct.known_size]
doc = "the footer's size"
{known_size}

[[struct.field]]
name = "version"
type = "u32"

[[struct.field]]
name = "values"
type = "u64"
count = "count"
"#
    ))
}

const INPUTS: &str = r#"inputs = [{ name = "named_version", type = "u32" }]"#;
const WHEN: &str = r#"when = "!length_always_stored(named_version) && !any(dims, |d| d.var)""#;
const SIZE: &str = r#"size = "sum(dims, |d| 2 * d.coord_size) + 4 + 8 * count""#;

fn run(known_size: &str) -> Result<(), tiledb_codegen::SpecError> {
    run_with_format(&format!("{}{GATE}", format()), &footer(known_size))
}

fn error(known_size: &str) -> String {
    match run(known_size) {
        Ok(()) => panic!("the spec was accepted:\n{known_size}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn a_well_formed_known_size_is_accepted() {
    run(&format!("{INPUTS}\n{WHEN}\n{SIZE}")).expect("accepted");
}

/// The mistake the key exists to stop: a size that needs the struct read
/// first (here its `version` field instead of the named version input).
#[test]
fn a_size_naming_a_field() {
    assert_eq!(
        error(&format!("{INPUTS}\n{WHEN}\nsize = \"if version >= 7 {{ 8 }} else {{ 4 }}\"")),
        "spec/test.toml: struct Footer, known_size: size: `version` is a field of Footer, unknown before the struct is read; a known size uses only the params and inputs"
    );
}

#[test]
fn a_size_that_does_not_parse() {
    let message = error(&format!("{INPUTS}\n{WHEN}\nsize = \"8 * (count +\""));
    assert!(
        message.starts_with(
            "spec/test.toml: struct Footer, known_size: size: cannot parse \"8 * (count +\""
        ),
        "{message}"
    );
}

#[test]
fn a_size_that_is_a_condition() {
    assert_eq!(
        error(&format!("{INPUTS}\n{WHEN}\nsize = \"count > 0\"")),
        "spec/test.toml: struct Footer, known_size: size: is a bool where an integer is expected"
    );
}

#[test]
fn a_condition_that_is_a_number() {
    assert_eq!(
        error(&format!("{INPUTS}\nwhen = \"named_version\"\n{SIZE}")),
        "spec/test.toml: struct Footer, known_size: when: is a u32 where a condition (bool) is expected"
    );
}

#[test]
fn an_undeclared_input() {
    assert_eq!(
        error(&format!("{WHEN}\n{SIZE}")),
        "spec/test.toml: struct Footer, known_size: when refers to \"named_version\", which is not an earlier field or a param"
    );
}

#[test]
fn an_input_shadowing_a_param() {
    assert_eq!(
        error(&format!(
            "inputs = [{{ name = \"count\", type = \"u64\" }}]\nwhen = \"true\"\n{SIZE}"
        )),
        "spec/test.toml: struct Footer, known_size, input count: param or input \"count\" is declared twice"
    );
}

#[test]
fn a_fold_over_a_number() {
    assert_eq!(
        error(&format!(
            "{INPUTS}\n{WHEN}\nsize = \"sum(count, |d| d.coord_size)\""
        )),
        "spec/test.toml: struct Footer, known_size: size: `sum` takes a list first, not a u64"
    );
}

#[test]
fn a_fold_body_of_the_wrong_type() {
    assert_eq!(
        error(&format!("{INPUTS}\nwhen = \"any(dims, |d| d.coord_size)\"\n{SIZE}")),
        "spec/test.toml: struct Footer, known_size: when: is a u64 where a condition (bool) is expected"
    );
}

#[test]
fn an_unknown_key() {
    let message = error(&format!("{INPUTS}\n{WHEN}\n{SIZE}\nalways = true"));
    assert!(
        message.starts_with("spec/test.toml: ") && message.contains("unknown field `always`"),
        "{message}"
    );
}
