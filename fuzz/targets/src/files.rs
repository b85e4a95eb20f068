//! The targets over the format's files: generic tiles, schemas, fragment
//! metadata, commits, delete conditions, array and group metadata,
//! enumerations — each through the library's loader and, where it has one,
//! its generated structure alone.

use tiledb_runtime::condition::parse_commit;
use tiledb_runtime::directory::{text_files, ConditionKind};
use tiledb_runtime::format::generated as g;
use tiledb_runtime::format::io::read_exact_from;
use tiledb_runtime::fragment::{
    consolidated_footer_regions, footer_region, parse_footer, parse_metadata_file,
};
use tiledb_runtime::metadata::{group_contents::parse_group_details, parse_metadata_tile};
use tiledb_runtime::schema::{enumeration_from_tile, ArraySchema, MAX_SUPPORTED_VERSION};
use tiledb_runtime::tile::generic::{read_generic_tile, read_generic_tile_exact};
use tiledb_runtime::tile::parse_chunks;

use crate::{split_pair, FUZZ_KEY};

/// A whole generic tile: header, framing, pipeline and payload; then the
/// framing alone through the generated structure.
pub fn generic_tile(data: &[u8]) {
    let _ = read_generic_tile(data, 0, None);
    let _ = read_generic_tile(data, 0, Some(&FUZZ_KEY));
    let _ = read_exact_from::<g::Tile>(data, (), "Tile");
    let _ = parse_chunks(data);
}

/// A schema file (generic tile + payload; the version comes from the payload).
pub fn array_schema(data: &[u8]) {
    let _ = ArraySchema::from_file_bytes("schema", data, None, true);
}

/// A schema payload, unfiltered: as stored, and with the leading version
/// replaced by each version TileDB has written, so every gate is reached.
pub fn array_schema_payload(data: &[u8]) {
    let _ = read_exact_from::<g::ArraySchema>(data, (), "ArraySchema");
    if data.len() >= 4 {
        let mut copy = data.to_vec();
        for version in 1..=MAX_SUPPORTED_VERSION {
            copy[..4].copy_from_slice(&version.to_le_bytes());
            // The current domain is read inside the schema.
            let _ = read_exact_from::<g::ArraySchema>(&copy, (), "ArraySchema");
        }
    }
}

/// The arguments a fragment's structures are read with, from 4 bytes:
/// attribute count, dimension count, each dimension's var flag and size.
fn fuzzed_shapes(head: [u8; 4]) -> (u64, Vec<g::DimensionShape>) {
    let attributes = (head[0] % 8) as u64;
    let dims = 1 + (head[1] % 4) as usize;
    let shapes = (0..dims)
        .map(|d| g::DimensionShape {
            var: head[2] >> d & 1 == 1,
            coord_size: [1, 2, 4, 8][(head[3] >> (2 * d) & 3) as usize],
        })
        .collect();
    (attributes, shapes)
}

/// Every structure of a fragment metadata file, with fuzzed arguments:
/// the footer, the R-tree, offsets lists, mins/maxes, sums, null counts,
/// the fragment-wide summary and processed conditions.
pub fn fragment_footer(data: &[u8]) {
    let Some((head, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let (attributes, dims) = fuzzed_shapes(*head);
    let version = 1 + (head[0] as u32 >> 3) % MAX_SUPPORTED_VERSION;
    let _ = read_exact_from::<g::FragmentFooter>(
        rest,
        g::FragmentFooterBinReadArgs::builder()
            .num_attributes(attributes)
            .dims(dims.clone())
            .finalize(),
        "FragmentFooter",
    );
    let _ = read_exact_from::<g::RTree>(
        rest,
        g::RTreeBinReadArgs::builder()
            .version(version)
            .dims(dims.clone())
            .finalize(),
        "RTree",
    );
    let _ = read_exact_from::<g::TileOffsets>(rest, (), "TileOffsets");
    let _ = read_exact_from::<g::TileMinMax>(rest, (), "TileMinMax");
    let _ = read_exact_from::<g::TileSums>(rest, (), "TileSums");
    let fields = attributes + 1 + dims.len() as u64;
    let _ = read_exact_from::<g::FragmentMmsn>(
        rest,
        g::FragmentMmsnBinReadArgs::builder()
            .num_fields(fields)
            .finalize(),
        "FragmentMmsn",
    );
    let _ = read_exact_from::<g::ProcessedConditions>(rest, (), "ProcessedConditions");
    let _ = read_exact_from::<g::NDRectangle>(
        rest,
        g::NDRectangleBinReadArgs::builder().dims(dims).finalize(),
        "NDRectangle",
    );
    // The whole file through the loader, which finds the footer by its
    // trailing length.
    let _ = footer_region(rest);
}

/// A schema file and a fragment metadata file (`[len u32][schema][fragment
/// metadata]`): the fragment is loaded against the schema, as `tdb check`
/// does. The input has no fragment name, which is where the loader takes
/// the format version from, so it is loaded as every version in turn.
pub fn fragment_metadata(data: &[u8]) {
    let Some((schema, file)) = split_pair(data) else {
        return;
    };
    let Ok(schema) = ArraySchema::from_file_bytes("schema", schema, None, true) else {
        return;
    };
    for version in 1..=MAX_SUPPORTED_VERSION {
        let _ = parse_metadata_file(file, &schema, None, version);
    }
}

/// A schema file and a consolidated fragment metadata file; every footer
/// is read against that schema.
pub fn consolidated_fragment_metadata(data: &[u8]) {
    let Some((schema, file)) = split_pair(data) else {
        return;
    };
    let Ok(schema) = ArraySchema::from_file_bytes("schema", schema, None, true) else {
        return;
    };
    let Ok(tile) = read_generic_tile_exact(file, None) else {
        return;
    };
    for (_, footer) in consolidated_footer_regions(&tile).unwrap_or_default() {
        let _ = parse_footer(&footer, &schema);
    }
}

/// The files of `__commits`: delete and update commits, ignore and vacuum
/// lists.
pub fn commit_files(data: &[u8]) {
    if let Ok(tile) = read_generic_tile_exact(data, None) {
        let _ = parse_commit(&tile, ConditionKind::Delete);
        let _ = parse_commit(&tile, ConditionKind::Update);
    }
    let _ = text_files::parse_ignore_file(data);
    let _ = text_files::parse_vacuum_file(data, &["__fragments"]);
    let _ = text_files::parse_vacuum_file(data, &["__meta"]);
}

/// A consolidated commits file, with every embedded delete commit decoded.
pub fn consolidated_commits(data: &[u8]) {
    let Ok(entries) = text_files::parse_consolidated_commits(data) else {
        return;
    };
    for entry in entries {
        if let Some(tile) = entry.embedded {
            let start = usize::try_from(tile.offset).unwrap_or(usize::MAX);
            let end = start.saturating_add(usize::try_from(tile.size).unwrap_or(usize::MAX));
            if let Some(bytes) = data.get(start..end) {
                if let Ok(tile) = read_generic_tile_exact(bytes, None) {
                    let _ = parse_commit(&tile, ConditionKind::Delete);
                }
            }
        }
    }
}

/// A delete condition's AST, unfiltered (the payload of a `.del` file).
pub fn delete_condition(data: &[u8]) {
    let _ = read_exact_from::<g::DeleteCommit>(data, (), "DeleteCommit");
    let _ = read_exact_from::<g::UpdateCommit>(data, (), "UpdateCommit");
    let _ = read_exact_from::<g::AstNode>(data, (), "AstNode");
}

/// An array (or group) metadata file, and its payload alone.
pub fn array_metadata(data: &[u8]) {
    let _ = read_generic_tile_exact(data, None).and_then(|t| parse_metadata_tile(&t));
    let _ = read_exact_from::<g::Metadata>(data, (), "Metadata");
}

/// A group details file, and its payload alone.
pub fn group_details(data: &[u8]) {
    let _ = read_generic_tile_exact(data, None).and_then(|t| parse_group_details(&t));
    let _ = read_exact_from::<g::GroupDetails>(data, (), "GroupDetails");
}

/// An enumeration file, and its payload alone.
pub fn enumeration(data: &[u8]) {
    let _ = read_generic_tile_exact(data, None).and_then(|t| enumeration_from_tile(&t, "e"));
    let _ = read_exact_from::<g::Enumeration>(data, (), "Enumeration");
}
