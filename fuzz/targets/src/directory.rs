//! The target over whole array folders: files and symbolic links built from
//! the input, opened, read and checked through a storage that proves no
//! path leaves the folder.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use tiledb_runtime::directory::{ArrayDirectory, GroupDirectory};
use tiledb_runtime::storage::{DirEntry, EntryKind, IoCounters};
use tiledb_runtime::storage::{LocalStorage, RelPath, Storage};

use crate::MAX_FUZZ_TILE;

/// A storage that panics if any path it is asked for resolves (after
/// symbolic links) outside its root: the fuzzer's proof that no file of an
/// array can make us read another.
pub struct ConfinedStorage {
    inner: LocalStorage,
    root: PathBuf,
}

impl ConfinedStorage {
    /// A local storage at `root` that refuses to leave it.
    pub fn new(root: &Path) -> Self {
        ConfinedStorage {
            inner: LocalStorage::new(root),
            root: std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()),
        }
    }

    fn confirm(&self, path: &RelPath) {
        let full = self.inner.describe(path);
        if let Ok(real) = std::fs::canonicalize(&full) {
            assert!(
                real.starts_with(&self.root),
                "{path} resolved to {} outside {}",
                real.display(),
                self.root.display()
            );
        }
    }

    fn checked<T>(
        &self,
        path: &RelPath,
        result: tiledb_runtime::Result<T>,
    ) -> tiledb_runtime::Result<T> {
        if result.is_ok() {
            self.confirm(path);
        }
        result
    }
}

impl Storage for ConfinedStorage {
    fn describe(&self, path: &RelPath) -> PathBuf {
        self.inner.describe(path)
    }
    fn list(&self, dir: &RelPath) -> tiledb_runtime::Result<Option<Vec<DirEntry>>> {
        self.checked(dir, self.inner.list(dir))
    }
    fn kind(&self, path: &RelPath) -> tiledb_runtime::Result<Option<EntryKind>> {
        self.inner.kind(path)
    }
    fn size(&self, file: &RelPath) -> tiledb_runtime::Result<u64> {
        self.checked(file, self.inner.size(file))
    }
    fn read(&self, file: &RelPath) -> tiledb_runtime::Result<Vec<u8>> {
        self.checked(file, self.inner.read(file))
    }
    fn read_range(&self, file: &RelPath, offset: u64, len: u64) -> tiledb_runtime::Result<Vec<u8>> {
        self.checked(file, self.inner.read_range(file, offset, len))
    }
    fn create_dir(&self, _dir: &RelPath) -> tiledb_runtime::Result<()> {
        panic!("opening an array must not create folders")
    }
    fn write(&self, _file: &RelPath, _data: &[u8]) -> tiledb_runtime::Result<()> {
        panic!("opening an array must not write")
    }
    fn rename(&self, _from: &RelPath, _to: &RelPath) -> tiledb_runtime::Result<()> {
        panic!("opening an array must not rename")
    }
    fn remove_file(&self, _file: &RelPath) -> tiledb_runtime::Result<()> {
        panic!("opening an array must not remove files")
    }
    fn remove_dir(&self, _dir: &RelPath) -> tiledb_runtime::Result<()> {
        panic!("opening an array must not remove folders")
    }
    fn counters(&self) -> IoCounters {
        self.inner.counters()
    }
}

/// One entry of an `array_directory` input: `[path_len u8][path]
/// [data_len u16][data]`. Data starting with `@` makes a symbolic link to
/// the rest of the data instead of a file.
pub fn encode_entry(path: &str, data: &[u8], out: &mut Vec<u8>) {
    let path = &path.as_bytes()[..path.len().min(255)];
    let data = &data[..data.len().min(u16::MAX as usize)];
    out.push(path.len() as u8);
    out.extend_from_slice(path);
    out.extend_from_slice(&(data.len() as u16).to_le_bytes());
    out.extend_from_slice(data);
}

fn decode_entries(mut data: &[u8]) -> Vec<(String, &[u8])> {
    let mut entries = Vec::new();
    while let Some((&len, rest)) = data.split_first() {
        let Some((path, rest)) = rest.split_at_checked(len as usize) else {
            break;
        };
        let Some((size, rest)) = rest.split_first_chunk::<2>() else {
            break;
        };
        let size = u16::from_le_bytes(*size) as usize;
        let (body, rest) = rest.split_at(size.min(rest.len()));
        entries.push((String::from_utf8_lossy(path).into_owned(), body));
        data = rest;
        if entries.len() >= 64 {
            break;
        }
    }
    entries
}

static SCRATCH: AtomicU64 = AtomicU64::new(0);

/// Builds an array folder from the input in a scratch folder, then opens
/// it as an array and as a group, reads every cell (in a layout chosen by
/// the input) and checks it, through a storage that asserts nothing outside
/// the folder is ever resolved.
pub fn array_directory(data: &[u8]) {
    let scratch = std::env::temp_dir().join(format!(
        "tdb-fuzz-{}-{}",
        std::process::id(),
        SCRATCH.fetch_add(1, Ordering::Relaxed)
    ));
    let root = scratch.join("array");
    if std::fs::create_dir_all(&root).is_err() {
        return;
    }
    // A file beside the array that a path escaping the folder would reach.
    let _ = std::fs::write(scratch.join("outside"), b"outside the array");
    // Regular files first, links last, and nothing is ever created through
    // a link: the fuzzer names the links' targets, and the machine outside
    // the scratch folder must stay untouched.
    let entries = decode_entries(data);
    for link_pass in [false, true] {
        for (path, body) in &entries {
            let link = body.strip_prefix(b"@");
            if link.is_some() != link_pass {
                continue;
            }
            // Only well-formed relative paths are created; the hostile
            // ones are the links and the names written inside files.
            let Ok(rel) = RelPath::parse(path) else {
                continue;
            };
            let mut full = root.clone();
            let mut through_link = false;
            for component in rel.components() {
                if std::fs::symlink_metadata(&full).is_ok_and(|m| !m.is_dir()) {
                    through_link = true;
                    break;
                }
                full.push(component);
            }
            if through_link || std::fs::symlink_metadata(&full).is_ok() {
                continue;
            }
            let Some(parent) = full.parent() else {
                continue;
            };
            match link {
                None => {
                    let _ = std::fs::create_dir_all(parent);
                    let _ = std::fs::write(&full, body);
                }
                Some(target) => {
                    // Links go only into folders made in the first pass.
                    #[cfg(unix)]
                    if std::fs::symlink_metadata(parent).is_ok_and(|m| m.is_dir()) {
                        let target = String::from_utf8_lossy(target).into_owned();
                        let _ = std::os::unix::fs::symlink(target, &full);
                    }
                    #[cfg(not(unix))]
                    let _ = (target, parent);
                }
            }
        }
    }
    let storage = ConfinedStorage::new(&root);
    let _ = ArrayDirectory::open(&storage, 0, u64::MAX);
    let _ = ArrayDirectory::open(&storage, 5, 15);
    let _ = GroupDirectory::open(&storage, 0, u64::MAX);
    // The full read: open (schemas, footers, delete conditions), metadata,
    // and every cell of every attribute.
    let open = tiledb_runtime::snapshot::OpenOptions {
        timestamp_start: 0,
        timestamp_end: u64::MAX,
        key: None,
    };
    // One layout per input (from its length, so a saved input replays the
    // same way): each takes its own path through the reader (sorted,
    // streamed in stored order), and reading all four would quarter the
    // rate of executions.
    let layout = [
        tiledb_runtime::read::ResultOrder::RowMajor,
        tiledb_runtime::read::ResultOrder::Unordered,
        tiledb_runtime::read::ResultOrder::Global,
        tiledb_runtime::read::ResultOrder::ColMajor,
    ][data.len() % 4];
    if let Ok(snapshot) =
        tiledb_runtime::snapshot::Snapshot::open(Box::new(ConfinedStorage::new(&root)), open)
    {
        let _ = snapshot.metadata();
        let _ = tiledb_runtime::read::read(
            &snapshot,
            &tiledb_runtime::read::ReadQuery {
                layout,
                ..Default::default()
            },
        );
    }
    let options = tiledb_runtime::check::CheckOptions {
        max_tile_size: Some(MAX_FUZZ_TILE),
        ..Default::default()
    };
    let _ = tiledb_runtime::check::check_storage(std::sync::Arc::new(storage), &options);
    let _ = std::fs::remove_dir_all(&scratch);
}
