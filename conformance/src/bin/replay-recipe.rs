//! Replays a case recipe (`conformance/cases/*.toml`, `conformance/crash/*.toml`) with this
//! runtime as the writer, the way the `tiledb-runtime` live writer of `tdb conformance` does.
//!
//! ```text
//! replay-recipe CASE.toml OUT_DIR [--operations N]
//! ```
//!
//! Each operation (`create` for the case's schema, then each step's `op`) is announced on
//! standard error as `operation <index> <op>` before it starts, so a process that kills the
//! replay (the crash test, `conformance/tests/crash.rs`) knows which operation it interrupted.
//! `--operations N` stops after the first N. Exit status: 0 done, 1 the replay failed, 2 usage.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (case, out, limit) = match args.as_slice() {
        [case, out] => (case, out, usize::MAX),
        [case, out, flag, n] if flag == "--operations" => match n.parse() {
            Ok(n) => (case, out, n),
            Err(_) => return usage(),
        },
        _ => return usage(),
    };
    let text = match std::fs::read_to_string(case) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("replay-recipe: {case}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut announce = |index: usize, op: &str| {
        // Unbuffered and complete before the operation's first change.
        let _ = writeln!(std::io::stderr().lock(), "operation {index} {op}");
    };
    match tiledb_conformance::recipe::replay_case_steps(
        &text,
        &PathBuf::from(out),
        limit,
        &mut announce,
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("replay-recipe: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> ExitCode {
    eprintln!("usage: replay-recipe CASE.toml OUT_DIR [--operations N]");
    ExitCode::from(2)
}
