//! Hostile input against the generated structures: lengths beyond the bytes
//! present, runaway nesting, invalid booleans and enum values, and every
//! truncation of real payloads. Each must be an error naming the byte offset
//! and field, never a panic, an abort or an allocation of the claimed size.

use std::path::Path;

use tiledb_runtime::filter::{FilterContext, FilterPipeline as RuntimePipeline};
use tiledb_runtime::format::generated::*;
use tiledb_runtime::format::io::{read_exact_from, read_prefix, write_to_vec, MAX_LIST_NESTING};
use tiledb_runtime::tile::unfilter_tile;
use tiledb_runtime::{Cause, Error, ErrorClass};

/// A query-condition value node: `a < 7` (an i32).
fn value_node() -> Vec<u8> {
    let mut bytes = vec![AstNodeType::Value.value(), QueryConditionOp::Lt.value()];
    bytes.extend(1u32.to_le_bytes());
    bytes.push(b'a');
    bytes.extend(4u64.to_le_bytes());
    bytes.extend(7i32.to_le_bytes());
    bytes
}

/// `depth` expression nodes, each with one child, around a value node.
fn nested_condition(depth: usize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(depth * 10 + 32);
    for _ in 0..depth {
        bytes.push(AstNodeType::Expression.value());
        bytes.push(CombinationOp::And.value());
        bytes.extend(1u64.to_le_bytes());
    }
    bytes.extend(value_node());
    bytes
}

#[test]
fn nested_conditions_within_the_limit_round_trip() {
    let bytes = nested_condition(MAX_LIST_NESTING as usize - 1);
    let condition: DeleteCommit = read_exact_from(&bytes, (), "DeleteCommit").expect("read");
    let written = write_to_vec(&condition, (), "DeleteCommit").expect("write");
    assert_eq!(written, bytes);
}

#[test]
fn runaway_nesting_is_an_error_not_a_stack_overflow() {
    // About 10 bytes per level: a small hostile file could otherwise nest
    // deeply enough to exhaust the stack.
    let bytes = nested_condition(200_000);
    let err = read_exact_from::<DeleteCommit>(&bytes, (), "DeleteCommit")
        .expect_err("nesting beyond the limit");
    // 64 nested lists were entered; the 65th expression's header (10 bytes)
    // was read, and its list of children refused.
    assert_eq!(
        err,
        Error::corrupt(
            65 * 10,
            "AstExpression.children",
            "lists nest more than 64 deep"
        )
    );
}

#[test]
fn a_chunk_length_beyond_the_bytes_present_is_refused_before_allocating() {
    // One chunk whose metadata claims 4 GiB.
    let mut bytes = 1u64.to_le_bytes().to_vec();
    bytes.extend(0u32.to_le_bytes()); // orig_len
    bytes.extend(0u32.to_le_bytes()); // filtered_len
    bytes.extend(u32::MAX.to_le_bytes()); // md_len
    bytes.extend([1, 2, 3]);
    let err = read_exact_from::<Tile>(&bytes, (), "Tile").expect_err("too long");
    // The metadata starts after the 8-byte count and 12-byte header.
    assert_eq!(
        err,
        Error::corrupt(
            20,
            "TileChunk.metadata",
            Cause::Truncated {
                needed: u32::MAX.into(),
                available: 3
            }
        )
    );
}

#[test]
fn a_count_beyond_the_bytes_present_is_refused_before_allocating() {
    let bytes = u64::MAX.to_le_bytes();
    let err = read_exact_from::<Tile>(&bytes, (), "Tile").expect_err("too many chunks");
    assert_eq!(
        err,
        Error::corrupt(
            8,
            "Tile.chunks",
            Cause::Truncated {
                needed: u64::MAX,
                available: 0
            }
        )
    );
}

#[test]
fn a_boolean_other_than_0_or_1_is_corrupt() {
    // A group member (version 2): type ARRAY, relative = 2.
    let mut bytes = 2u32.to_le_bytes().to_vec();
    bytes.push(ObjectType::Array.value());
    bytes.push(2);
    let err = read_prefix::<GroupMember>(&bytes, (), "GroupMember").expect_err("bad bool");
    assert_eq!(
        err,
        Error::corrupt(
            5,
            "GroupMember.relative",
            Cause::BadEnumValue {
                enum_name: "boolean",
                value: 2
            }
        )
    );
}

#[test]
fn an_unknown_enum_value_is_corrupt() {
    // A filter of type 200.
    let mut bytes = vec![200u8];
    bytes.extend(0u32.to_le_bytes());
    let err = read_exact_from::<Filter>(
        &bytes,
        FilterBinReadArgs::builder().version(22).finalize(),
        "Filter",
    )
    .expect_err("unknown filter type");
    assert_eq!(
        err,
        Error::corrupt(
            0,
            "FilterType",
            Cause::BadEnumValue {
                enum_name: "FilterType",
                value: 200
            }
        )
    );
    assert_eq!(FilterType::from_value(200), None);
    assert_eq!(FilterType::from_value(1), Some(FilterType::Gzip));
}

#[test]
fn every_truncation_of_a_real_schema_and_footer_is_an_error() {
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/corpus/tiledb-2.30/sparse.dims.string_and_int/array");
    let schema_file = std::fs::read_dir(case.join("__schema"))
        .expect("schema dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_file())
        .expect("schema file");
    let bytes = std::fs::read(schema_file).expect("schema");
    let (header, used): (GenericTileHeader, u64) =
        read_prefix(&bytes, (), "GenericTileHeader").expect("header");
    let payload = unfilter_tile(
        &bytes[used as usize..],
        &RuntimePipeline::generic_tile(false),
        &FilterContext::generic_tile(header.version),
        header.tile_size,
    )
    .expect("payload");
    let schema: ArraySchema = read_exact_from(&payload, (), "ArraySchema").expect("schema");
    // The current domain is typed: every cut, into it too, is an error.
    assert!(schema.current_domain.is_some(), "a version-22 schema");
    for cut in 0..payload.len() {
        let result = read_exact_from::<ArraySchema>(&payload[..cut], (), "ArraySchema");
        let err = result.expect_err("a truncated schema must not parse");
        assert_eq!(err.class(), ErrorClass::Corrupt, "cut at {cut}: {err}");
    }
    for cut in 0..used as usize {
        assert!(
            read_prefix::<GenericTileHeader>(&bytes[..cut], (), "GenericTileHeader").is_err(),
            "header cut at {cut}"
        );
    }
}

/// The decoded payload of a whole-file generic tile.
fn tile_payload(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).expect("file");
    let (header, used): (GenericTileHeader, u64) =
        read_prefix(&bytes, (), "GenericTileHeader").expect("header");
    unfilter_tile(
        &bytes[used as usize..],
        &RuntimePipeline::generic_tile(false),
        &FilterContext::generic_tile(header.version),
        header.tile_size,
    )
    .expect("payload")
}

/// Every single-byte corruption of real payloads is handled: an error, or a
/// value that writes back without trouble; never a panic.
#[test]
fn single_byte_corruptions_never_panic() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/corpus/tiledb-2.30");
    let first_file = |dir: &Path| {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .expect("dir")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        files.remove(0)
    };
    let schema = tile_payload(&first_file(
        &corpus.join("sparse.dims.string_and_int/array/__schema"),
    ));
    let metadata = tile_payload(&first_file(
        &corpus.join("array.metadata.basic/array/__meta"),
    ));
    let delete = tile_payload(
        &std::fs::read_dir(corpus.join("sparse.delete.condition/array/__commits"))
            .expect("commits")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "del"))
            .expect("a .del file"),
    );
    let mut outcomes = [0usize; 2];
    for (payload, kind) in [(&schema, 0), (&metadata, 1), (&delete, 2)] {
        for at in 0..payload.len() {
            for flip in [0xffu8, 0x80, 0x01, 0x7f] {
                let mut bytes = payload.clone();
                bytes[at] ^= flip;
                let parsed = match kind {
                    0 => read_exact_from::<ArraySchema>(&bytes, (), "ArraySchema")
                        .map(|v| write_to_vec(&v, (), "ArraySchema").map(|_| ())),
                    1 => read_exact_from::<Metadata>(&bytes, (), "Metadata")
                        .map(|v| write_to_vec(&v, (), "Metadata").map(|_| ())),
                    _ => read_exact_from::<DeleteCommit>(&bytes, (), "DeleteCommit")
                        .map(|v| write_to_vec(&v, (), "DeleteCommit").map(|_| ())),
                };
                match parsed {
                    Ok(_) => outcomes[0] += 1,
                    Err(err) => {
                        assert_eq!(err.class(), ErrorClass::Corrupt, "{err}");
                        outcomes[1] += 1;
                    }
                }
            }
        }
    }
    // Both outcomes occur: many corruptions are caught, some are just other values.
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}
