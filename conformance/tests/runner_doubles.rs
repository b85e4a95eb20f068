//! The runner against adapters that misbehave on purpose (tests/doubles): a changed value is
//! a failure with a diff, a crash is a crash and a hang is a timeout, and in every case the
//! suite goes on to the next case.

mod runner_common;

use std::time::{Duration, Instant};

use runner_common::*;
use tiledb_conformance::{run, Adapter, ProcessAdapter, Report, Selection, Status};

const FLIPPED: &str = "dense.basic.int32";
const OTHERS: [&str; 3] = [
    "dense.attr.int8",
    "sparse.basic.int32",
    "negative.schema.truncated",
];

fn cases() -> Vec<&'static str> {
    let mut out = vec![FLIPPED];
    out.extend(OTHERS);
    out
}

fn statuses_of(report: &Report, implementation: &str, case: &str) -> Vec<Status> {
    report
        .results
        .iter()
        .filter(|r| r.implementation == implementation && r.case == case)
        .filter(|r| r.status != Status::NotApplicable)
        .map(|r| r.status)
        .collect()
}

#[test]
fn a_changed_value_is_a_failure_with_a_diff() {
    let Some(py) = tiledb_py("a_changed_value_is_a_failure_with_a_diff") else {
        return;
    };
    let broken = double(&py, "flip_one_value.py", &["--case", FLIPPED]);
    let mut adapters = vec![start(broken, Duration::from_secs(120))];
    let report = run(&config(corpus_only(&cases())), &mut adapters, &mut |_| {}).unwrap();

    let failures: Vec<_> = report
        .results
        .iter()
        .filter(|r| r.status == Status::Fail)
        .collect();
    // Every read of the case, from every producer that holds it (both reads
    // from at least TileDB 2.30 and 2.13); nothing else.
    let compared = report
        .results
        .iter()
        .filter(|r| r.case == FLIPPED && r.status != Status::NotApplicable)
        .count();
    assert_eq!(failures.len(), compared, "{}", report.render_text());
    assert!(failures.len() >= 4, "{}", report.render_text());
    for f in &failures {
        assert_eq!(f.case, FLIPPED);
        assert_eq!(f.implementation, "flip-one-value");
        let diff = f.detail.as_deref().unwrap();
        assert!(diff.starts_with("1 of "), "{diff}");
        assert!(diff.contains("row 0: expected"), "{diff}");
        let expected = format!(
            "tdb conformance --case {FLIPPED} --producer {} --read {} --reader flip-one-value",
            f.producer,
            f.read.as_deref().unwrap()
        );
        assert_eq!(f.repro, expected);
    }
    // The "all" read of the 2.30 corpus: the first row is (1, 1, 1) and the double made it 2.
    let all = failures
        .iter()
        .find(|f| f.producer == "tiledb-2.30" && f.read.as_deref() == Some("all"))
        .unwrap();
    assert!(
        all.detail
            .as_deref()
            .unwrap()
            .contains("row 0: expected [1,1,1], got [1,1,2]"),
        "{:?}",
        all.detail
    );
    for case in OTHERS {
        let s = statuses_of(&report, "flip-one-value", case);
        assert!(
            !s.is_empty() && s.iter().all(|s| *s == Status::Pass),
            "{case}: {s:?}"
        );
    }
    assert!(!report.succeeded());
    let summary = format!("FAILED: {} unexpected results", failures.len());
    assert!(
        report.render_text().contains(&summary),
        "no line {summary:?}"
    );
}

fn misbehaving_run(lead: &[&str], timeout: Duration) -> Option<Report> {
    let py = tiledb_py("misbehaving adapter")?;
    let mut adapters = vec![start(double(&py, "misbehave.py", lead), timeout)];
    let mut selection = corpus_only(&cases());
    // One producer: the hanging case then costs two time limits, not four.
    selection.producers = vec!["tiledb-2.30".into()];
    Some(run(&config(selection), &mut adapters, &mut |_| {}).unwrap())
}

fn assert_suite_went_on(report: &Report, bad: Status) {
    let s = statuses_of(report, "misbehave", FLIPPED);
    assert!(!s.is_empty() && s.iter().all(|s| *s == bad), "{s:?}");
    for case in OTHERS {
        let s = statuses_of(report, "misbehave", case);
        assert!(
            !s.is_empty() && s.iter().all(|s| *s == Status::Pass),
            "{case}: {s:?}"
        );
    }
    assert!(!report.succeeded());
}

#[test]
fn a_crashing_serve_adapter_is_reported_and_restarted() {
    let Some(report) = misbehaving_run(&["--crash-on", FLIPPED], Duration::from_secs(120)) else {
        return;
    };
    assert_suite_went_on(&report, Status::Crash);
    let crash = report
        .results
        .iter()
        .find(|r| r.status == Status::Crash)
        .unwrap();
    let detail = crash.detail.as_deref().unwrap();
    assert!(detail.contains("exit status: 3"), "{detail}");
    assert!(detail.contains("crashing on purpose"), "{detail}");
}

#[test]
fn a_crash_a_fresh_serve_process_does_not_repeat_passes_with_a_note() {
    let Some(report) =
        misbehaving_run(&["--crash-when-used-on", FLIPPED], Duration::from_secs(120))
    else {
        return;
    };
    for case in cases() {
        let s = statuses_of(&report, "misbehave", case);
        assert!(
            !s.is_empty() && s.iter().all(|s| *s == Status::Pass),
            "{case}: {s:?}"
        );
    }
    // Every read of the case after the first in a process crashed there once.
    let noted: Vec<&str> = report
        .results
        .iter()
        .filter(|r| r.case == FLIPPED)
        .filter_map(|r| r.detail.as_deref())
        .filter(|d| d.contains("a fresh process answered it"))
        .collect();
    assert!(!noted.is_empty(), "{}", report.render_text());
    for note in noted {
        assert!(
            note.contains("aborting in a used process on purpose"),
            "{note}"
        );
    }
}

#[test]
fn a_crashing_one_shot_adapter_is_reported() {
    let Some(report) = misbehaving_run(
        &["--crash-on", FLIPPED, "--no-serve"],
        Duration::from_secs(120),
    ) else {
        return;
    };
    assert_suite_went_on(&report, Status::Crash);
    let crash = report
        .results
        .iter()
        .find(|r| r.status == Status::Crash)
        .unwrap();
    assert!(
        crash
            .detail
            .as_deref()
            .unwrap()
            .contains("exited with exit status: 3"),
        "{:?}",
        crash.detail
    );
}

#[test]
fn an_adapter_without_serve_runs_one_process_per_request() {
    let Some(py) = tiledb_py("an_adapter_without_serve_runs_one_process_per_request") else {
        return;
    };
    let lead = ["--crash-on", FLIPPED, "--no-serve"];
    let one_shot =
        ProcessAdapter::start(double(&py, "misbehave.py", &lead), Duration::from_secs(60)).unwrap();
    assert!(!one_shot.serves());
    assert_eq!(one_shot.info().name, "misbehave");
    let serving = ProcessAdapter::start(
        double(&py, "misbehave.py", &lead[..2]),
        Duration::from_secs(60),
    )
    .unwrap();
    assert!(serving.serves());
}

#[test]
fn a_hanging_adapter_times_out() {
    let started = Instant::now();
    // Long enough for a restarted adapter to import TileDB on a busy machine.
    let limit = Duration::from_secs(10);
    let Some(report) = misbehaving_run(&["--hang-on", FLIPPED], limit) else {
        return;
    };
    assert_suite_went_on(&report, Status::Timeout);
    // Two hung reads at 10 s each, plus the real work: nowhere near the hour it sleeps.
    assert!(started.elapsed() < Duration::from_secs(120));
}

#[test]
fn a_replay_the_oracle_cannot_read_is_the_writers_failure() {
    let Some(py) = tiledb_py("a_replay_the_oracle_cannot_read_is_the_writers_failure") else {
        return;
    };
    let writer = double(&py, "misbehave.py", &["--empty-write-on", FLIPPED]);
    let mut adapters = vec![
        start(py, Duration::from_secs(120)),
        start(writer, Duration::from_secs(120)),
    ];
    let selection = Selection {
        cases: vec![FLIPPED.into(), "sparse.basic.int32".into()],
        producers: vec!["live:misbehave".into()],
        readers: vec!["tiledb-py".into()],
        live: true,
        ..Selection::default()
    };
    let report = run(&config(selection), &mut adapters, &mut |_| {}).unwrap();
    let write = |case: &str| {
        report
            .results
            .iter()
            .find(|r| r.role == "writer" && r.case == case)
            .unwrap()
            .clone()
    };
    let empty = write(FLIPPED);
    assert_eq!(empty.status, Status::Fail, "{empty:?}");
    assert!(
        empty
            .detail
            .as_deref()
            .unwrap()
            .starts_with("the replay does not read back"),
        "{:?}",
        empty.detail
    );
    assert_eq!(write("sparse.basic.int32").status, Status::Pass);
    assert!(!report.succeeded());
}
