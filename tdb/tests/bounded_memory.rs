//! `tdb read` and `tdb check` on arrays whose files were grown to 10 GiB
//! (sparse: no disk is used) answer at once and in little memory: the peak
//! resident size of every `tdb` run here stays under 200 MiB. Each run has
//! a deadline, so a hang (a FIFO in place of a data file) fails the test.
#![allow(
    unsafe_code,
    reason = "the getrusage FFI call; its block states its SAFETY"
)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{copy_dir, tdb_command};

const GROWN: u64 = 10 << 30;
const PEAK_BOUND_KIB: i64 = 200 << 10;
const DEADLINE: Duration = Duration::from_secs(60);

/// A fresh copy of the corpus array `sparse.basic.int32` under `scratch`.
fn copy_case(scratch: &Path, name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/corpus/tiledb-2.30/sparse.basic.int32/array");
    let root = scratch.join(name);
    copy_dir(&source, &root);
    root
}

fn only_entry(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path()
}

fn grow(file: &Path) {
    let f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    f.set_len(GROWN).unwrap();
}

/// Runs `tdb args…` to its end or the deadline; its exit code and stderr.
fn tdb(args: &[&Path]) -> (i32, String) {
    let mut child = tdb_command()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tdb");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status.code().unwrap_or(-1), err);
        }
        if start.elapsed() > DEADLINE {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("tdb {args:?}: no answer within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The largest peak resident size of any finished child, in KiB.
fn peak_child_kib() -> i64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) },
        0
    );
    usage.ru_maxrss
}

#[test]
fn grown_files_are_answered_in_little_memory() {
    let scratch = std::env::temp_dir().join(format!("tdb-bounded-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);

    // A schema grown past its tile: read as TileDB reads it.
    let root = copy_case(&scratch, "schema");
    grow(&only_entry(&root.join("__schema")));
    let (code, err) = tdb(&[Path::new("read"), &root]);
    assert_eq!(code, 0, "{err}");

    // A data file grown past its tiles: read; the check reports its size.
    let root = copy_case(&scratch, "data");
    let fragment = only_entry(&root.join("__fragments"));
    grow(&fragment.join("a0.tdb"));
    let (code, err) = tdb(&[Path::new("read"), &root]);
    assert_eq!(code, 0, "{err}");
    let (code, _) = tdb(&[Path::new("check"), &root]);
    assert_eq!(code, 1);

    // Fragment metadata grown with zeros: corrupt, found from its end.
    let root = copy_case(&scratch, "metadata");
    let fragment = only_entry(&root.join("__fragments"));
    grow(&fragment.join("__fragment_metadata.tdb"));
    let (code, err) = tdb(&[Path::new("read"), &root]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("__fragment_metadata.tdb"), "{err}");
    let (code, _) = tdb(&[Path::new("check"), &root]);
    assert_eq!(code, 1);

    // A FIFO in place of a data file: refused at once.
    let root = copy_case(&scratch, "fifo");
    let fragment = only_entry(&root.join("__fragments"));
    let data = fragment.join("a0.tdb");
    std::fs::remove_file(&data).unwrap();
    assert!(Command::new("mkfifo")
        .arg(&data)
        .status()
        .unwrap()
        .success());
    let (code, err) = tdb(&[Path::new("read"), &root]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("FIFO"), "{err}");
    let (code, _) = tdb(&[Path::new("check"), &root]);
    assert_eq!(code, 1);

    let peak = peak_child_kib();
    let _ = std::fs::remove_dir_all(&scratch);
    println!("peak resident size of the tdb runs: {peak} KiB");
    assert!(
        peak < PEAK_BOUND_KIB,
        "a tdb run peaked at {peak} KiB, more than {PEAK_BOUND_KIB}"
    );
}
