//! An adapter that is an executable speaking the contract on its command line.
//!
//! When the program answers `serve` it is kept running and sent one request per line, which
//! saves starting an interpreter per read; otherwise each request is one command. Each
//! request has a time limit: a program that overruns it is killed, and one that dies is
//! restarted for the next request, so one bad case never stops the suite.
//!
//! A `serve` process lives through many requests, so a crash may come from the state its
//! earlier requests left (TileDB 2.30 under tiledb-py once aborted with glibc's "corrupted
//! size vs. prev_size" on a read that passes in a fresh process). A request that kills a
//! process which had answered before is therefore asked once more in a fresh one: a crash
//! there is the request's own and is reported as such; an answer there counts, with the
//! first crash kept as the result's note (`Adapter::take_note`).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{Adapter, Answer, Info};

/// How many trailing lines of the program's standard error a crash report quotes.
const STDERR_TAIL_LINES: usize = 8;

/// An implementation run as a program speaking the adapter contract
/// (`conformance/README.md`) on its command line or, when it `serve`s, one
/// request per line; it is stopped at the time limit.
pub struct ProcessAdapter {
    /// The program and its leading arguments; the contract's command follows them.
    command: Vec<String>,
    info: Info,
    timeout: Duration,
    serves: bool,
    session: Option<Session>,
    /// `--adapter` arguments that recreate this adapter (for reproduction commands).
    command_line: Vec<String>,
    /// What the last request went through besides its answer (see the module doc).
    note: Option<String>,
}

/// A running `serve` process.
struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<std::io::Result<String>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// The requests this process has answered.
    answered: usize,
}

impl Session {
    fn start(command: &[String]) -> Result<Session, String> {
        let (program, args) = command.split_first().ok_or("empty adapter command")?;
        let mut child = Command::new(program)
            .args(args)
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", command.join(" ")))?;
        let stdin = child.stdin.take().ok_or("no stdin pipe")?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let stderr_pipe = child.stderr.take().ok_or("no stderr pipe")?;
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let stop = line.is_err();
                if tx.send(line).is_err() || stop {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        keep_tail(stderr_pipe, Arc::clone(&stderr));
        Ok(Session {
            child,
            stdin,
            lines,
            stderr,
            answered: 0,
        })
    }

    /// Send one request line and wait for its answer line.
    fn request(&mut self, request: &Value, timeout: Duration) -> Answer {
        let line = format!("{request}\n");
        if let Err(e) = self
            .stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
        {
            return Answer::Crashed(self.death_report(&format!("writing the request: {e}")));
        }
        match self.lines.recv_timeout(timeout) {
            Ok(Ok(answer)) => match serde_json::from_str::<Value>(&answer) {
                Ok(value) => Answer::from_json(value),
                Err(e) => Answer::Crashed(format!(
                    "answered a line that is not JSON ({e}): {}",
                    shorten(&answer, 200)
                )),
            },
            Ok(Err(e)) => Answer::Crashed(self.death_report(&format!("reading its answer: {e}"))),
            Err(RecvTimeoutError::Disconnected) => {
                Answer::Crashed(self.death_report("closed its output without answering"))
            }
            Err(RecvTimeoutError::Timeout) => Answer::TimedOut(timeout),
        }
    }

    fn death_report(&mut self, what: &str) -> String {
        // The process is on its way out; give it a moment to leave an exit status.
        let deadline = Instant::now() + Duration::from_secs(2);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                _ => break None,
            }
        };
        let status = status.map_or("still running".to_string(), |s| s.to_string());
        with_stderr(&format!("{what} ({status})"), &self.stderr)
    }

    fn stop(mut self) {
        // Both may fail when the process is already gone, which is what we want anyway.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ProcessAdapter {
    /// Start the program: ask for `info` through `serve`, falling back to one-shot commands
    /// when the program does not serve.
    pub fn start(command: Vec<String>, timeout: Duration) -> Result<ProcessAdapter, String> {
        if command.is_empty() {
            return Err("empty adapter command".into());
        }
        let mut serves = false;
        let mut session = None;
        let mut info = None;
        if let Ok(mut s) = Session::start(&command) {
            let answer = s.request(&json!({"op": "info"}), timeout);
            match answer {
                Answer::Value(v) => match serde_json::from_value::<Info>(v) {
                    Ok(i) => {
                        info = Some(i);
                        serves = true;
                        session = Some(s);
                    }
                    Err(_) => s.stop(),
                },
                _ => s.stop(),
            }
        }
        let info = match info {
            Some(info) => info,
            None => match run_once(&command, &["info".to_string()], timeout) {
                Answer::Value(v) => serde_json::from_value::<Info>(v)
                    .map_err(|e| format!("{}: `info` answer: {e}", command.join(" ")))?,
                other => {
                    return Err(format!(
                        "{}: `info` failed: {}",
                        command.join(" "),
                        describe(&other)
                    ))
                }
            },
        };
        Ok(ProcessAdapter {
            command,
            info,
            timeout,
            serves,
            session,
            command_line: Vec::new(),
            note: None,
        })
    }

    /// Record the `tdb conformance` arguments that bring this adapter into a run.
    pub fn with_command_line(mut self, args: Vec<String>) -> ProcessAdapter {
        self.command_line = args;
        self
    }

    /// Rename the implementation (to keep names unique within one run).
    pub fn rename(&mut self, name: String) {
        self.info.name = name;
    }

    /// Whether the program answers in `serve` mode.
    pub fn serves(&self) -> bool {
        self.serves
    }

    fn request(&mut self, request: Value, args: Vec<String>) -> Answer {
        self.note = None;
        if !self.serves {
            return run_once(&self.command, &args, self.timeout);
        }
        let (answer, answered_before) = self.ask_session(&request);
        match answer {
            Answer::Crashed(first) if answered_before > 0 => {
                let again = self.ask_session(&request).0;
                if !matches!(again, Answer::Crashed(_)) {
                    self.note = Some(format!(
                        "the adapter's process crashed on this request after answering \
                         {answered_before} others ({first}); a fresh process answered it"
                    ));
                }
                again
            }
            answer => answer,
        }
    }

    /// Asks the running `serve` process (started if there is none) and says how many
    /// requests it had answered before this one.
    fn ask_session(&mut self, request: &Value) -> (Answer, usize) {
        let mut session = match self.session.take() {
            Some(s) => s,
            None => match Session::start(&self.command) {
                Ok(s) => s,
                Err(e) => return (Answer::Crashed(format!("restarting the adapter: {e}")), 0),
            },
        };
        let answered_before = session.answered;
        let answer = session.request(request, self.timeout);
        match answer {
            Answer::Value(_) | Answer::Refused { .. } => {
                session.answered += 1;
                self.session = Some(session);
            }
            // A dead, stuck or confused process is replaced before the next request.
            Answer::Crashed(_) | Answer::TimedOut(_) => session.stop(),
        }
        (answer, answered_before)
    }
}

impl Drop for ProcessAdapter {
    fn drop(&mut self) {
        if let Some(mut s) = self.session.take() {
            // Closing stdin ends a well-behaved `serve`; stop() covers the rest.
            let _ = s.stdin.flush();
            s.stop();
        }
    }
}

impl Adapter for ProcessAdapter {
    fn info(&self) -> &Info {
        &self.info
    }

    fn write(&mut self, case_file: &Path, out_dir: &Path) -> Answer {
        let request = json!({"op": "write", "case_file": case_file, "out_dir": out_dir});
        let args = vec!["write".to_string(), path_arg(case_file), path_arg(out_dir)];
        self.request(request, args)
    }

    fn read(&mut self, array_root: &Path, case_file: &Path, read_id: &str) -> Answer {
        let request = json!({
            "op": "read", "array_root": array_root, "case_file": case_file, "read_id": read_id,
        });
        let args = vec![
            "read".to_string(),
            path_arg(array_root),
            path_arg(case_file),
            read_id.to_string(),
        ];
        self.request(request, args)
    }

    fn command_line(&self) -> Vec<String> {
        self.command_line.clone()
    }

    fn take_note(&mut self) -> Option<String> {
        self.note.take()
    }
}

fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// One command of the contract as its own process.
fn run_once(command: &[String], args: &[String], timeout: Duration) -> Answer {
    let Some((program, lead)) = command.split_first() else {
        return Answer::Crashed("empty adapter command".into());
    };
    let child = Command::new(program)
        .args(lead)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return Answer::Crashed(format!("starting {}: {e}", command.join(" "))),
    };
    let stdout = child.stdout.take().map(read_all_in_background);
    let stderr = Arc::new(Mutex::new(VecDeque::new()));
    if let Some(pipe) = child.stderr.take() {
        keep_tail(pipe, Arc::clone(&stderr));
    }
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Answer::TimedOut(timeout);
            }
            Err(e) => return Answer::Crashed(format!("waiting for the adapter: {e}")),
        }
    };
    let out = stdout
        .and_then(|rx| rx.recv_timeout(Duration::from_secs(5)).ok())
        .unwrap_or_default();
    let parsed = serde_json::from_slice::<Value>(&out);
    match (status.code(), parsed) {
        (Some(0), Ok(v)) => Answer::Value(v),
        (Some(1), Ok(v)) if v.get("error").is_some() => Answer::from_json(v),
        (_, parsed) => {
            let what = match parsed {
                Ok(_) => format!("exited with {status}"),
                Err(_) => format!(
                    "exited with {status}, output not JSON: {}",
                    shorten(&String::from_utf8_lossy(&out), 200)
                ),
            };
            Answer::Crashed(with_stderr(&what, &stderr))
        }
    }
}

fn read_all_in_background(mut pipe: impl Read + Send + 'static) -> Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx
}

/// Keep the last lines of a program's standard error for crash reports.
fn keep_tail(pipe: impl Read + Send + 'static, tail: Arc<Mutex<VecDeque<String>>>) {
    thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if let Ok(mut t) = tail.lock() {
                if t.len() == STDERR_TAIL_LINES {
                    t.pop_front();
                }
                t.push_back(line);
            }
        }
    });
}

fn with_stderr(what: &str, tail: &Arc<Mutex<VecDeque<String>>>) -> String {
    // The stderr thread may still be draining the pipe of a process that just died.
    thread::sleep(Duration::from_millis(20));
    let lines: Vec<String> = tail
        .lock()
        .map(|t| t.iter().cloned().collect())
        .unwrap_or_default();
    if lines.is_empty() {
        what.to_string()
    } else {
        format!("{what}; stderr: {}", lines.join(" | "))
    }
}

fn shorten(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let cut: String = text.chars().take(max).collect();
        format!("{cut}…")
    }
}

fn describe(answer: &Answer) -> String {
    match answer {
        Answer::Value(v) => v.to_string(),
        Answer::Refused { class, message } => format!("{class}: {message}"),
        Answer::Crashed(m) => format!("crashed: {m}"),
        Answer::TimedOut(t) => format!("no answer within {}s", t.as_secs_f32()),
    }
}

/// The command line of the tiledb-py adapter under `conformance_dir`, with the Python of the
/// first venv that exists: `<workspace>/.venv-tiledb/bin/python`, then `$TILEDB_PY`.
pub fn tiledb_py_command(workspace: &Path, conformance_dir: &Path) -> Option<Vec<String>> {
    let script = conformance_dir
        .join("adapters")
        .join("tiledb_py_adapter.py");
    if !script.is_file() {
        return None;
    }
    let python = crate::oracle::tiledb_python_in(workspace)?;
    Some(vec![path_arg(&python), path_arg(&script)])
}
