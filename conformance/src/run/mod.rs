//! The runner: the frozen corpus × every reader, and every live writer × every reader.
//!
//! For a corpus producer the expected result of a read is its `expected.json`. For a live
//! writer (`live:<name>`) the writer replays the recipe into a temporary folder, the oracle
//! (TileDB) reads it, and that read is the expected result for every other reader; the
//! oracle's own live read is checked against the frozen corpus of the same format version.

mod live;

use std::path::PathBuf;

use crate::adapter::{Adapter, Answer, Info};
use crate::case::{Case, Level};
use crate::compare::{compact, compare};
use crate::corpus::{Corpus, Expected, Producer};
use crate::known_failures::KnownFailures;
use crate::report::{
    CaseSummary, CheckResult, ProducerSummary, Report, StaleEntry, Status, REPORT_VERSION,
};

/// What to run. Empty lists select everything.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Case ids; `prefix*` selects every case whose id starts with `prefix`.
    pub cases: Vec<String>,
    /// Every tag must be on the case (array kind, feature, datatype, filter or level).
    pub tags: Vec<String>,
    /// Read ids: only these reads of the selected cases.
    pub reads: Vec<String>,
    /// Implementations that read, by name.
    pub readers: Vec<String>,
    /// Implementations that replay recipes, by name.
    pub writers: Vec<String>,
    /// Corpus producer names, or `live:<writer>`.
    pub producers: Vec<String>,
    /// Run the live writers (the default).
    pub live: bool,
    /// Cases above this level are not applicable (default: every level applies).
    pub max_level: Option<Level>,
}

impl Selection {
    fn selects_case(&self, case: &Case) -> bool {
        let by_id = self.cases.is_empty()
            || self
                .cases
                .iter()
                .any(|pattern| match pattern.strip_suffix('*') {
                    Some(prefix) => case.id.starts_with(prefix),
                    None => case.id == *pattern,
                });
        let tags = case.all_tags();
        by_id && self.tags.iter().all(|t| tags.contains(t))
    }

    /// The case with only the selected reads, or `None` when none is selected.
    fn narrow_reads(&self, case: &Case) -> Option<Case> {
        if self.reads.is_empty() {
            return Some(case.clone());
        }
        let mut narrowed = case.clone();
        narrowed.reads.retain(|r| self.reads.contains(r));
        (!narrowed.reads.is_empty()).then_some(narrowed)
    }

    fn selects_producer(&self, name: &str) -> bool {
        self.producers.is_empty() || self.producers.iter().any(|p| p == name)
    }
}

/// Where a run finds its cases and corpus, what it selects, and how its
/// reproduction commands are spelled.
pub struct RunConfig {
    /// The folder holding `cases/` and `known_failures/`.
    pub conformance_dir: PathBuf,
    /// The frozen corpus (`corpus/`, with its `MANIFEST.json`).
    pub corpus_dir: PathBuf,
    /// TileDB's legacy test arrays (`../shared/tiledb-test-arrays`), when
    /// present: each array with a case in `conformance/legacy/` joins the
    /// matrix as a producer of its own.
    pub legacy_arrays: Option<PathBuf>,
    /// Which cases, reads, readers, writers and producers run.
    pub selection: Selection,
    /// The reader whose live reads are the expected results.
    pub oracle: String,
    /// How reproduction commands start, e.g. `tdb conformance`.
    pub repro_prefix: String,
    /// Arguments every reproduction command needs (e.g. `--corpus DIR` when not the default).
    pub repro_args: Vec<String>,
}

/// Progress events, for a caller that wants to show the run advancing.
pub enum Progress<'a> {
    /// A producer's cases start.
    Producer {
        /// The producer.
        name: &'a str,
        /// How many of its cases are selected.
        cases: usize,
    },
    /// A case of that producer starts.
    Case {
        /// The producer.
        producer: &'a str,
        /// The case id.
        case: &'a str,
        /// Its position among the producer's cases, from 0.
        index: usize,
    },
}

/// The name of a live producer: what `writer` wrote during the run.
pub(crate) fn live_producer(writer: &str) -> String {
    format!("live:{writer}")
}

/// Run the selected matrix with these implementations.
pub fn run(
    config: &RunConfig,
    adapters: &mut [Box<dyn Adapter>],
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, String> {
    let (all_cases, selected) = load_cases(config)?;
    let cases: Vec<&Case> = selected.iter().collect();
    let known = KnownFailures::load(&config.conformance_dir.join("known_failures"))?;
    let mut corpus = Corpus::open(&config.corpus_dir)?;
    if let Some(arrays) = &config.legacy_arrays {
        corpus.add_legacy(&config.conformance_dir.join("legacy"), arrays)?;
    }

    let mut run = Run {
        config,
        known: &known,
        results: Vec::new(),
        notes: Vec::new(),
    };
    let infos: Vec<Info> = adapters.iter().map(|a| a.info().clone()).collect();
    let readers = run.select_readers(&infos);
    let mut producers = run.corpus_producers(&corpus, &cases, adapters, &readers, progress);
    if config.selection.live {
        producers
            .extend(run.live_producers(&corpus, &cases, &infos, adapters, &readers, progress)?);
    }
    for wanted in &config.selection.writers {
        if !infos.iter().any(|i| &i.name == wanted && i.is_writer()) {
            run.notes
                .push(format!("no writer named {wanted:?} in this run"));
        }
    }

    Ok(Report {
        report_version: REPORT_VERSION,
        corpus: corpus.dir.display().to_string(),
        implementations: infos,
        producers,
        cases: cases
            .iter()
            .map(|c| {
                (
                    c.id.clone(),
                    CaseSummary {
                        level: c.level.name().to_string(),
                        features: c.feature_rows(),
                        tags: c.all_tags().into_iter().collect(),
                    },
                )
            })
            .collect(),
        results: run.results,
        stale_known_failures: stale_entries(&known, &all_cases),
        notes: run.notes,
    })
}

/// Every case of the kit (with TileDB's legacy arrays when the run has
/// them), and the selected ones, narrowed to the selected reads.
fn load_cases(config: &RunConfig) -> Result<(Vec<Case>, Vec<Case>), String> {
    let mut all_cases = Case::load_all(&config.conformance_dir.join("cases"))?;
    let legacy_dir = config.conformance_dir.join("legacy");
    if config.legacy_arrays.is_some() && legacy_dir.is_dir() {
        all_cases.extend(Case::load_all(&legacy_dir)?);
    }
    let selected: Vec<Case> = all_cases
        .iter()
        .filter(|c| config.selection.selects_case(c))
        .filter_map(|c| config.selection.narrow_reads(c))
        .collect();
    Ok((all_cases, selected))
}

/// Known failures that no longer match a case, and why.
fn stale_entries(known: &KnownFailures, all_cases: &[Case]) -> Vec<StaleEntry> {
    let mut stale = Vec::new();
    for (implementation, entries) in &known.by_implementation {
        for entry in entries {
            if let Some(why) = entry.staleness(all_cases) {
                stale.push(StaleEntry {
                    implementation: implementation.clone(),
                    entry: entry.clone(),
                    why,
                });
            }
        }
    }
    stale
}

struct Run<'a> {
    config: &'a RunConfig,
    known: &'a KnownFailures,
    results: Vec<CheckResult>,
    notes: Vec<String>,
}

/// Where a check stands before (or instead of) asking the implementation.
enum Gate {
    Ask,
    Skip(Status, String),
}

impl Run<'_> {
    /// The selected readers, as indexes into `infos`; a note for each
    /// reader asked for that the run does not have.
    fn select_readers(&mut self, infos: &[Info]) -> Vec<usize> {
        let selection = &self.config.selection;
        let readers: Vec<usize> = infos
            .iter()
            .enumerate()
            .filter(|(_, i)| i.is_reader())
            .filter(|(_, i)| selection.readers.is_empty() || selection.readers.contains(&i.name))
            .map(|(n, _)| n)
            .collect();
        for wanted in &selection.readers {
            if !infos.iter().any(|i| &i.name == wanted && i.is_reader()) {
                self.notes
                    .push(format!("no reader named {wanted:?} in this run"));
            }
        }
        readers
    }

    /// Every selected corpus producer: each case read by every reader.
    fn corpus_producers(
        &mut self,
        corpus: &Corpus,
        cases: &[&Case],
        adapters: &mut [Box<dyn Adapter>],
        readers: &[usize],
        progress: &mut dyn FnMut(Progress),
    ) -> Vec<ProducerSummary> {
        let selection = &self.config.selection;
        let mut producers = Vec::new();
        for producer in corpus
            .producers
            .iter()
            .filter(|p| selection.selects_producer(&p.name))
        {
            producers.push(ProducerSummary {
                name: producer.name.clone(),
                format_version: producer.format_version,
                live: false,
            });
            progress(Progress::Producer {
                name: &producer.name,
                cases: cases.len(),
            });
            for (index, case) in cases.iter().enumerate() {
                progress(Progress::Case {
                    producer: &producer.name,
                    case: &case.id,
                    index,
                });
                self.corpus_case(corpus, producer, case, adapters, readers);
            }
        }
        producers
    }

    /// Every read of one corpus case, by every reader.
    fn corpus_case(
        &mut self,
        corpus: &Corpus,
        producer: &Producer,
        case: &Case,
        adapters: &mut [Box<dyn Adapter>],
        readers: &[usize],
    ) {
        let fv = producer.format_version;
        let gate = if let Some(why) = self.case_gate(case, fv) {
            Gate::Skip(Status::NotApplicable, why)
        } else if !producer.cases.contains(&case.id) {
            let why = match (producer.skipped.get(&case.id), &producer.selection) {
                (Some(r), _) => format!("{} could not replay it: {r}", producer.name),
                (None, Some(selection)) => {
                    format!(
                        "{} replays a selection of the cases: {selection}",
                        producer.name
                    )
                }
                (None, None) => "not in this producer's corpus".to_string(),
            };
            Gate::Skip(Status::NotApplicable, why)
        } else {
            Gate::Ask
        };
        let expected = match gate {
            Gate::Ask => match corpus.expected(&producer.name, &case.id) {
                Ok(e) => Some(e),
                Err(e) => {
                    // A broken corpus is everyone's problem: every reader gets the error.
                    for &r in readers {
                        let name = adapters[r].info().name.clone();
                        self.push_reader(
                            case,
                            None,
                            &producer.name,
                            &name,
                            Status::Error,
                            Some(e.clone()),
                            &[],
                        );
                    }
                    return;
                }
            },
            Gate::Skip(..) => None,
        };
        let array_root = corpus.case_dir(&producer.name, &case.id);
        for &r in readers {
            let adapter = &mut adapters[r];
            let name = adapter.info().name.clone();
            let extra = adapter.command_line();
            for read in &case.reads {
                let (status, detail) = match (&gate, &expected) {
                    (Gate::Skip(status, why), _) => (*status, Some(why.clone())),
                    (Gate::Ask, Some(expected)) => match expected.get(read) {
                        None => (
                            Status::Error,
                            Some(format!(
                                "expected.json of {} has no read {read:?}",
                                producer.name
                            )),
                        ),
                        Some(Expected::Skip { reason }) => (
                            Status::NotApplicable,
                            Some(format!("no trustworthy expected result: {reason}")),
                        ),
                        Some(exp) => match claim_gate(adapter.info(), case, fv) {
                            Some(why) => (Status::Unsupported, Some(why)),
                            None => {
                                let answer = adapter.read(&array_root, &case.file, read);
                                with_note(judge(exp, &answer), adapter.take_note())
                            }
                        },
                    },
                    (Gate::Ask, None) => (Status::Error, Some("no expected results".into())),
                };
                self.push_reader(
                    case,
                    Some(read),
                    &producer.name,
                    &name,
                    status,
                    detail,
                    &extra,
                );
            }
        }
    }

    /// Why a case does not apply to arrays of this format version under this selection.
    fn case_gate(&self, case: &Case, format_version: u32) -> Option<String> {
        if !case.applies_to(format_version) {
            let range = match case.max_format {
                Some(max) => format!("{}..={max}", case.min_format),
                None => format!("{} and later", case.min_format),
            };
            return Some(format!(
                "the case applies to formats {range}, not {format_version}"
            ));
        }
        match self.config.selection.max_level {
            Some(max) if case.level > max => Some(format!(
                "the case is {}, above the selected level {}",
                case.level.name(),
                max.name()
            )),
            _ => None,
        }
    }

    /// The status after the implementation's known failures, and the matching entry's reason.
    #[allow(clippy::too_many_arguments)]
    fn apply_known(
        &self,
        implementation: &str,
        role: &str,
        case: &Case,
        read: Option<&str>,
        producer: &str,
        status: Status,
        detail: Option<String>,
    ) -> (Status, Option<String>, Option<String>) {
        let Some(known) = self
            .known
            .lookup(implementation, role, &case.id, read, producer)
        else {
            return (status, detail, None);
        };
        let reason = Some(known.reason.clone());
        if status.is_failure() {
            let was = detail.unwrap_or_default();
            (
                Status::ExpectedFailure,
                Some(format!("{}: {was}", status.name())),
                reason,
            )
        } else if status == Status::Pass {
            let why = format!(
                "listed in known_failures/{implementation}.toml but passes: remove the entry"
            );
            (Status::UnexpectedPass, Some(why), reason)
        } else {
            (status, detail, reason)
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push_reader(
        &mut self,
        case: &Case,
        read: Option<&String>,
        producer: &str,
        implementation: &str,
        status: Status,
        detail: Option<String>,
        extra: &[String],
    ) {
        let read = read.map(String::as_str);
        let (status, detail, known_failure) = self.apply_known(
            implementation,
            "reader",
            case,
            read,
            producer,
            status,
            detail,
        );
        let repro = self.repro(&case.id, producer, read, Some(implementation), None, extra);
        self.results.push(CheckResult {
            case: case.id.clone(),
            read: read.map(str::to_string),
            producer: producer.to_string(),
            implementation: implementation.to_string(),
            role: "reader".into(),
            status,
            detail,
            known_failure,
            repro,
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn repro(
        &self,
        case: &str,
        producer: &str,
        read: Option<&str>,
        reader: Option<&str>,
        writer: Option<&str>,
        extra: &[String],
    ) -> String {
        let mut parts = vec![
            self.config.repro_prefix.clone(),
            "--case".into(),
            shell_word(case),
            "--producer".into(),
            shell_word(producer),
        ];
        if let Some(read) = read {
            parts.push("--read".into());
            parts.push(shell_word(read));
        }
        if let Some(reader) = reader {
            parts.push("--reader".into());
            parts.push(shell_word(reader));
        }
        if let Some(writer) = writer {
            parts.push("--writer".into());
            parts.push(shell_word(writer));
        }
        parts.extend(self.config.repro_args.iter().map(|a| shell_word(a)));
        parts.extend(extra.iter().map(|a| shell_word(a)));
        parts.join(" ")
    }
}

/// Why an implementation is not asked about a case (a format version or a capability it does
/// not claim), if it is not.
fn claim_gate(info: &Info, case: &Case, format_version: u32) -> Option<String> {
    if !info.format_versions.contains(&format_version) {
        return Some(format!(
            "{} does not claim format version {format_version}",
            info.name
        ));
    }
    let required = case.required_capabilities();
    info.first_unclaimed(&required)
        .map(|c| format!("{} does not claim the capability {c:?}", info.name))
}

/// The status of an answer, measured against what was expected.
fn judge(expected: &Expected, answer: &Answer) -> (Status, Option<String>) {
    match (expected, answer) {
        (Expected::Skip { reason }, _) => (Status::NotApplicable, Some(reason.clone())),
        (Expected::Result(want), Answer::Value(got)) => match compare(want, got) {
            Ok(()) => (Status::Pass, None),
            Err(diff) => (Status::Fail, Some(diff)),
        },
        (
            Expected::Error { class },
            Answer::Refused {
                class: got,
                message,
            },
        ) => {
            if got == class {
                (Status::Pass, None)
            } else {
                (
                    Status::Fail,
                    Some(format!(
                        "expected a {class:?} error, got {got:?}: {message}"
                    )),
                )
            }
        }
        (Expected::Error { class }, Answer::Value(got)) => (
            Status::Fail,
            Some(format!(
                "expected a {class:?} error, the read succeeded: {}",
                compact(Some(got))
            )),
        ),
        (Expected::Result(_), other) => failed_answer(other, "the read"),
        (Expected::Error { .. }, other) => failed_answer(other, "the read"),
    }
}

/// A judged answer with what the adapter noted of its request (`Adapter::take_note`)
/// joined to its detail.
pub(crate) fn with_note(
    (status, detail): (Status, Option<String>),
    note: Option<String>,
) -> (Status, Option<String>) {
    let detail = match (detail, note) {
        (Some(detail), Some(note)) => Some(format!("{detail}; {note}")),
        (detail, note) => detail.or(note),
    };
    (status, detail)
}

/// The status of an answer that is not a result.
fn failed_answer(answer: &Answer, what: &str) -> (Status, Option<String>) {
    match answer {
        Answer::Value(v) => (Status::Pass, Some(compact(Some(v)))),
        Answer::Refused { class, message } => (
            Status::Error,
            Some(format!("{what} was refused ({class}): {message}")),
        ),
        Answer::Crashed(m) => (Status::Crash, Some(format!("{what} crashed: {m}"))),
        Answer::TimedOut(t) => (
            Status::Timeout,
            Some(format!("{what} gave no answer within {}s", t.as_secs_f32())),
        ),
    }
}

/// A word quoted for a POSIX shell when it needs it.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}
