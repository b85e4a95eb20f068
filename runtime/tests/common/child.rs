//! Memory measured in a child process: the test binary runs itself again on
//! its ignored `child` test (the work given by an environment variable),
//! which prints one `RESULT name=value …` line read back here. A child, so
//! that the peak resident size is the work's alone, not the test harness's.

use std::process::Command;

/// The peak (`VmHWM:`) or current (`VmRSS:`) resident size of this process,
/// in KiB.
pub fn resident_kib(which: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(which))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{which} in /proc/self/status"))
}

/// The `RESULT` line a child printed.
pub struct ChildResult {
    /// The line after `RESULT `.
    pub line: String,
}

impl ChildResult {
    /// The value of `name=` on the line.
    pub fn field(&self, name: &str) -> u64 {
        self.line
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name}= in RESULT {}", self.line))
    }
}

/// Runs this test binary's ignored `child` test with `env` set to `value`;
/// it must succeed and print a `RESULT` line.
pub fn run_child_test(env: &str, value: &str) -> ChildResult {
    let exe = std::env::current_exe().unwrap();
    let output = Command::new(exe)
        .args([
            "child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(env, value)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("RESULT ").map(|(_, r)| r.to_string()))
        .unwrap_or_else(|| panic!("no RESULT line from the child:\n{stdout}"));
    ChildResult { line }
}
