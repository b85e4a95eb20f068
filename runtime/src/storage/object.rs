//! [`ObjectStorage`]: the storage interface over an object store (S3, GCS,
//! Azure Blob, HTTP, memory) through the `object_store` crate.
//!
//! Object stores are not filesystems, and this module maps the interface
//! onto them as TileDB's own object-store backends do:
//!
//! - **No real folders.** A folder exists when some key has its name as a
//!   prefix; [`Storage::create_dir`] writes nothing, and a folder disappears
//!   with its last file.
//! - **Writes are atomic by nature.** One PUT makes a whole object visible
//!   at once or not at all, so [`Storage::write`] needs no temporary file;
//!   writers write a fragment's files first and its commit marker last, so a
//!   fragment half written is never visible.
//! - **No rename.** [`Storage::rename`] is a copy then a delete (not
//!   atomic); no writer of the library calls it.
//! - **Confinement.** Every key is the root's prefix joined with the
//!   components of a [`RelPath`] (which refuses `..` and separators), and
//!   listed keys outside the prefix are dropped: nothing outside the root is
//!   read, written or listed into a result.
//!
//! The interface is synchronous (the format layers read files in rayon
//! threads and need no executor), while `object_store` is async: one small
//! process-wide tokio runtime drives every request, and each call blocks
//! its thread on it. A call made from inside some other tokio runtime
//! (where blocking a worker would panic or stall it) runs on a scoped
//! helper thread instead.

use std::collections::HashMap;
use std::future::Future;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::list::PaginatedListStore;
use object_store::path::Path as Key;
use object_store::{ObjectStore, PutPayload};

use crate::error::{Cause, Error, Result};
use crate::storage::counters::{bump, Counters};
use crate::storage::object_cache::{Cache, TAIL};
use crate::storage::{DirEntry, EntryKind, FoldAt, IoCounters, RelPath, Storage};

#[path = "object_listing.rs"]
mod listing;
use listing::{ListingKey, PendingListing};
#[path = "object_read_ahead.rs"]
mod read_ahead;
pub use read_ahead::DEFAULT_READ_AHEAD;

/// Requests in flight at once for one batch ([`Storage::read_ranges`], a
/// folder's removal), unless configured otherwise.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 16;

/// Ranges of one file closer than this are fetched by one request: a
/// request costs a round trip, a few hundred kilobytes more cost less.
pub const COALESCE_GAP: u64 = 256 * 1024;

/// The runtime that drives every request: two worker threads, enough for
/// the network I/O of a process (the work of decoding stays in rayon).
/// Process-wide and never dropped, so no storage ever drops a runtime from
/// inside an async context, and connection pools live as long as stores.
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("tiledb-object-store")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::Usage(format!("cannot start the object-store runtime: {e}")))
}

/// Runs `future` to completion, blocking this thread.
pub(crate) fn block_on<F>(future: F) -> Result<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let runtime = runtime()?;
    if tokio::runtime::Handle::try_current().is_err() {
        return Ok(runtime.block_on(future));
    }
    // Inside a caller's runtime, blocking this thread on ours would panic:
    // a helper thread blocks instead.
    std::thread::scope(|scope| {
        scope
            .spawn(|| runtime.block_on(future))
            .join()
            .map_err(|_| Error::Usage("an object-store request panicked".into()))
    })
}

/// Storage rooted at one prefix of an object store.
pub struct ObjectStorage {
    store: Arc<dyn ObjectStore>,
    /// The root's key; every key used is below it.
    prefix: Key,
    /// The root as the user named it (`s3://bucket/array`), for messages.
    url: String,
    read_only: bool,
    max_in_flight: usize,
    /// One permit per request in flight, shared by every thread using this
    /// storage: concurrent loads together stay within `max_in_flight`.
    permits: Arc<tokio::sync::Semaphore>,
    counters: Counters,
    cache: Arc<Cache>,
    /// The ranges a read will ask for ([`Storage::prefetch`]), fetched a
    /// window of `read_ahead_bytes` at a time.
    read_ahead: Arc<read_ahead::ReadAhead>,
    read_ahead_bytes: u64,
    /// Folder listings started ahead of the reads that will ask for them
    /// ([`Storage::prefetch_listings`]), running on the runtime; by folder
    /// and by the suffix a folded listing cuts names at.
    pending: Mutex<HashMap<ListingKey, PendingListing>>,
    /// The store's listing with a delimiter of our choice, where we use it
    /// ([`Storage::list_names_folded`]: S3).
    lister: Option<Arc<dyn PaginatedListStore>>,
}

impl ObjectStorage {
    /// Storage rooted at `prefix` of `store`; `url` names the root in
    /// messages.
    pub fn new(store: Arc<dyn ObjectStore>, prefix: Key, url: impl Into<String>) -> Self {
        ObjectStorage {
            store,
            prefix,
            url: url.into().trim_end_matches('/').to_owned(),
            read_only: false,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            permits: Arc::new(tokio::sync::Semaphore::new(DEFAULT_MAX_IN_FLIGHT)),
            counters: Counters::default(),
            cache: Arc::default(),
            read_ahead: Arc::default(),
            read_ahead_bytes: 0,
            pending: Mutex::default(),
            lister: None,
        }
        .with_read_ahead(DEFAULT_READ_AHEAD)
    }

    /// Reads ahead ([`Storage::prefetch`]) at most `bytes` (at least one
    /// range) a window, two windows at most held at once.
    pub fn with_read_ahead(mut self, bytes: u64) -> Self {
        self.read_ahead_bytes = bytes;
        self.cache.set_read_ahead(bytes.saturating_mul(2));
        self
    }

    /// Lists folders folded ([`Storage::list_names_folded`]) through
    /// `lister`, the same store's paginated listing.
    pub fn with_folded_listings(mut self, lister: Arc<dyn PaginatedListStore>) -> Self {
        self.lister = Some(lister);
        self
    }

    /// Refuses every change (an HTTP server, or a reader's choice).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// At most `n` (at least 1) requests in flight for one batch.
    pub fn with_max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self.permits = Arc::new(tokio::sync::Semaphore::new(self.max_in_flight));
        self
    }

    /// The object store underneath.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The key of `path`: the root's prefix and then its components.
    fn key(&self, path: &RelPath) -> Key {
        path.components()
            .fold(self.prefix.clone(), |key, component| key.child(component))
    }

    /// The name of `path` for messages: the root URL and the path.
    fn name(&self, path: &RelPath) -> PathBuf {
        if path.is_root() {
            PathBuf::from(&self.url)
        } else {
            PathBuf::from(format!("{}/{}", self.url, path.as_str()))
        }
    }

    /// `error` of the store, as an I/O error on `path`.
    fn error(&self, path: &RelPath, error: &object_store::Error) -> Error {
        let kind = match error {
            object_store::Error::NotFound { .. } => std::io::ErrorKind::NotFound,
            object_store::Error::AlreadyExists { .. } => std::io::ErrorKind::AlreadyExists,
            object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. } => std::io::ErrorKind::PermissionDenied,
            object_store::Error::NotSupported { .. } => std::io::ErrorKind::Unsupported,
            _ => std::io::ErrorKind::Other,
        };
        Error::Io {
            file: self.name(path),
            kind,
            message: error.to_string(),
        }
    }

    fn refuse_if_read_only(&self, path: &RelPath) -> Result<()> {
        if self.read_only {
            return Err(Error::Io {
                file: self.name(path),
                kind: std::io::ErrorKind::PermissionDenied,
                message: "this storage is read-only".into(),
            });
        }
        Ok(())
    }

    /// The part of a listed key below `dir_key`, if it lies there: keys
    /// outside the root are never reported.
    fn name_below(dir_key: &Key, listed: &Key) -> Option<String> {
        let mut rest = listed.prefix_match(dir_key)?;
        let name = rest.next()?;
        // Only direct children: a delimited listing gives no deeper keys,
        // but a store that ignored the delimiter must not make us see them.
        if rest.next().is_some() {
            return None;
        }
        let name = name.as_ref().to_owned();
        // A name our paths could not address (an empty "folder marker"
        // object, `..`) is skipped like a non-UTF-8 name on a disk.
        RelPath::root().join(&name).ok()?;
        Some(name)
    }

    /// Whether any key lies below `path` (then it is a folder).
    fn has_keys_below(&self, path: &RelPath) -> Result<bool> {
        let key = self.key(path);
        let first = block_on(async {
            let mut listing = self.store.list(Some(&key));
            listing.next().await.transpose()
        })?;
        bump(&self.counters.listings, 1);
        match first {
            Ok(found) => Ok(found.is_some()),
            Err(e) => Err(self.error(path, &e)),
        }
    }

    /// The error of a read of `len` bytes at `offset` of a file of `size` bytes.
    fn truncated(&self, file: &RelPath, offset: u64, len: u64, size: u64) -> Error {
        Error::corrupt(
            offset,
            "byte range",
            Cause::Truncated {
                needed: len,
                available: size.saturating_sub(offset),
            },
        )
        .in_file(self.name(file))
    }

    /// The error of a ranged read past the end of `file`, or `None` when the
    /// file is long enough (then the store's own error stands).
    fn range_past_end(&self, file: &RelPath, offset: u64, len: u64) -> Option<Error> {
        let size = self.size(file).ok()?;
        let fits = offset.checked_add(len).is_some_and(|end| end <= size);
        (!fits).then(|| self.truncated(file, offset, len, size))
    }

    /// Learns the size of `file` with one GET of its last [`TAIL`] bytes,
    /// which are kept: the next read of the file is most often there.
    fn fetch_tail(&self, file: &RelPath) -> Result<u64> {
        use object_store::{GetOptions, GetRange};
        let key = self.key(file);
        let options = GetOptions {
            range: Some(GetRange::Suffix(TAIL)),
            ..GetOptions::default()
        };
        let fetched = block_on(async {
            let _turn = self.permit().await;
            let result = self.store.get_opts(&key, options).await?;
            let (size, start) = (result.meta.size, result.range.start);
            Ok::<_, object_store::Error>((size, start, result.bytes().await?))
        })?;
        bump(&self.counters.files_opened, 1);
        match fetched {
            Ok((size, start, bytes)) => {
                bump(&self.counters.bytes_read, bytes.len() as u64);
                self.cache.set_size(file, size);
                self.cache.put(file, start, bytes);
                Ok(size)
            }
            Err(e @ object_store::Error::NotFound { .. }) => Err(self.error(file, &e)),
            // An empty object has no suffix to send (416): ask its size.
            Err(_) => {
                let head = block_on(self.store.head(&key))?;
                bump(&self.counters.probes, 1);
                let size = head.map_err(|e| self.error(file, &e))?.size;
                self.cache.set_size(file, size);
                Ok(size)
            }
        }
    }

    /// The bytes of `ranges` (`(offset, len)`) of `file`, each checked as
    /// [`Storage::read_range`] checks it: from the cache, or fetched.
    fn fetch_checked(&self, file: &RelPath, ranges: &[(u64, u64)]) -> Result<Vec<Bytes>> {
        let mut asked = Vec::with_capacity(ranges.len());
        for &(offset, len) in ranges {
            let Some(end) = offset.checked_add(len) else {
                return Err(self
                    .range_past_end(file, offset, len)
                    .unwrap_or_else(|| Error::Usage(format!("range {offset}+{len} overflows"))));
            };
            if let Some(size) = self.cache.size(file) {
                if end > size {
                    return Err(self.truncated(file, offset, len, size));
                }
            }
            asked.push(offset..end);
        }
        if asked.iter().all(Range::is_empty) {
            // Nothing to fetch, but a range past the end is still an error.
            if let Some(&(offset, len)) = ranges.iter().max_by_key(|r| r.0) {
                if let Some(e) = self.range_past_end(file, offset, len) {
                    return Err(e);
                }
            }
            return Ok(vec![Bytes::new(); ranges.len()]);
        }
        self.fetch_ranges(file, &asked)
    }

    /// Fetches `ranges` of `file` that the cache does not hold, ranges
    /// closer than [`COALESCE_GAP`] merged into one request, at most
    /// `max_in_flight` requests at a time; keeps what was fetched.
    fn fetch_ranges(&self, file: &RelPath, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let mut out: Vec<Option<Bytes>> = ranges
            .iter()
            .map(|r| {
                if r.is_empty() {
                    Some(Bytes::new())
                } else {
                    self.cache.get(file, r)
                }
            })
            .collect();
        let mut missing = missing_ranges(ranges, &out);
        // Asked even when every range is at hand: reaching the last
        // window started starts the next.
        if self.read_ahead_for(file, ranges, &missing) {
            // The window holding them has arrived: look again.
            for (range, slot) in ranges.iter().zip(out.iter_mut()) {
                if slot.is_none() {
                    *slot = self.cache.get(file, range);
                }
            }
            missing = missing_ranges(ranges, &out);
        }
        if !missing.is_empty() {
            let merged = self.requests_for(file, missing);
            let fetched = self.fetch_merged(file, &merged)?;
            for (range, bytes) in merged.iter().zip(&fetched) {
                self.cache.put(file, range.start, bytes.clone());
            }
            for (range, slot) in ranges.iter().zip(out.iter_mut()) {
                if slot.is_some() {
                    continue;
                }
                let at = merged.partition_point(|m| m.start <= range.start) - 1;
                let (whole, bytes) = (&merged[at], &fetched[at]);
                let start = usize::try_from(range.start - whole.start).unwrap_or(usize::MAX);
                let end = usize::try_from(range.end - whole.start).unwrap_or(usize::MAX);
                if end > bytes.len() {
                    // The store sent less than asked: the file ends early.
                    let size = whole.start + bytes.len() as u64;
                    return Err(self.truncated(file, range.start, range.end - range.start, size));
                }
                *slot = Some(bytes.slice(start..end));
            }
        }
        bump(
            &self.counters.bytes_read,
            ranges.iter().map(|r| r.end - r.start).sum(),
        );
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// The requests that fetch `missing` ranges of `file`: a read near the
    /// end of a file (a footer, a small file) takes the whole tail, as the
    /// reads that follow are most often there; ranges closer than
    /// [`COALESCE_GAP`] are merged.
    fn requests_for(&self, file: &RelPath, missing: Vec<Range<u64>>) -> Vec<Range<u64>> {
        let widened: Vec<Range<u64>> = match self.cache.size(file) {
            Some(size) => missing
                .into_iter()
                .map(|r| {
                    let tail = size.saturating_sub(TAIL);
                    if r.start >= tail && r.end <= size {
                        tail..size
                    } else {
                        r
                    }
                })
                .collect(),
            None => missing,
        };
        merge_ranges(&widened, COALESCE_GAP)
    }

    /// Waits for a request's turn: at most `max_in_flight` at once.
    async fn permit(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.permits.acquire().await.ok()
    }

    /// One ranged GET per range of `merged`, a bounded number at a time.
    fn fetch_merged(&self, file: &RelPath, merged: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let key = self.key(file);
        let store = &self.store;
        let fetched: std::result::Result<Vec<Bytes>, (Range<u64>, object_store::Error)> =
            block_on(async {
                futures::stream::iter(merged.iter().cloned())
                    .map(|range| {
                        let key = &key;
                        async move {
                            let _turn = self.permit().await;
                            store
                                .get_range(key, range.clone())
                                .await
                                .map_err(|e| (range, e))
                        }
                    })
                    .buffered(self.max_in_flight)
                    .try_collect()
                    .await
            })?;
        bump(&self.counters.files_opened, merged.len() as u64);
        fetched.map_err(|(range, e)| {
            let len = range.end - range.start;
            self.range_past_end(file, range.start, len)
                .unwrap_or_else(|| self.error(file, &e))
        })
    }
}

/// The ranges of `ranges` whose slot in `got` is empty.
fn missing_ranges(ranges: &[Range<u64>], got: &[Option<Bytes>]) -> Vec<Range<u64>> {
    ranges
        .iter()
        .zip(got)
        .filter(|(_, got)| got.is_none())
        .map(|(r, _)| r.clone())
        .collect()
}

/// `ranges` sorted and merged where they overlap or lie within `gap` of
/// each other.
fn merge_ranges(ranges: &[Range<u64>], gap: u64) -> Vec<Range<u64>> {
    let mut sorted: Vec<Range<u64>> = ranges.iter().filter(|r| r.end > r.start).cloned().collect();
    sorted.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for range in sorted {
        match merged.last_mut() {
            Some(last) if range.start <= last.end.saturating_add(gap) => {
                last.end = last.end.max(range.end);
            }
            _ => merged.push(range),
        }
    }
    merged
}

impl Storage for ObjectStorage {
    fn describe(&self, path: &RelPath) -> PathBuf {
        self.name(path)
    }

    fn list(&self, dir: &RelPath) -> Result<Option<Vec<DirEntry>>> {
        self.list_plain(dir)
    }

    fn list_names_folded(&self, dir: &RelPath, fold: &FoldAt) -> Result<Option<Vec<DirEntry>>> {
        self.list_folded(dir, fold)
    }

    fn prefetch_folded_listing(&self, dir: &RelPath, fold: &FoldAt) {
        self.start_folded_listing(dir, fold);
    }

    fn kind(&self, path: &RelPath) -> Result<Option<EntryKind>> {
        if self.cache.size(path).is_some() {
            return Ok(Some(EntryKind::File));
        }
        if !path.is_root() {
            let head = block_on(self.store.head(&self.key(path)))?;
            bump(&self.counters.probes, 1);
            match head {
                Ok(_) => return Ok(Some(EntryKind::File)),
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(self.error(path, &e)),
            }
        }
        Ok(self.has_keys_below(path)?.then_some(EntryKind::Dir))
    }

    fn size(&self, file: &RelPath) -> Result<u64> {
        match self.cache.size(file) {
            Some(size) => Ok(size),
            None => self.fetch_tail(file),
        }
    }

    fn read(&self, file: &RelPath) -> Result<Vec<u8>> {
        if let Some(size) = self.cache.size(file) {
            if let Some(whole) = self.cache.get(file, &(0..size)) {
                bump(&self.counters.bytes_read, size);
                return Ok(whole.to_vec());
            }
        }
        let key = self.key(file);
        let data = block_on(async {
            let _turn = self.permit().await;
            self.store.get(&key).await?.bytes().await
        })?;
        bump(&self.counters.files_opened, 1);
        let data = data.map_err(|e| self.error(file, &e))?;
        bump(&self.counters.bytes_read, data.len() as u64);
        self.cache.set_size(file, data.len() as u64);
        let bytes = data.to_vec();
        self.cache.put(file, 0, data);
        Ok(bytes)
    }

    fn read_range(&self, file: &RelPath, offset: u64, len: u64) -> Result<Vec<u8>> {
        let mut data = self.read_ranges(file, &[(offset, len)])?;
        Ok(data.pop().unwrap_or_default())
    }

    fn read_range_into(
        &self,
        file: &RelPath,
        offset: u64,
        len: u64,
        buffer: &mut Vec<u8>,
    ) -> Result<()> {
        self.read_ranges_into(file, &[(offset, len)], std::slice::from_mut(buffer))
    }

    fn read_ranges_into(
        &self,
        file: &RelPath,
        ranges: &[(u64, u64)],
        buffers: &mut [Vec<u8>],
    ) -> Result<()> {
        let fetched = self.fetch_checked(file, ranges)?;
        for (bytes, buffer) in fetched.iter().zip(buffers.iter_mut()) {
            buffer.clear();
            // A reused buffer with room enough was advised when it grew:
            // no system call per tile.
            if buffer.capacity() < bytes.len() {
                crate::memory::reserve(buffer, bytes.len());
            }
            buffer.extend_from_slice(bytes);
        }
        Ok(())
    }

    fn read_ranges_with(
        &self,
        file: &RelPath,
        ranges: &[(u64, u64)],
        _scratch: &mut Vec<Vec<u8>>,
        with: &mut dyn FnMut(&[&[u8]]) -> Result<()>,
    ) -> Result<()> {
        // The cache's own bytes (slices of the responses they came in).
        let fetched = self.fetch_checked(file, ranges)?;
        let slices: Vec<&[u8]> = fetched.iter().map(|bytes| &bytes[..]).collect();
        with(&slices)
    }

    fn read_range_with(
        &self,
        file: &RelPath,
        offset: u64,
        len: u64,
        _scratch: &mut Vec<u8>,
        with: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        // The cache's own bytes (a slice of the response they came in).
        let fetched = self.fetch_checked(file, &[(offset, len)])?;
        with(fetched.first().map_or(&[][..], |bytes| &bytes[..]))
    }

    fn concurrent_reads(&self) -> usize {
        self.max_in_flight
    }

    fn prefetch(&self, files: &[(RelPath, Vec<(u64, u64)>)]) {
        self.plan_reads(files);
    }

    fn prefetch_listings(&self, dirs: &[RelPath]) {
        self.start_listings(dirs);
    }

    fn create_dir(&self, dir: &RelPath) -> Result<()> {
        // A folder is the prefix of its files: nothing to make.
        self.refuse_if_read_only(dir)
    }

    fn write(&self, file: &RelPath, data: &[u8]) -> Result<()> {
        self.refuse_if_read_only(file)?;
        if file.is_root() {
            return Err(Error::Usage(
                "cannot write the storage root as a file".into(),
            ));
        }
        self.forget_pending();
        self.read_ahead.forget();
        let key = self.key(file);
        self.cache.forget(file);
        let payload = PutPayload::from(data.to_vec());
        // One PUT: the object appears whole or not at all.
        let put = block_on(self.store.put(&key, payload))?;
        bump(&self.counters.files_written, 1);
        bump(&self.counters.bytes_written, data.len() as u64);
        put.map(|_| ()).map_err(|e| self.error(file, &e))
    }

    fn rename(&self, from: &RelPath, to: &RelPath) -> Result<()> {
        self.refuse_if_read_only(from)?;
        self.forget_pending();
        self.read_ahead.forget();
        bump(&self.counters.changes, 1);
        self.cache.forget(from);
        self.cache.forget(to);
        // Object stores have no rename: a copy, then the delete (not atomic).
        block_on(self.store.rename(&self.key(from), &self.key(to)))?
            .map_err(|e| self.error(from, &e))
    }

    fn remove_file(&self, file: &RelPath) -> Result<()> {
        self.refuse_if_read_only(file)?;
        // A DELETE of a missing key succeeds on S3; the interface promises
        // an error, so the key is looked up first.
        if self.cache.size(file).is_none() {
            let head = block_on(self.store.head(&self.key(file)))?;
            bump(&self.counters.probes, 1);
            head.map_err(|e| self.error(file, &e))?;
        }
        self.forget_pending();
        self.read_ahead.forget();
        self.cache.forget(file);
        bump(&self.counters.changes, 1);
        block_on(self.store.delete(&self.key(file)))?.map_err(|e| self.error(file, &e))
    }

    fn remove_dir(&self, dir: &RelPath) -> Result<()> {
        if dir.is_root() {
            return Err(Error::Usage("refusing to remove the storage root".into()));
        }
        self.refuse_if_read_only(dir)?;
        self.forget_pending();
        self.read_ahead.forget();
        bump(&self.counters.changes, 1);
        self.cache.forget(dir);
        let key = self.key(dir);
        let store = &self.store;
        let removed = block_on(async {
            let keys = store.list(Some(&key)).map_ok(|meta| meta.location).boxed();
            store.delete_stream(keys).try_collect::<Vec<_>>().await
        })?;
        removed.map(|_| ()).map_err(|e| self.error(dir, &e))
    }

    fn counters(&self) -> IoCounters {
        self.counters.snapshot()
    }
}
