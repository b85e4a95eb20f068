//! `--unused`: every generated type no runtime code names has its reason in
//! spec/, and a type that loses its users (or gains them) is reported.

use std::path::Path;

use tiledb_codegen::unused::scan;

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
}

#[test]
fn every_unused_generated_type_has_a_reason() {
    let spec = tiledb_codegen::load_spec(&workspace().join("spec")).expect("spec/");
    let uses = scan(&spec, &workspace().join("runtime/src")).expect("runtime/src");
    let problems: Vec<String> = uses
        .iter()
        .filter_map(tiledb_codegen::unused::TypeUse::problem)
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    // The scan sees the runtime: the schema and the chunk framing are used,
    // the options of the refused filter type are not.
    let find = |name: &str| uses.iter().find(|u| u.name == name).expect(name);
    assert!(find("ArraySchema").used && find("TileChunk").used);
    assert!(!find("RejectedOptions").used && find("RejectedOptions").reason.is_some());
}

/// A copy of runtime/src without any user of a type makes it unused with no
/// reason; a type with a reason that the runtime starts to use is reported
/// too; a use of a struct's view (`<Name>View`) is a use of the struct.
#[test]
fn a_type_without_users_or_with_a_stale_reason_is_a_problem() {
    let spec = tiledb_codegen::load_spec(&workspace().join("spec")).expect("spec/");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("lib.rs"),
        "// uses ArraySchema, RejectedOptions and TileChunkView only\n",
    )
    .expect("write");
    let uses = scan(&spec, dir.path()).expect("scan");
    let find = |name: &str| uses.iter().find(|u| u.name == name).expect(name);
    assert_eq!(find("ArraySchema").problem(), None);
    assert_eq!(
        find("RejectedOptions").problem().as_deref(),
        Some("spec/filter_pipeline.toml: struct RejectedOptions is used by the runtime now; remove its unused_reason")
    );
    assert_eq!(find("TileChunk").problem(), None);
    assert_eq!(
        find("Tile").problem().as_deref(),
        Some("spec/generic_tile.toml: struct Tile is used by no runtime code and has no unused_reason")
    );
    assert_eq!(
        find("Attribute").problem().as_deref(),
        Some("spec/array_schema.toml: struct Attribute is used by no runtime code and has no unused_reason")
    );
}
