//! Known failures: a listed failure is expected, a listed failure that passes fails the run,
//! and an entry that cannot match anything (no such case or read) fails the run too.

mod runner_common;

use std::fs;
use std::path::Path;
use std::time::Duration;

use runner_common::*;
use tiledb_conformance::{run, Adapter, Report, RuntimeAdapter, Status};

/// A conformance folder with the real cases and these known-failure files.
fn kit_with(known: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(conformance_dir().join("cases"), dir.path().join("cases")).unwrap();
    let kf = dir.path().join("known_failures");
    fs::create_dir(&kf).unwrap();
    for (implementation, text) in known {
        fs::write(kf.join(format!("{implementation}.toml")), text).unwrap();
    }
    dir
}

/// Runs the cases against the two full corpora (TileDB 2.30 and 2.13), whose
/// reads the counts below are written for.
fn run_in(kit: &Path, adapters: &mut [Box<dyn Adapter>], cases: &[&str]) -> Report {
    let mut selection = corpus_only(cases);
    selection.producers = vec!["tiledb-2.30".into(), "tiledb-2.13".into()];
    run(&config_in(kit, selection), adapters, &mut |_| {}).unwrap()
}

#[test]
fn a_listed_failure_is_expected() {
    let Some(py) = tiledb_py("a_listed_failure_is_expected") else {
        return;
    };
    let kit = kit_with(&[(
        "flip-one-value",
        "[[failure]]\ncase = \"dense.basic.int32\"\nreason = \"the double changes a value\"\n",
    )]);
    let broken = double(&py, "flip_one_value.py", &["--case", "dense.basic.int32"]);
    let mut adapters = vec![start(broken, Duration::from_secs(120))];
    let report = run_in(
        kit.path(),
        &mut adapters,
        &["dense.basic.int32", "sparse.basic.int32"],
    );
    let listed: Vec<_> = report
        .results
        .iter()
        .filter(|r| r.case == "dense.basic.int32")
        .collect();
    assert_eq!(listed.len(), 4);
    for r in listed {
        assert_eq!(r.status, Status::ExpectedFailure, "{r:?}");
        assert_eq!(
            r.known_failure.as_deref(),
            Some("the double changes a value")
        );
        let detail = r.detail.as_deref().unwrap();
        assert!(detail.starts_with("fail: 1 of "), "{detail}");
        assert!(
            detail.contains("row 0: expected"),
            "the diff is kept: {detail}"
        );
    }
    assert!(report.succeeded(), "{}", report.render_text());
}

#[test]
fn a_listed_failure_that_passes_fails_the_run() {
    let Some(py) = tiledb_py("a_listed_failure_that_passes_fails_the_run") else {
        return;
    };
    let kit = kit_with(&[(
        "tiledb-py",
        "[[failure]]\ncase = \"dense.basic.int32\"\nread = \"col-major\"\nproducer = \"tiledb-2.30\"\nreason = \"fixed long ago\"\n",
    )]);
    let mut adapters = vec![start(py, Duration::from_secs(120))];
    let report = run_in(kit.path(), &mut adapters, &["dense.basic.int32"]);
    let xpass: Vec<_> = report
        .results
        .iter()
        .filter(|r| r.status == Status::UnexpectedPass)
        .collect();
    assert_eq!(xpass.len(), 1, "{}", report.render_text());
    assert_eq!(xpass[0].read.as_deref(), Some("col-major"));
    assert_eq!(xpass[0].producer, "tiledb-2.30");
    // The other reads are not covered by the entry and pass.
    assert_eq!(
        report
            .results
            .iter()
            .filter(|r| r.status == Status::Pass)
            .count(),
        3
    );
    assert!(!report.succeeded());
    assert!(report.render_text().contains("remove the entry"));
}

#[test]
fn an_entry_that_matches_nothing_is_stale() {
    let kit = kit_with(&[(
        "tiledb-runtime",
        "[[failure]]\ncase = \"no.such.case\"\nreason = \"renamed\"\n\n\
         [[failure]]\ncase = \"dense.basic.int32\"\nread = \"no-such-read\"\nreason = \"renamed\"\n",
    ), (
        // A valid entry of an implementation that is not in the run is not stale.
        "elsewhere",
        "[[failure]]\ncase = \"dense.basic.int32\"\nread = \"all\"\nreason = \"still true\"\n",
    )]);
    let mut adapters: Vec<Box<dyn Adapter>> = vec![Box::new(RuntimeAdapter::new())];
    let report = run_in(kit.path(), &mut adapters, &["dense.basic.int32"]);
    let stale: Vec<_> = report
        .stale_known_failures
        .iter()
        .map(|s| (s.entry.case.as_str(), s.entry.read.as_deref()))
        .collect();
    assert_eq!(
        stale,
        [
            ("no.such.case", None),
            ("dense.basic.int32", Some("no-such-read"))
        ]
    );
    assert_eq!(report.unexpected_count(), 2);
    assert!(!report.succeeded());
    assert!(report.render_text().contains("STALE"));
}

#[test]
fn the_shipped_known_failure_lists_are_current() {
    let mut adapters: Vec<Box<dyn Adapter>> = vec![Box::new(RuntimeAdapter::new())];
    let report = run(
        &config(corpus_only(&["dense.basic.int32"])),
        &mut adapters,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(report.stale_known_failures, []);
}
