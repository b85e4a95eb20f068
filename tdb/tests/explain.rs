//! `tdb explain`: an encrypted array explained whole with its key (and
//! refused without it), the JSON tree naming enum values and gates, and the
//! text tree's coverage lines.

mod support;

use std::path::Path;

use serde_json::Value;
use support::{corpus_case, tdb};

const KEY: &str = "0123456789abcdeF0123456789abcdeF";

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
    let array = corpus_case("sparse.encrypted.aes256gcm/array");
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
    let schema_dir = corpus_case("sparse.encrypted.aes256gcm/array/__schema");
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
    // Encrypted, so not at its exact file bytes: from the chunk's data.
    let origin = found[0]["file"].clone();
    assert_eq!(origin["exact"], false, "{origin:#}");
    found.clear();
    find(tree, "TileChunk.data", &mut found);
    let data = found[0];
    assert_eq!(origin["start"], data["offset"]);
    assert_eq!(
        origin["end"].as_u64().unwrap(),
        data["offset"].as_u64().unwrap() + data["size"].as_u64().unwrap()
    );
    assert_eq!(file["layout"], "ArraySchema");
    found.clear();
    find(tree, "ArraySchema.validity_filters", &mut found);
    assert_eq!(found[0]["gate"], "version >= 7");
    assert_eq!(found[0]["present"], true);
    found.clear();
    find(tree, "Attribute.name", &mut found);
    assert_eq!(found[0]["value"], "\"a\"", "{:#}", found[0]);
}

/// Fragment metadata of formats 1-2 and of TileDB 1.3 is labelled with the
/// layout it holds, not the footer of later versions; 1.3's data file is
/// explained whole.
#[test]
fn legacy_fragment_metadata_is_labelled_with_its_layout() {
    let legacy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/tiledb-test-arrays");
    if !legacy.is_dir() {
        println!("skipped: {} is absent", legacy.display());
        return;
    }
    let out = tdb(&[
        "explain",
        "--coverage",
        legacy.join("non_split_coords_v1_4_0").to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("__fragment_metadata.tdb (FragmentMetadataV1V2:"),
        "{text}"
    );
    assert!(!text.contains("FragmentFooter"), "{text}");
    let out = tdb(&[
        "explain",
        "--coverage",
        legacy.join("dense_array_v1_3_0").to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("__fragment_metadata.tdb (Legacy13FragmentMetadata:"),
        "{text}"
    );
    assert!(
        text.contains("100.00% ") && text.contains("a.tdb (Legacy13DataTile:"),
        "{text}"
    );
    // Files of the experimental version u32::MAX, which the loader refuses
    // (as TileDB does): explained whole, in the layout spec/format.toml
    // gives them.
    let out = tdb(&[
        "explain",
        "--coverage",
        legacy
            .join("experimental_array_vUINT32_MAX")
            .to_str()
            .unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(text.lines().all(|l| l.starts_with("100.00% ")), "{text}");
    let out = tdb(&[
        "explain",
        legacy
            .join("experimental_array_vUINT32_MAX/__schema")
            .to_str()
            .unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("= 4294967295 (experimental build: laid out as version 14)"),
        "{text}"
    );
}
