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

pub mod load;
mod lossy;
pub mod targets;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::directory::group::{resolve_member, MemberLocation, GROUP_DETAILS_DIR, GROUP_FILE};
use crate::directory::text_files;
use crate::directory::{object_type, ArrayDirectory, Extension, ObjectType, TimestampedName};
use crate::filter::{self, FilterContext, FilterPipeline};
use crate::format::generated as g;
use crate::metadata::group_contents::GroupContents;
use crate::read::dense::geometry::{DenseDimension, FragmentTiling, Order, Span};
use crate::read::ReadQuery;
use crate::snapshot::{OpenOptions, Snapshot};
use crate::storage::{DirEntry, EntryKind};
use crate::storage::{LocalStorage, RelPath, Storage};
use crate::tile::generic::{check_generic_tile_sizes, load_generic_tile_header};
use crate::tile::{parse_chunks, unfilter_tile, unfilter_var_string_tile};
use crate::write::tile_meta;
use crate::{Error, ErrorClass};

/// One problem found in an array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub class: ErrorClass,
    /// The file, relative to the array folder (`.` for the folder itself).
    pub file: String,
    /// Byte offset within the file (0 when the problem is the whole file).
    pub offset: u64,
    /// The structure and field, e.g. `FragmentFooter.file_sizes[2]`.
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}: byte {}: ",
            self.class.name(),
            self.file,
            self.offset
        )?;
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

/// What `check_array` found, and how much it looked at.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// Things worth knowing that are not problems: readers ignore them and
    /// the array is still clean (an uncommitted fragment left by an
    /// interrupted write, which vacuuming or a later write may remove).
    pub notes: Vec<Finding>,
    pub files_checked: usize,
    pub tiles_checked: usize,
    /// Tiles whose recorded min, max, sum and null count were recomputed
    /// from their cells (sparse fragments of format 11 and later).
    pub tile_metadata_checked: usize,
    /// Cells the full read returned (0 when it did not run).
    pub cells_read: u64,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

/// Data tiles that unfilter to more than this are reported (class
/// unsupported) rather than decoded: a forged chunk length must not make the
/// check allocate without bound.
pub const DEFAULT_MAX_TILE_SIZE: u64 = 1 << 30;

/// Files that should be one generic tile are read whole up to this size
/// (the common case, one read); larger ones only as far as their tile.
const WHOLE_TILE_FILE: u64 = 1 << 20;

/// The largest file read whole (text files, fragment metadata): the
/// largest generic tile the reader accepts, filtered. A larger one is
/// reported rather than read into memory.
const MAX_WHOLE_FILE: u64 = crate::tile::generic::MAX_GENERIC_TILE_PERSISTED_SIZE;

/// Options of a check.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// The AES-256-GCM key of an encrypted array.
    pub encryption_key: Option<[u8; 32]>,
    /// The largest unfiltered data tile decoded (default
    /// [`DEFAULT_MAX_TILE_SIZE`]).
    pub max_tile_size: Option<u64>,
}

struct Checker<'a> {
    storage: &'a dyn Storage,
    key: Option<[u8; 32]>,
    max_tile_size: u64,
    report: Report,
    /// Every file: array-relative path → size.
    files: BTreeMap<String, u64>,
    /// Schema file name → schema.
    schemas: BTreeMap<String, g::ArraySchema>,
    /// Schema files that exist but did not load (already reported).
    broken_schemas: BTreeSet<String>,
    /// How many groups enclose this folder (members are checked in turn).
    depth: usize,
}

fn finding_from(err: &Error, file: &str) -> Finding {
    match err {
        Error::Corrupt { at, reason } => Finding {
            class: ErrorClass::Corrupt,
            file: file.to_string(),
            offset: at.offset,
            field: at.field.clone(),
            message: reason.clone(),
        },
        Error::Unsupported { what, .. } => Finding {
            class: ErrorClass::Unsupported,
            file: file.to_string(),
            offset: 0,
            field: String::new(),
            message: what.clone(),
        },
        Error::Io { message, .. } => Finding {
            class: ErrorClass::Io,
            file: file.to_string(),
            offset: 0,
            field: String::new(),
            message: message.clone(),
        },
        Error::Usage(message) => Finding {
            class: ErrorClass::Usage,
            file: file.to_string(),
            offset: 0,
            field: String::new(),
            message: message.clone(),
        },
        #[allow(unreachable_patterns)]
        other => Finding {
            class: other.class(),
            file: file.to_string(),
            offset: 0,
            field: String::new(),
            message: other.to_string(),
        },
    }
}

/// Checks the array in `root`.
pub fn check_array(root: &Path, options: &CheckOptions) -> Report {
    check_storage(&LocalStorage::new(root), options)
}

/// Checks the array (or group) whose folder `storage` is rooted at.
pub fn check_storage(storage: &dyn Storage, options: &CheckOptions) -> Report {
    check_at_depth(storage, options, 0)
}

/// Groups nest members at most this deep before the check stops following
/// them (a member that is a link back to an enclosing folder would
/// otherwise never end).
const MAX_GROUP_DEPTH: usize = 8;

fn check_at_depth(storage: &dyn Storage, options: &CheckOptions, depth: usize) -> Report {
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
    match object_type(storage) {
        Ok(ObjectType::Group) => checker.run_group(options),
        _ => checker.run(),
    }
    checker.report
}

const ROOT_DIRS: &[&str] = &[
    "__schema",
    "__fragments",
    "__commits",
    "__fragment_meta",
    "__meta",
    "__labels",
];

impl Checker<'_> {
    fn find(
        &mut self,
        file: &str,
        offset: u64,
        field: impl Into<String>,
        message: impl Into<String>,
    ) {
        self.report.findings.push(Finding {
            class: ErrorClass::Corrupt,
            file: file.to_string(),
            offset,
            field: field.into(),
            message: message.into(),
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
    /// [`load::single_tile`] reports them) without being read, so a file
    /// grown far past its tile costs no more than the tile.
    fn read_tile_file(&mut self, file: &str) -> Option<Vec<u8>> {
        let (path, size) = self.open_file(file)?;
        let result = if size <= WHOLE_TILE_FILE {
            self.storage.read(&path)
        } else {
            load_generic_tile_header(self.storage, &path, size, 0)
                .and_then(|(header, header_len, _)| {
                    check_generic_tile_sizes(&header, 0, header_len, size, "file")
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
        let directory = ArrayDirectory::open(self.storage, 0, u64::MAX);
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

    fn run_group(&mut self, options: &CheckOptions) {
        // The group's own files; other folders in the root are members.
        let root_entries = self.list("");
        for entry in &root_entries {
            // Writes leave their temporaries in the group's folder, where TileDB ignores
            // unknown files (`storage::LocalStorage::write`).
            if entry.is_file() && is_tmp(&entry.name) {
                self.leftover_tmp_note(entry.name.clone());
                continue;
            }
            let known = match entry.name.as_str() {
                GROUP_FILE => entry.is_file(),
                GROUP_DETAILS_DIR | crate::directory::METADATA_DIR => entry.is_dir(),
                _ => entry.is_dir(),
            };
            if !known {
                self.find(&entry.name, 0, "file name", "not a file of a group");
            }
        }
        self.walk(GROUP_DETAILS_DIR);
        self.walk(crate::directory::METADATA_DIR);
        for (path, _) in self.files_under(GROUP_DETAILS_DIR) {
            let name = path.rsplit('/').next().unwrap_or_default();
            if is_tmp(name) {
                // TileDB 2.30 loads every file of `__group/` as group details and cannot
                // open the group beside one (tried with tiledb-py).
                self.find(
                    &path,
                    0,
                    "file name",
                    "a temporary file left by an interrupted write, where TileDB 2.30 loads \
                     every file as group details: TileDB cannot open the group until it is \
                     removed",
                );
                continue;
            }
            let vacuum = match TimestampedName::parse(name) {
                Ok(n) if n.extension() == Some(Extension::Vac) => true,
                Ok(n) if n.extension().is_none() => false,
                Ok(_) => {
                    self.find(&path, 0, "file name", "not a group details file");
                    continue;
                }
                Err(e) => {
                    self.find(&path, 0, "file name", e.to_string());
                    continue;
                }
            };
            let bytes = if vacuum {
                self.read(&path)
            } else {
                self.read_tile_file(&path)
            };
            let Some(bytes) = bytes else {
                continue;
            };
            let result = if vacuum {
                text_files::parse_vacuum_file(&bytes, &[GROUP_DETAILS_DIR]).map(drop)
            } else {
                load::group_details(&bytes, self.key).map(drop)
            };
            if let Err(e) = result {
                self.error(&path, &e);
            }
        }
        self.check_metadata();
        if !self.report.findings.is_empty() {
            return;
        }
        // The contents as a reader loads them, then every member inside.
        let contents = match GroupContents::load(self.storage, 0, u64::MAX, self.key.as_ref()) {
            Ok(contents) => contents,
            Err(e) => {
                let file = match &e {
                    Error::Corrupt { at, .. } => self.relative(&at.file),
                    _ => ".".to_string(),
                };
                self.error(&file, &e);
                return;
            }
        };
        for member in &contents.members {
            let inside = match resolve_member(&member.uri, member.relative) {
                Ok(MemberLocation::Inside(path)) => path,
                Ok(MemberLocation::External(uri)) => {
                    self.report.notes.push(Finding {
                        class: ErrorClass::Usage,
                        file: ".".into(),
                        offset: 0,
                        field: format!("member {:?}", member.name),
                        message: format!("not checked: {uri} is outside the group"),
                    });
                    continue;
                }
                Err(e) => {
                    self.error(".", &e);
                    continue;
                }
            };
            match self.storage.kind(&inside) {
                Ok(Some(EntryKind::Dir)) => {}
                Ok(_) => {
                    self.find(
                        ".",
                        0,
                        format!("member {:?}", member.name),
                        format!("{inside} is not a folder in the group"),
                    );
                    continue;
                }
                Err(e) => {
                    self.error(inside.as_str(), &e);
                    continue;
                }
            }
            if self.depth + 1 >= MAX_GROUP_DEPTH {
                self.find(
                    inside.as_str(),
                    0,
                    format!("member {:?}", member.name),
                    format!("groups nest deeper than {MAX_GROUP_DEPTH}"),
                );
                continue;
            }
            let sub = LocalStorage::new(self.storage.describe(&inside));
            let report = check_at_depth(&sub, options, self.depth + 1);
            let within = |mut f: Finding| {
                f.file = if f.file == "." {
                    inside.as_str().to_string()
                } else {
                    format!("{inside}/{}", f.file)
                };
                f
            };
            self.report
                .findings
                .extend(report.findings.into_iter().map(within));
            self.report
                .notes
                .extend(report.notes.into_iter().map(within));
            self.report.files_checked += report.files_checked;
            self.report.tiles_checked += report.tiles_checked;
            self.report.tile_metadata_checked += report.tile_metadata_checked;
            self.report.cells_read += report.cells_read;
        }
    }

    /// Reads every cell with the reader, once the files themselves raised
    /// nothing: what the reader refuses then is a finding the file checks
    /// missed (their own findings would only repeat here).
    fn read_everything(&mut self) {
        if !self.report.findings.is_empty() {
            return;
        }
        let root = self.storage.describe(&RelPath::root());
        let options = OpenOptions {
            timestamp_start: 0,
            timestamp_end: u64::MAX,
            key: self.key,
        };
        let result = Snapshot::open_path(&root, options).and_then(|snapshot| {
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

    /// Every name is one the format allows where it sits.
    /// A temporary file that readers (ours and TileDB) ignore.
    fn leftover_tmp_note(&mut self, path: String) {
        self.report.notes.push(Finding {
            class: ErrorClass::Corrupt,
            file: path,
            offset: 0,
            field: "file name".into(),
            message: "a temporary file left by an interrupted write: readers (ours and TileDB) \
                      ignore it"
                .into(),
        });
    }

    fn check_names(&mut self) {
        let paths: Vec<String> = self.files.keys().cloned().collect();
        for path in paths {
            match leftover_tmp(&path) {
                Some(Ok(())) => self.leftover_tmp_note(path),
                Some(Err(problem)) => self.find(&path, 0, "file name", problem),
                None => {
                    if let Some(problem) = name_problem(&path) {
                        self.find(&path, 0, "file name", problem);
                    }
                }
            }
        }
    }

    fn check_schemas(&mut self) {
        let mut schema_files: Vec<(String, String)> = Vec::new();
        for (path, _) in self.files_under("__schema") {
            let rest = &path["__schema/".len()..];
            if is_tmp(&path) {
                continue; // judged by check_names
            }
            if rest.starts_with("__enumerations/") {
                if let Some(bytes) = self.read_tile_file(&path) {
                    if let Err(e) = load::enumeration(&bytes, self.key) {
                        self.error(&path, &e);
                    }
                }
            } else if !rest.contains('/') {
                schema_files.push((path.clone(), rest.to_string()));
            }
        }
        if self.files.contains_key("__array_schema.tdb") {
            schema_files.push(("__array_schema.tdb".into(), String::new()));
        }
        if schema_files.is_empty() {
            self.find("__schema", 0, "", "the array has no schema");
        }
        for (path, name) in schema_files {
            let Some(bytes) = self.read_tile_file(&path) else {
                continue;
            };
            if name.is_empty() && crate::schema::legacy13::is_v13_generic_tile(&bytes) {
                // Written by TileDB 1.3, before format versions: the
                // reader's loader knows that layout.
                let loaded = RelPath::parse(&path).and_then(|rel| {
                    crate::schema::ArraySchema::load(self.storage, &rel, self.key.as_ref())
                });
                match loaded {
                    Ok(schema) => {
                        self.schemas.insert(name, schema.stored);
                    }
                    Err(e) => {
                        self.error(&path, &e);
                        self.broken_schemas.insert(name);
                    }
                }
                continue;
            }
            match load::schema(&bytes, self.key) {
                Ok(schema) => {
                    for (i, reference) in schema.enumerations.iter().flatten().enumerate() {
                        let file = format!(
                            "__schema/__enumerations/{}",
                            String::from_utf8_lossy(&reference.path)
                        );
                        if !self.files.contains_key(&file) {
                            self.find(
                                &path,
                                0,
                                format!("ArraySchema.enumerations[{i}].path"),
                                format!("names {file}, which is missing"),
                            );
                        }
                    }
                    self.schemas.insert(name, schema);
                }
                Err(e) => {
                    self.error(&path, &e);
                    self.broken_schemas.insert(name);
                }
            }
        }
    }

    /// Names of the fragments that vacuum files say were consolidated away.
    fn vacuumed(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for (path, _) in self.files.iter() {
            if !path.ends_with(".vac") {
                continue;
            }
            let Ok(bytes) = self.storage.read(&RelPath::parse(path).unwrap_or_default()) else {
                continue;
            };
            if let Ok(lines) = text_files::parse_vacuum_file(&bytes, &["__fragments", "__meta"]) {
                for line in lines {
                    if let Some(name) = line.file_name() {
                        out.insert(name.to_string());
                    }
                }
            }
        }
        out
    }

    fn check_commits(&mut self) {
        let fragments: BTreeSet<String> = self.fragment_dirs().into_iter().collect();
        let vacuumed = self.vacuumed();
        for (path, _) in self.files_under("__commits") {
            let Some(file) = path.rsplit('/').next() else {
                continue;
            };
            let Ok(name) = TimestampedName::parse(file) else {
                continue; // reported by check_names
            };
            let bytes = if matches!(name.extension(), Some(Extension::Del | Extension::Upd)) {
                self.read_tile_file(&path)
            } else {
                self.read(&path)
            };
            let Some(bytes) = bytes else {
                continue;
            };
            let result: crate::Result<()> = match name.extension() {
                Some(Extension::Wrt) => {
                    if !bytes.is_empty() {
                        self.find(&path, 0, "file", "a write commit file is empty in TileDB");
                    }
                    let fragment = name.stem().to_string();
                    // A fragment folder that could not be listed (a link
                    // leading outside the array, say) has its own finding.
                    let dir = format!("__fragments/{fragment}");
                    let unlisted = self.report.findings.iter().any(|f| f.file == dir);
                    if !fragments.contains(&fragment) && !vacuumed.contains(&fragment) && !unlisted
                    {
                        self.find(
                            &path,
                            0,
                            "commit",
                            format!("commits fragment {fragment}, which is not in __fragments"),
                        );
                    }
                    Ok(())
                }
                Some(Extension::Del) => load::delete_commit(&bytes, self.key).map(|_| ()),
                Some(Extension::Upd) => load::update_commit(&bytes, self.key).map(|_| ()),
                Some(Extension::Ign) => text_files::parse_ignore_file(&bytes).map(|_| ()),
                Some(Extension::Vac) => text_files::parse_vacuum_file(&bytes, &["__fragments"])
                    .map(|lines| {
                        self.vacuumed_gone_note(&path, &lines);
                    }),
                Some(Extension::Con) => self.consolidated_commits(&bytes),
                _ => Ok(()),
            };
            if let Err(e) = result {
                self.error(&path, &e);
            }
        }
    }

    fn consolidated_commits(&mut self, bytes: &[u8]) -> crate::Result<()> {
        for entry in text_files::parse_consolidated_commits(bytes)? {
            if let Some(tile) = entry.embedded {
                let start = usize::try_from(tile.offset).unwrap_or(usize::MAX);
                let end = start.saturating_add(usize::try_from(tile.size).unwrap_or(usize::MAX));
                let embedded = bytes.get(start..end).ok_or_else(|| {
                    Error::corrupt(tile.offset, "embedded delete", "runs past the end")
                })?;
                load::delete_commit(embedded, self.key).map_err(|e| {
                    e.within(format!("delete {}", entry.path))
                        .at_base(tile.offset)
                })?;
            }
        }
        Ok(())
    }

    /// Fragment folder names under `__fragments` (from the files in them).
    fn fragment_dirs(&self) -> Vec<String> {
        let mut out = BTreeSet::new();
        for (path, _) in self.files_under("__fragments") {
            if let Some(dir) = path["__fragments/".len()..].split('/').next() {
                if path["__fragments/".len()..].contains('/') {
                    out.insert(dir.to_string());
                }
            }
        }
        out.into_iter().collect()
    }

    /// A vacuum removes the fragments a `.vac` file lists, then the file
    /// (`vacuum::vacuum_fragments`, as TileDB's vacuum does): one stopped
    /// in between leaves a `.vac` file listing fragments that are gone.
    /// Readers only drop listed fragments that exist, so it is a note.
    fn vacuumed_gone_note(&mut self, path: &str, lines: &[RelPath]) {
        let gone = lines
            .iter()
            .filter(|line| {
                let prefix = format!("{line}/");
                !self
                    .files
                    .range(prefix.clone()..)
                    .next()
                    .is_some_and(|(p, _)| p.starts_with(&prefix))
            })
            .count();
        if gone == 0 {
            return;
        }
        self.report.notes.push(Finding {
            class: ErrorClass::Corrupt,
            file: path.to_string(),
            offset: 0,
            field: "vacuum".into(),
            message: format!(
                "{gone} of the {} fragment(s) it lists are gone: a vacuum stopped before \
                 removing this file (readers ignore what it lists that no longer exists)",
                lines.len()
            ),
        });
    }

    /// Commit paths (`__commits/<name>.wrt`) named by an `.ign` file, with
    /// that file: readers drop them from every `.con` file.
    fn ignored_commits(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (path, _) in self.files_under("__commits") {
            if !path.ends_with(".ign") {
                continue;
            }
            let bytes = RelPath::parse(&path)
                .ok()
                .and_then(|p| self.storage.read(&p).ok())
                .unwrap_or_default();
            for line in text_files::parse_ignore_file(&bytes).unwrap_or_default() {
                out.entry(line.as_str().to_string())
                    .or_insert_with(|| path.clone());
            }
        }
        out
    }

    /// Fragments committed by a `.wrt` file or a `.con` line that no
    /// `.ign` file names, as [`ArrayDirectory::open`] finds them.
    fn committed(&self) -> BTreeSet<String> {
        let ignored = self.ignored_commits();
        let mut out = BTreeSet::new();
        for (path, _) in self.files_under("__commits") {
            let Some(file) = path.rsplit('/').next() else {
                continue;
            };
            if let Ok(name) = TimestampedName::parse(file) {
                match name.extension() {
                    Some(Extension::Wrt) => {
                        out.insert(name.stem().to_string());
                    }
                    Some(Extension::Con) => {
                        let bytes = RelPath::parse(&path)
                            .ok()
                            .and_then(|p| self.storage.read(&p).ok())
                            .unwrap_or_default();
                        for entry in
                            text_files::parse_consolidated_commits(&bytes).unwrap_or_default()
                        {
                            if entry.name.extension() == Some(Extension::Wrt)
                                && !ignored.contains_key(entry.path.as_str())
                            {
                                out.insert(entry.name.stem().to_string());
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }

    fn check_fragments(&mut self, directory: Option<&ArrayDirectory>) {
        let committed = self.committed();
        let ignored = self.ignored_commits();
        for fragment in self.fragment_dirs() {
            let dir = format!("__fragments/{fragment}");
            let Ok(name) = TimestampedName::parse(&fragment) else {
                continue; // reported by check_names
            };
            if !committed.contains(name.stem()) {
                // Not corruption: a write that stopped before its commit
                // marker leaves exactly this, and so does a vacuum stopped
                // after removing the commit (its marker, or its `.con`
                // line through an `.ign` file) and before or while
                // removing the folder (some files may be gone); readers
                // skip it.
                let why = match ignored.get(&format!("__commits/{fragment}.wrt")) {
                    Some(ign) => format!(
                        "a .con line commits it but {ign} tells readers to ignore that line: \
                         a vacuum is removing it, or stopped while doing so"
                    ),
                    None => format!("no __commits/{fragment}.wrt and no .con line commits it"),
                };
                self.uncommitted_note(&dir, &why);
                continue;
            }
            self.check_one_fragment(&dir, &name);
        }
        if let Some(directory) = directory {
            self.check_legacy_fragments(directory);
        }
    }

    /// A fragment without a commit marker: not corruption (a write that
    /// stopped before committing leaves exactly this, and readers skip it).
    fn uncommitted_note(&mut self, dir: &str, why: &str) {
        self.report.notes.push(Finding {
            class: ErrorClass::Corrupt,
            file: dir.to_string(),
            offset: 0,
            field: "commit".into(),
            message: format!("uncommitted fragment ({why}): readers ignore it"),
        });
    }

    /// Fragments of the hierarchies before format 12 (fragment folders in
    /// the array's root, committed by a `.ok` file or, before format 5, by
    /// their metadata file), found as the reader finds them.
    fn check_legacy_fragments(&mut self, directory: &ArrayDirectory) {
        for fragment in directory.committed_fragments() {
            let dir = fragment.path.as_str().to_string();
            if dir.starts_with("__fragments/") {
                continue; // checked above
            }
            let version = fragment
                .name
                .version()
                .unwrap_or_else(|| fragment.format_version());
            if version < 10 {
                // The check's footer loader starts at format 10 (the first
                // with a trailing footer length); the full read still
                // decodes every tile of these.
                self.report.notes.push(Finding {
                    class: ErrorClass::Unsupported,
                    file: dir.clone(),
                    offset: 0,
                    field: "__fragment_metadata.tdb".into(),
                    message: format!(
                        "format {version} fragment: its files are checked by the full read only, not one by one"
                    ),
                });
                continue;
            }
            self.check_one_fragment(&dir, &fragment.name);
        }
        for entry in directory.uncommitted() {
            let dir = entry.path.as_str().to_string();
            if dir.starts_with("__fragments/") {
                continue; // noted above
            }
            self.uncommitted_note(&dir, &format!("no {dir}.ok commits it"));
        }
    }

    /// One committed fragment: its metadata file against the schema it
    /// names, then its data files against the metadata.
    fn check_one_fragment(&mut self, dir: &str, name: &TimestampedName) {
        let meta = format!("{dir}/__fragment_metadata.tdb");
        if !self.files.contains_key(&meta) {
            self.find(
                dir,
                0,
                "__fragment_metadata.tdb",
                "the fragment has no metadata file",
            );
            return;
        }
        let Some(bytes) = self.read(&meta) else {
            return;
        };
        if let Some(version) = name.version() {
            if version > load::MAX_FORMAT_VERSION {
                self.error(
                    &meta,
                    &Error::unsupported(format!(
                        "fragment format version {version} is newer than {}",
                        load::MAX_FORMAT_VERSION
                    )),
                );
                return;
            }
        }
        let head = match load::footer_head(&bytes) {
            Ok((head, _)) => head,
            Err(e) => {
                self.error(&meta, &e);
                return;
            }
        };
        let schema_name = head
            .schema_name
            .as_deref()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
        let Some(schema) = self.schemas.get(&schema_name).cloned() else {
            if self.broken_schemas.contains(&schema_name) {
                return; // the schema's own finding says why
            }
            self.find(
                &meta,
                0,
                "FragmentFooter.schema_name",
                format!("names schema {schema_name:?}, which is missing or unreadable"),
            );
            return;
        };
        match load::fragment_metadata(&bytes, &schema, self.key) {
            Ok(metadata) => self.check_fragment_data(dir, &meta, &schema, &metadata),
            Err(e) => self.error(&meta, &e),
        }
    }

    fn check_fragment_data(
        &mut self,
        dir: &str,
        meta: &str,
        schema: &g::ArraySchema,
        fm: &load::FragmentMetadata,
    ) {
        let footer = &fm.footer;
        let version = footer.version;
        let attributes = schema.attributes.len();
        let sparse = schema.array_type == g::ArrayType::Sparse;
        if footer.dense == sparse {
            self.find(
                meta,
                fm.footer_offset,
                "FragmentFooter.dense",
                format!(
                    "the fragment says dense={} but the schema is {}",
                    footer.dense,
                    if sparse { "sparse" } else { "dense" }
                ),
            );
            return;
        }
        // How many tiles, and how many cells each holds.
        let (tile_num, cells_per_tile) = if sparse {
            (footer.sparse_tile_num, schema.capacity)
        } else {
            match dense_tiles(schema, footer) {
                Ok(counts) => counts,
                Err(reason) => {
                    self.find(
                        meta,
                        fm.footer_offset,
                        "FragmentFooter.non_empty_domain",
                        reason,
                    );
                    return;
                }
            }
        };
        if sparse {
            let leaves = fm.rtree.levels.last().map_or(0, |l| l.mbrs.len() as u64);
            if leaves != tile_num {
                self.find(
                    meta,
                    footer.rtree_offset,
                    "RTree.levels[last].mbrs",
                    format!("{leaves} leaf MBRs but sparse_tile_num is {tile_num}"),
                );
            }
        } else if !fm.rtree.levels.is_empty() {
            self.find(
                meta,
                footer.rtree_offset,
                "RTree.levels",
                "a dense fragment's R-tree has levels",
            );
        }
        let cells_of = |t: u64| -> u64 {
            if sparse && t + 1 == tile_num && footer.last_tile_cell_num != 0 {
                footer.last_tile_cell_num
            } else {
                cells_per_tile
            }
        };
        let validity_filters = schema
            .validity_filters
            .clone()
            .unwrap_or(g::FilterPipeline {
                max_chunk_size: filter::DEFAULT_MAX_CHUNK_SIZE,
                filters: Vec::new(),
            });
        let mut fields: Vec<Field> = Vec::new();
        for (i, a) in schema.attributes.iter().enumerate() {
            fields.push(Field {
                index: i,
                is_dim: false,
                file: format!("a{i}"),
                datatype: a.datatype,
                cell_val_num: a.cell_val_num,
                nullable: a.nullable,
                filters: a.filters.clone(),
                has_tiles: true,
            });
        }
        for (j, d) in schema.domain.dimensions.iter().enumerate() {
            let filters = match &d.filters {
                Some(f) if !f.filters.is_empty() => f.clone(),
                _ => schema.coords_filters.clone(),
            };
            fields.push(Field {
                index: attributes + 1 + j,
                is_dim: true,
                file: format!("d{j}"),
                datatype: d.datatype,
                cell_val_num: d.cell_val_num,
                nullable: false,
                filters,
                has_tiles: sparse,
            });
        }
        // The special fields that follow the dimensions: cell timestamps,
        // then delete timestamps and delete condition indexes; all UINT64
        // under the coordinate filters.
        let first_special = attributes + 1 + schema.domain.dimensions.len();
        let mut specials = Vec::new();
        if footer.has_timestamps {
            specials.push("t");
        }
        if footer.has_delete_meta {
            specials.extend(["dt", "dci"]);
        }
        for (index, name) in (first_special..).zip(specials) {
            fields.push(Field {
                index,
                is_dim: false,
                file: name.to_string(),
                datatype: g::Datatype::Uint64,
                cell_val_num: 1,
                nullable: false,
                filters: schema.coords_filters.clone(),
                has_tiles: true,
            });
        }
        // Every slot lists tile_num offsets, even those that store no
        // tiles (`__coords`, and the dimensions of a dense fragment), which
        // TileDB fills with zeros.
        let expect_count = |_index: usize| -> u64 { tile_num };
        for (index, list) in fm.tile_offsets.iter().enumerate() {
            let expected = expect_count(index);
            if list.len() as u64 != expected {
                self.find(
                    meta,
                    footer.tile_offsets_offsets.get(index).copied().unwrap_or(0),
                    format!("tile_offsets[{index}]"),
                    format!("{} tile offsets, expected {expected}", list.len()),
                );
            }
        }
        for field in &fields {
            self.check_field(
                dir,
                meta,
                schema,
                fm,
                field,
                version,
                &validity_filters,
                &cells_of,
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn check_field(
        &mut self,
        dir: &str,
        meta: &str,
        schema: &g::ArraySchema,
        fm: &load::FragmentMetadata,
        field: &Field,
        version: u32,
        validity_filters: &g::FilterPipeline,
        cells_of: &dyn Fn(u64) -> u64,
    ) {
        let footer = &fm.footer;
        let limit = self.max_tile_size;
        let i = field.index;
        let var = field.cell_val_num == u32::MAX;
        let Some(offsets) = fm.tile_offsets.get(i) else {
            return;
        };
        if !field.has_tiles {
            return;
        }
        let datatype = match load::runtime_datatype(field.datatype) {
            Ok(t) => t,
            Err(e) => {
                self.error(meta, &e);
                return;
            }
        };
        let pipeline = match self.data_pipeline(&field.filters, "filters") {
            Ok(p) => p,
            Err(e) => {
                self.error(meta, &e);
                return;
            }
        };
        let type_size = field.datatype.size();
        let (data_ctx, cell_size) = if var {
            (FilterContext::new(datatype, type_size, version), None)
        } else {
            let cell = type_size.saturating_mul(field.cell_val_num as u64);
            (FilterContext::new(datatype, cell, version), Some(cell))
        };
        let data_ctx = self.keyed(data_ctx);
        // Tile metadata is recomputed from the cells where the fragment
        // records it (format 11 on): every cell of a sparse tile, the
        // written cells of a dense one (not the padding around them).
        let kinds = tile_meta::kinds(datatype, field.is_dim, var, field.cell_val_num);
        let dense_written = if footer.dense {
            DenseWritten::of(schema, footer)
        } else {
            None
        };
        let mut tile_meta_check =
            (version >= 11 && footer.dense == dense_written.is_some()).then(|| TileMetaCheck {
                meta: meta.to_string(),
                field: i,
                datatype,
                kinds,
                var,
                nullable: field.nullable,
                cell_size: cell_size.unwrap_or(0),
                dense: dense_written,
                lossy: lossy::lossy_of(&pipeline, datatype),
                values_skipped: std::cell::Cell::new(0),
            });
        if let Some(check) = &tile_meta_check {
            self.lossy_note(check, &field.file);
        }

        // Validity first: the tile metadata of the other parts needs it.
        let mut validity_of_tile: Vec<Option<Vec<bool>>> = vec![None; offsets.len()];
        if field.nullable {
            let validity_file = format!("{dir}/{}_validity.tdb", field.file);
            let size = footer
                .file_validity_sizes
                .as_ref()
                .and_then(|s| s.get(i).copied())
                .unwrap_or(0);
            let validity_offsets = fm.tile_validity_offsets.get(i).cloned().unwrap_or_default();
            if validity_offsets.len() != offsets.len() {
                self.find(
                    meta,
                    0,
                    format!("tile_validity_offsets[{i}]"),
                    format!(
                        "{} validity offsets for {} tiles",
                        validity_offsets.len(),
                        offsets.len()
                    ),
                );
                return;
            }
            let pipeline = match self.data_pipeline(validity_filters, "validity_filters") {
                Ok(p) => p,
                Err(e) => {
                    self.error(meta, &e);
                    return;
                }
            };
            let ctx = self.keyed(FilterContext::new(filter::Datatype::Uint8, 1, version));
            if let Some(ranges) = self.tile_ranges(
                meta,
                &validity_file,
                &validity_offsets,
                size,
                &format!("file_validity_sizes[{i}]"),
            ) {
                if self.count_data_file(size) {
                    let mut tile = Vec::new();
                    for (t, range) in ranges.iter().enumerate() {
                        if !self.read_tile(&validity_file, t, *range, &mut tile) {
                            continue;
                        }
                        let result =
                            decode(&tile, &pipeline, &ctx, Some(cells_of(t as u64)), limit);
                        if let (Ok(v), Some(slot)) = (&result, validity_of_tile.get_mut(t)) {
                            *slot = Some(v.iter().map(|&b| b != 0).collect());
                        }
                        self.tile_result(&validity_file, range.0, t, result.map(drop));
                    }
                }
            }
            if validity_of_tile.iter().any(Option::is_none) {
                // A validity tile is missing or broken (already reported):
                // the nulls of the metadata cannot be recounted.
                tile_meta_check = None;
            }
        }

        // The fixed file: data (fixed fields) or offsets (var fields).
        let fixed_file = format!("{dir}/{}.tdb", field.file);
        let fixed_size = footer.file_sizes.get(i).copied().unwrap_or(0);
        let skips = var && pipeline.skips_offsets(datatype, version);
        let Some(fixed_tiles) = self.tile_ranges(
            meta,
            &fixed_file,
            offsets,
            fixed_size,
            &format!("file_sizes[{i}]"),
        ) else {
            return;
        };
        let offsets_pipeline = if var {
            match self.data_pipeline(&schema.offsets_filters, "offsets_filters") {
                Ok(p) => p,
                Err(e) => {
                    self.error(meta, &e);
                    return;
                }
            }
        } else {
            FilterPipeline::default()
        };
        let offsets_ctx = self.keyed(FilterContext::new(filter::Datatype::Uint64, 8, version));
        // Var fields: each tile's cell start offsets, for the var pass.
        let mut starts_of_tile: Vec<Option<Vec<u64>>> = vec![None; offsets.len()];
        if self.count_data_file(fixed_size) {
            let mut tile = Vec::new();
            for (t, range) in fixed_tiles.iter().enumerate() {
                let cells = cells_of(t as u64);
                if !self.read_tile(&fixed_file, t, *range, &mut tile) {
                    continue;
                }
                let tile = &tile[..];
                let result = if var {
                    if skips {
                        Ok(Vec::new())
                    } else {
                        decode(
                            tile,
                            &offsets_pipeline,
                            &offsets_ctx,
                            Some(cells.saturating_mul(8)),
                            limit,
                        )
                    }
                } else {
                    decode(
                        tile,
                        &pipeline,
                        &data_ctx,
                        cell_size.map(|c| c.saturating_mul(cells)),
                        limit,
                    )
                };
                if let Ok(data) = &result {
                    if var {
                        if !skips {
                            starts_of_tile[t] = Some(
                                data.chunks_exact(8)
                                    .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                                    .collect(),
                            );
                        }
                    } else if let (Some(check), Some(size)) = (&tile_meta_check, cell_size) {
                        let cells: Vec<&[u8]> = data.chunks(size.max(1) as usize).collect();
                        let finding = check.compare(fm, t, &cells, validity_of_tile[t].as_deref());
                        self.tile_meta_finding(finding);
                    }
                }
                self.tile_result(&fixed_file, range.0, t, result.map(drop));
            }
        }
        if var {
            let var_file = format!("{dir}/{}_var.tdb", field.file);
            let var_size = footer.file_var_sizes.get(i).copied().unwrap_or(0);
            let var_offsets = fm.tile_var_offsets.get(i).cloned().unwrap_or_default();
            let var_sizes = fm.tile_var_sizes.get(i).cloned().unwrap_or_default();
            if var_offsets.len() != offsets.len() || var_sizes.len() != offsets.len() {
                self.find(
                    meta,
                    footer.tile_var_offsets_offsets.get(i).copied().unwrap_or(0),
                    format!("tile_var_offsets[{i}]"),
                    format!(
                        "{} var offsets and {} var sizes for {} tiles",
                        var_offsets.len(),
                        var_sizes.len(),
                        offsets.len()
                    ),
                );
                return;
            }
            if let Some(ranges) = self.tile_ranges(
                meta,
                &var_file,
                &var_offsets,
                var_size,
                &format!("file_var_sizes[{i}]"),
            ) {
                if self.count_data_file(var_size) {
                    let mut buffer = Vec::new();
                    for (t, range) in ranges.iter().enumerate() {
                        if !self.read_tile(&var_file, t, *range, &mut buffer) {
                            continue;
                        }
                        let tile = &buffer[..];
                        let expected = var_sizes.get(t).copied();
                        let result = if skips {
                            decode_strings(
                                tile,
                                &pipeline,
                                &data_ctx,
                                expected.unwrap_or(0),
                                cells_of(t as u64),
                                limit,
                            )
                        } else {
                            decode(tile, &pipeline, &data_ctx, expected, limit)
                                .map(|data| (data, starts_of_tile[t].take().unwrap_or_default()))
                        };
                        if let (Ok((data, starts)), Some(check)) = (&result, &tile_meta_check) {
                            let cells = var_cells(data, starts);
                            let finding =
                                check.compare(fm, t, &cells, validity_of_tile[t].as_deref());
                            self.tile_meta_finding(finding);
                        }
                        self.tile_result(&var_file, range.0, t, result.map(drop));
                    }
                }
            }
        }
        if let Some(check) = &tile_meta_check {
            self.lossy_skipped_note(check, &field.file);
        }
    }

    /// Says how the tile metadata of a lossy field is compared (see
    /// [`lossy`]): within the quantization step, or not at all.
    fn lossy_note(&mut self, check: &TileMetaCheck, stem: &str) {
        let i = check.field;
        let message = match check.lossy {
            None => return,
            Some(lossy::Lossy::Scale { scale, .. }) => format!(
                "{stem} is filtered by SCALE_FLOAT, whose tiles TileDB stores rounded to steps of {scale} \
                 after it computed their min, max and sum from the unrounded cells: those are \
                 compared within half a step per cell, not exactly"
            ),
            Some(lossy::Lossy::Unchecked(why)) => format!(
                "{stem} is filtered by {why}, whose tiles TileDB stores altered after it computed \
                 their min, max and sum from the original cells: those are not compared \
                 (null counts are)"
            ),
        };
        self.report.notes.push(Finding {
            class: ErrorClass::Unsupported,
            file: check.meta.clone(),
            offset: 0,
            field: format!("tile_mins/tile_maxes/tile_sums[{i}]"),
            message,
        });
    }

    fn lossy_skipped_note(&mut self, check: &TileMetaCheck, stem: &str) {
        let skipped = check.values_skipped.get();
        if skipped == 0 {
            return;
        }
        let Some(lossy::Lossy::Scale { byte_width, .. }) = check.lossy else {
            return;
        };
        self.report.notes.push(Finding {
            class: ErrorClass::Unsupported,
            file: check.meta.clone(),
            offset: 0,
            field: format!("tile_mins/tile_maxes/tile_sums[{}]", check.field),
            message: format!(
                "{skipped} tile(s) of {stem} record a min or max that does not fit SCALE_FLOAT's \
                 {byte_width}-byte integers: TileDB stored those cells out of range, so the \
                 tiles' min, max and sum are not compared"
            ),
        });
    }

    fn tile_meta_finding(&mut self, finding: Option<(String, u64, String, String)>) {
        self.report.tile_metadata_checked += 1;
        if let Some((file, offset, field, reason)) = finding {
            self.find(&file, offset, field, reason);
        }
    }

    /// A data tile pipeline: the schema's, plus the AES-256-GCM filter that
    /// TileDB appends to every pipeline of an encrypted array.
    fn data_pipeline(
        &self,
        stored: &g::FilterPipeline,
        field: &str,
    ) -> crate::Result<FilterPipeline> {
        let mut pipeline = load::runtime_pipeline(stored, field)?;
        if self.key.is_some() {
            pipeline.filters.push(filter::Filter::Aes256Gcm);
        }
        Ok(pipeline)
    }

    fn keyed(&self, ctx: FilterContext) -> FilterContext {
        match self.key {
            Some(key) => ctx.with_key(key),
            None => ctx,
        }
    }

    fn tile_result(&mut self, file: &str, offset: u64, t: usize, result: crate::Result<()>) {
        self.report.tiles_checked += 1;
        if let Err(e) = result {
            let e = e.within(format!("tile {t}")).at_base(offset);
            self.error(file, &e);
        }
    }

    /// Whether a data file the footer says has `size` bytes has tiles to
    /// read (nothing when 0), counting it as checked. Its tiles are read one
    /// by one ([`Self::read_tile`]); [`Self::tile_ranges`] has compared its
    /// size with the footer's.
    fn count_data_file(&mut self, size: u64) -> bool {
        if size == 0 {
            return false;
        }
        self.report.files_checked += 1;
        true
    }

    /// The byte range of every tile of a data file: offsets ascending, the
    /// last tile ending at the footer's file size, which the file must have.
    fn tile_ranges(
        &mut self,
        meta: &str,
        file: &str,
        offsets: &[u64],
        footer_size: u64,
        size_field: &str,
    ) -> Option<Vec<(u64, u64)>> {
        let actual = self.files.get(file).copied();
        match actual {
            None if footer_size > 0 || !offsets.is_empty() => {
                self.find(
                    file,
                    0,
                    "file",
                    format!("missing; the fragment metadata gives it {footer_size} bytes and {} tile(s)", offsets.len()),
                );
                return None;
            }
            None => return Some(Vec::new()),
            Some(actual) if actual != footer_size => {
                self.find(
                    file,
                    actual.min(footer_size),
                    "file size",
                    format!("{actual} bytes, but {meta} {size_field} says {footer_size}"),
                );
                if actual < footer_size {
                    return None;
                }
            }
            Some(_) => {}
        }
        let mut ranges = Vec::with_capacity(offsets.len());
        for (t, &start) in offsets.iter().enumerate() {
            let end = offsets.get(t + 1).copied().unwrap_or(footer_size);
            if start > end || end > footer_size {
                self.find(
                    file,
                    start.min(footer_size),
                    format!("tile {t}"),
                    format!(
                        "tile offsets {start}..{end} are not ascending within the {footer_size} byte file (from {meta})"
                    ),
                );
                return None;
            }
            ranges.push((start, end));
        }
        Some(ranges)
    }

    fn check_fragment_meta(&mut self) {
        for (path, _) in self.files_under("__fragment_meta") {
            if is_tmp(&path) {
                continue; // judged by check_names
            }
            let Some(bytes) = self.read_tile_file(&path) else {
                continue;
            };
            let schemas = &self.schemas;
            let result = load::consolidated_fragment_metadata(&bytes, self.key, |name| {
                schemas.get(String::from_utf8_lossy(name).as_ref())
            });
            if let Err(e) = result {
                self.error(&path, &e);
            }
        }
    }

    fn check_metadata(&mut self) {
        for (path, _) in self.files_under("__meta") {
            if is_tmp(&path) {
                continue; // judged by check_names
            }
            let bytes = if path.ends_with(".vac") {
                self.read(&path)
            } else {
                self.read_tile_file(&path)
            };
            let Some(bytes) = bytes else {
                continue;
            };
            let result = if path.ends_with(".vac") {
                text_files::parse_vacuum_file(&bytes, &["__meta"]).map(|_| ())
            } else {
                load::metadata(&bytes, self.key).map(|_| ())
            };
            if let Err(e) = result {
                self.error(&path, &e);
            }
        }
    }
}

struct Field {
    /// Index in the footer's field space.
    index: usize,
    /// A dimension (its tiles carry no min/max).
    is_dim: bool,
    /// File stem: `a<i>`, `d<j>`, `t`, `dt` or `dci`.
    file: String,
    datatype: g::Datatype,
    cell_val_num: u32,
    nullable: bool,
    filters: g::FilterPipeline,
    /// Whether this fragment stores tiles for the field.
    has_tiles: bool,
}

/// Refuses a tile whose framing promises more than `limit` unfiltered
/// bytes, before anything is allocated for it.
fn within_limit(tile: &[u8], limit: u64) -> crate::Result<u64> {
    let total: u64 = parse_chunks(tile)?
        .iter()
        .map(|c| c.original_len as u64)
        .sum();
    if total > limit {
        return Err(Error::unsupported(format!(
            "the tile unfilters to {total} bytes, more than this check's limit of {limit}"
        )));
    }
    Ok(total)
}

/// Unfilters one tile; `expected` is its unfiltered size when known (the
/// framing's chunk lengths are used otherwise).
fn decode(
    tile: &[u8],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    expected: Option<u64>,
    limit: u64,
) -> crate::Result<Vec<u8>> {
    let total = within_limit(tile, limit)?;
    unfilter_tile(tile, pipeline, ctx, expected.unwrap_or(total))
}

fn decode_strings(
    tile: &[u8],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    expected: u64,
    cells: u64,
    limit: u64,
) -> crate::Result<(Vec<u8>, Vec<u64>)> {
    within_limit(tile, limit)?;
    unfilter_var_string_tile(tile, pipeline, ctx, expected, cells)
}

/// The cells of a var tile: `data` cut at each start offset (offsets out
/// of order or past the data give empty cells; the framing checks report
/// those).
fn var_cells<'a>(data: &'a [u8], starts: &[u64]) -> Vec<&'a [u8]> {
    starts
        .iter()
        .enumerate()
        .map(|(c, &start)| {
            let end = starts.get(c + 1).copied().unwrap_or(data.len() as u64);
            usize::try_from(start)
                .ok()
                .zip(usize::try_from(end).ok())
                .and_then(|(a, b)| data.get(a..b))
                .unwrap_or_default()
        })
        .collect()
}

/// How a dense writer's slabs change a tile's recorded metadata
/// ([`TileMetaCheck::dense_candidates`]); the default leaves it as computed.
#[derive(Default, Clone, Copy)]
struct Dense {
    /// The null count to expect instead of the written cells' nulls.
    nulls: Option<u64>,
    /// The sum is taken this many cells at a time.
    sum_slab: Option<usize>,
}

/// Recomputes one field's tile metadata (min, max, sum, null count) from
/// its cells, as TileDB's writer computes it (`write::tile_meta`), and
/// compares it with what the fragment metadata records.
struct TileMetaCheck {
    meta: String,
    field: usize,
    datatype: filter::Datatype,
    kinds: tile_meta::MetaKinds,
    var: bool,
    nullable: bool,
    cell_size: u64,
    /// Of a dense fragment: which cells were written.
    dense: Option<DenseWritten>,
    /// A lossy filter in the field's pipeline: its min, max and sum are
    /// those of the cells before filtering ([`lossy`]).
    lossy: Option<lossy::Lossy>,
    /// Tiles whose min, max and sum were not compared (out of the lossy
    /// filter's range).
    values_skipped: std::cell::Cell<u64>,
}

impl TileMetaCheck {
    /// The first disagreement for tile `t`: (file, offset, field, reason).
    fn compare(
        &self,
        fm: &load::FragmentMetadata,
        t: usize,
        cells: &[&[u8]],
        validity: Option<&[bool]>,
    ) -> Option<(String, u64, String, String)> {
        if self.lossy.is_some() && !self.values_comparable(fm, t) {
            self.values_skipped.set(self.values_skipped.get() + 1);
        }
        // The tile's cell count as the fragment metadata knows it: every
        // cell of a dense tile, written or not.
        let tile_cells = Some(cells.len() as u64);
        let Some(dense) = &self.dense else {
            let finding = self.compare_cells(fm, t, cells, validity, tile_cells, Dense::default());
            // A tile whose cells are all null normally records zeros for its
            // min and max (`TileMeta::as_recorded`), but TileDB 2.30's
            // global-order writer (consolidation) was seen to leave the
            // generator's values on the last tile of a fragment: its check
            // looks up the cell count by the tile's index within the write
            // batch, which for the last tile need not be that tile's count.
            let last = fm
                .tile_offsets
                .get(self.field)
                .is_some_and(|o| t + 1 == o.len());
            if finding.is_some()
                && last
                && self
                    .compare_cells(fm, t, cells, validity, None, Dense::default())
                    .is_none()
            {
                return None;
            }
            return finding;
        };
        // A dense tile's metadata covers its written cells.
        let mut first = None;
        for cover in &dense.covers {
            let mask = dense.tiling.written_cells(t as u64, cells.len(), cover);
            let keep = |i: &usize| mask.get(*i).copied().unwrap_or(false);
            let written: Vec<&[u8]> = (0..cells.len()).filter(keep).map(|i| cells[i]).collect();
            let written_validity: Option<Vec<bool>> =
                validity.map(|v| (0..v.len()).filter(keep).map(|i| v[i]).collect());
            let slab = dense.tiling.slab_cells(t as u64, cover);
            for (nulls, sum_slab) in self.dense_candidates(validity, &mask, slab) {
                // A write whose layout is not the cell order hands the cells
                // over one at a time in its own (row-major) order, which
                // decides where a sum saturates: that order is built only
                // for the one candidate that needs it, the last.
                let reordered;
                let (cells_in_order, validity_in_order) = if sum_slab == Some(1) {
                    let order: Vec<usize> = dense
                        .tiling
                        .row_major_order(cells.len())
                        .into_iter()
                        .filter(keep)
                        .collect();
                    reordered = (
                        order.iter().map(|&i| cells[i]).collect::<Vec<&[u8]>>(),
                        validity.map(|v| {
                            order
                                .iter()
                                .map(|&i| v.get(i).copied().unwrap_or(true))
                                .collect::<Vec<bool>>()
                        }),
                    );
                    (&reordered.0, reordered.1.as_deref())
                } else {
                    (&written, written_validity.as_deref())
                };
                match self.compare_cells(
                    fm,
                    t,
                    cells_in_order,
                    validity_in_order,
                    tile_cells,
                    Dense { nulls, sum_slab },
                ) {
                    None => return None,
                    Some(finding) => {
                        first.get_or_insert(finding);
                    }
                }
            }
        }
        first
    }

    /// What TileDB 2.30's dense writer may record for a tile, as
    /// candidates: its metadata generator is handed the written cells a
    /// slab at a time. A slab holds `slab` cells
    /// ([`FragmentTiling::slab_cells`]) when the write's layout is the cell
    /// order, one cell otherwise, and a run of consecutive cells when the
    /// consolidator wrote the tile; none of that is recorded, so each is a
    /// candidate. Per slab, a nullable fixed-size field without min/max
    /// (several values per cell, say) counts the nulls of the whole tile,
    /// padding included, and a sum that saturates stops only its slab.
    fn dense_candidates(
        &self,
        validity: Option<&[bool]>,
        written: &[bool],
        slab: Option<u64>,
    ) -> Vec<(Option<u64>, Option<usize>)> {
        let cells = written.iter().filter(|w| **w).count() as u64;
        let mut runs = Vec::new();
        let mut previous = false;
        for &w in written {
            match (w, previous) {
                (true, false) => runs.push(1usize),
                (true, true) => *runs.last_mut().unwrap_or(&mut 0) += 1,
                _ => {}
            }
            previous = w;
        }
        let slab = slab.filter(|s| *s > 0).unwrap_or(cells.max(1));
        let counted = validity.filter(|_| self.nullable && !self.var && !self.kinds.min_max);
        let nulls = counted.map(|v| v.iter().filter(|v| !**v).count() as u64);
        let run_len = (runs.len() == 1).then(|| runs[0]);
        vec![
            (nulls.map(|n| n * cells.div_ceil(slab)), Some(slab as usize)),
            (nulls.map(|n| n * runs.len() as u64), run_len),
            (nulls.map(|n| n * cells), Some(1)),
        ]
    }

    fn compare_cells(
        &self,
        fm: &load::FragmentMetadata,
        t: usize,
        cells: &[&[u8]],
        validity: Option<&[bool]>,
        tile_cells: Option<u64>,
        dense: Dense,
    ) -> Option<(String, u64, String, String)> {
        let i = self.field;
        let footer = &fm.footer;
        let computed = if self.var {
            tile_meta::var_tile(self.kinds, cells, validity)
        } else {
            tile_meta::fixed_tile(self.datatype, self.kinds, cells, validity)
        };
        // `None`: the generator's values as they are, without the rule.
        let mut computed = match tile_cells {
            Some(n) => computed.as_recorded(self.nullable, n, self.var),
            None => computed,
        };
        if let Some(n) = dense.nulls {
            computed.null_count = n;
        }
        if let (Some(slab), false) = (dense.sum_slab, self.var) {
            if self.kinds.sum {
                computed.sum = tile_meta::slabbed_sum(self.datatype, cells, validity, slab);
            }
        }
        let at = |offsets: &Option<Vec<u64>>| {
            offsets
                .as_ref()
                .and_then(|o| o.get(i).copied())
                .unwrap_or(fm.footer_offset)
        };
        let finding = |offsets: &Option<Vec<u64>>, what: &str, reason: String| {
            Some((
                self.meta.clone(),
                at(offsets),
                format!("{what}[{i}] tile {t}"),
                reason,
            ))
        };
        // TileDB 2.30's dense writer records var-sized minima, maxima and
        // null counts that do not follow from the tile's cells (seen in its
        // random arrays: the right length holding zeros or another cell's
        // bytes, or nothing at all; null counts off by a cell or two either
        // way), so they are compared for sparse tiles only.
        let unreliable_var = self.var && self.dense.is_some();
        let values_compared = self.values_comparable(fm, t);
        if self.kinds.min_max && !unreliable_var && values_compared {
            for (list, want, what, offsets) in [
                (
                    &fm.tile_mins,
                    &computed.min,
                    "tile_mins",
                    &footer.tile_mins_offsets,
                ),
                (
                    &fm.tile_maxes,
                    &computed.max,
                    "tile_maxes",
                    &footer.tile_maxes_offsets,
                ),
            ] {
                let Some(stored) = list.get(i) else { continue };
                let recorded = if self.var {
                    stored_var_value(stored, t)
                } else {
                    let size = self.cell_size as usize;
                    t.checked_mul(size)
                        .and_then(|a| stored.fixed.get(a..a.checked_add(size)?))
                };
                let want = want.as_deref().unwrap_or_default();
                if !self.same_value(recorded, want) {
                    return finding(
                        offsets,
                        what,
                        format!(
                            "records {} but the tile's cells give {}",
                            recorded.map_or("nothing".to_string(), hex),
                            hex(want)
                        ),
                    );
                }
            }
        }
        if self.kinds.sum && values_compared {
            let recorded = fm.tile_sums.get(i).and_then(|s| s.get(t)).copied();
            let want = u64::from_le_bytes(computed.sum);
            if !self.same_sum(recorded, want, cells, validity) {
                return finding(
                    &footer.tile_sums_offsets,
                    "tile_sums",
                    format!(
                        "records {} but the tile's cells sum to {}",
                        recorded.map_or("nothing".to_string(), |r| hex(&r.to_le_bytes())),
                        hex(&want.to_le_bytes())
                    ),
                );
            }
        }
        if self.nullable && !unreliable_var {
            let recorded = fm.tile_null_counts.get(i).and_then(|s| s.get(t)).copied();
            if recorded != Some(computed.null_count) {
                return finding(
                    &footer.tile_null_counts_offsets,
                    "tile_null_counts",
                    format!(
                        "records {} null(s) but the tile has {}",
                        recorded.map_or("no count".to_string(), |r| r.to_string()),
                        computed.null_count
                    ),
                );
            }
        }
        None
    }
}

impl TileMetaCheck {
    /// Whether tile `t`'s recorded min, max and sum can be compared with
    /// its cells: always, but for a lossy field ([`lossy`]) only when the
    /// recorded min and max show that every cell fitted the filter's
    /// integers.
    fn values_comparable(&self, fm: &load::FragmentMetadata, t: usize) -> bool {
        let scale = match self.lossy {
            None => return true,
            Some(lossy::Lossy::Unchecked(_)) => return false,
            Some(scale) => scale,
        };
        let size = self.cell_size as usize;
        let float32 = matches!(self.datatype, filter::Datatype::Float32);
        let recorded = |list: &[g::TileMinMax]| {
            list.get(self.field)
                .and_then(|m| {
                    m.fixed
                        .get(t.checked_mul(size)?..(t + 1).checked_mul(size)?)
                })
                .and_then(|b| lossy::value(b, float32))
        };
        match (recorded(&fm.tile_mins), recorded(&fm.tile_maxes)) {
            (Some(min), Some(max)) => scale.fits(min) && scale.fits(max),
            // No min/max recorded (several values per cell): nothing
            // bounds the cells, so their sums cannot be trusted either.
            _ => false,
        }
    }

    /// A recorded min or max against the computed one: byte for byte, or
    /// within the lossy filter's step.
    fn same_value(&self, recorded: Option<&[u8]>, want: &[u8]) -> bool {
        if recorded == Some(want) {
            return true;
        }
        let (Some(scale @ lossy::Lossy::Scale { float32, .. }), Some(recorded)) =
            (self.lossy, recorded)
        else {
            return false;
        };
        match (lossy::value(recorded, float32), lossy::value(want, float32)) {
            (Some(r), Some(c)) => scale.close(r, c),
            _ => false,
        }
    }

    /// A recorded sum against the computed one: exactly, or within the
    /// lossy filter's step per summed cell.
    fn same_sum(
        &self,
        recorded: Option<u64>,
        want: u64,
        cells: &[&[u8]],
        validity: Option<&[bool]>,
    ) -> bool {
        if recorded == Some(want) {
            return true;
        }
        let (Some(scale @ lossy::Lossy::Scale { float32, .. }), Some(recorded)) =
            (self.lossy, recorded)
        else {
            return false;
        };
        let mut summed = 0u64;
        let mut magnitude = 0f64;
        for (c, cell) in cells.iter().enumerate() {
            if validity.is_some_and(|v| !v.get(c).copied().unwrap_or(true)) {
                continue;
            }
            summed += 1;
            magnitude += lossy::value(cell, float32).map_or(0.0, f64::abs);
        }
        scale.close_sum(
            f64::from_bits(recorded),
            f64::from_bits(want),
            summed,
            magnitude,
        )
    }
}

/// The value of tile `t` in the var part of a `TileMinMax`.
fn stored_var_value(stored: &g::TileMinMax, t: usize) -> Option<&[u8]> {
    let offset = |k: usize| -> Option<usize> {
        let b = stored
            .fixed
            .get(k.checked_mul(8)?..k.checked_mul(8)?.checked_add(8)?)?;
        usize::try_from(u64::from_le_bytes(b.try_into().ok()?)).ok()
    };
    let start = offset(t)?;
    let end = match offset(t + 1) {
        Some(e) => e,
        None => stored.var.len(),
    };
    stored.var.get(start..end)
}

fn hex(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "an empty value".to_string();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A dimension value as a signed 128-bit integer (dense dimensions are
/// integers or datetimes).
fn int_value(bytes: &[u8], t: g::Datatype) -> Option<i128> {
    let unsigned = t.name().starts_with("UINT");
    Some(match (bytes.len(), unsigned) {
        (1, false) => i8::from_le_bytes(bytes.try_into().ok()?) as i128,
        (1, true) => u8::from_le_bytes(bytes.try_into().ok()?) as i128,
        (2, false) => i16::from_le_bytes(bytes.try_into().ok()?) as i128,
        (2, true) => u16::from_le_bytes(bytes.try_into().ok()?) as i128,
        (4, false) => i32::from_le_bytes(bytes.try_into().ok()?) as i128,
        (4, true) => u32::from_le_bytes(bytes.try_into().ok()?) as i128,
        (8, false) => i64::from_le_bytes(bytes.try_into().ok()?) as i128,
        (8, true) => u64::from_le_bytes(bytes.try_into().ok()?) as i128,
        _ => return None,
    })
}

/// A dense fragment's dimensions (domain and tile extent) and non-empty
/// domain, checked against each other.
fn dense_shape(
    schema: &g::ArraySchema,
    footer: &g::FragmentFooter,
) -> Result<(Vec<DenseDimension>, Vec<Span>), String> {
    let mut dims = Vec::new();
    let mut non_empty = Vec::new();
    for (j, d) in schema.domain.dimensions.iter().enumerate() {
        let size = d.datatype.size() as usize;
        let value = |bytes: &[u8], k: usize| {
            bytes
                .get(k * size..(k + 1) * size)
                .and_then(|b| int_value(b, d.datatype))
        };
        let (Some(lo), Some(hi)) = (value(&d.domain, 0), value(&d.domain, 1)) else {
            return Err(format!("dimension {j} has no integer domain"));
        };
        let Some(extent) = d.extent.as_deref().and_then(|e| value(e, 0)) else {
            return Err(format!("dimension {j} of a dense array has no tile extent"));
        };
        if extent <= 0 {
            return Err(format!("dimension {j} has tile extent {extent}"));
        }
        let range = footer
            .non_empty_domain
            .ranges
            .get(j)
            .ok_or_else(|| format!("no range for dimension {j}"))?;
        let (Some(start), Some(end)) = (value(&range.data, 0), value(&range.data, 1)) else {
            return Err(format!("dimension {j}'s range is not two integers"));
        };
        if start > end || start < lo || end > hi {
            return Err(format!(
                "dimension {j}'s range [{start}, {end}] is not within the domain [{lo}, {hi}]"
            ));
        }
        dims.push(DenseDimension {
            low: lo,
            high: hi,
            extent,
        });
        non_empty.push((start, end));
    }
    Ok((dims, non_empty))
}

/// The tile count of a dense fragment (its non-empty domain expanded to
/// tile boundaries) and the cells per tile.
fn dense_tiles(schema: &g::ArraySchema, footer: &g::FragmentFooter) -> Result<(u64, u64), String> {
    let (dims, non_empty) = dense_shape(schema, footer)?;
    let mut tiles: u64 = 1;
    let mut cells: u64 = 1;
    for (d, (start, end)) in dims.iter().zip(non_empty) {
        let count = u64::try_from(d.tile_index(end) - d.tile_index(start) + 1)
            .map_err(|_| "tile count overflows")?;
        tiles = tiles
            .checked_mul(count)
            .ok_or_else(|| "tile count overflows".to_string())?;
        cells = cells
            .checked_mul(u64::try_from(d.extent).map_err(|_| "extent overflows")?)
            .ok_or_else(|| "cells per tile overflow".to_string())?;
    }
    Ok((tiles, cells))
}

/// Which cells of a dense fragment's tiles its write covered: tile metadata
/// counts those cells only, never the padding around them. A write covers
/// its non-empty domain; a consolidation rewrites the union of its inputs'
/// domains expanded to whole tiles (within the domain), fill values
/// included, and records the union as the non-empty domain. Nothing in a
/// fragment says which of the two made it (a consolidated fragment's name
/// may carry one timestamp), so metadata matching either is accepted.
struct DenseWritten {
    tiling: FragmentTiling,
    /// The non-empty domain, and that domain expanded to whole tiles.
    covers: [Vec<Span>; 2],
}

impl DenseWritten {
    fn of(schema: &g::ArraySchema, footer: &g::FragmentFooter) -> Option<DenseWritten> {
        let (dims, non_empty) = dense_shape(schema, footer).ok()?;
        let order = |layout: g::Layout| match layout {
            g::Layout::ColMajor => Order::ColMajor,
            _ => Order::RowMajor,
        };
        let expanded = dims
            .iter()
            .zip(&non_empty)
            // Not clamped to the domain: a consolidated tile that runs past
            // the domain's end counts its cells there as written (TileDB
            // 2.30 counts their fill values' nulls, for one).
            .map(|(d, span)| d.expand_to_tiles(*span))
            .collect();
        Some(DenseWritten {
            tiling: FragmentTiling::new(
                &dims,
                &non_empty,
                order(schema.tile_order),
                order(schema.cell_order),
            ),
            covers: [non_empty, expanded],
        })
    }
}

/// Whether a file is a writer's temporary file: any name ending in
/// `.tmp` (our writer writes `.<final name>.<random>.tmp` in the array
/// folder and renames it into place; older versions of its schema writer
/// left `__schema/<name>.tmp`).
fn is_tmp(path: &str) -> bool {
    path.rsplit('/')
        .next()
        .is_some_and(|name| name.ends_with(".tmp"))
}

/// A `.tmp` file left by an interrupted write: `Some(Ok)` where readers
/// ignore it, `Some(Err(why))` where TileDB cannot open the array with it,
/// `None` for other files.
///
/// TileDB 2.30 reads an array with such a file in the array folder,
/// `__commits/`, `__fragments/`, a fragment folder or
/// `__schema/__enumerations/` (it looks there only for the names it
/// expects), but not in `__schema/` or `__fragment_meta/` (it cannot open
/// the array) nor in `__meta/` (it cannot load the array's metadata),
/// whose every file it loads as a schema, consolidated fragment metadata
/// or a metadata file (tiledb/sm/array/array_directory.cc lists those
/// folders whole; measured with tiledb-py in
/// runtime/tests/check_leftovers.rs). Our reader skips such files in
/// `__meta/` and `__fragment_meta/`, but an array TileDB cannot open is
/// not clean.
pub fn leftover_tmp(path: &str) -> Option<Result<(), String>> {
    if !is_tmp(path) {
        return None;
    }
    let parts: Vec<&str> = path.split('/').collect();
    let refused = |what: &str, fails: &str| {
        Err(format!(
            "a temporary file left by an interrupted write, where TileDB 2.30 loads every \
             file as {what}: TileDB cannot {fails} until it is removed"
        ))
    };
    Some(match parts.as_slice() {
        ["__schema", _] => refused("a schema", "open the array"),
        ["__meta", _] => refused("array metadata", "read the array's metadata"),
        ["__fragment_meta", _] => refused("consolidated fragment metadata", "open the array"),
        [_]
        | ["__commits", _]
        | ["__fragments", _]
        | ["__fragments", _, _]
        | ["__schema", "__enumerations", _] => Ok(()),
        // Inside a root fragment folder (before format 12).
        [fragment, _] if TimestampedName::parse(fragment).is_ok() => Ok(()),
        _ => return None,
    })
}

/// Why a file's name is not one the format allows where it sits.
pub fn name_problem(path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split('/').collect();
    let timestamped = |name: &str| TimestampedName::parse(name).map_err(|e| e.to_string());
    let ext_in = |name: &str, allowed: &[Option<Extension>]| -> Option<String> {
        match timestamped(name) {
            Ok(n) if allowed.contains(&n.extension()) => None,
            Ok(n) => Some(format!(
                "{name}: a .{} file does not belong here",
                n.extension()
                    .map_or("", |e| e.suffix().trim_start_matches('.'))
            )),
            Err(e) => Some(e),
        }
    };
    match parts.as_slice() {
        ["__lock.tdb"] | ["__array_schema.tdb"] => None,
        ["__schema", name] => ext_in(name, &[None]),
        ["__schema", "__enumerations", name] => {
            if name.starts_with("__") {
                None
            } else {
                Some(format!(
                    "{name}: enumeration files are named __<label>_<version>"
                ))
            }
        }
        ["__commits", name] => ext_in(
            name,
            &[
                Some(Extension::Wrt),
                Some(Extension::Del),
                Some(Extension::Upd),
                Some(Extension::Con),
                Some(Extension::Ign),
                Some(Extension::Vac),
            ],
        ),
        ["__fragment_meta", name] => ext_in(name, &[Some(Extension::Meta)]),
        ["__meta", name] => ext_in(name, &[None, Some(Extension::Vac)]),
        ["__fragments", fragment, file] => {
            if let Err(e) = timestamped(fragment).and_then(|n| {
                if n.extension().is_none() && n.version().is_some() {
                    Ok(n)
                } else {
                    Err(format!("{fragment}: not a fragment folder name"))
                }
            }) {
                return Some(e);
            }
            let named_by_index = TimestampedName::parse(fragment)
                .map(|n| n.format_version() >= 9)
                .unwrap_or(false);
            if !named_by_index || fragment_file_ok(file) {
                None
            } else {
                Some(format!("{file}: not a fragment file name"))
            }
        }
        ["__labels", ..] => None,
        [root, ..] if ROOT_DIRS.contains(root) => Some(format!("{path}: unexpected here")),
        [name] => {
            // Legacy (format < 12) commit, vacuum and metadata files in the root.
            ext_in(
                name,
                &[
                    Some(Extension::Ok),
                    Some(Extension::Vac),
                    Some(Extension::Meta),
                ],
            )
        }
        [fragment, file] if TimestampedName::parse(fragment).is_ok() => {
            // Before format 9, fragment files are named after their fields.
            let named_by_index = TimestampedName::parse(fragment)
                .map(|n| n.format_version() >= 9)
                .unwrap_or(false);
            if !named_by_index || fragment_file_ok(file) {
                None
            } else {
                Some(format!("{file}: not a fragment file name"))
            }
        }
        _ => Some(format!("{path}: not a file of an array")),
    }
}

/// `__fragment_metadata.tdb`, `a<i>`/`d<j>` with `.tdb`, `_var.tdb`,
/// `_validity.tdb`; `t.tdb`, `dt.tdb`, `dci.tdb`; `__coords.tdb`.
fn fragment_file_ok(file: &str) -> bool {
    if matches!(
        file,
        "__fragment_metadata.tdb" | "t.tdb" | "dt.tdb" | "dci.tdb" | "__coords.tdb"
    ) {
        return true;
    }
    let Some(stem) = file.strip_suffix(".tdb") else {
        return false;
    };
    let stem = stem
        .strip_suffix("_var")
        .or_else(|| stem.strip_suffix("_validity"))
        .unwrap_or(stem);
    let digits = stem.strip_prefix('a').or_else(|| stem.strip_prefix('d'));
    digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}
