//! The small spec the `bad_spec` tests start from: a format.toml with a
//! history for every version, a small enums.toml, and the `test.toml` each
//! test writes.

#![allow(dead_code)] // each test file uses a part

use std::path::Path;

use tiledb_codegen::{generate, SpecError};

/// The `[upstream]` table every format.toml has.
pub const UPSTREAM: &str = r#"
[upstream]
repository = "TileDB-Inc/TileDB"
format_spec_commit = "797cf85be7cf88f54832b8accae657a46795689d"
release_tag = "2.30.0"
release_commit = "9b5305d3c8e159f0eeb4e14560e4ca24699ada95"
"#;

/// `format.toml` with `current`, `oldest` and one history entry for each of
/// `history` (the versions `oldest..=current` unless a test leaves one out).
pub fn format_toml(current: u32, extra: &str, history: impl IntoIterator<Item = u32>) -> String {
    let mut text = format!(
        "current = {current}\noldest = 1\n{extra}\n[file]\ntitle = \"Format versions\"\nmodule = \"format\"\n{UPSTREAM}"
    );
    for number in history {
        text.push_str(&format!(
            "\n[[version]]\nnumber = {number}\nchanges = [\"version {number}\"]\n"
        ));
    }
    text
}

/// The format.toml of most tests: current = 23, oldest = 1, a full history.
pub fn format() -> String {
    format_toml(23, "reads = 23\nwrites = 22", 1..=23)
}

pub const ENUMS: &str = r#"
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

/// Writes format.toml, enums.toml and `test.toml` into `dir`.
pub fn write_spec(dir: &Path, format_toml: &str, test_toml: &str) {
    write(dir, "format.toml", format_toml);
    write(dir, "enums.toml", ENUMS);
    write(dir, "test.toml", test_toml);
}

/// Generates from a spec made of format.toml, a small enums.toml and `test.toml`.
pub fn run(test_toml: &str) -> Result<(), SpecError> {
    run_with_format(&format(), test_toml)
}

/// Like [`run`] with another format.toml.
pub fn run_with_format(format_toml: &str, test_toml: &str) -> Result<(), SpecError> {
    let dir = tempfile::tempdir().expect("temp dir");
    write_spec(dir.path(), format_toml, test_toml);
    generate(dir.path()).map(|_| ())
}

pub fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write spec file");
}

/// The message of the error, asserting that generation failed.
pub fn error(test_toml: &str) -> String {
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

/// A test.toml: the file header, then `body`.
pub fn spec(body: &str) -> String {
    format!("{HEADER}\n{body}")
}
