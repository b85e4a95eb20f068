//! The read-ahead of an [`ObjectStorage`]: the ranges a read will ask for,
//! in the order it will ask ([`Storage::prefetch`]), fetched ahead of it a
//! window at a time, and handed to the read as they arrive.
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
//! flight). Each response is read as it streams in, and each planned range
//! is kept the moment its last byte arrives, so the read decodes its first
//! tiles while the rest are still on the way. When the read reaches the
//! last window started, the next one starts: at most two windows are held
//! (the one being read and the one arriving), so the memory is bounded by
//! twice the budget, and a file larger than it is never fetched whole. A
//! load that misses a planned range waits for its window; one that misses a
//! range outside every window started starts a window there.
//!
//! [`Storage::prefetch`]: crate::storage::Storage::prefetch

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use bytes::BytesMut;
use futures::StreamExt;
use object_store::path::Path as Key;
use object_store::{GetOptions, GetRange, ObjectStore};

use super::{merge_ranges, runtime, ObjectStorage, COALESCE_GAP};
use crate::storage::counters::bump;
use crate::storage::object_cache::Cache;
use crate::storage::RelPath;

/// The bytes one window of a read-ahead fetches, unless configured
/// otherwise (two windows are held at most).
///
/// Every window is received into memory the process has not touched, and
/// on a virtual machine that gives freed memory back to its host (free
/// page reporting) touching it first can cost more than receiving into it:
/// over S3 on such a machine, a 134 MB dense read spent 0.1 to 0.7 s of
/// system time clearing pages, by how recently another process had freed
/// them. Smaller windows let a window's memory, once decoded and freed, be
/// taken again by the next one while it is still warm: 32 MiB windows read
/// that array in 0.13-0.33 s against 0.17-0.49 s with 64 MiB, for five more
/// requests of 28 (16 MiB windows: 44 requests, and no faster).
pub const DEFAULT_READ_AHEAD: u64 = 32 * 1024 * 1024;

/// The ranges a read will ask for, in its order.
struct Plan {
    entries: Vec<(RelPath, Range<u64>)>,
    /// Each entry's place in `entries`, by file and start.
    at: HashMap<(RelPath, u64), usize>,
}

impl Plan {
    /// The place in the plan of the first of `ranges` of `file` it holds.
    fn first_of(&self, file: &RelPath, ranges: &[Range<u64>]) -> Option<usize> {
        ranges
            .iter()
            .filter_map(|r| self.at.get(&(file.clone(), r.start)).copied())
            .min()
    }
}

/// A window of the plan: its entries, and whether they are still arriving.
struct Window {
    entries: Range<usize>,
    arriving: bool,
}

#[derive(Default)]
struct State {
    plan: Option<Arc<Plan>>,
    /// Counts the plans, so that a window of an earlier one, finishing,
    /// changes nothing of the current one.
    generation: u64,
    /// The windows started of the plan, in order: a load lagging behind
    /// (tiles decode in parallel) still finds its window arriving.
    windows: VecDeque<Window>,
}

/// The plan being read, its windows, and the signal of bytes arriving.
#[derive(Default)]
pub(super) struct ReadAhead {
    state: Mutex<State>,
    arrived: Condvar,
}

impl ReadAhead {
    fn state(&self) -> MutexGuard<'_, State> {
        // Only facts read from the store are kept: a panic elsewhere
        // leaves them true.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets the plan (a change through the storage).
    pub(super) fn forget(&self) {
        let mut state = self.state();
        state.plan = None;
        state.generation += 1;
        state.windows.clear();
        self.arrived.notify_all();
    }

    /// Wakes the loads waiting for bytes.
    fn notify(&self) {
        let _state = self.state();
        self.arrived.notify_all();
    }

    /// The window starting at `from` of plan `generation` has arrived (or
    /// failed: its loads then ask for their ranges themselves).
    fn window_done(&self, generation: u64, from: usize) {
        let mut state = self.state();
        if state.generation == generation {
            for window in &mut state.windows {
                if window.entries.start == from {
                    window.arriving = false;
                }
            }
        }
        self.arrived.notify_all();
    }
}

/// One request of a window: the file's key and path, the range asked, and
/// the planned ranges within it, by start.
struct Request {
    key: Key,
    file: RelPath,
    range: Range<u64>,
    planned: Vec<Range<u64>>,
}

impl ObjectStorage {
    /// [`Storage::prefetch`](crate::storage::Storage::prefetch): `files`
    /// become the plan, and its first window starts arriving.
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
        let mut state = self.read_ahead.state();
        if let Some(current) = &state.plan {
            // A part of the plan being read (a batch or band asking for its
            // own tiles): already on its way.
            let planned = |(file, range): &(RelPath, Range<u64>)| {
                current
                    .at
                    .get(&(file.clone(), range.start))
                    .is_some_and(|&i| current.entries[i].1.end == range.end)
            };
            if entries.iter().all(planned) {
                return;
            }
        }
        let plan = Arc::new(Plan { entries, at });
        state.plan = Some(Arc::clone(&plan));
        state.generation += 1;
        state.windows.clear();
        self.start_window(&mut state, &plan, 0);
    }

    /// Before a load of `ranges` of `file` (of which the cache lacks
    /// `missing`): starts the next window when the load reaches the last
    /// one started, and waits until the planned ranges of `missing` have
    /// arrived or their window is over. Whether any was planned (then the
    /// cache is worth asking again).
    pub(super) fn read_ahead_for(
        &self,
        file: &RelPath,
        ranges: &[Range<u64>],
        missing: &[Range<u64>],
    ) -> bool {
        let mut state = self.read_ahead.state();
        let Some(plan) = state.plan.clone() else {
            return false;
        };
        let Some(reached) = plan.first_of(file, ranges) else {
            return false;
        };
        let last = state.windows.back().map(|w| w.entries.clone());
        if let Some(last) = last {
            if last.contains(&reached) && last.end < plan.entries.len() {
                self.start_window(&mut state, &plan, last.end);
            }
        }
        let Some(first_missing) = plan.first_of(file, missing) else {
            return false;
        };
        let generation = state.generation;
        loop {
            let planned_missing = missing.iter().any(|r| {
                plan.at.contains_key(&(file.clone(), r.start)) && self.cache.get(file, r).is_none()
            });
            if !planned_missing || state.generation != generation {
                return true;
            }
            let window = state
                .windows
                .iter()
                .find(|w| w.entries.contains(&first_missing))
                .map(|w| w.arriving);
            state = match window {
                Some(true) => self
                    .read_ahead
                    .arrived
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(false) => return true,
                None => {
                    self.start_window(&mut state, &plan, first_missing);
                    state
                }
            };
        }
    }

    /// Starts fetching the window of `plan` from entry `from`: the entries
    /// the cache lacks, up to the read-ahead budget (the first whatever its
    /// size), each file's merged, every request at once, streamed into the
    /// cache on the runtime. Nothing is reported: a load that still misses
    /// its range asks for it itself.
    fn start_window(&self, state: &mut State, plan: &Plan, from: usize) {
        let mut budget = self.read_ahead_bytes;
        let mut by_file: Vec<(&RelPath, Vec<Range<u64>>)> = Vec::new();
        let mut slot: HashMap<&RelPath, usize> = HashMap::new();
        let mut end = from;
        for (file, range) in &plan.entries[from..] {
            let len = range.end - range.start;
            if self.cache.get(file, range).is_none() {
                if len > budget && end > from {
                    break;
                }
                budget = budget.saturating_sub(len);
                let i = *slot.entry(file).or_insert_with(|| {
                    by_file.push((file, Vec::new()));
                    by_file.len() - 1
                });
                by_file[i].1.push(range.clone());
            }
            end += 1;
        }
        let mut requests = Vec::new();
        // What the window's budget leaves over its planned bytes pays for
        // the gaps fetched to spare requests.
        let mut spare = budget;
        for (file, planned) in by_file {
            for range in merge_for_window(&planned, &mut spare) {
                let mut inside: Vec<Range<u64>> = planned
                    .iter()
                    .filter(|r| range.start <= r.start && r.end <= range.end)
                    .cloned()
                    .collect();
                inside.sort_by_key(|r| r.start);
                requests.push(Request {
                    key: self.key(file),
                    file: file.clone(),
                    range,
                    planned: inside,
                });
            }
        }
        let arriving = !requests.is_empty();
        state.windows.push_back(Window {
            entries: from..end,
            arriving,
        });
        if !arriving {
            return;
        }
        bump(&self.counters.files_opened, requests.len() as u64);
        let Ok(runtime) = runtime() else {
            if let Some(window) = state.windows.back_mut() {
                window.arriving = false;
            }
            return;
        };
        let store = Arc::clone(&self.store);
        let cache = Arc::clone(&self.cache);
        let read_ahead = Arc::clone(&self.read_ahead);
        let permits = Arc::clone(&self.permits);
        let (max_in_flight, generation) = (self.max_in_flight, state.generation);
        runtime.spawn(async move {
            futures::stream::iter(requests)
                .for_each_concurrent(max_in_flight, |request| {
                    let (store, cache, read_ahead) = (&store, &cache, &read_ahead);
                    let permits = &permits;
                    async move {
                        let _turn = permits.acquire().await.ok();
                        stream_in(store.as_ref(), &request, cache, read_ahead).await;
                    }
                })
                .await;
            read_ahead.window_done(generation, from);
        });
    }
}

/// The most bytes one request of a window spans when it reaches over gaps
/// between a file's planned ranges to spare requests: TileDB's
/// `vfs.min_batch_size` (20 MiB), under which it too batches ranges of a
/// file whatever the gaps.
pub(super) const MAX_BATCH: u64 = 20 * 1024 * 1024;

/// One file's planned ranges of a window as requests: merged across gaps up
/// to [`COALESCE_GAP`], and across larger ones while the request stays
/// within [`MAX_BATCH`] and the gap fits in `spare` (the window's budget
/// left over its planned bytes, which the gap then uses up), so that a read
/// wanting parts of a file's tiles (the chunks a small dense subarray
/// needs) costs no more requests than the whole tiles, fewer bytes, and
/// the window holds no more than its budget.
fn merge_for_window(planned: &[Range<u64>], spare: &mut u64) -> Vec<Range<u64>> {
    let mut merged: Vec<Range<u64>> = Vec::new();
    for range in merge_ranges(planned, COALESCE_GAP) {
        if let Some(last) = merged.last_mut() {
            let gap = range.start.saturating_sub(last.end);
            if range.end - last.start <= MAX_BATCH && gap <= *spare {
                *spare -= gap;
                last.end = range.end;
                continue;
            }
        }
        merged.push(range);
    }
    merged
}

/// Fetches `request`, keeping each planned range as soon as its last byte
/// has arrived (a slice of the one buffer the response is read into: one
/// copy of each byte), and waking the loads waiting for it.
async fn stream_in(store: &dyn ObjectStore, request: &Request, cache: &Cache, ahead: &ReadAhead) {
    let options = GetOptions {
        range: Some(GetRange::Bounded(request.range.clone())),
        ..GetOptions::default()
    };
    let Ok(result) = store.get_opts(&request.key, options).await else {
        return;
    };
    let Ok(len) = usize::try_from(request.range.end - request.range.start) else {
        return;
    };
    let mut body = result.into_stream();
    // The bytes arrived and not yet handed out, from file offset `held`.
    let mut buffer = BytesMut::with_capacity(len);
    crate::memory::advise_spare(buffer.spare_capacity_mut());
    let (mut held, mut arrived) = (request.range.start, request.range.start);
    let mut planned = request.planned.iter().peekable();
    while let Some(Ok(chunk)) = body.next().await {
        arrived += chunk.len() as u64;
        if arrived > request.range.end {
            return;
        }
        buffer.extend_from_slice(&chunk);
        let mut kept = false;
        while let Some(range) = planned.next_if(|r| r.end <= arrived) {
            if range.start < held {
                // Overlaps a range handed out already: left to its load.
                continue;
            }
            let (Ok(skip), Ok(take)) = (
                usize::try_from(range.start - held),
                usize::try_from(range.end - held),
            ) else {
                return;
            };
            let bytes = buffer.split_to(take).freeze().slice(skip..);
            held = range.end;
            cache.keep(&request.file, range.start, bytes);
            kept = true;
        }
        if kept {
            ahead.notify();
        }
    }
}
