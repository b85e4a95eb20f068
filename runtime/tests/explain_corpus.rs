//! `tdb explain` over the frozen corpus: every file of a kind the explainer
//! knows (schemas, enumerations, metadata, group details, delete and update
//! commits, consolidated fragment metadata) is explained with 100% of its
//! bytes and of its payload's bytes attributed to spec fields, the value the
//! generated walker builds equals what the binrw reader (the loaders' parser)
//! reads, and the span tree's key fields equal what the loaders give.
//! A file the loader refuses (the negative cases) the explainer refuses too,
//! except a schema of the experimental format version, to which spec/ gives
//! a layout (spec/format.toml, `experimental_format_version`).

use std::path::{Path, PathBuf};

use tiledb_runtime::directory::TimestampedName;
use tiledb_runtime::explain::walkers::*;
use tiledb_runtime::explain::{coverage, explain_file, Explained, FileKind, Span, Walker};
use tiledb_runtime::format::generated as stored;
use tiledb_runtime::fragment::{footer_region, footer_schema_name, parse_metadata_file};
use tiledb_runtime::metadata::group_contents::parse_group_details;
use tiledb_runtime::metadata::parse_metadata_tile;
use tiledb_runtime::schema::{dimension_shapes, ArraySchema};
use tiledb_runtime::storage::LocalStorage;
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
        FileKind::FragmentMetadata
        | FileKind::DataTiles
        | FileKind::Marker
        | FileKind::TextLines
        | FileKind::ConsolidatedCommits => {
            unreachable!("checked by fragment_metadata_is_whole")
        }
    }
}

/// Asserts that the file and every payload under `root` are attributed
/// whole; gives the payloads' sizes.
fn assert_whole(root: &Span, file_size: u64, path: &Path) -> Vec<u64> {
    let file = coverage(root, "file", file_size);
    assert!(file.unexplained.is_empty(), "{}: {file:?}", path.display());
    assert_eq!(file.covered, file_size, "{}", path.display());
    let mut payloads = Vec::new();
    find(root, "payload", &mut payloads);
    payloads
        .iter()
        .map(|p| {
            let c = coverage(p, "payload", p.size);
            assert!(
                c.unexplained.is_empty(),
                "{}: payload {c:?}",
                path.display()
            );
            p.size
        })
        .collect()
}

/// Whether a schema tile's payload says the experimental format version.
fn experimental(tile: &GenericTile) -> bool {
    let version = tile
        .payload
        .get(..4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()));
    version.is_some_and(|v| u64::from(v) == stored::EXPERIMENTAL_FORMAT_VERSION)
}

/// A fragment metadata file the loader (`parse_metadata_file`, against the
/// schema its footer names) accepts is explained whole, with the footer the
/// walker builds equal to the loader's and one tile per offset the footer
/// gives; one it refuses is not claimed whole. Returns whether it was accepted.
fn fragment_metadata_is_whole(path: &Path, bytes: &[u8], key: Option<&[u8; 32]>) -> bool {
    let array = path.parent().unwrap().parent().unwrap().parent().unwrap();
    let storage = LocalStorage::new(array);
    let loaded = footer_region(bytes).and_then(|(_, start)| {
        let name = footer_schema_name(&bytes[start as usize..])?;
        let schema = ArraySchema::load(&storage, &ArraySchema::path_for(name.as_deref())?, key)?;
        let fragment = path
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy();
        let version = TimestampedName::parse(&fragment)?.format_version();
        Ok((parse_metadata_file(bytes, &schema, key, version)?, schema))
    });
    let result = explain_file(path, bytes, key);
    let Ok((file, schema)) = loaded else {
        let whole = result.as_ref().is_ok_and(|e| {
            e.incomplete.is_none() && coverage(&e.root, "file", e.file_size).covered == e.file_size
        });
        assert!(
            !whole,
            "{}: refused by the loader, explained whole",
            path.display()
        );
        return false;
    };
    let e = result.unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    assert_eq!(e.incomplete, None, "{}", path.display());
    let payloads = assert_whole(&e.root, bytes.len() as u64, path);
    let mut w = Walker::new(&bytes[..bytes.len() - 8], "footer", "file");
    w.seek(file.footer_offset);
    let footer = walk_fragment_footer(
        &mut w,
        schema.attributes.len() as u64,
        dimension_shapes(&schema.stored),
    )
    .unwrap();
    assert_eq!(footer, file.footer, "{}", path.display());
    let f = &file.footer;
    let tiles = 1
        + f.tile_offsets_offsets.len()
        + f.tile_var_offsets_offsets.len()
        + f.tile_var_sizes_offsets.len()
        + f.tile_validity_offsets_offsets.as_ref().map_or(0, Vec::len)
        + f.tile_null_counts_offsets.as_ref().map_or(0, Vec::len)
        + f.tile_mins_offsets.as_ref().map_or(0, Vec::len)
        + f.tile_maxes_offsets.as_ref().map_or(0, Vec::len)
        + f.tile_sums_offsets.as_ref().map_or(0, Vec::len)
        + usize::from(f.fragment_mmsn_offset.is_some() && f.version >= 12)
        + usize::from(f.processed_conditions_offset.is_some());
    assert_eq!(payloads.len(), tiles, "{}", path.display());
    // Every table of tile offsets the loader reads is shown, value by value.
    let mut lists = Vec::new();
    find(&e.root, "TileOffsets.values", &mut lists);
    let shown: Vec<Vec<u64>> = lists
        .iter()
        .map(|l| {
            l.children
                .iter()
                .map(|c| c.value.as_deref().unwrap().parse().unwrap())
                .collect()
        })
        .collect();
    for table in file.tile_offsets.iter().chain(&file.tile_var_offsets) {
        assert!(
            shown.contains(table),
            "{}: {table:?} not shown",
            path.display()
        );
    }
    // Each attribute's data file: explained whole, its tiles starting where
    // the metadata's tile offsets say.
    let fragment = path.parent().unwrap();
    // The cells of each tile, as each data file's tile summary gives them.
    let mut cell_counts: Vec<(PathBuf, Vec<u64>)> = Vec::new();
    for i in 0..schema.attributes.len() {
        for (suffix, tables) in [("", &file.tile_offsets), ("_var", &file.tile_var_offsets)] {
            let data = fragment.join(format!("a{i}{suffix}.tdb"));
            let Ok(bytes) = std::fs::read(&data) else {
                continue;
            };
            let e = match explain_file(&data, &bytes, key) {
                Ok(e) => e,
                // A negative case may break a data file its metadata describes.
                Err(_) if data.to_string_lossy().contains("/negative.") => continue,
                Err(err) => panic!("{}: {err}", data.display()),
            };
            assert_eq!(e.kind, FileKind::DataTiles);
            assert_whole(&e.root, bytes.len() as u64, &data);
            let starts: Vec<u64> = e.root.children.iter().map(|t| t.offset).collect();
            assert_eq!(&starts, &tables[i], "{}", data.display());
            let counts: Vec<u64> = e
                .root
                .children
                .iter()
                .filter_map(|t| {
                    let (_, rest) = t.value.as_deref()?.split_once("; ")?.1.rsplit_once("; ")?;
                    rest.split_once(" cell(s)")?.0.parse().ok()
                })
                .collect();
            if !counts.is_empty() {
                cell_counts.push((data.clone(), counts));
            }
            data_files_checked_add();
            let mut metadata = Vec::new();
            find(&e.root, "TileChunk.metadata", &mut metadata);
            let walked = metadata.iter().filter(|m| !m.children.is_empty()).count();
            let nonempty = metadata.iter().filter(|m| m.size > 0).count();
            // Every filter's metadata is a struct of spec/ (FilterType.chunk_metadata):
            // the metadata of every chunk is walked, whatever the last filter.
            assert_eq!(
                walked,
                nonempty,
                "{}: chunk metadata left as bytes",
                data.display()
            );
            DATA_METADATA.fetch_add(walked, std::sync::atomic::Ordering::Relaxed);
            let mut kinds = METADATA_KINDS.lock().unwrap();
            for m in &metadata {
                kinds.extend(m.children.iter().map(|c| c.name.clone()));
            }
        }
    }
    // Every field of a fragment has the same cells in each tile: the var-sized
    // counts (from the offsets file, or the var-string metadata) agree with the
    // fixed-size ones.
    if let Some((first, counts)) = cell_counts.first() {
        for (other, theirs) in &cell_counts[1..] {
            assert_eq!(counts, theirs, "{} vs {}", first.display(), other.display());
        }
        if cell_counts
            .iter()
            .any(|(p, _)| p.to_string_lossy().ends_with("_var.tdb"))
        {
            VAR_COUNTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    true
}

/// Fragments whose var-sized data files' cell counts were checked.
static VAR_COUNTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// The filters whose chunk metadata was walked in data files, by group name.
static METADATA_KINDS: std::sync::Mutex<std::collections::BTreeSet<String>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());
static DATA_FILES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Chunks of data files whose filter metadata was walked as a spec struct.
static DATA_METADATA: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn data_files_checked_add() {
    DATA_FILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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
        FileKind::FragmentMetadata
        | FileKind::DataTiles
        | FileKind::Marker
        | FileKind::TextLines
        | FileKind::ConsolidatedCommits => false,
    }
}

#[test]
fn every_generic_tile_file_of_the_corpus_is_explained_whole() {
    let mut all = Vec::new();
    files(&corpus(), &mut all);
    all.sort();
    let (mut explained, mut refused) = (0, Vec::new());
    let mut kinds = std::collections::BTreeSet::new();
    for path in all {
        let Some(kind) = FileKind::of(&path) else {
            continue;
        };
        let bytes = std::fs::read(&path).unwrap();
        let key = key_of(&path);
        if matches!(kind, FileKind::TextLines | FileKind::ConsolidatedCommits) {
            assert_text_file_explained(&path, &bytes, key.as_ref(), kind);
            kinds.insert(format!("{kind:?}"));
            explained += 1;
            continue;
        }
        if matches!(kind, FileKind::DataTiles | FileKind::Marker) {
            // Checked with their fragment's metadata (data tiles) or empty (markers).
            if kind == FileKind::Marker {
                assert!(bytes.is_empty(), "{}", path.display());
                let e = explain_file(&path, &bytes, None).unwrap();
                assert!(e.root.children.is_empty());
            }
            continue;
        }
        if kind == FileKind::FragmentMetadata {
            if fragment_metadata_is_whole(&path, &bytes, key.as_ref()) {
                explained += 1;
                kinds.insert(format!("{kind:?}"));
            } else {
                refused.push(path);
            }
            continue;
        }
        let loaded = read_generic_tile(&bytes, 0, key.as_ref());
        let result = explain_file(&path, &bytes, key.as_ref());
        let tile = match loaded {
            // The loader refuses a schema of the experimental format
            // version, as TileDB does (the generated parser alone reads it
            // with every gate open), but spec/format.toml gives that
            // version a layout (version 14's): explained in it, each version
            // span saying so (here `negative.schema.version_far_future`, a
            // released schema whose version field says u32::MAX: whole
            // where the release's layout equals version 14's, else with the
            // later fields' bytes unexplained).
            Ok(tile) if kind == FileKind::ArraySchema && experimental(&tile) => {
                assert_explained_as_experimental(&path, result);
                refused.push(path);
                continue;
            }
            Ok(tile) if tile.end == bytes.len() as u64 && loader_accepts(kind, &tile) => tile,
            _ => {
                // The loader refuses it (or finds bytes after the tile): the
                // explainer must not claim it whole (it may explain it as far
                // as the bytes allow, saying why it stops).
                let whole = result.as_ref().is_ok_and(|e| {
                    e.incomplete.is_none()
                        && coverage(&e.root, "file", e.file_size).covered == e.file_size
                });
                assert!(
                    !whole,
                    "{}: refused by the loader, explained whole",
                    path.display()
                );
                refused.push(path);
                continue;
            }
        };
        let e = result.unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        assert_eq!(e.incomplete, None, "{}", path.display());
        let payloads = assert_whole(&e.root, bytes.len() as u64, &path);
        assert_eq!(payloads, vec![tile.payload.len() as u64]);
        // Each chunk's metadata is walked as the last filter's struct.
        let mut metadata = Vec::new();
        find(&e.root, "TileChunk.metadata", &mut metadata);
        for m in metadata.iter().filter(|m| m.size > 0) {
            assert_eq!(m.children.len(), 1, "{}", path.display());
            assert!(m.children[0].name.ends_with("filter metadata"));
        }
        compare_with_loader(kind, &tile, &e.root, &path);
        kinds.insert(format!("{kind:?}"));
        explained += 1;
    }
    println!(
        "explained {explained} files whole ({kinds:?}); {} refused as the loader refuses them",
        refused.len()
    );
    // Only the negative cases hold files the loaders refuse.
    for path in &refused {
        assert!(
            path.to_string_lossy().contains("/negative."),
            "{}: refused outside a negative case",
            path.display()
        );
    }
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
    let data = DATA_FILES.load(std::sync::atomic::Ordering::Relaxed);
    println!("{data} attribute data files explained whole, tiles where the metadata says");
    assert!(data > 500);
    let walked = DATA_METADATA.load(std::sync::atomic::Ordering::Relaxed);
    let var_counts = VAR_COUNTS.load(std::sync::atomic::Ordering::Relaxed);
    println!("{var_counts} fragments' var-sized cell counts agree with their fixed-size ones");
    assert!(var_counts > 20);
    let kinds = METADATA_KINDS.lock().unwrap().clone();
    println!("{walked} data chunks with their filter metadata walked as their filters' structs: {kinds:?}");
    assert!(walked > 50);
    // Filters that leave the earlier metadata after theirs, and the var-string form.
    for kind in [
        "CHECKSUM_SHA256",
        "BYTESHUFFLE",
        "BIT_WIDTH_REDUCTION",
        "RLE",
    ] {
        assert!(
            kinds.contains(&format!("{kind} filter metadata")),
            "no {kind} metadata walked in the corpus: {kinds:?}"
        );
    }
}

/// A text file (`.vac`, `.ign`, `.con`): every byte in a line (or an
/// embedded delete commit), each line one of the file's newline-separated
/// lines.
fn assert_text_file_explained(path: &Path, bytes: &[u8], key: Option<&[u8; 32]>, kind: FileKind) {
    let e =
        explain_file(path, bytes, key).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    assert_whole(&e.root, bytes.len() as u64, path);
    let lines: Vec<String> = String::from_utf8_lossy(bytes)
        .lines()
        .map(|l| format!("{l:?}"))
        .collect();
    // The generated walkers name a line `PathLine.path` (.vac,
    // .ign) or `ConsolidatedCommit.path` (.con).
    let line_field = if kind == FileKind::ConsolidatedCommits {
        "ConsolidatedCommit.path"
    } else {
        "PathLine.path"
    };
    let shown = values(&e.root, line_field);
    if !bytes.windows(4).any(|w| w == b".del") {
        assert_eq!(shown, lines, "{}", path.display());
    }
}

/// A schema of the experimental format version: the loader refuses it, as
/// TileDB does, but spec/format.toml gives that version a layout (version
/// 14's), so it is explained in it, each version span saying so (here
/// `negative.schema.version_far_future`, a released schema whose version
/// field says u32::MAX: whole where the release's layout equals version
/// 14's, else with the later fields' bytes unexplained).
fn assert_explained_as_experimental(path: &Path, result: tiledb_runtime::Result<Explained>) {
    let e = result.unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let mut found = Vec::new();
    find(&e.root, "ArraySchema.version", &mut found);
    assert!(
        found[0]
            .value
            .as_deref()
            .is_some_and(|v| v.contains("experimental build")),
        "{}: {:?}",
        path.display(),
        found[0].value
    );
}
