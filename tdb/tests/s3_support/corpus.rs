//! The conformance corpus on an object store: uploaded through our
//! storage layer, then every case read from the store and from disk.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tiledb_runtime::storage::{open_url, RelPath, Storage};

use super::workspace;

/// Every file below `dir`, as paths relative to it.
pub fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Uploads every file below `local` under `storage`'s root, eight at a time.
pub fn upload(local: &Path, storage: &dyn Storage) -> usize {
    let files = files_below(local);
    std::thread::scope(|scope| {
        for chunk in files.chunks(files.len().div_ceil(8).max(1)) {
            scope.spawn(move || {
                for file in chunk {
                    let rel = RelPath::parse(file.to_str().unwrap()).unwrap();
                    storage
                        .write(&rel, &std::fs::read(local.join(file)).unwrap())
                        .unwrap();
                }
            });
        }
    });
    files.len()
}

pub fn toml_to_json(v: toml::Value) -> Value {
    serde_json::to_value(v).unwrap()
}

/// The corpus cases of every producer: `(producer, case folder)`.
pub fn corpus_cases() -> Vec<(String, PathBuf)> {
    let corpus = workspace().join("conformance/corpus");
    let mut out = Vec::new();
    for producer in std::fs::read_dir(&corpus).unwrap().flatten() {
        if !producer.path().is_dir() {
            continue;
        }
        for case in std::fs::read_dir(producer.path()).unwrap().flatten() {
            if case.path().join("expected.json").is_file() {
                out.push((
                    producer.file_name().to_string_lossy().into_owned(),
                    case.path(),
                ));
            }
        }
    }
    out.sort();
    out
}

/// A read's answer as comparable JSON: the result, or the error's class.
pub fn outcome(result: Result<Value, tiledb_conformance::adapter::Failure>) -> Value {
    match result {
        Ok(v) => v,
        Err(e) => json!({"error class": e.class()}),
    }
}

/// Reads case `case_dir` (a folder of `corpus`, uploaded under `base`, a
/// URL such as `s3://corpus/cases`) from disk and from the store: the reads
/// that differ.
/// One read per case (its first, most often the whole array) keeps the
/// test short; the reads of one case differ only in their ranges, which
/// the storage does not see.
fn compare_case(
    base: &str,
    corpus: &Path,
    case_dir: &Path,
    config: &[(String, String)],
) -> (usize, Vec<String>) {
    use tiledb_conformance::adapter::{run_read, run_read_on};
    let expected: Value =
        serde_json::from_slice(&std::fs::read(case_dir.join("expected.json")).unwrap()).unwrap();
    let case_file = workspace()
        .join("conformance")
        .join(expected["case_file"].as_str().unwrap());
    let case = toml_to_json(toml::from_str(&std::fs::read_to_string(case_file).unwrap()).unwrap());
    let specs = case["reads"].as_array().cloned().unwrap_or_default();
    // Each local path below the corpus, opened at the same key in the store.
    let on_store = |path: &Path| -> tiledb_runtime::Result<Box<dyn Storage>> {
        let rel = path.strip_prefix(corpus).expect("a path below the corpus");
        open_url(&format!("{base}/{}", rel.display()), config)
    };
    let mut failed = Vec::new();
    let reads = expected["reads"].as_array().unwrap();
    for exp in reads.iter().take(1) {
        let id = exp["id"].as_str().unwrap_or_default();
        let spec = specs
            .iter()
            .find(|r| r["id"].as_str() == Some(id))
            .cloned()
            .unwrap_or_else(|| json!({"id": id}));
        let local = outcome(run_read(case_dir, &case, &spec));
        let remote = outcome(run_read_on(case_dir, &on_store, &case, &spec));
        if local != remote {
            let name = case_dir.strip_prefix(corpus).unwrap().display();
            failed.push(format!(
                "{name}/{id}: local {local:.200} vs {base} {remote:.200}"
            ));
        }
    }
    (reads.len().min(1), failed)
}

/// Uploads the whole corpus under `base` (a URL such as
/// `s3://corpus/cases`, its bucket made) through our storage, then reads
/// every case from there and from disk: they must agree.
pub fn upload_and_compare_corpus(base: &str, config: &[(String, String)]) {
    let root = open_url(base, config).unwrap();
    let corpus = workspace().join("conformance/corpus");
    let started = std::time::Instant::now();
    let uploaded = upload(&corpus, root.as_ref());
    let upload_time = started.elapsed();
    let cases = corpus_cases();
    let (reads, failed) = std::thread::scope(|scope| {
        let workers: Vec<_> = cases
            .chunks(cases.len().div_ceil(4))
            .map(|chunk| {
                let corpus = &corpus;
                scope.spawn(move || {
                    let (mut reads, mut failed) = (0, Vec::new());
                    for (_, case_dir) in chunk {
                        let (n, mut f) = compare_case(base, corpus, case_dir, config);
                        reads += n;
                        failed.append(&mut f);
                    }
                    (reads, failed)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).fold(
            (0, Vec::new()),
            |(n, mut all), (m, mut f)| {
                all.append(&mut f);
                (n + m, all)
            },
        )
    });
    println!(
        "{uploaded} files uploaded in {upload_time:?}; {reads} reads compared in {:?}",
        started.elapsed() - upload_time
    );
    assert!(
        failed.is_empty(),
        "{} reads differ:\n{}",
        failed.len(),
        failed.join("\n")
    );
    assert!(
        uploaded > 3000 && reads > 400,
        "{uploaded} files, {reads} reads"
    );
}
