//! The running counts behind [`Storage::counters`](super::Storage::counters),
//! one set per storage, shared by every implementation.

use std::sync::atomic::{AtomicU64, Ordering};

use super::IoCounters;

/// The counts of one storage, bumped from any thread.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) listings: AtomicU64,
    pub(super) probes: AtomicU64,
    pub(super) files_opened: AtomicU64,
    pub(super) bytes_read: AtomicU64,
    pub(super) files_written: AtomicU64,
    pub(super) bytes_written: AtomicU64,
    pub(super) changes: AtomicU64,
}

/// Adds `by` to `counter` (only a count: no ordering with other memory).
pub(super) fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

impl Counters {
    /// The counts now.
    pub(super) fn snapshot(&self) -> IoCounters {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        IoCounters {
            listings: get(&self.listings),
            probes: get(&self.probes),
            files_opened: get(&self.files_opened),
            bytes_read: get(&self.bytes_read),
            files_written: get(&self.files_written),
            bytes_written: get(&self.bytes_written),
            changes: get(&self.changes),
        }
    }
}
