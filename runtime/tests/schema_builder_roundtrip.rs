//! `schema → builder → schema`: every format-22 schema TileDB 2.30 wrote in
//! the corpus (`conformance/corpus/tiledb-2.30/`, negative cases aside)
//! turns into a [`SchemaBuilder`] that passes TileDB's checks and builds
//! the same stored schema, byte for byte, and the same enumeration files.

mod common;

use std::path::{Path, PathBuf};

use tiledb_runtime::format::generated as stored;
use tiledb_runtime::format::io::write_to_vec;
use tiledb_runtime::schema::{load_enumeration, ArraySchema, SchemaBuilder};
use tiledb_runtime::storage::{LocalStorage, RelPath, Storage};

/// The array folders (those holding `__schema/`) under `dir`.
fn arrays(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n == "__schema") {
                out.push(dir.to_path_buf());
            } else {
                arrays(&p, out);
            }
        }
    }
}

fn key_of(case_dir: &Path) -> Option<[u8; 32]> {
    let id = case_dir.file_name()?.to_str()?;
    let text =
        std::fs::read_to_string(common::workspace().join(format!("conformance/cases/{id}.toml")))
            .ok()?;
    let line = text.lines().find(|l| l.starts_with("encryption"))?;
    let key = line.split("key = \"").nth(1)?.split('"').next()?;
    key.as_bytes().try_into().ok()
}

#[test]
fn every_corpus_schema_of_format_22_round_trips_through_the_builder() {
    let corpus = common::workspace().join("conformance/corpus/tiledb-2.30");
    let mut cases: Vec<_> = std::fs::read_dir(&corpus)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            !p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("negative.")
        })
        .collect();
    cases.sort();
    let (mut schemas, mut with_enums, mut with_current, mut with_labels) = (0, 0, 0, 0);
    for case in cases {
        let key = key_of(&case);
        let mut dirs = Vec::new();
        arrays(&case, &mut dirs);
        for dir in dirs {
            let storage = LocalStorage::new(&dir);
            let schema_dir = RelPath::parse("__schema").unwrap();
            for entry in storage.list(&schema_dir).unwrap().unwrap_or_default() {
                if !entry.is_file() {
                    continue;
                }
                let path = schema_dir.join(&entry.name).unwrap();
                let where_ = format!("{}", dir.join(path.as_str()).display());
                let schema = ArraySchema::load(&storage, &path, key.as_ref())
                    .unwrap_or_else(|e| panic!("{where_}: {e}"));
                if schema.version != 22 {
                    continue;
                }
                let builder =
                    SchemaBuilder::from_schema(&schema).unwrap_or_else(|e| panic!("{where_}: {e}"));
                let built = builder
                    .build()
                    .unwrap_or_else(|e| panic!("{where_}: TileDB made it, yet: {e}"));
                let original = write_to_vec(&schema.stored, (), "ArraySchema").unwrap();
                let again = write_to_vec(&built.schema, (), "ArraySchema").unwrap();
                assert_eq!(built.schema, schema.stored, "{where_}");
                assert_eq!(again, original, "{where_}: the stored bytes differ");
                for e in &built.enumerations {
                    let file = schema_dir
                        .join("__enumerations")
                        .unwrap()
                        .join(&String::from_utf8_lossy(&e.path))
                        .unwrap();
                    let loaded = load_enumeration(&storage, &file, key.as_ref()).unwrap();
                    let rebuilt: stored::Enumeration = e.clone();
                    assert_eq!(rebuilt.name, loaded.name.as_bytes(), "{where_}");
                    assert_eq!(
                        tiledb_runtime::schema::enumeration_from_tile(
                            &tiledb_runtime::tile::generic::read_generic_tile(
                                &tiledb_runtime::tile::generic::write_generic_tile(
                                    &write_to_vec(&rebuilt, (), "Enumeration").unwrap(),
                                    22,
                                    None
                                )
                                .unwrap(),
                                0,
                                None
                            )
                            .unwrap(),
                            &String::from_utf8_lossy(&e.path)
                        )
                        .unwrap()
                        .values,
                        loaded.values,
                        "{where_}: enumeration {}",
                        loaded.name
                    );
                }
                schemas += 1;
                with_enums += usize::from(!built.enumerations.is_empty());
                with_current += usize::from(schema.current_domain.is_some());
                with_labels += usize::from(!builder.labels.is_empty());
            }
        }
    }
    println!("{schemas} schemas round-trip ({with_enums} with enumerations, {with_current} with a current domain, {with_labels} with labels)");
    assert!(schemas > 200, "only {schemas} format-22 schemas found");
    assert!(with_enums > 0 && with_current > 0 && with_labels > 0);
}
