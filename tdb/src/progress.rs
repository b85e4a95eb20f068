//! Progress on standard error for the long commands (`tdb read`, `tdb
//! check`): shown only when standard error is a terminal, and only once a
//! command has run for a moment — tests, pipes and quick commands never
//! see it. Cleared when the command ends.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a command runs before its progress appears.
const QUIET_START: Duration = Duration::from_millis(700);

/// A counter of cells read, drawn once the read has run for a moment.
pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    terminal: bool,
    shown: bool,
}

impl Progress {
    /// A counter of `unit` (e.g. "cells") for `what`; a known `total`
    /// draws a bar, else a count and a rate.
    pub fn new(what: &str, unit: &str, total: Option<u64>) -> Progress {
        let bar = match total {
            Some(total) => ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden())
                .with_style(
                    ProgressStyle::with_template(&format!(
                        "{{spinner}} {what} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit} ({{per_sec}}, {{eta}} left)"
                    ))
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                ),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()).with_style(
                ProgressStyle::with_template(&format!(
                    "{{spinner}} {what}: {{human_pos}} {unit} ({{elapsed}})"
                ))
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        };
        Progress {
            bar,
            start: Instant::now(),
            terminal: std::io::stderr().is_terminal(),
            shown: false,
        }
    }

    /// Counts `n` more.
    pub fn advance(&mut self, n: u64) {
        self.bar.inc(n);
        self.show_when_due();
    }

    /// Draws the progress (updated on its own every so often) once the
    /// command has run past its quiet start.
    fn show_when_due(&mut self) {
        if self.terminal && !self.shown && self.start.elapsed() >= QUIET_START {
            self.shown = true;
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.bar.enable_steady_tick(Duration::from_millis(120));
        }
    }

    /// A spinner that ticks on its own (for work that reports no counts),
    /// shown from the start when standard error is a terminal.
    pub fn spinner(message: &str) -> Progress {
        let mut progress = Progress::new(message, "", None);
        progress.bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        progress.bar.set_message(message.to_string());
        progress.start = Instant::now() - QUIET_START;
        progress.show_when_due();
        progress
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
