//! Committed data survives a process killed at any moment.
//!
//! Each scenario of `conformance/crash/` (a recipe in the case format: fragment writes of
//! dense, sparse, var-sized and nullable fields, deletes, metadata puts and deletes, schema
//! evolution (attributes, enumerations added, extended and dropped, the current domain
//! expanded), group edits (members added by relative and absolute URI and removed, group
//! metadata put and deleted), consolidation and vacuum in all four modes, sparse and dense
//! streaming writes, writes with a dimension label) is replayed by a child
//! process (`replay-recipe`, our writer) that is killed with SIGKILL
//!
//! * just before a file-changing system call: `strace` delivers the signal on entry to the
//!   N-th `openat`, `write`, `rename`, `unlink`, `mkdir`, `fsync`, … (and fails the call, so it
//!   surely does not run), for every such call of the replay or an even sample of them;
//! * at random moments of an unhindered replay.
//!
//! After each kill the folder must hold exactly what was committed: every read of the scenario,
//! by our reader and by TileDB 2.30 (tiledb-py, through the conformance adapter), equals the
//! same read of a replay stopped before the interrupted operation or of one stopped after it
//! (all reads from the same one of the two) — or, for a streaming write, of a stream abandoned
//! after one of its batches (whole fragments only), and for a labelled write, of the label
//! arrays written and the array not yet — and `tdb check` finds no corruption. When the
//! interrupted operation was a consolidation or a vacuum, a second pass runs it again and the
//! reads must equal the replay that finished it; then stale temporary files are removed and
//! none may be left.
//!
//! Sizes: `CRASH_KILLS` (system-call kill points per scenario, evenly spread over the replay;
//! `all` for every one) and `CRASH_RANDOM_KILLS` (random-moment kills per scenario);
//! `CRASH_SEED` fixes the random moments. CI runs the defaults; the long run is in README.md.
//! Without `strace` or tiledb-py the test says what it leaves out, and fails under `CI=true`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tiledb_conformance::adapter::tiledb_py_command;
use tiledb_conformance::{Adapter, Answer, ProcessAdapter, RuntimeAdapter};
use tiledb_runtime::check::{check_array, CheckOptions};
use tiledb_runtime::storage::is_temp_file_name;
use tiledb_runtime::storage::LocalStorage;

/// File-changing system calls (and `openat`, which creates files): a kill lands just before
/// one of these.
const CHANGING_CALLS: &str = "openat,creat,write,pwrite64,writev,rename,renameat,renameat2,\
                              unlink,unlinkat,mkdir,mkdirat,rmdir,fsync,fdatasync,ftruncate,\
                              fallocate";

const DEFAULT_KILL_POINTS: usize = 60;
const DEFAULT_RANDOM_KILLS: usize = 10;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// One scenario: its file, operations and what each touches.
struct Scenario {
    file: PathBuf,
    text: String,
    /// `(op, uri)` per operation, as `replay-recipe` numbers them.
    operations: Vec<(String, String)>,
    /// The objects checked after a kill: the case's top folder.
    top: String,
    reads: Vec<String>,
}

impl Scenario {
    fn load(name: &str) -> Scenario {
        let file = workspace().join("conformance/crash").join(name);
        let text = std::fs::read_to_string(&file).expect("scenario");
        let case: toml::Value = toml::from_str(&text).expect("scenario toml");
        let top = case
            .get("uri")
            .and_then(toml::Value::as_str)
            .unwrap_or("array")
            .to_string();
        let mut operations = Vec::new();
        if case.get("schema").is_some() {
            operations.push(("create".to_string(), top.clone()));
        }
        for step in case
            .get("steps")
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
        {
            let op = step.get("op").and_then(toml::Value::as_str).expect("op");
            let uri = step
                .get("uri")
                .and_then(toml::Value::as_str)
                .unwrap_or(&top);
            operations.push((op.to_string(), uri.to_string()));
        }
        assert_eq!(
            operations
                .iter()
                .map(|(op, _)| op.clone())
                .collect::<Vec<_>>(),
            tiledb_conformance::recipe::recipe_operations(&text).expect("operations"),
            "the test and the replay number operations alike"
        );
        let reads = tiledb_conformance::case::Case::load(&file)
            .expect("case")
            .reads;
        Scenario {
            file,
            text,
            operations,
            top,
            reads,
        }
    }
}

/// The readers every state is read by.
struct Readers {
    runtime: RuntimeAdapter,
    tiledb: Option<ProcessAdapter>,
}

impl Readers {
    fn start() -> Readers {
        let workspace = workspace();
        let tiledb = match tiledb_py_command(&workspace, &workspace.join("conformance")) {
            Some(command) => Some(
                ProcessAdapter::start(command, Duration::from_secs(60))
                    .expect("the tiledb-py adapter starts"),
            ),
            None => {
                assert!(
                    !in_ci(),
                    "CI needs tiledb-py in .venv-tiledb to check crashed arrays with TileDB"
                );
                eprintln!("crash: tiledb-py not found (.venv-tiledb or $TILEDB_PY): TileDB does not reread the crashed arrays in this run");
                None
            }
        };
        Readers {
            runtime: RuntimeAdapter::new(),
            tiledb,
        }
    }

    /// Every read of the scenario by every reader, as comparable text: a canonical result,
    /// or the refusal's class (an array that does not exist yet is refused by both states
    /// alike). A crash or a timeout of a reader fails the test at once.
    fn read_all(&mut self, scenario: &Scenario, out_dir: &Path) -> Vec<String> {
        let mut outcomes = Vec::new();
        let mut readers: Vec<(&str, &mut dyn Adapter)> = vec![("ours", &mut self.runtime)];
        if let Some(tiledb) = self.tiledb.as_mut() {
            readers.push(("tiledb", tiledb));
        }
        for (name, reader) in readers {
            for read in &scenario.reads {
                let text = match reader.read(out_dir, &scenario.file, read) {
                    Answer::Value(value) => value.to_string(),
                    Answer::Refused { class, .. } => format!("refused ({class})"),
                    other => panic!(
                        "{name} read {read} of {} crashed or hung: {other:?}",
                        out_dir.display()
                    ),
                };
                outcomes.push(format!("{name} {read}: {text}"));
            }
        }
        outcomes
    }
}

/// The reads after each number of finished operations: `states[k]` after the first `k`.
fn reference_states(scenario: &Scenario, readers: &mut Readers) -> Vec<Vec<String>> {
    (0..=scenario.operations.len())
        .map(|k| {
            let dir = tempfile::tempdir().expect("tempdir");
            tiledb_conformance::recipe::replay_case_steps(
                &scenario.text,
                dir.path(),
                k,
                &mut |_, _| {},
            )
            .unwrap_or_else(|e| {
                panic!("{}: replay of {k} operations: {e}", scenario.file.display())
            });
            readers.read_all(scenario, dir.path())
        })
        .collect()
}

/// The states an operation may leave when killed part way, besides the states before and
/// after it (`partial[k]` for operation `k`):
///
/// * a streaming write (`write_stream`) commits a fragment per cut: the stream abandoned after
///   each of its batches but the last (`stop_after`);
/// * a labelled dense write writes the label's array first: the label arrays of the state
///   after it beside the rest of the state before it.
fn partial_states(scenario: &Scenario, readers: &mut Readers) -> Vec<Vec<Vec<String>>> {
    let case: toml::Value = toml::from_str(&scenario.text).expect("scenario toml");
    let first_step = usize::from(case.get("schema").is_some());
    let steps = case.get("steps").and_then(toml::Value::as_array);
    let has_labels = case
        .get("schema")
        .and_then(|s| s.get("dim_labels"))
        .is_some();
    (0..scenario.operations.len())
        .map(|k| {
            let Some(step) = k
                .checked_sub(first_step)
                .and_then(|i| steps.and_then(|s| s.get(i)))
            else {
                return Vec::new();
            };
            match step.get("op").and_then(toml::Value::as_str) {
                Some("write_stream") => {
                    let batches = step
                        .get("batches")
                        .and_then(toml::Value::as_array)
                        .map_or(0, Vec::len);
                    (1..batches)
                        .map(|j| {
                            let mut stopped = case.clone();
                            stopped["steps"][k - first_step]
                                .as_table_mut()
                                .expect("a step table")
                                .insert("stop_after".into(), toml::Value::Integer(j as i64));
                            let text = toml::to_string(&stopped).expect("toml");
                            let dir = tempfile::tempdir().expect("tempdir");
                            tiledb_conformance::recipe::replay_case_steps(
                                &text,
                                dir.path(),
                                k + 1,
                                &mut |_, _| {},
                            )
                            .unwrap_or_else(|e| panic!("stream stopped after {j} batches: {e}"));
                            readers.read_all(scenario, dir.path())
                        })
                        .collect()
                }
                Some("write") if has_labels => {
                    let before = tempfile::tempdir().expect("tempdir");
                    let after = tempfile::tempdir().expect("tempdir");
                    for (dir, limit) in [(&before, k), (&after, k + 1)] {
                        tiledb_conformance::recipe::replay_case_steps(
                            &scenario.text,
                            dir.path(),
                            limit,
                            &mut |_, _| {},
                        )
                        .expect("replay");
                    }
                    let labels = |dir: &Path| dir.join(&scenario.top).join("__labels");
                    std::fs::remove_dir_all(labels(before.path())).expect("label arrays");
                    copy_tree(&labels(after.path()), &labels(before.path()));
                    vec![readers.read_all(scenario, before.path())]
                }
                _ => Vec::new(),
            }
        })
        .collect()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// How a killed child ended.
struct Killed {
    /// The operation that had started last (`None`: none had).
    in_progress: Option<usize>,
    /// Whether the replay ran to its end before the kill came.
    finished: bool,
}

fn replay_command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_replay-recipe"))
}

fn progress(stderr: &[u8]) -> Option<usize> {
    String::from_utf8_lossy(stderr)
        .lines()
        .rev()
        .filter_map(|l| l.strip_prefix("operation "))
        .find_map(|l| l.split(' ').next()?.parse().ok())
}

fn strace_available() -> bool {
    Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Every kill point of a replay, in the order the calls happen: `(call, n)` is the n-th call
/// of that name by one thread (strace counts per call and per thread).
fn kill_points(scenario: &Scenario) -> Vec<(String, u32)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("trace.log");
    let out = dir.path().join("out");
    let status = Command::new("strace")
        .args(["-f", "-qq", "-e"])
        .arg(format!("trace={CHANGING_CALLS}"))
        .arg("-o")
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_replay-recipe"))
        .arg(&scenario.file)
        .arg(&out)
        .stderr(Stdio::null())
        .status()
        .expect("strace runs");
    assert!(status.success(), "the traced replay succeeds");
    let trace = std::fs::read_to_string(&log).expect("trace");
    let mut counts: std::collections::HashMap<(String, String), u32> = Default::default();
    let mut points = Vec::new();
    let mut seen = BTreeSet::new();
    for line in trace.lines() {
        // `PID call(args…` starts a call; `PID <... call resumed>` continues one.
        let Some((pid, rest)) = line.split_once(' ') else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(call) = rest.split('(').next() else {
            continue;
        };
        if rest.starts_with('<') || !call.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let n = counts
            .entry((pid.to_string(), call.to_string()))
            .and_modify(|n| *n += 1)
            .or_insert(1);
        if seen.insert((call.to_string(), *n)) {
            points.push((call.to_string(), *n));
        }
    }
    points
}

/// Replays the scenario into `out`, killed on entry to the `n`-th `call`.
fn kill_at_call(scenario: &Scenario, out: &Path, call: &str, n: u32) -> Killed {
    let output = Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "-e"])
        .arg(format!("trace={call}"))
        .arg("-e")
        .arg(format!("inject={call}:error=EIO:signal=SIGKILL:when={n}"))
        .arg(env!("CARGO_BIN_EXE_replay-recipe"))
        .arg(&scenario.file)
        .arg(out)
        .stdout(Stdio::null())
        .output()
        .expect("strace runs");
    Killed {
        in_progress: progress(&output.stderr),
        finished: output.status.success(),
    }
}

/// Replays the scenario into `out` and kills it after `delay`.
fn kill_after(scenario: &Scenario, out: &Path, delay: Duration) -> Killed {
    let stderr_file = out.with_extension("stderr");
    let mut child = replay_command()
        .arg(&scenario.file)
        .arg(out)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_file).expect("stderr file"))
        .spawn()
        .expect("replay starts");
    std::thread::sleep(delay);
    let _ = child.kill();
    let status = child.wait().expect("wait");
    let stderr = std::fs::read(&stderr_file).unwrap_or_default();
    Killed {
        in_progress: progress(&stderr),
        finished: status.success(),
    }
}

/// A small deterministic generator for the random moments (the seed is printed).
struct Lcg(u64);

impl Lcg {
    fn next_below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound.max(1)
    }
}

/// Creating operations are not atomic in TileDB either: an interrupted one may leave a
/// folder that is not yet an array or group, which every reader refuses.
fn is_create(op: &str) -> bool {
    matches!(op, "create" | "create_array" | "create_group")
}

struct Verdict {
    kills: usize,
    second_passes: usize,
    /// Kills that left a state part way through an operation (see [`partial_states`]).
    part_way: usize,
}

/// Checks the folder a killed replay left, then finishes an interrupted consolidation or
/// vacuum and checks again.
fn verify(
    scenario: &Scenario,
    readers: &mut Readers,
    (states, partial): (&[Vec<String>], &[Vec<Vec<String>>]),
    out: &Path,
    killed: &Killed,
    what: &str,
    verdict: &mut Verdict,
) {
    verdict.kills += 1;
    let done = match (killed.finished, killed.in_progress) {
        (true, _) => scenario.operations.len(),
        (false, None) => 0,
        (false, Some(p)) => p,
    };
    let interrupted = (!killed.finished)
        .then_some(killed.in_progress)
        .flatten()
        .map(|p| &scenario.operations[p]);
    let now = readers.read_all(scenario, out);
    let before = &states[done];
    let after = states.get(done + 1).unwrap_or(before);
    let creating = interrupted.is_some_and(|(op, _)| is_create(op));
    let part_way = interrupted.is_some() && partial[done].contains(&now);
    verdict.part_way += usize::from(part_way && now != *before && now != *after);
    let consistent = now == *before
        || now == *after
        || part_way
        || (creating
            && now
                .iter()
                .zip(before.iter().zip(after))
                .all(|(n, (b, a))| n == b || n == a || n.contains(": refused (")));
    if !consistent {
        let differing: Vec<String> = now
            .iter()
            .zip(before.iter().zip(after))
            .filter(|(n, (b, a))| n != b && n != a)
            .map(|(n, (b, a))| format!("  now:    {n}\n  before: {b}\n  after:  {a}"))
            .collect();
        panic!(
            "{}: killed {what} during operation {:?}: the reads match neither the state before \
             nor the state after it:\n{}",
            scenario.file.display(),
            interrupted,
            differing.join("\n")
        );
    }
    // The check: every object that exists whole. An interrupted creation may leave a
    // folder that is not an array yet (beside label arrays already made, which reads of
    // them find); readers refuse it, and so would check.
    let top = out.join(&scenario.top);
    let created_top = !(creating
        && interrupted.is_some_and(|(_, uri)| *uri == scenario.top)
        && now.iter().any(|n| n.contains(": refused (")));
    if top.exists() && created_top {
        let report = check_array(&top, &CheckOptions::default());
        assert!(
            report.findings.is_empty(),
            "{}: killed {what} during operation {:?}: tdb check finds:\n{}",
            scenario.file.display(),
            interrupted,
            report
                .findings
                .iter()
                .map(|f| format!("  {f}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    // The second pass: finish an interrupted consolidation or vacuum.
    let Some(p) = killed.in_progress.filter(|_| !killed.finished) else {
        return;
    };
    let (op, uri) = &scenario.operations[p];
    if op != "consolidate" && op != "vacuum" {
        return;
    }
    tiledb_conformance::recipe::rerun_operation(&scenario.text, out, p).unwrap_or_else(|e| {
        panic!(
            "{}: killed {what}: running the interrupted {op} (operation {p}) again fails: {e}",
            scenario.file.display()
        )
    });
    verdict.second_passes += 1;
    let finished = readers.read_all(scenario, out);
    assert_eq!(
        finished,
        states[p + 1],
        "{}: killed {what}: after the interrupted {op} (operation {p}) ran again",
        scenario.file.display()
    );
    let root = out.join(uri);
    let report = check_array(&root, &CheckOptions::default());
    assert!(
        report.findings.is_empty(),
        "{}: killed {what}: after the interrupted {op} ran again, tdb check finds: {:?}",
        scenario.file.display(),
        report.findings
    );
    let storage = LocalStorage::new(&root);
    tiledb_runtime::vacuum::remove_stale_temp_files(&storage, 0).expect("temp files removed");
    let left = temp_files(&root);
    assert!(
        left.is_empty(),
        "{}: killed {what}: temporary files left after vacuum: {left:?}",
        scenario.file.display()
    );
}

/// Every `.tmp` file under `dir`.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if entry.file_name().to_str().is_some_and(is_temp_file_name) {
                found.push(path);
            }
        }
    }
    found
}

fn env_count(name: &str, default: usize) -> Option<usize> {
    match std::env::var(name) {
        Ok(v) if v == "all" => None,
        Ok(v) => Some(
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v}: a number or `all`")),
        ),
        Err(_) => Some(default),
    }
}

/// `count` of `points`, spread evenly (first and last included).
fn spread<T: Clone>(points: &[T], count: Option<usize>) -> Vec<T> {
    match count {
        Some(count) if count < points.len() => (0..count)
            .map(|i| points[i * (points.len() - 1) / (count.max(2) - 1)].clone())
            .collect(),
        _ => points.to_vec(),
    }
}

fn run_scenario(name: &str) {
    let scenario = Scenario::load(name);
    let mut readers = Readers::start();
    let states = reference_states(&scenario, &mut readers);
    let partial = partial_states(&scenario, &mut readers);
    let scratch = tempfile::tempdir().expect("tempdir");
    let mut verdict = Verdict {
        kills: 0,
        second_passes: 0,
        part_way: 0,
    };
    let mut run = 0usize;
    let mut fresh = || {
        run += 1;
        scratch.path().join(format!("run{run}"))
    };

    if strace_available() {
        let points = kill_points(&scenario);
        let chosen = spread(&points, env_count("CRASH_KILLS", DEFAULT_KILL_POINTS));
        for (call, n) in &chosen {
            let out = fresh();
            let killed = kill_at_call(&scenario, &out, call, *n);
            verify(
                &scenario,
                &mut readers,
                (&states, &partial),
                &out,
                &killed,
                &format!("before {call} #{n}"),
                &mut verdict,
            );
        }
        eprintln!(
            "crash {name}: {} of {} kill points before file-changing calls",
            chosen.len(),
            points.len()
        );
    } else {
        assert!(!in_ci(), "CI needs strace for the kill points");
        eprintln!(
            "crash {name}: strace not found: no kills before file-changing calls in this run"
        );
    }

    // Random moments, within the time an unhindered replay takes.
    let started = Instant::now();
    let status = replay_command()
        .arg(&scenario.file)
        .arg(fresh())
        .stderr(Stdio::null())
        .status()
        .expect("replay");
    assert!(status.success());
    let full = started.elapsed().as_micros() as u64;
    let seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    let mut random = Lcg(seed);
    let random_kills = env_count("CRASH_RANDOM_KILLS", DEFAULT_RANDOM_KILLS).unwrap_or(200);
    for _ in 0..random_kills {
        let delay = Duration::from_micros(random.next_below(full));
        let out = fresh();
        let killed = kill_after(&scenario, &out, delay);
        verify(
            &scenario,
            &mut readers,
            (&states, &partial),
            &out,
            &killed,
            &format!("after {delay:?} (CRASH_SEED={seed})"),
            &mut verdict,
        );
    }
    eprintln!(
        "crash {name}: {} kills in all, {} left a state part way through a stream or a labelled \
         write, {} interrupted consolidations or vacuums finished by a second pass; TileDB {}",
        verdict.kills,
        verdict.part_way,
        verdict.second_passes,
        if readers.tiledb.is_some() {
            "reread every state"
        } else {
            "absent"
        }
    );
}

#[test]
fn dense_array_operations_survive_kills() {
    run_scenario("crash.dense.toml");
}

#[test]
fn sparse_array_operations_survive_kills() {
    run_scenario("crash.sparse.toml");
}

#[test]
fn group_edits_survive_kills() {
    run_scenario("crash.group.toml");
}

#[test]
fn schema_evolution_and_metadata_survive_kills() {
    run_scenario("crash.evolve.toml");
}

#[test]
fn streaming_writes_survive_kills() {
    run_scenario("crash.stream.toml");
}

#[test]
fn labelled_writes_and_dense_streams_survive_kills() {
    run_scenario("crash.labels.toml");
}
