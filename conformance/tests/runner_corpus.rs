//! The runner on the shipped corpus with TileDB (through the tiledb-py adapter) as the reader:
//! TileDB must read back exactly what it recorded, for every read the corpus holds.

mod runner_common;

use std::collections::BTreeMap;
use std::fs;
use std::time::Duration;

use runner_common::*;
use serde_json::Value;
use tiledb_conformance::{run, Adapter, RuntimeAdapter, Selection, Status};

/// Reads with a recorded result (not skipped) per producer, counted straight from the files.
fn recorded_reads() -> BTreeMap<String, usize> {
    let corpus = conformance_dir().join("corpus");
    let manifest: Value =
        serde_json::from_str(&fs::read_to_string(corpus.join("MANIFEST.json")).unwrap()).unwrap();
    let mut out = BTreeMap::new();
    for (producer, p) in manifest["producers"].as_object().unwrap() {
        let mut n = 0;
        for case in p["cases"].as_object().unwrap().keys() {
            let path = corpus.join(producer).join(case).join("expected.json");
            let doc: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
            n += doc["reads"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r.get("skip").is_none())
                .count();
        }
        out.insert(producer.clone(), n);
    }
    out
}

#[test]
fn tiledb_reads_the_shipped_corpus_as_recorded() {
    let Some(command) = tiledb_py("tiledb_reads_the_shipped_corpus_as_recorded") else {
        return;
    };
    let mut adapters = vec![start(command, Duration::from_secs(120))];
    let selection = Selection {
        live: false,
        ..Selection::default()
    };
    let report = run(&config(selection), &mut adapters, &mut |_| {}).unwrap();

    for r in &report.results {
        assert!(
            matches!(r.status, Status::Pass | Status::NotApplicable),
            "{} {:?} from {}: {:?}: {:?}",
            r.case,
            r.read,
            r.producer,
            r.status,
            r.detail
        );
        if r.status == Status::NotApplicable {
            let why = r.detail.as_deref().unwrap_or("");
            assert!(
                why.starts_with("the case applies to formats")
                    || why.contains("could not replay it")
                    || why.starts_with("no trustworthy expected result"),
                "{} from {}: not applicable for an unknown reason: {why}",
                r.case,
                r.producer
            );
        }
    }
    // Every recorded read was really compared: none slipped into "not applicable".
    let mut passed: BTreeMap<String, usize> = BTreeMap::new();
    for r in report.results.iter().filter(|r| r.status == Status::Pass) {
        *passed.entry(r.producer.clone()).or_default() += 1;
    }
    assert_eq!(passed, recorded_reads());
    assert!(report.succeeded(), "{}", report.render_text());
}

#[test]
fn tiledb_live_replays_read_like_the_frozen_corpus() {
    let Some(command) = tiledb_py("tiledb_live_replays_read_like_the_frozen_corpus") else {
        return;
    };
    let mut adapters = vec![start(command, Duration::from_secs(120))];
    let selection = Selection {
        cases: [
            "dense.basic.int32",
            "sparse.basic.int32",
            "group.basic",
            "array.metadata.basic",
        ]
        .map(String::from)
        .to_vec(),
        producers: vec!["live:tiledb-py".into()],
        live: true,
        ..Selection::default()
    };
    let report = run(&config(selection), &mut adapters, &mut |_| {}).unwrap();
    let writes: Vec<_> = report
        .results
        .iter()
        .filter(|r| r.role == "writer")
        .collect();
    assert_eq!(writes.len(), 4);
    assert!(
        writes.iter().all(|r| r.status == Status::Pass),
        "{writes:?}"
    );
    let reads: Vec<_> = report
        .results
        .iter()
        .filter(|r| r.role == "reader")
        .collect();
    assert!(!reads.is_empty());
    // The oracle's live reads are checked against the frozen results of format 22.
    for r in &reads {
        assert_eq!(r.status, Status::Pass, "{r:?}");
    }
    assert!(report.succeeded());
}

#[test]
fn our_runtime_is_asked_only_what_it_claims() {
    let mut adapters: Vec<Box<dyn Adapter>> = vec![Box::new(RuntimeAdapter::new())];
    let info = adapters[0].info().clone();
    assert!(!info.is_writer(), "the runtime does not replay recipes");
    let report = run(
        &config(corpus_only(&["dense.*", "negative.*"])),
        &mut adapters,
        &mut |_| {},
    )
    .unwrap();
    assert!(!report.results.is_empty());
    for r in &report.results {
        let fv = report
            .producers
            .iter()
            .find(|p| p.name == r.producer)
            .unwrap()
            .format_version;
        if r.status == Status::Unsupported {
            // Unsupported only where a claim is missing.
            let why = r.detail.as_deref().unwrap_or("");
            assert!(why.contains("does not claim"), "{why}");
            let case = report.cases.get(&r.case).unwrap();
            let claims_all = info.format_versions.contains(&fv)
                && case
                    .features
                    .iter()
                    .filter(|f| tiledb_conformance::case::CAPABILITIES.contains(&f.as_str()))
                    .all(|f| info.claims(f));
            assert!(
                !claims_all,
                "{} reported unsupported despite the claims",
                r.case
            );
        }
    }
    assert!(report.succeeded(), "{}", report.render_text());
}
