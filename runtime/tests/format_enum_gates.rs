//! Enum values outside their `since`/`until` (spec/enums.toml) for the
//! format version of the file that holds them are `unsupported`: never
//! corrupt, never accepted. Crafted generic tiles whose header's pipeline
//! holds a filter type one version before it exists; the same tile at the
//! version it arrived in gets past the gate.

use tiledb_runtime::filter::FilterPipeline;
use tiledb_runtime::format::generated::{FilterType, OLDEST_FORMAT_VERSION};
use tiledb_runtime::tile::generic::read_generic_tile;
use tiledb_runtime::ErrorClass;

/// The options bytes TileDB stores for a filter type (a compressor byte and
/// a level for the compressors, a window for the window filters).
fn options(filter_type: FilterType, version: u32) -> Vec<u8> {
    match filter_type {
        FilterType::Dictionary => vec![7, 0, 0, 0, 0],
        FilterType::Delta if version >= 19 => vec![8, 0, 0, 0, 0, 17],
        FilterType::Delta => vec![8, 0, 0, 0, 0],
        FilterType::ScaleFloat => {
            [1f64.to_le_bytes(), 0f64.to_le_bytes(), 8u64.to_le_bytes()].concat()
        }
        FilterType::Webp => vec![0, 0, 200, 66, 0, 1, 1, 0, 1, 0, 0, 0],
        _ => Vec::new(),
    }
}

/// A generic tile of format `version` holding `payload` unfiltered, whose
/// header's pipeline names `filter_type`.
fn generic_tile(version: u32, filter_type: FilterType, payload: &[u8]) -> Vec<u8> {
    let options = options(filter_type, version);
    let mut pipeline = Vec::new();
    pipeline.extend(65536u32.to_le_bytes());
    pipeline.extend(1u32.to_le_bytes());
    pipeline.push(filter_type.value());
    pipeline.extend((options.len() as u32).to_le_bytes());
    pipeline.extend(&options);
    let mut bytes = Vec::new();
    bytes.extend(version.to_le_bytes());
    bytes.extend((payload.len() as u64).to_le_bytes()); // persisted size
    bytes.extend((payload.len() as u64).to_le_bytes()); // tile size
    bytes.push(6); // UINT8
    bytes.extend(1u64.to_le_bytes());
    bytes.push(0); // no encryption
    bytes.extend((pipeline.len() as u32).to_le_bytes());
    bytes.extend(pipeline);
    bytes.extend(payload);
    bytes
}

/// Every filter type with a `since` above the oldest version: one version
/// before it, the tile is unsupported and the message names the gate.
#[test]
fn a_filter_type_before_its_version_is_unsupported() {
    let gated: Vec<FilterType> = FilterType::ALL
        .iter()
        .copied()
        .filter(|t| t.since().is_some_and(|s| s > OLDEST_FORMAT_VERSION))
        .collect();
    assert!(
        gated.contains(&FilterType::Xor) && gated.contains(&FilterType::Delta),
        "{gated:?}"
    );
    for filter_type in gated {
        let since = filter_type.since().expect("gated");
        let bytes = generic_tile(since - 1, filter_type, &[1, 2, 3, 4]);
        let err = read_generic_tile(&bytes, 0, None).expect_err("a filter before its version");
        assert_eq!(err.class(), ErrorClass::Unsupported, "{filter_type}: {err}");
        let message = err.to_string();
        assert!(
            message.contains(&format!(
                "filter type {} ({}) exists from format version {since}, but the file is format version {}",
                filter_type.name(),
                filter_type.value(),
                since - 1
            )),
            "{message}"
        );
    }
}

/// At the version a filter type arrived in, the gate lets it through: the
/// tile is read on (what happens next is the filter's business, not the gate's).
#[test]
fn a_filter_type_from_its_version_passes_the_gate() {
    for filter_type in [FilterType::Xor, FilterType::Dictionary, FilterType::Delta] {
        let since = filter_type.since().expect("gated");
        let bytes = generic_tile(since, filter_type, &[1, 2, 3, 4]);
        if let Err(err) = read_generic_tile(&bytes, 0, None) {
            assert!(
                !err.to_string().contains("exists from format version"),
                "{filter_type} at {since}: {err}"
            );
        }
    }
}

/// The version check of a stored pipeline, directly: XOR is version 16's.
#[test]
fn from_stored_at_checks_every_filter() {
    use tiledb_runtime::format::generated::filter_pipeline as stored;
    let pipeline = stored::FilterPipeline {
        max_chunk_size: 65536,
        filters: vec![stored::Filter {
            filter_type: FilterType::Xor,
            options: stored::FilterOptions::NoOptions(stored::NoOptions {}),
        }],
    };
    let err = FilterPipeline::from_stored_at(&pipeline, 15).expect_err("XOR in version 15");
    assert_eq!(err.class(), ErrorClass::Unsupported, "{err}");
    let ok = FilterPipeline::from_stored_at(&pipeline, 16).expect("XOR in version 16");
    assert_eq!(ok.filters.len(), 1);
    // Every type the spec lists is one the runtime implements.
    for filter_type in FilterType::ALL {
        assert!(
            tiledb_runtime::filter::is_implemented(*filter_type),
            "{filter_type} is in spec/enums.toml but not implemented"
        );
    }
}

/// The retired filter type 17 (BITSORT, formats 16-17 only) is a value the
/// format had, which no reader handles any more: `unsupported`, never
/// `corrupt` — as retired inside its versions, by its gate outside them.
#[test]
fn the_retired_filter_type_is_unsupported() {
    assert_eq!(FilterType::Deprecated.since(), Some(16));
    assert_eq!(FilterType::Deprecated.until(), Some(18));
    for (version, message) in [
        (16, "filter type 17 is retired"),
        (17, "filter type 17 is retired"),
        (15, "DEPRECATED"),
        (22, "DEPRECATED"),
    ] {
        let bytes = generic_tile(version, FilterType::Deprecated, &[1, 2, 3, 4]);
        let err = read_generic_tile(&bytes, 0, None).expect_err("filter type 17");
        assert_eq!(err.class(), ErrorClass::Unsupported, "v{version}: {err}");
        assert!(err.to_string().contains(message), "v{version}: {err}");
    }
}

/// The compressor byte of a filter's options is gated like the filter
/// type: DICTIONARY (7) from version 13, DELTA (8) from 19.
#[test]
fn a_compressor_before_its_version_is_unsupported() {
    use tiledb_runtime::format::generated::filter_pipeline as stored;
    use tiledb_runtime::format::generated::Compressor;
    let gated: Vec<Compressor> = Compressor::ALL
        .iter()
        .copied()
        .filter(|c| c.since().is_some())
        .collect();
    assert_eq!(gated, vec![Compressor::Dictionary, Compressor::Delta]);
    for compressor in gated {
        let since = compressor.since().expect("gated");
        let pipeline = stored::FilterPipeline {
            max_chunk_size: 65536,
            filters: vec![stored::Filter {
                // A type without a gate of its own: only the compressor's applies.
                filter_type: FilterType::Gzip,
                options: stored::FilterOptions::CompressionOptions(stored::CompressionOptions {
                    compressor,
                    level: 0,
                }),
            }],
        };
        let err = FilterPipeline::from_stored_at(&pipeline, since - 1).expect_err("too early");
        assert_eq!(err.class(), ErrorClass::Unsupported, "{err}");
        assert!(
            err.to_string().contains(&format!(
                "compressor {} ({}) exists from format version {since}",
                compressor.name(),
                compressor.value()
            )),
            "{err}"
        );
        if let Err(err) = FilterPipeline::from_stored_at(&pipeline, since) {
            assert!(
                !err.to_string().contains("exists from format version"),
                "{compressor} at {since}: {err}"
            );
        }
    }
}
