//! Hostile inputs, each pinned to its exact error: the file, the byte
//! offset, the field path and the structured cause ([`Cause`]), compared as
//! a whole `Error` value.

use std::path::PathBuf;

use tiledb_runtime::filter::{Filter, FilterContext, FilterPipeline};
use tiledb_runtime::format::generated::{GenericTileHeader, GroupMember};
use tiledb_runtime::format::io::{read_exact_from, read_prefix};
use tiledb_runtime::storage::{LocalStorage, RelPath, Storage};
use tiledb_runtime::tile::generic::{
    load_generic_tile_file, read_generic_tile, read_generic_tile_exact, write_generic_tile,
};
use tiledb_runtime::tile::unfilter_tile;
use tiledb_runtime::{Cause, Error, Location};

/// A generic tile of format 22 holding `payload`, and the length of its header.
fn generic_tile(payload: &[u8]) -> (Vec<u8>, usize) {
    let bytes = write_generic_tile(payload, 22, None).expect("write");
    let (_, header_len): (GenericTileHeader, u64) =
        read_prefix(&bytes, (), "GenericTileHeader").expect("header");
    (bytes, header_len as usize)
}

/// A data tile's framing: the chunk count, then one chunk header per entry
/// (`original`, `data`, `metadata` lengths) with its body.
fn framed(chunks: &[(u32, &[u8], &[u8])], count: u64) -> Vec<u8> {
    let mut out = count.to_le_bytes().to_vec();
    for (original, data, metadata) in chunks {
        out.extend(original.to_le_bytes());
        out.extend((data.len() as u32).to_le_bytes());
        out.extend((metadata.len() as u32).to_le_bytes());
        out.extend_from_slice(metadata);
        out.extend_from_slice(data);
    }
    out
}

fn ctx() -> FilterContext {
    FilterContext::new(tiledb_runtime::filter::Datatype::Uint8, 1, 22)
}

#[test]
fn a_generic_tile_with_an_unknown_datatype_names_the_enum_and_value() {
    let (mut bytes, _) = generic_tile(b"hello");
    // version u32, persisted_size u64, tile_size u64, then the datatype.
    bytes[20] = 200;
    assert_eq!(
        read_generic_tile(&bytes, 0, None).unwrap_err(),
        Error::corrupt(
            20,
            "Datatype",
            Cause::BadEnumValue {
                enum_name: "Datatype",
                value: 200
            }
        )
    );
}

#[test]
fn a_generic_tile_body_past_the_end_is_truncated() {
    let (mut bytes, header_len) = generic_tile(b"hello, world");
    let body = (bytes.len() - header_len) as u64;
    bytes[4..12].copy_from_slice(&(body + 10).to_le_bytes());
    assert_eq!(
        read_generic_tile(&bytes, 0, None).unwrap_err(),
        Error::corrupt(
            4,
            "GenericTileHeader.persisted_size",
            Cause::Truncated {
                needed: body + 10,
                available: body
            }
        )
    );
}

#[test]
fn bytes_after_a_whole_file_tile_are_trailing_and_located_where_they_start() {
    let (mut bytes, _) = generic_tile(b"payload");
    let end = bytes.len() as u64;
    bytes.extend([0, 0, 0]);
    assert_eq!(
        read_generic_tile_exact(&bytes, None).unwrap_err(),
        Error::corrupt(end, "file", Cause::TrailingBytes { count: 3 })
    );
}

#[test]
fn an_error_in_a_file_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let storage = LocalStorage::new(dir.path());
    let (mut bytes, _) = generic_tile(b"x");
    bytes[20] = 99;
    let path = RelPath::parse("tile.tdb").unwrap();
    storage.write(&path, &bytes).unwrap();
    let err = load_generic_tile_file(&storage, &path, None).unwrap_err();
    let Error::Corrupt { at, cause } = &err else {
        panic!("expected a corrupt error, got {err:?}")
    };
    assert_eq!(
        *cause,
        Cause::BadEnumValue {
            enum_name: "Datatype",
            value: 99
        }
    );
    assert_eq!((at.offset, at.field.as_str()), (20, "Datatype"));
    assert!(at.file.ends_with("tile.tdb"), "{}", at.file.display());
    assert_eq!(
        err.to_string(),
        format!(
            "corrupt: {}: byte 20: Datatype: 99 is not a valid Datatype",
            at.file.display()
        )
    );
}

#[test]
fn a_chunk_count_beyond_the_bytes_is_truncated() {
    // Five chunks, but not even one 12-byte chunk header follows: the
    // count is judged against the bytes before any chunk is read.
    let mut tile = framed(&[], 5);
    tile.extend([0u8; 10]);
    assert_eq!(
        unfilter_tile(&tile, &FilterPipeline::default(), &ctx(), 0).unwrap_err(),
        Error::corrupt(
            8,
            "Tile.chunks",
            Cause::Truncated {
                needed: 60,
                available: 10
            }
        )
    );
}

#[test]
fn a_chunk_body_past_the_end_is_truncated() {
    let mut tile = framed(&[], 1);
    tile.extend(4u32.to_le_bytes()); // original length
    tile.extend(100u32.to_le_bytes()); // data length
    tile.extend(0u32.to_le_bytes()); // metadata length
    tile.extend([1, 2, 3, 4]);
    assert_eq!(
        unfilter_tile(&tile, &FilterPipeline::default(), &ctx(), 4).unwrap_err(),
        Error::corrupt(
            20,
            "Tile.chunks[0], TileChunk.data",
            Cause::Truncated {
                needed: 100,
                available: 4
            }
        )
    );
}

#[test]
fn chunks_that_unfilter_to_another_size_than_the_tile_are_inconsistent() {
    let tile = framed(&[(4, &[1, 2, 3, 4], &[])], 1);
    assert_eq!(
        unfilter_tile(&tile, &FilterPipeline::default(), &ctx(), 8).unwrap_err(),
        Error::corrupt(
            0,
            "chunks",
            Cause::Inconsistent {
                what: "the chunks' total original size",
                expected: 8,
                found: 4
            }
        )
    );
}

#[test]
fn a_filter_stage_names_the_part_it_found_truncated() {
    // ZSTD's metadata (part counts and sizes) is missing altogether.
    let tile = framed(&[(4, &[1, 2, 3, 4], &[])], 1);
    let pipeline = FilterPipeline::new(vec![Filter::Zstd { level: 1 }]);
    assert_eq!(
        unfilter_tile(&tile, &pipeline, &ctx(), 4).unwrap_err(),
        Error::corrupt(
            8,
            "chunk 0, ZSTD, chunk metadata byte 0, CompressionChunkMetadata.n_md_parts",
            Cause::Truncated {
                needed: 8,
                available: 0
            }
        )
    );
}

#[test]
fn structures_that_end_early_or_run_on_say_so() {
    assert_eq!(
        read_prefix::<GroupMember>(&[2, 0], (), "GroupMember").unwrap_err(),
        Error::corrupt(0, "GroupMember", Cause::EndsEarly)
    );
    let (mut bytes, header_len) = generic_tile(b"abc");
    bytes.truncate(header_len);
    bytes.extend([7, 7]);
    assert_eq!(
        read_exact_from::<GenericTileHeader>(&bytes, (), "GenericTileHeader").unwrap_err(),
        Error::corrupt(
            header_len as u64,
            "GenericTileHeader",
            Cause::TrailingBytes { count: 2 }
        )
    );
}

#[test]
fn a_text_cause_keeps_the_old_constructor_and_message() {
    let err = Error::corrupt(7, "ArraySchema.name", "a name that is not UTF-8")
        .in_file("__schema/x")
        .within("schema");
    assert_eq!(
        err,
        Error::Corrupt {
            at: Location {
                file: PathBuf::from("__schema/x"),
                offset: 7,
                field: "schema, ArraySchema.name".into(),
            },
            cause: Cause::Text("a name that is not UTF-8".into()),
        }
    );
    assert_eq!(
        err.to_string(),
        "corrupt: __schema/x: byte 7: schema, ArraySchema.name: a name that is not UTF-8"
    );
}
