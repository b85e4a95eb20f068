//! Shared by the `tdb` tests (`mod support;` in each): where the workspace,
//! the corpus and TileDB's Python are, running the built `tdb`, copying and
//! snapshotting arrays, and a refused command's checks (exit 2, the message,
//! the array left as it was).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The workspace root (the parent of this crate).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tdb sits in the workspace")
        .to_path_buf()
}

/// The folder of a case of the TileDB 2.30 corpus (its `array/` and
/// `expected.json`).
pub fn corpus_case(case: &str) -> PathBuf {
    workspace()
        .join("conformance/corpus/tiledb-2.30")
        .join(case)
}

/// The array of a corpus case.
pub fn corpus_array(case: &str) -> PathBuf {
    corpus_case(case).join("array")
}

/// The built `tdb`, with no key from the environment (a test that wants
/// one sets it).
pub fn tdb_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tdb"));
    command.env_remove("TDB_KEY");
    command
}

/// Runs `tdb` with `args` to its end.
pub fn tdb<P: AsRef<OsStr>>(args: &[P]) -> Output {
    tdb_command().args(args).output().expect("tdb runs")
}

/// The standard output of `tdb` with `args`, which must succeed.
pub fn ok<P: AsRef<OsStr> + Debug>(args: &[P]) -> Vec<u8> {
    succeeded(tdb(args), args)
}

/// The standard output of a run that must have succeeded.
pub fn succeeded<P: Debug>(out: Output, args: &[P]) -> Vec<u8> {
    assert!(
        out.status.success(),
        "tdb {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The Python of the TileDB oracle venv (`.venv-tiledb/` in the workspace,
/// or `$TILEDB_PY`); `None`, with the reason printed, when there is none,
/// so that the caller skips what needs TileDB.
pub fn tiledb_python() -> Option<PathBuf> {
    tiledb_conformance::oracle::tiledb_python_or_skip("the TileDB half")
}

/// Copies the folder `from` (every file and folder below it) to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every file (with its bytes) and folder (empty) below `dir`, by its path
/// relative to `dir`: equal before and after a command that left it as it
/// was.
pub fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            let relative = path.strip_prefix(dir).unwrap().to_path_buf();
            if path.is_dir() {
                out.insert(relative, Vec::new());
                stack.push(path);
            } else {
                out.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// `command` (a `tdb` run) exits 2 with `needle` in its message and leaves
/// every file below `dir` as it was.
pub fn refused_by(mut command: Command, needle: &str, dir: &Path) {
    let before = files(dir);
    let out = command.output().expect("tdb runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{command:?}: {stderr}");
    assert!(
        stderr.contains(needle),
        "{command:?}: {stderr:?} does not say {needle:?}"
    );
    assert_eq!(files(dir), before, "{command:?} changed {}", dir.display());
}

/// `tdb` with `args` exits 2 with `needle` in its message and leaves every
/// file below `dir` as it was.
pub fn refused<P: AsRef<OsStr>>(args: &[P], needle: &str, dir: &Path) {
    let mut command = tdb_command();
    command.args(args);
    refused_by(command, needle, dir);
}

/// Runs `tdb args` and returns its peak resident size in KiB: its
/// `VmHWM`, read while it runs (the high-water mark of its own address
/// space; the `ru_maxrss` of a child counts the forking test process's
/// size too).
pub fn peak_kib_of_tdb(args: &[&str]) -> i64 {
    run_and_watch_peak(args, false).1
}

/// Runs `tdb args`, which must succeed, and returns its standard output
/// with its peak resident size in KiB (as `peak_kib_of_tdb`): one run
/// checks both what a command prints and the memory it took.
pub fn ok_and_peak_kib_of_tdb(args: &[&str]) -> (Vec<u8>, i64) {
    run_and_watch_peak(args, true)
}

/// Runs `tdb args` to its end, reading its `VmHWM` every 2 ms; its standard
/// output is kept when `keep_output` (read on a thread of this process, so
/// not counted in `tdb`'s peak), else dropped.
fn run_and_watch_peak(args: &[&str], keep_output: bool) -> (Vec<u8>, i64) {
    let mut child = tdb_command()
        .args(args)
        .stdout(if keep_output {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let reader = child.stdout.take().map(|mut stdout| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut stdout, &mut out).map(|_| out)
        })
    });
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = std::fs::read_to_string(&status_file).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        }) {
            peak = kib;
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    assert!(status.success(), "tdb {args:?} failed: {status}");
    assert!(peak > 0, "no VmHWM read for tdb {args:?}");
    let output = reader.map_or_else(Vec::new, |r| r.join().unwrap().unwrap());
    (output, peak)
}
