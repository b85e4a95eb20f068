//! The runner on the shipped corpus with TileDB (through the tiledb-py adapter) as the reader:
//! TileDB must read back exactly what it recorded, for every read the corpus holds.

mod runner_common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Duration;

use runner_common::*;
use serde_json::Value;
use tiledb_conformance::{run, Adapter, Answer, Info, RuntimeAdapter, Selection, Status};

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
    // TileDB's legacy test arrays, when present: one producer per array.
    if let Some(arrays) = legacy_arrays() {
        for entry in fs::read_dir(conformance_dir().join("legacy"))
            .unwrap()
            .flatten()
        {
            let path = entry.path();
            if !path.to_string_lossy().ends_with(".expected.json") {
                continue;
            }
            let doc: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
            let array = doc["array"].as_str().unwrap();
            if arrays.join(array).is_dir() {
                out.insert(
                    format!("legacy:{array}"),
                    doc["reads"].as_array().unwrap().len(),
                );
            }
        }
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
                    || why.contains("replays a selection of the cases")
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
fn our_runtime_reads_the_shipped_corpus_within_its_known_failures() {
    let mut adapters: Vec<Box<dyn Adapter>> = vec![Box::new(RuntimeAdapter::new())];
    assert!(
        adapters[0].info().is_reader() && adapters[0].info().is_writer(),
        "the runtime reads, and replays recipes"
    );
    let selection = Selection {
        live: false,
        ..Selection::default()
    };
    let report = run(&config(selection), &mut adapters, &mut |_| {}).unwrap();
    let mut asked: BTreeMap<String, usize> = BTreeMap::new();
    for r in &report.results {
        match r.status {
            Status::Pass => *asked.entry(r.producer.clone()).or_default() += 1,
            Status::NotApplicable => {}
            Status::ExpectedFailure => {
                assert!(r.known_failure.is_some());
                *asked.entry(r.producer.clone()).or_default() += 1;
            }
            other => panic!(
                "{} {:?} from {}: {other:?}: {:?}",
                r.case, r.read, r.producer, r.detail
            ),
        }
    }
    // Every recorded read was asked (pass, or a listed failure); none went unsupported.
    assert_eq!(asked, recorded_reads());
    assert!(report.succeeded(), "{}", report.render_text());
}

/// An in-process implementation that claims little and records what it is asked.
struct Claims {
    info: Info,
}

impl Adapter for Claims {
    fn info(&self) -> &Info {
        &self.info
    }
    fn write(&mut self, _: &Path, _: &Path) -> Answer {
        Answer::Crashed("never asked to write".into())
    }
    fn read(&mut self, _: &Path, _: &Path, _: &str) -> Answer {
        Answer::Refused {
            class: "unsupported".into(),
            message: "claims more than it does".into(),
        }
    }
}

#[test]
fn an_implementation_is_asked_only_what_it_claims() {
    let claims = Claims {
        info: Info {
            name: "dense-22".into(),
            version: "0".into(),
            roles: vec!["reader".into()],
            format_versions: vec![22],
            write_format_version: None,
            capabilities: vec!["dense".into(), "datatype".into()],
        },
    };
    let mut adapters: Vec<Box<dyn Adapter>> = vec![Box::new(claims)];
    let cases = [
        "dense.attr.int8",
        "sparse.basic.int32",
        "dense.attr.var_nullable",
    ];
    let report = run(&config(corpus_only(&cases)), &mut adapters, &mut |_| {}).unwrap();
    let status = |case: &str, producer: &str| -> Vec<Status> {
        report
            .results
            .iter()
            .filter(|r| r.case == case && r.producer == producer)
            .map(|r| r.status)
            .collect()
    };
    // Claimed: asked, and refusing a claimed read is an error.
    assert_eq!(status("dense.attr.int8", "tiledb-2.30"), [Status::Error; 2]);
    // Not claimed: the array kind, a feature ("var"), the format version 16.
    let sparse = status("sparse.basic.int32", "tiledb-2.30");
    assert!(!sparse.is_empty() && sparse.iter().all(|s| *s == Status::Unsupported));
    assert!(status("dense.attr.var_nullable", "tiledb-2.30")
        .iter()
        .all(|s| *s == Status::Unsupported));
    assert_eq!(
        status("dense.attr.int8", "tiledb-2.13"),
        [Status::Unsupported; 2]
    );
    let unsupported = report
        .results
        .iter()
        .find(|r| r.case == "sparse.basic.int32")
        .unwrap();
    let why = unsupported.detail.as_deref().unwrap();
    assert!(
        why.contains("does not claim the capability \"sparse\""),
        "{why}"
    );
    assert!(!report.succeeded());
}
