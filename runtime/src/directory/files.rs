//! The entries of an array folder: the names of its folders, what each kind
//! of listed file is ([`Fragment`], [`SchemaFile`], [`ConditionCommit`], …),
//! which fragments an open range sees ([`TimeTravelRule`]), and where a
//! fragment's commit marker and vacuum file go.

use crate::directory::timestamped_name::{Extension, TimestampedName};
use crate::error::Result;
use crate::format::generated::{commits_in_commits_folder, partial_overlap_visible};
use crate::storage::RelPath;

// Folder and file names come from spec/directory.toml.
pub(crate) use crate::format::generated::{
    ARRAY_SCHEMA_FILE, COMMITS_DIR, ENUMERATIONS_DIR, FRAGMENTS_DIR, FRAGMENT_METADATA_FILE,
    FRAGMENT_META_DIR, LABELS_DIR, METADATA_DIR, SCHEMA_DIR,
};

/// The folder names an array owns (spec/directory.toml); a zero-byte file
/// by one of these names would hide the folder on object stores, so it is
/// an error.
pub use crate::format::generated::ARRAY_FOLDERS as ARRAY_DIR_NAMES;

/// Which fragments a time-travelling open sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeTravelRule {
    /// A fragment is visible iff `[t1, t2] ⊆ [start, end]`: dense reads, and
    /// every mode other than reading.
    FullContainment,
    /// Reading a sparse array: as above, but a fragment (or vacuum file) of
    /// format v15+ needs only to overlap `[start, end]`; the reader then
    /// filters its cells by their timestamps.
    SparseRead,
}

impl TimeTravelRule {
    /// The rule for reading an array of the given kind.
    pub fn for_read(sparse: bool) -> Self {
        if sparse {
            TimeTravelRule::SparseRead
        } else {
            TimeTravelRule::FullContainment
        }
    }

    pub(crate) fn admits(self, name: &TimestampedName, start: u64, end: u64) -> bool {
        name.contained_in(start, end)
            || (self == TimeTravelRule::SparseRead
                && partial_overlap_visible(name.format_version())
                && name.overlaps(start, end))
    }
}

/// What committed a fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitSource {
    /// `<fragment>.ok` in the root (v5–v11).
    OkFile,
    /// `__commits/<fragment>.wrt` (v12+).
    WrtFile,
    /// A line of this `.con` file.
    Consolidated(RelPath),
    /// Format v1–v4: the presence of `<fragment>/__fragment_metadata.tdb`.
    FragmentMetadata,
}

/// A committed fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fragment {
    /// The fragment folder, relative to the array.
    pub path: RelPath,
    /// The folder name, which carries the fragment's time range and format version.
    pub name: TimestampedName,
    /// How its commit was recorded, which decides how vacuum removes it.
    pub commit: CommitSource,
}

impl Fragment {
    /// The format version its name states (2 for `__<uuid>_<t>`, 4 for
    /// `__<t1>_<t2>_<label>`).
    pub fn format_version(&self) -> u32 {
        self.name.format_version()
    }

    /// Its `__fragment_metadata.tdb`.
    pub fn metadata_path(&self) -> Result<RelPath> {
        self.path.join(FRAGMENT_METADATA_FILE)
    }
}

/// A folder or file that looks like a fragment but is not committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UncommittedEntry {
    /// The file or folder, relative to the array.
    pub path: RelPath,
    /// Its name, parsed: the time range and, where present, the format version.
    pub name: TimestampedName,
}

/// A schema file. `name` is `None` for the legacy `__array_schema.tdb`,
/// which has no timestamps and counts as older than every other schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaFile {
    /// The file, relative to the array.
    pub path: RelPath,
    /// Its name, parsed; `None` for `__array_schema.tdb`.
    pub name: Option<TimestampedName>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// What a condition commit does to the cells its condition matches.
pub enum ConditionKind {
    /// Deletes them (`.del`).
    Delete,
    /// Updates them (`.upd`): the condition and new values; this reader parses the values and applies the condition as a delete.
    Update,
}

/// A delete or update commit and where its condition tile is stored: a
/// standalone `__commits/*.del|.upd` file (offset 0), or inside a `.con`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionCommit {
    /// Delete or update.
    pub kind: ConditionKind,
    /// The commit's own name (`__T_T_<label>_<v>.del`).
    pub name: TimestampedName,
    /// The file holding the tile.
    pub file: RelPath,
    /// Where the generic tile starts in `file`.
    pub offset: u64,
    /// Its size in bytes.
    pub size: u64,
}

/// A timestamped file that is part of a set read in time order (array and
/// group metadata, group details).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampedFile {
    /// The file or folder, relative to the array.
    pub path: RelPath,
    /// Its name, parsed: the time range and, where present, the format version.
    pub name: TimestampedName,
}

/// A `.vac` file of fragments, with its lines if it overlaps the open range
/// (only those can apply, under either rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VacuumFile {
    /// The file or folder, relative to the array.
    pub path: RelPath,
    /// Its name, parsed: the time range and, where present, the format version.
    pub name: TimestampedName,
    /// The fragment folders it lists, relative to the array; `None` when the file does not overlap the open range and was not read.
    pub entries: Option<Vec<RelPath>>,
}

/// The commit marker of a fragment folder: `<fragment>.ok` in the root before
/// v12, `__commits/<name>.wrt` after.
pub fn commit_path(name: &TimestampedName) -> Result<RelPath> {
    if !commits_in_commits_folder(name.format_version()) {
        RelPath::root().join(name.with_extension(Some(Extension::Ok)).as_str())
    } else {
        RelPath::root()
            .join(COMMITS_DIR)?
            .join(name.with_extension(Some(Extension::Wrt)).as_str())
    }
}

/// The `.vac` path of a consolidated fragment, by the same rule.
pub fn vacuum_path(name: &TimestampedName) -> Result<RelPath> {
    if !commits_in_commits_folder(name.format_version()) {
        RelPath::root().join(name.with_extension(Some(Extension::Vac)).as_str())
    } else {
        RelPath::root()
            .join(COMMITS_DIR)?
            .join(name.with_extension(Some(Extension::Vac)).as_str())
    }
}
