//! Malformed specs, switches over an open enum (`enum = …` on a switch whose
//! selector is a plain integer, as `FooterSection.data` switches on the
//! section id): the fallback for unknown values is required, every known
//! variant is listed unless the default takes it on purpose, the keys name
//! variants and the selector is an integer. Each test asserts the exact
//! message: the file, the key path and what is wrong.

use crate::spec_fixture::{error, run, spec};

/// A struct whose `data` switches on the integer `id` read as `Datatype`.
const OPEN_SWITCH: &str = r#"
[[struct]]
name = "Small"

[[struct]]
name = "Other"

[[struct]]
name = "Raw"
params = [{ name = "size", type = "u64", doc = "bytes" }]

[[struct.field]]
name = "data"
type = "bytes"
size = "size"

[[struct]]
name = "S"

[[struct.field]]
name = "id"
type = "u64"

[[struct.field]]
name = "data_size"
type = "u32"
size_of = "data"

[[struct.field]]
name = "data"
size = "data_size"
"#;

fn with_type(ty: &str, args: &str) -> String {
    spec(&format!("{OPEN_SWITCH}type = {ty}\n{args}"))
}

#[test]
fn an_open_switch_with_every_variant_and_a_fallback_is_accepted() {
    let body = with_type(
        r#"{ switch_on = "id", enum = "Datatype", cases = { INT32 = "Small", STRING_ASCII = "Other" }, default = "Raw" }"#,
        "args = { size = \"data_size\" }\n",
    );
    run(&body).expect("an open switch with its fallback");
}

/// Without a fallback, a section id written by a newer version would make
/// the whole file unreadable.
#[test]
fn an_open_switch_without_a_fallback() {
    let body = with_type(
        r#"{ switch_on = "id", enum = "Datatype", cases = { INT32 = "Small", STRING_ASCII = "Other" } }"#,
        "",
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field data: type.default: the switch over the open enum Datatype has no default for the values Datatype does not know; give one (a struct holding the bytes) so that newer files stay readable"
    );
}

/// A known id left out would silently be kept as bytes: loud unless said.
#[test]
fn an_open_switch_missing_a_known_variant() {
    let body = with_type(
        r#"{ switch_on = "id", enum = "Datatype", cases = { INT32 = "Small" }, default = "Raw" }"#,
        "args = { size = \"data_size\" }\n",
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field data: type.cases: the switch over Datatype sends STRING_ASCII to its default without saying why; list them in cases or errors, or give default_reason"
    );
}

#[test]
fn an_open_switch_naming_an_unknown_variant() {
    let body = with_type(
        r#"{ switch_on = "id", enum = "Datatype", cases = { INT32 = "Small", STRING_ASCII = "Other", INT99 = "Small" }, default = "Raw" }"#,
        "args = { size = \"data_size\" }\n",
    );
    assert_eq!(
        error(&body),
        "spec/test.toml: struct S, field data: switch case \"INT99\" is not a variant of Datatype"
    );
}

#[test]
fn an_open_switch_on_a_non_integer() {
    let body = spec(&format!(
        "{}type = {{ switch_on = \"flag\", enum = \"Datatype\", cases = {{ INT32 = \"Small\", STRING_ASCII = \"Other\" }}, default = \"Other\" }}\n",
        OPEN_SWITCH.replace("name = \"id\"\ntype = \"u64\"", "name = \"flag\"\ntype = \"bool\"")
    ));
    let message = error(&body);
    assert!(
        message.starts_with("spec/test.toml: struct S, field data: type.enum:")
            && message.contains("a switch over an open enum looks at a plain integer"),
        "{message}"
    );
}

/// The accepted open switch, exported: the `.ksy` switches on the integer
/// with the variants' values as keys and `_` taking the fallback; the JSON
/// model names the open enum.
#[test]
fn an_open_switch_is_exported_to_ksy_and_json() {
    let body = with_type(
        r#"{ switch_on = "id", enum = "Datatype", cases = { INT32 = "Small", STRING_ASCII = "Other" }, default = "Raw" }"#,
        "args = { size = \"data_size\" }\n",
    )
    .replace(
        "[[struct]]\nname = \"S\"\n",
        "[[struct]]\nname = \"S\"\ncontainer = \"generic_tile\"\n",
    );
    let dir = tempfile::tempdir().expect("temp dir");
    crate::spec_fixture::write_spec(dir.path(), &crate::spec_fixture::format(), &body);
    let ksy = tiledb_codegen::export(dir.path(), tiledb_codegen::EmitKind::Ksy).expect("ksy");
    let (_, text) = ksy
        .iter()
        .find(|(name, text)| name.ends_with(".ksy") && text.contains("switch-on: id"))
        .unwrap_or_else(|| panic!("no .ksy switches on id: {ksy:?}"));
    for case in ["\"0\": small", "\"11\": other", "_: \"raw(data_size)\""] {
        assert!(text.contains(case), "{case} missing:\n{text}");
    }
    let json = tiledb_codegen::export(dir.path(), tiledb_codegen::EmitKind::Json).expect("json");
    assert!(
        json.iter()
            .any(|(_, text)| text.contains("\"open_enum\": \"Datatype\"")),
        "the JSON model names the open enum"
    );
}
