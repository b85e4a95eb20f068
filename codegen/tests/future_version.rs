//! The everyday case: the format changes. This test copies spec/, adds a
//! field to the array schema gated `since = 24`, sets `current = 24`,
//! regenerates through the library entry point into a temporary crate, and
//! builds and runs that crate's tests, which show that
//! - every array schema of versions ≤ 23 at hand (the TileDB 2.30 corpus, and
//!   the legacy arrays when present) still reads and writes byte for byte, and
//! - a version-24 schema carries the new field, placed where the spec put it,
//!   while the same schema written at version 23 does not.
//!
//! The evolved spec also types the schema's current domain through a context
//! computed from each dimension (`from = "Dimension"`), which the real files
//! exercise.
//!
//! The temporary crate copies `runtime/src/format/io.rs` and
//! `runtime/src/error.rs` (all the generated code needs) and decodes generic
//! tiles with a small GZIP-only decoder of its own. It builds in
//! `target/future-version/`, so only the first run compiles its dependencies.

mod support;

use std::path::{Path, PathBuf};

use support::{literal, run_generated_crate, shared_dir, workspace, GZIP_PAYLOAD};

/// Adds `future_flag: u32` (since 24) after `capacity` in the array schema,
/// sets current = 24 and adds version 24 to the history.
fn evolve_spec(spec: &Path) {
    let schema_path = spec.join("array_schema.toml");
    let mut schema: toml::Table = std::fs::read_to_string(&schema_path)
        .expect("array_schema.toml")
        .parse()
        .expect("valid TOML");
    let structs = schema
        .get_mut("struct")
        .and_then(|s| s.as_array_mut())
        .expect("[[struct]]");
    let array_schema = structs
        .iter_mut()
        .find(|s| s.get("name").and_then(|n| n.as_str()) == Some("ArraySchema"))
        .expect("struct ArraySchema");
    let fields = array_schema
        .get_mut("field")
        .and_then(|f| f.as_array_mut())
        .expect("ArraySchema fields");
    let after = fields
        .iter()
        .position(|f| f.get("name").and_then(|n| n.as_str()) == Some("capacity"))
        .expect("ArraySchema.capacity");
    let new_field: toml::Table = r#"
name = "future_flag"
type = "u32"
since = 24
doc = "A field of the next format version (added by the future-version test)."
"#
    .parse()
    .expect("field TOML");
    fields.insert(after + 1, toml::Value::Table(new_field));

    // And the current domain typed through a context computed from each
    // Dimension (instead of raw bytes the runtime parses afterwards).
    let current_domain = fields
        .iter_mut()
        .find(|f| f.get("name").and_then(|n| n.as_str()) == Some("current_domain"))
        .and_then(|f| f.as_table_mut())
        .expect("ArraySchema.current_domain");
    current_domain.remove("until_eof");
    current_domain.insert("type".into(), "CurrentDomain".into());
    let args: toml::Table = r#"dims = "domain.dimensions""#.parse().expect("args");
    current_domain.insert("args".into(), toml::Value::Table(args));
    let contexts = schema
        .get_mut("context")
        .and_then(|c| c.as_array_mut())
        .expect("[[context]]");
    let shape = contexts
        .iter_mut()
        .find(|c| c.get("name").and_then(|n| n.as_str()) == Some("DimensionShape"))
        .and_then(|c| c.as_table_mut())
        .expect("context DimensionShape");
    shape.insert("from".into(), "Dimension".into());
    for field in shape
        .get_mut("fields")
        .and_then(|f| f.as_array_mut())
        .expect("DimensionShape fields")
    {
        let field = field.as_table_mut().expect("field table");
        let value = match field.get("name").and_then(|n| n.as_str()) {
            Some("var") => "cell_val_num == 4294967295",
            Some("coord_size") => "datatype.size()",
            other => panic!("unexpected DimensionShape field {other:?}"),
        };
        field.insert("value".into(), value.into());
    }
    std::fs::write(&schema_path, toml::to_string(&schema).expect("serialize")).expect("write");

    let format_path = spec.join("format.toml");
    let mut format: toml::Table = std::fs::read_to_string(&format_path)
        .expect("format.toml")
        .parse()
        .expect("valid TOML");
    format.insert("current".into(), toml::Value::Integer(24));
    // A new version says what it changed: `current` without a history entry
    // is a validation error.
    let entry: toml::Table = r#"
number = 24
changes = ["ArraySchema gains future_flag (added by the future-version test)."]
"#
    .parse()
    .expect("version TOML");
    format
        .get_mut("version")
        .and_then(|v| v.as_array_mut())
        .expect("[[version]]")
        .push(toml::Value::Table(entry));
    std::fs::write(&format_path, toml::to_string(&format).expect("serialize")).expect("write");
}

/// Schema files of versions ≤ 23 to read with the new code.
fn schema_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let corpus = workspace().join("conformance/corpus/tiledb-2.30");
    for case in std::fs::read_dir(&corpus).expect("corpus").flatten() {
        let name = case.file_name().to_string_lossy().into_owned();
        if name.starts_with("negative.") || name.contains("encrypted") {
            continue;
        }
        let dir = case.path().join("array/__schema");
        if let Ok(entries) = std::fs::read_dir(&dir) {
            files.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file()));
        }
    }
    let shared = shared_dir();
    for legacy in ["sparse_array_v11", "zero_var_chunks_v10"] {
        let dir = shared
            .join("tiledb-test-arrays")
            .join(legacy)
            .join("__schema");
        if let Ok(entries) = std::fs::read_dir(&dir) {
            files.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file()));
        }
    }
    let v1 = shared.join("tiledb-test-arrays/non_split_coords_v1_4_0/__array_schema.tdb");
    if v1.is_file() {
        files.push(v1);
    } else {
        println!("legacy arrays absent: checking the TileDB 2.30 corpus only");
    }
    files.sort();
    files
}

const CRATE_TEST: &str = r#"
use generated_crate::format::generated::*;
use generated_crate::format::io::{read_exact_from, read_prefix, write_to_vec};

#[test]
fn the_next_version_is_described() {
    assert_eq!(CURRENT_FORMAT_VERSION, 24);
    let gate = VERSION_GATES
        .iter()
        .find(|g| g.structure == "ArraySchema" && g.field == "future_flag")
        .expect("the new gate is in the table");
    assert_eq!(gate.since, Some(24));
}

#[test]
fn files_of_earlier_versions_round_trip_unchanged() {
    let files: &[&str] = &FILES;
    assert!(!files.is_empty());
    let mut versions = std::collections::BTreeSet::new();
    let mut current_domains = 0;
    for file in files {
        let bytes = std::fs::read(file).expect("schema file");
        let payload = payload(&bytes);
        let schema: ArraySchema = read_exact_from(&payload, (), "ArraySchema")
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(schema.version <= 23, "{file}");
        assert_eq!(schema.future_flag, None, "{file}: no version-24 field below 24");
        if schema.version >= 22 {
            // Typed through DimensionShape::from(&Dimension), not left as bytes.
            let current: Option<&CurrentDomain> = schema.current_domain.as_ref();
            current_domains += usize::from(current.is_some());
        }
        let written = write_to_vec(&schema, (), "ArraySchema").expect("write");
        assert_eq!(written, payload, "{file}: written back differently");
        versions.insert(schema.version);
    }
    println!("{} schemas of versions {:?} round-trip", files.len(), versions);
    assert!(current_domains > 0, "version-22 schemas have a typed current domain");
}

#[test]
fn a_version_24_schema_carries_the_new_field() {
    // A schema TileDB 2.30 wrote (version 22), as the newest layout at hand.
    let mut schema = FILES
        .iter()
        .map(|file| {
            let bytes = std::fs::read(file).expect("schema file");
            read_exact_from::<ArraySchema>(&payload(&bytes), (), "ArraySchema").expect("read")
        })
        .find(|schema| schema.version == 22)
        .expect("a version-22 schema");
    schema.future_flag = Some(0x0a0b_0c0d);
    // A non-empty current domain, laid out by the shapes computed from the dimensions.
    let ranges = schema
        .domain
        .dimensions
        .iter()
        .map(|dimension| {
            let shape = DimensionShape::from(dimension);
            if shape.var {
                Range { start_size: 2, data: b"abxyz".to_vec() }
            } else {
                Range { start_size: shape.coord_size, data: vec![7; 2 * shape.coord_size as usize] }
            }
        })
        .collect();
    schema.current_domain = Some(CurrentDomain {
        empty: false,
        domain_type: Some(CurrentDomainType::Ndrectangle),
        ndrectangle: Some(NDRectangle { ranges }),
    });

    schema.version = 23;
    let at23 = write_to_vec(&schema, (), "ArraySchema").expect("write 23");
    schema.version = 24;
    let at24 = write_to_vec(&schema, (), "ArraySchema").expect("write 24");

    // version u32, allows_dups, array_type, tile_order, cell_order u8, capacity u64: 16 bytes,
    // then the new field.
    assert_eq!(at24.len(), at23.len() + 4);
    assert_eq!(&at24[..4], &24u32.to_le_bytes());
    assert_eq!(&at24[4..16], &at23[4..16]);
    assert_eq!(&at24[16..20], &[0x0d, 0x0c, 0x0b, 0x0a]);
    assert_eq!(&at24[20..], &at23[16..]);

    let back: ArraySchema = read_exact_from(&at24, (), "ArraySchema").expect("read 24");
    assert_eq!(back, schema);
    let back23: ArraySchema = read_exact_from(&at23, (), "ArraySchema").expect("read 23");
    assert_eq!(back23.future_flag, None);
}
"#;

#[test]
fn a_field_of_the_next_version_leaves_older_files_intact() {
    let files = schema_files();
    assert!(!files.is_empty(), "no schema files to read");
    let list: Vec<String> = files.iter().map(|f| literal(f)).collect();
    let test = format!(
        "const FILES: [&str; {}] = [{}];\n{CRATE_TEST}\n{GZIP_PAYLOAD}",
        list.len(),
        list.join(", ")
    );
    let run = run_generated_crate("future-version", evolve_spec, &test);
    let schema_rs = run
        .generated
        .get("runtime/src/format/generated/array_schema.rs")
        .expect("array_schema.rs");
    assert!(schema_rs.contains("pub future_flag: Option<u32>"));
    assert!(schema_rs.contains("if(version >= 24)"));
    assert!(schema_rs.contains("impl From<&Dimension> for DimensionShape"));
    assert!(
        run.stdout.contains("3 passed"),
        "expected the three tests of the regenerated crate to pass:\n{}",
        run.stdout
    );
}
