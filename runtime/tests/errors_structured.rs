//! Hostile inputs, each pinned to its exact error: the file, the byte
//! offset, the field path and the structured cause ([`Cause`]), compared as
//! a whole `Error` value.

use std::path::PathBuf;

use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::check::{check_array, CheckOptions, Finding};
use tiledb_runtime::directory::group::resolve_member;
use tiledb_runtime::directory::text_files::{
    normalize_vacuum_line, parse_consolidated_commits, parse_vacuum_file,
};
use tiledb_runtime::directory::TimestampedName;
use tiledb_runtime::filter::{Filter, FilterContext, FilterPipeline};
use tiledb_runtime::format::generated::{GenericTileHeader, GroupMember, Range};
use tiledb_runtime::format::io::{read_exact_from, read_prefix};
use tiledb_runtime::fragment::footer_region;
use tiledb_runtime::read::ReadQuery;
use tiledb_runtime::schema::{parse_offsets_bytes, split_range, ArraySchema};
use tiledb_runtime::storage::{LocalStorage, RelPath, Storage};
use tiledb_runtime::tile::generic::{
    load_generic_tile_file, read_generic_tile, read_generic_tile_exact, write_generic_tile,
};
use tiledb_runtime::tile::unfilter_tile;
use tiledb_runtime::{Cause, Error, ErrorClass, Location};

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

// Schemas and enumerations.

#[test]
fn a_schema_shorter_than_its_version_is_truncated() {
    assert_eq!(
        ArraySchema::from_payload("s", &[22, 0]).unwrap_err(),
        Error::corrupt(
            0,
            "ArraySchema.version",
            Cause::Truncated {
                needed: 4,
                available: 2
            }
        )
    );
}

#[test]
fn enumeration_offsets_must_be_whole_ascending_and_within_the_data() {
    let offsets =
        |values: &[u64]| -> Vec<u8> { values.iter().flat_map(|v| v.to_le_bytes()).collect() };
    assert_eq!(
        parse_offsets_bytes(&[0; 12], 10).unwrap_err(),
        Error::corrupt(0, "offsets", Cause::NotMultiple { size: 12, unit: 8 })
    );
    assert_eq!(
        parse_offsets_bytes(&offsets(&[0, 5, 3]), 10).unwrap_err(),
        Error::corrupt(
            16,
            "offsets[2]",
            Cause::NotAscending {
                previous: 5,
                value: 3
            }
        )
    );
    assert_eq!(
        parse_offsets_bytes(&offsets(&[0, 11]), 10).unwrap_err(),
        Error::corrupt(
            8,
            "offsets[1]",
            Cause::OutOfRange {
                value: 11,
                limit: 10
            }
        )
    );
}

#[test]
fn a_range_that_does_not_split_names_its_lengths() {
    let fixed = Range {
        start_size: 0,
        data: vec![0; 6],
    };
    assert_eq!(
        split_range(&fixed, Some(4)).unwrap_err(),
        Error::corrupt(
            0,
            "Range.data",
            Cause::Inconsistent {
                what: "the byte length of a fixed [lo, hi] range",
                expected: 8,
                found: 6
            }
        )
    );
    let var = Range {
        start_size: 9,
        data: vec![0; 6],
    };
    assert_eq!(
        split_range(&var, None).unwrap_err(),
        Error::corrupt(
            0,
            "Range.start_size",
            Cause::OutOfRange { value: 9, limit: 6 }
        )
    );
}

// Fragment metadata.

#[test]
fn fragment_metadata_too_short_for_its_footer_length() {
    assert_eq!(
        footer_region(&[1, 2, 3]).unwrap_err(),
        Error::corrupt(
            0,
            "FooterLength",
            Cause::Truncated {
                needed: 8,
                available: 3
            }
        )
    );
    // 16 bytes whose last 8 claim a 100-byte footer before byte 8.
    let mut bytes = vec![0u8; 8];
    bytes.extend(100u64.to_le_bytes());
    assert_eq!(
        footer_region(&bytes).unwrap_err(),
        Error::corrupt(
            8,
            "FooterLength.footer_len",
            Cause::OutOfRange {
                value: 100,
                limit: 8
            }
        )
    );
}

// Directory names and text files.

const LABEL: &str = "0123456789abcdef0123456789abcdef";

#[test]
fn timestamped_names_state_the_rule_they_break() {
    let bad = |name: &str, expected: &'static str| {
        Error::corrupt(
            0,
            "timestamped name",
            Cause::BadName {
                name: name.into(),
                expected,
            },
        )
    };
    assert_eq!(
        TimestampedName::parse("x_1_2").unwrap_err(),
        bad("x_1_2", "a name starting with \"__\"")
    );
    let short_label = format!("__1_2_{}", &LABEL[1..]);
    assert_eq!(
        TimestampedName::parse(&short_label).unwrap_err(),
        bad(&short_label, "a name whose label is 32 characters long")
    );
    let backwards = format!("__2_1_{LABEL}_22.wrt");
    assert_eq!(
        TimestampedName::parse(&backwards).unwrap_err(),
        bad(
            &backwards,
            "a name whose start timestamp is not after its end timestamp"
        )
    );
}

#[test]
fn vacuum_and_commit_lines_name_the_line_and_what_it_must_be() {
    assert_eq!(
        normalize_vacuum_line("__fragments/../x", &["__fragments"]).unwrap_err(),
        Error::corrupt(
            0,
            "vacuum line",
            Cause::BadName {
                name: "__fragments/../x".into(),
                expected: "a path without `.` or `..` components"
            }
        )
    );
    // A .wrt commit belongs in __commits, not in the root; the second line
    // is the faulty one, located where it starts.
    let ok = format!("__1_1_{LABEL}_22.ok");
    let data = format!("{ok}\n{ok}.wrt\n").replace(".ok.wrt", ".wrt");
    let second = ok.len() as u64 + 1;
    assert_eq!(
        parse_consolidated_commits(data.as_bytes()).unwrap_err(),
        Error::corrupt(
            second,
            "consolidated commit line, consolidated commit",
            Cause::BadName {
                name: format!("__1_1_{LABEL}_22.wrt"),
                expected:
                    "a commit where its kind lives (.ok in the root, the others in __commits)"
            }
        )
    );
    assert_eq!(
        parse_vacuum_file(b"\xff\n", &["__fragments"]).unwrap_err(),
        Error::corrupt(0, "line", Cause::NotUtf8)
    );
}

#[test]
fn a_delete_commit_in_a_con_file_must_hold_its_size_and_tile() {
    // The size field runs into the end of the file: located there, naming
    // the entry (the generated `ConsolidatedCommits` reads the entries).
    let line = format!("__commits/__1_1_{LABEL}_22.del\n");
    let size_at = line.len() as u64;
    assert_eq!(
        parse_consolidated_commits(line.as_bytes()).unwrap_err(),
        Error::corrupt(size_at, "ConsolidatedCommits.entries[0]", Cause::EndsEarly)
    );
    let mut data = line.into_bytes();
    data.extend(100u64.to_le_bytes());
    data.extend([1, 2, 3]);
    assert_eq!(
        parse_consolidated_commits(&data).unwrap_err(),
        Error::corrupt(
            size_at + 8,
            "ConsolidatedCommit.tile",
            Cause::Truncated {
                needed: 100,
                available: 3
            }
        )
    );
}

#[test]
fn a_group_member_without_a_uri_is_empty() {
    assert_eq!(
        resolve_member("", false).unwrap_err(),
        Error::corrupt(
            0,
            "group member",
            Cause::Empty {
                what: "the member URI"
            }
        )
    );
}

// Reads.

/// A sparse array of one var-sized attribute whose offsets are stored
/// unfiltered, so that a test can rewrite them in place: four cells in two
/// tiles of two. `a0.tdb` holds each tile as its chunk count (8 bytes), one
/// chunk header (12) and two offsets (16): tile 1 starts at byte 36, its
/// offsets 0 and 2 at bytes 56 and 64, over 4 bytes of var data.
const UNFILTERED_VAR: &str = r#"
id = "errors.unfiltered_var"
title = "unfiltered var offsets"
level = "required"
[schema]
type = "sparse"
capacity = 2
offsets_filters = []
coords_filters = []
dims = [{ name = "d", type = "UINT32", domain = [0, 99], tile = 10 }]
attrs = [{ name = "a", type = "STRING_ASCII", cell_val_num = "var", filters = [] }]
[[steps]]
op = "write"
timestamp = 1
coords = { d = [1, 2, 3, 4] }
data = { a = ["ab", "cd", "ef", "gh"] }
"#;

/// Replays [`UNFILTERED_VAR`], overwrites the offset stored at byte `at` of
/// `a0.tdb` (which holds `was`) with `value` and reads everything; returns
/// the error and the offsets file's path within the array.
fn read_with_offset(at: usize, was: u64, value: u64) -> (Error, PathBuf) {
    let out = tempfile::tempdir().unwrap();
    tiledb_conformance::recipe::replay_case(UNFILTERED_VAR, out.path()).unwrap();
    let root = out.path().join("array");
    let fragment = std::fs::read_dir(root.join("__fragments"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let offsets = fragment.join("a0.tdb");
    let mut bytes = std::fs::read(&offsets).unwrap();
    assert_eq!(bytes.len(), 72, "two tiles of two unfiltered offsets");
    assert_eq!(bytes[at..at + 8], was.to_le_bytes(), "the offsets' layout");
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
    std::fs::write(&offsets, bytes).unwrap();
    let array = Array::open_path(&root, OpenOptions::default()).unwrap();
    let err = array.read(&ReadQuery::default()).unwrap_err();
    (err, offsets.strip_prefix(&root).unwrap().to_path_buf())
}

#[test]
fn var_offsets_that_descend_or_pass_the_data_are_located_at_their_tile() {
    for (at, was, value, cause) in [
        (
            56,
            0,
            3,
            Cause::NotAscending {
                previous: 3,
                value: 2,
            },
        ),
        (64, 2, 5, Cause::OutOfRange { value: 5, limit: 4 }),
    ] {
        let (err, offsets) = read_with_offset(at, was, value);
        let Error::Corrupt { at, cause: found } = &err else {
            panic!("expected a corrupt error, got {err:?}")
        };
        assert_eq!(*found, cause, "{err}");
        assert!(at.file.ends_with(&offsets), "{err}");
        assert_eq!(
            (at.offset, at.field.as_str()),
            (36, "tile 1, offsets"),
            "{err}"
        );
    }
}

#[test]
fn a_check_finding_keeps_the_structured_cause() {
    let out = tempfile::tempdir().unwrap();
    tiledb_conformance::recipe::replay_case(UNFILTERED_VAR, out.path()).unwrap();
    let root = out.path().join("array");
    let vac = format!("__commits/__1_1_{LABEL}_22.vac");
    std::fs::write(root.join(&vac), "__fragments/../x\n").unwrap();
    let report = check_array(&root, &CheckOptions::default());
    let cause = Cause::BadName {
        name: "__fragments/../x".into(),
        expected: "a path without `.` or `..` components",
    };
    assert_eq!(
        report.findings,
        [Finding {
            class: ErrorClass::Corrupt,
            file: vac,
            offset: 0,
            field: "vacuum line".into(),
            message: cause.to_string(),
            cause: Some(cause),
        }]
    );
}

#[test]
fn relative_paths_state_the_rule_they_break() {
    let bad = |name: &str, expected: &'static str| {
        Error::corrupt(
            0,
            "path",
            Cause::BadName {
                name: name.into(),
                expected,
            },
        )
    };
    assert_eq!(
        RelPath::parse("").unwrap_err(),
        Error::corrupt(0, "path", Cause::Empty { what: "the path" })
    );
    assert_eq!(
        RelPath::parse("/etc/passwd").unwrap_err(),
        bad("/etc/passwd", "a relative path")
    );
    assert_eq!(
        RelPath::parse("__fragments/../x").unwrap_err(),
        bad("__fragments/../x", "a path without `.` or `..` components")
    );
    assert_eq!(
        RelPath::root().join("a\\b").unwrap_err(),
        bad(
            "a\\b",
            "a path whose components hold no `/`, `\\`, `:` or NUL"
        )
    );
}

#[test]
fn a_tiledb_1_3_tile_states_its_framing_faults_as_data() {
    use tiledb_runtime::schema::legacy13::{read_generic_tile, reframe};
    // compressed_size, tile_size, datatype (INT32), cell_size, compressor
    // (none), level; then 4 of the 100 bytes claimed.
    let mut file = 100u64.to_le_bytes().to_vec();
    file.extend_from_slice(&4u64.to_le_bytes());
    file.push(0);
    file.extend_from_slice(&4u64.to_le_bytes());
    file.push(0);
    file.extend_from_slice(&0i32.to_le_bytes());
    let header = file.len() as u64;
    file.extend_from_slice(&[1, 2, 3, 4]);
    let cause = Cause::Truncated {
        needed: 100,
        available: 4,
    };
    assert_eq!(
        read_generic_tile(&file).unwrap_err(),
        Error::corrupt(header, "Legacy13GenericTileHeader.compressed_size", cause)
    );
    let cause = Cause::Empty {
        what: "the chunk list",
    };
    assert_eq!(
        reframe(&0u64.to_le_bytes(), true).unwrap_err(),
        Error::corrupt(0, "Legacy13Chunks.n_chunks", cause)
    );
}
