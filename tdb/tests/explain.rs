//! `tdb explain`: an encrypted array explained whole with its key (and
//! refused without it), the JSON tree naming enum values and gates, and the
//! text tree's coverage lines.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const KEY: &str = "0123456789abcdeF0123456789abcdeF";

fn corpus(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/corpus/tiledb-2.30")
        .join(case)
}

fn tdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tdb"))
        .args(args)
        .output()
        .expect("run tdb")
}

fn find<'a>(node: &'a Value, name: &str, out: &mut Vec<&'a Value>) {
    if node["name"] == name {
        out.push(node);
    }
    for child in node["children"].as_array().into_iter().flatten() {
        find(child, name, out);
    }
}

#[test]
fn an_encrypted_array_is_explained_whole_with_its_key() {
    let array = corpus("sparse.encrypted.aes256gcm/array");
    let array = array.to_str().unwrap();
    let out = tdb(&["explain", "--coverage", "--key", KEY, array]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with(' ')).collect();
    assert!(lines.len() >= 5, "{text}");
    for line in &lines {
        assert!(line.starts_with("100.00% "), "{line}");
    }
    assert!(
        text.contains("__fragment_metadata.tdb (FragmentFooter"),
        "{text}"
    );
    assert!(text.contains("a0.tdb (Tile"), "{text}");

    let out = tdb(&["explain", "--coverage", array]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("an encryption key is needed"));
}

#[test]
fn json_names_enums_gates_and_payload_fields() {
    let schema_dir = corpus("sparse.encrypted.aes256gcm/array/__schema");
    let schema = std::fs::read_dir(schema_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_file())
        .unwrap();
    let out = tdb(&["explain", "--json", "--key", KEY, schema.to_str().unwrap()]);
    assert!(out.status.success());
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let file = &json["files"][0];
    assert_eq!(file["kind"], "ArraySchema");
    assert_eq!(file["coverage"][0]["percent"], 100.0);
    let tree = &file["tree"];
    let mut found = Vec::new();
    find(tree, "GenericTileHeader.encryption_type", &mut found);
    assert_eq!(found[0]["enum_name"], "AES_256_GCM");
    assert_eq!(found[0]["space"], "file");
    found.clear();
    find(tree, "ArraySchema.version", &mut found);
    assert_eq!(found[0]["value"], "22");
    assert_eq!(found[0]["space"], "payload");
    assert_eq!(found[0]["offset"], 0);
    found.clear();
    find(tree, "ArraySchema.validity_filters", &mut found);
    assert_eq!(found[0]["gate"], "version >= 7");
    assert_eq!(found[0]["present"], true);
    found.clear();
    find(tree, "Attribute.name", &mut found);
    assert_eq!(found[0]["value"], "\"a\"", "{:#}", found[0]);
}

/// Fragment metadata of formats 1-2 and of TileDB 1.3 is one generic tile
/// holding the older layout: the coverage line names that layout, not the
/// footer of later versions.
#[test]
fn coverage_names_the_fragment_metadata_layout_of_formats_1_2_and_tiledb_1_3() {
    let shared = std::env::var_os("TILEDB_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"))
        .join("tiledb-test-arrays");
    if !shared.is_dir() {
        println!(
            "skipped: TileDB's legacy test arrays are not at {}",
            shared.display()
        );
        return;
    }
    for (array, layout) in [
        ("non_split_coords_v1_4_0", "FragmentMetadataV1V2"),
        ("dense_array_v1_3_0", "Legacy13FragmentMetadata"),
    ] {
        let out = tdb(&[
            "explain",
            "--coverage",
            shared.join(array).to_str().unwrap(),
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.contains("__fragment_metadata.tdb"))
            .unwrap_or_else(|| panic!("{array}: no fragment metadata line in\n{text}"));
        assert!(
            line.contains(&format!("__fragment_metadata.tdb ({layout}:")),
            "{line}"
        );
    }
}
