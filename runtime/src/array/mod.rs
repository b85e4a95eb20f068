//! The façade users call: [`Array`], an array opened at a time range, over
//! the [`Snapshot`] that holds what was loaded.

use std::path::Path;
use std::sync::Arc;

use crate::condition::DeleteCondition;
use crate::condition::QueryCondition;
use crate::consolidate::{ConsolidationConfig, ConsolidationMode, Progress};
use crate::directory::ArrayDirectory;
use crate::error::{Error, Result};
use crate::fragment::FragmentMetadata;
use crate::metadata::{Metadata, MetadataValue};
use crate::read::{QueryBuilder, ReadQuery, ReadResult};
use crate::schema::{ArraySchema, Scalar, SchemaBuilder};
use crate::snapshot::Snapshot;
use crate::storage::{LocalStorage, Storage};
use crate::write::{MetadataChange, SchemaEvolution, StreamWriter, Write};

pub use crate::snapshot::OpenOptions;

/// An array opened at a time range: read it, or write new fragments to it.
pub struct Array {
    snapshot: Snapshot,
}

impl Array {
    /// Opens the array in the local folder `path`.
    pub fn open_path(path: impl AsRef<Path>, options: OpenOptions) -> Result<Array> {
        Self::open(Box::new(LocalStorage::new(path.as_ref())), options)
    }

    /// Opens the array at `location`: a local path or an object-store URL
    /// (`s3://bucket/array`, …), configured from the environment and from
    /// `config` (see [`crate::storage::open_url`]).
    pub fn open_url(
        location: &str,
        config: &[(String, String)],
        options: OpenOptions,
    ) -> Result<Array> {
        Self::open(crate::storage::open_url(location, config)?, options)
    }

    /// Creates an array at `location` (a local path or an object-store
    /// URL, see [`crate::storage::open_url`]) from `schema` and opens it.
    pub fn create_url(
        location: &str,
        config: &[(String, String)],
        schema: &SchemaBuilder,
    ) -> Result<Array> {
        Self::create(crate::storage::open_url(location, config)?, schema)
    }

    /// Opens the array rooted at `storage` (see [`Snapshot::open`]).
    pub fn open(storage: Box<dyn Storage>, options: OpenOptions) -> Result<Array> {
        Ok(Array {
            snapshot: Snapshot::open(storage, options)?,
        })
    }

    /// Creates an array in the local folder `path` from `schema` (checked
    /// as TileDB checks it; refused where an array already is) and opens it.
    pub fn create_path(path: impl AsRef<Path>, schema: &SchemaBuilder) -> Result<Array> {
        Self::create(Box::new(LocalStorage::new(path.as_ref())), schema)
    }

    /// Creates an array rooted at `storage` from `schema` (see
    /// [`crate::write::create_array_from`]) and opens it now, with the
    /// schema's encryption key.
    pub fn create(storage: Box<dyn Storage>, schema: &SchemaBuilder) -> Result<Array> {
        crate::write::create_array_from(storage.as_ref(), schema, 0)?;
        let options = OpenOptions {
            key: schema.encryption_key,
            ..OpenOptions::default()
        };
        Self::open(storage, options)
    }

    /// Writes one fragment after checking `write` as TileDB checks a write
    /// query ([`crate::write::validate`]): a refused write writes nothing.
    /// Returns the fragment's name (`None` for a write of no cells). This
    /// opened array does not see the new fragment; open the array again.
    pub fn write(&self, write: &Write) -> Result<Option<String>> {
        crate::write::write_checked(
            self.storage(),
            self.schema(),
            write,
            self.options().key.as_ref(),
        )
    }

    /// Writes one fragment from Arrow record batches (columns named after
    /// dimensions and attributes, typed as [`crate::write::arrow`] says),
    /// checked as [`Array::write`] checks a write. A dense array takes its
    /// box from the coordinates, which must cover it.
    #[cfg(feature = "arrow")]
    pub fn write_record_batches(
        &self,
        batches: &[arrow_array::RecordBatch],
    ) -> Result<Option<String>> {
        let write = crate::write::arrow::write_from_record_batches(self.schema(), batches, None)?;
        self.write(&write)
    }

    /// A sparse streaming writer: batches of columns (cells in any order)
    /// written as fragments cut once `limit_bytes` of cells are held, each
    /// committed as it is cut (see [`crate::write::stream`]).
    pub fn stream_sparse(&self, limit_bytes: u64) -> Result<StreamWriter<'_>> {
        StreamWriter::sparse(
            self.storage(),
            self.schema(),
            self.options().key,
            limit_bytes,
        )
    }

    /// A dense streaming writer of the box `subarray`, cells in row-major
    /// order across the batches, cut at whole rows of the first dimension
    /// once `limit_bytes` of cells are held (see [`crate::write::stream`]).
    pub fn stream_dense(
        &self,
        subarray: Vec<(i128, i128)>,
        limit_bytes: u64,
    ) -> Result<StreamWriter<'_>> {
        let key = self.options().key;
        StreamWriter::dense(self.storage(), self.schema(), key, limit_bytes, subarray)
    }

    /// Deletes the cells that satisfy `condition` (tiledb-py's `cond=`
    /// syntax, see [`QueryCondition`]) by writing a delete commit at
    /// `timestamp` (milliseconds; `None` = now), as TileDB's delete query
    /// does. Refused, writing nothing, where TileDB refuses: on a dense
    /// array, with a condition that does not fit the schema, or one whose
    /// answer does not depend on the cells (a value missing from an
    /// enumeration, a null test of a field that cannot be null). Returns
    /// the commit's file name. This opened array does not see the delete;
    /// open the array again.
    pub fn delete(&self, condition: &str, timestamp: Option<u64>) -> Result<String> {
        if self.schema().is_dense() {
            return Err(Error::Usage(
                "deletes apply to sparse arrays only (TileDB refuses them on dense arrays)".into(),
            ));
        }
        let condition = QueryCondition::parse(condition, self.schema())?;
        if condition.fields().iter().any(|f| {
            self.schema()
                .attribute(f)
                .is_some_and(|(_, a)| a.enumeration.is_some())
        }) {
            return Err(Error::Usage(format!(
                "{condition}: deletes by the values of an enumerated attribute are not supported"
            )));
        }
        if has_null_test(condition.root()) {
            // TileDB cannot read back a delete commit holding a null test
            // ("value size mismatch").
            return Err(Error::Usage(format!(
                "{condition}: deletes cannot test for null (== None / != None); TileDB cannot read such a delete"
            )));
        }
        // TileDB stores the negation: the condition of the cells to keep.
        let keep = condition.negated().to_stored().ok_or_else(|| {
            Error::Usage(format!(
                "{condition}: the condition selects every cell or none, whatever they hold"
            ))
        })?;
        let timestamp = timestamp.unwrap_or_else(crate::directory::timestamped_name::now_ms);
        crate::write::write_delete(self.storage(), keep, timestamp, self.options().key.as_ref())
    }

    /// What was loaded at open: the state every operation works on.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The schema the array was opened with (the latest at the open time).
    pub fn schema(&self) -> &ArraySchema {
        self.snapshot.schema()
    }

    /// The visible fragments, oldest first.
    pub fn fragments(&self) -> &[Arc<FragmentMetadata>] {
        self.snapshot.fragments()
    }

    /// The array's folder as listed at open: its fragments, commits, schemas and vacuum files.
    pub fn directory(&self) -> &ArrayDirectory {
        self.snapshot.directory()
    }

    /// The storage the array was opened on; every path below is relative to its root.
    pub fn storage(&self) -> &dyn Storage {
        self.snapshot.storage()
    }

    /// The options the array was opened with (time range, key).
    pub fn options(&self) -> &OpenOptions {
        self.snapshot.options()
    }

    /// The delete conditions committed in the open range, oldest first; reads drop the cells they delete.
    pub fn conditions(&self) -> &[DeleteCondition] {
        self.snapshot.conditions()
    }

    /// The array's non-empty domain: per dimension the union of the
    /// fragments' non-empty domains (`None` when no fragment has cells).
    pub fn non_empty_domain(&self) -> Option<Vec<(Scalar, Scalar)>> {
        self.snapshot.non_empty_domain()
    }

    /// Starts a typed read: ranges by dimension name in Rust types,
    /// attributes, order, then [`QueryBuilder::read`].
    ///
    /// ```no_run
    /// # fn main() -> tiledb_runtime::error::Result<()> {
    /// # let array = tiledb_runtime::array::Array::open_path("a", Default::default())?;
    /// let result = array.query().range("rows", 1..=4)?.attributes(["a"]).read()?;
    /// let a: &[i32] = &result.values::<i32>("a")?;
    /// # Ok(()) }
    /// ```
    pub fn query(&self) -> QueryBuilder<'_> {
        QueryBuilder::new(&self.snapshot)
    }

    /// Runs a read described as bytes (the untyped API under [`query`](Self::query)).
    pub fn read(&self, query: &ReadQuery) -> Result<ReadResult> {
        crate::read::read_retrying(&self.snapshot, query)
    }

    /// The array's schema as an Arrow schema: its dimensions, then its
    /// attributes (see [`read::arrow`](crate::read::arrow) for the mapping).
    #[cfg(feature = "arrow")]
    pub fn arrow_schema(&self) -> arrow_schema::Schema {
        crate::read::arrow::arrow_schema(self.schema())
    }

    /// The array metadata visible at the open range.
    pub fn metadata(&self) -> Result<Metadata> {
        self.snapshot.metadata()
    }

    /// Puts one metadata value under `key`, now (see
    /// [`update_metadata`](Self::update_metadata)).
    pub fn put_metadata(&self, key: &str, value: MetadataValue) -> Result<()> {
        self.update_metadata(&[MetadataChange::Put(key.to_string(), value)], 0)
            .map(drop)
    }

    /// Deletes the metadata `key`, now.
    pub fn delete_metadata(&self, key: &str) -> Result<()> {
        self.update_metadata(&[MetadataChange::Delete(key.to_string())], 0)
            .map(drop)
    }

    /// Writes a batch of metadata puts and deletes as one file stamped
    /// `timestamp` (milliseconds; 0 means now), checked as TileDB checks
    /// them ([`crate::write::metadata`]); a refused batch writes nothing.
    /// Returns the file's name (`None` for no changes). This opened array
    /// does not see the change; open the array again.
    pub fn update_metadata(
        &self,
        changes: &[MetadataChange],
        timestamp: u64,
    ) -> Result<Option<String>> {
        crate::write::write_metadata_changes(
            self.storage(),
            changes,
            timestamp,
            self.options().key.as_ref(),
        )
    }

    /// Evolves the array's schema (the one it was opened with, which must
    /// be its latest) as TileDB does ([`SchemaEvolution`]); a refused
    /// evolution writes nothing. Returns the new schema; this opened array
    /// keeps the old one.
    pub fn evolve(&self, evolution: &SchemaEvolution) -> Result<ArraySchema> {
        evolution.apply(self.storage(), self.schema(), self.options().key.as_ref())
    }

    /// Consolidates the array in `config.mode` (TileDB's
    /// `sm.consolidation.*` settings; see [`crate::consolidate`]), with the
    /// key the array was opened with. Returns the names of the files
    /// written. This opened array does not see them; open it again.
    pub fn consolidate(&self, config: &ConsolidationConfig) -> Result<Vec<String>> {
        self.consolidate_reporting(config, &mut |_| {})
    }

    /// [`consolidate`](Self::consolidate), calling `progress` after each step.
    pub fn consolidate_reporting(
        &self,
        config: &ConsolidationConfig,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Vec<String>> {
        crate::consolidate::consolidate_reporting(
            self.snapshot.shared_storage(),
            config,
            self.options().key,
            progress,
        )
    }

    /// Removes what consolidations in `mode` made obsolete (see
    /// [`crate::vacuum`]); returns how many fragments or files went.
    pub fn vacuum(&self, mode: ConsolidationMode) -> Result<usize> {
        let storage = self.storage();
        match mode {
            ConsolidationMode::Fragments => crate::vacuum::vacuum_fragments(storage),
            ConsolidationMode::FragmentMeta => crate::vacuum::vacuum_fragment_meta(storage),
            ConsolidationMode::Commits => crate::vacuum::vacuum_commits(storage),
            ConsolidationMode::ArrayMeta => crate::vacuum::vacuum_array_meta(storage),
        }
    }
}

/// Whether the condition holds a `== None` / `!= None` test.
fn has_null_test(node: &crate::condition::Node) -> bool {
    use crate::condition::Node;
    match node {
        Node::And(c) | Node::Or(c) => c.iter().any(has_null_test),
        Node::Null { .. } => true,
        _ => false,
    }
}
