//! Adapters: how the runner drives an implementation.
//!
//! An implementation joins the kit through the adapter contract of `conformance/README.md`
//! (`info`, `write`, `read`, `serve`). [`ProcessAdapter`] speaks that contract to any
//! executable; [`RuntimeAdapter`] is our own runtime, called in-process. Adapters only dump
//! canonical JSON: all comparing is done by the runner.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod process;
mod runtime;

pub use process::tiledb_py_command;
pub use process::ProcessAdapter;
pub use runtime::{run_read, run_read_on, Failure, Opener, RuntimeAdapter};

/// What an implementation says about itself (`info`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Info {
    /// The name it goes by in matrices, known-failure files and `--reader`/`--writer`.
    pub name: String,
    /// Its version, as the report shows it.
    pub version: String,
    /// `reader`, `writer`.
    pub roles: Vec<String>,
    /// The format versions it reads.
    pub format_versions: Vec<u32>,
    /// The format version its writes produce (writers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_format_version: Option<u32>,
    /// Capability names from [`crate::case::CAPABILITIES`] it supports.
    pub capabilities: Vec<String>,
}

impl Info {
    /// It answers reads.
    pub fn is_reader(&self) -> bool {
        self.roles.iter().any(|r| r == "reader")
    }

    /// It replays case recipes.
    pub fn is_writer(&self) -> bool {
        self.roles.iter().any(|r| r == "writer")
    }

    pub(crate) fn claims(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }

    /// The first capability in `required` this implementation does not claim.
    pub(crate) fn first_unclaimed<'a>(&self, required: &'a [String]) -> Option<&'a str> {
        required
            .iter()
            .find(|c| !self.claims(c))
            .map(String::as_str)
    }
}

/// The answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A result (canonical JSON for reads, `{"ok": true}` for writes).
    Value(Value),
    /// The implementation refused, with an error class of the contract (`unsupported`,
    /// `corrupt`, `usage`, `io`, `other`) and its message.
    Refused {
        /// The error class.
        class: String,
        /// The implementation's own message, for the person reading the report.
        message: String,
    },
    /// The implementation died, or answered something that is not the contract's JSON.
    Crashed(String),
    /// No answer within the time limit (the adapter was stopped).
    TimedOut(Duration),
}

impl Answer {
    /// Sort an answer line (or a one-shot command's output) into a value or a refusal.
    pub(crate) fn from_json(value: Value) -> Answer {
        if let Some(class) = value.get("error") {
            let class = class.as_str().unwrap_or("other").to_string();
            let message = value
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            Answer::Refused { class, message }
        } else {
            Answer::Value(value)
        }
    }
}

/// One implementation under test.
pub trait Adapter {
    /// What the implementation said about itself when it started.
    fn info(&self) -> &Info;

    /// Replay the case recipe `case_file` into `out_dir`.
    fn write(&mut self, case_file: &Path, out_dir: &Path) -> Answer;

    /// Run the read `read_id` of `case_file` against the folders in `array_root`.
    fn read(&mut self, array_root: &Path, case_file: &Path, read_id: &str) -> Answer;

    /// Extra `tdb conformance` arguments that bring this adapter into a run (empty for the
    /// adapters every run has), for the reproduction commands.
    fn command_line(&self) -> Vec<String> {
        Vec::new()
    }

    /// What the last request went through besides its answer, to be shown with its
    /// result: for a program in `serve` mode, a crash of its long-running process that the
    /// request did not repeat in a fresh one. `None` for an ordinary answer.
    fn take_note(&mut self) -> Option<String> {
        None
    }
}
