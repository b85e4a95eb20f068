//! Malformed specs, versions: format.toml's `current` and the history of
//! versions. Each test asserts the exact message: the file, the key and what
//! is wrong.

use std::path::Path;

use crate::spec_fixture::{run, run_with_format, spec};

/// What the implementation reads and writes, as the fixture states it.
const SUPPORT: &str = "reads = 23\nwrites = 22";

fn format_error(format_toml: &str) -> String {
    match run_with_format(format_toml, &spec("")) {
        Ok(()) => panic!("the format was accepted:\n{format_toml}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn the_fixture_is_accepted() {
    run(&spec("")).expect("a full history");
}

/// The measured failure: bumping `current` without a history entry went
/// unnoticed and silently raised the newest version the runtime accepts.
#[test]
fn current_without_a_history_entry() {
    let format = crate::spec_fixture::format_toml(24, SUPPORT, 1..=23);
    assert_eq!(
        format_error(&format),
        "spec/format.toml: current: version 24 has no [[version]] entry in the history; add one saying what it changed"
    );
}

#[test]
fn a_gap_in_the_history() {
    let format = crate::spec_fixture::format_toml(23, SUPPORT, (1..=23).filter(|v| *v != 7));
    assert_eq!(
        format_error(&format),
        "spec/format.toml: version: version 7 has no [[version]] entry in the history; add one saying what it changed"
    );
}

#[test]
fn a_history_entry_above_current() {
    let format = crate::spec_fixture::format_toml(23, SUPPORT, 1..=24);
    assert_eq!(
        format_error(&format),
        "spec/format.toml: version 24: a history entry above current = 23"
    );
}

#[test]
fn reads_above_current() {
    let format = crate::spec_fixture::format_toml(23, "reads = 24\nwrites = 22", 1..=23);
    assert_eq!(
        format_error(&format),
        "spec/format.toml: reads: reads = 24 is outside 1..=23 (oldest..=current)"
    );
}

#[test]
fn writes_above_reads() {
    let format = crate::spec_fixture::format_toml(23, "reads = 21\nwrites = 22", 1..=23);
    assert_eq!(
        format_error(&format),
        "spec/format.toml: writes: writes = 22 is outside 1..=21 (oldest..=reads)"
    );
}

/// The supported versions are stated, never implied by `current`.
#[test]
fn reads_and_writes_are_required() {
    let format = crate::spec_fixture::format_toml(23, "", 1..=23);
    let message = format_error(&format);
    assert!(
        message.starts_with("spec/format.toml: ") && message.contains("missing field `reads`"),
        "{message}"
    );
}

fn copy_spec(to: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec");
    for entry in std::fs::read_dir(from).expect("spec/").flatten() {
        if entry.path().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
        }
    }
}

/// The real spec: bumping `current` alone (no history entry) fails, and
/// leaves what the runtime reads and writes where `reads`/`writes` put them.
#[test]
fn bumping_current_in_the_real_spec_without_history_fails() {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_spec(dir.path());
    tiledb_codegen::generate(dir.path()).expect("the checked-in spec is valid");
    let format_path = dir.path().join("format.toml");
    let text = std::fs::read_to_string(&format_path).expect("format.toml");
    let mut format: toml::Table = text.parse().expect("TOML");
    let current = format["current"].as_integer().expect("current");
    format.insert("current".into(), toml::Value::Integer(current + 1));
    std::fs::write(&format_path, toml::to_string(&format).expect("TOML")).expect("write");
    let err = tiledb_codegen::generate(dir.path()).expect_err("current without history");
    assert_eq!(
        err.to_string(),
        format!(
            "spec/format.toml: current: version {} has no [[version]] entry in the history; add one saying what it changed",
            current + 1
        )
    );
}

#[test]
fn an_upstream_commit_that_is_not_a_commit_id() {
    let format = crate::spec_fixture::format_toml(23, SUPPORT, 1..=23)
        .replace("797cf85be7cf88f54832b8accae657a46795689d", "main");
    assert_eq!(
        format_error(&format),
        "spec/format.toml: upstream.format_spec_commit: \"main\" is not a full 40-digit commit id"
    );
}

#[test]
fn a_fact_of_an_unknown_kind() {
    let format = format!(
        "{}\n[[fact]]\nname = \"block\"\nkind = \"trivia\"\nstatement = \"s\"\nsource = \"f.cc\"\n",
        crate::spec_fixture::format_toml(23, SUPPORT, 1..=23)
    );
    assert_eq!(
        format_error(&format),
        "spec/format.toml: fact block: kind = \"trivia\": a fact is an \"erratum\" (upstream is wrong) or \"missing\" (upstream says nothing)"
    );
}

fn with_gate(gate: &str) -> String {
    format!(
        "{}\n[[gate]]\n{gate}\ndoc = \"d\"\nsource = \"f.cc\"\n",
        crate::spec_fixture::format_toml(23, SUPPORT, 1..=23)
    )
}

#[test]
fn a_behaviour_gate_without_bounds() {
    assert_eq!(
        format_error(&with_gate("name = \"always\"")),
        "spec/format.toml: gate always: a gate needs since or until (else it holds for every version)"
    );
}

#[test]
fn a_behaviour_gate_beyond_the_next_version() {
    let message = format_error(&with_gate("name = \"later\"\nsince = 30"));
    assert!(
        message.starts_with("spec/format.toml: gate later: since = 30"),
        "{message}"
    );
}

#[test]
fn an_inverted_behaviour_gate() {
    let message = format_error(&with_gate("name = \"never\"\nsince = 12\nuntil = 10"));
    assert!(
        message
            .starts_with("spec/format.toml: gate never: since = 12 is not lower than until = 10"),
        "{message}"
    );
}

#[test]
fn a_behaviour_gate_named_twice() {
    let format = format!(
        "{}[[gate]]\nname = \"twice\"\nsince = 3\ndoc = \"d\"\nsource = \"f.cc\"\n",
        with_gate("name = \"twice\"\nsince = 2")
    );
    let message = format_error(&format);
    assert!(
        message.starts_with("spec/format.toml: gate twice:") && message.contains("twice"),
        "{message}"
    );
}
