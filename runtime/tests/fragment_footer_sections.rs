//! The optional sections of a version-23 footer (spec/fragment_metadata.toml
//! `FooterSection`, `GlobalOrderBoundsSection`, enum `FragmentSectionId`):
//! TileDB 2.30 writes version 22, so a real version-22 footer of the corpus
//! is raised to 23 and given sections. Section TILE_GLOBAL_ORDER_BOUNDS is
//! read as 16 bytes per dimension (any other size is corrupt), unknown ids
//! are skipped, as TileDB skips them.

use std::path::{Path, PathBuf};

use tiledb_runtime::format::generated as stored;
use tiledb_runtime::format::io::write_to_vec;
use tiledb_runtime::fragment::{footer_region, global_order_bounds, parse_footer};
use tiledb_runtime::schema::ArraySchema;
use tiledb_runtime::ErrorClass;

fn array() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/corpus/tiledb-2.30/sparse.dims.string_and_int/array")
}

/// A version-22 footer of the corpus and its schema.
fn footer() -> (stored::FragmentFooter, ArraySchema) {
    let fragments = array().join("__fragments");
    let fragment = std::fs::read_dir(&fragments)
        .expect("fragments")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a fragment");
    let bytes = std::fs::read(fragment.join("__fragment_metadata.tdb")).expect("metadata");
    let (head, start) = footer_region(&bytes).expect("footer region");
    assert_eq!(head.version, 22);
    let schema_name = String::from_utf8(head.schema_name.expect("schema name")).expect("utf-8");
    let schema_bytes = std::fs::read(array().join("__schema").join(&schema_name)).expect("schema");
    let schema =
        ArraySchema::from_file_bytes(&schema_name, &schema_bytes, None, true).expect("schema");
    let (footer, _) =
        parse_footer(&bytes[start as usize..bytes.len() - 8], &schema).expect("footer");
    (footer, schema)
}

/// The footer at version 23 with `sections`, written and parsed back.
fn with_sections(
    sections: Vec<stored::FooterSection>,
) -> tiledb_runtime::Result<(stored::FragmentFooter, ArraySchema)> {
    let (mut footer, schema) = footer();
    footer.version = 23;
    footer.sections = Some(sections);
    let dims = tiledb_runtime::schema::dimension_shapes(&schema.stored);
    let bytes = write_to_vec(
        &footer,
        stored::FragmentFooterBinWriteArgs::builder()
            .num_attributes(schema.attributes.len() as u64)
            .dims(dims)
            .finalize(),
        "FragmentFooter",
    )
    .expect("write");
    let (back, used) = parse_footer(&bytes, &schema)?;
    assert_eq!(used as usize, bytes.len());
    Ok((back, schema))
}

fn bounds(dims: usize) -> stored::GlobalOrderBoundsSection {
    stored::GlobalOrderBoundsSection {
        min_offsets: (0..dims as u64).map(|d| 100 + d).collect(),
        max_offsets: (0..dims as u64).map(|d| 200 + d).collect(),
    }
}

/// A bounds section, typed; with `extra` bytes more, written as raw bytes
/// under the bounds id (the typed variant cannot hold a wrong size).
fn bounds_section(dims: usize, extra: usize) -> stored::FooterSection {
    let id = stored::FragmentSectionId::TileGlobalOrderBounds.value();
    if extra == 0 {
        return stored::FooterSection {
            id,
            data: stored::FooterSectionData::GlobalOrderBoundsSection(bounds(dims)),
        };
    }
    let args = stored::GlobalOrderBoundsSectionBinWriteArgs::builder()
        .num_dims(dims as u64)
        .finalize();
    let mut data = write_to_vec(&bounds(dims), args, "GlobalOrderBoundsSection").expect("section");
    data.extend(std::iter::repeat_n(0, extra));
    stored::FooterSection {
        id,
        data: stored::FooterSectionData::UnknownFooterSection(stored::UnknownFooterSection {
            data,
        }),
    }
}

#[test]
fn the_global_order_bounds_are_read() {
    let dims = footer().1.dimensions.len();
    assert_eq!(dims, 2);
    let (footer, _) = with_sections(vec![bounds_section(dims, 0)]).expect("a valid section");
    let bounds = global_order_bounds(&footer)
        .expect("read")
        .expect("present");
    assert_eq!(bounds.min_offsets, vec![100, 101]);
    assert_eq!(bounds.max_offsets, vec![200, 201]);
}

#[test]
fn bounds_of_the_wrong_size_are_corrupt() {
    let dims = footer().1.dimensions.len();
    let err = with_sections(vec![bounds_section(dims, 8)]).expect_err("8 bytes too many");
    assert_eq!(err.class(), ErrorClass::Corrupt, "{err}");
    assert!(
        err.to_string()
            .contains("FooterSection.data: 8 unexpected trailing byte"),
        "{err}"
    );
}

#[test]
fn unknown_sections_are_skipped() {
    let unknown = stored::FooterSection {
        id: 99,
        data: stored::FooterSectionData::UnknownFooterSection(stored::UnknownFooterSection {
            data: vec![1, 2, 3],
        }),
    };
    let (footer, _) = with_sections(vec![unknown.clone()]).expect("skipped");
    assert_eq!(global_order_bounds(&footer).expect("read"), None);
    // The open switch kept the unknown id's data as bytes, unchanged.
    assert_eq!(footer.sections, Some(vec![unknown]));
}
