//! [`SubStorage`]: the folder `prefix` of another storage as a storage of
//! its own — how an array reaches the arrays of its dimension labels
//! (`__labels/l<i>`), and a check the members of a group, through the one
//! storage they were opened on (its counters, cache, connections and any
//! wrapper around it included). The only way to reach a subfolder: borrowed
//! (`&dyn Storage`) or shared (`Arc<dyn Storage>`, for a snapshot).

use std::ops::Deref;
use std::path::PathBuf;

use crate::error::Result;

use super::{DirEntry, EntryKind, FoldAt, IoCounters, RelPath, Storage};

/// The folder `prefix` of `inner` (a `&dyn Storage` or an
/// `Arc<dyn Storage>`); every path is relative to it.
pub struct SubStorage<S> {
    inner: S,
    prefix: RelPath,
}

impl<S> SubStorage<S> {
    /// The folder `prefix` (confined like any path) of `inner`.
    pub fn new(inner: S, prefix: RelPath) -> SubStorage<S> {
        SubStorage { inner, prefix }
    }

    fn full(&self, path: &RelPath) -> Result<RelPath> {
        let mut out = self.prefix.clone();
        for c in path.components() {
            out = out.join(c)?;
        }
        Ok(out)
    }
}

impl<'s, S> Storage for SubStorage<S>
where
    S: Deref<Target = dyn Storage + 's> + Send + Sync,
{
    fn describe(&self, path: &RelPath) -> PathBuf {
        match self.full(path) {
            Ok(full) => self.inner.describe(&full),
            Err(_) => self.inner.describe(&self.prefix).join(path.as_str()),
        }
    }

    fn list(&self, dir: &RelPath) -> Result<Option<Vec<DirEntry>>> {
        self.inner.list(&self.full(dir)?)
    }

    fn list_names(&self, dir: &RelPath) -> Result<Option<Vec<DirEntry>>> {
        self.inner.list_names(&self.full(dir)?)
    }

    fn kind(&self, path: &RelPath) -> Result<Option<EntryKind>> {
        self.inner.kind(&self.full(path)?)
    }

    fn size(&self, file: &RelPath) -> Result<u64> {
        self.inner.size(&self.full(file)?)
    }

    fn read(&self, file: &RelPath) -> Result<Vec<u8>> {
        self.inner.read(&self.full(file)?)
    }

    fn read_range(&self, file: &RelPath, offset: u64, len: u64) -> Result<Vec<u8>> {
        self.inner.read_range(&self.full(file)?, offset, len)
    }

    fn read_range_into(
        &self,
        file: &RelPath,
        offset: u64,
        len: u64,
        buffer: &mut Vec<u8>,
    ) -> Result<()> {
        self.inner
            .read_range_into(&self.full(file)?, offset, len, buffer)
    }

    fn read_range_with(
        &self,
        file: &RelPath,
        offset: u64,
        len: u64,
        scratch: &mut Vec<u8>,
        with: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        self.inner
            .read_range_with(&self.full(file)?, offset, len, scratch, with)
    }

    fn read_ranges_with(
        &self,
        file: &RelPath,
        ranges: &[(u64, u64)],
        scratch: &mut Vec<Vec<u8>>,
        with: &mut dyn FnMut(&[&[u8]]) -> Result<()>,
    ) -> Result<()> {
        self.inner
            .read_ranges_with(&self.full(file)?, ranges, scratch, with)
    }

    fn read_ranges_into(
        &self,
        file: &RelPath,
        ranges: &[(u64, u64)],
        buffers: &mut [Vec<u8>],
    ) -> Result<()> {
        self.inner
            .read_ranges_into(&self.full(file)?, ranges, buffers)
    }

    fn concurrent_reads(&self) -> usize {
        self.inner.concurrent_reads()
    }

    fn prefetch(&self, files: &[(RelPath, Vec<(u64, u64)>)]) {
        let full: Vec<(RelPath, Vec<(u64, u64)>)> = files
            .iter()
            .filter_map(|(file, ranges)| Some((self.full(file).ok()?, ranges.clone())))
            .collect();
        self.inner.prefetch(&full);
    }

    fn prefetch_listings(&self, dirs: &[RelPath]) {
        let full: Vec<RelPath> = dirs.iter().filter_map(|d| self.full(d).ok()).collect();
        self.inner.prefetch_listings(&full);
    }

    fn list_names_folded(&self, dir: &RelPath, fold: &FoldAt) -> Result<Option<Vec<DirEntry>>> {
        self.inner.list_names_folded(&self.full(dir)?, fold)
    }

    fn prefetch_folded_listing(&self, dir: &RelPath, fold: &FoldAt) {
        if let Ok(full) = self.full(dir) {
            self.inner.prefetch_folded_listing(&full, fold);
        }
    }

    fn create_dir(&self, dir: &RelPath) -> Result<()> {
        self.inner.create_dir(&self.full(dir)?)
    }

    fn write(&self, file: &RelPath, data: &[u8]) -> Result<()> {
        self.inner.write(&self.full(file)?, data)
    }

    fn rename(&self, from: &RelPath, to: &RelPath) -> Result<()> {
        self.inner.rename(&self.full(from)?, &self.full(to)?)
    }

    fn remove_file(&self, file: &RelPath) -> Result<()> {
        self.inner.remove_file(&self.full(file)?)
    }

    fn remove_dir(&self, dir: &RelPath) -> Result<()> {
        self.inner.remove_dir(&self.full(dir)?)
    }

    fn counters(&self) -> IoCounters {
        self.inner.counters()
    }
}
