//! The JSON report round-trips: what `--json FILE` writes reads back as the same report, and
//! renders the same text.

mod runner_common;

use std::time::Duration;

use runner_common::*;
use tiledb_conformance::{run, Adapter, Report, RuntimeAdapter, Selection, Status};

fn round_trip(report: &Report) {
    let text = report.to_json();
    let back = Report::from_json(&text).unwrap();
    assert_eq!(&back, report);
    assert_eq!(back.render_text(), report.render_text());
    assert_eq!(back.to_json(), text);
}

#[test]
fn a_report_of_our_runtime_round_trips() {
    let mut adapters: Vec<Box<dyn Adapter>> = vec![Box::new(RuntimeAdapter::new())];
    let report = run(
        &config(corpus_only(&["sparse.*"])),
        &mut adapters,
        &mut |_| {},
    )
    .unwrap();
    assert!(!report.results.is_empty());
    round_trip(&report);
}

#[test]
fn a_report_with_failures_and_live_cells_round_trips() {
    let Some(py) = tiledb_py("a_report_with_failures_and_live_cells_round_trips") else {
        return;
    };
    let broken = double(&py, "flip_one_value.py", &["--case", "dense.basic.int32"]);
    let mut adapters = vec![
        start(py, Duration::from_secs(120)),
        start(broken, Duration::from_secs(120)),
        Box::new(RuntimeAdapter::new()),
    ];
    let selection = Selection {
        cases: vec![
            "dense.basic.int32".into(),
            "negative.schema.truncated".into(),
        ],
        live: true,
        ..Selection::default()
    };
    let report = run(&config(selection), &mut adapters, &mut |_| {}).unwrap();
    for status in [Status::Pass, Status::Fail, Status::NotApplicable] {
        assert!(
            report.results.iter().any(|r| r.status == status),
            "no {status:?} result to round-trip"
        );
    }
    assert!(report.producers.iter().any(|p| p.live));
    assert!(report.results.iter().any(|r| r.role == "writer"));
    round_trip(&report);
}

#[test]
fn a_document_that_is_not_a_report_is_refused() {
    assert!(Report::from_json("{\"results\": []}").is_err());
    assert!(Report::from_json("not json").is_err());
}
