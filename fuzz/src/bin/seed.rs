//! Writes the seed corpora of every fuzz target into `fuzz/corpus/<target>/`
//! from the committed conformance corpus (schemas, fragment metadata, tiles,
//! commit and metadata files of arrays written by TileDB), plus tiles this
//! crate filters itself for every filter. `fuzz/corpus` is not committed;
//! this program makes it again, the same way every time:
//!
//! ```sh
//! cargo run --manifest-path fuzz/Cargo.toml --bin seed
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tiledb_fuzz_targets::{encode_entry, join_pair, FilterKind, FILTER_HEADER, FUZZ_KEY, TARGETS};
use tiledb_runtime::directory::TimestampedName;
use tiledb_runtime::filter::{Datatype, Filter, FilterContext, FilterPipeline};
use tiledb_runtime::format::generated as g;
use tiledb_runtime::format::io::write_to_vec;
use tiledb_runtime::fragment::{footer_region, parse_metadata_file, FragmentMetadataFile};
use tiledb_runtime::schema::ArraySchema;
use tiledb_runtime::tile::generic::{read_generic_tile, GenericTile};

/// The generic tile at `at`: plain, else encrypted with the fuzz key (the
/// loaders refuse a key for a plain tile, as TileDB does).
fn generic_tile(bytes: &[u8], at: u64) -> tiledb_runtime::Result<GenericTile> {
    read_generic_tile(bytes, at, None).or_else(|_| read_generic_tile(bytes, at, Some(&FUZZ_KEY)))
}
use tiledb_runtime::tile::filter_tile;

struct Seeds {
    out: PathBuf,
    written: BTreeSet<(String, u64)>,
}

/// FNV-1a: a stable name for a seed from its bytes.
fn fnv(bytes: &[u8]) -> u64 {
    let mut hash = 0xcbf29ce484222325u64;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x100000001b3);
    }
    hash
}

impl Seeds {
    fn add(&mut self, target: &str, bytes: &[u8]) {
        let hash = fnv(bytes);
        if !self.written.insert((target.to_string(), hash)) {
            return;
        }
        let dir = self.out.join(target);
        std::fs::create_dir_all(&dir).expect("create the corpus folder");
        std::fs::write(dir.join(format!("{hash:016x}")), bytes).expect("write a seed");
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The bytes `fragment_footer` reads its arguments from (see
/// `fuzzed_shapes` in `fuzz/targets/src/files.rs`).
fn shape_head(schema: &g::ArraySchema, version: u32) -> [u8; 4] {
    let dims = &schema.domain.dimensions;
    let attributes = schema.attributes.len().min(7) as u8;
    let mut head = [
        attributes | ((version.saturating_sub(1) as u8) << 3),
        (dims.len().clamp(1, 4) - 1) as u8,
        0,
        0,
    ];
    for (d, dim) in dims.iter().take(4).enumerate() {
        if dim.cell_val_num == u32::MAX {
            head[2] |= 1 << d;
        }
        let code = match dim.datatype.size() {
            1 => 0,
            2 => 1,
            4 => 2,
            _ => 3,
        };
        head[3] |= code << (2 * d);
    }
    head
}

fn filter_kind(f: &Filter) -> FilterKind {
    match f {
        Filter::None => FilterKind::None,
        Filter::Gzip { .. } => FilterKind::Gzip,
        Filter::Zstd { .. } => FilterKind::Zstd,
        Filter::Lz4 { .. } => FilterKind::Lz4,
        Filter::Rle { .. } => FilterKind::Rle,
        Filter::Bzip2 { .. } => FilterKind::Bzip2,
        Filter::DoubleDelta { .. } => FilterKind::DoubleDelta,
        Filter::Delta { .. } => FilterKind::Delta,
        Filter::Dictionary { .. } => FilterKind::Dictionary,
        Filter::BitWidthReduction { .. } => FilterKind::BitWidthReduction,
        Filter::PositiveDelta { .. } => FilterKind::PositiveDelta,
        Filter::BitShuffle => FilterKind::BitShuffle,
        Filter::ByteShuffle => FilterKind::ByteShuffle,
        Filter::ChecksumMd5 => FilterKind::Md5,
        Filter::ChecksumSha256 => FilterKind::Sha256,
        Filter::ScaleFloat { .. } => FilterKind::ScaleFloat,
        Filter::Xor => FilterKind::Xor,
        Filter::Webp { .. } => FilterKind::Webp,
        Filter::Aes256Gcm => FilterKind::Aes,
    }
}

fn target_name(kind: FilterKind) -> &'static str {
    match kind {
        FilterKind::None => "filter_none",
        FilterKind::Gzip => "filter_gzip",
        FilterKind::Zstd => "filter_zstd",
        FilterKind::Lz4 => "filter_lz4",
        FilterKind::Rle => "filter_rle",
        FilterKind::Bzip2 => "filter_bzip2",
        FilterKind::DoubleDelta => "filter_double_delta",
        FilterKind::Delta => "filter_delta",
        FilterKind::Dictionary => "filter_dictionary",
        FilterKind::BitWidthReduction => "filter_bit_width_reduction",
        FilterKind::PositiveDelta => "filter_positive_delta",
        FilterKind::BitShuffle => "filter_bitshuffle",
        FilterKind::ByteShuffle => "filter_byteshuffle",
        FilterKind::Md5 => "filter_checksum_md5",
        FilterKind::Sha256 => "filter_checksum_sha256",
        FilterKind::ScaleFloat => "filter_scale_float",
        FilterKind::Xor => "filter_xor",
        FilterKind::Webp => "filter_webp",
        FilterKind::Aes => "filter_aes256gcm",
    }
}

/// The `filter_*` header for one filter on cells of `datatype`.
fn filter_header(
    f: &Filter,
    datatype: Datatype,
    version: u32,
    cell_val_num: u32,
) -> [u8; FILTER_HEADER] {
    let mut h = [0u8; FILTER_HEADER];
    h[0] = datatype.value();
    h[1] = version.saturating_sub(1) as u8;
    h[2] = if cell_val_num == u32::MAX {
        8 // also the cell count the string decoders are given
    } else {
        cell_val_num.saturating_sub(1).min(7) as u8
    };
    let o = &mut h[3..];
    let put4 = |o: &mut [u8], at: usize, v: [u8; 4]| o[at..at + 4].copy_from_slice(&v);
    match f {
        Filter::Gzip { level }
        | Filter::Zstd { level }
        | Filter::Lz4 { level }
        | Filter::Rle { level }
        | Filter::Bzip2 { level }
        | Filter::Dictionary { level } => put4(o, 0, level.to_le_bytes()),
        Filter::DoubleDelta { level, reinterpret } | Filter::Delta { level, reinterpret } => {
            put4(o, 0, level.to_le_bytes());
            o[4] = reinterpret.map_or(0xFF, |t| t.value());
        }
        Filter::BitWidthReduction { max_window } | Filter::PositiveDelta { max_window } => {
            put4(o, 0, max_window.to_le_bytes())
        }
        Filter::ScaleFloat {
            scale,
            offset,
            byte_width,
        } => {
            o[0..8].copy_from_slice(&scale.to_le_bytes());
            o[8..16].copy_from_slice(&offset.to_le_bytes());
            o[16] = *byte_width as u8;
        }
        Filter::Webp {
            quality,
            format,
            lossless,
            y_extent,
            x_extent,
        } => {
            put4(o, 0, quality.to_le_bytes());
            o[4] = *format as u8;
            o[5] = u8::from(*lossless);
            o[6..8].copy_from_slice(&y_extent.to_le_bytes());
            o[8..10].copy_from_slice(&x_extent.to_le_bytes());
        }
        _ => {}
    }
    h
}

fn with_header(header: &[u8], tile: &[u8]) -> Vec<u8> {
    let mut out = header.to_vec();
    out.extend_from_slice(tile);
    out
}

/// The `pipeline` input for a stored pipeline and a tile.
fn pipeline_input(
    stored: &g::FilterPipeline,
    version: u32,
    datatype: Datatype,
    tile: &[u8],
) -> Option<Vec<u8>> {
    let bytes = write_to_vec(
        stored,
        g::FilterPipelineBinWriteArgs::builder()
            .version(version)
            .finalize(),
        "FilterPipeline",
    )
    .ok()?;
    let mut out = vec![version.saturating_sub(1) as u8, datatype.value(), 8];
    out.extend_from_slice(&join_pair(&bytes, tile));
    Some(out)
}

/// Seeds from one array of the conformance corpus.
fn seed_array(seeds: &mut Seeds, array: &Path) {
    let mut files = Vec::new();
    walk(array, &mut files);
    let rel = |p: &Path| {
        p.strip_prefix(array)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned()
    };
    // The whole folder for the directory target (big files left out).
    let mut entries = Vec::new();
    for file in &files {
        if let Ok(bytes) = std::fs::read(file) {
            if bytes.len() <= u16::MAX as usize {
                encode_entry(&rel(file), &bytes, &mut entries);
            }
        }
    }
    seeds.add("array_directory", &entries);

    let mut schemas: Vec<(String, Vec<u8>, ArraySchema)> = Vec::new();
    for file in &files {
        let path = rel(file);
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        let parent = Path::new(&path)
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if parent == "__schema" || name == "__array_schema.tdb" {
            seeds.add("array_schema", &bytes);
            seeds.add("generic_tile", &bytes);
            if let Ok(tile) = generic_tile(&bytes, 0) {
                seeds.add("array_schema_payload", &tile.payload);
            }
            let schema = ArraySchema::from_file_bytes(&name, &bytes, None, true).or_else(|_| {
                ArraySchema::from_file_bytes(&name, &bytes, Some(&FUZZ_KEY), true)
            });
            if let Ok(schema) = schema {
                schemas.push((name.clone(), bytes.clone(), schema));
            }
        } else if parent == "__enumerations" {
            seeds.add("enumeration", &bytes);
            seeds.add("generic_tile", &bytes);
        } else if parent == "__meta" && !name.ends_with(".vac") {
            seeds.add("array_metadata", &bytes);
            seeds.add("generic_tile", &bytes);
        } else if parent == "__group" {
            seeds.add("group_details", &bytes);
            seeds.add("generic_tile", &bytes);
        } else if name.ends_with(".del") || name.ends_with(".upd") {
            seeds.add("commit_files", &bytes);
            seeds.add("generic_tile", &bytes);
            if let Ok(tile) = generic_tile(&bytes, 0) {
                seeds.add("delete_condition", &tile.payload);
            }
        } else if name.ends_with(".ign") || name.ends_with(".vac") {
            seeds.add("commit_files", &bytes);
        } else if name.ends_with(".con") {
            seeds.add("consolidated_commits", &bytes);
        }
    }
    let schema_of = |name: &[u8]| {
        let name = String::from_utf8_lossy(name);
        schemas.iter().find(|(n, _, _)| *n == name)
    };
    for file in &files {
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.ends_with(".meta") {
            if let Some((_, schema_bytes, _)) = schemas.first() {
                seeds.add(
                    "consolidated_fragment_metadata",
                    &join_pair(schema_bytes, &bytes),
                );
            }
            continue;
        }
        if name != "__fragment_metadata.tdb" {
            continue;
        }
        let Ok((head, footer_start)) = footer_region(&bytes) else {
            continue;
        };
        let Some((_, schema_bytes, schema)) =
            schema_of(head.schema_name.as_deref().unwrap_or_default())
        else {
            continue;
        };
        seeds.add("fragment_metadata", &join_pair(schema_bytes, &bytes));
        let shape = shape_head(&schema.stored, head.version);
        let footer_end = bytes.len().saturating_sub(8);
        if let Some(footer) = bytes.get(footer_start as usize..footer_end) {
            seeds.add("fragment_footer", &with_header(&shape, footer));
        }
        seeds.add("fragment_footer", &with_header(&shape, &bytes));
        // The format version comes from the fragment's name, as the loader takes it.
        let Some(version) = file
            .parent()
            .and_then(|dir| dir.file_name())
            .and_then(|name| TimestampedName::parse(&name.to_string_lossy()).ok())
            .map(|name| name.format_version())
        else {
            continue;
        };
        let fm = parse_metadata_file(&bytes, schema, None, version)
            .or_else(|_| parse_metadata_file(&bytes, schema, Some(&FUZZ_KEY), version));
        let Ok(fm) = fm else {
            continue;
        };
        // Every generic tile of the file, whole and as a decoded payload.
        let mut at = 0u64;
        while at < fm.footer_offset {
            let Ok(tile) = generic_tile(&bytes, at) else {
                break;
            };
            if let Some(raw) = bytes.get(at as usize..tile.end as usize) {
                seeds.add("generic_tile", raw);
            }
            seeds.add("fragment_footer", &with_header(&shape, &tile.payload));
            at = tile.end;
        }
        // The first tile of every attribute file, for its filters.
        seed_attribute_tiles(
            seeds,
            file.parent().unwrap_or(array),
            schema,
            &fm,
            head.version,
        );
    }
}

/// The first tile of every attribute file of a fragment (in `dir`): a
/// `pipeline` seed with its stored filters and, when it has one filter
/// alone, a seed of that filter's target.
fn seed_attribute_tiles(
    seeds: &mut Seeds,
    dir: &Path,
    schema: &ArraySchema,
    fm: &FragmentMetadataFile,
    version: u32,
) {
    for (i, attribute) in schema.stored.attributes.iter().enumerate() {
        let Some(start) = fm.tile_offsets.get(i).and_then(|o| o.first().copied()) else {
            continue;
        };
        let var = attribute.cell_val_num == u32::MAX;
        let (data_file, offsets) = if var {
            (
                dir.join(format!("a{i}_var.tdb")),
                fm.tile_var_offsets.get(i),
            )
        } else {
            (dir.join(format!("a{i}.tdb")), fm.tile_offsets.get(i))
        };
        let Ok(data) = std::fs::read(&data_file) else {
            continue;
        };
        let start = if var {
            offsets.and_then(|o| o.first().copied()).unwrap_or(start)
        } else {
            start
        };
        let end = offsets
            .and_then(|o| o.get(1).copied())
            .unwrap_or(data.len() as u64);
        let Some(tile) = data.get(start as usize..end as usize) else {
            continue;
        };
        let datatype = attribute.datatype;
        if let Some(input) = pipeline_input(&attribute.filters, version, datatype, tile) {
            seeds.add("pipeline", &input);
        }
        let Ok(pipeline) = FilterPipeline::from_stored(&attribute.filters) else {
            continue;
        };
        if let [only] = pipeline.filters.as_slice() {
            let header = filter_header(only, datatype, version, attribute.cell_val_num);
            seeds.add(target_name(filter_kind(only)), &with_header(&header, tile));
        }
    }
}

/// Tiles filtered here, so every filter target starts from valid input
/// even when the corpus has no array with that filter alone.
fn seed_filters(seeds: &mut Seeds) {
    let ramp: Vec<u8> = (0u32..512)
        .flat_map(|i| (i * 7 / 3).to_le_bytes())
        .collect();
    let text = b"alpha beta beta gamma gamma gamma delta".repeat(8);
    let filters = [
        Filter::None,
        Filter::Gzip { level: 6 },
        Filter::Zstd { level: 3 },
        Filter::Lz4 { level: 1 },
        Filter::Rle { level: 0 },
        Filter::Bzip2 { level: 9 },
        Filter::DoubleDelta {
            level: 0,
            reinterpret: None,
        },
        Filter::Delta {
            level: 0,
            reinterpret: Some(Datatype::Int32),
        },
        Filter::Dictionary { level: 0 },
        Filter::BitWidthReduction { max_window: 256 },
        Filter::PositiveDelta { max_window: 256 },
        Filter::BitShuffle,
        Filter::ByteShuffle,
        Filter::ChecksumMd5,
        Filter::ChecksumSha256,
        Filter::ScaleFloat {
            scale: 0.5,
            offset: 1.0,
            byte_width: 4,
        },
        Filter::Xor,
        Filter::Aes256Gcm,
    ];
    for f in &filters {
        for (datatype, cells) in [
            (Datatype::Int32, &ramp),
            (Datatype::Uint32, &ramp),
            (Datatype::Float32, &ramp),
            (Datatype::Uint8, &ramp),
            (Datatype::StringAscii, &text),
        ] {
            if !f.accepts(datatype) {
                continue;
            }
            let pipeline = FilterPipeline::new(vec![f.clone()]);
            let ctx = FilterContext::new(datatype, datatype.size(), 22).with_key(FUZZ_KEY);
            let Ok(tile) = filter_tile(cells, &pipeline, &ctx) else {
                continue;
            };
            let header = filter_header(f, datatype, 22, 1);
            seeds.add(target_name(filter_kind(f)), &with_header(&header, &tile));
        }
    }
    // WebP needs a 2-D RGB tile.
    let webp = Filter::Webp {
        quality: 100.0,
        format: tiledb_runtime::filter::WebpFormat::Rgb,
        lossless: true,
        y_extent: 4,
        x_extent: 12,
    };
    let pixels: Vec<u8> = (0u8..48).collect();
    let ctx = FilterContext::new(Datatype::Uint8, 1, 22);
    if let Ok(tile) = filter_tile(&pixels, &FilterPipeline::new(vec![webp.clone()]), &ctx) {
        seeds.add(
            "filter_webp",
            &with_header(&filter_header(&webp, Datatype::Uint8, 22, 1), &tile),
        );
    }
}

fn main() {
    let fuzz_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = fuzz_dir.parent().expect("the workspace above fuzz/");
    let mut seeds = Seeds {
        out: fuzz_dir.join("corpus"),
        written: BTreeSet::new(),
    };
    for (target, _) in TARGETS {
        std::fs::create_dir_all(seeds.out.join(target)).expect("create the corpus folder");
    }
    for producer in ["tiledb-2.30", "tiledb-2.13"] {
        let root = workspace.join("conformance/corpus").join(producer);
        let Ok(cases) = std::fs::read_dir(&root) else {
            continue;
        };
        let mut cases: Vec<PathBuf> = cases.flatten().map(|e| e.path()).collect();
        cases.sort();
        for case in cases {
            for folder in ["array", "group"] {
                let array = case.join(folder);
                if array.is_dir() {
                    seed_array(&mut seeds, &array);
                }
            }
        }
    }
    seed_filters(&mut seeds);
    // A folder whose files link out of it, and a small round-trip input.
    let mut links = Vec::new();
    encode_entry(
        "__schema/__1_1_00000000000000000000000000000000",
        b"@../outside",
        &mut links,
    );
    encode_entry(
        "__commits/__1_1_00000000000000000000000000000000_22.wrt",
        b"@/etc/passwd",
        &mut links,
    );
    seeds.add("array_directory", &links);
    seeds.add(
        "roundtrip",
        &[3, 1, 0, 2, 1, 5, 4, 9, 9, 9, 9, 1, 2, 3, 4, 5, 6, 7, 8],
    );
    let mut counts = std::collections::BTreeMap::new();
    for (target, _) in &seeds.written {
        *counts.entry(target.clone()).or_insert(0usize) += 1;
    }
    for (target, _) in TARGETS {
        println!(
            "{target:>32}: {} seed(s)",
            counts.get(*target).copied().unwrap_or(0)
        );
    }
}
