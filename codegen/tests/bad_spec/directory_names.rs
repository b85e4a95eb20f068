//! The names of `directory.toml`: folder constants, `[[file_name]]` and
//! `[[extension]]`. A well-formed table generates its constants and the
//! `Extension` enum; each malformed one fails naming the file, the entry
//! and what is wrong.

use crate::spec_fixture::{error, format, spec, write_spec};

const FOLDERS: &str = r#"
[[folder]]
path = "__commits"
constant = "COMMITS_DIR"
in = ["array"]
since = 12
reason = "picked by extension"
"#;

#[test]
fn names_generate_constants_and_the_extension_enum() {
    let body = spec(&format!(
        r#"{FOLDERS}
[[file_name]]
name = "__fragment_metadata.tdb"
constant = "FRAGMENT_METADATA_FILE"
in = "fragment"
doc = "The fragment's metadata."

[[extension]]
variant = "Wrt"
suffix = ".wrt"
folder = "__commits"
doc = "A commit marker."
"#
    ));
    let dir = tempfile::tempdir().unwrap();
    write_spec(dir.path(), &format(), &body);
    let generated = tiledb_codegen::generate(dir.path()).expect("a valid spec");
    let module = generated
        .files
        .iter()
        .find(|(path, _)| path.ends_with("test.rs"))
        .map(|(_, text)| text.clone())
        .expect("the test module");
    assert!(
        module.contains("pub const COMMITS_DIR: &str = \"__commits\";"),
        "{module}"
    );
    assert!(
        module.contains("pub const FRAGMENT_METADATA_FILE: &str = \"__fragment_metadata.tdb\";")
    );
    assert!(module.contains("Extension::Wrt => \".wrt\""));
    // The extension inherits its folder's version: no file in __commits/ before 12.
    assert!(module.contains("Extension::Wrt => Some(12u32)"), "{module}");
}

#[test]
fn a_constant_naming_two_texts_fails() {
    let body = spec(&format!(
        r#"{FOLDERS}
[[file_name]]
name = "__lock.tdb"
constant = "COMMITS_DIR"
in = "array"
doc = "A lock."
"#
    ));
    assert_eq!(
        error(&body),
        "spec/test.toml: constant \"COMMITS_DIR\": constant \"COMMITS_DIR\" is declared twice"
    );
}

#[test]
fn an_extension_in_an_unknown_folder_fails() {
    let body = spec(&format!(
        r#"{FOLDERS}
[[extension]]
variant = "Del"
suffix = ".del"
folder = "__deletes"
doc = "A delete."
"#
    ));
    assert_eq!(
        error(&body),
        "spec/test.toml: extension \".del\": folder: \"__deletes\" is no [[folder]] path"
    );
}

#[test]
fn a_suffix_without_its_dot_fails() {
    let body = spec(&format!(
        r#"{FOLDERS}
[[extension]]
variant = "Del"
suffix = "del"
doc = "A delete."
"#
    ));
    assert_eq!(
        error(&body),
        "spec/test.toml: extension \"del\": suffix: a dot and lowercase letters, e.g. \".wrt\""
    );
}

#[test]
fn a_file_name_in_an_unknown_place_fails() {
    let body = spec(&format!(
        r#"{FOLDERS}
[[file_name]]
name = "x.tdb"
constant = "X_FILE"
in = "tile"
doc = "?"
"#
    ));
    assert_eq!(
        error(&body),
        "spec/test.toml: file_name \"x.tdb\": in: \"tile\" is not \"array\", \"group\" or \"fragment\""
    );
}
