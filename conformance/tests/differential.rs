//! The differential campaign: mutated recipes written by either side and read by both must
//! agree (with TileDB, when the venv is there), and a disagreement is saved as a finding
//! whose replay shows it again (with a reader that lies, no TileDB needed).

mod runner_common;

use std::path::Path;
use std::time::Duration;

use runner_common::*;
use serde_json::Value;
use tiledb_conformance::differential::{replay_finding, run_campaign, CampaignConfig};
use tiledb_conformance::{Adapter, Answer, Info, RuntimeAdapter};

fn config(out: &Path, seed: u64, executions: u64) -> CampaignConfig {
    CampaignConfig {
        cases_dir: conformance_dir().join("cases"),
        out_dir: out.to_path_buf(),
        seed,
        executions: Some(executions),
        duration: None,
        repro_prefix: "tdb differential".into(),
        only: None,
    }
}

#[test]
fn our_runtime_and_tiledb_agree_on_mutated_arrays() {
    let Some(py) = tiledb_py("our_runtime_and_tiledb_agree_on_mutated_arrays") else {
        assert!(
            std::env::var("CI").is_err(),
            "CI runs this test with tiledb-py"
        );
        return;
    };
    let mut theirs = start(py, Duration::from_secs(120));
    let mut ours = RuntimeAdapter::new();
    let out = tempfile::tempdir().unwrap();
    let summary = run_campaign(
        &config(out.path(), 20261125, 12),
        &mut ours,
        theirs.as_mut(),
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(summary.executions, 12);
    assert!(summary.reads_agreed >= 10, "{summary:?}");
    assert!(
        summary.findings.is_empty(),
        "findings: {:#?}",
        summary.findings
    );
}

/// Our runtime, except that every result it reads has one cell fewer.
struct DropsACell(RuntimeAdapter);

impl Adapter for DropsACell {
    fn info(&self) -> &Info {
        self.0.info()
    }
    fn write(&mut self, case_file: &Path, out_dir: &Path) -> Answer {
        self.0.write(case_file, out_dir)
    }
    fn read(&mut self, array_root: &Path, case_file: &Path, read_id: &str) -> Answer {
        match self.0.read(array_root, case_file, read_id) {
            Answer::Value(mut v) => {
                if let Some(Value::Array(cells)) = v.get_mut("cells") {
                    cells.pop();
                }
                Answer::Value(v)
            }
            other => other,
        }
    }
}

#[test]
fn a_disagreement_is_saved_with_a_repro_that_shows_it_again() {
    let out = tempfile::tempdir().unwrap();
    let mut ours = RuntimeAdapter::new();
    let mut liar = DropsACell(RuntimeAdapter::new());
    let summary = run_campaign(
        &config(out.path(), 7, 6),
        &mut ours,
        &mut liar,
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(summary.executions, 6);
    assert!(!summary.findings.is_empty());
    for finding in &summary.findings {
        assert_eq!(finding.kind, "differ");
        assert!(finding.repro.starts_with("tdb differential --replay "));
        let record: Value = serde_json::from_str(
            &std::fs::read_to_string(finding.dir.join("finding.json")).unwrap(),
        )
        .unwrap();
        assert!(!record["mutations"].as_array().unwrap().is_empty());
        assert!(finding.dir.join("out").is_dir());
        let again = replay_finding(&finding.dir, &mut ours, &mut liar).unwrap();
        assert!(again.iter().any(|(_, verdict)| verdict.is_some()));
        // Our reader agrees with itself on the saved array.
        let mut twin = RuntimeAdapter::new();
        let clean = replay_finding(&finding.dir, &mut ours, &mut twin).unwrap();
        assert!(
            clean.iter().all(|(_, verdict)| verdict.is_none()),
            "{clean:?}"
        );
    }
}
