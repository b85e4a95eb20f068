//! Tiles from TileDB's legacy test arrays (`../shared/tiledb-test-arrays`,
//! formats 1 to 11): generic tiles of every age, and the v10 array whose
//! empty var tile has no chunks at all.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use binrw::BinRead;
use tiledb_runtime::filter::{Datatype, Filter, FilterContext, FilterPipeline};
use tiledb_runtime::format::generated::generic_tile::GenericTileHeader;
use tiledb_runtime::tile::{filter_tile, filter_var_tile, unfilter_tile};

fn arrays() -> Option<PathBuf> {
    // `shared/` sits beside the workspace root; a worktree elsewhere can
    // point at it with TILEDB_TEST_ARRAYS.
    let dir = std::env::var_os("TILEDB_TEST_ARRAYS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/tiledb-test-arrays")
        });
    if dir.is_dir() {
        Some(dir)
    } else {
        println!("skipped: {} is absent", dir.display());
        None
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[test]
fn legacy_schema_generic_tiles_decode() {
    let Some(root) = arrays() else { return };
    let mut all = Vec::new();
    files(&root, &mut all);
    let schemas: Vec<_> = all
        .into_iter()
        .filter(|p| {
            let s = p.to_string_lossy();
            (s.contains("/__schema/") || s.ends_with("__array_schema.tdb"))
                && !s.contains("vUINT32_MAX")
        })
        .collect();
    assert!(!schemas.is_empty());
    let mut decoded = 0;
    for file in &schemas {
        let bytes = std::fs::read(file).expect("read");
        let mut reader = Cursor::new(&bytes[..]);
        let header = match GenericTileHeader::read(&mut reader) {
            // Arrays from TileDB 1.3/1.4 (format 1) predate the versioned
            // generic tile header; TileDB 2.30 cannot open them either.
            Ok(h) if (1..=22).contains(&h.version) => h,
            other => {
                println!(
                    "not a versioned generic tile: {} ({:?})",
                    file.display(),
                    other.map(|h| h.version)
                );
                continue;
            }
        };
        let body = &bytes[reader.position() as usize..];
        let pipeline = FilterPipeline::from_stored(&header.pipeline).expect("pipeline");
        let ctx = FilterContext::generic_tile(header.version);
        let plain = unfilter_tile(body, &pipeline, &ctx, header.tile_size)
            .unwrap_or_else(|e| panic!("{} (v{}): {e}", file.display(), header.version));
        // An array schema starts with its own format version.
        assert_eq!(
            &plain[..4],
            &header.version.to_le_bytes(),
            "{}",
            file.display()
        );
        println!(
            "{}: v{}, {:?}",
            file.display(),
            header.version,
            pipeline.filters
        );
        decoded += 1;
    }
    assert!(decoded >= 3, "only {decoded} legacy schemas decoded");
}

#[test]
fn an_empty_var_tile_has_no_chunks_before_v11_and_one_empty_chunk_after() {
    let Some(root) = arrays() else { return };
    let fragment = root.join(
        "zero_var_chunks_v10/__1693562063524_1693562063524_0fcdefaa40d34ff2a4b09153472fbdc2_10",
    );
    let zstd = FilterPipeline::new(vec![Filter::Zstd { level: -1 }]);
    let offsets_ctx = FilterContext::new(Datatype::Uint64, 8, 10);
    // One cell: an empty string at offset 0.
    let offsets = std::fs::read(fragment.join("d0.tdb")).expect("d0");
    assert_eq!(
        unfilter_tile(&offsets, &zstd, &offsets_ctx, 8).expect("offsets"),
        0u64.to_le_bytes()
    );
    let var = std::fs::read(fragment.join("d0_var.tdb")).expect("d0_var");
    assert_eq!(var, 0u64.to_le_bytes(), "zero chunks");
    let var_ctx = FilterContext::new(Datatype::StringAscii, 1, 10);
    assert!(unfilter_tile(&var, &zstd, &var_ctx, 0)
        .expect("var")
        .is_empty());
    // Writing it again at v10 gives TileDB's bytes; from v11 the var
    // chunking emits one empty chunk instead.
    assert_eq!(
        filter_var_tile(&[], &[0], &zstd, &var_ctx).expect("v10"),
        var
    );
    assert_eq!(
        filter_tile(&0u64.to_le_bytes(), &zstd, &offsets_ctx).expect("offsets v10"),
        offsets
    );
    let v22 = filter_var_tile(
        &[],
        &[0],
        &zstd,
        &FilterContext::new(Datatype::StringAscii, 1, 22),
    )
    .expect("v22");
    assert_eq!(&v22[..8], &1u64.to_le_bytes());
    assert_eq!(&v22[8..12], &0u32.to_le_bytes(), "original length 0");
}
