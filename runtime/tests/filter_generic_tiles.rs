//! Every generic tile in the TileDB 2.30 corpus (schemas, array and group
//! metadata): its stored pipeline, converted to ours, unfilters its body to
//! exactly the size its header declares; the encrypted array's tiles need
//! (and open with) its key.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use binrw::BinRead;
use tiledb_runtime::filter::{Filter, FilterContext, FilterPipeline};
use tiledb_runtime::format::generated::enums::EncryptionType;
use tiledb_runtime::format::generated::generic_tile::GenericTileHeader;
use tiledb_runtime::tile::{filter_tile, unfilter_tile};

/// From `conformance/cases/sparse.encrypted.aes256gcm.toml`.
const CORPUS_KEY: &[u8; 32] = b"0123456789abcdeF0123456789abcdeF";

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/corpus/tiledb-2.30")
}

fn generic_tiles(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let parent = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("");
        if path.is_dir() {
            generic_tiles(&path, out);
        } else if matches!(parent, "__schema" | "__meta" | "__group")
            && !path.to_string_lossy().ends_with(".vac")
        {
            out.push(path);
        }
    }
}

#[test]
fn corpus_generic_tiles_unfilter_to_their_declared_size() {
    let root = corpus();
    if !root.is_dir() {
        println!("skipped: no corpus at {}", root.display());
        return;
    }
    let mut files = Vec::new();
    generic_tiles(&root, &mut files);
    files.sort();
    assert!(
        files.len() > 100,
        "found only {} generic tiles",
        files.len()
    );
    let (mut checked, mut encrypted) = (0, 0);
    for file in &files {
        if file.to_string_lossy().contains("/negative.") {
            continue;
        }
        let bytes = std::fs::read(file).expect("read");
        let mut reader = Cursor::new(&bytes[..]);
        let header = GenericTileHeader::read(&mut reader)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let body = &bytes[reader.position() as usize..];
        assert_eq!(
            body.len() as u64,
            header.persisted_size,
            "{}",
            file.display()
        );
        let pipeline = FilterPipeline::from_stored(&header.pipeline).expect("pipeline");
        let mut ctx = FilterContext::generic_tile(header.version);
        if header.encryption_type == EncryptionType::Aes256Gcm {
            assert_eq!(
                pipeline.filters.last(),
                Some(&Filter::Aes256Gcm),
                "{}",
                file.display()
            );
            let err = unfilter_tile(body, &pipeline, &ctx, header.tile_size).unwrap_err();
            assert_eq!(
                err.class(),
                tiledb_runtime::ErrorClass::Usage,
                "{}",
                file.display()
            );
            ctx = ctx.with_key(*CORPUS_KEY);
            encrypted += 1;
        } else {
            assert_eq!(
                pipeline,
                FilterPipeline::generic_tile(false),
                "{}",
                file.display()
            );
        }
        let plain = unfilter_tile(body, &pipeline, &ctx, header.tile_size)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(plain.len() as u64, header.tile_size);
        if header.encryption_type != EncryptionType::Aes256Gcm {
            // GZIP is deterministic: filtering the body again gives TileDB's bytes.
            assert_eq!(
                filter_tile(&plain, &pipeline, &ctx).expect("filter"),
                body,
                "{}",
                file.display()
            );
            // And the stored pipeline survives the round trip through our model.
            assert_eq!(pipeline.to_stored(), header.pipeline);
        }
        checked += 1;
    }
    assert!(encrypted > 0, "no encrypted generic tile in the corpus");
    println!("{checked} generic tiles decoded ({encrypted} encrypted)");
}
