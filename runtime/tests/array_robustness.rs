//! Hostile input never panics: names and text commit files from arbitrary
//! bytes, and the round trip of names we generate.

use proptest::prelude::*;
use tiledb_runtime::directory::text_files::{
    parse_consolidated_commits, parse_ignore_file, parse_vacuum_file,
};
use tiledb_runtime::directory::{Extension, TimestampedName};
use tiledb_runtime::storage::RelPath;

fn name_like() -> impl Strategy<Value = String> {
    // Mostly near-valid names, to reach deep into the parser.
    prop_oneof![
        any::<String>(),
        "__[0-9]{1,21}_[0-9]{1,21}_[0-9a-f]{30,34}(_[0-9]{1,11})?(\\.(ok|wrt|vac|con|ign|del|upd|meta|x))?",
        "__[0-9a-f]{32}_[0-9]{1,21}",
        "[_.a-z0-9/]{0,40}",
    ]
}

proptest! {
    #[test]
    fn parsing_names_never_panics(text in name_like()) {
        if let Ok(name) = TimestampedName::parse(&text) {
            prop_assert_eq!(name.as_str(), text.as_str());
            prop_assert!(name.timestamp_start() <= name.timestamp_end());
            prop_assert_eq!(TimestampedName::parse(name.as_str()).unwrap(), name.clone());
            prop_assert!(text.starts_with(name.stem()));
        }
    }

    #[test]
    fn built_names_parse_back(
        t1 in any::<u64>(),
        span in any::<u64>(),
        label in "[0-9a-f]{32}",
        version in proptest::option::of(any::<u32>()),
        ext in proptest::option::of(0usize..Extension::ALL.len()),
    ) {
        let t2 = t1.saturating_add(span);
        let ext = ext.map(|i| Extension::ALL[i]);
        let built = TimestampedName::from_parts(t1, t2, &label, version, ext);
        let parsed = TimestampedName::parse(built.as_str()).unwrap();
        prop_assert_eq!(parsed.timestamp_range(), (t1, t2));
        prop_assert_eq!(parsed.label(), label.as_str());
        prop_assert_eq!(parsed.version(), version);
        prop_assert_eq!(parsed.extension(), ext);
        prop_assert_eq!(parsed, built);
    }

    #[test]
    fn checked_paths_have_no_escape(text in "[./a-z_:\\\\]{0,30}") {
        if let Ok(path) = RelPath::parse(&text) {
            prop_assert!(!text.starts_with('/'));
            for component in path.components() {
                prop_assert!(component != ".." && component != "." && !component.is_empty());
                prop_assert!(!component.contains(['\\', ':']));
            }
        }
    }

    #[test]
    fn text_files_never_panic(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_vacuum_file(&data, &["__fragments", "__meta"]);
        let _ = parse_ignore_file(&data);
        if let Ok(entries) = parse_consolidated_commits(&data) {
            for entry in entries {
                if let Some(tile) = entry.embedded {
                    prop_assert!(tile.offset + tile.size <= data.len() as u64);
                }
            }
        }
    }

    #[test]
    fn consolidated_commits_with_random_tiles(
        tiles in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..5),
        cut in any::<prop::sample::Index>(),
    ) {
        let label = "0123456789abcdef0123456789abcdef";
        let paths: Vec<RelPath> = (0..tiles.len())
            .map(|i| RelPath::parse(&format!("__commits/__{i}_{i}_{label}_22.del")).unwrap())
            .collect();
        let data = tiledb_runtime::directory::text_files::encode_consolidated_commits(
            paths.iter().zip(&tiles).map(|(p, t)| (p, Some(t.as_slice()))),
        )
        .unwrap();
        let entries = parse_consolidated_commits(&data).unwrap();
        prop_assert_eq!(entries.len(), tiles.len());
        for (entry, tile) in entries.iter().zip(&tiles) {
            let at = entry.embedded.unwrap();
            prop_assert_eq!(&data[at.offset as usize..(at.offset + at.size) as usize], tile.as_slice());
        }
        // Any truncation inside the last tile is an error, never a panic.
        let last = entries.last().unwrap().embedded.unwrap();
        let end = data.len();
        let cut_at = (last.offset as usize).saturating_sub(8) + cut.index(end - (last.offset as usize).saturating_sub(8));
        if cut_at < end {
            prop_assert!(parse_consolidated_commits(&data[..cut_at]).is_err());
        }
    }
}

fn entry_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "__[0-9]{1,3}_[0-9]{1,3}_[0-9a-f]{32}(_[0-9]{1,2})?(\\.(ok|wrt|vac|con|ign|del|upd|meta|tmp))?",
        "__[0-9a-f]{32}_[0-9]{1,3}",
        "__(schema|commits|fragments|meta|fragment_meta|labels|array_schema\\.tdb|enumerations)",
        "[a-z_.]{1,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn opening_random_folders_never_panics(
        entries in proptest::collection::vec(
            (
                prop_oneof![Just(""), Just("__commits/"), Just("__fragments/"), Just("__meta/"), Just("__schema/")],
                entry_name(),
                any::<bool>(),
                proptest::collection::vec(any::<u8>(), 0..24),
            ),
            0..12,
        ),
        start in 0u64..20,
        span in 0u64..20,
    ) {
        let tmp = tempfile::tempdir().unwrap();
        for (dir, name, is_dir, data) in &entries {
            let path = tmp.path().join(dir).join(name);
            if let Some(parent) = path.parent() {
                // A file may already sit where a folder is wanted: skip it.
                if std::fs::create_dir_all(parent).is_err() {
                    continue;
                }
            }
            let _ = if *is_dir {
                std::fs::create_dir_all(&path)
            } else {
                std::fs::write(&path, data)
            };
        }
        let storage = tiledb_runtime::storage::LocalStorage::new(tmp.path());
        if let Ok(dir) = tiledb_runtime::directory::ArrayDirectory::open(&storage, start, start + span) {
            for rule in [
                tiledb_runtime::directory::TimeTravelRule::FullContainment,
                tiledb_runtime::directory::TimeTravelRule::SparseRead,
            ] {
                for f in dir.fragments(rule) {
                    prop_assert!(f.name.overlaps(start, start + span));
                }
            }
            let _ = dir.latest_schema_for_read();
        }
        let _ = tiledb_runtime::directory::GroupDirectory::open(&storage, start, start + span);
        let _ = tiledb_runtime::directory::object_type(&storage);
    }
}
