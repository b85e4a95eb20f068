//! Byte-level agreement with TileDB 2.30 on tiles it wrote
//! (`runtime/tests/data/filters/`, made by
//! `conformance/scripts/filter_vectors.py` with tiledb-py 0.36.1):
//!
//! (a) our reverse pipeline turns TileDB's tile bytes into exactly the values
//!     TileDB reads back;
//! (b) where TileDB's output is deterministic, our forward pipeline turns
//!     those values into exactly TileDB's tile bytes.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};
use tiledb_runtime::filter::{Datatype, Filter, FilterContext, FilterPipeline, WebpFormat};
use tiledb_runtime::tile::{
    filter_tile, filter_var_tile, unfilter_tile, unfilter_tiles, unfilter_var_string_tile,
    unfilter_var_string_tiles, TileJob, SKIPPED_OFFSETS_TILE,
};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/filters")
}

fn datatype(name: &str) -> Datatype {
    (0u8..=43)
        .filter_map(Datatype::from_value)
        .find(|d| d.name() == name)
        .unwrap_or_else(|| panic!("unknown datatype {name}"))
}

fn filter(v: &Value) -> Filter {
    let level = || v["level"].as_i64().expect("level") as i32;
    let window = || v["max_window"].as_u64().expect("max_window") as u32;
    let reinterpret = || {
        v.get("reinterpret")
            .map(|r| datatype(&r.as_str().expect("name").to_uppercase()))
    };
    match v["type"].as_str().expect("type") {
        "NONE" => Filter::None,
        "GZIP" => Filter::Gzip { level: level() },
        "ZSTD" => Filter::Zstd { level: level() },
        "LZ4" => Filter::Lz4 { level: level() },
        "RLE" => Filter::Rle { level: level() },
        "BZIP2" => Filter::Bzip2 { level: level() },
        "DICTIONARY" => Filter::Dictionary { level: level() },
        "DOUBLE_DELTA" => Filter::DoubleDelta {
            level: level(),
            reinterpret: reinterpret(),
        },
        "DELTA" => Filter::Delta {
            level: level(),
            reinterpret: reinterpret(),
        },
        "BIT_WIDTH_REDUCTION" => Filter::BitWidthReduction {
            max_window: window(),
        },
        "POSITIVE_DELTA" => Filter::PositiveDelta {
            max_window: window(),
        },
        "BITSHUFFLE" => Filter::BitShuffle,
        "BYTESHUFFLE" => Filter::ByteShuffle,
        "CHECKSUM_MD5" => Filter::ChecksumMd5,
        "CHECKSUM_SHA256" => Filter::ChecksumSha256,
        "XOR" => Filter::Xor,
        "SCALE_FLOAT" => Filter::ScaleFloat {
            scale: v["scale"].as_f64().expect("scale"),
            offset: v["offset"].as_f64().expect("offset"),
            byte_width: v["byte_width"].as_u64().expect("byte_width"),
        },
        "WEBP" => Filter::Webp {
            quality: v["quality"].as_f64().expect("quality") as f32,
            format: WebpFormat::from_value(v["format"].as_u64().expect("format") as u8)
                .expect("format"),
            lossless: v["lossless"].as_bool().expect("lossless"),
            y_extent: v["y_extent"].as_u64().expect("y") as u16,
            x_extent: v["x_extent"].as_u64().expect("x") as u16,
        },
        other => panic!("unknown filter {other}"),
    }
}

fn pipeline(list: &Value, encrypted: bool) -> FilterPipeline {
    let mut filters: Vec<Filter> = list
        .as_array()
        .expect("filters")
        .iter()
        .map(filter)
        .collect();
    if encrypted {
        filters.push(Filter::Aes256Gcm);
    }
    FilterPipeline::new(filters)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(data_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn read_gz(name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&read(name)[..])
        .read_to_end(&mut out)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    out
}

fn as_u64s(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

fn u64_bytes(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

struct Case {
    name: String,
    datatype: Datatype,
    ctx: FilterContext,
    pipeline: FilterPipeline,
    var: bool,
    cell_count: u64,
    values: Vec<u8>,
    tile: Vec<u8>,
    json: Value,
}

fn cases() -> Vec<Case> {
    let manifest: Value = serde_json::from_slice(&read("manifest.json")).expect("manifest");
    manifest["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            let name = c["name"].as_str().expect("name").to_string();
            let datatype = datatype(c["datatype"].as_str().expect("datatype"));
            let encrypted = c.get("encryption_key").is_some();
            let mut ctx = FilterContext::new(
                datatype,
                c["cell_size"].as_u64().expect("cell size"),
                c["version"].as_u64().expect("version") as u32,
            );
            if let Some(key) = c.get("encryption_key") {
                let key: [u8; 32] = key
                    .as_str()
                    .expect("key")
                    .as_bytes()
                    .try_into()
                    .expect("32-byte key");
                ctx = ctx.with_key(key);
            }
            let values = read_gz(&format!("{name}.values.gz"));
            assert_eq!(
                values.len() as u64,
                c["values_len"].as_u64().expect("len"),
                "{name}"
            );
            assert_eq!(
                format!("{:x}", Sha256::digest(&values)),
                c["values_sha256"].as_str().expect("sha"),
                "{name}: values file does not match the manifest"
            );
            Case {
                var: c.get("offsets_filters").is_some(),
                cell_count: c["cell_count"].as_u64().expect("cells"),
                pipeline: pipeline(&c["filters"], encrypted),
                tile: read(&format!("{name}.tile")),
                name,
                datatype,
                ctx,
                values,
                json: c.clone(),
            }
        })
        .collect()
}

fn offsets_ctx(case: &Case) -> (FilterPipeline, FilterContext) {
    let encrypted = case.ctx.encryption_key.is_some();
    let mut ctx = FilterContext::new(Datatype::Uint64, 8, case.ctx.version);
    ctx.encryption_key = case.ctx.encryption_key;
    (pipeline(&case.json["offsets_filters"], encrypted), ctx)
}

#[test]
fn decodes_every_tile_tiledb_wrote() {
    let cases = cases();
    assert!(
        cases.len() > 100,
        "the manifest lists {} cases",
        cases.len()
    );
    for case in &cases {
        let name = &case.name;
        if case.var {
            let cells = as_u64s(&read_gz(&format!("{name}.cells.gz")));
            let stored_offsets = read(&format!("{name}.offsets"));
            if case.json.get("tiledb_cannot_read").is_some() {
                // TileDB wrote a length field too narrow for the last
                // string (and crashes reading it back); we report it.
                let e = unfilter_var_string_tile(
                    &case.tile,
                    &case.pipeline,
                    &case.ctx,
                    case.values.len() as u64,
                    case.cell_count,
                )
                .unwrap_err();
                assert_eq!(
                    e.class(),
                    tiledb_runtime::ErrorClass::Corrupt,
                    "{name}: {e}"
                );
                // What we write for the same strings reads back.
                let ours = filter_var_tile(&case.values, &cells, &case.pipeline, &case.ctx)
                    .expect("write");
                let (data, offsets) = unfilter_var_string_tile(
                    &ours,
                    &case.pipeline,
                    &case.ctx,
                    case.values.len() as u64,
                    case.cell_count,
                )
                .expect("our tile");
                assert_eq!((data, offsets), (case.values.clone(), cells), "{name}");
            } else if case.pipeline.skips_offsets(case.datatype, case.ctx.version) {
                assert_eq!(stored_offsets, SKIPPED_OFFSETS_TILE, "{name}: offsets tile");
                let (data, offsets) = unfilter_var_string_tile(
                    &case.tile,
                    &case.pipeline,
                    &case.ctx,
                    case.values.len() as u64,
                    case.cell_count,
                )
                .unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(data, case.values, "{name}: var data");
                assert_eq!(offsets, cells, "{name}: rebuilt offsets");
            } else {
                let data = unfilter_tile(
                    &case.tile,
                    &case.pipeline,
                    &case.ctx,
                    case.values.len() as u64,
                )
                .unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(data, case.values, "{name}: var data");
                let (op, octx) = offsets_ctx(case);
                let offsets = unfilter_tile(&stored_offsets, &op, &octx, 8 * case.cell_count)
                    .unwrap_or_else(|e| panic!("{name} offsets: {e}"));
                assert_eq!(as_u64s(&offsets), cells, "{name}: offsets");
            }
        } else {
            let data = unfilter_tile(
                &case.tile,
                &case.pipeline,
                &case.ctx,
                case.values.len() as u64,
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                data == case.values,
                "{name}: decoded values differ from TileDB's"
            );
        }
        if let Some(validity) = case.json.get("validity_sha256") {
            let vp = pipeline(&case.json["validity_filters"], false);
            let vctx = FilterContext::new(Datatype::Uint8, 1, case.ctx.version);
            let stored = read(&format!("{name}.validity"));
            let decoded = unfilter_tile(&stored, &vp, &vctx, case.cell_count).expect("validity");
            assert_eq!(
                &format!("{:x}", Sha256::digest(&decoded)),
                validity.as_str().expect("sha"),
                "{name}"
            );
        }
    }
}

#[test]
fn decodes_all_fixed_tiles_as_one_parallel_batch() {
    // One pipeline per batch: group the cases that share the simplest one.
    let cases: Vec<Case> = cases()
        .into_iter()
        .filter(|c| !c.var && c.pipeline == FilterPipeline::new(vec![Filter::Zstd { level: -1 }]))
        .collect();
    assert!(cases.len() >= 4);
    for group in
        cases.chunk_by(|a, b| a.datatype == b.datatype && a.ctx.cell_size == b.ctx.cell_size)
    {
        let jobs: Vec<TileJob<'_>> = group
            .iter()
            .enumerate()
            .map(|(i, c)| TileJob {
                bytes: &c.tile,
                file_offset: 0,
                index: i as u64,
                expected_len: c.values.len() as u64,
                wanted: None,
            })
            .collect();
        let out = unfilter_tiles(&jobs, &group[0].pipeline, &group[0].ctx).expect("batch");
        for (c, o) in group.iter().zip(out) {
            assert_eq!(o, c.values, "{}", c.name);
        }
    }
}

#[test]
fn decodes_string_encoded_tiles_as_one_parallel_batch() {
    for first in [Filter::Rle { level: -1 }, Filter::Dictionary { level: -1 }] {
        let cases: Vec<Case> = cases()
            .into_iter()
            .filter(|c| c.var && c.pipeline == FilterPipeline::new(vec![first.clone()]))
            .filter(|c| c.json.get("tiledb_cannot_read").is_none())
            .collect();
        assert!(cases.len() >= 2, "{first:?}");
        for group in cases.chunk_by(|a, b| a.datatype == b.datatype) {
            let jobs: Vec<TileJob<'_>> = group
                .iter()
                .enumerate()
                .map(|(i, c)| TileJob {
                    bytes: &c.tile,
                    file_offset: 0,
                    index: i as u64,
                    expected_len: c.values.len() as u64,
                    wanted: None,
                })
                .collect();
            let cells: Vec<u64> = group.iter().map(|c| c.cell_count).collect();
            let out = unfilter_var_string_tiles(&jobs, &cells, &group[0].pipeline, &group[0].ctx)
                .expect("batch");
            for (c, (data, offsets)) in group.iter().zip(out) {
                assert_eq!(data, c.values, "{}", c.name);
                assert_eq!(
                    offsets,
                    as_u64s(&read_gz(&format!("{}.cells.gz", c.name))),
                    "{}",
                    c.name
                );
            }
        }
    }
}

/// Why our bytes may differ from TileDB's for a case, or `None` where they
/// must be identical.
fn known_difference(case: &Case) -> Option<&'static str> {
    let has = |f: fn(&Filter) -> bool| case.pipeline.filters.iter().any(f);
    if has(|f| matches!(f, Filter::Aes256Gcm)) {
        return Some("AES-256-GCM draws a random IV per part");
    }
    if has(|f| matches!(f, Filter::Webp { .. })) && !cfg!(feature = "libwebp") {
        return Some("WebP: without the libwebp feature our encoder is not libwebp's (lossless) or absent (lossy)");
    }
    if has(|f| {
        matches!(
            f,
            Filter::Webp {
                lossless: false,
                ..
            }
        )
    }) {
        // Lossless output matches TileDB's byte for byte; the lossy encoder
        // of the libwebp we build is not the one in TileDB 2.30's wheel.
        return Some("lossy WebP: a different libwebp build than TileDB's");
    }
    if case.json.get("tiledb_cannot_read").is_some() {
        return Some(
            "TileDB's string RLE writes a too-narrow length for the last run; ours is readable",
        );
    }
    if case.name == "chain_dd_bwr_zstd_int64" {
        // Double-delta output seen as int64 has a value range that overflows,
        // so bit-width reduction stores the windows raw; TileDB then writes
        // an uninitialized window minimum (a stack value), we write the
        // window's minimum.
        return Some("BIT_WIDTH_REDUCTION raw window: TileDB stores an uninitialized minimum");
    }
    None
}

#[test]
fn encodes_like_tiledb_where_deterministic() {
    let mut identical = Vec::new();
    let mut differing = Vec::new();
    for case in cases() {
        if let Some(reason) = known_difference(&case) {
            println!("not compared: {} ({reason})", case.name);
            continue;
        }
        let ours = if case.var {
            let cells = as_u64s(&read_gz(&format!("{}.cells.gz", case.name)));
            if !case.pipeline.skips_offsets(case.datatype, case.ctx.version) {
                let (op, octx) = offsets_ctx(&case);
                let offsets = filter_tile(&u64_bytes(&cells), &op, &octx).expect("offsets");
                if offsets != read(&format!("{}.offsets", case.name)) {
                    differing.push(format!("{} (offsets tile)", case.name));
                }
            }
            filter_var_tile(&case.values, &cells, &case.pipeline, &case.ctx)
        } else {
            filter_tile(&case.values, &case.pipeline, &case.ctx)
        }
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        if ours == case.tile {
            identical.push(case.name);
        } else {
            differing.push(case.name);
        }
    }
    println!(
        "byte-identical to TileDB ({}): {}",
        identical.len(),
        identical.join(" ")
    );
    println!(
        "different from TileDB ({}): {}",
        differing.len(),
        differing.join(" ")
    );
    assert!(
        differing.is_empty(),
        "our tiles differ from TileDB's for: {differing:?}"
    );
}

/// Our AES tile for TileDB's encrypted case has TileDB's length and opens
/// with the key. With `FILTER_VECTORS_OURS=<dir>` set it is also written
/// there, for `filter_vectors.py --check-ours <dir>` to swap into a real
/// encrypted array and read back with TileDB.
#[test]
fn our_encrypted_tile_has_tiledbs_shape() {
    for case in cases()
        .into_iter()
        .filter(|c| c.ctx.encryption_key.is_some())
    {
        let ours = filter_tile(&case.values, &case.pipeline, &case.ctx).expect("encrypt");
        assert_eq!(ours.len(), case.tile.len(), "{}", case.name);
        assert_ne!(
            ours, case.tile,
            "{}: a fresh IV must change the bytes",
            case.name
        );
        let back = unfilter_tile(&ours, &case.pipeline, &case.ctx, case.values.len() as u64)
            .expect("decrypt");
        assert_eq!(back, case.values);
        if let Some(dir) = std::env::var_os("FILTER_VECTORS_OURS") {
            let dir = PathBuf::from(dir);
            std::fs::create_dir_all(&dir).expect("dir");
            std::fs::write(dir.join(format!("{}.tile", case.name)), &ours).expect("write");
        }
    }
}
