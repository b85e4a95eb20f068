//! `tdb check`: validates every file of an array against the format and
//! against each other, and reports each problem with its file, byte offset,
//! field and class.
//!
//! What is checked:
//! - every file and folder name is one the format allows where it sits;
//! - every schema, enumeration, metadata, commit, delete, update, ignore,
//!   vacuum, consolidated-commit and consolidated-fragment-metadata file
//!   parses completely (generic tiles decoded, so their compression and
//!   framing are checked too);
//! - every fragment's metadata parses against the schema its footer names
//!   (so the footer's field arrays have the schema's N entries), the tile
//!   counts match the domain (dense) or `sparse_tile_num` (sparse), the
//!   R-tree leaves match the tile count, every tile lies within its file and
//!   the file sizes in the footer match the files, and every data tile
//!   unfilters (so checksum filters are verified);
//! - the tile metadata of every fragment (format 11 and later): each
//!   tile's min, max, sum and null count recomputed from its cells with the
//!   writer's rules (`write::tile_meta`, byte-identical to TileDB 2.30's)
//!   and compared with the fragment's record — of a dense tile, from the
//!   cells inside the fragment's non-empty domain, which its write covered
//!   (the padding around them is left out, as TileDB leaves it out);
//!   — for a field with a lossy filter, within what the filter explains
//!   (`check/lossy.rs`: TileDB computes the metadata before filtering);
//! - every fragment has a commit and every commit a fragment; what
//!   interrupted writes and vacuums leave and readers skip (uncommitted or
//!   `.ign`-dropped fragments, `.vac` files of gone fragments, `.tmp` files
//!   where TileDB reads on) is a note, not a finding;
//! - the directory as a whole opens ([`ArrayDirectory::open`]).
//!
//! A group folder is checked as a group: its file names, every details file
//! (members' URIs included: a relative member must stay inside the group),
//! its vacuum files and metadata, its contents loaded as a reader loads
//! them, and every member stored inside its folder checked in turn (arrays
//! and groups, to a bounded depth), with findings named by their path from
//! the group.

mod commits;
mod fragments;
mod groups;
mod lossy;
mod metadata;
mod names;
mod report;
mod schemas;
mod tile_metadata;
mod tiles;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use crate::condition::parse_commit;
use crate::directory::group::{resolve_member, MemberLocation, GROUP_DETAILS_DIR, GROUP_FILE};
use crate::directory::text_files;
use crate::directory::ConditionKind;
use crate::directory::{object_type, ArrayDirectory, Extension, ObjectType, TimestampedName};
use crate::filter::{self, FilterContext, FilterPipeline};
use crate::format::generated as g;
use crate::fragment::{parse_footer, FragmentMetadataFile};
use crate::metadata::group_contents::{parse_group_details, GroupContents};
use crate::metadata::parse_metadata_tile;
use crate::read::dense::geometry::{DenseDimension, FragmentTiling, Order, Span};
use crate::read::ReadQuery;
use crate::schema::{ArraySchema, MAX_SUPPORTED_VERSION};
use crate::snapshot::{OpenOptions, Snapshot};
use crate::storage::{DirEntry, EntryKind};
use crate::storage::{LocalStorage, RelPath, Storage, SubStorage};
use crate::tile::generic::read_generic_tile_exact;
use crate::tile::generic::{check_generic_tile_sizes, load_generic_tile_header};
use crate::tile::{parse_chunks, unfilter_tile, unfilter_var_string_tile};
use crate::write::tile_meta;
use crate::{Cause, Error, ErrorClass};

// The folders of an array's root, from spec/directory.toml.
use crate::format::generated::ARRAY_FOLDERS as ROOT_DIRS;
use fragments::*;
use names::*;
pub use names::{leftover_tmp, name_problem};
use report::*;
pub use report::{CheckOptions, Finding, Report, DEFAULT_MAX_TILE_SIZE};
use tile_metadata::*;
use tiles::*;

/// Files that should be one generic tile are read whole up to this size
/// (the common case, one read); larger ones only as far as their tile.
const WHOLE_TILE_FILE: u64 = 1 << 20;

/// The largest file read whole (text files, fragment metadata): the
/// largest generic tile the reader accepts, filtered. A larger one is
/// reported rather than read into memory.
const MAX_WHOLE_FILE: u64 = crate::tile::generic::MAX_GENERIC_TILE_PERSISTED_SIZE;

struct Checker<'a> {
    /// Shared, so that the array can be opened for reading on it as it is.
    storage: &'a Arc<dyn Storage>,
    key: Option<[u8; 32]>,
    max_tile_size: u64,
    report: Report,
    /// Every file: array-relative path → size.
    files: BTreeMap<String, u64>,
    /// Schema file name → schema.
    schemas: BTreeMap<String, crate::schema::ArraySchema>,
    /// Schema files that exist but did not load (already reported).
    broken_schemas: BTreeSet<String>,
    /// How many groups enclose this folder (members are checked in turn).
    depth: usize,
}

/// Checks the array in `root`.
pub fn check_array(root: &Path, options: &CheckOptions) -> Report {
    check_storage(Arc::new(LocalStorage::new(root)), options)
}

/// Checks the array (or group) whose folder `storage` is rooted at.
pub fn check_storage(storage: Arc<dyn Storage>, options: &CheckOptions) -> Report {
    check_at_depth(&storage, options, 0)
}

/// Groups nest members at most this deep before the check stops following
/// them (a member that is a link back to an enclosing folder would
/// otherwise never end).
const MAX_GROUP_DEPTH: usize = 8;

fn check_at_depth(storage: &Arc<dyn Storage>, options: &CheckOptions, depth: usize) -> Report {
    let mut checker = Checker {
        storage,
        key: options.encryption_key,
        max_tile_size: options.max_tile_size.unwrap_or(DEFAULT_MAX_TILE_SIZE),
        report: Report::default(),
        files: BTreeMap::new(),
        schemas: BTreeMap::new(),
        broken_schemas: BTreeSet::new(),
        depth,
    };
    match object_type(storage.as_ref()) {
        Ok(ObjectType::Group) => checker.run_group(options),
        _ => checker.run(),
    }
    checker.report
}

impl Checker<'_> {
    fn find(&mut self, file: &str, offset: u64, field: impl Into<String>, cause: impl Into<Cause>) {
        let cause = cause.into();
        self.report.findings.push(Finding {
            class: ErrorClass::Corrupt,
            file: file.to_string(),
            offset,
            field: field.into(),
            message: cause.to_string(),
            cause: Some(cause),
        });
    }

    fn error(&mut self, file: &str, err: &Error) {
        self.report.findings.push(finding_from(err, file));
    }

    /// The whole file, when at most [`MAX_WHOLE_FILE`] bytes (its size is
    /// looked up first: a larger one is reported, not read; a FIFO or
    /// device is refused by the storage).
    fn read(&mut self, file: &str) -> Option<Vec<u8>> {
        let (path, size) = self.open_file(file)?;
        if size > MAX_WHOLE_FILE {
            self.error(
                file,
                &Error::unsupported(format!(
                    "{size} bytes, more than the {MAX_WHOLE_FILE} this check reads whole; not read"
                )),
            );
            return None;
        }
        match self.storage.read(&path) {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                self.error(file, &e);
                None
            }
        }
    }

    /// The path and size of a file about to be read, counted as checked;
    /// `None` (reported) when it cannot be.
    fn open_file(&mut self, file: &str) -> Option<(RelPath, u64)> {
        let path = match RelPath::parse(file) {
            Ok(p) => p,
            Err(e) => {
                self.error(file, &e);
                return None;
            }
        };
        self.report.files_checked += 1;
        match self.storage.size(&path) {
            Ok(size) => Some((path, size)),
            Err(e) => {
                self.error(file, &e);
                None
            }
        }
    }

    /// A file that should be one generic tile. Small files are read whole,
    /// as the loaders expect; from a larger one only the tile its header
    /// measures is read, and the bytes after it are reported (as
    /// [`read_generic_tile_exact`] reports them) without being read, so a file
    /// grown far past its tile costs no more than the tile.
    fn read_tile_file(&mut self, file: &str) -> Option<Vec<u8>> {
        let (path, size) = self.open_file(file)?;
        let result = if size <= WHOLE_TILE_FILE {
            self.storage.read(&path)
        } else {
            load_generic_tile_header(self.storage.as_ref(), &path, size, 0)
                .and_then(|(header, header_len, _)| {
                    check_generic_tile_sizes(&header, 0, header_len, size)
                })
                .and_then(|end| {
                    if end < size {
                        self.find(
                            file,
                            end,
                            "file",
                            format!("{} byte(s) after the generic tile", size - end),
                        );
                    }
                    self.storage.read_range(&path, 0, end)
                })
        };
        match result {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                self.error(file, &e);
                None
            }
        }
    }

    /// Tile `range` of a data file into `buffer` by a ranged read (the
    /// file is never read whole). A tile far larger than the largest tile
    /// decoded is reported, not read. `false` (reported, the tile counted)
    /// when it cannot be read.
    fn read_tile(
        &mut self,
        file: &str,
        t: usize,
        (start, end): (u64, u64),
        buffer: &mut Vec<u8>,
    ) -> bool {
        let len = end - start;
        // Filters may grow a tile a little (chunk lengths, checksums), never
        // to twice its unfiltered size plus a chunk's worth.
        let bound = self.max_tile_size.saturating_mul(2).saturating_add(1 << 20);
        let result = if len > bound {
            Err(Error::unsupported(format!(
                "tile {t} at byte {start} stores {len} bytes, more than a tile of at most {} \
                 unfiltered bytes can need; not read",
                self.max_tile_size
            )))
        } else {
            RelPath::parse(file)
                .and_then(|path| self.storage.read_range_into(&path, start, len, buffer))
        };
        match result {
            Ok(()) => true,
            Err(e) => {
                self.report.tiles_checked += 1;
                self.error(file, &e);
                false
            }
        }
    }

    fn list(&mut self, dir: &str) -> Vec<DirEntry> {
        let path = if dir.is_empty() {
            RelPath::root()
        } else {
            match RelPath::parse(dir) {
                Ok(p) => p,
                Err(_) => return Vec::new(),
            }
        };
        match self.storage.list(&path) {
            Ok(Some(entries)) => entries,
            Ok(None) => Vec::new(),
            Err(e) => {
                let shown = if dir.is_empty() { "." } else { dir };
                self.error(shown, &e);
                Vec::new()
            }
        }
    }

    fn run(&mut self) {
        if self.storage.list(&RelPath::root()).ok().flatten().is_none() {
            self.find(".", 0, "", "not a folder");
            return;
        }
        self.walk("");
        self.check_names();
        self.check_schemas();
        self.check_commits();
        let directory = ArrayDirectory::open(self.storage.as_ref(), 0, u64::MAX);
        self.check_fragments(directory.as_ref().ok());
        self.check_fragment_meta();
        self.check_metadata();
        if let Err(e) = directory {
            let file = match &e {
                Error::Corrupt { at, .. } => self.relative(&at.file),
                _ => ".".to_string(),
            };
            let finding = finding_from(&e, &file);
            // Report the directory's own verdict only when no file-level
            // finding already says the same thing about that file.
            if !self.report.findings.iter().any(|f| f.file == finding.file) {
                self.report.findings.push(finding);
            }
        }
        self.read_everything();
    }

    /// Reads every cell with the reader, once the files themselves raised
    /// nothing: what the reader refuses then is a finding the file checks
    /// missed (their own findings would only repeat here).
    fn read_everything(&mut self) {
        if !self.report.findings.is_empty() {
            return;
        }
        let options = OpenOptions {
            timestamp_start: 0,
            timestamp_end: u64::MAX,
            key: self.key,
        };
        // The reader shares the storage being checked (a local folder, an
        // object-store prefix or a group member's folder alike).
        let result =
            Snapshot::open_shared(Arc::clone(self.storage), options).and_then(|snapshot| {
                snapshot.metadata()?;
                crate::read::read(&snapshot, &ReadQuery::default())
            });
        match result {
            Ok(result) => self.report.cells_read = result.cell_count() as u64,
            // A dense read too large to hold is not a fault of the array.
            Err(Error::Usage(_)) => {}
            Err(e) => {
                let file = match &e {
                    Error::Corrupt { at, .. } => self.relative(&at.file),
                    _ => ".".to_string(),
                };
                self.error(&file, &e.within("full read"));
            }
        }
    }

    fn relative(&self, path: &Path) -> String {
        path.strip_prefix(self.storage.describe(&RelPath::root()))
            .map(|p| p.to_string_lossy().into_owned())
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| ".".to_string())
    }

    fn walk(&mut self, dir: &str) {
        for entry in self.list(dir) {
            let path = if dir.is_empty() {
                entry.name.clone()
            } else {
                format!("{dir}/{}", entry.name)
            };
            if entry.is_dir() {
                self.walk(&path);
            } else {
                // `list` looks every size up.
                self.files.insert(path, entry.size.unwrap_or(0));
            }
        }
    }

    fn files_under(&self, dir: &str) -> Vec<(String, u64)> {
        let prefix = format!("{dir}/");
        self.files
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .map(|(p, s)| (p.clone(), *s))
            .collect()
    }
}
