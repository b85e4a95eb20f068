//! The generated files in the repository are exactly what spec/ produces
//! (the same check as `cargo run -p tiledb-codegen -- --check`).

use std::path::PathBuf;
use std::time::Instant;

#[test]
fn generated_files_match_spec() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf();
    let started = Instant::now();
    let generated = tiledb_codegen::generate(&root.join("spec")).expect("spec/ is valid");
    let elapsed = started.elapsed();
    let drifts = tiledb_codegen::check(&root, &generated);
    let report: String = drifts.iter().map(|d| d.diff.clone()).collect();
    assert!(
        drifts.is_empty(),
        "generated files differ from spec/; run `cargo run -p tiledb-codegen`:\n{report}"
    );
    assert!(generated
        .get("runtime/src/format/generated/mod.rs")
        .is_some());
    // Generous for an unoptimised test build; the release binary is far faster.
    assert!(elapsed.as_secs_f64() < 5.0, "generation took {elapsed:?}");
}
