//! Malformed specs, versions: format.toml's `current` and the history of
//! versions. Each test asserts the exact message: the file, the key and what
//! is wrong.

mod spec_fixture;

use spec_fixture::{run, run_with_format, spec};

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
    let format = spec_fixture::format_toml(24, "", 1..=23);
    assert_eq!(
        format_error(&format),
        "spec/format.toml: current: version 24 has no [[version]] entry in the history; add one saying what it changed"
    );
}

#[test]
fn a_gap_in_the_history() {
    let format = spec_fixture::format_toml(23, "", (1..=23).filter(|v| *v != 7));
    assert_eq!(
        format_error(&format),
        "spec/format.toml: version: version 7 has no [[version]] entry in the history; add one saying what it changed"
    );
}

#[test]
fn a_history_entry_above_current() {
    let format = spec_fixture::format_toml(23, "", 1..=24);
    assert_eq!(
        format_error(&format),
        "spec/format.toml: version 24: a history entry above current = 23"
    );
}
