//! `--emit json`: the model as JSON validates against the JSON Schema emitted
//! with it, holds every structure and enum of the model, and the schema
//! rejects a document with a wrong type.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;
use tiledb_codegen::export::json::{JSON_FILE, SCHEMA_FILE};
use tiledb_codegen::EmitKind;

fn spec_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .join("spec")
}

/// The two emitted files, written through the same path as the CLI, parsed.
fn emitted() -> (Value, Value) {
    let files = tiledb_codegen::export(&spec_dir(), EmitKind::Json).expect("spec/ is valid");
    let dir = tempfile::tempdir().expect("temp dir");
    tiledb_codegen::export::write_all(dir.path(), &files).expect("writes");
    let read = |name: &str| -> Value {
        let text = std::fs::read_to_string(dir.path().join(name)).expect("emitted file");
        serde_json::from_str(&text).expect("valid JSON")
    };
    (read(JSON_FILE), read(SCHEMA_FILE))
}

fn errors(schema: &Value, instance: &Value) -> Vec<String> {
    let validator = jsonschema::draft202012::new(schema).expect("the schema compiles");
    validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn emitted_json_validates_against_emitted_schema() {
    let (document, schema) = emitted();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    let errors = errors(&schema, &document);
    assert!(
        errors.is_empty(),
        "document does not validate:\n{}",
        errors.join("\n")
    );
}

#[test]
fn emitted_json_holds_every_structure_and_enum() {
    let (document, _) = emitted();
    let (spec, table) = tiledb_codegen::validate::load(&spec_dir()).expect("spec/ is valid");
    let files = document["spec"]["files"].as_array().expect("files");
    assert_eq!(files.len(), spec.files.len());
    let names = |key: &str| -> BTreeSet<String> {
        files
            .iter()
            .flat_map(|f| f[key].as_array().expect("a list").iter())
            .map(|item| item["name"].as_str().expect("a name").to_string())
            .collect()
    };
    let structs = names("structs");
    let enums = names("enums");
    let contexts = names("contexts");
    assert_eq!(
        structs,
        table.structs.keys().cloned().collect::<BTreeSet<_>>()
    );
    assert_eq!(enums, table.enums.keys().cloned().collect::<BTreeSet<_>>());
    assert_eq!(
        contexts,
        table.contexts.keys().cloned().collect::<BTreeSet<_>>()
    );
    // Field by field and variant by variant, with gates and values as in the model.
    for model_struct in table.structs.values() {
        let json_struct = files
            .iter()
            .flat_map(|f| f["structs"].as_array().unwrap().iter())
            .find(|s| s["name"] == model_struct.name.as_str())
            .expect("struct present");
        let fields = json_struct["fields"].as_array().expect("fields");
        assert_eq!(
            fields.len(),
            model_struct.fields.len(),
            "{}",
            model_struct.name
        );
        for (json_field, field) in fields.iter().zip(&model_struct.fields) {
            assert_eq!(json_field["name"], field.name.as_str());
            assert_eq!(json_field["since"].as_u64(), field.since.map(u64::from));
            assert_eq!(json_field["until"].as_u64(), field.until.map(u64::from));
            assert_eq!(
                json_field["condition"]["text"].as_str(),
                field.condition.as_ref().map(|c| c.text.as_str())
            );
        }
    }
    for model_enum in table.enums.values() {
        let json_enum = files
            .iter()
            .flat_map(|f| f["enums"].as_array().unwrap().iter())
            .find(|e| e["name"] == model_enum.name.as_str())
            .expect("enum present");
        assert_eq!(json_enum["repr"], model_enum.repr.name());
        let variants = json_enum["variants"].as_array().expect("variants");
        assert_eq!(variants.len(), model_enum.variants.len());
        for (json_variant, variant) in variants.iter().zip(&model_enum.variants) {
            assert_eq!(json_variant["name"], variant.name.as_str());
            assert_eq!(json_variant["value"].as_i64(), Some(variant.value as i64));
            assert_eq!(json_variant["since"].as_u64(), variant.since.map(u64::from));
            assert_eq!(json_variant["until"].as_u64(), variant.until.map(u64::from));
        }
    }
    assert_eq!(
        document["spec"]["current"].as_u64(),
        Some(u64::from(spec.current))
    );
    assert_eq!(
        document["spec"]["versions"].as_array().map(Vec::len),
        Some(spec.versions.len())
    );
}

#[test]
fn schema_rejects_a_wrong_type() {
    let (document, schema) = emitted();
    let first_field = "/spec/files/0/structs/0/fields/0";

    let mut wrong_gate = document.clone();
    *wrong_gate
        .pointer_mut(&format!("{first_field}/since"))
        .unwrap() = Value::from("five");
    assert!(
        !errors(&schema, &wrong_gate).is_empty(),
        "a string `since` passed"
    );

    let mut wrong_prim = document.clone();
    let layout = wrong_prim
        .pointer_mut(&format!("{first_field}/layout"))
        .unwrap();
    *layout = serde_json::json!({ "Single": { "Prim": "u128" } });
    assert!(
        !errors(&schema, &wrong_prim).is_empty(),
        "an unknown primitive passed"
    );

    let mut missing = document.clone();
    missing["spec"].as_object_mut().unwrap().remove("files");
    assert!(
        !errors(&schema, &missing).is_empty(),
        "a spec without files passed"
    );

    let mut wrong_expr = document;
    let field = wrong_expr.pointer_mut(first_field).unwrap();
    field["condition"] = serde_json::json!({ "text": 7, "type": "Bool" });
    assert!(
        !errors(&schema, &wrong_expr).is_empty(),
        "a numeric expression text passed"
    );
}
