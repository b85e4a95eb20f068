//! The live writers: each case replayed by a writer into a scratch folder,
//! read back by the oracle (whose answers are the expected results of every
//! other reader), and the oracle itself checked against the frozen corpus
//! of the same format version.

use std::collections::BTreeMap;
use std::path::Path;

use crate::adapter::{Adapter, Answer, Info};
use crate::case::Case;
use crate::corpus::{Corpus, Expected};
use crate::report::{CheckResult, ProducerSummary, Status};
use crate::run::{claim_gate, failed_answer, judge, live_producer, with_note, Progress, Run};

struct Live<'a> {
    writer: usize,
    oracle: usize,
    producer: &'a str,
    format_version: u32,
    scratch: &'a Path,
}

impl Run<'_> {
    /// Every selected live writer: each case replayed, then read by the
    /// oracle and every reader. A writer that cannot run gets a note.
    pub(super) fn live_producers(
        &mut self,
        corpus: &Corpus,
        cases: &[&Case],
        infos: &[Info],
        adapters: &mut [Box<dyn Adapter>],
        readers: &[usize],
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Vec<ProducerSummary>, String> {
        let config = self.config;
        let mut producers = Vec::new();
        let oracle = infos
            .iter()
            .position(|i| i.name == config.oracle && i.is_reader());
        for (w, info) in infos.iter().enumerate() {
            let name = live_producer(&info.name);
            let selected = info.is_writer()
                && (config.selection.writers.is_empty()
                    || config.selection.writers.contains(&info.name))
                && config.selection.selects_producer(&name);
            if !selected {
                continue;
            }
            let Some(oracle) = oracle else {
                self.notes.push(format!(
                    "{name} not run: the oracle reader {:?} is not available",
                    config.oracle
                ));
                continue;
            };
            let Some(format_version) = info.write_format_version else {
                self.notes.push(format!(
                    "{name} not run: the writer does not say which format version it writes"
                ));
                continue;
            };
            let scratch = tempfile::Builder::new()
                .prefix("tdb-conformance-")
                .tempdir()
                .map_err(|e| format!("creating a scratch folder: {e}"))?;
            producers.push(ProducerSummary {
                name: name.clone(),
                format_version,
                live: true,
            });
            progress(Progress::Producer {
                name: &name,
                cases: cases.len(),
            });
            let live = Live {
                writer: w,
                oracle,
                producer: &name,
                format_version,
                scratch: scratch.path(),
            };
            for (index, case) in cases.iter().enumerate() {
                progress(Progress::Case {
                    producer: &name,
                    case: &case.id,
                    index,
                });
                self.live_case(corpus, &live, case, adapters, readers);
            }
        }
        Ok(producers)
    }

    /// One case replayed by a live writer, then read by the oracle and every reader.
    fn live_case(
        &mut self,
        corpus: &Corpus,
        live: &Live,
        case: &Case,
        adapters: &mut [Box<dyn Adapter>],
        readers: &[usize],
    ) {
        let producer = live.producer;
        if let Some(why) = self.live_gate(case, live.format_version) {
            self.skip_readers(case, producer, adapters, readers, why);
            return;
        }
        let out_dir = live.scratch.join(&case.id);
        let Some(references) = self.replay(live, case, adapters, &out_dir) else {
            let writer_name = &adapters[live.writer].info().name;
            let why = format!("{writer_name} did not replay the case");
            self.skip_readers(case, producer, adapters, readers, why);
            let _ = std::fs::remove_dir_all(&out_dir);
            return;
        };

        // The frozen corpus of the same format version checks the oracle itself.
        let frozen = corpus
            .producers
            .iter()
            .find(|p| p.format_version == live.format_version && p.cases.contains(&case.id))
            .and_then(|p| {
                corpus
                    .expected(&p.name, &case.id)
                    .ok()
                    .map(|e| (p.name.clone(), e))
            });

        let oracle_name = adapters[live.oracle].info().name.clone();
        for &r in readers {
            let name = adapters[r].info().name.clone();
            let extra = adapters[r].command_line();
            for read in &case.reads {
                let reference = references.get(read.as_str());
                let (status, detail) = if r == live.oracle {
                    oracle_against_frozen(&frozen, reference, read, &oracle_name, live)
                } else {
                    match reference {
                        Some(Answer::Value(v)) => {
                            match claim_gate(adapters[r].info(), case, live.format_version) {
                                Some(why) => (Status::Unsupported, Some(why)),
                                None => {
                                    let answer = adapters[r].read(&out_dir, &case.file, read);
                                    with_note(
                                        judge(&Expected::Result(v.clone()), &answer),
                                        adapters[r].take_note(),
                                    )
                                }
                            }
                        }
                        Some(other) => {
                            let (_, d) = failed_answer(other, &format!("the oracle {oracle_name}"));
                            (
                                Status::NotApplicable,
                                Some(format!("no reference result: {}", d.unwrap_or_default())),
                            )
                        }
                        None => (Status::NotApplicable, Some("no reference result".into())),
                    }
                };
                self.push_reader(case, Some(read), producer, &name, status, detail, &extra);
            }
        }
        let _ = std::fs::remove_dir_all(&out_dir);
    }

    /// Why a live writer does not replay a case, if it does not.
    fn live_gate(&self, case: &Case, format_version: u32) -> Option<String> {
        if case.is_derived() {
            return Some("the case is a mutation of the corpus, not a replay".to_string());
        }
        if case.frozen {
            return Some(
                "a frozen array of TileDB's test inputs: there is no recipe to replay".to_string(),
            );
        }
        self.case_gate(case, format_version)
    }

    /// Every read of `case` by every reader, not applicable for `why`.
    fn skip_readers(
        &mut self,
        case: &Case,
        producer: &str,
        adapters: &mut [Box<dyn Adapter>],
        readers: &[usize],
        why: String,
    ) {
        for &r in readers {
            let name = adapters[r].info().name.clone();
            let extra = adapters[r].command_line();
            for read in &case.reads {
                self.push_reader(
                    case,
                    Some(read),
                    producer,
                    &name,
                    Status::NotApplicable,
                    Some(why.clone()),
                    &extra,
                );
            }
        }
    }

    /// The live writer replays `case` into `out_dir` and the oracle reads
    /// it back: the writer's result is recorded, and the oracle's answers
    /// (the expected results of every other reader) are returned, by read;
    /// `None` if the writer did not replay the case. A replay the oracle
    /// cannot read is the writer's failure.
    fn replay<'c>(
        &mut self,
        live: &Live,
        case: &'c Case,
        adapters: &mut [Box<dyn Adapter>],
        out_dir: &Path,
    ) -> Option<BTreeMap<&'c str, Answer>> {
        let producer = live.producer;
        let writer_name = adapters[live.writer].info().name.clone();
        let writer_extra = adapters[live.writer].command_line();
        let (mut write_status, mut write_detail) =
            match claim_gate(adapters[live.writer].info(), case, live.format_version) {
                Some(why) => (Status::Unsupported, Some(why)),
                None => match adapters[live.writer].write(&case.file, out_dir) {
                    Answer::Value(_) => (Status::Pass, None),
                    other => failed_answer(&other, "the replay"),
                },
            };

        let oracle_name = adapters[live.oracle].info().name.clone();
        let mut references: BTreeMap<&str, Answer> = BTreeMap::new();
        let replayed = write_status == Status::Pass;
        if replayed {
            for read in &case.reads {
                let answer = adapters[live.oracle].read(out_dir, &case.file, read);
                if write_status == Status::Pass && !matches!(answer, Answer::Value(_)) {
                    let (_, why) =
                        failed_answer(&answer, &format!("{oracle_name}'s read {read:?}"));
                    write_status = Status::Fail;
                    write_detail = Some(format!(
                        "the replay does not read back: {}",
                        why.unwrap_or_default()
                    ));
                }
                references.insert(read.as_str(), answer);
            }
        }
        let (write_status, write_detail, write_known) = self.apply_known(
            &writer_name,
            "writer",
            case,
            None,
            producer,
            write_status,
            write_detail,
        );
        self.results.push(CheckResult {
            case: case.id.clone(),
            read: None,
            producer: producer.to_string(),
            implementation: writer_name.clone(),
            role: "writer".into(),
            status: write_status,
            detail: write_detail,
            known_failure: write_known,
            repro: self.repro(
                &case.id,
                producer,
                None,
                None,
                Some(&writer_name),
                &writer_extra,
            ),
        });
        replayed.then_some(references)
    }
}

/// The oracle's own live read (`reference`), checked against the frozen
/// result of the same format version when the corpus has one.
fn oracle_against_frozen(
    frozen: &Option<(String, BTreeMap<String, Expected>)>,
    reference: Option<&Answer>,
    read: &str,
    oracle_name: &str,
    live: &Live,
) -> (Status, Option<String>) {
    match (frozen, reference) {
        (Some((frozen_producer, expected)), Some(answer)) => match expected.get(read) {
            Some(Expected::Skip { reason }) => (
                Status::NotApplicable,
                Some(format!("no trustworthy frozen result: {reason}")),
            ),
            Some(exp) => {
                let (s, d) = judge(exp, answer);
                (
                    s,
                    d.map(|d| {
                        format!("{d}\n(compared with the frozen result of {frozen_producer})")
                    }),
                )
            }
            None => (
                Status::Error,
                Some(format!(
                    "expected.json of {frozen_producer} has no read {read:?}"
                )),
            ),
        },
        _ => (
            Status::NotApplicable,
            Some(format!(
                "{oracle_name}'s live read is the reference and no frozen result of format {} \
                 exists to check it",
                live.format_version
            )),
        ),
    }
}
