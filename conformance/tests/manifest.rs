//! The committed corpus must be exactly what MANIFEST.json pins: same folders, same files, same
//! bytes. A regenerated or hand-edited corpus without a regenerated manifest fails here.

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

fn files_under(root: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries =
            fs::read_dir(&dir).unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(root).expect("path under root");
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.insert(parts.join("/"));
            }
        }
    }
    out
}

fn sha256_hex(path: &Path) -> String {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn load_manifest() -> serde_json::Value {
    let path = corpus_dir().join("MANIFEST.json");
    let text =
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).expect("MANIFEST.json is JSON")
}

#[test]
fn every_corpus_file_matches_the_manifest() {
    let manifest = load_manifest();
    let producers = manifest["producers"]
        .as_object()
        .expect("producers is an object");
    assert!(!producers.is_empty(), "the manifest lists no producer");
    let mut problems = Vec::new();
    let mut checked = 0usize;
    for (producer, entry) in producers {
        let root = corpus_dir().join(producer);
        let cases = entry["cases"].as_object().expect("cases is an object");
        let on_disk: BTreeSet<String> = fs::read_dir(&root)
            .unwrap_or_else(|e| panic!("listing {}: {e}", root.display()))
            .filter_map(std::result::Result::ok)
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let listed: BTreeSet<String> = cases.keys().cloned().collect();
        for extra in on_disk.symmetric_difference(&listed) {
            problems.push(format!("{producer}/{extra}: folder and manifest disagree"));
        }
        for (case_id, case) in cases {
            let case_dir = root.join(case_id);
            if !case_dir.is_dir() {
                continue;
            }
            let files = case["files"].as_object().expect("files is an object");
            let pinned: BTreeSet<String> = files.keys().cloned().collect();
            let actual = files_under(&case_dir);
            for rel in actual.symmetric_difference(&pinned) {
                problems.push(format!(
                    "{producer}/{case_id}/{rel}: present on only one side"
                ));
            }
            for rel in actual.intersection(&pinned) {
                let want = files[rel].as_str().expect("sha256 is a string");
                if sha256_hex(&case_dir.join(rel)) != want {
                    problems.push(format!("{producer}/{case_id}/{rel}: sha256 differs"));
                }
                checked += 1;
            }
        }
    }
    assert!(
        problems.is_empty(),
        "corpus and MANIFEST.json disagree:\n{}",
        problems.join("\n")
    );
    assert!(checked > 0, "no corpus file was checked");
}

#[test]
fn every_case_folder_has_its_case_file_and_expected_results() {
    let manifest = load_manifest();
    let conformance = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    for (producer, entry) in manifest["producers"].as_object().expect("producers") {
        for (case_id, case) in entry["cases"].as_object().expect("cases") {
            let case_file = case["case_file"].as_str().expect("case_file is a string");
            if !conformance.join(case_file).is_file() {
                missing.push(format!("{producer}/{case_id}: {case_file}"));
            }
            let expected = corpus_dir()
                .join(producer)
                .join(case_id)
                .join("expected.json");
            let text = fs::read_to_string(&expected).unwrap_or_default();
            match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(v) if v["case"] == case_id.as_str() && v["reads"].is_array() => {}
                _ => missing.push(format!(
                    "{producer}/{case_id}: expected.json absent or malformed"
                )),
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
