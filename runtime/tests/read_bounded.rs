//! No input is read whole before it is judged: a file grown far past the
//! data it holds (here to 10 GiB, sparse, so it costs no disk) is answered
//! at once, reading only what its headers and footer measure, and a FIFO in
//! place of a file is refused at once instead of blocking the reader.
//!
//! The proof is the storage's byte count: every test asserts that opening,
//! reading or checking read at most a few MiB, whatever the file's size.
//! Each operation runs on its own thread with a deadline, so a hang fails
//! the test instead of hanging it.

mod common;

use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::check::{check_storage, CheckOptions, Report};
use tiledb_runtime::read::ReadQuery;
use tiledb_runtime::storage::{DirEntry, EntryKind, IoCounters};
use tiledb_runtime::storage::{LocalStorage, RelPath, Storage};
use tiledb_runtime::{Error, ErrorClass};

/// What a grown file becomes: 10 GiB, a hole after the real bytes.
const GROWN: u64 = 10 << 30;

/// The most any operation here may read.
const BYTES_BOUND: u64 = 4 << 20;

/// The deadline of one operation (generous: the proof is the byte count).
const DEADLINE: Duration = Duration::from_secs(60);

fn corpus(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/corpus/tiledb-2.30")
        .join(case)
        .join("array")
}

/// A copy of corpus `case` in a temporary folder.
fn copy_case(case: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("array");
    common::copy_dir(&corpus(case), &root);
    (dir, root)
}

/// The only file in `dir` (relative to `root`) whose name satisfies `pick`.
fn find(root: &Path, dir: &str, pick: impl Fn(&str) -> bool) -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
        .unwrap()
        .flatten()
        .filter(|e| pick(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    found.sort();
    assert!(!found.is_empty(), "nothing in {dir}");
    found.remove(0)
}

/// The first fragment folder's file `name`.
fn fragment_file(root: &Path, name: &str) -> PathBuf {
    find(root, "__fragments", |_| true).join(name)
}

fn grow(file: &Path) {
    let f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    f.set_len(GROWN).unwrap();
}

#[allow(
    unsafe_code,
    reason = "the mkfifo FFI call; its block states its SAFETY"
)]
fn make_fifo(file: &Path) {
    std::fs::remove_file(file).unwrap();
    let c = std::ffi::CString::new(file.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// Local storage whose counters outlive the array that owns it (an open
/// that fails drops the array's storage).
#[derive(Clone)]
struct Shared(Arc<LocalStorage>);

impl Storage for Shared {
    fn describe(&self, path: &RelPath) -> PathBuf {
        self.0.describe(path)
    }
    fn list(&self, dir: &RelPath) -> tiledb_runtime::Result<Option<Vec<DirEntry>>> {
        self.0.list(dir)
    }
    fn list_names(&self, dir: &RelPath) -> tiledb_runtime::Result<Option<Vec<DirEntry>>> {
        self.0.list_names(dir)
    }
    fn kind(&self, path: &RelPath) -> tiledb_runtime::Result<Option<EntryKind>> {
        self.0.kind(path)
    }
    fn size(&self, file: &RelPath) -> tiledb_runtime::Result<u64> {
        self.0.size(file)
    }
    fn read(&self, file: &RelPath) -> tiledb_runtime::Result<Vec<u8>> {
        self.0.read(file)
    }
    fn read_range(&self, file: &RelPath, offset: u64, len: u64) -> tiledb_runtime::Result<Vec<u8>> {
        self.0.read_range(file, offset, len)
    }
    fn read_range_into(
        &self,
        file: &RelPath,
        offset: u64,
        len: u64,
        buffer: &mut Vec<u8>,
    ) -> tiledb_runtime::Result<()> {
        self.0.read_range_into(file, offset, len, buffer)
    }
    fn create_dir(&self, dir: &RelPath) -> tiledb_runtime::Result<()> {
        self.0.create_dir(dir)
    }
    fn write(&self, file: &RelPath, data: &[u8]) -> tiledb_runtime::Result<()> {
        self.0.write(file, data)
    }
    fn rename(&self, from: &RelPath, to: &RelPath) -> tiledb_runtime::Result<()> {
        self.0.rename(from, to)
    }
    fn remove_file(&self, file: &RelPath) -> tiledb_runtime::Result<()> {
        self.0.remove_file(file)
    }
    fn remove_dir(&self, dir: &RelPath) -> tiledb_runtime::Result<()> {
        self.0.remove_dir(dir)
    }
    fn counters(&self) -> IoCounters {
        self.0.counters()
    }
}

/// Runs `op` on its own thread; a hang past the deadline fails the test.
fn within_deadline<T: Send + 'static>(what: &str, op: impl FnOnce() -> T + Send + 'static) -> T {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(op());
    });
    receive
        .recv_timeout(DEADLINE)
        .unwrap_or_else(|_| panic!("{what}: no answer within {DEADLINE:?}"))
}

/// Opens the array at `root`, reads it all and its metadata: the cell
/// count or the error, and the bytes read.
fn open_and_read(root: &Path) -> (Result<usize, Error>, IoCounters) {
    let storage = Shared(Arc::new(LocalStorage::new(root)));
    let counted = storage.clone();
    let what = format!("reading {}", root.display());
    within_deadline(&what, move || {
        let result = Array::open(Box::new(storage), OpenOptions::default()).and_then(|array| {
            array.metadata()?;
            Ok(array.read(&ReadQuery::default())?.cell_count())
        });
        (result, counted.counters())
    })
}

/// `tdb check` of the array at `root`, and the bytes it read.
fn check(root: &Path) -> (Report, IoCounters) {
    let root = root.to_path_buf();
    within_deadline(&format!("checking {}", root.display()), move || {
        let storage = Arc::new(LocalStorage::new(&root));
        let report = check_storage(storage.clone(), &CheckOptions::default());
        (report, storage.counters())
    })
}

fn assert_bounded(io: &IoCounters, what: &str) {
    assert!(
        io.bytes_read <= BYTES_BOUND,
        "{what} read {} bytes, more than {BYTES_BOUND}",
        io.bytes_read
    );
}

/// The cells of the pristine copy of `case`.
fn pristine_cells(case: &str) -> usize {
    let (_dir, root) = copy_case(case);
    open_and_read(&root).0.unwrap()
}

fn has_finding(report: &Report, file_part: &str, message_part: &str) -> bool {
    report
        .findings
        .iter()
        .any(|f| f.file.contains(file_part) && f.to_string().contains(message_part))
}

/// A schema file grown past its tile: the reader reads the tile its header
/// measures and ignores the rest, as TileDB does; the check reports the
/// bytes after the tile without reading them.
#[test]
fn grown_schema_is_read_by_its_header() {
    let case = "sparse.basic.int32";
    let expected = pristine_cells(case);
    let (_dir, root) = copy_case(case);
    grow(&find(&root, "__schema", |n| n.starts_with("__")));
    let (result, io) = open_and_read(&root);
    assert_eq!(result.unwrap(), expected);
    assert_bounded(&io, "reading with a grown schema");

    let (report, io) = check(&root);
    assert!(
        has_finding(&report, "__schema/", "byte(s) after the generic tile"),
        "{:#?}",
        report.findings
    );
    assert_bounded(&io, "checking a grown schema");
}

/// Fragment metadata grown with zeros: its footer length (the last 8
/// bytes) is then 0, which is corrupt; found from the end of the file.
#[test]
fn grown_fragment_metadata_is_judged_from_its_end() {
    let (_dir, root) = copy_case("sparse.basic.int32");
    grow(&fragment_file(&root, "__fragment_metadata.tdb"));
    let (result, io) = open_and_read(&root);
    let err = result.unwrap_err();
    assert_eq!(err.class(), ErrorClass::Corrupt, "{err}");
    assert!(err.to_string().contains("__fragment_metadata.tdb"), "{err}");
    assert_bounded(&io, "opening with grown fragment metadata");

    let (report, io) = check(&root);
    assert!(
        has_finding(&report, "__fragment_metadata.tdb", ""),
        "{:#?}",
        report.findings
    );
    assert_bounded(&io, "checking grown fragment metadata");
}

/// A data file grown past its tiles: the reader reads the tiles the
/// metadata names; the check reads them too, tile by tile, and reports the
/// size against the footer's without reading the excess.
#[test]
fn grown_data_file_is_read_by_its_tiles() {
    let case = "sparse.basic.int32";
    let expected = pristine_cells(case);
    let (_dir, root) = copy_case(case);
    grow(&fragment_file(&root, "a0.tdb"));
    let (result, io) = open_and_read(&root);
    assert_eq!(result.unwrap(), expected);
    assert_bounded(&io, "reading with a grown data file");

    let (report, io) = check(&root);
    assert!(
        has_finding(&report, "a0.tdb", &format!("{GROWN} bytes")),
        "{:#?}",
        report.findings
    );
    assert!(report.tiles_checked > 0);
    assert_bounded(&io, "checking a grown data file");
}

/// Consolidated fragment metadata (`__fragment_meta/*.meta`) grown past
/// its tile: read by its header.
#[test]
fn grown_consolidated_fragment_metadata_is_read_by_its_header() {
    let case = "sparse.consolidate.fragment_meta";
    let expected = pristine_cells(case);
    let (_dir, root) = copy_case(case);
    grow(&find(&root, "__fragment_meta", |n| n.ends_with(".meta")));
    let (result, io) = open_and_read(&root);
    assert_eq!(result.unwrap(), expected);
    assert_bounded(&io, "reading with grown consolidated fragment metadata");

    let (report, io) = check(&root);
    assert!(
        has_finding(
            &report,
            "__fragment_meta/",
            "byte(s) after the generic tile"
        ),
        "{:#?}",
        report.findings
    );
    assert_bounded(&io, "checking grown consolidated fragment metadata");
}

/// An array metadata file grown past its tile: read by its header.
#[test]
fn grown_metadata_file_is_read_by_its_header() {
    let case = "array.metadata.basic";
    let (_dir, pristine) = copy_case(case);
    let before = Array::open_path(&pristine, OpenOptions::default())
        .unwrap()
        .metadata()
        .unwrap();
    let (_dir, root) = copy_case(case);
    grow(&find(&root, "__meta", |n| n.starts_with("__")));
    let storage = Shared(Arc::new(LocalStorage::new(&root)));
    let counted = storage.clone();
    let after = within_deadline("reading grown metadata", move || {
        Array::open(Box::new(storage), OpenOptions::default()).and_then(|array| array.metadata())
    })
    .unwrap();
    assert_eq!(format!("{before:?}"), format!("{after:?}"));
    assert_bounded(&counted.counters(), "reading grown metadata");

    let (report, io) = check(&root);
    assert!(
        has_finding(&report, "__meta/", "byte(s) after the generic tile"),
        "{:#?}",
        report.findings
    );
    assert_bounded(&io, "checking grown metadata");
}

/// A FIFO in place of the fragment metadata: refused at once, naming the
/// file, by the reader and by the check (which finishes).
#[test]
fn fifo_fragment_metadata_is_refused_at_once() {
    let (_dir, root) = copy_case("sparse.basic.int32");
    make_fifo(&fragment_file(&root, "__fragment_metadata.tdb"));
    let err = open_and_read(&root).0.unwrap_err();
    assert_eq!(err.class(), ErrorClass::Corrupt, "{err}");
    let text = err.to_string();
    assert!(
        text.contains("__fragment_metadata.tdb") && text.contains("FIFO"),
        "{text}"
    );

    let (report, _) = check(&root);
    assert!(
        has_finding(&report, "__fragment_metadata.tdb", "FIFO"),
        "{:#?}",
        report.findings
    );
}

/// A FIFO in place of a data file: the read errors at once; the check
/// reports it and finishes.
#[test]
fn fifo_data_file_is_refused_at_once() {
    let (_dir, root) = copy_case("sparse.basic.int32");
    make_fifo(&fragment_file(&root, "a0.tdb"));
    let err = open_and_read(&root).0.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("a0.tdb") && text.contains("FIFO"), "{text}");

    let (report, _) = check(&root);
    assert!(has_finding(&report, "a0.tdb", ""), "{:#?}", report.findings);
}

/// A FIFO in place of the schema, and a device and a folder in place of a
/// file: the storage refuses each at once, naming it.
#[test]
fn storage_refuses_what_is_not_a_regular_file() {
    let (_dir, root) = copy_case("sparse.basic.int32");
    let schema = find(&root, "__schema", |n| n.starts_with("__"));
    make_fifo(&schema);
    let err = open_and_read(&root).0.unwrap_err();
    assert!(err.to_string().contains("FIFO"), "{err}");

    let storage = LocalStorage::new(&root);
    let rel = |p: &Path| RelPath::parse(p.strip_prefix(&root).unwrap().to_str().unwrap()).unwrap();
    let fifo = rel(&schema);
    let folder = RelPath::parse("__schema").unwrap();
    for (path, kind) in [(&fifo, "FIFO"), (&folder, "folder")] {
        let errors = within_deadline("storage calls", {
            let root = root.clone();
            let path = path.clone();
            move || {
                let storage = LocalStorage::new(&root);
                [
                    storage.read(&path).unwrap_err(),
                    storage.read_range(&path, 0, 1).unwrap_err(),
                    storage.size(&path).unwrap_err(),
                ]
            }
        });
        for err in errors {
            assert_eq!(err.class(), ErrorClass::Corrupt, "{err}");
            assert!(err.to_string().contains(kind), "{err}");
            assert!(err.to_string().contains(path.as_str()), "{err}");
        }
    }
    // A device behind a link inside the array (it resolves outside, so it
    // is refused either way; the error must come at once).
    std::os::unix::fs::symlink("/dev/zero", root.join("__schema/zero")).unwrap();
    let zero = RelPath::parse("__schema/zero").unwrap();
    assert!(storage.read(&zero).is_err());
}

/// A delete commit grown past its tile: the condition is read by its
/// header, and the same cells are deleted.
#[test]
fn grown_delete_commit_is_read_by_its_header() {
    let case = "sparse.delete.condition";
    let expected = pristine_cells(case);
    let (_dir, root) = copy_case(case);
    grow(&find(&root, "__commits", |n| n.ends_with(".del")));
    let (result, io) = open_and_read(&root);
    assert_eq!(result.unwrap(), expected);
    assert_bounded(&io, "reading with a grown delete commit");

    let (report, io) = check(&root);
    assert!(
        has_finding(&report, "__commits/", "byte(s) after the generic tile"),
        "{:#?}",
        report.findings
    );
    assert_bounded(&io, "checking a grown delete commit");
}
