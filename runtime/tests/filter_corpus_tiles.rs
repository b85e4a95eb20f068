//! Every data tile of every fragment in the conformance corpora (TileDB
//! 2.13, format 16, and TileDB 2.30, format 22): split the field files into
//! tiles by their chunk framing, unfilter each with the pipeline from the
//! array's schema (checksums verify), and filter the result again at the
//! fragment's version — which must give TileDB's bytes wherever TileDB's
//! output is deterministic. Var tiles are re-chunked with the offsets decoded
//! from the same fragment, so this exercises the var chunking rule too.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use binrw::BinRead;
use tiledb_runtime::filter::{Datatype, Filter, FilterContext, FilterPipeline};
use tiledb_runtime::format::generated::array_schema::ArraySchema;
use tiledb_runtime::format::generated::enums::{ArrayType, EncryptionType};
use tiledb_runtime::format::generated::generic_tile::GenericTileHeader;
use tiledb_runtime::tile::{
    filter_tile, filter_var_tile, parse_chunks, unfilter_tile, unfilter_var_string_tile,
    SKIPPED_OFFSETS_TILE,
};

/// `conformance/corpus/<producer>`, or under `FILTER_CORPUS_DIR` if set.
fn corpus(producer: &str) -> PathBuf {
    std::env::var_os("FILTER_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/corpus"))
        .join(producer)
}

/// Cuts a field file into its tiles.
fn tiles(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let chunks = parse_chunks(rest).expect("chunk framing");
        let len = 8 + chunks
            .iter()
            .map(|c| 12 + c.metadata.len() + c.data.len())
            .sum::<usize>();
        out.push(&rest[..len]);
        rest = &rest[len..];
    }
    out
}

fn original_len(tile: &[u8]) -> u64 {
    parse_chunks(tile)
        .expect("framing")
        .iter()
        .map(|c| c.original_len as u64)
        .sum()
}

fn deterministic(p: &FilterPipeline) -> bool {
    !p.filters
        .iter()
        .any(|f| matches!(f, Filter::Aes256Gcm | Filter::Webp { .. }))
}

/// TileDB 2.13 bundled an older libzstd that makes other block choices than
/// the libzstd we (and TileDB 2.30) use — at level 19, and on tiny inputs at
/// any level (a compressed block where the newer library keeps the bytes raw);
/// the format is the same and both decode to the same cells.
fn zstd_library_differs(producer: &str, pipeline: &FilterPipeline) -> bool {
    producer == "tiledb-2.13"
        && pipeline
            .filters
            .iter()
            .any(|f| matches!(f, Filter::Zstd { .. }))
}

struct Tally {
    producer: &'static str,
    tiles: usize,
    identical: usize,
    not_compared: usize,
    library_differences: usize,
    differing: Vec<String>,
}

impl Tally {
    fn compare(&mut self, what: String, pipeline: &FilterPipeline, ours: Vec<u8>, theirs: &[u8]) {
        self.tiles += 1;
        if !deterministic(pipeline) {
            self.not_compared += 1;
        } else if ours == theirs {
            self.identical += 1;
        } else if zstd_library_differs(self.producer, pipeline) {
            println!("differs by libzstd version: {what}");
            self.library_differences += 1;
        } else {
            self.differing.push(what);
        }
    }
}

fn schema(array: &Path) -> Option<ArraySchema> {
    let schemas: Vec<_> = std::fs::read_dir(array.join("__schema"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    // With schema evolution a fragment names its schema in its footer; keep
    // to arrays with one schema.
    let [only] = schemas.as_slice() else {
        return None;
    };
    let bytes = std::fs::read(only).ok()?;
    let mut reader = Cursor::new(&bytes[..]);
    let header = GenericTileHeader::read(&mut reader).ok()?;
    if header.encryption_type != EncryptionType::NoEncryption {
        return None;
    }
    let pipeline = FilterPipeline::from_stored(&header.pipeline).ok()?;
    let body = &bytes[reader.position() as usize..];
    let payload = unfilter_tile(
        body,
        &pipeline,
        &FilterContext::generic_tile(header.version),
        header.tile_size,
    )
    .ok()?;
    ArraySchema::read(&mut Cursor::new(&payload[..])).ok()
}

fn fragments(array: &Path) -> Vec<(PathBuf, u32)> {
    let mut out: Vec<_> = std::fs::read_dir(array.join("__fragments"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter_map(|p| {
            let version = p.file_name()?.to_str()?.rsplit('_').next()?.parse().ok()?;
            Some((p, version))
        })
        .collect();
    out.sort();
    out
}

struct Field {
    stem: String,
    datatype: Datatype,
    cell_val_num: u32,
    nullable: bool,
    pipeline: FilterPipeline,
}

fn check_field(
    field: &Field,
    schema: &ArraySchema,
    fragment: &Path,
    version: u32,
    cells_per_tile: &dyn Fn(usize) -> Option<u64>,
    tally: &mut Tally,
) {
    let read =
        |suffix: &str| std::fs::read(fragment.join(format!("{}{suffix}.tdb", field.stem))).ok();
    let Some(fixed) = read("") else { return };
    let name = format!("{}/{}", fragment.display(), field.stem);
    let size = field.datatype.size();
    if field.cell_val_num == u32::MAX {
        let var = read("_var").expect("var file");
        let offsets_pipeline =
            FilterPipeline::from_stored(&schema.offsets_filters).expect("offsets pipeline");
        let offsets_ctx = FilterContext::new(Datatype::Uint64, 8, version);
        let ctx = FilterContext::new(field.datatype, size, version);
        for (t, (offsets_tile, var_tile)) in tiles(&fixed).into_iter().zip(tiles(&var)).enumerate()
        {
            let what = format!("{name} tile {t}");
            let var_len = original_len(var_tile);
            if field.pipeline.skips_offsets(field.datatype, version) {
                assert_eq!(offsets_tile, SKIPPED_OFFSETS_TILE, "{what}");
                let Some(cells) = cells_per_tile(t) else {
                    tally.not_compared += 1;
                    continue;
                };
                let (data, offsets) =
                    unfilter_var_string_tile(var_tile, &field.pipeline, &ctx, var_len, cells)
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                let ours = filter_var_tile(&data, &offsets, &field.pipeline, &ctx).expect("write");
                tally.compare(what, &field.pipeline, ours, var_tile);
                continue;
            }
            let offsets_bytes = unfilter_tile(
                offsets_tile,
                &offsets_pipeline,
                &offsets_ctx,
                original_len(offsets_tile),
            )
            .unwrap_or_else(|e| panic!("{what} offsets: {e}"));
            let ours = filter_tile(&offsets_bytes, &offsets_pipeline, &offsets_ctx)
                .expect("write offsets");
            tally.compare(
                format!("{what} offsets"),
                &offsets_pipeline,
                ours,
                offsets_tile,
            );
            let offsets: Vec<u64> = offsets_bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8")))
                .collect();
            let data = unfilter_tile(var_tile, &field.pipeline, &ctx, var_len)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let ours = filter_var_tile(&data, &offsets, &field.pipeline, &ctx).expect("write var");
            tally.compare(what, &field.pipeline, ours, var_tile);
        }
    } else {
        let ctx = FilterContext::new(field.datatype, size * field.cell_val_num as u64, version);
        for (t, tile) in tiles(&fixed).into_iter().enumerate() {
            let what = format!("{name} tile {t}");
            let data = unfilter_tile(tile, &field.pipeline, &ctx, original_len(tile))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let ours = filter_tile(&data, &field.pipeline, &ctx).expect("write");
            tally.compare(what, &field.pipeline, ours, tile);
        }
    }
    if field.nullable {
        let validity = read("_validity").expect("validity file");
        let pipeline = schema
            .validity_filters
            .as_ref()
            .map(|p| FilterPipeline::from_stored(p).expect("validity pipeline"))
            .unwrap_or_default();
        let ctx = FilterContext::new(Datatype::Uint8, 1, version);
        for (t, tile) in tiles(&validity).into_iter().enumerate() {
            let what = format!("{name} validity tile {t}");
            let data = unfilter_tile(tile, &pipeline, &ctx, original_len(tile))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            tally.compare(
                what,
                &pipeline,
                filter_tile(&data, &pipeline, &ctx).expect("write"),
                tile,
            );
        }
    }
}

fn check_producer(producer: &'static str) {
    let root = corpus(producer);
    if !root.is_dir() {
        println!("skipped: no corpus at {}", root.display());
        return;
    }
    let mut tally = Tally {
        producer,
        tiles: 0,
        identical: 0,
        not_compared: 0,
        library_differences: 0,
        differing: Vec::new(),
    };
    let mut arrays = 0;
    let mut cases: Vec<_> = std::fs::read_dir(&root)
        .expect("corpus")
        .flatten()
        .map(|e| e.path())
        .collect();
    cases.sort();
    for case in cases {
        if case
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("negative."))
        {
            continue;
        }
        let array = case.join("array");
        let Some(schema) = schema(&array) else {
            continue;
        };
        arrays += 1;
        let coords = FilterPipeline::from_stored(&schema.coords_filters).expect("coords pipeline");
        let mut fields = Vec::new();
        for (i, a) in schema.attributes.iter().enumerate() {
            fields.push(Field {
                stem: format!("a{i}"),
                datatype: a.datatype,
                cell_val_num: a.cell_val_num,
                nullable: a.nullable,
                pipeline: FilterPipeline::from_stored(&a.filters).expect("attribute pipeline"),
            });
        }
        let dense = schema.array_type == ArrayType::Dense;
        for (j, d) in schema.domain.dimensions.iter().enumerate() {
            let own = d
                .filters
                .as_ref()
                .map(|p| FilterPipeline::from_stored(p).expect("dim pipeline"));
            fields.push(Field {
                stem: format!("d{j}"),
                datatype: d.datatype,
                cell_val_num: d.cell_val_num,
                nullable: false,
                pipeline: own
                    .filter(|p| !p.filters.is_empty())
                    .unwrap_or_else(|| coords.clone()),
            });
        }
        for (fragment, version) in fragments(&array) {
            // Cells per tile, for string-encoded var tiles whose offsets are
            // not stored: the extents' product (dense), or the first fixed
            // dimension's tile (sparse).
            let extents: Option<u64> = schema
                .domain
                .dimensions
                .iter()
                .map(|d| {
                    d.extent
                        .as_ref()
                        .map(|e| e.iter().rev().fold(0u64, |acc, b| acc << 8 | *b as u64))
                })
                .product();
            let first_fixed_dim = fields
                .iter()
                .skip(schema.attributes.len())
                .position(|f| f.cell_val_num != u32::MAX);
            let dim_tiles: Vec<u64> = match (dense, first_fixed_dim) {
                (false, Some(j)) => std::fs::read(fragment.join(format!("d{j}.tdb")))
                    .map(|b| {
                        tiles(&b)
                            .iter()
                            .map(|t| original_len(t) / schema.domain.dimensions[j].datatype.size())
                            .collect()
                    })
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            let cells_per_tile = |t: usize| {
                if dense {
                    extents
                } else {
                    dim_tiles.get(t).copied()
                }
            };
            for field in &fields {
                check_field(
                    field,
                    &schema,
                    &fragment,
                    version,
                    &cells_per_tile,
                    &mut tally,
                );
            }
        }
    }
    println!(
        "{producer}: {arrays} arrays, {} tiles: {} byte-identical, {} not comparable (AES/WebP), \
         {} differing by libzstd version, {} different",
        tally.tiles,
        tally.identical,
        tally.not_compared,
        tally.library_differences,
        tally.differing.len()
    );
    assert!(arrays > 50, "{producer}: only {arrays} arrays");
    assert!(
        tally.differing.is_empty(),
        "{producer}: our tiles differ from TileDB's: {:#?}",
        tally.differing
    );
}

#[test]
fn tiledb_2_30_corpus_tiles_decode_and_reencode() {
    check_producer("tiledb-2.30");
}

#[test]
fn tiledb_2_13_corpus_tiles_decode_and_reencode() {
    check_producer("tiledb-2.13");
}
