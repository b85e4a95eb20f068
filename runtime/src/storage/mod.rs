//! Where an array's files live: a small storage interface rooted at one
//! array (or group) folder, its local-filesystem implementation, and (with
//! the `object-store` feature) its object-store implementation
//! (`ObjectStorage`: S3, GCS, Azure, HTTP, memory), chosen by
//! [`open_url`] from a path or URL.
//!
//! Every path handed to storage is a [`RelPath`]: a path relative to the
//! folder, built from checked components. Names read from files (vacuum
//! lines, consolidated-commit lines, group members) become `RelPath`s through
//! [`RelPath::parse`], which refuses absolute paths and `..`; the local
//! implementation also refuses any path whose real location (after symbolic
//! links) lies outside the folder. So no file can make us touch another.

use std::fmt;
use std::path::PathBuf;

use crate::error::{Cause, Error, Result};

mod counters;
mod io_threads;
pub(crate) mod label;
mod local;
#[cfg(feature = "object-store")]
mod object;
#[cfg(feature = "object-store")]
mod object_cache;
#[cfg(all(test, feature = "object-store"))]
mod object_tests;
mod sub;
mod temp;
#[cfg(test)]
mod tests;
mod url;

pub use io_threads::on_io_threads;
pub use local::LocalStorage;
#[cfg(feature = "object-store")]
pub use object::{ObjectStorage, COALESCE_GAP, DEFAULT_MAX_IN_FLIGHT, DEFAULT_READ_AHEAD};
pub use sub::SubStorage;
pub use temp::{is_temp_file_name, temp_file_started_ms, TEMP_SUFFIX};
pub use url::{is_url, keys as config_keys, open_url, parse_config};

/// A path inside the storage root: zero or more components joined by `/`.
/// The empty path is the root itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RelPath(String);

/// The rule a path component breaks, if any.
fn check_component(component: &str) -> std::result::Result<(), &'static str> {
    if component.is_empty() {
        return Err("a path without empty components");
    }
    if component == "." || component == ".." {
        return Err("a path without `.` or `..` components");
    }
    // Bytes, not chars: none of these is part of a longer UTF-8 sequence.
    if component
        .bytes()
        .any(|b| matches!(b, b'/' | b'\\' | b':' | b'\0'))
    {
        return Err("a path whose components hold no `/`, `\\`, `:` or NUL");
    }
    Ok(())
}

/// A path (or component) that breaks the rule `expected`.
fn bad_path(name: &str, expected: &'static str) -> Error {
    let name = name.to_owned();
    Error::corrupt(0, "path", Cause::BadName { name, expected })
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
            return Err(Error::corrupt(0, "path", Cause::Empty { what: "the path" }));
        }
        if text.starts_with('/') {
            return Err(bad_path(text, "a relative path"));
        }
        for component in text.split('/') {
            check_component(component).map_err(|expected| bad_path(text, expected))?;
        }
        Ok(RelPath(text.to_owned()))
    }

    /// This path with one more component.
    pub fn join(&self, component: &str) -> Result<Self> {
        check_component(component).map_err(|expected| bad_path(component, expected))?;
        Ok(if self.0.is_empty() {
            RelPath(component.to_owned())
        } else {
            RelPath(format!("{}/{component}", self.0))
        })
    }

    /// The path, `/`-separated; empty for the root.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub(crate) fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The path's components, in order.
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
/// What a folder entry is.
pub enum EntryKind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
}

/// One entry of a folder listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Its name within the folder.
    pub name: String,
    /// File or folder.
    pub kind: EntryKind,
    /// Size in bytes, 0 for folders; `None` for a file when the listing
    /// did not look it up ([`Storage::list_names`]).
    pub size: Option<u64>,
}

impl DirEntry {
    /// It is a folder.
    pub fn is_dir(&self) -> bool {
        self.kind == EntryKind::Dir
    }
    /// It is a regular file.
    pub fn is_file(&self) -> bool {
        self.kind == EntryKind::File
    }
}

/// Where a folded listing ([`Storage::list_names_folded`]) cuts names.
#[derive(Debug, Clone, Copy)]
pub struct FoldAt {
    /// The ending most file names of the folder share, such as `.wrt`.
    pub suffix: &'static str,
    /// Whether a name that ends with `suffix` is a whole file name of the
    /// folder, not the start of a longer one.
    pub is_whole_name: fn(&str) -> bool,
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
    pub(crate) bytes_written: u64,
    /// Renames and removals.
    pub changes: u64,
}

/// A file being written part by part ([`create_file`]).
pub trait FileWriter: Send {
    /// Appends `bytes` to the file.
    fn append(&mut self, bytes: &[u8]) -> Result<()>;
    /// Appends `parts`, one after another: a file that can takes them in
    /// one vectored write each (no copy of them joined first).
    fn append_parts(&mut self, parts: &[&[u8]]) -> Result<()> {
        parts.iter().try_for_each(|part| self.append(part))
    }
    /// The bytes appended so far.
    fn len(&self) -> u64;
    /// Whether nothing was appended yet.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Makes the whole file visible under its name, atomically.
    fn finish(self: Box<Self>) -> Result<()>;
}

/// [`Storage::create_file`]'s default: the parts kept in memory, written
/// with [`Storage::write`] at the end.
struct BufferedFile<'s> {
    storage: &'s dyn Storage,
    file: RelPath,
    data: Vec<u8>,
}

impl FileWriter for BufferedFile<'_> {
    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        self.data.extend_from_slice(bytes);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.data.len() as u64
    }
    fn finish(self: Box<Self>) -> Result<()> {
        self.storage.write(&self.file, &self.data)
    }
}

/// A file of `storage` written part by part: streamed where the storage
/// can ([`Storage::create_streamed`]), else kept in memory and written whole
/// at [`FileWriter::finish`].
pub fn create_file<'s>(
    storage: &'s dyn Storage,
    file: &RelPath,
) -> Result<Box<dyn FileWriter + 's>> {
    if let Some(streamed) = storage.create_streamed(file)? {
        return Ok(streamed);
    }
    Ok(Box::new(BufferedFile {
        storage,
        file: file.clone(),
        data: Vec::new(),
    }))
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

    /// The size of the file, in bytes.
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

    /// Several ranges `(offset, len)` of one file into `buffers` (one per
    /// range, replacing their contents), each checked as
    /// [`Storage::read_range`] checks it. The default reads them one by
    /// one; an object store overrides it to merge nearby ranges and fetch
    /// them concurrently (a bounded number of requests in flight).
    fn read_ranges_into(
        &self,
        file: &RelPath,
        ranges: &[(u64, u64)],
        buffers: &mut [Vec<u8>],
    ) -> Result<()> {
        for (&(offset, len), buffer) in ranges.iter().zip(buffers.iter_mut()) {
            self.read_range_into(file, offset, len, buffer)?;
        }
        Ok(())
    }

    /// Hands `with` the bytes of several ranges `(offset, len)` of one file,
    /// one slice per range, each as [`Storage::read_ranges_into`] reads it.
    /// A storage that holds them in memory already (an object store's
    /// fetched and read-ahead ranges) hands its own bytes, not copies; the
    /// default reads them into buffers taken from `scratch`, given back to
    /// it after. Tiles decoded from the stored bytes are so copied once less.
    fn read_ranges_with(
        &self,
        file: &RelPath,
        ranges: &[(u64, u64)],
        scratch: &mut Vec<Vec<u8>>,
        with: &mut dyn FnMut(&[&[u8]]) -> Result<()>,
    ) -> Result<()> {
        let mut buffers: Vec<Vec<u8>> = (0..ranges.len())
            .map(|_| scratch.pop().unwrap_or_default())
            .collect();
        let handed = self
            .read_ranges_into(file, ranges, &mut buffers)
            .and_then(|()| {
                let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
                with(&slices)
            });
        scratch.extend(buffers);
        handed
    }

    /// Hands `with` the bytes [`Storage::read_range`] would return. A
    /// storage that holds them in memory already (an object store's fetched
    /// and read-ahead ranges) hands its own bytes, not a copy; the default
    /// reads them into `scratch` first (whose memory it may reuse). A tile
    /// decoded straight from its stored bytes is so copied once less.
    fn read_range_with(
        &self,
        file: &RelPath,
        offset: u64,
        len: u64,
        scratch: &mut Vec<u8>,
        with: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        self.read_range_into(file, offset, len, scratch)?;
        with(scratch)
    }

    /// [`Storage::read_ranges_into`] into new buffers.
    fn read_ranges(&self, file: &RelPath, ranges: &[(u64, u64)]) -> Result<Vec<Vec<u8>>> {
        let mut buffers = vec![Vec::new(); ranges.len()];
        self.read_ranges_into(file, ranges, &mut buffers)?;
        Ok(buffers)
    }

    /// How many independent reads are worth running at once: 0 (the
    /// default) when the computer's threads are the bound (a local disk),
    /// more for a store where each read waits on the network, so that
    /// callers loading many small files (fragment footers at open) run
    /// that many at once.
    fn concurrent_reads(&self) -> usize {
        0
    }

    /// Fetches, ahead of the reads that will ask for them, ranges
    /// `(offset, len)` of several files at once, so that those reads find
    /// them at hand: `files` is the read's plan, in the order it will ask.
    /// An object store fetches it a window (its read-ahead budget) at a
    /// time, the first now and the next when a read misses a planned range,
    /// each window's requests concurrent (adjacent ranges of one file
    /// merged, a bounded number in flight). Only a hint: the default does
    /// nothing, and errors are left for the reads to report.
    fn prefetch(&self, files: &[(RelPath, Vec<(u64, u64)>)]) {
        let _ = files;
    }

    /// Starts listing the folders `dirs` at once, ahead of the
    /// [`Storage::list`] calls that will ask for them one by one (opening
    /// an array lists its root, then each of its folders): an object store
    /// has every listing in flight together, so that opening waits about as
    /// long as the slowest one, not their sum. Only a hint: the default does
    /// nothing, errors are left for the listings to report, and a change
    /// made through the storage drops what was started.
    fn prefetch_listings(&self, dirs: &[RelPath]) {
        let _ = dirs;
    }

    /// [`Storage::list_names`] of a folder most of whose file names end
    /// with `fold.suffix` (`.wrt` in `__commits/`): an object store may ask
    /// its server to fold each name at the first occurrence of the suffix
    /// (an S3 listing's delimiter), which sends a name that ends there as a
    /// bare prefix of a few dozen bytes, without the size, date and tag of
    /// a full entry. Those names come without a size. A folded name stands
    /// for every key that starts with it, so one that `fold.is_whole_name`
    /// refuses (the start of a temporary file's name, say) makes the
    /// storage list the folder again unfolded; a key that continues past
    /// a whole name's suffix is seen as that name. The default lists
    /// unfolded.
    fn list_names_folded(&self, dir: &RelPath, fold: &FoldAt) -> Result<Option<Vec<DirEntry>>> {
        let _ = fold;
        self.list_names(dir)
    }

    /// Starts [`Storage::list_names_folded`] of `dir` ahead, as
    /// [`Storage::prefetch_listings`] starts plain listings (only a hint;
    /// the default does nothing).
    fn prefetch_folded_listing(&self, dir: &RelPath, fold: &FoldAt) {
        let _ = (dir, fold);
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

    /// A file written in parts, appended in order, that appears as
    /// [`Storage::write`] makes a file appear (whole or not at all) when
    /// [`FileWriter::finish`] is called; dropped unfinished, nothing
    /// appears. `None` (the default) when the storage has no such way:
    /// [`create_file`] then holds the parts in memory and writes them at
    /// the end. A local disk streams them to a temporary file, so that a
    /// large file needs no memory of its size.
    fn create_streamed<'s>(&'s self, file: &RelPath) -> Result<Option<Box<dyn FileWriter + 's>>> {
        let _ = file;
        Ok(None)
    }

    /// Moves `from` to `to`, replacing `to` atomically.
    fn rename(&self, from: &RelPath, to: &RelPath) -> Result<()>;

    /// Removes the file; an error if it does not exist.
    fn remove_file(&self, file: &RelPath) -> Result<()>;

    /// Removes a folder and everything in it.
    fn remove_dir(&self, dir: &RelPath) -> Result<()>;

    /// Work done so far.
    fn counters(&self) -> IoCounters;
}
