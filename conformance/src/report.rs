//! The outcome of a run: one result per (case, read, producer, implementation), the matrices
//! a person reads, and the JSON a machine reads (`--json FILE`, which round-trips).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::adapter::Info;
use crate::known_failures::KnownFailure;

/// The outcome of one check. The order is severity: a cell of several reads shows the worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The case does not apply (format version, level, not in that producer's corpus, no
    /// trustworthy expected result).
    NotApplicable,
    /// The result matched the expected one (or the write replayed).
    Pass,
    /// The implementation does not claim the format version or a capability the case needs.
    Unsupported,
    /// Listed in `known_failures/<implementation>.toml`, and still failing.
    ExpectedFailure,
    /// Listed as a known failure, but passes: the list is stale.
    UnexpectedPass,
    /// A result that differs from the expected one (with a diff).
    Fail,
    /// The implementation refused a read it claims to support.
    Error,
    /// No answer within the time limit.
    Timeout,
    /// The implementation died or answered outside the contract.
    Crash,
}

impl Status {
    /// How reports and known-failure files spell it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::NotApplicable => "not-applicable",
            Status::Unsupported => "unsupported",
            Status::ExpectedFailure => "expected-failure",
            Status::UnexpectedPass => "unexpected-pass",
            Status::Fail => "fail",
            Status::Error => "error",
            Status::Timeout => "timeout",
            Status::Crash => "crash",
        }
    }

    /// Whether this result makes the run fail.
    pub(crate) fn is_unexpected(self) -> bool {
        matches!(
            self,
            Status::Fail | Status::Error | Status::Timeout | Status::Crash | Status::UnexpectedPass
        )
    }

    /// Whether a known-failure entry may excuse this result.
    pub(crate) fn is_failure(self) -> bool {
        matches!(
            self,
            Status::Fail | Status::Error | Status::Timeout | Status::Crash
        )
    }

    pub(crate) const ALL: [Status; 9] = [
        Status::Pass,
        Status::Fail,
        Status::Error,
        Status::Crash,
        Status::Timeout,
        Status::UnexpectedPass,
        Status::ExpectedFailure,
        Status::Unsupported,
        Status::NotApplicable,
    ];
}

/// One check: one read of one case, from one producer, by one implementation (or, for
/// `role = "writer"`, one live replay of a case).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The case id.
    pub case: String,
    /// The read id (none for a writer's replay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    /// Who wrote the arrays read: a corpus producer or `live:<writer>`.
    pub producer: String,
    /// The implementation checked.
    pub implementation: String,
    /// `reader` or `writer`.
    pub role: String,
    /// The outcome.
    pub status: Status,
    /// The diff, the error message, or why the check was not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The reason given in `known_failures/<implementation>.toml`, when an entry matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_failure: Option<String>,
    /// The command that reruns just this check.
    pub repro: String,
}

/// One producer of the run, a column of the matrices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerSummary {
    /// A corpus producer's name, or `live:<writer>`.
    pub name: String,
    /// The format version its arrays have.
    pub format_version: u32,
    /// A writer replaying recipes during the run, rather than a frozen corpus.
    pub live: bool,
}

/// What the report shows of a case beside its results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseSummary {
    /// `required`, `recommended` or `optional`.
    pub level: String,
    /// The case's feature tags, the rows of the feature matrix.
    pub features: Vec<String>,
    /// Every tag of the case (array kind, features, datatypes, filters, level), as
    /// `--tag` selects them; the web page filters by them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// A known-failure entry that no longer holds: it fails the run until removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaleEntry {
    /// Whose known-failure file it is in.
    pub implementation: String,
    /// The entry as written.
    pub entry: KnownFailure,
    /// Why it is stale (it passes now, or names no case).
    pub why: String,
}

/// The outcome of a run: every check's result and what is needed to show
/// them as matrices; `to_json`/`from_json` round-trip it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The report's shape ([`REPORT_VERSION`]).
    pub report_version: u32,
    /// The corpus folder read.
    pub corpus: String,
    /// Every implementation that took part, as it described itself.
    pub implementations: Vec<Info>,
    /// Every producer of the run, frozen and live.
    pub producers: Vec<ProducerSummary>,
    /// Every selected case, by id.
    pub cases: BTreeMap<String, CaseSummary>,
    /// One result per check.
    pub results: Vec<CheckResult>,
    /// Known-failure entries that no longer hold.
    pub stale_known_failures: Vec<StaleEntry>,
    /// Things a person should know about the run (an adapter that could not start, …).
    pub notes: Vec<String>,
}

/// The version of the JSON report's shape; it changes when the shape does.
pub const REPORT_VERSION: u32 = 1;

/// The worst status of each reader cell, by (case, producer, implementation).
type Cells = BTreeMap<(String, String, String), Status>;

impl Report {
    /// Results that make the run fail, plus stale known-failure entries.
    pub fn unexpected_count(&self) -> usize {
        self.results
            .iter()
            .filter(|r| r.status.is_unexpected())
            .count()
            + self.stale_known_failures.len()
    }

    /// No unexpected result and no stale known failure: the run passes.
    pub fn succeeded(&self) -> bool {
        self.unexpected_count() == 0
    }

    /// The report as pretty JSON (`--json FILE`).
    pub fn to_json(&self) -> String {
        // A report holds only strings, numbers and maps with string keys.
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// A report read back from its JSON.
    pub fn from_json(text: &str) -> Result<Report, String> {
        serde_json::from_str(text).map_err(|e| format!("not a conformance report: {e}"))
    }

    /// The worst status of every (case, producer, implementation) reader cell.
    fn case_cells(&self) -> Cells {
        let mut out: BTreeMap<(String, String, String), Status> = BTreeMap::new();
        for r in self.results.iter().filter(|r| r.role == "reader") {
            let key = (r.case.clone(), r.producer.clone(), r.implementation.clone());
            let cell = out.entry(key).or_insert(r.status);
            *cell = (*cell).max(r.status);
        }
        out
    }

    fn reader_names(&self) -> Vec<String> {
        let present: BTreeSet<&str> = self
            .results
            .iter()
            .filter(|r| r.role == "reader")
            .map(|r| r.implementation.as_str())
            .collect();
        self.implementations
            .iter()
            .filter(|i| present.contains(i.name.as_str()))
            .map(|i| i.name.clone())
            .collect()
    }

    /// The whole text report: matrices, problems with reproduction commands, summary.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let cells = self.case_cells();
        let readers = self.reader_names();
        self.write_implementations(&mut out);
        self.write_producer_matrix(&mut out, &cells, &readers);
        self.write_live_writers(&mut out);
        self.write_level_matrix(&mut out, &cells, &readers);
        self.write_feature_matrix(&mut out, &cells, &readers);
        self.write_unexpected(&mut out);
        self.write_expected_failures(&mut out);
        self.write_summary(&mut out);
        out
    }

    fn write_implementations(&self, out: &mut String) {
        let _ = writeln!(out, "Implementations:");
        for i in &self.implementations {
            let _ = writeln!(
                out,
                "  {:<16} {} [{}]",
                i.name,
                i.version,
                i.roles.join(", ")
            );
        }
        for note in &self.notes {
            let _ = writeln!(out, "  note: {note}");
        }
    }

    /// Producers × readers, grouped by format version (newest first).
    fn write_producer_matrix(&self, out: &mut String, cells: &Cells, readers: &[String]) {
        let mut rows = Vec::new();
        for p in &self.producers {
            let mut row = vec![p.format_version.to_string(), p.name.clone()];
            for reader in readers {
                let statuses = cells
                    .iter()
                    .filter(|((_, prod, imp), _)| prod == &p.name && imp == reader)
                    .map(|(_, s)| *s);
                row.push(tally(statuses));
            }
            rows.push(row);
        }
        let mut header = vec!["format".to_string(), "producer".to_string()];
        header.extend(readers.iter().cloned());
        let _ = writeln!(out, "\nProducers × readers (cases passed / applicable):");
        out.push_str(&table(&header, &rows));
    }

    /// Live writers: did the replays themselves succeed?
    fn write_live_writers(&self, out: &mut String) {
        let writes: Vec<&CheckResult> =
            self.results.iter().filter(|r| r.role == "writer").collect();
        if writes.is_empty() {
            return;
        }
        let mut rows = Vec::new();
        for p in self.producers.iter().filter(|p| p.live) {
            let statuses = writes
                .iter()
                .filter(|r| r.producer == p.name)
                .map(|r| r.status);
            rows.push(vec![p.name.clone(), tally(statuses)]);
        }
        let _ = writeln!(out, "\nLive writers (case replays):");
        out.push_str(&table(
            &["producer".to_string(), "replays".to_string()],
            &rows,
        ));
    }

    /// Levels × readers: what a conforming reader must (required) or should read.
    fn write_level_matrix(&self, out: &mut String, cells: &Cells, readers: &[String]) {
        let mut rows = Vec::new();
        for level in ["required", "recommended", "optional"] {
            let mut row = vec![level.to_string()];
            for reader in readers {
                let statuses = cells
                    .iter()
                    .filter(|((case, _, imp), _)| {
                        imp == reader && self.cases.get(case).is_some_and(|c| c.level == level)
                    })
                    .map(|(_, s)| *s);
                row.push(tally(statuses));
            }
            rows.push(row);
        }
        let mut header = vec!["level".to_string()];
        header.extend(readers.iter().cloned());
        let _ = writeln!(out, "\nLevels × readers (cells of case × producer):");
        out.push_str(&table(&header, &rows));
    }

    /// Features × implementations, over every producer.
    fn write_feature_matrix(&self, out: &mut String, cells: &Cells, readers: &[String]) {
        let mut features: BTreeSet<&str> = BTreeSet::new();
        for c in self.cases.values() {
            features.extend(c.features.iter().map(String::as_str));
        }
        let mut rows = Vec::new();
        for feature in features {
            let mut row = vec![feature.to_string()];
            for reader in readers {
                let statuses = cells
                    .iter()
                    .filter(|((case, _, imp), _)| {
                        imp == reader
                            && self
                                .cases
                                .get(case)
                                .is_some_and(|c| c.features.iter().any(|f| f == feature))
                    })
                    .map(|(_, s)| *s);
                row.push(tally(statuses));
            }
            rows.push(row);
        }
        let mut header = vec!["feature".to_string()];
        header.extend(readers.iter().cloned());
        let _ = writeln!(
            out,
            "\nFeatures × readers (cells of case × producer passed / applicable):"
        );
        out.push_str(&table(&header, &rows));
    }

    /// Every result that fails the run, with its reproduction command, and
    /// every stale known failure.
    fn write_unexpected(&self, out: &mut String) {
        let problems: Vec<&CheckResult> = self
            .results
            .iter()
            .filter(|r| r.status.is_unexpected())
            .collect();
        if !problems.is_empty() || !self.stale_known_failures.is_empty() {
            let _ = writeln!(out, "\nUnexpected results:");
        }
        for r in &problems {
            let read = r
                .read
                .as_deref()
                .map(|x| format!("/{x}"))
                .unwrap_or_default();
            let mut detail = r.detail.as_deref().unwrap_or("").lines();
            let _ = writeln!(
                out,
                "  {:<15} {}{} — {} {} from {}: {}",
                r.status.name().to_uppercase(),
                r.case,
                read,
                r.role,
                r.implementation,
                r.producer,
                detail.next().unwrap_or("")
            );
            for line in detail.take(6) {
                let _ = writeln!(out, "                  {line}");
            }
            let _ = writeln!(out, "                  repro: {}", r.repro);
        }
        for s in &self.stale_known_failures {
            let _ = writeln!(
                out,
                "  STALE           known_failures/{}.toml: case {:?}: {}",
                s.implementation, s.entry.case, s.why
            );
        }
    }

    fn write_expected_failures(&self, out: &mut String) {
        let expected: Vec<&CheckResult> = self
            .results
            .iter()
            .filter(|r| r.status == Status::ExpectedFailure)
            .collect();
        if !expected.is_empty() {
            let _ = writeln!(out, "\nExpected failures ({}):", expected.len());
            for r in expected {
                let read = r
                    .read
                    .as_deref()
                    .map(|x| format!("/{x}"))
                    .unwrap_or_default();
                let first = r
                    .detail
                    .as_deref()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("");
                let _ = writeln!(
                    out,
                    "  {}{} — {} from {}: {}",
                    r.case,
                    read,
                    r.implementation,
                    r.producer,
                    shorten(first, 120)
                );
                let _ = writeln!(
                    out,
                    "      known failure: {}",
                    r.known_failure.as_deref().unwrap_or("")
                );
            }
        }
    }

    /// The count of every status, and whether the run passes.
    fn write_summary(&self, out: &mut String) {
        let mut counts = BTreeMap::new();
        for r in &self.results {
            *counts.entry(r.status).or_insert(0usize) += 1;
        }
        let parts: Vec<String> = Status::ALL
            .iter()
            .filter_map(|s| counts.get(s).map(|n| format!("{n} {}", s.name())))
            .collect();
        let _ = writeln!(
            out,
            "\n{} checks: {}",
            self.results.len(),
            if parts.is_empty() {
                "none".to_string()
            } else {
                parts.join(", ")
            }
        );
        let unexpected = self.unexpected_count();
        if unexpected == 0 {
            let _ = writeln!(out, "OK: no unexpected result");
        } else {
            let _ = writeln!(out, "FAILED: {unexpected} unexpected results");
        }
    }
}

/// "passed/applicable" and the statuses worth a look, e.g. `198/200 (1 fail, 1 crash)`.
fn tally(statuses: impl Iterator<Item = Status>) -> String {
    let mut counts: BTreeMap<Status, usize> = BTreeMap::new();
    for s in statuses {
        *counts.entry(s).or_default() += 1;
    }
    let applicable: usize = counts
        .iter()
        .filter(|(s, _)| **s != Status::NotApplicable)
        .map(|(_, n)| n)
        .sum();
    if applicable == 0 {
        return if counts.is_empty() {
            "—".into()
        } else {
            "n/a".into()
        };
    }
    let passed = counts.get(&Status::Pass).copied().unwrap_or(0);
    let others: Vec<String> = Status::ALL
        .iter()
        .filter(|s| !matches!(s, Status::Pass | Status::NotApplicable))
        .filter_map(|s| {
            counts.get(s).map(|n| {
                let label = match s {
                    Status::ExpectedFailure => "xfail",
                    Status::UnexpectedPass => "xpass",
                    Status::Unsupported => "unsupported",
                    other => other.name(),
                };
                format!("{n} {label}")
            })
        })
        .collect();
    if others.is_empty() {
        format!("{passed}/{applicable}")
    } else {
        format!("{passed}/{applicable} ({})", others.join(", "))
    }
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let cut: String = text.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// A plain-text table with left-aligned columns.
fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let mut out = String::new();
    let line = |cells: &[String]| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}", w = *w))
            .collect();
        format!("  {}\n", padded.join("  ").trim_end())
    };
    out.push_str(&line(header));
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&line(&rule));
    for row in rows {
        out.push_str(&line(row));
    }
    out
}
