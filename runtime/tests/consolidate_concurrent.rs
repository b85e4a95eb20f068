//! Readers during consolidation and vacuum never fail and never see a torn
//! state: while one thread consolidates and vacuums an array of many
//! fragments in every mode, step after step, readers read it over and over
//! — ours in threads, TileDB (tiledb-py) in its own process — and every
//! read must succeed and equal the read before the first consolidation.
//!
//! One exception, TileDB's: its reader lists the folder once, so a vacuum
//! that removes a fragment (or metadata file) it listed before the
//! consolidation, while it is still loading, makes it fail with "No such
//! file" — TileDB's own vacuum does the same to it. Such a failure is
//! excused only when a vacuum overlapped that read and the message is that
//! one; ours lists again and retries, and has no excuse.
//!
//! Sizes: `CONCURRENT_FRAGMENTS` fragments per array (default 40) and
//! `CONCURRENT_ROUNDS` passes over the four modes (default 2; the longer
//! run in README.md). Without the oracle venv only our readers run, and the
//! test says so.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::workspace;
use tiledb_conformance::adapter::tiledb_py_command;
use tiledb_conformance::{Adapter, Answer, ProcessAdapter, RuntimeAdapter};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::consolidate::{ConsolidationConfig, ConsolidationMode};

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A recipe of `n` small writes (sparse: with two deletes) and a metadata
/// put per write.
fn recipe(dense: bool, n: usize) -> String {
    let mut out = if dense {
        "id = \"concurrent.dense\"\ntitle = \"t\"\nlevel = \"optional\"\nmin_format = 22\n\n\
         [schema]\ntype = \"dense\"\n\
         dims = [{ name = \"d\", type = \"INT64\", domain = [0, 9999], tile = 8 }]\n\
         attrs = [{ name = \"a\", type = \"INT32\" }, \
                  { name = \"s\", type = \"STRING_UTF8\", cell_val_num = \"var\", nullable = true }]\n\n"
            .to_string()
    } else {
        "id = \"concurrent.sparse\"\ntitle = \"t\"\nlevel = \"optional\"\nmin_format = 22\n\n\
         [schema]\ntype = \"sparse\"\ncapacity = 8\n\
         dims = [{ name = \"d\", type = \"INT64\", domain = [0, 9999], tile = 100 }]\n\
         attrs = [{ name = \"a\", type = \"INT32\" }, \
                  { name = \"s\", type = \"STRING_UTF8\", cell_val_num = \"var\", nullable = true }]\n\n"
            .to_string()
    };
    for k in 0..n {
        let t = 10 + k;
        // Overlapping ranges: later writes overwrite earlier cells.
        let start = (k * 13) % 200;
        let count = 16;
        let a: Vec<String> = (0..count)
            .map(|i| ((k * 31 + i) % 50).to_string())
            .collect();
        let s: Vec<String> = (0..count).map(|i| format!("\"w{k}c{i}\"")).collect();
        let valid: Vec<&str> = (0..count)
            .map(|i| if i % 5 == 0 { "0" } else { "1" })
            .collect();
        let place = if dense {
            format!("subarray = [[{start}, {}]]", start + count - 1)
        } else {
            let d: Vec<String> = (start..start + count).map(|d| d.to_string()).collect();
            format!("coords = {{ d = [{}] }}", d.join(", "))
        };
        out += &format!(
            "[[steps]]\nop = \"write\"\ntimestamp = {t}\n{place}\n\
             data = {{ a = [{}], s = [{}] }}\nvalidity = {{ s = [{}] }}\n\n\
             [[steps]]\nop = \"meta_put\"\ntimestamp = {t}\nkey = \"k{}\"\ntype = \"INT32\"\nvalues = [{k}]\n\n",
            a.join(", "),
            s.join(", "),
            valid.join(", "),
            k % 7,
        );
        if !dense && (k == n / 3 || k == 2 * n / 3) {
            out += &format!(
                "[[steps]]\nop = \"delete\"\ntimestamp = {t}\ncondition = \"a < {}\"\n\n",
                3 + k % 4
            );
        }
    }
    out + "[[reads]]\nid = \"all\"\nlayout = \"row-major\"\n\n[[reads]]\nid = \"metadata\"\nkind = \"metadata\"\n"
}

/// Both reads of the array under `dir`, as text; a refusal or crash is
/// text too (and differs from the expected reads).
fn reads(reader: &mut dyn Adapter, dir: &Path, case: &Path) -> Vec<String> {
    ["all", "metadata"]
        .iter()
        .map(|id| match reader.read(dir, case, id) {
            Answer::Value(v) => v.to_string(),
            other => format!("{id}: {other:?}"),
        })
        .collect()
}

/// Consolidates and vacuums in every mode, `rounds` times; fragment
/// consolidation merges runs of at most four, two steps at a time, so
/// many states follow one another.
fn consolidate_and_vacuum(array: &Path, rounds: usize, vacuums: &Vacuums) -> usize {
    let mut states = 0;
    for _ in 0..rounds {
        for mode in ConsolidationMode::ALL {
            let opened = Array::open_path(array, OpenOptions::default()).unwrap();
            let mut config = ConsolidationConfig {
                mode,
                ..Default::default()
            };
            if mode == ConsolidationMode::Fragments {
                config.step_min_frags = 2;
                config.step_max_frags = 4;
                config.steps = 2;
            }
            opened.consolidate(&config).unwrap();
            vacuums.let_readers_read();
            vacuums.started.fetch_add(1, Ordering::SeqCst);
            opened.vacuum(mode).unwrap();
            vacuums.finished.fetch_add(1, Ordering::SeqCst);
            vacuums.let_readers_read();
            states += 2;
        }
    }
    states
}

/// Where a read differs from the expected one, with some context.
fn first_difference(expected: &[String], got: &[String]) -> String {
    for (e, g) in expected.iter().zip(got) {
        if e != g {
            let at = e
                .bytes()
                .zip(g.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(e.len().min(g.len()));
            let from = at.saturating_sub(80);
            let window = |s: &str| {
                s.get(from..(at + 120).min(s.len()))
                    .unwrap_or("")
                    .to_string()
            };
            return format!(
                "expected …{}… got …{}… ({} vs {} bytes)",
                window(e),
                window(g),
                e.len(),
                g.len()
            );
        }
    }
    "same reads".into()
}

/// Vacuums begun and ended so far: a read overlapped one when more had
/// begun at its end than had ended at its start.
#[derive(Default)]
struct Vacuums {
    started: AtomicUsize,
    finished: AtomicUsize,
    /// Reads finished by all readers.
    reads: AtomicUsize,
    /// Readers running.
    readers: AtomicUsize,
}

impl Vacuums {
    /// Waits (up to 20 s) until every reader could finish a read begun
    /// after now: each state between two operations is read, while other
    /// reads overlap the operations.
    fn let_readers_read(&self) {
        let target = self.reads.load(Ordering::SeqCst) + 2 * self.readers.load(Ordering::SeqCst);
        let start = std::time::Instant::now();
        while self.reads.load(Ordering::SeqCst) < target
            && start.elapsed() < Duration::from_secs(20)
        {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// What one reader saw.
#[derive(Default)]
struct Tally {
    reads: usize,
    wrong: Vec<String>,
    /// TileDB's failures on a file a vacuum removed under it.
    excused: usize,
}

/// A reader thread: reads until `stop`.
fn spawn_reader(
    mut reader: Box<dyn Adapter + Send>,
    excusable: bool,
    dir: PathBuf,
    case: PathBuf,
    expected: Vec<String>,
    stop: Arc<AtomicBool>,
    vacuums: Arc<Vacuums>,
) -> std::thread::JoinHandle<Tally> {
    vacuums.readers.fetch_add(1, Ordering::SeqCst);
    std::thread::spawn(move || {
        let mut tally = Tally::default();
        while !stop.load(Ordering::SeqCst) {
            let ended_before = vacuums.finished.load(Ordering::SeqCst);
            let got = reads(reader.as_mut(), &dir, &case);
            let overlapped = vacuums.started.load(Ordering::SeqCst) > ended_before;
            vacuums.reads.fetch_add(1, Ordering::SeqCst);
            tally.reads += 1;
            if got == expected {
                continue;
            }
            let removed_under_it = got.iter().all(|g| {
                expected.contains(g) || (g.contains("Refused") && g.contains("No such file"))
            });
            if excusable && overlapped && removed_under_it {
                tally.excused += 1;
            } else {
                tally.wrong.push(first_difference(&expected, &got));
            }
        }
        tally
    })
}

#[test]
fn readers_during_consolidation_and_vacuum_see_every_cell_and_never_fail() {
    let fragments = env_number("CONCURRENT_FRAGMENTS", 40);
    let rounds = env_number("CONCURRENT_ROUNDS", 2);
    let ws = workspace();
    let tiledb_command = tiledb_py_command(&ws, &ws.join("conformance"));
    if tiledb_command.is_none() {
        println!(
            "TileDB does not read during consolidation: no tiledb-py (.venv-tiledb or $TILEDB_PY)"
        );
    }
    for dense in [false, true] {
        let work = tempfile::tempdir().unwrap();
        let case = work.path().join("case.toml");
        std::fs::write(&case, recipe(dense, fragments)).unwrap();
        let mut ours = RuntimeAdapter::new();
        let written = ours.write(&case, work.path());
        assert!(matches!(written, Answer::Value(_)), "{written:?}");
        let expected = reads(&mut ours, work.path(), &case);
        assert!(
            expected.iter().all(|r| !r.contains("Refused")),
            "{expected:?}"
        );
        let stop = Arc::new(AtomicBool::new(false));
        let vacuums = Arc::new(Vacuums::default());
        let mut readers: Vec<(&str, Box<dyn Adapter + Send>)> = vec![
            ("ours", Box::new(RuntimeAdapter::new())),
            ("ours", Box::new(RuntimeAdapter::new())),
        ];
        if let Some(command) = &tiledb_command {
            let mut tiledb = ProcessAdapter::start(command.clone(), Duration::from_secs(120))
                .expect("the tiledb-py adapter starts");
            assert_eq!(
                reads(&mut tiledb, work.path(), &case),
                expected,
                "TileDB reads the array as we do before consolidating"
            );
            readers.push(("TileDB", Box::new(tiledb)));
        }
        let handles: Vec<_> = readers
            .into_iter()
            .map(|(name, reader)| {
                let handle = spawn_reader(
                    reader,
                    name == "TileDB",
                    work.path().to_path_buf(),
                    case.clone(),
                    expected.clone(),
                    Arc::clone(&stop),
                    Arc::clone(&vacuums),
                );
                (name, handle)
            })
            .collect();
        let states = consolidate_and_vacuum(&work.path().join("array"), rounds, &vacuums);
        stop.store(true, Ordering::SeqCst);
        let kind = if dense { "dense" } else { "sparse" };
        let (mut total, mut excused) = (0, 0);
        for (name, handle) in handles {
            let tally = handle.join().expect("a reader thread");
            total += tally.reads;
            excused += tally.excused;
            assert!(
                tally.wrong.is_empty(),
                "{kind}: {name} read {} of {} reads wrong during consolidation, e.g. {}",
                tally.wrong.len(),
                tally.reads,
                tally.wrong[0]
            );
        }
        let left = std::fs::read_dir(work.path().join("array/__fragments"))
            .unwrap()
            .count();
        println!(
            "{kind}: {total} reads during {states} consolidations and vacuums, all equal but \
             {excused} of TileDB's failing on a file a vacuum removed under it; \
             {left} fragments left of {fragments}"
        );
        assert_eq!(reads(&mut ours, work.path(), &case), expected);
    }
}
