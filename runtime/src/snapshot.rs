//! An array opened at a time range: its directory, its schema, its
//! fragments' metadata (footers only, until a read needs more), and its
//! delete conditions, loaded once. Reading, consolidation and `check` work
//! on a [`Snapshot`]; [`crate::array::Array`] is the façade over one.

use rayon::prelude::*;
use std::path::Path;
use std::sync::Arc;

use crate::condition::{load_condition, DeleteCondition};
use crate::directory::SchemaFile;
use crate::directory::{ArrayDirectory, TimeTravelRule};
use crate::error::Result;
use crate::fragment::{load_consolidated_footers, FragmentMetadata, SchemaCache};
use crate::metadata::Metadata;
use crate::schema::ArraySchema;
use crate::storage::{LocalStorage, Storage};

/// How to open an array.
#[derive(Debug, Clone, Copy)]
pub struct OpenOptions {
    /// The open range, inclusive, in milliseconds.
    pub timestamp_start: u64,
    /// The end of the open range, inclusive, in milliseconds; fragments written later are not seen.
    pub timestamp_end: u64,
    /// The AES-256-GCM key of an encrypted array.
    pub key: Option<[u8; 32]>,
}

impl Default for OpenOptions {
    /// Opened now: `[0, now]`.
    fn default() -> Self {
        OpenOptions {
            timestamp_start: 0,
            timestamp_end: crate::directory::timestamped_name::now_ms(),
            key: None,
        }
    }
}

/// How many times an open or a read starts again when a file it listed
/// was removed meanwhile by a concurrent vacuum.
pub const VANISHED_RETRIES: usize = 8;

/// The error is a file that is not there (any more): listed, then removed.
pub(crate) fn vanished(error: &crate::error::Error) -> bool {
    matches!(
        error,
        crate::error::Error::Io {
            kind: std::io::ErrorKind::NotFound,
            ..
        }
    )
}

/// An array opened at a time range.
pub struct Snapshot {
    storage: Arc<dyn Storage>,
    directory: ArrayDirectory,
    schema: Arc<ArraySchema>,
    fragments: Vec<Arc<FragmentMetadata>>,
    conditions: Vec<DeleteCondition>,
    options: OpenOptions,
}

impl Snapshot {
    /// Opens the array in the local folder `path`.
    pub fn open_path(path: impl AsRef<Path>, options: OpenOptions) -> Result<Snapshot> {
        Self::open(Box::new(LocalStorage::new(path.as_ref())), options)
    }

    /// Opens the array rooted at `storage`. Reads the folder listings, the
    /// latest schema (and the fragments' schemas), consolidated fragment
    /// metadata, and each fragment's footer (only the footer: from a
    /// consolidated `.meta` file when it holds it), and the delete commits.
    pub fn open(storage: Box<dyn Storage>, options: OpenOptions) -> Result<Snapshot> {
        Self::open_shared(Arc::from(storage), options)
    }

    /// Opens the array rooted at a storage shared with other snapshots:
    /// consolidation reopens the array after each step on the same storage.
    ///
    /// A file that was listed but is gone when read was removed by a vacuum
    /// running meanwhile (consolidation keeps the array's content, vacuum
    /// then removes what it made obsolete): the folder is listed again and
    /// the open retried, up to [`VANISHED_RETRIES`] times.
    pub fn open_shared(storage: Arc<dyn Storage>, options: OpenOptions) -> Result<Snapshot> {
        let mut attempt = 0;
        loop {
            match Self::load(Arc::clone(&storage), options) {
                Err(e) if vanished(&e) && attempt < VANISHED_RETRIES => attempt += 1,
                other => return other,
            }
        }
    }

    fn load(storage: Arc<dyn Storage>, options: OpenOptions) -> Result<Snapshot> {
        let directory = ArrayDirectory::open_for_read(
            storage.as_ref(),
            options.timestamp_start,
            options.timestamp_end,
        )?;
        let key = options.key;
        let schemas = SchemaCache::new(storage.as_ref(), key);
        let latest: &SchemaFile = directory.latest_schema_for_read();
        let latest_name = latest.name.as_ref().map(|n| n.as_str().to_string());
        let schema = schemas.get(latest_name.as_deref())?;
        let rule = TimeTravelRule::for_read(!schema.is_dense());
        let listed = directory.fragments(rule);
        let consolidated = if listed.is_empty() {
            Default::default()
        } else {
            load_consolidated_footers(
                storage.as_ref(),
                directory.fragment_meta_files(),
                key.as_ref(),
            )?
        };
        // Footers are independent reads: loaded in parallel (thousands of
        // fragments without consolidated metadata), the first error in
        // fragment order reported.
        let load_all = || -> Vec<Result<FragmentMetadata>> {
            listed
                .par_iter()
                .map(|fragment| {
                    FragmentMetadata::load(
                        storage.as_ref(),
                        fragment,
                        &schemas,
                        &consolidated,
                        key.as_ref(),
                    )
                })
                .collect()
        };
        // Over a network each load mostly waits: as many at once as the
        // storage takes.
        let loaded = crate::storage::on_io_threads(storage.as_ref(), listed.len(), load_all);
        let mut fragments = Vec::with_capacity(listed.len());
        for fragment in loaded {
            fragments.push(Arc::new(fragment?));
        }
        let mut conditions = Vec::new();
        if !schema.is_dense() {
            for commit in directory.condition_commits() {
                conditions.push(load_condition(storage.as_ref(), commit, key.as_ref())?);
            }
            conditions.sort_by_key(|c| c.timestamp);
        }
        Ok(Snapshot {
            storage,
            directory,
            schema,
            fragments,
            conditions,
            options,
        })
    }

    /// The schema the array was opened with (the latest at the open time).
    pub fn schema(&self) -> &ArraySchema {
        &self.schema
    }

    /// The visible fragments, oldest first.
    pub fn fragments(&self) -> &[Arc<FragmentMetadata>] {
        &self.fragments
    }

    /// Keeps only the fragments `keep` accepts: fragment consolidation reads
    /// the run of fragments it chose, not every visible one.
    pub(crate) fn retain_fragments(&mut self, mut keep: impl FnMut(&FragmentMetadata) -> bool) {
        self.fragments.retain(|f| keep(f));
    }

    /// The array's folder as listed at open: its fragments, commits, schemas and vacuum files.
    pub fn directory(&self) -> &ArrayDirectory {
        &self.directory
    }

    /// The storage the array was opened on; every path below is relative to its root.
    pub fn storage(&self) -> &dyn Storage {
        self.storage.as_ref()
    }

    /// The storage as a shared handle, to open the array again on it.
    pub fn shared_storage(&self) -> Arc<dyn Storage> {
        Arc::clone(&self.storage)
    }

    /// The options the array was opened with (time range, key).
    pub fn options(&self) -> &OpenOptions {
        &self.options
    }

    /// The delete conditions committed in the open range, oldest first; reads drop the cells they delete.
    pub fn conditions(&self) -> &[DeleteCondition] {
        &self.conditions
    }

    /// The array's non-empty domain: per dimension the union of the
    /// fragments' non-empty domains (`None` when no fragment has cells).
    pub fn non_empty_domain(&self) -> Option<Vec<(crate::schema::Scalar, crate::schema::Scalar)>> {
        let mut out: Option<Vec<(crate::schema::Scalar, crate::schema::Scalar)>> = None;
        for f in &self.fragments {
            let Some(ned) = &f.non_empty_domain else {
                continue;
            };
            let decoded: Option<Vec<_>> = ned
                .iter()
                .zip(&self.schema.dimensions)
                .map(|((lo, hi), d)| {
                    Some((
                        crate::schema::Scalar::decode(d.datatype, lo)?,
                        crate::schema::Scalar::decode(d.datatype, hi)?,
                    ))
                })
                .collect();
            let Some(decoded) = decoded else { continue };
            out = Some(match out {
                None => decoded,
                Some(prev) => prev
                    .into_iter()
                    .zip(decoded)
                    .map(|((a, b), (c, d))| {
                        let lo = if c.compare(&a).is_lt() { c } else { a };
                        let hi = if d.compare(&b).is_gt() { d } else { b };
                        (lo, hi)
                    })
                    .collect(),
            });
        }
        out
    }

    /// The array metadata visible at the open range. Metadata files
    /// removed by a vacuum since the open (after a consolidation merged
    /// them) are found again by listing the folder anew.
    pub fn metadata(&self) -> Result<Metadata> {
        let key = self.options.key.as_ref();
        let storage = self.storage.as_ref();
        let mut result = Metadata::load(storage, &self.directory.metadata().files, key);
        let mut attempt = 0;
        while result.as_ref().is_err_and(vanished) && attempt < VANISHED_RETRIES {
            attempt += 1;
            let (start, end) = (self.options.timestamp_start, self.options.timestamp_end);
            let listed = ArrayDirectory::open_for_read(storage, start, end)?;
            result = Metadata::load(storage, &listed.metadata().files, key);
        }
        result
    }
}
