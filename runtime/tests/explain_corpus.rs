//! `tdb explain` over the frozen corpus: every file of a kind the explainer
//! knows (schemas, enumerations, metadata, group details, delete and update
//! commits, consolidated fragment metadata) is explained with 100% of its
//! bytes and of its payload's bytes attributed to spec fields, the value the
//! generated walker builds equals what the binrw reader (the loaders' parser)
//! reads, and the span tree's key fields equal what the loaders give.
//! A file the loader refuses (the negative cases) the explainer refuses too.

use std::path::{Path, PathBuf};

use tiledb_runtime::explain::walkers::*;
use tiledb_runtime::explain::{coverage, explain_file, FileKind, Span, Walker};
use tiledb_runtime::format::generated as stored;
use tiledb_runtime::metadata::group_contents::parse_group_details;
use tiledb_runtime::metadata::parse_metadata_tile;
use tiledb_runtime::tile::generic::{read_generic_tile, GenericTile};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/corpus")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The key of an encrypted case, from its case file (`key = "…"` on the encryption line).
fn key_of(path: &Path) -> Option<[u8; 32]> {
    let case = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .find(|c| c.contains("encrypted"))?;
    let case_file = corpus().join(format!("../cases/{case}.toml"));
    let text = std::fs::read_to_string(case_file).ok()?;
    let line = text.lines().find(|l| l.starts_with("encryption"))?;
    let key = line.split("key = \"").nth(1)?.split('"').next()?;
    key.as_bytes().try_into().ok()
}

/// Every span named `name` under `span`, in order.
fn find<'a>(span: &'a Span, name: &str, out: &mut Vec<&'a Span>) {
    if span.name == name {
        out.push(span);
    }
    for child in &span.children {
        find(child, name, out);
    }
}

fn values(span: &Span, name: &str) -> Vec<String> {
    let mut found = Vec::new();
    find(span, name, &mut found);
    found
        .iter()
        .map(|s| s.value.clone().unwrap_or_default())
        .collect()
}

/// The generated walker's value equals the binrw reader's, and the span
/// tree's key fields equal what the loaders give.
fn compare_with_loader(kind: FileKind, tile: &GenericTile, root: &Span, path: &Path) {
    let payload = &tile.payload;
    let mut w = Walker::new(payload, "payload", "payload");
    let what = path.display();
    match kind {
        FileKind::ArraySchema => {
            let read: stored::ArraySchema = tile.parse((), "ArraySchema").unwrap();
            assert_eq!(walk_array_schema(&mut w).unwrap(), read, "{what}");
            assert_eq!(
                values(root, "ArraySchema.version"),
                vec![read.version.to_string()],
                "{what}"
            );
            let names: Vec<String> = read
                .attributes
                .iter()
                .map(|a| format!("{:?}", String::from_utf8_lossy(&a.name)))
                .collect();
            assert_eq!(values(root, "Attribute.name"), names, "{what}");
        }
        FileKind::Metadata => {
            let read = parse_metadata_tile(tile).unwrap();
            assert_eq!(walk_metadata(&mut w).unwrap(), read, "{what}");
            let keys: Vec<String> = read
                .entries
                .iter()
                .map(|e| format!("{:?}", String::from_utf8_lossy(&e.key)))
                .collect();
            let explained: Vec<String> = values(root, "MetadataEntry.key");
            assert_eq!(explained.len(), keys.len(), "{what}");
            for (explained, key) in explained.iter().zip(&keys) {
                // Keys that are not printable text are shown in hex only.
                assert!(
                    explained.is_empty() || explained == key,
                    "{what}: {explained} vs {key}"
                );
            }
        }
        FileKind::GroupDetails => {
            let read = parse_group_details(tile).unwrap();
            assert_eq!(walk_group_details(&mut w).unwrap(), read, "{what}");
        }
        FileKind::Enumeration => {
            let read: stored::Enumeration = tile.parse((), "Enumeration").unwrap();
            assert_eq!(walk_enumeration(&mut w).unwrap(), read, "{what}");
        }
        FileKind::DeleteCommit => {
            let read: stored::DeleteCommit = tile.parse((), "DeleteCommit").unwrap();
            assert_eq!(walk_delete_commit(&mut w).unwrap(), read, "{what}");
        }
        FileKind::UpdateCommit => {
            let read: stored::UpdateCommit = tile.parse((), "UpdateCommit").unwrap();
            assert_eq!(walk_update_commit(&mut w).unwrap(), read, "{what}");
        }
        FileKind::ConsolidatedFragmentMetadata => {
            let read: stored::ConsolidatedFragmentMetadata =
                tile.parse((), "ConsolidatedFragmentMetadata").unwrap();
            assert_eq!(
                walk_consolidated_fragment_metadata(&mut w).unwrap(),
                read,
                "{what}"
            );
        }
    }
}

/// Whether the loaders' parser reads the payload whole.
fn loader_accepts(kind: FileKind, tile: &GenericTile) -> bool {
    match kind {
        FileKind::ArraySchema => tile.parse::<stored::ArraySchema>((), "").is_ok(),
        FileKind::Metadata => parse_metadata_tile(tile).is_ok(),
        FileKind::GroupDetails => parse_group_details(tile).is_ok(),
        FileKind::Enumeration => tile.parse::<stored::Enumeration>((), "").is_ok(),
        FileKind::DeleteCommit => tile.parse::<stored::DeleteCommit>((), "").is_ok(),
        FileKind::UpdateCommit => tile.parse::<stored::UpdateCommit>((), "").is_ok(),
        FileKind::ConsolidatedFragmentMetadata => tile
            .parse::<stored::ConsolidatedFragmentMetadata>((), "")
            .is_ok(),
    }
}

#[test]
fn every_generic_tile_file_of_the_corpus_is_explained_whole() {
    let mut all = Vec::new();
    files(&corpus(), &mut all);
    all.sort();
    let (mut explained, mut refused) = (0, 0);
    let mut kinds = std::collections::BTreeSet::new();
    for path in all {
        let Some(kind) = FileKind::of(&path) else {
            continue;
        };
        let bytes = std::fs::read(&path).unwrap();
        let key = key_of(&path);
        let loaded = read_generic_tile(&bytes, 0, key.as_ref());
        let result = explain_file(&path, &bytes, key.as_ref());
        let tile = match loaded {
            Ok(tile) if tile.end == bytes.len() as u64 && loader_accepts(kind, &tile) => tile,
            _ => {
                // The loader refuses it (or finds bytes after the tile): the
                // explainer must not claim it whole.
                let whole = result
                    .as_ref()
                    .is_ok_and(|e| coverage(&e.root, "file", e.file_size).covered == e.file_size);
                assert!(
                    !whole,
                    "{}: refused by the loader, explained whole",
                    path.display()
                );
                refused += 1;
                continue;
            }
        };
        let e = result.unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        let file = coverage(&e.root, "file", e.file_size);
        assert!(file.unexplained.is_empty(), "{}: {file:?}", path.display());
        assert_eq!(file.covered, bytes.len() as u64, "{}", path.display());
        let payload = &e.root.children[0].children[2];
        assert_eq!(payload.size, tile.payload.len() as u64);
        let p = coverage(payload, "payload", payload.size);
        assert!(
            p.unexplained.is_empty(),
            "{}: payload {p:?}",
            path.display()
        );
        compare_with_loader(kind, &tile, &e.root, &path);
        kinds.insert(format!("{kind:?}"));
        explained += 1;
    }
    println!("explained {explained} files whole ({kinds:?}); {refused} refused as the loader refuses them");
    // The corpus holds no update commit (`.upd`); those are walked the same way.
    for kind in [
        "ArraySchema",
        "Metadata",
        "GroupDetails",
        "DeleteCommit",
        "ConsolidatedFragmentMetadata",
        "Enumeration",
    ] {
        assert!(kinds.contains(kind), "the corpus has no {kind} explained");
    }
    assert!(explained > 500);
}
