//! A local storage counting the bytes read from fragment data files, for
//! the tests that show a read leaves tiles undecoded.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::error::Result;
use tiledb_runtime::storage::{DirEntry, EntryKind, IoCounters, LocalStorage, RelPath, Storage};

/// A local storage counting the bytes read from fragment data files (not
/// from fragment metadata, schemas or commits).
pub struct CountingStorage {
    inner: LocalStorage,
    data_bytes: Arc<AtomicU64>,
}

impl CountingStorage {
    fn count(&self, file: &RelPath, bytes: u64) {
        let name = file.file_name().unwrap_or_default();
        let data = file.as_str().starts_with("__fragments/") && name != "__fragment_metadata.tdb";
        if data {
            self.data_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }
}

impl Storage for CountingStorage {
    fn describe(&self, path: &RelPath) -> PathBuf {
        self.inner.describe(path)
    }
    fn list(&self, dir: &RelPath) -> Result<Option<Vec<DirEntry>>> {
        self.inner.list(dir)
    }
    fn kind(&self, path: &RelPath) -> Result<Option<EntryKind>> {
        self.inner.kind(path)
    }
    fn size(&self, file: &RelPath) -> Result<u64> {
        self.inner.size(file)
    }
    fn read(&self, file: &RelPath) -> Result<Vec<u8>> {
        let bytes = self.inner.read(file)?;
        self.count(file, bytes.len() as u64);
        Ok(bytes)
    }
    fn read_range(&self, file: &RelPath, offset: u64, len: u64) -> Result<Vec<u8>> {
        let bytes = self.inner.read_range(file, offset, len)?;
        self.count(file, len);
        Ok(bytes)
    }
    fn read_range_into(
        &self,
        file: &RelPath,
        offset: u64,
        len: u64,
        buffer: &mut Vec<u8>,
    ) -> Result<()> {
        self.inner.read_range_into(file, offset, len, buffer)?;
        self.count(file, len);
        Ok(())
    }
    fn read_ranges_into(
        &self,
        file: &RelPath,
        ranges: &[(u64, u64)],
        buffers: &mut [Vec<u8>],
    ) -> Result<()> {
        self.inner.read_ranges_into(file, ranges, buffers)?;
        self.count(file, ranges.iter().map(|r| r.1).sum());
        Ok(())
    }
    fn create_dir(&self, dir: &RelPath) -> Result<()> {
        self.inner.create_dir(dir)
    }
    fn write(&self, file: &RelPath, data: &[u8]) -> Result<()> {
        self.inner.write(file, data)
    }
    fn rename(&self, from: &RelPath, to: &RelPath) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn remove_file(&self, file: &RelPath) -> Result<()> {
        self.inner.remove_file(file)
    }
    fn remove_dir(&self, dir: &RelPath) -> Result<()> {
        self.inner.remove_dir(dir)
    }
    fn counters(&self) -> IoCounters {
        self.inner.counters()
    }
}

/// The array at `path` opened over a counting storage, and its counter.
pub fn counted(path: &Path) -> (Array, Arc<AtomicU64>) {
    let data_bytes = Arc::new(AtomicU64::new(0));
    let storage = CountingStorage {
        inner: LocalStorage::new(path),
        data_bytes: data_bytes.clone(),
    };
    let array = Array::open(Box::new(storage), OpenOptions::default()).unwrap();
    (array, data_bytes)
}
