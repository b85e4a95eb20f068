//! Every array of the conformance corpus (every producer `MANIFEST.json`
//! lists: TileDB 2.30, 2.13 and the releases between) read with this runtime must give what
//! TileDB gave: for every read of each case's `expected.json`, the read spec
//! of the case file is translated into a query, run, encoded in the kit's
//! canonical JSON and compared (in order, or as a multiset for unordered
//! reads). Negative cases must fail with the expected error class.
//!
//! Reads that do not match yet are listed in `KNOWN_FAILURES` with a reason;
//! the test fails on any other mismatch, and on a listed read that passes
//! (so that the list stays honest).

mod common;

use common::{toml_to_json, workspace};

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Value};

/// `(producer, case, read id, reason)`.
const KNOWN_FAILURES: &[(&str, &str, &str, &str)] = &[
    (
        "tiledb-2.30",
        "negative.schema.version_too_new",
        "all",
        "format 23 is the newest format this reader supports (spec/format.toml); TileDB 2.30 stops at 22, so the v23 schema that 2.30 refuses is read here",
    ),
    (
        "tiledb-2.13",
        "negative.schema.version_too_new",
        "all",
        "the mutation writes version 23 over a v16 schema; this reader knows v23, so it parses the bytes with the v23 layout and reports them corrupt, where TileDB 2.13 refuses the version",
    ),
];

fn check_producer(
    producer: &str,
    tally: &mut BTreeMap<&'static str, usize>,
    failures: &mut Vec<String>,
    fixed: &mut Vec<String>,
) {
    let corpus = workspace().join("conformance/corpus").join(producer);
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap_or_else(|e| panic!("{}: {e}", corpus.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("expected.json").is_file())
        .collect();
    cases.sort();
    for case_dir in cases {
        let case_id = case_dir.file_name().unwrap().to_string_lossy().into_owned();
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(case_dir.join("expected.json")).unwrap())
                .unwrap();
        let case_file = workspace()
            .join("conformance")
            .join(expected["case_file"].as_str().unwrap());
        let case: Value =
            toml_to_json(toml::from_str(&std::fs::read_to_string(&case_file).unwrap()).unwrap());
        let specs = case
            .get("reads")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for exp in expected["reads"].as_array().unwrap() {
            let id = exp["id"].as_str().unwrap_or_default();
            if exp.get("skip").is_some() {
                *tally
                    .entry("skipped by the corpus (oracle bug)")
                    .or_default() += 1;
                continue;
            }
            let spec = specs
                .iter()
                .find(|r| r.get("id").and_then(Value::as_str) == Some(id))
                .cloned()
                .unwrap_or_else(|| json!({"id": id}));
            let outcome = match (
                exp.get("error").and_then(Value::as_str),
                common::run_read(&case_dir, &case, &spec),
            ) {
                (Some(class), Err(err)) if err.class() == class => Ok(()),
                (Some(class), Err(err)) => Err(format!("expected a {class} error, got {err}")),
                (Some(class), Ok(_)) => Err(format!("expected a {class} error, read succeeded")),
                (None, Err(err)) => Err(format!("error: {err}")),
                (None, Ok(actual)) => common::compare(exp, &actual),
            };
            let known = KNOWN_FAILURES
                .iter()
                .find(|(p, c, r, _)| *p == producer && *c == case_id && *r == id);
            match (outcome, known) {
                (Ok(()), None) => *tally.entry("pass").or_default() += 1,
                (Ok(()), Some(_)) => fixed.push(format!("{producer}/{case_id}/{id}")),
                (Err(_), Some((_, _, _, reason))) => {
                    *tally.entry("known failure").or_default() += 1;
                    println!("known failure {producer}/{case_id}/{id}: {reason}");
                }
                (Err(msg), None) => {
                    *tally.entry("FAIL").or_default() += 1;
                    failures.push(format!("{producer}/{case_id}/{id}: {msg}"));
                }
            }
        }
    }
}

#[test]
fn corpus_reads_as_tiledb_read_it() {
    let mut tally = BTreeMap::new();
    let mut failures = Vec::new();
    let mut fixed = Vec::new();
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(workspace().join("conformance/corpus/MANIFEST.json"))
            .expect("read the corpus manifest"),
    )
    .expect("parse the corpus manifest");
    let producers: Vec<String> = manifest["producers"]
        .as_object()
        .expect("the manifest lists producers")
        .keys()
        .cloned()
        .collect();
    assert!(
        producers.iter().any(|p| p == "tiledb-2.30"),
        "the manifest lists no tiledb-2.30 corpus"
    );
    for producer in &producers {
        check_producer(producer, &mut tally, &mut failures, &mut fixed);
    }
    println!("tally: {tally:?}");
    for f in &failures {
        println!("FAIL {f}");
    }
    assert!(
        fixed.is_empty(),
        "listed as known failures but now pass (remove them): {fixed:?}"
    );
    assert!(
        failures.is_empty(),
        "{} read(s) differ from TileDB:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        tally.get("pass").copied().unwrap_or(0) > 300,
        "too few reads checked: {tally:?}"
    );
}
