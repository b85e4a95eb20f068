//! The proof that spec/ is the single source of every byte layout: an
//! upstream format change costs no hand-written Rust.
//!
//! The test copies spec/ and the runtime's crate (with the manifests of the
//! workspace crates its manifest names) to `target/future-version/copy/`,
//! changes the copy of spec/ the way upstream changes the format —
//! - a field appended to the array schema at version 24 (where upstream
//!   appends schema fields: after the current domain),
//! - a filter with options (`FUTURE_FILTER`, since 24),
//! - a footer section id (`FUTURE_SECTION`) with a layout for its data,
//! - a datatype (`FUTURE_TYPE`),
//!
//! with `current` and `reads` raised to 24, regenerates through the codegen's
//! library entry point, and builds the copied runtime *unchanged* (no
//! hand-written Rust edited) with a small test crate that uses its public
//! API. That crate shows that every schema and fragment metadata footer of
//! versions ≤ 23 at hand (the TileDB 2.30 corpus, and the legacy arrays when
//! present) still reads and writes byte for byte, that a version-24 schema
//! carries the new field (written by the runtime's own schema writer and
//! loaded back), that the new filter is `unsupported` (the runtime has no
//! code for it) while the new datatype is handled through its spec
//! properties, and that a version-24 footer carries the new section.
//!
//! The copy's sources go to `target/future-version/copy/`; it builds in the
//! workspace's own target dir (cargo holds that dir's lock while it builds,
//! not while the tests run), so the registry dependencies the workspace has
//! built already are reused: the build is the runtime copy and the proof
//! crate alone, without debug info, never a second tree of dependencies.
//! Set `TILEDB_SKIP_FUTURE_VERSION=<reason>` to skip it; the reason is
//! printed. `FUTURE_VERSION_KEEP=1` leaves the copy in place.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// `../shared` beside the workspace, or TILEDB_SHARED_DIR.
fn shared_dir() -> PathBuf {
    std::env::var_os("TILEDB_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("../shared"))
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            copy_tree(&path, &to.join(entry.file_name()));
        } else if path.is_file() {
            std::fs::copy(&path, to.join(entry.file_name())).expect("copy");
        }
    }
}

fn edit_toml(path: &Path, edit: impl FnOnce(&mut toml::Table)) {
    let mut table: toml::Table = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .parse()
        .expect("valid TOML");
    edit(&mut table);
    std::fs::write(path, toml::to_string(&table).expect("serialize")).expect("write");
}

fn table(text: &str) -> toml::Value {
    toml::Value::Table(text.parse().expect("TOML snippet"))
}

/// The `[[name]]` entry of `table` whose `name` key is `wanted`.
fn named<'a>(table: &'a mut toml::Table, array: &str, wanted: &str) -> &'a mut toml::Table {
    table
        .get_mut(array)
        .and_then(|a| a.as_array_mut())
        .unwrap_or_else(|| panic!("[[{array}]]"))
        .iter_mut()
        .filter_map(|t| t.as_table_mut())
        .find(|t| t.get("name").and_then(|n| n.as_str()) == Some(wanted))
        .unwrap_or_else(|| panic!("{array} {wanted}"))
}

fn push(table: &mut toml::Table, array: &str, value: toml::Value) {
    table
        .get_mut(array)
        .and_then(|a| a.as_array_mut())
        .unwrap_or_else(|| panic!("[[{array}]]"))
        .push(value);
}

/// The upstream change, made to the copy of spec/.
fn evolve_spec(spec: &Path) {
    edit_toml(&spec.join("array_schema.toml"), |schema| {
        // Appended at the end, after the current domain.
        push(
            named(schema, "struct", "ArraySchema"),
            "field",
            table(
                r#"
name = "future_flag"
type = "u32"
since = 24
doc = "A field of the next format version (added by the future-version test)."
"#,
            ),
        );
    });
    edit_toml(&spec.join("enums.toml"), |enums| {
        push(
            named(enums, "enum", "FilterType"),
            "variant",
            table(
                r#"
name = "FUTURE_FILTER"
value = 21
since = 24
chunk_metadata = "PartSizesMetadata"
var_string_chunk_metadata = ""
doc = "A filter of the next format version (added by the future-version test)."
"#,
            ),
        );
        push(
            named(enums, "enum", "FragmentSectionId"),
            "variant",
            table(
                r#"
name = "FUTURE_SECTION"
value = 1
since = 24
doc = "A footer section of the next format version (added by the future-version test)."
"#,
            ),
        );
        push(
            named(enums, "enum", "Datatype"),
            "variant",
            table(
                r#"
name = "FUTURE_TYPE"
value = 44
since = 24
size = 16
is_string = false
is_integer = false
is_real = false
is_datetime = false
is_time = false
is_byte = false
is_text = false
string_codecs = false
default_fill = "zero"
time_unit = ""
doc = "A datatype of the next format version (added by the future-version test)."
"#,
            ),
        );
    });
    edit_toml(&spec.join("filter_pipeline.toml"), |pipeline| {
        let options = named(named(pipeline, "struct", "Filter"), "field", "options");
        options
            .get_mut("type")
            .and_then(|t| t.get_mut("cases"))
            .and_then(|c| c.as_table_mut())
            .expect("the options switch")
            .insert("FUTURE_FILTER".into(), "FutureFilterOptions".into());
        push(
            pipeline,
            "struct",
            table(
                r#"
name = "FutureFilterOptions"
unused_reason = "added by the future-version test"
doc = "The options of FUTURE_FILTER."
fixed_size = 5
params = [{ name = "version", type = "u32", doc = "format version of the enclosing pipeline" }]
fields = [
  { name = "level", type = "i32", doc = "how hard it works" },
  { name = "mode", type = "u8", doc = "which way" },
]
"#,
            ),
        );
    });
    edit_toml(&spec.join("fragment_metadata.toml"), |fragment| {
        // The open switch over the section id lists every known id (a
        // spec edit, no Rust): without it, validation fails loudly.
        let data = named(named(fragment, "struct", "FooterSection"), "field", "data");
        data.get_mut("type")
            .and_then(|t| t.get_mut("cases"))
            .and_then(|c| c.as_table_mut())
            .expect("the section data switch")
            .insert("FUTURE_SECTION".into(), "FutureSection".into());
        push(
            fragment,
            "struct",
            table(
                r#"
name = "FutureSection"
unused_reason = "added by the future-version test"
doc = "The data of footer section FUTURE_SECTION."
fields = [{ name = "tile_count", type = "u64", doc = "a count" }]
"#,
            ),
        );
    });
    edit_toml(&spec.join("format.toml"), |format| {
        format.insert("current".into(), toml::Value::Integer(24));
        format.insert("reads".into(), toml::Value::Integer(24));
        // A new version says what it changed: `current` without a history
        // entry is a validation error.
        push(
            format,
            "version",
            table(
                r#"
number = 24
changes = ["ArraySchema gains future_flag; FUTURE_FILTER, FUTURE_SECTION and FUTURE_TYPE (added by the future-version test)."]
"#,
            ),
        );
    });
}

/// Schema files and fragment metadata files of versions ≤ 23 at hand.
fn input_files() -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut arrays = Vec::new();
    let corpus = workspace().join("conformance/corpus/tiledb-2.30");
    for case in std::fs::read_dir(&corpus).expect("corpus").flatten() {
        let name = case.file_name().to_string_lossy().into_owned();
        if !name.starts_with("negative.") && !name.contains("encrypted") {
            arrays.push(case.path().join("array"));
        }
    }
    let legacy = shared_dir().join("tiledb-test-arrays");
    for name in ["sparse_array_v11", "zero_var_chunks_v10"] {
        if legacy.join(name).is_dir() {
            arrays.push(legacy.join(name));
        } else {
            println!("legacy array {name} absent: not read");
        }
    }
    let (mut schemas, mut fragments) = (Vec::new(), Vec::new());
    for array in arrays {
        let listing = |dir: &Path| -> Vec<PathBuf> {
            std::fs::read_dir(dir)
                .map(|d| d.flatten().map(|e| e.path()).collect())
                .unwrap_or_default()
        };
        schemas.extend(
            listing(&array.join("__schema"))
                .into_iter()
                .filter(|p| p.is_file()),
        );
        for fragment in listing(&array.join("__fragments")) {
            let file = fragment.join("__fragment_metadata.tdb");
            if file.is_file() {
                fragments.push(file);
            }
        }
    }
    schemas.sort();
    fragments.sort();
    (schemas, fragments)
}

/// Writes the copy: spec/ (changed), the runtime, the manifests of the
/// crates the workspace names, the lock file, and the proof crate.
fn write_copy(copy: &Path, test_source: &str) {
    let root = workspace();
    if copy.exists() {
        std::fs::remove_dir_all(copy).expect("clear the previous copy");
    }
    copy_tree(&root.join("spec"), &copy.join("spec"));
    evolve_spec(&copy.join("spec"));
    for dir in ["runtime/src", "runtime/benches", "runtime/examples"] {
        copy_tree(&root.join(dir), &copy.join(dir));
    }
    // Manifests the runtime's manifest reaches (its dev-dependencies), so
    // cargo can resolve them; only the runtime and the proof crate are built.
    // Their `[[test]]` and `[[bench]]` targets name files the copy leaves
    // out (only the proof crate's tests run), so they are dropped.
    for krate in ["runtime", "conformance", "codegen"] {
        std::fs::create_dir_all(copy.join(krate)).expect("crate dir");
        let mut crate_manifest: toml::Table =
            std::fs::read_to_string(root.join(krate).join("Cargo.toml"))
                .expect("crate manifest")
                .parse()
                .expect("valid TOML");
        crate_manifest.remove("test");
        crate_manifest.remove("bench");
        std::fs::write(
            copy.join(krate).join("Cargo.toml"),
            toml::to_string(&crate_manifest).expect("serialize"),
        )
        .expect("manifest");
    }
    for krate in ["conformance", "codegen"] {
        copy_tree(&root.join(krate).join("src"), &copy.join(krate).join("src"));
    }
    std::fs::copy(root.join("Cargo.lock"), copy.join("Cargo.lock")).expect("Cargo.lock");
    let mut manifest: toml::Table = std::fs::read_to_string(root.join("Cargo.toml"))
        .expect("workspace manifest")
        .parse()
        .expect("valid TOML");
    let workspace_table = manifest
        .get_mut("workspace")
        .and_then(|w| w.as_table_mut())
        .expect("[workspace]");
    workspace_table.insert(
        "members".into(),
        toml::Value::Array(vec!["runtime".into(), "proof".into()]),
    );
    workspace_table.remove("exclude");
    // The copy compiles without debug info (its tests only need to run);
    // the dependencies keep the workspace's profile, so theirs are reused.
    let packages = ["profile", "dev", "package"]
        .iter()
        .fold(&mut manifest, |table, key| {
            table
                .entry(*key)
                .or_insert_with(|| toml::Table::new().into())
                .as_table_mut()
                .expect("a profile table")
        });
    for name in ["tiledb-runtime", "upstream-change-proof"] {
        let mut no_debug = toml::Table::new();
        no_debug.insert("debug".into(), false.into());
        packages.insert(name.into(), no_debug.into());
    }
    std::fs::write(
        copy.join("Cargo.toml"),
        toml::to_string(&manifest).expect("serialize"),
    )
    .expect("workspace manifest");

    // Regenerate from the changed spec, through the library entry point.
    let generated =
        tiledb_codegen::generate(&copy.join("spec")).expect("the changed spec is valid");
    for (path, text) in &generated.files {
        let target = copy.join(path);
        std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        std::fs::write(target, text).expect("write generated");
    }
    let schema_rs =
        std::fs::read_to_string(copy.join("runtime/src/format/generated/array_schema.rs"))
            .expect("array_schema.rs");
    assert!(schema_rs.contains("pub future_flag: Option<u32>"));
    assert!(schema_rs.contains("if(version >= 24)"));

    std::fs::create_dir_all(copy.join("proof/tests")).expect("proof crate");
    std::fs::write(
        copy.join("proof/Cargo.toml"),
        r#"[package]
name = "upstream-change-proof"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
tiledb-runtime = { path = "../runtime" }
"#,
    )
    .expect("proof manifest");
    std::fs::create_dir_all(copy.join("proof/src")).expect("proof src");
    std::fs::write(copy.join("proof/src/lib.rs"), "//! The proof's tests.\n").expect("lib.rs");
    std::fs::write(copy.join("proof/tests/proof.rs"), test_source).expect("proof test");
}

/// The tests the proof crate runs against the copied, regenerated runtime.
const PROOF_TEST: &str = r#"
use tiledb_runtime::error::ErrorClass;
use tiledb_runtime::format::generated::*;
use tiledb_runtime::format::io::{read_exact_from, write_to_vec};
use tiledb_runtime::fragment::{footer_region, parse_footer};
use tiledb_runtime::schema::ArraySchema as LoadedSchema;
use tiledb_runtime::storage::LocalStorage;
use tiledb_runtime::tile::generic::read_generic_tile;

fn payload(file: &str) -> Vec<u8> {
    let bytes = std::fs::read(file).expect("file");
    read_generic_tile(&bytes, 0, None).unwrap_or_else(|e| panic!("{file}: {e}")).payload
}

fn schema_of(file: &str) -> ArraySchema {
    read_exact_from(&payload(file), (), "ArraySchema").unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn the_next_version_is_described_and_read() {
    assert_eq!(CURRENT_FORMAT_VERSION, 24);
    assert_eq!(NEWEST_READ_FORMAT_VERSION, 24);
    assert_eq!(FilterType::FutureFilter.since(), Some(24));
    assert_eq!(Datatype::FutureType.size(), 16);
    assert_eq!(FragmentSectionId::FutureSection.value(), 1);
}

#[test]
fn schemas_of_earlier_versions_round_trip_unchanged() {
    let mut versions = std::collections::BTreeSet::new();
    for file in SCHEMAS {
        let payload = payload(file);
        let schema: ArraySchema = read_exact_from(&payload, (), "ArraySchema").expect("read");
        assert!(schema.version <= 23, "{file}");
        assert_eq!(schema.future_flag, None, "{file}: no version-24 field below 24");
        let written = write_to_vec(&schema, (), "ArraySchema").expect("write");
        assert_eq!(written, payload, "{file}: written back differently");
        // And the runtime's one loader still takes it.
        let name = std::path::Path::new(file).file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(file).expect("file");
        LoadedSchema::from_file_bytes(&name, &bytes, None, true).unwrap_or_else(|e| panic!("{file}: {e}"));
        versions.insert(schema.version);
    }
    println!("{} schemas of versions {versions:?} round-trip", SCHEMAS.len());
    assert!(versions.contains(&22));
}

#[test]
fn footers_of_earlier_versions_round_trip_unchanged() {
    let mut checked = 0;
    for file in FRAGMENTS {
        let bytes = std::fs::read(file).expect("file");
        let Ok((head, start)) = footer_region(&bytes) else { continue };
        if head.version < 10 {
            continue; // before 10 the trailer may be absent; the runtime's reader handles those
        }
        let array = std::path::Path::new(file).ancestors().nth(3).expect("array dir");
        let schema_file = array.join("__schema").join(String::from_utf8_lossy(head.schema_name.as_deref().unwrap_or_default()).as_ref());
        let schema_bytes = std::fs::read(&schema_file).expect("schema");
        let schema = LoadedSchema::from_file_bytes("schema", &schema_bytes, None, true).expect("schema");
        let region = &bytes[start as usize..bytes.len() - 8];
        let (footer, used) = parse_footer(region, &schema).unwrap_or_else(|e| panic!("{file}: {e}"));
        let dims: Vec<DimensionShape> = schema.stored.domain.dimensions.iter().map(DimensionShape::from).collect();
        let args = FragmentFooterBinWriteArgs::builder()
            .num_attributes(schema.attributes.len() as u64)
            .dims(dims)
            .finalize();
        let written = write_to_vec(&footer, args, "FragmentFooter").expect("write");
        assert_eq!(written, region[..used as usize], "{file}: footer written back differently");
        checked += 1;
    }
    println!("{checked} footers round-trip");
    assert!(checked > 0);
}

fn a_version_22_schema() -> ArraySchema {
    SCHEMAS.iter().map(|f| schema_of(f)).find(|s| s.version == 22).expect("a version-22 schema")
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("future-version-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("__schema")).expect("scratch dir");
    dir
}

#[test]
fn a_version_24_schema_carries_the_new_field() {
    let mut schema = a_version_22_schema();
    schema.future_flag = Some(0x0a0b_0c0d);
    schema.version = 23;
    let at23 = write_to_vec(&schema, (), "ArraySchema").expect("write 23");
    schema.version = 24;
    let at24 = write_to_vec(&schema, (), "ArraySchema").expect("write 24");
    // Appended after the current domain: the same bytes, then the field.
    assert_eq!(at24.len(), at23.len() + 4);
    assert_eq!(&at24[4..at23.len()], &at23[4..]);
    assert_eq!(&at24[at23.len()..], &[0x0d, 0x0c, 0x0b, 0x0a]);
    assert_eq!(read_exact_from::<ArraySchema>(&at23, (), "ArraySchema").expect("23").future_flag, None);

    // The runtime's own schema writer and loader, unchanged, carry it.
    let dir = scratch("schema");
    let storage = LocalStorage::new(&dir);
    let loaded = tiledb_runtime::write::write_schema(&storage, &schema, 1, None).expect("write_schema");
    assert_eq!(loaded.version, 24);
    assert_eq!(loaded.stored.future_flag, Some(0x0a0b_0c0d));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_new_filter_round_trips_and_is_unsupported_without_code() {
    let mut schema = a_version_22_schema();
    schema.version = 24;
    schema.future_flag = Some(0);
    let filter = Filter {
        filter_type: FilterType::FutureFilter,
        options: FilterOptions::FutureFilterOptions(FutureFilterOptions { level: -3, mode: 2 }),
    };
    schema.attributes[0].filters.filters.push(filter.clone());
    let bytes = write_to_vec(&schema, (), "ArraySchema").expect("write");
    let back: ArraySchema = read_exact_from(&bytes, (), "ArraySchema").expect("read");
    assert_eq!(back.attributes[0].filters.filters.last(), Some(&filter));
    let err = LoadedSchema::from_payload("schema", &bytes).expect_err("no code for FUTURE_FILTER");
    assert_eq!(err.class(), ErrorClass::Unsupported, "{err}");
}

#[test]
fn the_new_datatype_is_read_by_its_spec_properties() {
    let mut schema = a_version_22_schema();
    schema.version = 24;
    schema.future_flag = Some(0);
    schema.attributes[0].datatype = Datatype::FutureType;
    schema.attributes[0].fill = Some(vec![0; 16]);
    let bytes = write_to_vec(&schema, (), "ArraySchema").expect("write");
    let back: ArraySchema = read_exact_from(&bytes, (), "ArraySchema").expect("read");
    assert_eq!(back.attributes[0].datatype, Datatype::FutureType);
    // The runtime handles a datatype through the properties spec/ gives it.
    let loaded = LoadedSchema::from_payload("schema", &bytes).expect("load");
    assert_eq!(loaded.attributes[0].datatype, Datatype::FutureType);
    assert_eq!(loaded.attributes[0].datatype.size(), 16);
}

#[test]
fn a_version_24_footer_carries_the_new_section() {
    for file in FRAGMENTS {
        let bytes = std::fs::read(file).expect("file");
        let Ok((head, start)) = footer_region(&bytes) else { continue };
        if head.version != 22 {
            continue;
        }
        let array = std::path::Path::new(file).ancestors().nth(3).expect("array dir");
        let schema_file = array.join("__schema").join(String::from_utf8_lossy(head.schema_name.as_deref().unwrap_or_default()).as_ref());
        let schema = LoadedSchema::from_file_bytes("schema", &std::fs::read(&schema_file).expect("schema"), None, true).expect("schema");
        let (mut footer, _) = parse_footer(&bytes[start as usize..bytes.len() - 8], &schema).expect("footer");
        footer.version = 24;
        let data = FooterSectionData::FutureSection(FutureSection { tile_count: 7 });
        footer.sections = Some(vec![FooterSection { id: FragmentSectionId::FutureSection.value(), data }]);
        let dims: Vec<DimensionShape> = schema.stored.domain.dimensions.iter().map(DimensionShape::from).collect();
        let args = FragmentFooterBinWriteArgs::builder()
            .num_attributes(schema.attributes.len() as u64)
            .dims(dims)
            .finalize();
        let written = write_to_vec(&footer, args, "FragmentFooter").expect("write");
        let (back, used) = parse_footer(&written, &schema).expect("read back");
        assert_eq!(used as usize, written.len());
        assert_eq!(back, footer);
        let section = &back.sections.as_ref().expect("sections")[0];
        assert_eq!(FragmentSectionId::from_value(section.id), Some(FragmentSectionId::FutureSection));
        // The open switch typed the new section by its id.
        assert_eq!(section.data, FooterSectionData::FutureSection(FutureSection { tile_count: 7 }));
        return;
    }
    panic!("no version-22 fragment");
}
"#;

#[test]
fn an_upstream_change_needs_no_hand_written_rust() {
    if let Some(reason) = std::env::var_os("TILEDB_SKIP_FUTURE_VERSION") {
        println!(
            "skipped (TILEDB_SKIP_FUTURE_VERSION): {}",
            reason.to_string_lossy()
        );
        return;
    }
    let (schemas, fragments) = input_files();
    assert!(
        !schemas.is_empty() && !fragments.is_empty(),
        "no files to read"
    );
    let list = |files: &[PathBuf]| -> String {
        files
            .iter()
            .map(|f| format!("{:?}", f.display().to_string()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let test = format!(
        "const SCHEMAS: [&str; {}] = [{}];\nconst FRAGMENTS: [&str; {}] = [{}];\n{PROOF_TEST}",
        schemas.len(),
        list(&schemas),
        fragments.len(),
        list(&fragments),
    );
    // The target dir this test was built in (`target/` or $CARGO_TARGET_DIR).
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target dir")
        .to_path_buf();
    let copy = target.join("future-version/copy");
    write_copy(&copy, &test);

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "test",
            "--offline",
            "--quiet",
            "-p",
            "upstream-change-proof",
        ])
        .current_dir(&copy)
        .env("CARGO_TARGET_DIR", &target)
        .env("CARGO_INCREMENTAL", "0")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo test in the copy");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "the copy, regenerated, does not build or pass unchanged:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("7 passed"),
        "expected the seven tests of the proof crate to pass:\n{stdout}"
    );
    if std::env::var_os("FUTURE_VERSION_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&copy);
    }
}
