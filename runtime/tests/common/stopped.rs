//! Work stopped part way, as a killed process leaves it: local storage that
//! refuses every change after the first `budget`, and the small sparse
//! array (an INT32 `d`, an INT32 `a` and a nullable var-sized `s`) the
//! write and vacuum tests stop. Included by path
//! (`#[path = "common/stopped.rs"]`).

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use tiledb_runtime::filter::Datatype;
use tiledb_runtime::storage::{DirEntry, EntryKind, IoCounters, LocalStorage, RelPath, Storage};
use tiledb_runtime::write::{Column, FragmentInput};
use tiledb_runtime::{Error, Result};

/// The array's schema as a conformance recipe's `[schema]`.
pub const SCHEMA: &str = r#"
type = "sparse"
capacity = 2
dims = [{ name = "d", type = "INT32", domain = [0, 99], tile = 10 }]
attrs = [
  { name = "a", type = "INT32" },
  { name = "s", type = "STRING_UTF8", cell_val_num = "var", nullable = true },
]
"#;

/// One fragment of the array: `a` the values, `s` their text (`v<a>`),
/// valid where `valid(a)`.
pub fn input(
    timestamp: u64,
    coords: &[i32],
    values: &[i32],
    valid: impl Fn(i32) -> bool,
) -> FragmentInput {
    let strings: Vec<String> = values.iter().map(|v| format!("v{v}")).collect();
    let valid: Vec<bool> = values.iter().map(|&v| valid(v)).collect();
    FragmentInput {
        timestamp,
        dims: vec![Column::from_values("d", coords)],
        attrs: vec![
            Column::from_values("a", values),
            Column::from_strings("s", Datatype::StringUtf8, &strings).with_validity(&valid),
        ],
        ..Default::default()
    }
}

/// Local storage that refuses every change after the first `budget` with
/// a "simulated crash" error. With `cut_removals`, the folder removal that
/// runs out removes the first half of its files first (a recursive removal
/// cut short); otherwise a refused change changes nothing.
pub struct StoppingStorage {
    pub inner: LocalStorage,
    pub budget: u64,
    pub used: AtomicU64,
    pub cut_removals: bool,
}

impl StoppingStorage {
    /// Over the folder `root`, stopping after `budget` changes.
    pub fn new(root: &std::path::Path, budget: u64, cut_removals: bool) -> Self {
        StoppingStorage {
            inner: LocalStorage::new(root),
            budget,
            used: AtomicU64::new(0),
            cut_removals,
        }
    }

    /// The changes asked of it so far, refused ones included.
    pub fn changes(&self) -> u64 {
        self.used.load(Ordering::SeqCst)
    }

    fn spend(&self) -> Result<()> {
        if self.used.fetch_add(1, Ordering::SeqCst) >= self.budget {
            return Err(Error::Usage("simulated crash".into()));
        }
        Ok(())
    }
}

impl Storage for StoppingStorage {
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
        self.inner.read(file)
    }
    fn read_range(&self, file: &RelPath, offset: u64, len: u64) -> Result<Vec<u8>> {
        self.inner.read_range(file, offset, len)
    }
    fn create_dir(&self, dir: &RelPath) -> Result<()> {
        self.spend()?;
        self.inner.create_dir(dir)
    }
    fn write(&self, file: &RelPath, data: &[u8]) -> Result<()> {
        self.spend()?;
        self.inner.write(file, data)
    }
    fn rename(&self, from: &RelPath, to: &RelPath) -> Result<()> {
        self.spend()?;
        self.inner.rename(from, to)
    }
    fn remove_file(&self, file: &RelPath) -> Result<()> {
        self.spend()?;
        self.inner.remove_file(file)
    }
    fn remove_dir(&self, dir: &RelPath) -> Result<()> {
        let spent = self.spend();
        if spent.is_err() && self.cut_removals {
            // Killed while removing the folder: half of its files are gone.
            let mut files: Vec<PathBuf> = std::fs::read_dir(self.inner.describe(dir))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            files.sort();
            for f in &files[..files.len() / 2] {
                std::fs::remove_file(f).unwrap();
            }
        }
        spent?;
        self.inner.remove_dir(dir)
    }
    fn counters(&self) -> IoCounters {
        self.inner.counters()
    }
}
