//! [`ObjectStorage`] on the in-memory store: the interface's promises kept
//! without folders (listing, kinds, sizes, ranges, removal, confinement),
//! the cache forgetting what changes, and calls from rayon threads and
//! from inside a tokio runtime.

use crate::error::ErrorClass;
use crate::storage::{open_url, EntryKind, RelPath, Storage};

fn path(text: &str) -> RelPath {
    RelPath::parse(text).unwrap()
}

fn names(storage: &dyn Storage, dir: &str) -> Option<Vec<String>> {
    let dir = if dir.is_empty() {
        RelPath::root()
    } else {
        path(dir)
    };
    storage
        .list(&dir)
        .unwrap()
        .map(|entries| entries.into_iter().map(|e| e.name).collect())
}

#[test]
fn folders_exist_through_their_files_and_listings_are_sorted() {
    let storage = open_url("memory://folders/root", &[]).unwrap();
    assert_eq!(storage.kind(&RelPath::root()).unwrap(), None);
    assert_eq!(names(storage.as_ref(), ""), None);
    storage.create_dir(&path("empty")).unwrap();
    assert_eq!(
        storage.kind(&path("empty")).unwrap(),
        None,
        "a folder is its files"
    );
    for file in ["b/2", "a", "b/1", "c/d/e"] {
        storage.write(&path(file), file.as_bytes()).unwrap();
    }
    assert_eq!(names(storage.as_ref(), "").unwrap(), ["a", "b", "c"]);
    assert_eq!(names(storage.as_ref(), "b").unwrap(), ["1", "2"]);
    assert_eq!(names(storage.as_ref(), "c").unwrap(), ["d"]);
    assert_eq!(storage.kind(&path("b")).unwrap(), Some(EntryKind::Dir));
    assert_eq!(storage.kind(&path("b/1")).unwrap(), Some(EntryKind::File));
    assert_eq!(storage.size(&path("c/d/e")).unwrap(), 5);
    let listed = storage.list(&RelPath::root()).unwrap().unwrap();
    assert_eq!((listed[0].kind, listed[0].size), (EntryKind::File, Some(1)));
    assert_eq!((listed[1].kind, listed[1].size), (EntryKind::Dir, Some(0)));
    // A neighbour whose name extends the root's is not below it.
    let neighbour = open_url("memory://folders/rootx", &[]).unwrap();
    neighbour.write(&path("z"), b"z").unwrap();
    assert_eq!(names(storage.as_ref(), "").unwrap(), ["a", "b", "c"]);
    storage.remove_dir(&path("b")).unwrap();
    assert_eq!(names(storage.as_ref(), "").unwrap(), ["a", "c"]);
    assert_eq!(names(storage.as_ref(), "b"), None);
    assert!(storage.remove_dir(&RelPath::root()).is_err());
    assert!(storage.remove_file(&path("b/1")).is_err());
    assert_eq!(neighbour.read(&path("z")).unwrap(), b"z");
}

#[test]
fn ranges_are_checked_batched_and_forgotten_on_change() {
    let storage = open_url("memory://ranges/root", &[]).unwrap();
    let data: Vec<u8> = (0..=255).collect();
    storage.write(&path("f"), &data).unwrap();
    assert_eq!(storage.size(&path("f")).unwrap(), 256);
    assert_eq!(storage.read_range(&path("f"), 10, 3).unwrap(), [10, 11, 12]);
    let batch = storage
        .read_ranges(&path("f"), &[(200, 2), (0, 1), (7, 0)])
        .unwrap();
    assert_eq!(batch, [vec![200, 201], vec![0], vec![]]);
    let past = storage.read_range(&path("f"), 250, 10).unwrap_err();
    assert_eq!(past.class(), ErrorClass::Corrupt);
    assert!(
        past.to_string().contains("memory://ranges/root/f"),
        "{past}"
    );
    assert!(storage
        .read_ranges(&path("f"), &[(0, 1), (300, 1)])
        .is_err());
    // Replaced: the cached size and bytes are forgotten.
    storage.write(&path("f"), b"new").unwrap();
    assert_eq!(storage.size(&path("f")).unwrap(), 3);
    assert_eq!(storage.read(&path("f")).unwrap(), b"new");
    assert_eq!(storage.read_range(&path("f"), 1, 2).unwrap(), b"ew");
    let missing = storage.read(&path("g")).unwrap_err();
    assert_eq!(missing.class(), ErrorClass::Io);
}

/// `read_ranges_with` hands each range's bytes as `read_ranges` reads them
/// and refuses a range past the end, on an object store (its own bytes)
/// and on a local folder (the default, which lends and takes back buffers).
#[test]
fn batched_ranges_are_handed_as_read() {
    let tmp = tempfile::tempdir().unwrap();
    let local = tmp.path().to_str().unwrap().to_owned();
    for url in ["memory://handed/root", local.as_str()] {
        let storage = open_url(url, &[]).unwrap();
        let data: Vec<u8> = (0..=255).collect();
        storage.write(&path("f"), &data).unwrap();
        let ranges = [(200, 2), (0, 1), (7, 0), (250, 6)];
        let expected = storage.read_ranges(&path("f"), &ranges).unwrap();
        let mut scratch = vec![vec![9u8; 4]];
        let mut handed = Vec::new();
        storage
            .read_ranges_with(&path("f"), &ranges, &mut scratch, &mut |slices| {
                handed = slices.iter().map(|s| s.to_vec()).collect();
                Ok(())
            })
            .unwrap();
        assert_eq!(handed, expected, "{url}");
        let object_store = url.starts_with("memory://");
        // The default borrows the one spare buffer, makes the other three
        // and gives all four back; an object store lends none.
        let lent_back = if object_store { 1 } else { ranges.len() };
        assert_eq!(
            scratch.len(),
            lent_back,
            "{url}: the lent buffers come back"
        );
        if object_store {
            // Its own bytes: asked again while the first bytes are still
            // held, the cached range is handed at the same address (a copy
            // would have to live elsewhere).
            let (mut outer, mut inner) = (None, None);
            let mut inner_scratch = Vec::new();
            storage
                .read_ranges_with(&path("f"), &ranges[..1], &mut scratch, &mut |held| {
                    outer = Some(held[0].as_ptr());
                    storage.read_ranges_with(
                        &path("f"),
                        &ranges[..1],
                        &mut inner_scratch,
                        &mut |again| {
                            inner = Some(again[0].as_ptr());
                            Ok(())
                        },
                    )
                })
                .unwrap();
            assert!(outer.is_some(), "{url}: no bytes handed");
            assert_eq!(outer, inner, "{url}: a copy was handed");
        }
        let past = storage
            .read_ranges_with(&path("f"), &[(0, 1), (250, 10)], &mut scratch, &mut |_| {
                panic!("{url}: bytes handed for a range past the end")
            })
            .unwrap_err();
        assert_eq!(past.class(), ErrorClass::Corrupt, "{url}: {past}");
        // An error of `with` is the call's.
        let refused = storage
            .read_ranges_with(&path("f"), &[(0, 1)], &mut scratch, &mut |_| {
                Err(crate::error::Error::Usage("refused".into()))
            })
            .unwrap_err();
        assert!(refused.to_string().contains("refused"), "{url}: {refused}");
    }
}

#[test]
fn urls_are_confined_and_schemes_checked() {
    for bad in [
        "memory://x/a/../b",
        "memory://x/./a",
        "s3://bucket/a/%2e%2e/b",
        "ftp://host/a",
    ] {
        assert!(open_url(bad, &[]).is_err(), "{bad}");
    }
    let typo = [("aws_regoin".to_owned(), "x".to_owned())];
    let err = open_url("s3://bucket/a", &typo).err().unwrap();
    assert!(err.to_string().contains("aws_regoin"), "{err}");
    let http = open_url("http://127.0.0.1:9/a", &[]).unwrap();
    assert!(http.write(&path("f"), b"x").is_err(), "HTTP is read-only");
}

#[test]
fn calls_work_from_rayon_threads_and_inside_a_tokio_runtime() {
    use rayon::prelude::*;
    let storage = open_url("memory://threads/root", &[]).unwrap();
    (0..64u32).into_par_iter().for_each(|i| {
        storage
            .write(&path(&format!("f{i}")), &i.to_le_bytes())
            .unwrap();
    });
    let sum: u32 = (0..64u32)
        .into_par_iter()
        .map(|i| {
            let bytes = storage.read(&path(&format!("f{i}"))).unwrap();
            u32::from_le_bytes(bytes.try_into().unwrap())
        })
        .sum();
    assert_eq!(sum, (0..64u32).sum::<u32>());
    let callers_runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let read = callers_runtime.block_on(async { storage.read(&path("f3")).unwrap() });
    assert_eq!(read, 3u32.to_le_bytes());
}

/// A missing object is `io::ErrorKind::NotFound` however it is asked for,
/// also when it was listed (its size known) and then removed by another
/// handle: the readers start again on exactly this error when a concurrent
/// vacuum removes a file they listed (`snapshot::vanished`).
#[test]
fn missing_objects_are_not_found_errors() {
    let storage = open_url("memory://missing/root", &[]).unwrap();
    let other = open_url("memory://missing/root", &[]).unwrap();
    let data = vec![7u8; 200_000];
    storage.write(&path("d/listed"), &data).unwrap();
    storage.write(&path("d/kept"), b"kept").unwrap();
    // Listed: the sizes are known, nothing of the files is fetched yet.
    let listed = storage.list(&path("d")).unwrap().unwrap();
    assert_eq!(listed.len(), 2);
    other.remove_file(&path("d/listed")).unwrap();
    let is_not_found = |e: crate::Error| {
        // What `snapshot::vanished` takes for a file a vacuum removed.
        let kind = std::io::ErrorKind::NotFound;
        assert!(
            matches!(&e, crate::Error::Io { kind: k, .. } if *k == kind),
            "{e:?}"
        );
        assert!(e.to_string().contains("memory://missing/root/"), "{e}");
    };
    is_not_found(storage.read_range(&path("d/listed"), 0, 10).unwrap_err());
    is_not_found(
        storage
            .read_ranges(&path("d/listed"), &[(0, 10), (150_000, 10)])
            .unwrap_err(),
    );
    is_not_found(storage.read(&path("d/listed")).unwrap_err());
    for never in ["d/never", "never/there"] {
        is_not_found(storage.size(&path(never)).unwrap_err());
        is_not_found(storage.read(&path(never)).unwrap_err());
        is_not_found(storage.read_range(&path(never), 0, 1).unwrap_err());
        is_not_found(storage.remove_file(&path(never)).unwrap_err());
        assert_eq!(storage.kind(&path(never)).unwrap(), None);
    }
    assert_eq!(storage.read(&path("d/kept")).unwrap(), b"kept");
}

#[test]
fn listings_started_ahead_answer_as_listings_and_changes_drop_them() {
    let storage = open_url("memory://ahead/root", &[]).unwrap();
    for file in ["a/1", "a/2", "b/1", "c"] {
        storage.write(&path(file), file.as_bytes()).unwrap();
    }
    let before = storage.counters().listings;
    storage.prefetch_listings(&[path("a"), path("b"), path("missing")]);
    assert_eq!(storage.counters().listings, before + 3, "counted when sent");
    assert_eq!(names(storage.as_ref(), "a").unwrap(), ["1", "2"]);
    assert_eq!(names(storage.as_ref(), "missing"), None);
    // Taken once: `a` again, and `c`, are asked of the store.
    assert_eq!(names(storage.as_ref(), "a").unwrap(), ["1", "2"]);
    assert_eq!(storage.counters().listings, before + 4);
    // A write after the listing started makes it stale: dropped.
    storage.write(&path("b/2"), b"new").unwrap();
    assert_eq!(names(storage.as_ref(), "b").unwrap(), ["1", "2"]);
    // Through a folder of it (a label array inside an array).
    let sub = crate::storage::SubStorage::new(storage.as_ref(), path("a"));
    sub.prefetch_listings(&[RelPath::root()]);
    assert_eq!(names(&sub, "").unwrap(), ["1", "2"]);
}

#[test]
fn a_planned_read_is_fetched_a_window_at_a_time_never_whole() {
    let config = [("read_ahead".to_owned(), "4096".to_owned())];
    let storage = open_url("memory://ahead/root", &config).unwrap();
    let data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
    storage.write(&path("f"), &data).unwrap();
    // Twenty ranges of 1,000 bytes, the whole file: five windows of four.
    let ranges: Vec<(u64, u64)> = (0..20).map(|i| (i * 1000, 1000)).collect();
    let opened = || storage.counters().files_opened;
    let before = opened();
    storage.prefetch(&[(path("f"), ranges.clone())]);
    assert_eq!(opened() - before, 1, "the first window, one request");
    for (i, &(offset, len)) in ranges.iter().enumerate() {
        let got = storage.read_range(&path("f"), offset, len).unwrap();
        assert_eq!(got, &data[offset as usize..(offset + len) as usize]);
        if i == 0 {
            // Reaching the last window started starts the next, no more.
            assert_eq!(opened() - before, 2);
        }
    }
    assert_eq!(opened() - before, 5, "one request a window, none again");
    // A range outside the plan is fetched as before.
    assert_eq!(storage.read_range(&path("f"), 5, 3).unwrap(), &data[5..8]);
}
