//! A write that stops part way (the storage fails after N changes, for every
//! N short of the whole write) leaves the array as it was: it opens, reads
//! the previous state, and lists no half fragment. The commit marker is the
//! last change a fragment write makes.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::read::{ReadQuery, ResultOrder};
use tiledb_runtime::storage::{DirEntry, EntryKind, IoCounters};
use tiledb_runtime::storage::{LocalStorage, RelPath, Storage};
use tiledb_runtime::write::{create_array, write_fragment, Column, FragmentInput};
use tiledb_runtime::{Error, Result};

/// Local storage that refuses every change after the first `budget`.
struct FailingStorage {
    inner: LocalStorage,
    budget: u64,
    used: AtomicU64,
}

impl FailingStorage {
    fn spend(&self) -> Result<()> {
        if self.used.fetch_add(1, Ordering::SeqCst) >= self.budget {
            return Err(Error::Usage("simulated crash".into()));
        }
        Ok(())
    }
}

impl Storage for FailingStorage {
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
        self.spend()?;
        self.inner.remove_dir(dir)
    }
    fn counters(&self) -> IoCounters {
        self.inner.counters()
    }
}

const SCHEMA: &str = r#"
type = "sparse"
capacity = 2
dims = [{ name = "d", type = "INT32", domain = [0, 99], tile = 10 }]
attrs = [
  { name = "a", type = "INT32" },
  { name = "s", type = "STRING_UTF8", cell_val_num = "var", nullable = true },
]
"#;

fn input(timestamp: u64, coords: &[i32], values: &[i32]) -> FragmentInput {
    let strings: Vec<String> = values.iter().map(|v| format!("v{v}")).collect();
    let valid: Vec<bool> = values.iter().map(|v| v % 2 == 0).collect();
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

/// Every cell of the array as `(d, a)`, in global order.
fn cells(root: &std::path::Path) -> Vec<(i32, i32)> {
    let array = Array::open_path(root, OpenOptions::default()).expect("the array opens");
    let query = ReadQuery {
        layout: ResultOrder::Global,
        ..ReadQuery::default()
    };
    let result = array.read(&query).expect("the array reads");
    let col = |name: &str| {
        result
            .dimensions
            .iter()
            .chain(&result.attributes)
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no column {name}"))
    };
    let (d, a) = (col("d"), col("a"));
    (0..d.len())
        .map(|i| {
            let v = |c: &tiledb_runtime::read::Column| {
                i32::from_le_bytes(c.cell(i).0.try_into().expect("4 bytes"))
            };
            (v(d), v(a))
        })
        .collect()
}

#[test]
fn a_write_stopped_at_any_point_leaves_the_previous_state() {
    let table: toml::Value = toml::from_str(SCHEMA).unwrap();
    let stored = tiledb_conformance::recipe::stored_schema(&table).unwrap();

    // How many changes a whole second write makes.
    let full = tempfile::tempdir().unwrap();
    let counting = FailingStorage {
        inner: LocalStorage::new(full.path()),
        budget: u64::MAX,
        used: AtomicU64::new(0),
    };
    let schema = create_array(&counting, &stored, 1, None).unwrap();
    write_fragment(&counting, &schema, &input(10, &[5, 1, 9], &[50, 10, 90])).unwrap();
    let before_second = counting.used.load(Ordering::SeqCst);
    write_fragment(&counting, &schema, &input(20, &[2, 7], &[20, 70])).unwrap();
    let second_write_changes = counting.used.load(Ordering::SeqCst) - before_second;
    assert!(second_write_changes >= 5, "{second_write_changes}");
    assert_eq!(
        cells(full.path()),
        vec![(1, 10), (2, 20), (5, 50), (7, 70), (9, 90)]
    );

    for budget in 0..second_write_changes {
        let dir = tempfile::tempdir().unwrap();
        let local = LocalStorage::new(dir.path());
        let schema = create_array(&local, &stored, 1, None).unwrap();
        write_fragment(&local, &schema, &input(10, &[5, 1, 9], &[50, 10, 90])).unwrap();
        let failing = FailingStorage {
            inner: LocalStorage::new(dir.path()),
            budget,
            used: AtomicU64::new(0),
        };
        let err = write_fragment(&failing, &schema, &input(20, &[2, 7], &[20, 70]))
            .expect_err("the write must fail");
        assert!(err.to_string().contains("simulated crash"), "{err}");
        // The half-written fragment folder may exist, but nothing commits it.
        let fragments = std::fs::read_dir(dir.path().join("__fragments"))
            .unwrap()
            .count();
        let commits = std::fs::read_dir(dir.path().join("__commits"))
            .unwrap()
            .count();
        assert_eq!(
            commits, 1,
            "budget {budget}: a commit marker of a half write"
        );
        assert!(fragments >= 1);
        let array = Array::open_path(dir.path(), OpenOptions::default()).unwrap();
        assert_eq!(array.fragments().len(), 1, "budget {budget}");
        assert_eq!(
            cells(dir.path()),
            vec![(1, 10), (5, 50), (9, 90)],
            "budget {budget}"
        );
    }
}
