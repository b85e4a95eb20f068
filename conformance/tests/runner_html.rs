//! `tdb conformance --html`: the matrix page, opened in a real headless browser (Debian's
//! Chromium, driven by playwright-core from the npm registry) — it loads without errors,
//! shows the same matrix, totals and verdict as the text report, lists each failing and
//! expected-failure check with its diff, reason and repro, and its filters narrow it.
//!
//! Needs node, `/usr/bin/chromium` (or `$CHROMIUM`) and tiledb-py; `scripts/test` installs
//! them. Without them the test says so and passes only outside CI (`CI=true` fails it).

mod runner_common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use runner_common::*;
use serde_json::Value;
use tiledb_conformance::{run, Adapter, Report, RuntimeAdapter, Selection, Status};

fn missing(what: &str) {
    assert!(
        std::env::var("CI").is_err(),
        "runner_html: {what} (scripts/test installs it)"
    );
    eprintln!("runner_html: SKIPPED: {what}; scripts/test installs it");
}

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    path.exists().then_some(path)
}

/// `conformance/tests/html` with its node packages installed (`npm ci` on first use).
fn page_checker() -> Option<PathBuf> {
    let dir = conformance_dir().join("tests/html");
    if !dir.join("node_modules/playwright-core").exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--silent"])
            .current_dir(&dir)
            .status()
            .ok()?;
        if !status.success() {
            return None;
        }
    }
    Some(dir.join("check_page.mjs"))
}

/// The text report's table after `title`: its rows, cut at the columns its rule line marks.
fn text_table(text: &str, title: &str) -> Vec<Vec<String>> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(title)).skip(1);
    let _header = lines.next().expect("a header line");
    let rule: Vec<char> = lines.next().expect("a rule line").chars().collect();
    let mut starts = Vec::new();
    for (i, c) in rule.iter().enumerate() {
        if *c == '-' && (i == 0 || rule[i - 1] == ' ') {
            starts.push(i);
        }
    }
    lines
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let chars: Vec<char> = l.chars().collect();
            (0..starts.len())
                .map(|k| {
                    let end = starts
                        .get(k + 1)
                        .copied()
                        .unwrap_or(chars.len())
                        .min(chars.len());
                    let start = starts[k].min(end);
                    chars[start..end]
                        .iter()
                        .collect::<String>()
                        .trim()
                        .to_string()
                })
                .collect()
        })
        .collect()
}

fn report_with_every_kind_of_cell(py: Vec<String>) -> Report {
    let broken = double(&py, "flip_one_value.py", &["--case", "dense.basic.int32"]);
    let mut adapters: Vec<Box<dyn Adapter>> = vec![
        start(py, Duration::from_secs(120)),
        start(broken, Duration::from_secs(120)),
        Box::new(RuntimeAdapter::new()),
    ];
    let selection = Selection {
        cases: vec![
            "dense.basic.int32".into(),
            "negative.schema.version_too_new".into(),
            "sparse.delete.condition".into(),
            "sparse.enumeration".into(),
        ],
        live: true,
        ..Selection::default()
    };
    let report = run(&config(selection), &mut adapters, &mut |_| {}).unwrap();
    for status in [Status::Pass, Status::Fail, Status::ExpectedFailure] {
        assert!(
            report.results.iter().any(|r| r.status == status),
            "the report has no {status:?} check to show"
        );
    }
    report
}

fn open_in_chromium(checker: &Path, browser: &Path, page: &Path, args: &[&str]) -> Value {
    let out = Command::new("node")
        .arg(checker)
        .arg(page)
        .arg(browser)
        .args(args)
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "check_page.mjs: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("check_page.mjs prints JSON")
}

#[test]
fn the_matrix_page_shows_the_text_report_and_filters_it_in_chromium() {
    let Some(py) = tiledb_py("the_matrix_page_shows_the_text_report_and_filters_it_in_chromium")
    else {
        return missing("no tiledb-py");
    };
    let Some(browser) = chromium() else {
        return missing("no Chromium at /usr/bin/chromium or $CHROMIUM");
    };
    let Some(checker) = page_checker() else {
        return missing("node packages of conformance/tests/html could not be installed");
    };
    let report = report_with_every_kind_of_cell(py);
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("matrix.html");
    std::fs::write(&page, report.render_html()).unwrap();
    let text = report.render_text();

    let tag = "delete";
    let (producer, implementation) = ("tiledb-2.30", "tiledb-runtime");
    let seen = open_in_chromium(&checker, &browser, &page, &[tag, producer, implementation]);
    assert_eq!(
        seen["errors"],
        serde_json::json!([]),
        "the page logged errors"
    );
    let initial = &seen["initial"];
    assert_eq!(initial["errors"], "");

    // Totals and verdict: the text report's last lines.
    let totals = text
        .lines()
        .find(|l| l.contains(" checks: "))
        .unwrap()
        .trim();
    assert_eq!(initial["totals"], totals);
    let verdict = text.lines().last().unwrap().trim();
    assert_eq!(initial["verdict"], verdict);

    // The matrix: the text report's "Producers × readers" table, cell by cell.
    let table = text_table(&text, "Producers × readers");
    let rows = initial["rows"].as_array().unwrap();
    assert_eq!(rows.len(), table.len());
    assert_eq!(rows.len(), report.producers.len());
    for (row, text_row) in rows.iter().zip(&table) {
        assert_eq!(row["producer"].as_str().unwrap(), text_row[1]);
        let cells: Vec<&str> = row["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert_eq!(cells, text_row[2..], "producer {}", text_row[1]);
    }
    let header: Vec<&str> = initial["header"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    assert_eq!(header[..2], ["format", "producer"]);
    let writers = text_table(&text, "Live writers");
    let page_writers: Vec<Vec<String>> =
        serde_json::from_value(initial["writers"].clone()).unwrap();
    assert_eq!(page_writers, writers);

    // Every check that is not a pass is listed with its diff, reason and repro.
    let listed = initial["listed"].as_array().unwrap();
    let not_passes: Vec<_> = report
        .results
        .iter()
        .filter(|r| !matches!(r.status, Status::Pass | Status::NotApplicable))
        .collect();
    assert_eq!(listed.len(), not_passes.len());
    for (item, r) in listed.iter().zip(&not_passes) {
        assert_eq!(item["status"], r.status.name());
        assert_eq!(item["repro"], r.repro.as_str());
        assert_eq!(item["detail"].as_str(), r.detail.as_deref());
        assert_eq!(item["reason"].as_str(), r.known_failure.as_deref());
    }
    assert!(listed
        .iter()
        .any(|i| i["status"] == "fail" && i["detail"].as_str().is_some_and(|d| !d.is_empty())));
    assert!(listed
        .iter()
        .any(|i| i["status"] == "expected-failure" && i["reason"].is_string()));

    // Filters narrow everything at once.
    let count = |status: Option<Status>, keep: &dyn Fn(&str) -> bool| {
        report
            .results
            .iter()
            .filter(|r| status.is_none_or(|s| r.status == s) && keep(&r.case))
            .count() as u64
    };
    let all = initial["checks_count"].as_u64().unwrap();
    assert_eq!(all, report.results.len() as u64);
    let fails = &seen["status_fail"];
    assert_eq!(
        fails["checks_count"].as_u64().unwrap(),
        count(Some(Status::Fail), &|_| true)
    );
    assert!(fails["checks_count"].as_u64().unwrap() < all);
    assert!(fails["listed"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["status"] == "fail"));
    assert_eq!(fails["filters"]["status"], "fail");
    assert!(fails["hash"].as_str().unwrap().contains("status=fail"));

    let tagged = &seen["tag"];
    let has_tag = |case: &str| {
        report
            .cases
            .get(case)
            .is_some_and(|c| c.features.iter().chain(&c.tags).any(|t| t == tag))
    };
    assert_eq!(
        tagged["checks_count"].as_u64().unwrap(),
        count(None, &has_tag)
    );
    assert!(tagged["checks_count"].as_u64().unwrap() < all);

    let clicked = &seen["clicked_cell"];
    assert_eq!(clicked["filters"]["producer"], producer);
    assert_eq!(clicked["filters"]["implementation"], implementation);
    let in_cell = report
        .results
        .iter()
        .filter(|r| r.producer == producer && r.implementation == implementation)
        .count() as u64;
    assert_eq!(clicked["checks_count"].as_u64().unwrap(), in_cell);
    assert!(in_cell < all);

    assert_eq!(seen["cleared"]["totals"], initial["totals"]);
}

#[test]
fn the_page_keeps_markup_in_values_as_text() {
    let mut report = Report::from_json(
        &Report {
            report_version: tiledb_conformance::report::REPORT_VERSION,
            corpus: "c".into(),
            implementations: Vec::new(),
            producers: Vec::new(),
            cases: Default::default(),
            results: Vec::new(),
            stale_known_failures: Vec::new(),
            notes: Vec::new(),
        }
        .to_json(),
    )
    .unwrap();
    report
        .notes
        .push("</script><script>alert(1)</script>".into());
    let html = report.render_html();
    // One closing tag per script element the page itself has: the note cannot close one.
    assert_eq!(html.matches("</script>").count(), 2);
    assert!(html.contains("\\u003c/script>\\u003cscript>alert(1)\\u003c/script>"));
}
