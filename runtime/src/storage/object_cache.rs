//! What an [`ObjectStorage`](super::ObjectStorage) remembers between
//! requests, so that opening and reading an array costs as few requests as
//! the format allows.
//!
//! - **Sizes** come free with listings (S3 lists every object with its
//!   size), and with every GET: a file's size is asked for only when
//!   neither has given it.
//! - **Tails.** A size that is unknown is learnt by fetching the file's
//!   last [`TAIL`] bytes (one suffix-ranged GET), not by a HEAD: every file
//!   whose size the format layers ask for is then read at its end (a
//!   fragment metadata footer, a generic tile read whole), and a small file
//!   (a schema, a commit, most fragment metadata) is then whole in memory.
//! - **Segments.** Ranges fetched, up to [`MAX_SEGMENT`] bytes each, are
//!   kept (at most [`MAX_CACHED`] bytes in all, the oldest dropped first):
//!   the readers load a fragment's metadata section by section and read
//!   some tiles twice (coordinates for the filter, then for the result).
//!   The ranges of a read-ahead window (`object_read_ahead`) are kept
//!   whatever their size, and the cache holds up to two windows more.
//!
//! Files of an array are never changed in place (every name is new), and
//! every change through the storage forgets what it held of the path.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::Mutex;

use bytes::Bytes;

use crate::storage::RelPath;

/// Bytes fetched from a file's end when its size is not known.
pub const TAIL: u64 = 64 * 1024;
/// Ranges longer than this are not kept.
pub const MAX_SEGMENT: u64 = 1024 * 1024;
/// The most bytes kept in all, besides a read-ahead window.
pub const MAX_CACHED: u64 = 32 * 1024 * 1024;

#[derive(Default)]
struct State {
    sizes: HashMap<RelPath, u64>,
    /// Per file, the kept ranges: `(start, bytes)`.
    segments: HashMap<RelPath, Vec<(u64, Bytes)>>,
    /// The kept ranges in the order kept, for dropping the oldest.
    order: VecDeque<(RelPath, u64)>,
    cached: u64,
    /// The bytes of a read-ahead window that may be kept beyond
    /// [`MAX_CACHED`].
    read_ahead: u64,
}

/// The cache of one storage.
#[derive(Default)]
pub(super) struct Cache {
    state: Mutex<State>,
}

impl Cache {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state holds only facts read from the store; a panic elsewhere
        // leaves them true.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The size of `file`, if known.
    pub(super) fn size(&self, file: &RelPath) -> Option<u64> {
        self.state().sizes.get(file).copied()
    }

    /// Records the size of `file`.
    pub(super) fn set_size(&self, file: &RelPath, size: u64) {
        self.state().sizes.insert(file.clone(), size);
    }

    /// Records the sizes of a folder's files.
    pub(super) fn set_sizes(&self, sizes: impl IntoIterator<Item = (RelPath, u64)>) {
        self.state().sizes.extend(sizes);
    }

    /// `range` of `file`, when a kept segment holds it.
    pub(super) fn get(&self, file: &RelPath, range: &Range<u64>) -> Option<Bytes> {
        let state = self.state();
        let segments = state.segments.get(file)?;
        segments.iter().find_map(|(start, bytes)| {
            let end = start + bytes.len() as u64;
            if *start <= range.start && range.end <= end {
                let from = usize::try_from(range.start - start).ok()?;
                let to = usize::try_from(range.end - start).ok()?;
                Some(bytes.slice(from..to))
            } else {
                None
            }
        })
    }

    /// Lets the cache hold `bytes` more than [`MAX_CACHED`]: the windows
    /// of a read-ahead.
    pub(super) fn set_read_ahead(&self, bytes: u64) {
        self.state().read_ahead = bytes;
    }

    /// Keeps `bytes`, read from `start` of `file`, if short enough.
    pub(super) fn put(&self, file: &RelPath, start: u64, bytes: Bytes) {
        if bytes.len() as u64 <= MAX_SEGMENT {
            self.keep(file, start, bytes);
        }
    }

    /// Keeps `bytes`, read from `start` of `file`, whatever their length
    /// (a range of a read-ahead window), the oldest dropped to make room.
    pub(super) fn keep(&self, file: &RelPath, start: u64, bytes: Bytes) {
        let len = bytes.len() as u64;
        if len == 0 {
            return;
        }
        let mut state = self.state();
        let segments = state.segments.entry(file.clone()).or_default();
        if segments
            .iter()
            .any(|(s, b)| *s <= start && start + len <= s + b.len() as u64)
        {
            return;
        }
        segments.push((start, bytes));
        state.order.push_back((file.clone(), start));
        state.cached += len;
        let limit = MAX_CACHED.saturating_add(state.read_ahead);
        while state.cached > limit {
            let Some((old_file, old_start)) = state.order.pop_front() else {
                break;
            };
            let mut freed = 0;
            if let Some(list) = state.segments.get_mut(&old_file) {
                if let Some(at) = list.iter().position(|(s, _)| *s == old_start) {
                    freed = list.swap_remove(at).1.len() as u64;
                }
            }
            state.cached -= freed;
        }
    }

    /// Forgets everything about `path` and the paths below it.
    pub(super) fn forget(&self, path: &RelPath) {
        let mut state = self.state();
        let below = |p: &RelPath| {
            path.is_root()
                || p == path
                || p.as_str()
                    .strip_prefix(path.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        };
        state.sizes.retain(|p, _| !below(p));
        let mut freed = 0;
        state.segments.retain(|p, list| {
            if below(p) {
                freed += list.iter().map(|(_, b)| b.len() as u64).sum::<u64>();
                false
            } else {
                true
            }
        });
        state.order.retain(|(p, _)| !below(p));
        state.cached -= freed;
    }
}
