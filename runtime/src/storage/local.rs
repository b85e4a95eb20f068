//! [`LocalStorage`]: the storage interface on the local filesystem (atomic
//! writes through temporary files, confinement to the root, reads refused
//! for anything but regular files).

use std::collections::HashSet;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Cause, Error, Result};
use crate::storage::counters::{bump, Counters};
use crate::storage::temp::TEMP_SUFFIX;
use crate::storage::{DirEntry, EntryKind, IoCounters, RelPath, Storage};

mod stream;

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

impl LocalStorage {
    /// Storage rooted at the folder `root`: every path resolves inside it.
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
            // A relative root of one component (`arr`): its parent is the
            // working folder, which `Path::parent` gives as "".
            Some(parent) if parent.as_os_str().is_empty() => self.sync_dir(Path::new(".")),
            Some(parent) => self.sync_dir(parent),
            None => Ok(()),
        }
    }

    /// Writes `data` to a new temporary file at the storage root and
    /// returns its path. The root, because TileDB lists some folders whole
    /// (`__meta/`, `__fragment_meta/`, `__schema/`, `__group/`:
    /// `listed_whole` in spec/directory.toml) and fails on any name it does
    /// not expect there, while it ignores unknown files in the root of
    /// arrays and groups (tried with TileDB 2.30); a rename within one
    /// filesystem is atomic wherever the two folders are.
    fn write_temp(&self, final_name: &str, data: &[u8]) -> Result<PathBuf> {
        use std::io::Write;
        let temp = self.temp_path(final_name)?;
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

    /// A new temporary file's path at the storage root (see
    /// [`LocalStorage::write_temp`] for why there).
    fn temp_path(&self, final_name: &str) -> Result<PathBuf> {
        const TEMP_DIR: &str = "";
        debug_assert!(
            crate::format::generated::listed_whole_folder(TEMP_DIR, false).is_none()
                && crate::format::generated::listed_whole_folder(TEMP_DIR, true).is_none(),
            "temporary files must stay out of the folders TileDB lists whole"
        );
        let root = self.resolve(&RelPath::root())?;
        let (label, now) = crate::storage::label::new_label()?;
        // The final name makes a leftover recognizable; cut so that the
        // whole stays far below the usual 255-byte limit of a name.
        let shown = match final_name.char_indices().nth(120) {
            Some((cut, _)) => &final_name[..cut],
            None => final_name,
        };
        Ok(root.join(format!(".{shown}.{now}_{label}{TEMP_SUFFIX}")))
    }

    /// The folder every path is relative to.
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
            cause: format!(
                "resolves to {} outside {}",
                real.display(),
                self.root.display()
            )
            .into(),
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
    fn create_streamed<'s>(
        &'s self,
        file: &RelPath,
    ) -> Result<Option<Box<dyn crate::storage::FileWriter + 's>>> {
        Ok(Some(Box::new(stream::StreamedFile::create(self, file)?)))
    }

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
                Cause::Truncated {
                    needed: len,
                    available: size.saturating_sub(offset),
                },
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
        self.counters.snapshot()
    }
}
