//! The read-ahead of an [`ObjectStorage`]: the ranges a read will ask for,
//! in the order it will ask ([`Storage::prefetch`]), fetched a window at a
//! time.
//!
//! A read decodes its tiles a group at a time, and asking the store for
//! each group as it comes costs a request per file per group: on S3 a
//! round trip each, and on a server that reads the whole object to answer
//! any range of it (moto) the whole file again each time. Given the plan,
//! the storage fetches from it a window of up to its read-ahead budget
//! ([`DEFAULT_READ_AHEAD`], `read_ahead` in the configuration): each
//! file's ranges in the window merged into one request where they are
//! adjacent (a file wholly needed, and smaller than the budget, is one
//! GET), every request of the window at once (at most `max_in_flight` in
//! flight). When a load misses a range of the plan, the next window is
//! fetched from there. The memory this holds is bounded by the budget: a
//! file larger than it is fetched a window at a time, never whole.
//!
//! [`Storage::prefetch`]: crate::storage::Storage::prefetch

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::StreamExt;
use object_store::path::Path as Key;

use super::{block_on, merge_ranges, ObjectStorage, COALESCE_GAP};
use crate::storage::counters::bump;
use crate::storage::RelPath;

/// The bytes one window of a read-ahead fetches, unless configured
/// otherwise: enough for a few files of large tiles at once.
pub const DEFAULT_READ_AHEAD: u64 = 128 * 1024 * 1024;

/// The ranges a read will ask for, in its order.
struct Plan {
    entries: Vec<(RelPath, Range<u64>)>,
    /// Each entry's place in `entries`, by file and start.
    at: HashMap<(RelPath, u64), usize>,
}

/// The plan being read, if any, and the lock a window is fetched under.
#[derive(Default)]
pub(super) struct ReadAhead {
    plan: Mutex<Option<Arc<Plan>>>,
    /// Held while a window is fetched: loads that miss a range of the same
    /// window wait for it instead of asking again.
    fetching: Mutex<()>,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Only facts read from the store are kept: a panic elsewhere leaves
    // them true.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ReadAhead {
    /// Forgets the plan (a change through the storage).
    pub(super) fn forget(&self) {
        *locked(&self.plan) = None;
    }
}

impl ObjectStorage {
    /// [`Storage::prefetch`](crate::storage::Storage::prefetch): `files`
    /// become the plan, and its first window is fetched.
    pub(super) fn plan_reads(&self, files: &[(RelPath, Vec<(u64, u64)>)]) {
        let mut entries = Vec::new();
        let mut at = HashMap::new();
        for (file, ranges) in files {
            for &(offset, len) in ranges {
                let Some(end) = offset.checked_add(len) else {
                    continue;
                };
                if len > 0 && !at.contains_key(&(file.clone(), offset)) {
                    at.insert((file.clone(), offset), entries.len());
                    entries.push((file.clone(), offset..end));
                }
            }
        }
        if entries.is_empty() {
            return;
        }
        let plan = Arc::new(Plan { entries, at });
        *locked(&self.read_ahead.plan) = Some(Arc::clone(&plan));
        self.fetch_window(&plan, 0);
    }

    /// When a range of `missing` (ranges of `file` the cache lacks) is in
    /// the plan, fetches the plan's window from the first such range;
    /// whether it did.
    pub(super) fn read_ahead_for(&self, file: &RelPath, missing: &[Range<u64>]) -> bool {
        let Some(plan) = locked(&self.read_ahead.plan).clone() else {
            return false;
        };
        let first = missing
            .iter()
            .filter_map(|r| plan.at.get(&(file.clone(), r.start)).copied())
            .min();
        match first {
            Some(from) => {
                self.fetch_window(&plan, from);
                true
            }
            None => false,
        }
    }

    /// Fetches the entries of `plan` from `from` that the cache lacks, up
    /// to the read-ahead budget (the first entry whatever its size), each
    /// file's merged, all at once; keeps each entry's bytes. Nothing is
    /// reported: a load that still misses its range asks for it itself.
    fn fetch_window(&self, plan: &Plan, from: usize) {
        let _turn = locked(&self.read_ahead.fetching);
        let mut budget = self.read_ahead_bytes;
        let mut by_file: Vec<(&RelPath, Vec<Range<u64>>)> = Vec::new();
        let mut slot: HashMap<&RelPath, usize> = HashMap::new();
        for (file, range) in &plan.entries[from..] {
            if self.cache.get(file, range).is_some() {
                continue;
            }
            let len = range.end - range.start;
            if len > budget && !by_file.is_empty() {
                break;
            }
            budget = budget.saturating_sub(len);
            let i = *slot.entry(file).or_insert_with(|| {
                by_file.push((file, Vec::new()));
                by_file.len() - 1
            });
            by_file[i].1.push(range.clone());
        }
        let mut requests: Vec<(usize, Range<u64>)> = Vec::new();
        for (i, (_, ranges)) in by_file.iter().enumerate() {
            requests.extend(
                merge_ranges(ranges, COALESCE_GAP)
                    .into_iter()
                    .map(|r| (i, r)),
            );
        }
        if requests.is_empty() {
            return;
        }
        let keys: Vec<Key> = by_file.iter().map(|(file, _)| self.key(file)).collect();
        let count = requests.len() as u64;
        let fetched = block_on(async {
            futures::stream::iter(requests)
                .map(|(i, range)| {
                    let key = &keys[i];
                    async move {
                        let _turn = self.permit().await;
                        (i, range.clone(), self.store.get_range(key, range).await)
                    }
                })
                .buffer_unordered(self.max_in_flight)
                .collect::<Vec<_>>()
                .await
        });
        bump(&self.counters.files_opened, count);
        for (i, range, bytes) in fetched.into_iter().flatten() {
            let Ok(bytes) = bytes else { continue };
            if bytes.len() as u64 != range.end - range.start {
                continue;
            }
            let (file, asked) = &by_file[i];
            // Each entry kept as a slice of the one response: no copy.
            for r in asked
                .iter()
                .filter(|r| range.start <= r.start && r.end <= range.end)
            {
                let from = (r.start - range.start) as usize;
                let to = (r.end - range.start) as usize;
                self.cache.keep(file, r.start, bytes.slice(from..to));
            }
        }
    }
}
