//! Arrays on a real S3 server (moto, started here on 127.0.0.1): every
//! corpus case uploaded and read back equal to the local read; TileDB 2.30
//! and this library each reading what the other wrote to the same bucket;
//! confinement to the root's prefix; faults injected by a proxy retried or
//! reported, never turned into wrong cells or a half-committed fragment.

mod s3_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tiledb_runtime::storage::{open_url, RelPath, Storage};

use s3_support::{create_bucket, moto_port, our_config, workspace};

/// Every file below `dir`, as paths relative to it.
fn files_below(dir: &Path) -> Vec<PathBuf> {
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
fn upload(local: &Path, storage: &dyn Storage) -> usize {
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

fn toml_to_json(v: toml::Value) -> Value {
    serde_json::to_value(v).unwrap()
}

/// The corpus cases of every producer: `(producer, case folder)`.
fn corpus_cases() -> Vec<(String, PathBuf)> {
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
fn outcome(result: Result<Value, tiledb_conformance::adapter::Failure>) -> Value {
    match result {
        Ok(v) => v,
        Err(e) => json!({"error class": e.class()}),
    }
}

/// Reads case `case_dir` (a folder of `corpus`, uploaded under
/// `s3://corpus/cases`) from disk and from S3: the reads that differ.
/// One read per case (its first, most often the whole array) keeps the
/// test short; the reads of one case differ only in their ranges, which
/// the storage does not see.
fn compare_case(
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
    // Each local path below the corpus, opened at the same key on S3.
    let on_s3 = |path: &Path| -> tiledb_runtime::Result<Box<dyn Storage>> {
        let rel = path.strip_prefix(corpus).expect("a path below the corpus");
        open_url(&format!("s3://corpus/cases/{}", rel.display()), config)
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
        let remote = outcome(run_read_on(case_dir, &on_s3, &case, &spec));
        if local != remote {
            let name = case_dir.strip_prefix(corpus).unwrap().display();
            failed.push(format!(
                "{name}/{id}: local {local:.200} vs s3 {remote:.200}"
            ));
        }
    }
    (reads.len().min(1), failed)
}

#[test]
fn every_corpus_case_reads_from_s3_as_from_disk() {
    let Some(port) = moto_port() else { return };
    create_bucket(port, "corpus");
    let config = our_config(port);
    let root = open_url("s3://corpus/cases", &config).unwrap();
    let corpus = workspace().join("conformance/corpus");
    let started = std::time::Instant::now();
    let uploaded = upload(&corpus, root.as_ref());
    let upload_time = started.elapsed();
    let cases = corpus_cases();
    let (reads, failed) = std::thread::scope(|scope| {
        let workers: Vec<_> = cases
            .chunks(cases.len().div_ceil(4))
            .map(|chunk| {
                let (corpus, config) = (&corpus, &config);
                scope.spawn(move || {
                    let (mut reads, mut failed) = (0, Vec::new());
                    for (_, case_dir) in chunk {
                        let (n, mut f) = compare_case(corpus, case_dir, config);
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

#[test]
fn storage_is_confined_to_its_prefix() {
    let Some(port) = moto_port() else { return };
    create_bucket(port, "confined");
    let config = our_config(port);
    let bucket = open_url("s3://confined", &config).unwrap();
    let file = |p: &str| RelPath::parse(p).unwrap();
    // Neighbours of the root `arr`: a sibling whose name extends it, and a
    // file beside it.
    bucket.write(&file("arrx/secret"), b"not yours").unwrap();
    bucket.write(&file("outside"), b"not yours").unwrap();
    let arr = open_url("s3://confined/arr", &config).unwrap();
    assert_eq!(
        arr.kind(&RelPath::root()).unwrap(),
        None,
        "nothing under arr yet"
    );
    assert_eq!(arr.list(&RelPath::root()).unwrap(), None);
    arr.write(&file("a/b"), b"mine").unwrap();
    arr.write(&file("c"), b"mine too").unwrap();
    let names: Vec<String> = arr
        .list(&RelPath::root())
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["a", "c"]);
    assert_eq!(arr.read(&file("a/b")).unwrap(), b"mine");
    assert!(RelPath::parse("../outside").is_err());
    assert!(RelPath::parse("a/../../outside").is_err());
    assert!(RelPath::root().join("..").is_err());
    // A URL naming a parent is refused, not resolved.
    let err = open_url("s3://confined/arr/../outside", &config)
        .err()
        .unwrap();
    assert!(err.to_string().contains(".."), "{err}");
    arr.remove_dir(&file("a")).unwrap();
    assert!(arr.remove_dir(&RelPath::root()).is_err());
    assert_eq!(bucket.read(&file("arrx/secret")).unwrap(), b"not yours");
    assert_eq!(bucket.read(&file("outside")).unwrap(), b"not yours");
    assert_eq!(arr.kind(&file("a")).unwrap(), None);
    assert!(
        arr.remove_file(&file("a/b")).is_err(),
        "removing a missing file fails"
    );
    // Reads past the end are refused as truncated, naming the object.
    let err = arr.read_range(&file("c"), 4, 100).unwrap_err();
    assert!(err.to_string().contains("s3://confined/arr/c"), "{err}");
    assert_eq!(err.class(), tiledb_runtime::error::ErrorClass::Corrupt);
    assert_eq!(arr.read_range(&file("c"), 5, 3).unwrap(), b"too");
    let batch = arr
        .read_ranges(&file("c"), &[(5, 3), (0, 4), (2, 0)])
        .unwrap();
    assert_eq!(batch, [b"too".to_vec(), b"mine".to_vec(), Vec::new()]);
    let _ = BTreeMap::<u8, u8>::new();
}

/// Whether `case` (a conformance case file) is one TileDB writes (not a
/// mutation of another case's files).
fn written_by_tiledb(case: &Value) -> bool {
    case.get("base").is_none() && case.get("reads").is_some()
}

#[test]
fn what_tiledb_writes_on_s3_we_read_as_tiledb_reads_it() {
    let Some(python) = s3_support::python() else {
        return;
    };
    let Some(port) = moto_port() else { return };
    create_bucket(port, "fromtiledb");
    let config = our_config(port);
    let mut tiledb = s3_support::TileDb::start(&python, port);
    let cases_dir = workspace().join("conformance/cases");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&cases_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    cases.sort();
    cases.truncate(40);
    let (mut compared, mut skipped, mut failed) = (0, Vec::new(), Vec::new());
    let mut times = [std::time::Duration::ZERO; 3];
    for case_file in cases {
        let case =
            toml_to_json(toml::from_str(&std::fs::read_to_string(&case_file).unwrap()).unwrap());
        if !written_by_tiledb(&case) {
            continue;
        }
        let id = case_file
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let root = format!("s3://fromtiledb/{id}");
        let t = std::time::Instant::now();
        let replay = tiledb.ask(&json!({"op": "replay", "case_file": case_file, "out": root}));
        times[0] += t.elapsed();
        if let Some(err) = replay.get("error") {
            skipped.push(format!("{id}: {err}"));
            continue;
        }
        // Paths below a stand-in root, opened at the same keys on S3.
        let stand_in = Path::new("/stand-in");
        let on_s3 = |path: &Path| -> tiledb_runtime::Result<Box<dyn Storage>> {
            let rel = path.strip_prefix(stand_in).expect("a path below the root");
            open_url(&format!("{root}/{}", rel.display()), &config)
        };
        for read in case["reads"].as_array().unwrap() {
            let read_id = read["id"].as_str().unwrap_or_default();
            let t = std::time::Instant::now();
            let theirs = tiledb.ask(&json!({
                "op": "read", "array_root": root, "case_file": case_file, "read_id": read_id
            }));
            times[1] += t.elapsed();
            let t = std::time::Instant::now();
            let ours = tiledb_conformance::adapter::run_read_on(stand_in, &on_s3, &case, read);
            times[2] += t.elapsed();
            let verdict = match (theirs.get("error"), ours) {
                (Some(_), Err(_)) => Ok(()),
                (None, Ok(ours)) => tiledb_conformance::compare::compare(&theirs, &ours),
                (Some(e), Ok(_)) => Err(format!("TileDB failed ({e}), we read")),
                (None, Err(e)) => Err(format!("we failed: {e}")),
            };
            compared += 1;
            if let Err(why) = verdict {
                failed.push(format!("{id}/{read_id}: {why:.300}"));
            }
        }
    }
    println!("times {times:?}");
    println!(
        "{compared} reads compared; TileDB could not write {} case(s):",
        skipped.len()
    );
    for s in &skipped {
        println!("  {s:.200}");
    }
    assert!(
        failed.is_empty(),
        "{} reads differ:\n{}",
        failed.len(),
        failed.join("\n")
    );
    assert!(compared > 150, "{compared} reads compared");
}
