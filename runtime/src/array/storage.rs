//! Where an array's files live: a small storage interface rooted at one
//! array (or group) folder, and its local-filesystem implementation.
//!
//! Every path handed to storage is a [`RelPath`]: a path relative to the
//! folder, built from checked components. Names read from files (vacuum
//! lines, consolidated-commit lines, group members) become `RelPath`s through
//! [`RelPath::parse`], which refuses absolute paths and `..`; the local
//! implementation also refuses any path whose real location (after symbolic
//! links) lies outside the folder. So no file can make us touch another.

use std::collections::HashSet;
use std::fmt;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};

/// A path inside the storage root: zero or more components joined by `/`.
/// The empty path is the root itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RelPath(String);

fn check_component(component: &str) -> std::result::Result<(), String> {
    if component.is_empty() {
        return Err("empty path component".into());
    }
    if component == "." || component == ".." {
        return Err(format!("path component {component:?} is not allowed"));
    }
    // Bytes, not chars: none of these is part of a longer UTF-8 sequence.
    if let Some(bad) = component
        .bytes()
        .find(|b| matches!(b, b'/' | b'\\' | b':' | b'\0'))
    {
        return Err(format!(
            "path component {component:?} contains {:?}",
            bad as char
        ));
    }
    Ok(())
}

impl RelPath {
    /// The storage root.
    pub fn root() -> Self {
        RelPath(String::new())
    }

    /// Parses a relative path such as `__commits/__1_1_<label>_22.wrt`.
    /// Refuses (class corrupt, field `path`) absolute paths, URIs, `.`, `..`,
    /// empty components and backslashes: the caller adds the file and offset
    /// the text came from.
    pub fn parse(text: &str) -> Result<Self> {
        if text.is_empty() {
            return Err(Error::corrupt(0, "path", "empty path"));
        }
        if text.starts_with('/') {
            return Err(Error::corrupt(0, "path", format!("{text:?} is absolute")));
        }
        for component in text.split('/') {
            check_component(component)
                .map_err(|reason| Error::corrupt(0, "path", format!("{text:?}: {reason}")))?;
        }
        Ok(RelPath(text.to_owned()))
    }

    /// This path with one more component.
    pub fn join(&self, component: &str) -> Result<Self> {
        check_component(component).map_err(|reason| Error::corrupt(0, "path", reason))?;
        Ok(if self.0.is_empty() {
            RelPath(component.to_owned())
        } else {
            RelPath(format!("{}/{component}", self.0))
        })
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|c| !c.is_empty())
    }

    /// The last component, or `None` for the root.
    pub fn file_name(&self) -> Option<&str> {
        if self.0.is_empty() {
            None
        } else {
            self.0.rsplit('/').next()
        }
    }

    /// The path without its last component (the root's parent is the root).
    pub fn parent(&self) -> RelPath {
        match self.0.rfind('/') {
            Some(slash) => RelPath(self.0[..slash].to_owned()),
            None => RelPath::root(),
        }
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str(".")
        } else {
            f.write_str(&self.0)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
}

/// One entry of a folder listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub kind: EntryKind,
    /// Size in bytes, 0 for folders; `None` for a file when the listing
    /// did not look it up ([`Storage::list_names`]).
    pub size: Option<u64>,
}

impl DirEntry {
    pub fn is_dir(&self) -> bool {
        self.kind == EntryKind::Dir
    }
    pub fn is_file(&self) -> bool {
        self.kind == EntryKind::File
    }
}

/// How much work storage has done, for tests that check we touch only the
/// files we must.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IoCounters {
    /// Folder listings.
    pub listings: u64,
    /// Existence, kind or size queries that open nothing.
    pub probes: u64,
    /// Files opened for reading.
    pub files_opened: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Files created or overwritten.
    pub files_written: u64,
    pub bytes_written: u64,
    /// Renames and removals.
    pub changes: u64,
}

/// A folder of files: listing, reading and (for writers) changing.
pub trait Storage: Send + Sync {
    /// A human-readable name of the root, for error messages.
    fn describe(&self, path: &RelPath) -> PathBuf;

    /// The entries of a folder sorted by name, or `None` if there is no such
    /// folder. Names that are not UTF-8 are skipped: no rule can match them.
    fn list(&self, dir: &RelPath) -> Result<Option<Vec<DirEntry>>>;

    /// [`Storage::list`], but files' sizes may be left out (`None`): on a
    /// local disk a folder of thousands of commit files then costs no call
    /// per file. Ask [`Storage::size`] for the few that are needed.
    fn list_names(&self, dir: &RelPath) -> Result<Option<Vec<DirEntry>>> {
        self.list(dir)
    }

    /// The kind of the entry at `path`, or `None` if nothing is there.
    fn kind(&self, path: &RelPath) -> Result<Option<EntryKind>>;

    fn size(&self, file: &RelPath) -> Result<u64>;

    /// The whole file.
    fn read(&self, file: &RelPath) -> Result<Vec<u8>>;

    /// `len` bytes from `offset`; an error (class corrupt) if the file is
    /// shorter, checked before anything is allocated.
    fn read_range(&self, file: &RelPath, offset: u64, len: u64) -> Result<Vec<u8>>;

    /// [`Storage::read_range`] into `buffer`, replacing its contents; an
    /// implementation may reuse the buffer's memory.
    fn read_range_into(
        &self,
        file: &RelPath,
        offset: u64,
        len: u64,
        buffer: &mut Vec<u8>,
    ) -> Result<()> {
        *buffer = self.read_range(file, offset, len)?;
        Ok(())
    }

    /// Creates a folder and its missing parents.
    fn create_dir(&self, dir: &RelPath) -> Result<()>;

    /// Creates or replaces a file with `data`, atomically: whatever moment
    /// the process dies at, a reader finds the old file (or none) or the
    /// whole new one, never a part. Writers rely on this for every file they
    /// make visible (commit markers, metadata, delete commits, consolidated
    /// files); an implementation without an atomic replace must not make
    /// the name visible before its last byte (an object store's PUT).
    fn write(&self, file: &RelPath, data: &[u8]) -> Result<()>;

    /// Moves `from` to `to`, replacing `to` atomically.
    fn rename(&self, from: &RelPath, to: &RelPath) -> Result<()>;

    fn remove_file(&self, file: &RelPath) -> Result<()>;

    /// Removes a folder and everything in it.
    fn remove_dir(&self, dir: &RelPath) -> Result<()>;

    /// Work done so far.
    fn counters(&self) -> IoCounters;
}

#[derive(Default)]
struct Counters {
    listings: AtomicU64,
    probes: AtomicU64,
    files_opened: AtomicU64,
    bytes_read: AtomicU64,
    files_written: AtomicU64,
    bytes_written: AtomicU64,
    changes: AtomicU64,
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

/// Storage on the local filesystem, rooted at one folder.
pub struct LocalStorage {
    root: PathBuf,
    /// The root with symbolic links resolved, if it exists yet.
    canonical_root: Option<PathBuf>,
    /// Folders (below the root) already found to lie inside it once links
    /// are followed. A file in one of them needs only one `lstat` of its own
    /// name to be confirmed, instead of resolving every component of its
    /// path again: opening an array of thousands of fragments touches
    /// thousands of files in the same few folders. Forgotten whenever a
    /// folder is removed or anything renamed.
    verified_dirs: Mutex<HashSet<RelPath>>,
    /// Whether changes are made durable ([`LocalStorage::with_sync`]).
    sync: bool,
    counters: Counters,
}

/// Temporary files end with this; readers skip them and vacuum removes the
/// stale ones ([`is_temp_file_name`], `vacuum::remove_temp_files`).
pub const TEMP_SUFFIX: &str = ".tmp";

/// Whether `name` is a temporary file a write made (and perhaps left behind
/// when it was killed before its rename).
pub fn is_temp_file_name(name: &str) -> bool {
    name.ends_with(TEMP_SUFFIX)
}

/// The moment (milliseconds since the epoch) a temporary file of
/// [`LocalStorage::write`] was started, read back from its name
/// `.<final name>.<ms>_<label>.tmp`; `None` for other `.tmp` names.
pub fn temp_file_started_ms(name: &str) -> Option<u64> {
    let stem = name.strip_prefix('.')?.strip_suffix(TEMP_SUFFIX)?;
    let (_, stamp) = stem.rsplit_once('.')?;
    let (ms, label) = stamp.split_once('_')?;
    (!label.is_empty() && label.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| ms.parse().ok())
        .flatten()
}

impl LocalStorage {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let canonical_root = fs::canonicalize(&root).ok();
        LocalStorage {
            root,
            canonical_root,
            verified_dirs: Mutex::new(HashSet::new()),
            sync: true,
            counters: Counters::default(),
        }
    }

    /// Whether each change is made durable before it returns (on by
    /// default): a file's data is flushed (`fsync`) before it is renamed
    /// into place, and the folder holding a new, renamed or removed entry
    /// is flushed after, so a commit marker never survives a power loss
    /// that the files it commits do not. About a millisecond per file on
    /// the project's machine; tests that make thousands of fragments may
    /// turn it off.
    pub fn with_sync(mut self, sync: bool) -> Self {
        self.sync = sync;
        self
    }

    /// Flushes the folder `dir` (its entries) to disk, when syncing.
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        if !self.sync {
            return Ok(());
        }
        fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(dir, &e))
    }

    /// Flushes the folder holding `path`.
    fn sync_parent(&self, path: &Path) -> Result<()> {
        match path.parent() {
            Some(parent) => self.sync_dir(parent),
            None => Ok(()),
        }
    }

    /// Writes `data` to a new temporary file at the storage root and
    /// returns its path. The root, because TileDB lists `__meta/`,
    /// `__fragment_meta/`, `__schema/` and `__group/` and fails on any name
    /// it does not expect there, while it ignores unknown files in the root
    /// of arrays and groups (tried with TileDB 2.30); a rename within one
    /// filesystem is atomic wherever the two folders are.
    fn write_temp(&self, final_name: &str, data: &[u8]) -> Result<PathBuf> {
        use std::io::Write;
        let root = self.resolve(&RelPath::root())?;
        let (label, now) = super::timestamped_name::new_label()?;
        // The final name makes a leftover recognizable; cut so that the
        // whole stays far below the usual 255-byte limit of a name.
        let shown = match final_name.char_indices().nth(120) {
            Some((cut, _)) => &final_name[..cut],
            None => final_name,
        };
        let temp = root.join(format!(".{shown}.{now}_{label}{TEMP_SUFFIX}"));
        let written = fs::File::create_new(&temp).and_then(|mut file| {
            file.write_all(data)?;
            if self.sync {
                file.sync_all()?;
            }
            Ok(())
        });
        if let Err(e) = written {
            let _ = fs::remove_file(&temp);
            return Err(Error::io(&temp, &e));
        }
        Ok(temp)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn join(&self, path: &RelPath) -> PathBuf {
        let mut full = self.root.clone();
        for component in path.components() {
            full.push(component);
        }
        full
    }

    fn escape_error(&self, path: &RelPath, real: &Path) -> Error {
        Error::Corrupt {
            at: crate::error::Location {
                file: self.join(path),
                offset: 0,
                field: "path".into(),
            },
            reason: format!(
                "resolves to {} outside {}",
                real.display(),
                self.root.display()
            ),
        }
    }

    /// A folder's entries, with files' sizes when `with_size`.
    fn list_entries(&self, dir: &RelPath, with_size: bool) -> Result<Option<Vec<DirEntry>>> {
        self.verify_dir(dir)?;
        let full = self.join(dir);
        bump(&self.counters.listings, 1);
        let reader = match fs::read_dir(&full) {
            Ok(reader) => reader,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => return Ok(None),
            Err(e) => return Err(Error::io(&full, &e)),
        };
        let mut listed = Vec::new();
        for entry in reader {
            listed.push(entry.map_err(|e| Error::io(&full, &e))?);
        }
        // A folder of thousands of fragments' commit files needs one stat per
        // file (for its size): done across threads when there are many.
        let mut entries: Vec<DirEntry> = if listed.len() >= PARALLEL_LISTING {
            use rayon::prelude::*;
            listed
                .par_iter()
                .filter_map(|e| describe_entry(e, with_size))
                .collect()
        } else {
            listed
                .iter()
                .filter_map(|e| describe_entry(e, with_size))
                .collect()
        };
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        // The folder lies inside the root (checked above), so do the real
        // folders (not links) in it: their files need no resolving later.
        // The kind comes with the listing, at no cost.
        let real_dirs: Vec<RelPath> = listed
            .iter()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| dir.join(e.file_name().to_str()?).ok())
            .collect();
        if !real_dirs.is_empty() {
            self.verified().extend(real_dirs);
        }
        Ok(Some(entries))
    }

    /// The filesystem path of `path`, after checking that whatever exists of
    /// it lies inside the root once symbolic links are followed.
    fn resolve(&self, path: &RelPath) -> Result<PathBuf> {
        Ok(self.resolve_with_metadata(path)?.0)
    }

    /// [`Self::resolve`], plus the entry's own metadata when it exists and
    /// is not a symbolic link (callers that need its kind or size then need
    /// no second system call).
    fn resolve_with_metadata(&self, path: &RelPath) -> Result<(PathBuf, Option<fs::Metadata>)> {
        if path.is_root() {
            return Ok((self.resolve_following_links(path)?, None));
        }
        self.verify_dir(&path.parent())?;
        let full = self.join(path);
        match fs::symlink_metadata(&full) {
            Ok(meta) if !meta.file_type().is_symlink() => Ok((full, Some(meta))),
            // A link: where it leads is checked the slow way.
            Ok(_) => Ok((self.resolve_following_links(path)?, None)),
            // Absent (or unreadable): its folder lies inside the root, so
            // nothing can be reached through it.
            Err(_) => Ok((full, None)),
        }
    }

    /// Checks once that the folder `dir` lies inside the root, remembering
    /// the answer while the folder exists.
    fn verify_dir(&self, dir: &RelPath) -> Result<()> {
        if dir.is_root() || self.verified().contains(dir) {
            return Ok(());
        }
        // A real folder (not a link) in a folder that lies inside the root
        // lies inside it too: one `lstat` instead of resolving every
        // component of the path.
        let parent = dir.parent();
        if (parent.is_root() || self.verified().contains(&parent))
            && fs::symlink_metadata(self.join(dir)).is_ok_and(|m| m.is_dir())
        {
            self.verified().insert(dir.clone());
            return Ok(());
        }
        let full = self.resolve_following_links(dir)?;
        if fs::metadata(&full).is_ok_and(|m| m.is_dir()) {
            self.verified().insert(dir.clone());
        }
        Ok(())
    }

    fn verified(&self) -> std::sync::MutexGuard<'_, HashSet<RelPath>> {
        // The set holds only confirmations; one left by a panicking thread
        // is still true.
        self.verified_dirs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Resolves every symbolic link on the way to `path` (its deepest
    /// existing ancestor when it does not exist) and checks the result lies
    /// inside the root.
    fn resolve_following_links(&self, path: &RelPath) -> Result<PathBuf> {
        let full = self.join(path);
        let root = match &self.canonical_root {
            Some(root) => root.clone(),
            None => match fs::canonicalize(&self.root) {
                Ok(root) => root,
                // No root yet: nothing below it exists, nothing can escape.
                Err(_) => return Ok(full),
            },
        };
        // Check the deepest existing ancestor (the path itself when present).
        let mut probe = full.clone();
        loop {
            match fs::canonicalize(&probe) {
                Ok(real) => {
                    if !real.starts_with(&root) {
                        return Err(self.escape_error(path, &real));
                    }
                    return Ok(full);
                }
                Err(_) => {
                    if !probe.pop() || probe.as_os_str().len() < self.root.as_os_str().len() {
                        return Ok(full);
                    }
                }
            }
        }
    }
}

/// What a file that is not a regular file is, for the error refusing it.
fn irregular_kind(meta: &fs::Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a folder");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_block_device() || t.is_char_device() {
            return Some("a device");
        }
    }
    Some("not a regular file")
}

/// Refuses (class corrupt, naming the file) anything but a regular file:
/// no TileDB file is a FIFO, device, socket or folder, and reading one may
/// block forever or never end.
fn refuse_irregular(full: &Path, meta: &fs::Metadata) -> Result<()> {
    match irregular_kind(meta) {
        None => Ok(()),
        Some(kind) => Err(Error::corrupt(
            0,
            "file",
            format!("is {kind}, not a regular file; no TileDB file is"),
        )
        .in_file(full)),
    }
}

/// Opens `full` for reading and returns it with its size, refusing anything
/// but a regular file. `seen` is the entry's `lstat` when the caller has it:
/// a device or FIFO is then refused before it is even opened (opening some
/// devices has effects). The open is non-blocking, so a FIFO (put there
/// after that look, or behind a link) cannot stall it waiting for a writer,
/// and never makes a terminal ours; the `fstat` of the open file is what is
/// judged, so nothing swapped in between the look and the open gets read.
/// Reads of a regular file ignore the non-blocking flag.
fn open_regular(full: &Path, seen: Option<&fs::Metadata>) -> Result<(fs::File, u64)> {
    if let Some(meta) = seen {
        refuse_irregular(full, meta)?;
    }
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let handle = options.open(full).map_err(|e| Error::io(full, &e))?;
    let meta = handle.metadata().map_err(|e| Error::io(full, &e))?;
    refuse_irregular(full, &meta)?;
    Ok((handle, meta.len()))
}

/// Listings at least this long look up their entries in parallel.
const PARALLEL_LISTING: usize = 256;

/// One listed entry's name, kind and size; `None` for names that are not
/// UTF-8, dangling links and entries gone since the listing.
fn describe_entry(entry: &fs::DirEntry, with_size: bool) -> Option<DirEntry> {
    let name = entry.file_name().into_string().ok()?;
    // The kind comes with the listing; only links are followed (for the
    // kind of what they lead to; reads check where that is), and only
    // files need their size looked up.
    let file_type = entry.file_type().ok()?;
    let meta = if file_type.is_symlink() {
        fs::metadata(entry.path())
    } else if file_type.is_dir() {
        return Some(DirEntry {
            name,
            kind: EntryKind::Dir,
            size: Some(0),
        });
    } else if !with_size {
        return Some(DirEntry {
            name,
            kind: EntryKind::File,
            size: None,
        });
    } else {
        entry.metadata()
    };
    let meta = meta.ok()?;
    Some(if meta.is_dir() {
        DirEntry {
            name,
            kind: EntryKind::Dir,
            size: Some(0),
        }
    } else {
        DirEntry {
            name,
            kind: EntryKind::File,
            size: Some(meta.len()),
        }
    })
}

impl Storage for LocalStorage {
    fn describe(&self, path: &RelPath) -> PathBuf {
        self.join(path)
    }

    fn list(&self, dir: &RelPath) -> Result<Option<Vec<DirEntry>>> {
        self.list_entries(dir, true)
    }

    fn list_names(&self, dir: &RelPath) -> Result<Option<Vec<DirEntry>>> {
        self.list_entries(dir, false)
    }

    fn kind(&self, path: &RelPath) -> Result<Option<EntryKind>> {
        let (full, meta) = self.resolve_with_metadata(path)?;
        bump(&self.counters.probes, 1);
        match meta.map_or_else(|| fs::metadata(&full), Ok) {
            Ok(meta) if meta.is_dir() => Ok(Some(EntryKind::Dir)),
            Ok(_) => Ok(Some(EntryKind::File)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => Ok(None),
            Err(e) => Err(Error::io(&full, &e)),
        }
    }

    fn size(&self, file: &RelPath) -> Result<u64> {
        let (full, meta) = self.resolve_with_metadata(file)?;
        bump(&self.counters.probes, 1);
        let meta = meta
            .map_or_else(|| fs::metadata(&full), Ok)
            .map_err(|e| Error::io(&full, &e))?;
        refuse_irregular(&full, &meta)?;
        Ok(meta.len())
    }

    fn read(&self, file: &RelPath) -> Result<Vec<u8>> {
        let (full, meta) = self.resolve_with_metadata(file)?;
        let (mut handle, size) = open_regular(&full, meta.as_ref())?;
        bump(&self.counters.files_opened, 1);
        // The size is the fstat of the open file; a file that grows while
        // it is read is read to its end, like `fs::read` did.
        let mut data = Vec::new();
        data.try_reserve_exact(usize::try_from(size).unwrap_or(usize::MAX))
            .map_err(|_| Error::Usage(format!("cannot hold {size} bytes in memory")))?;
        handle
            .read_to_end(&mut data)
            .map_err(|e| Error::io(&full, &e))?;
        bump(&self.counters.bytes_read, data.len() as u64);
        Ok(data)
    }

    fn read_range(&self, file: &RelPath, offset: u64, len: u64) -> Result<Vec<u8>> {
        let mut data = Vec::new();
        self.read_range_into(file, offset, len, &mut data)?;
        Ok(data)
    }

    fn read_range_into(
        &self,
        file: &RelPath,
        offset: u64,
        len: u64,
        buffer: &mut Vec<u8>,
    ) -> Result<()> {
        let (full, meta) = self.resolve_with_metadata(file)?;
        let (mut handle, size) = open_regular(&full, meta.as_ref())?;
        bump(&self.counters.files_opened, 1);
        let fits = match offset.checked_add(len) {
            Some(end) => end <= size,
            None => false,
        };
        if !fits {
            return Err(Error::corrupt(
                offset,
                "byte range",
                format!("{len} bytes at offset {offset} run past the end of a {size}-byte file"),
            )
            .in_file(&full));
        }
        let len_usize = usize::try_from(len)
            .map_err(|_| Error::Usage(format!("cannot hold {len} bytes in memory")))?;
        handle
            .seek(SeekFrom::Start(offset))
            .map_err(|e| Error::io(&full, &e))?;
        // Every byte is overwritten by the read. A buffer too small is
        // replaced by fresh zeroed memory (large ones come from the kernel
        // untouched, and are faulted in by the read itself, instead of being
        // written twice); otherwise only growth beyond its length is zeroed.
        if buffer.capacity() < len_usize {
            *buffer = vec![0u8; len_usize];
        } else {
            buffer.resize(len_usize, 0);
            buffer.truncate(len_usize);
        }
        handle
            .read_exact(buffer)
            .map_err(|e| Error::io(&full, &e))?;
        bump(&self.counters.bytes_read, len);
        Ok(())
    }

    fn create_dir(&self, dir: &RelPath) -> Result<()> {
        let full = self.resolve(dir)?;
        bump(&self.counters.changes, 1);
        // The folders about to be made, outermost last: each new entry is
        // flushed in its parent, so files committed inside survive with it.
        let mut created = Vec::new();
        if self.sync {
            let mut probe = full.as_path();
            while fs::symlink_metadata(probe).is_err() {
                created.push(probe.to_path_buf());
                match probe.parent() {
                    Some(parent) => probe = parent,
                    None => break,
                }
            }
        }
        fs::create_dir_all(&full).map_err(|e| Error::io(&full, &e))?;
        for new_dir in created.iter().rev() {
            self.sync_parent(new_dir)?;
        }
        Ok(())
    }

    fn write(&self, file: &RelPath, data: &[u8]) -> Result<()> {
        let full = self.resolve(file)?;
        let name = file
            .file_name()
            .ok_or_else(|| Error::Usage("cannot write the storage root as a file".into()))?;
        bump(&self.counters.files_written, 1);
        bump(&self.counters.bytes_written, data.len() as u64);
        let temp = self.write_temp(name, data)?;
        if let Err(e) = fs::rename(&temp, &full) {
            let _ = fs::remove_file(&temp);
            return Err(Error::io(&full, &e));
        }
        self.sync_parent(&full)
    }

    fn rename(&self, from: &RelPath, to: &RelPath) -> Result<()> {
        let source = self.resolve(from)?;
        let target = self.resolve(to)?;
        bump(&self.counters.changes, 1);
        self.verified().clear();
        fs::rename(&source, &target).map_err(|e| Error::io(&source, &e))?;
        self.sync_parent(&target)
    }

    fn remove_file(&self, file: &RelPath) -> Result<()> {
        let full = self.resolve(file)?;
        bump(&self.counters.changes, 1);
        fs::remove_file(&full).map_err(|e| Error::io(&full, &e))?;
        // Removals are ordered too (vacuum drops a commit marker before the
        // folder it commits): flushed before the next change.
        self.sync_parent(&full)
    }

    fn remove_dir(&self, dir: &RelPath) -> Result<()> {
        if dir.is_root() {
            return Err(Error::Usage("refusing to remove the storage root".into()));
        }
        let full = self.resolve(dir)?;
        bump(&self.counters.changes, 1);
        self.verified().clear();
        fs::remove_dir_all(&full).map_err(|e| Error::io(&full, &e))?;
        self.sync_parent(&full)
    }

    fn counters(&self) -> IoCounters {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        IoCounters {
            listings: get(&c.listings),
            probes: get(&c.probes),
            files_opened: get(&c.files_opened),
            bytes_read: get(&c.bytes_read),
            files_written: get(&c.files_written),
            bytes_written: get(&c.bytes_written),
            changes: get(&c.changes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relpath_accepts_plain_relative_paths() {
        let p = RelPath::parse("__commits/__1_1_0123456789abcdef0123456789abcdef_22.wrt").unwrap();
        assert_eq!(
            p.file_name(),
            Some("__1_1_0123456789abcdef0123456789abcdef_22.wrt")
        );
        assert_eq!(p.parent().as_str(), "__commits");
        assert_eq!(p.parent().parent(), RelPath::root());
        assert_eq!(
            RelPath::root()
                .join("a")
                .unwrap()
                .join("b")
                .unwrap()
                .as_str(),
            "a/b"
        );
    }

    #[test]
    fn relpath_refuses_escapes() {
        for text in [
            "",
            "/etc/passwd",
            "../../etc/passwd",
            "__fragments/../../x",
            "a//b",
            "a/./b",
            "a/",
            "file:///etc/passwd",
            "C:\\Windows",
            "a\\..\\b",
            "a\0b",
            "..",
        ] {
            let err = RelPath::parse(text).expect_err(text);
            assert_eq!(err.class(), crate::ErrorClass::Corrupt, "{text}");
        }
        assert!(RelPath::root().join("..").is_err());
        assert!(RelPath::root().join("a/b").is_err());
    }

    #[test]
    fn writes_replace_files_whole_through_a_root_temporary() {
        for sync in [true, false] {
            let tmp = tempfile::tempdir().unwrap();
            let storage = LocalStorage::new(tmp.path()).with_sync(sync);
            let file = RelPath::parse("__meta/__1_1_x").unwrap();
            storage.create_dir(&file.parent()).unwrap();
            storage.write(&file, b"first").unwrap();
            storage.write(&file, b"second, longer").unwrap();
            assert_eq!(storage.read(&file).unwrap(), b"second, longer");
            // Nothing is left beside the file, nor in the root.
            let names = |dir: &RelPath| -> Vec<String> {
                storage
                    .list(dir)
                    .unwrap()
                    .unwrap()
                    .into_iter()
                    .map(|e| e.name)
                    .collect()
            };
            assert_eq!(names(&file.parent()), ["__1_1_x"]);
            assert_eq!(names(&RelPath::root()), ["__meta"]);
            // A write that cannot be renamed into place (its folder is missing) leaves
            // neither the file nor its temporary behind.
            let orphan = RelPath::parse("__missing/__2_2_y").unwrap();
            assert!(storage.write(&orphan, b"lost").is_err());
            assert_eq!(names(&RelPath::root()), ["__meta"]);
        }
    }

    #[test]
    fn temporary_names_record_when_they_were_started() {
        assert_eq!(
            temp_file_started_ms(".a0.tdb.1795611130141_3f4e0eb345921e33d560d5a5d26a95a1.tmp"),
            Some(1795611130141)
        );
        assert_eq!(
            temp_file_started_ms(".__1_1_ab_22.wrt.17_0123456789abcdef.tmp"),
            Some(17)
        );
        for other in [
            "__1_1_ab.tmp",
            ".x.tmp",
            ".x.12_.tmp",
            ".x.ab_cd.tmp",
            "x.12_ab.tmp",
        ] {
            assert_eq!(temp_file_started_ms(other), None, "{other}");
        }
        assert!(is_temp_file_name(".x.tmp") && !is_temp_file_name("x.tdb"));
    }

    #[test]
    fn local_storage_reads_writes_and_counts() {
        let tmp = tempfile::tempdir().unwrap();
        let storage = LocalStorage::new(tmp.path());
        let dir = RelPath::parse("__commits").unwrap();
        let file = dir.join("x.wrt").unwrap();
        assert_eq!(storage.list(&dir).unwrap(), None);
        assert_eq!(storage.kind(&file).unwrap(), None);
        storage.create_dir(&dir).unwrap();
        storage.write(&file, b"0123456789").unwrap();
        assert_eq!(storage.kind(&file).unwrap(), Some(EntryKind::File));
        assert_eq!(storage.kind(&dir).unwrap(), Some(EntryKind::Dir));
        assert_eq!(storage.size(&file).unwrap(), 10);
        assert_eq!(storage.read(&file).unwrap(), b"0123456789");
        assert_eq!(storage.read_range(&file, 3, 4).unwrap(), b"3456");
        assert_eq!(storage.read_range(&file, 10, 0).unwrap(), b"");
        for (offset, len) in [(7, 4), (11, 0), (u64::MAX, 2), (0, u64::MAX)] {
            let err = storage.read_range(&file, offset, len).unwrap_err();
            assert_eq!(err.class(), crate::ErrorClass::Corrupt, "{offset}+{len}");
        }
        let listed = storage.list(&dir).unwrap().unwrap();
        assert_eq!(
            listed,
            [DirEntry {
                name: "x.wrt".into(),
                kind: EntryKind::File,
                size: Some(10)
            }]
        );
        let renamed = dir.join("y.wrt").unwrap();
        storage.rename(&file, &renamed).unwrap();
        storage.remove_file(&renamed).unwrap();
        storage.remove_dir(&dir).unwrap();
        assert!(storage.remove_dir(&RelPath::root()).is_err());
        let io = storage.counters();
        assert_eq!(io.listings, 2);
        // read, read_range ×2 that succeed, 4 that fail after opening.
        assert_eq!(io.files_opened, 7);
        assert_eq!(io.bytes_read, 14);
        assert_eq!(io.files_written, 1);
        assert_eq!(io.bytes_written, 10);
        assert_eq!(io.changes, 4);
    }

    /// Folders are confirmed once and remembered; that must never let a
    /// link through: not a linked file in a confirmed folder, and not a
    /// folder replaced by a link after it was confirmed.
    #[cfg(unix)]
    #[test]
    fn confirmed_folders_never_let_a_link_escape() {
        use std::os::unix::fs::symlink;
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), b"secret").unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let storage = LocalStorage::new(tmp.path());
        let dir = RelPath::parse("__fragments").unwrap();
        storage.create_dir(&dir).unwrap();
        storage.write(&dir.join("ok").unwrap(), b"ok").unwrap();
        // Confirms the folder.
        assert_eq!(storage.read(&dir.join("ok").unwrap()).unwrap(), b"ok");
        assert_eq!(storage.list(&dir).unwrap().unwrap().len(), 1);

        // A link inside the confirmed folder, leading out: refused by every call.
        symlink(
            outside.path().join("secret"),
            tmp.path().join("__fragments/out"),
        )
        .unwrap();
        let out = dir.join("out").unwrap();
        for err in [
            storage.read(&out).unwrap_err(),
            storage.read_range(&out, 0, 1).unwrap_err(),
            storage.size(&out).unwrap_err(),
            storage.kind(&out).unwrap_err(),
        ] {
            assert!(err.to_string().contains("outside"), "{err}");
        }
        // A link leading to a file inside the root is followed.
        symlink(
            tmp.path().join("__fragments/ok"),
            tmp.path().join("__fragments/in"),
        )
        .unwrap();
        assert_eq!(storage.read(&dir.join("in").unwrap()).unwrap(), b"ok");
        assert_eq!(storage.size(&dir.join("in").unwrap()).unwrap(), 2);

        // A folder inside the confirmed one is confirmed by its listing or
        // by its own lstat, but only when it is a real folder: a linked
        // folder leading out is refused, listed first or not.
        fs::create_dir(outside.path().join("frag")).unwrap();
        fs::write(outside.path().join("frag/meta"), b"outside").unwrap();
        symlink(
            outside.path().join("frag"),
            tmp.path().join("__fragments/linked"),
        )
        .unwrap();
        storage.create_dir(&dir.join("real").unwrap()).unwrap();
        storage
            .write(&RelPath::parse("__fragments/real/meta").unwrap(), b"in")
            .unwrap();
        let linked_file = RelPath::parse("__fragments/linked/meta").unwrap();
        let err = storage.read(&linked_file).unwrap_err();
        assert!(err.to_string().contains("outside"), "{err}");
        assert_eq!(storage.list(&dir).unwrap().unwrap().len(), 5);
        let err = storage.read(&linked_file).unwrap_err();
        assert!(err.to_string().contains("outside"), "{err}");
        assert!(storage.list(&dir.join("linked").unwrap()).is_err());
        assert_eq!(
            storage
                .read(&RelPath::parse("__fragments/real/meta").unwrap())
                .unwrap(),
            b"in"
        );
        storage.remove_dir(&dir.join("real").unwrap()).unwrap();
        fs::remove_file(tmp.path().join("__fragments/linked")).unwrap();

        // The confirmed folder removed and replaced by a link leading out.
        storage.remove_dir(&dir).unwrap();
        fs::create_dir(outside.path().join("fragments")).unwrap();
        fs::write(outside.path().join("fragments/ok"), b"outside").unwrap();
        symlink(
            outside.path().join("fragments"),
            tmp.path().join("__fragments"),
        )
        .unwrap();
        let err = storage.read(&dir.join("ok").unwrap()).unwrap_err();
        assert!(err.to_string().contains("outside"), "{err}");
        assert!(storage.list(&dir).is_err());
    }
}
