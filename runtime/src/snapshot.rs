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

/// An array opened at a time range.
pub struct Snapshot {
    storage: Box<dyn Storage>,
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
        let directory = ArrayDirectory::open(
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
        // storage takes, on a pool of that many threads.
        let wanted = storage.concurrent_reads();
        let pool = (wanted > rayon::current_num_threads() && listed.len() > 1)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(wanted)
                    .build()
                    .ok()
            })
            .flatten();
        let loaded = match pool {
            Some(pool) => pool.install(load_all),
            None => load_all(),
        };
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

    /// The array metadata visible at the open range.
    pub fn metadata(&self) -> Result<Metadata> {
        Metadata::load(
            self.storage.as_ref(),
            &self.directory.metadata().files,
            self.options.key.as_ref(),
        )
    }
}
