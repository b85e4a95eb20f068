//! Folder listings of an [`ObjectStorage`]: plain (`/` as the delimiter,
//! as a filesystem lists), folded at a suffix ([`Storage::list_names_folded`]),
//! and either kind started ahead of the call that takes it
//! ([`Storage::prefetch_listings`]).
//!
//! Why fold: `__commits/` holds one key per fragment, and a plain S3
//! listing sends each as an entry of several hundred bytes (key, size,
//! date, tag, storage class), 1,000 a page. Listed with `.wrt` as the
//! delimiter, each `…_22.wrt` key comes back as a common prefix, the key
//! alone: the same pages (same requests) in a fraction of the bytes, and a
//! server that renders entries one by one (moto) answers about ten times
//! sooner. Only the sizes are lost, which no reader of a commit marker needs.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use object_store::list::{PaginatedListOptions, PaginatedListStore};
use object_store::path::{Path as Key, DELIMITER};
use object_store::ListResult;

use super::{block_on, runtime, ObjectStorage};
use crate::error::Result;
use crate::storage::counters::bump;
use crate::storage::{DirEntry, EntryKind, FoldAt, RelPath};

/// A listing under way: the folder, and the suffix it is folded at (none
/// for a plain listing).
pub(super) type ListingKey = (RelPath, Option<&'static str>);

/// A folder listing under way.
pub(super) type PendingListing =
    tokio::task::JoinHandle<std::result::Result<ListResult, object_store::Error>>;

/// Every page of the listing of keys below `prefix` folded at `suffix`,
/// merged into one result.
async fn list_all_folded(
    lister: Arc<dyn PaginatedListStore>,
    prefix: Option<String>,
    suffix: &'static str,
) -> std::result::Result<ListResult, object_store::Error> {
    let mut all = ListResult {
        common_prefixes: Vec::new(),
        objects: Vec::new(),
    };
    let mut page_token = None;
    loop {
        let options = PaginatedListOptions {
            delimiter: Some(Cow::Borrowed(suffix)),
            page_token,
            ..PaginatedListOptions::default()
        };
        let page = lister.list_paginated(prefix.as_deref(), options).await?;
        all.common_prefixes.extend(page.result.common_prefixes);
        all.objects.extend(page.result.objects);
        match page.page_token {
            Some(token) => page_token = Some(token),
            None => return Ok(all),
        }
    }
}

impl ObjectStorage {
    /// [`Storage::prefetch_listings`]: a plain listing of each folder of
    /// `dirs` not already under way, started on the runtime (all at once:
    /// an array has a handful of folders) and left running for
    /// [`Storage::list`] to take.
    pub(super) fn start_listings(&self, dirs: &[RelPath]) {
        let Ok(runtime) = runtime() else { return };
        let mut pending = self.pending();
        for dir in dirs {
            let key = (dir.clone(), None);
            if pending.contains_key(&key) {
                continue;
            }
            let store = Arc::clone(&self.store);
            let prefix = self.key(dir);
            let listing = runtime.spawn(async move {
                let prefix = (!prefix.as_ref().is_empty()).then_some(&prefix);
                store.list_with_delimiter(prefix).await
            });
            bump(&self.counters.listings, 1);
            pending.insert(key, listing);
        }
    }

    /// [`Storage::prefetch_folded_listing`]: the folded listing of `dir`
    /// started on the runtime, where this store lists folded.
    pub(super) fn start_folded_listing(&self, dir: &RelPath, fold: &FoldAt) {
        let (Some(lister), Ok(runtime)) = (&self.lister, runtime()) else {
            return;
        };
        let key = (dir.clone(), Some(fold.suffix));
        let mut pending = self.pending();
        if pending.contains_key(&key) {
            return;
        }
        let listing = runtime.spawn(list_all_folded(
            Arc::clone(lister),
            self.folder_prefix(dir),
            fold.suffix,
        ));
        bump(&self.counters.listings, 1);
        pending.insert(key, listing);
    }

    /// The key prefix of the files in `dir` (its key and `/`; none for the
    /// root of a store at its bucket's top).
    fn folder_prefix(&self, dir: &RelPath) -> Option<String> {
        let key = self.key(dir);
        (!key.as_ref().is_empty()).then(|| format!("{}{DELIMITER}", key.as_ref()))
    }

    pub(super) fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<ListingKey, PendingListing>> {
        // The map holds only handles: a panic elsewhere leaves it usable.
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The listing started ahead under `key`, if any, awaited (taken: a
    /// later listing asks the store again).
    fn take_pending(
        &self,
        key: &ListingKey,
    ) -> Option<Result<std::result::Result<ListResult, object_store::Error>>> {
        let pending = self.pending().remove(key)?;
        Some(block_on(pending).map(|joined| {
            joined.unwrap_or_else(|e| {
                Err(object_store::Error::Generic {
                    store: "listing",
                    source: Box::new(e),
                })
            })
        }))
    }

    /// Drops the listings started ahead: a change may make them stale.
    pub(super) fn forget_pending(&self) {
        for (_, listing) in self.pending().drain() {
            listing.abort();
        }
    }

    /// [`Storage::list`]: `dir` listed with `/` as the delimiter.
    pub(super) fn list_plain(&self, dir: &RelPath) -> Result<Option<Vec<DirEntry>>> {
        let key = self.key(dir);
        let listed = match self.take_pending(&(dir.clone(), None)) {
            Some(listed) => listed?,
            None => {
                let prefix = (!key.as_ref().is_empty()).then_some(&key);
                bump(&self.counters.listings, 1);
                block_on(self.store.list_with_delimiter(prefix))?
            }
        };
        let listed = listed.map_err(|e| self.error(dir, &e))?;
        let folders = listed.common_prefixes.iter().filter_map(|folder| {
            Some(DirEntry {
                name: Self::name_below(&key, folder)?,
                kind: EntryKind::Dir,
                size: Some(0),
            })
        });
        Ok(self.entries(dir, &key, &listed, folders.collect()))
    }

    /// [`Storage::list_names_folded`]: `dir` listed with `fold.suffix` as
    /// the delimiter where the store allows it (else plainly), or plainly
    /// again when a folded name is not whole.
    pub(super) fn list_folded(
        &self,
        dir: &RelPath,
        fold: &FoldAt,
    ) -> Result<Option<Vec<DirEntry>>> {
        let Some(lister) = &self.lister else {
            return self.list_plain(dir);
        };
        let listed = match self.take_pending(&(dir.clone(), Some(fold.suffix))) {
            Some(listed) => listed?,
            None => {
                bump(&self.counters.listings, 1);
                let prefix = self.folder_prefix(dir);
                block_on(list_all_folded(Arc::clone(lister), prefix, fold.suffix))?
            }
        };
        // A key that a path cannot hold makes the folded listing fail as a
        // whole: the plain one reports (or skips) it as a listing does.
        let Ok(listed) = listed else {
            return self.list_plain(dir);
        };
        let key = self.key(dir);
        let mut extra = Vec::with_capacity(listed.common_prefixes.len());
        for folded in &listed.common_prefixes {
            let Some((name, deeper)) = Self::first_below(&key, folded) else {
                continue;
            };
            if deeper {
                extra.push(DirEntry {
                    name,
                    kind: EntryKind::Dir,
                    size: Some(0),
                });
            } else if name.ends_with(fold.suffix) && (fold.is_whole_name)(&name) {
                extra.push(DirEntry {
                    name,
                    kind: EntryKind::File,
                    size: None,
                });
            } else {
                // It may stand for a longer name (a temporary file's):
                // only a plain listing tells.
                return self.list_plain(dir);
            }
        }
        // Without `/` as the delimiter, a subfolder's files come one by
        // one: each names the subfolder.
        for object in &listed.objects {
            if let Some((name, true)) = Self::first_below(&key, &object.location) {
                extra.push(DirEntry {
                    name,
                    kind: EntryKind::Dir,
                    size: Some(0),
                });
            }
        }
        Ok(self.entries(dir, &key, &listed, extra))
    }

    /// The first component of `listed` below `dir_key` (one our paths can
    /// hold), and whether more components follow it.
    fn first_below(dir_key: &Key, listed: &Key) -> Option<(String, bool)> {
        let mut rest = listed.prefix_match(dir_key)?;
        let name = rest.next()?.as_ref().to_owned();
        RelPath::root().join(&name).ok()?;
        Some((name, rest.next().is_some()))
    }

    /// The entries of a listing of `dir` (key `key`): its direct files,
    /// with `extra` entries, sorted by name without repeats (stores list in
    /// their own order: S3 by UTF-8 bytes, others not at all); `None` when
    /// nothing is there. The files' sizes are kept.
    fn entries(
        &self,
        dir: &RelPath,
        key: &Key,
        listed: &ListResult,
        extra: Vec<DirEntry>,
    ) -> Option<Vec<DirEntry>> {
        if listed.objects.is_empty() && listed.common_prefixes.is_empty() {
            return None;
        }
        let files = listed.objects.iter().filter_map(|object| {
            Some(DirEntry {
                name: Self::name_below(key, &object.location)?,
                kind: EntryKind::File,
                size: Some(object.size),
            })
        });
        let mut entries: Vec<DirEntry> = files.chain(extra).collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        entries.dedup_by(|a, b| a.name == b.name);
        // The sizes came with the listing: no request will ask them again.
        self.cache.set_sizes(entries.iter().filter_map(|e| {
            let size = e.size.filter(|_| e.is_file())?;
            Some((dir.join(&e.name).ok()?, size))
        }));
        Some(entries)
    }
}
