//! `--emit ksy`: one `.ksy` per file kind, what Kaitai cannot express listed
//! with a reason, and a manifest for every type written. That the `.ksy`
//! files compile and parse the corpus like the runtime does is
//! conformance/tests/kaitai.rs.

use std::path::PathBuf;

use tiledb_codegen::EmitKind;

fn emitted() -> Vec<(String, String)> {
    let spec = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .join("spec");
    tiledb_codegen::export(&spec, EmitKind::Ksy).expect("spec/ is valid")
}

fn file<'a>(files: &'a [(String, String)], name: &str) -> &'a str {
    files
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t.as_str())
        .unwrap_or_else(|| panic!("{name} not emitted"))
}

#[test]
fn every_file_kind_has_a_ksy() {
    let files = emitted();
    for kind in [
        "array_schema",
        "fragment_metadata",
        "metadata",
        "group_details",
        "delete_commit",
        "enumeration",
        "consolidated_fragment_metadata",
    ] {
        let text = file(&files, &format!("tiledb_{kind}.ksy"));
        assert!(
            text.contains(&format!("\n  id: tiledb_{kind}\n")),
            "{kind}: meta/id"
        );
        assert!(text.contains("\n  endian: le\n"), "{kind}: little-endian");
    }
    let schema = file(&files, "tiledb_array_schema.ksy");
    // Version gates become `if:`, switches `switch-on`, defaults instances.
    assert!(
        schema.contains("if: \"version >= 7\""),
        "validity_filters gate"
    );
    assert!(schema.contains("switch-on: filter_type"));
    assert!(schema.contains("allows_dups_or_default:"));
    assert!(schema.contains("process: zlib"));
}

#[test]
fn unsupported_structures_are_listed_with_why() {
    let files = emitted();
    let unsupported = file(&files, "UNSUPPORTED.md");
    for name in ["FragmentFooter", "RTree", "NDRectangle"] {
        let line = unsupported
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("{name} not listed"));
        assert!(line.contains("array schema"), "{line}");
    }
    let manifest: serde_json::Value =
        serde_json::from_str(file(&files, "manifest.json")).expect("manifest is JSON");
    let types = manifest["types"].as_object().expect("types");
    assert!(types.contains_key("array_schema") && types.contains_key("generic_tile_header"));
    assert!(
        !types.contains_key("fragment_footer"),
        "unsupported types have no entry"
    );
    for (name, entry) in types {
        assert!(
            !unsupported.contains(&format!("| `{}` |", entry["struct"].as_str().unwrap())),
            "{name} both written and unsupported"
        );
    }
}
