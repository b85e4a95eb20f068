//! Which files make up an array at a given open range.
//!
//! An array folder holds, depending on the versions that wrote it:
//!
//! ```text
//! __array_schema.tdb                 schema before format v10
//! __schema/<ts>                      schemas, v10+ (and __enumerations/)
//! <ts_v>/ <ts_v>.ok <ts_v>.vac       fragments before v12, in the root
//! <ts>.meta                          consolidated fragment metadata before v12
//! __fragments/<ts_v>/                fragments, v12+
//! __commits/<ts_v>.wrt|.del|.upd|.vac|.con|.ign
//! __fragment_meta/<ts_v>.meta
//! __meta/<ts>[.vac]                  array metadata
//! __labels/<label>/                  dimension-label arrays
//! ```
//!
//! [`ArrayDirectory::open`] lists these folders and reads only the small text
//! commit files (`.con`, `.ign`, and `.vac` files that may apply); it never
//! opens a fragment. Which fragments are visible also depends on whether the
//! array is dense or sparse, which the schema says, so that choice is made by
//! the caller through [`TimeTravelRule`].

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use crate::directory::files::*;
use crate::directory::listing::{
    in_file, list_checked, list_commits_checked, parse_listed, sort_by_time, TimestampedSet,
    COMMITS_FOLD,
};
use crate::directory::text_files::{self, EmbeddedTile};
use crate::directory::timestamped_name::{Extension, TimestampedName};
use crate::error::{Error, Result};
use crate::storage::{DirEntry, RelPath, Storage};

/// The files of an array, as seen from one open range.
#[derive(Debug, Clone)]
pub struct ArrayDirectory {
    root: PathBuf,
    timestamp_start: u64,
    timestamp_end: u64,
    schemas: Vec<SchemaFile>,
    enumerations: Vec<RelPath>,
    committed: Vec<Fragment>,
    uncommitted: Vec<UncommittedEntry>,
    fragment_vacuum_files: Vec<VacuumFile>,
    conditions: Vec<ConditionCommit>,
    fragment_meta: Vec<RelPath>,
    metadata: TimestampedSet,
    dimension_labels: Vec<RelPath>,
    consolidated_commit_files: Vec<RelPath>,
    ignore_files: Vec<RelPath>,
    commit_versions: Vec<u32>,
}

/// What the root listing says about one candidate root fragment.
struct RootCandidate {
    path: RelPath,
    name: TimestampedName,
}

impl ArrayDirectory {
    /// Lists the array in `storage` (rooted at the array folder) for the open
    /// range `[timestamp_start, timestamp_end]`.
    ///
    /// Reads: folder listings of the root and of each owned folder present
    /// (all at once, [`Storage::prefetch_listings`]);
    /// every `.con` and `.ign` file; the fragment `.vac` files overlapping the
    /// range; the metadata `.vac` files inside it. Probes (no read) the
    /// `__fragment_metadata.tdb` of uncommitted-looking root folders of
    /// format v1–v4. Nothing else is opened.
    pub fn open(storage: &dyn Storage, timestamp_start: u64, timestamp_end: u64) -> Result<Self> {
        Self::open_with(storage, timestamp_start, timestamp_end, true)
    }

    /// [`ArrayDirectory::open`] for a reader: `__fragments/` is not listed,
    /// so [`ArrayDirectory::uncommitted`] is empty. A reader needs only the
    /// committed fragments, which the commits name (TileDB lists that folder
    /// only to vacuum it), and on an object store that listing costs a
    /// request of a size growing with the fragments.
    pub fn open_for_read(
        storage: &dyn Storage,
        timestamp_start: u64,
        timestamp_end: u64,
    ) -> Result<Self> {
        Self::open_with(storage, timestamp_start, timestamp_end, false)
    }

    fn open_with(
        storage: &dyn Storage,
        timestamp_start: u64,
        timestamp_end: u64,
        list_uncommitted: bool,
    ) -> Result<Self> {
        if timestamp_start > timestamp_end {
            return Err(Error::Usage(format!(
                "open range start {timestamp_start} is after its end {timestamp_end}"
            )));
        }
        let root = RelPath::root();
        let root_entries =
            list_checked(storage, &root, ARRAY_DIR_NAMES)?.ok_or_else(|| Error::Io {
                file: storage.describe(&root),
                kind: std::io::ErrorKind::NotFound,
                message: "no such folder".into(),
            })?;
        let has_dir = |name: &str| root_entries.iter().any(|e| e.is_dir() && e.name == name);
        let dir_path = |name: &str| root.join(name);
        // Every folder listed below, asked for at once.
        let mut listed_dirs = vec![SCHEMA_DIR, FRAGMENT_META_DIR, METADATA_DIR, LABELS_DIR];
        if list_uncommitted {
            listed_dirs.push(FRAGMENTS_DIR);
        }
        let ahead: Vec<RelPath> = listed_dirs
            .into_iter()
            .filter(|name| has_dir(name))
            .map(dir_path)
            .collect::<Result<_>>()?;
        // The longest listing first: one key per fragment, folded.
        if has_dir(COMMITS_DIR) {
            storage.prefetch_folded_listing(&dir_path(COMMITS_DIR)?, &COMMITS_FOLD);
        }
        storage.prefetch_listings(&ahead);

        let mut dir = ArrayDirectory {
            root: storage.describe(&root),
            timestamp_start,
            timestamp_end,
            schemas: Vec::new(),
            enumerations: Vec::new(),
            committed: Vec::new(),
            uncommitted: Vec::new(),
            fragment_vacuum_files: Vec::new(),
            conditions: Vec::new(),
            fragment_meta: Vec::new(),
            metadata: TimestampedSet::default(),
            dimension_labels: Vec::new(),
            consolidated_commit_files: Vec::new(),
            ignore_files: Vec::new(),
            commit_versions: Vec::new(),
        };

        // Schemas: the legacy file first, then __schema/ in name order.
        if root_entries
            .iter()
            .any(|e| e.is_file() && e.name == ARRAY_SCHEMA_FILE)
        {
            dir.schemas.push(SchemaFile {
                path: dir_path(ARRAY_SCHEMA_FILE)?,
                name: None,
            });
        }
        if has_dir(SCHEMA_DIR) {
            dir.load_schemas(storage, &dir_path(SCHEMA_DIR)?)?;
        }
        if dir.schemas.is_empty() {
            return Err(Error::Usage(format!(
                "{}: not an array (no {ARRAY_SCHEMA_FILE} and no schema in {SCHEMA_DIR}/)",
                dir.root.display()
            )));
        }

        // Listed before `__commits/`, kept after the root's `.meta` files.
        let mut meta_files = Vec::new();
        if has_dir(FRAGMENT_META_DIR) {
            let meta_dir = dir_path(FRAGMENT_META_DIR)?;
            for entry in list_checked(storage, &meta_dir, ARRAY_DIR_NAMES)?.unwrap_or_default() {
                if entry.is_file() && entry.name.ends_with(Extension::Meta.suffix()) {
                    meta_files.push(meta_dir.join(&entry.name)?);
                }
            }
        }
        // The schema and consolidated fragment metadata an open reads next,
        // fetched while `__commits/` (the longest listing) is under way.
        dir.read_ahead(storage, &meta_files);

        // Commits: ignore lists first, then consolidated commits.
        let commit_entries = if has_dir(COMMITS_DIR) {
            list_commits_checked(storage, &dir_path(COMMITS_DIR)?, ARRAY_DIR_NAMES)?
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let commits_dir = dir_path(COMMITS_DIR)?;
        let consolidated = dir.load_consolidated_commits(storage, &commits_dir, &commit_entries)?;

        dir.load_root(storage, &root_entries, &consolidated)?;
        dir.load_commits_dir(storage, &commits_dir, &commit_entries, &consolidated)?;

        if list_uncommitted && has_dir(FRAGMENTS_DIR) {
            dir.load_uncommitted_v12(storage, &dir_path(FRAGMENTS_DIR)?)?;
        }
        dir.fragment_meta.extend(meta_files);
        if has_dir(METADATA_DIR) {
            dir.metadata = TimestampedSet::load(
                storage,
                &dir_path(METADATA_DIR)?,
                &[],
                &[METADATA_DIR],
                timestamp_start,
                timestamp_end,
            )?;
        }
        if has_dir(LABELS_DIR) {
            let labels_dir = dir_path(LABELS_DIR)?;
            for entry in storage.list(&labels_dir)?.unwrap_or_default() {
                if entry.is_dir() {
                    dir.dimension_labels.push(labels_dir.join(&entry.name)?);
                }
            }
        }
        sort_by_time(&mut dir.conditions, |c| &c.name);
        Ok(dir)
    }

    /// Fetches ahead, on an object store, the files a reader opens right
    /// after the directory: the schema it reads and the consolidated
    /// fragment metadata files `meta_files` of `__fragment_meta/`
    /// ([`Storage::prefetch`], only a hint).
    fn read_ahead(&self, storage: &dyn Storage, meta_files: &[RelPath]) {
        if storage.concurrent_reads() == 0 {
            return;
        }
        let schema = &self.latest_schema_for_read().path;
        let files: Vec<(RelPath, Vec<(u64, u64)>)> = std::iter::once(schema)
            .chain(meta_files)
            .filter_map(|file| Some((file.clone(), vec![(0, storage.size(file).ok()?)])))
            .collect();
        storage.prefetch(&files);
    }

    fn load_schemas(&mut self, storage: &dyn Storage, schema_dir: &RelPath) -> Result<()> {
        for entry in list_checked(storage, schema_dir, ARRAY_DIR_NAMES)?.unwrap_or_default() {
            if entry.is_dir() {
                if entry.name == ENUMERATIONS_DIR {
                    let enum_dir = schema_dir.join(ENUMERATIONS_DIR)?;
                    for e in storage.list(&enum_dir)?.unwrap_or_default() {
                        if e.is_file() {
                            self.enumerations.push(enum_dir.join(&e.name)?);
                        }
                    }
                }
                continue;
            }
            let name = parse_listed(storage, schema_dir, &entry.name)?;
            if name.extension().is_some() {
                continue;
            }
            self.schemas.push(SchemaFile {
                path: schema_dir.join(&entry.name)?,
                name: Some(name),
            });
        }
        Ok(())
    }

    /// Reads every `.ign` and `.con` in `__commits/` (TileDB loads them all,
    /// whatever their timestamps) and returns the non-ignored entries.
    fn load_consolidated_commits(
        &mut self,
        storage: &dyn Storage,
        commits_dir: &RelPath,
        entries: &[DirEntry],
    ) -> Result<Consolidated> {
        let mut ignored: HashSet<RelPath> = HashSet::new();
        for entry in entries.iter().filter(|e| e.is_file()) {
            if entry.name.ends_with(Extension::Ign.suffix()) {
                let path = commits_dir.join(&entry.name)?;
                let data = storage.read(&path)?;
                ignored
                    .extend(text_files::parse_ignore_file(&data).map_err(in_file(storage, &path))?);
                self.ignore_files.push(path);
            }
        }
        let mut consolidated = Consolidated::default();
        for entry in entries.iter().filter(|e| e.is_file()) {
            if !entry.name.ends_with(Extension::Con.suffix()) {
                continue;
            }
            let path = commits_dir.join(&entry.name)?;
            let data = storage.read(&path)?;
            let commits =
                text_files::parse_consolidated_commits(&data).map_err(in_file(storage, &path))?;
            for commit in commits {
                if ignored.contains(&commit.path) {
                    continue;
                }
                if consolidated.sources.contains_key(&commit.path) {
                    // Listed again by a later commit consolidation: the
                    // first listing already counts.
                    continue;
                }
                consolidated
                    .sources
                    .insert(commit.path.clone(), path.clone());
                consolidated.entries.push((path.clone(), commit));
            }
            self.consolidated_commit_files.push(path);
        }
        Ok(consolidated)
    }

    fn load_root(
        &mut self,
        storage: &dyn Storage,
        root_entries: &[DirEntry],
        consolidated: &Consolidated,
    ) -> Result<()> {
        let root = RelPath::root();
        let ok_stems: HashSet<&str> = root_entries
            .iter()
            .filter(|e| e.is_file())
            .filter_map(|e| e.name.strip_suffix(Extension::Ok.suffix()))
            .collect();
        let mut candidates = Vec::new();
        for entry in root_entries {
            if entry.is_dir() {
                if ARRAY_DIR_NAMES.contains(&entry.name.as_str()) || entry.name.contains('.') {
                    continue;
                }
                // Folders that are not timestamped are the user's own.
                if let Ok(name) = TimestampedName::parse(&entry.name) {
                    candidates.push(RootCandidate {
                        path: root.join(&entry.name)?,
                        name,
                    });
                }
                continue;
            }
            if entry.name.ends_with(Extension::Vac.suffix()) {
                let name = parse_listed(storage, &root, &entry.name)?;
                self.add_fragment_vacuum_file(storage, root.join(&entry.name)?, name)?;
            } else if entry.name.ends_with(Extension::Meta.suffix()) {
                self.fragment_meta.push(root.join(&entry.name)?);
            }
        }
        for candidate in candidates {
            let ok_path = root.join(&format!(
                "{}{}",
                candidate.name.as_str(),
                Extension::Ok.suffix()
            ))?;
            let commit = if ok_stems.contains(candidate.name.as_str()) {
                Some(CommitSource::OkFile)
            } else if let Some(con) = consolidated.sources.get(&ok_path) {
                Some(CommitSource::Consolidated(con.clone()))
            } else if !crate::format::generated::ok_file_commits(candidate.name.format_version()) {
                let metadata = candidate.path.join(FRAGMENT_METADATA_FILE)?;
                (storage.kind(&metadata)? == Some(crate::storage::EntryKind::File))
                    .then_some(CommitSource::FragmentMetadata)
            } else {
                None
            };
            match commit {
                Some(commit) => self.committed.push(Fragment {
                    path: candidate.path,
                    name: candidate.name,
                    commit,
                }),
                None => self.uncommitted.push(UncommittedEntry {
                    path: candidate.path,
                    name: candidate.name,
                }),
            }
        }
        Ok(())
    }

    fn add_fragment_vacuum_file(
        &mut self,
        storage: &dyn Storage,
        path: RelPath,
        name: TimestampedName,
    ) -> Result<()> {
        let entries = if name.overlaps(self.timestamp_start, self.timestamp_end) {
            let data = storage.read(&path)?;
            Some(
                text_files::parse_vacuum_file(&data, &[FRAGMENTS_DIR])
                    .map_err(in_file(storage, &path))?,
            )
        } else {
            None
        };
        self.fragment_vacuum_files.push(VacuumFile {
            path,
            name,
            entries,
        });
        Ok(())
    }

    fn load_commits_dir(
        &mut self,
        storage: &dyn Storage,
        commits_dir: &RelPath,
        entries: &[DirEntry],
        consolidated: &Consolidated,
    ) -> Result<()> {
        let fragments_dir = RelPath::root().join(FRAGMENTS_DIR)?;
        let (start, end) = (self.timestamp_start, self.timestamp_end);
        // Fragments committed through .con files, in the order listed.
        for (con, commit) in &consolidated.entries {
            self.commit_versions.push(commit.name.format_version());
            match commit.name.extension() {
                Some(Extension::Wrt) => {
                    let name = commit.name.with_extension(None);
                    self.committed.push(Fragment {
                        path: fragments_dir.join(name.as_str())?,
                        name,
                        commit: CommitSource::Consolidated(con.clone()),
                    });
                }
                Some(Extension::Del) => {
                    if let Some(EmbeddedTile { offset, size }) = commit.embedded {
                        if commit.name.contained_in(start, end) {
                            self.conditions.push(ConditionCommit {
                                kind: ConditionKind::Delete,
                                name: commit.name.clone(),
                                file: con.clone(),
                                offset,
                                size,
                            });
                        }
                    }
                }
                // TileDB embeds no tile for updates in a .con, and the
                // listing masks the standalone file: it applies no such
                // update. Root .ok lines were used by load_root.
                _ => {}
            }
        }
        for entry in entries.iter().filter(|e| e.is_file()) {
            let ext = match entry.name.rsplit_once('.') {
                Some((_, suffix)) => Extension::from_suffix(suffix),
                None => None,
            };
            let Some(ext @ (Extension::Wrt | Extension::Vac | Extension::Del | Extension::Upd)) =
                ext
            else {
                continue;
            };
            let path = commits_dir.join(&entry.name)?;
            let name = parse_listed(storage, commits_dir, &entry.name)?;
            self.commit_versions.push(name.format_version());
            let in_con = consolidated.sources.contains_key(&path);
            match ext {
                Extension::Wrt if !in_con => {
                    let stem = name.with_extension(None);
                    self.committed.push(Fragment {
                        path: fragments_dir.join(stem.as_str())?,
                        name: stem,
                        commit: CommitSource::WrtFile,
                    });
                }
                Extension::Vac => self.add_fragment_vacuum_file(storage, path, name)?,
                Extension::Del | Extension::Upd if !in_con && name.contained_in(start, end) => {
                    self.conditions.push(ConditionCommit {
                        kind: if ext == Extension::Del {
                            ConditionKind::Delete
                        } else {
                            ConditionKind::Update
                        },
                        name,
                        size: match entry.size {
                            Some(size) => size,
                            None => storage.size(&path)?,
                        },
                        file: path,
                        offset: 0,
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Folders in `__fragments/` with no commit: not part of the array, but
    /// worth reporting (an interrupted write, or a writer that committed in a
    /// way no version recognizes).
    fn load_uncommitted_v12(
        &mut self,
        storage: &dyn Storage,
        fragments_dir: &RelPath,
    ) -> Result<()> {
        let committed: HashSet<&str> = self.committed.iter().map(|f| f.path.as_str()).collect();
        let mut found = Vec::new();
        for entry in list_checked(storage, fragments_dir, ARRAY_DIR_NAMES)?.unwrap_or_default() {
            let Ok(name) = TimestampedName::parse(&entry.name) else {
                continue;
            };
            let path = fragments_dir.join(&entry.name)?;
            if !committed.contains(path.as_str()) {
                found.push(UncommittedEntry { path, name });
            }
        }
        self.uncommitted.extend(found);
        Ok(())
    }

    /// The array folder, as storage names it.
    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    /// The open range, inclusive, in milliseconds.
    pub fn timestamp_range(&self) -> (u64, u64) {
        (self.timestamp_start, self.timestamp_end)
    }

    /// Every schema file, oldest name first; `__array_schema.tdb` first of all.
    pub fn schemas(&self) -> &[SchemaFile] {
        &self.schemas
    }

    /// The schema a read at this range uses: the last in name order whose end
    /// timestamp is at most the open end; failing that, the first schema.
    pub fn latest_schema_for_read(&self) -> &SchemaFile {
        let index = self
            .schemas
            .iter()
            .rposition(|s| {
                s.name
                    .as_ref()
                    .is_some_and(|n| n.timestamp_end() <= self.timestamp_end)
            })
            .unwrap_or(0);
        // `open` refuses a folder without a schema, so the index exists.
        &self.schemas[index]
    }

    /// The schema other modes (writing, consolidating) use: the last one.
    pub fn latest_schema(&self) -> &SchemaFile {
        &self.schemas[self.schemas.len() - 1]
    }

    /// Files in `__schema/__enumerations/`.
    pub fn enumeration_files(&self) -> &[RelPath] {
        &self.enumerations
    }

    /// Every committed fragment, whatever its timestamps and vacuum state.
    pub fn committed_fragments(&self) -> &[Fragment] {
        &self.committed
    }

    /// Timestamped folders (root or `__fragments/`) with no commit, and any
    /// other timestamped entry of `__fragments/` (not looked for by
    /// [`ArrayDirectory::open_for_read`]).
    pub fn uncommitted(&self) -> &[UncommittedEntry] {
        &self.uncommitted
    }

    /// The fragment `.vac` files (root and `__commits/`).
    pub fn fragment_vacuum_files(&self) -> &[VacuumFile] {
        &self.fragment_vacuum_files
    }

    /// The fragments a read sees under `rule`, ordered by `t1` (name breaks
    /// ties): committed, admitted by the rule, and not listed in a `.vac` file
    /// that the rule also admits.
    pub fn fragments(&self, rule: TimeTravelRule) -> Vec<Fragment> {
        self.partition(rule).0
    }

    /// Fragments admitted by `rule` but removed by an applicable `.vac` file
    /// (what vacuuming would delete), ordered like [`Self::fragments`].
    pub fn vacuumed_fragments(&self, rule: TimeTravelRule) -> Vec<Fragment> {
        self.partition(rule).1
    }

    fn partition(&self, rule: TimeTravelRule) -> (Vec<Fragment>, Vec<Fragment>) {
        let (start, end) = (self.timestamp_start, self.timestamp_end);
        let removed: HashSet<&RelPath> = self
            .fragment_vacuum_files
            .iter()
            .filter(|vac| rule.admits(&vac.name, start, end))
            .flat_map(|vac| vac.entries.iter().flatten())
            .collect();
        let (mut vacuumed, mut visible): (Vec<Fragment>, Vec<Fragment>) = self
            .committed
            .iter()
            .filter(|f| rule.admits(&f.name, start, end))
            .cloned()
            .partition(|f| removed.contains(&f.path));
        sort_by_time(&mut visible, |f| &f.name);
        sort_by_time(&mut vacuumed, |f| &f.name);
        (visible, vacuumed)
    }

    /// Delete and update commits fully inside the open range, by `t1`.
    pub fn condition_commits(&self) -> &[ConditionCommit] {
        &self.conditions
    }

    /// Consolidated fragment metadata files: root `.meta` files (before v12)
    /// then `__fragment_meta/*.meta`, each in name order. All are used,
    /// whatever their timestamps; for a fragment named in several, the first
    /// wins.
    pub fn fragment_meta_files(&self) -> &[RelPath] {
        &self.fragment_meta
    }

    /// Array metadata files to apply, in time order, with `.vac` applied.
    pub fn metadata(&self) -> &TimestampedSet {
        &self.metadata
    }

    /// Dimension-label array folders in `__labels/`.
    pub fn dimension_labels(&self) -> &[RelPath] {
        &self.dimension_labels
    }

    /// The `.con` files read.
    pub fn consolidated_commit_files(&self) -> &[RelPath] {
        &self.consolidated_commit_files
    }

    /// The `.ign` files read.
    pub fn ignore_files(&self) -> &[RelPath] {
        &self.ignore_files
    }

    /// The highest format version any fragment or commit name states, so a
    /// reader can refuse a newer format before decoding anything.
    pub fn max_named_format_version(&self) -> Option<u32> {
        self.committed
            .iter()
            .map(|f| f.name.format_version())
            .chain(self.uncommitted.iter().map(|u| u.name.format_version()))
            .chain(self.commit_versions.iter().copied())
            .max()
    }
}

/// Non-ignored entries of every `.con` file.
#[derive(Default)]
struct Consolidated {
    /// Commit path → the `.con` that lists it first.
    sources: HashMap<RelPath, RelPath>,
    /// In file order: (`.con` path, entry).
    entries: Vec<(RelPath, text_files::ConsolidatedCommit)>,
}
