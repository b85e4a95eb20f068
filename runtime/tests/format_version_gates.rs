//! Every version gate of spec/, exercised on a real structure.
//!
//! The table of gates is generated from the spec (`VERSION_GATES`), so a new
//! gate is covered as soon as it is added. For a field new in version N the
//! test writes a sample at N and at N-1 and reads each back: at N the field
//! round-trips with the sample's value; at N-1 the bytes are shorter and the
//! field reads back as absent (`None`) or as its default, which differs from
//! the sample's value. A field removed in version U is checked the same way
//! at U-1 (present) and U (absent).
//!
//! Samples come from the TileDB 2.30 corpus, with every gated field set to a
//! value other than its default. A gate on a structure without a sample here
//! fails the test, naming the structure.

use std::path::{Path, PathBuf};

use binrw::{BinRead, BinWrite};
use serde_json::Value;
use tiledb_runtime::filter::{FilterContext, FilterPipeline as RuntimePipeline};
use tiledb_runtime::format::generated::*;
use tiledb_runtime::format::io::{read_exact_from, read_prefix, write_to_vec};
use tiledb_runtime::tile::unfilter_tile;

fn corpus(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/corpus/tiledb-2.30")
        .join(case)
        .join("array")
}

/// The decoded payload of the generic tile at `offset`.
fn payload(bytes: &[u8], offset: usize) -> Vec<u8> {
    let (header, used): (GenericTileHeader, u64) =
        read_prefix(&bytes[offset..], (), "GenericTileHeader").expect("generic tile header");
    let start = offset + used as usize;
    let tile = &bytes[start..start + header.persisted_size as usize];
    unfilter_tile(
        tile,
        &RuntimePipeline::generic_tile(false),
        &FilterContext::generic_tile(header.version),
        header.tile_size,
    )
    .expect("decode generic tile")
}

fn only_file(dir: &Path) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files.pop().expect("a file")
}

fn schema(case: &str) -> ArraySchema {
    let bytes = std::fs::read(only_file(&corpus(case).join("__schema"))).expect("schema file");
    read_exact_from(&payload(&bytes, 0), (), "ArraySchema").expect("schema")
}

fn shapes(schema: &ArraySchema) -> Vec<DimensionShape> {
    schema
        .domain
        .dimensions
        .iter()
        .map(|d| DimensionShape {
            var: d.cell_val_num == u32::MAX,
            coord_size: d.datatype.size(),
        })
        .collect()
}

/// The fragment metadata file of the first fragment of a corpus case.
fn fragment_metadata(case: &str) -> Vec<u8> {
    let fragments = corpus(case).join("__fragments");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&fragments)
        .expect("fragments")
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    std::fs::read(dirs[0].join("__fragment_metadata.tdb")).expect("fragment metadata")
}

fn footer_region(bytes: &[u8]) -> &[u8] {
    let end = bytes.len() - 8;
    let len = u64::from_le_bytes(bytes[end..].try_into().expect("8 bytes")) as usize;
    &bytes[end - len..end]
}

/// One structure at one version: the sample as it stands at that version,
/// the bytes written, and what reading them back gives.
struct Trial {
    sample: Value,
    bytes: Vec<u8>,
    read_back: Result<Value, String>,
}

fn trial<T>(
    sample: &T,
    read_args: <T as BinRead>::Args<'_>,
    write_args: <T as BinWrite>::Args<'_>,
    what: &str,
) -> Trial
where
    T: BinRead + BinWrite + serde::Serialize,
{
    let bytes = write_to_vec(sample, write_args, what).expect("write the sample");
    let read_back = read_exact_from::<T>(&bytes, read_args, what)
        .map(|value| serde_json::to_value(&value).expect("json"))
        .map_err(|e| e.to_string());
    Trial {
        sample: serde_json::to_value(sample).expect("json"),
        bytes,
        read_back,
    }
}

type Probe = Box<dyn Fn(u32) -> Trial>;

/// The sample of `structure`, ready to be written and read at any version.
fn probe(structure: &str) -> Option<Probe> {
    Some(match structure {
        "ArraySchema" => array_schema_probe(),
        "Domain" => domain_probe(),
        "Dimension" => dimension_probe(),
        "Attribute" => attribute_probe(),
        "DeltaOptions" => delta_options_probe(),
        "DoubleDeltaOptions" => double_delta_options_probe(),
        "FragmentFooterHead" => footer_head_probe(),
        "FragmentFooter" => footer_probe(),
        "RTree" => rtree_probe(),
        "GroupMember" => group_member_probe(),
        _ => return None,
    })
}

/// The `ArraySchema` sample.
fn array_schema_probe() -> Probe {
    let mut base = schema("dense.dimension_labels");
    base.allows_dups = true;
    base.enumerations = Some(vec![EnumerationRef {
        name: b"colors".to_vec(),
        path: b"__0123456789abcdef0123456789abcdef_0".to_vec(),
    }]);
    // Before version 5 the domain names the type all dimensions share.
    base.domain.datatype = Some(base.domain.dimensions[0].datatype);
    Box::new(move |version| {
        let mut sample = base.clone();
        sample.version = version;
        trial(&sample, (), (), "ArraySchema")
    })
}

/// The `Domain` sample.
fn domain_probe() -> Probe {
    let mut base = schema("sparse.basic.int32").domain;
    base.datatype = Some(base.dimensions[0].datatype);
    Box::new(move |version| {
        trial(
            &base,
            DomainBinReadArgs::builder().version(version).finalize(),
            DomainBinWriteArgs::builder().version(version).finalize(),
            "Domain",
        )
    })
}

/// The `Dimension` sample.
fn dimension_probe() -> Probe {
    let mut base = schema("sparse.basic.int32").domain.dimensions[0].clone();
    assert_eq!(base.datatype, Datatype::Int32, "the sample dimension");
    // Values an old layout cannot carry: before version 5 the type comes
    // from the domain and cell_val_num is 1 for a fixed-sized type.
    base.cell_val_num = 2;
    let shared = Some(Datatype::Uint32);
    Box::new(move |version| {
        trial(
            &base,
            DimensionBinReadArgs::builder()
                .version(version)
                .domain_datatype(shared)
                .finalize(),
            DimensionBinWriteArgs::builder()
                .version(version)
                .domain_datatype(shared)
                .finalize(),
            "Dimension",
        )
    })
}

/// The `Attribute` sample.
fn attribute_probe() -> Probe {
    let mut base = schema("sparse.basic.int32").attributes[0].clone();
    base.nullable = true;
    base.fill_validity = 1;
    base.order = DataOrder::Increasing;
    base.enumeration_name = Some(b"colors".to_vec());
    assert!(
        base.fill.is_some(),
        "a version-22 attribute has a fill value"
    );
    Box::new(move |version| {
        trial(
            &base,
            AttributeBinReadArgs::builder().version(version).finalize(),
            AttributeBinWriteArgs::builder().version(version).finalize(),
            "Attribute",
        )
    })
}

/// The `DeltaOptions` sample.
fn delta_options_probe() -> Probe {
    let base = DeltaOptions {
        compressor: Compressor::Delta,
        level: 3,
        reinterpret_type: Datatype::Int32,
    };
    Box::new(move |version| {
        trial(
            &base,
            DeltaOptionsBinReadArgs::builder()
                .version(version)
                .finalize(),
            DeltaOptionsBinWriteArgs::builder()
                .version(version)
                .finalize(),
            "DeltaOptions",
        )
    })
}

/// The `DoubleDeltaOptions` sample.
fn double_delta_options_probe() -> Probe {
    let base = DoubleDeltaOptions {
        compressor: Compressor::DoubleDelta,
        level: 3,
        reinterpret_type: Datatype::Int32,
    };
    Box::new(move |version| {
        trial(
            &base,
            DoubleDeltaOptionsBinReadArgs::builder()
                .version(version)
                .finalize(),
            DoubleDeltaOptionsBinWriteArgs::builder()
                .version(version)
                .finalize(),
            "DoubleDeltaOptions",
        )
    })
}

/// The `FragmentFooterHead` sample.
fn footer_head_probe() -> Probe {
    let bytes = fragment_metadata("sparse.basic.int32");
    let (base, _): (FragmentFooterHead, u64) =
        read_prefix(footer_region(&bytes), (), "FragmentFooterHead").expect("head");
    Box::new(move |version| {
        let mut sample = base.clone();
        sample.version = version;
        trial(&sample, (), (), "FragmentFooterHead")
    })
}

/// The `FragmentFooter` sample.
fn footer_probe() -> Probe {
    let schema = schema("sparse.basic.int32");
    let dims = shapes(&schema);
    let attributes = schema.attributes.len() as u64;
    let bytes = fragment_metadata("sparse.basic.int32");
    let (mut base, _): (FragmentFooter, u64) = read_prefix(
        footer_region(&bytes),
        FragmentFooterBinReadArgs::builder()
            .num_attributes(attributes)
            .dims(dims.clone())
            .finalize(),
        "FragmentFooter",
    )
    .expect("footer");
    // One timestamp slot and two delete-metadata slots more in every list.
    base.has_timestamps = true;
    base.has_delete_meta = true;
    for_each_list(&mut base, |list| list.extend([7, 8, 9]));
    base.sections = Some(vec![FooterSection {
        id: 0,
        data: FooterSectionData::GlobalOrderBoundsSection(GlobalOrderBoundsSection {
            min_offsets: vec![0; dims.len()],
            max_offsets: vec![0; dims.len()],
        }),
    }]);
    Box::new(move |version| {
        assert!(
            version >= 5,
            "the footer sample has the v5+ per-field lists"
        );
        let mut sample = base.clone();
        sample.version = version;
        // Before the flag existed, its slots did not either (the flag
        // itself keeps the sample's value, which is not written).
        if version < 15 {
            for_each_list(&mut sample, |list| {
                list.truncate(list.len() - 2);
            });
        }
        if version < 14 {
            for_each_list(&mut sample, |list| {
                list.truncate(list.len() - 1);
            });
        }
        trial(
            &sample,
            FragmentFooterBinReadArgs::builder()
                .num_attributes(attributes)
                .dims(dims.clone())
                .finalize(),
            FragmentFooterBinWriteArgs::builder()
                .num_attributes(attributes)
                .dims(dims.clone())
                .finalize(),
            "FragmentFooter",
        )
    })
}

/// The `RTree` sample.
fn rtree_probe() -> Probe {
    let schema = schema("sparse.basic.int32");
    let dims = shapes(&schema);
    let bytes = fragment_metadata("sparse.basic.int32");
    let region = footer_region(&bytes);
    let (head, _): (FragmentFooterHead, u64) =
        read_prefix(region, (), "FragmentFooterHead").expect("head");
    let (footer, _): (FragmentFooter, u64) = read_prefix(
        region,
        FragmentFooterBinReadArgs::builder()
            .num_attributes(schema.attributes.len() as u64)
            .dims(dims.clone())
            .finalize(),
        "FragmentFooter",
    )
    .expect("footer");
    let mut base: RTree = read_exact_from(
        &payload(&bytes, footer.rtree_offset as usize),
        RTreeBinReadArgs::builder()
            .version(head.version)
            .dims(dims.clone())
            .finalize(),
        "RTree",
    )
    .expect("rtree");
    // Before version 5 the R-tree names the dimension count and type.
    base.dim_num = Some(dims.len() as u32);
    base.datatype = Some(Datatype::Int32.value());
    Box::new(move |version| {
        trial(
            &base,
            RTreeBinReadArgs::builder()
                .version(version)
                .dims(dims.clone())
                .finalize(),
            RTreeBinWriteArgs::builder()
                .version(version)
                .dims(dims.clone())
                .finalize(),
            "RTree",
        )
    })
}

/// The `GroupMember` sample.
fn group_member_probe() -> Probe {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/corpus/tiledb-2.30/group.basic/group/__group");
    let bytes = std::fs::read(only_file(&dir)).expect("group details");
    let details: GroupDetails =
        read_exact_from(&payload(&bytes, 0), (), "GroupDetails").expect("details");
    let mut base = details.members[0].clone();
    base.deleted = true;
    Box::new(move |version| {
        let mut sample = base.clone();
        sample.version = version;
        trial(&sample, (), (), "GroupMember")
    })
}

/// Applies `change` to every per-field list of a footer.
fn for_each_list(footer: &mut FragmentFooter, mut change: impl FnMut(&mut Vec<u64>)) {
    for list in [
        &mut footer.file_sizes,
        &mut footer.file_var_sizes,
        &mut footer.tile_offsets_offsets,
        &mut footer.tile_var_offsets_offsets,
        &mut footer.tile_var_sizes_offsets,
    ] {
        change(list);
    }
    for list in [
        &mut footer.file_validity_sizes,
        &mut footer.tile_validity_offsets_offsets,
        &mut footer.tile_mins_offsets,
        &mut footer.tile_maxes_offsets,
        &mut footer.tile_sums_offsets,
        &mut footer.tile_null_counts_offsets,
    ]
    .into_iter()
    .flatten()
    {
        change(list);
    }
}

/// Checks one gate; returns a description of what was shown.
fn check_gate(gate: &VersionGate, probe: &Probe) -> String {
    let (present, absent) = match (gate.since, gate.until) {
        (Some(since), _) => (since, since - 1),
        (None, Some(until)) => (until - 1, until),
        (None, None) => unreachable!("only gated fields are listed"),
    };
    let name = format!("{}.{}", gate.structure, gate.field);
    let with = probe(present);
    let without = probe(absent);
    assert_ne!(
        with.bytes, without.bytes,
        "{name}: versions {present} and {absent} must be written differently"
    );
    let read_with = with
        .read_back
        .as_ref()
        .unwrap_or_else(|e| panic!("{name}: reading version {present} back: {e}"));
    let read_without = without
        .read_back
        .as_ref()
        .unwrap_or_else(|e| panic!("{name}: reading version {absent} back: {e}"));
    if !gate.stored {
        // A length or size is not kept in the struct: it shows as bytes the
        // newer layout has (with the field it measures, which has the same gate).
        assert!(
            with.bytes.len() > without.bytes.len(),
            "{name}: version {present} ({} bytes) should be longer than version {absent} ({} bytes)",
            with.bytes.len(),
            without.bytes.len()
        );
        return format!(
            "{name}: {present} has {} more bytes than {absent}",
            with.bytes.len() - without.bytes.len()
        );
    }
    let field = gate.rust_field;
    let sample_value = &with.sample[field];
    assert!(
        !sample_value.is_null(),
        "{name}: the sample must hold a value at version {present}"
    );
    assert_eq!(
        &read_with[field], sample_value,
        "{name}: present at version {present}, it must read back as written"
    );
    assert_ne!(
        &read_without[field], &without.sample[field],
        "{name}: at version {absent} the field is not written, so the sample's value (not the default) must not come back"
    );
    if gate.optional {
        assert!(
            read_without[field].is_null(),
            "{name}: absent at version {absent}, an optional field reads as None"
        );
    }
    format!(
        "{name}: {} at {present}, {} at {absent}",
        read_with[field], read_without[field]
    )
}

#[test]
fn every_version_gate_governs_reading_and_writing() {
    assert!(!VERSION_GATES.is_empty(), "the spec has version gates");
    let mut missing = Vec::new();
    let mut checked = 0;
    let mut probes: Vec<(&str, Probe)> = Vec::new();
    for gate in VERSION_GATES {
        if !probes.iter().any(|(s, _)| *s == gate.structure) {
            match probe(gate.structure) {
                Some(p) => probes.push((gate.structure, p)),
                None => {
                    missing.push(gate.structure);
                    continue;
                }
            }
        }
        let Some((_, p)) = probes.iter().find(|(s, _)| *s == gate.structure) else {
            continue;
        };
        println!("{}", check_gate(gate, p));
        checked += 1;
    }
    missing.dedup();
    assert!(
        missing.is_empty(),
        "gated structures without a sample in this test: {missing:?}; add one to probe()"
    );
    assert_eq!(checked, VERSION_GATES.len());
}

#[test]
fn a_gate_at_one_version_is_absent_one_version_earlier_on_disk() {
    // The table itself is what the spec says: one entry per gated field.
    let allows_dups = VERSION_GATES
        .iter()
        .find(|g| g.structure == "ArraySchema" && g.field == "allows_dups")
        .expect("ArraySchema.allows_dups is gated");
    assert_eq!(allows_dups.since, Some(5));
    let probe = probe("ArraySchema").expect("sample");
    // The byte right after the version is allows_dups at 5 and array_type at 4.
    let at5 = probe(5).bytes;
    let at4 = probe(4).bytes;
    assert_eq!(&at5[..4], &5u32.to_le_bytes());
    assert_eq!(at5[4], 1, "allows_dups = true");
    assert_eq!(
        at4[4],
        ArrayType::Dense.value(),
        "array_type follows the version"
    );
}

#[test]
fn writing_without_a_field_the_version_has_is_an_error() {
    let mut schema = schema("sparse.basic.int32");
    assert!(schema.version >= 7);
    schema.validity_filters = None;
    let err = write_to_vec(&schema, (), "ArraySchema").expect_err("the layout needs the pipeline");
    assert!(
        err.to_string()
            .contains("ArraySchema.validity_filters is required when version >= 7"),
        "{err}"
    );
    // Below version 7 the field does not exist, so leaving it out is right.
    schema.version = 6;
    write_to_vec(&schema, (), "ArraySchema").expect("a version-6 schema has no validity pipeline");
}
