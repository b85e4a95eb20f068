//! Builds and tests a temporary crate from a (modified) copy of spec/: the
//! generated modules, plus copies of `runtime/src/format/io.rs`,
//! `runtime/src/format/view.rs` and `runtime/src/error.rs`, which is all
//! the generated code needs.
//!
//! The crate builds in the workspace's target dir ([`target_dir`]), reusing
//! the dependencies built there. FUTURE_VERSION_KEEP=1 keeps the crate.

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// `../shared` beside the workspace, or TILEDB_SHARED_DIR.
#[allow(dead_code)] // not every test crate that includes this module reads it
pub fn shared_dir() -> PathBuf {
    std::env::var_os("TILEDB_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("../shared"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_file() {
            std::fs::copy(&path, to.join(entry.file_name())).expect("copy");
        }
    }
}

/// What the temporary crate produced.
pub struct CrateRun {
    pub generated: tiledb_codegen::GeneratedFiles,
    pub stdout: String,
}

/// Copies spec/, lets `evolve` change the copy, generates, writes the crate
/// with `test_source` as its integration test, and runs `cargo test` in it.
pub fn run_generated_crate(evolve: impl FnOnce(&Path), test_source: &str) -> CrateRun {
    let root = workspace();
    let temp = tempfile::tempdir().expect("temp dir");
    let temp_path = temp.path().to_path_buf();
    let _guard = if std::env::var_os("FUTURE_VERSION_KEEP").is_some() {
        println!("keeping {}", temp_path.display());
        std::mem::forget(temp);
        None
    } else {
        Some(temp)
    };
    let spec = temp_path.join("spec");
    copy_dir(&root.join("spec"), &spec);
    evolve(&spec);

    let generated = tiledb_codegen::generate(&spec).expect("the changed spec is valid");
    let krate = temp_path.join("generated_crate");
    let src = krate.join("src");
    let format_dir = src.join("format");
    for (path, text) in &generated.files {
        if let Ok(relative) = path.strip_prefix(tiledb_codegen::GENERATED_DIR) {
            let target = format_dir.join("generated").join(relative);
            std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
            std::fs::write(target, text).expect("write generated");
        }
    }
    std::fs::copy(
        root.join("runtime/src/format/io.rs"),
        format_dir.join("io.rs"),
    )
    .expect("io.rs");
    std::fs::copy(
        root.join("runtime/src/format/view.rs"),
        format_dir.join("view.rs"),
    )
    .expect("view.rs");
    std::fs::copy(root.join("runtime/src/error.rs"), src.join("error.rs")).expect("error.rs");
    std::fs::write(
        src.join("lib.rs"),
        "pub mod error;\npub use error::{Error, Result};\npub mod format {\n    pub mod generated;\n    pub mod io;\n    pub mod view;\n}\n",
    )
    .expect("lib.rs");
    std::fs::write(
        krate.join("Cargo.toml"),
        r#"[package]
name = "generated_crate"
version = "0.0.0"
edition = "2021"

[dependencies]
binrw = "0.15"
serde = { version = "1", features = ["derive"] }
thiserror = "2"

[dev-dependencies]
flate2 = "1"

[workspace]

# The workspace's profile for dependencies, so that those it has built
# already are reused; the crate itself needs no debug info either.
[profile.dev]
debug = false
"#,
    )
    .expect("Cargo.toml");
    std::fs::copy(root.join("Cargo.lock"), krate.join("Cargo.lock")).expect("Cargo.lock");
    std::fs::create_dir_all(krate.join("tests")).expect("tests dir");
    std::fs::write(krate.join("tests/generated.rs"), test_source).expect("test file");

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["test", "--offline", "--quiet"])
        .current_dir(&krate)
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CARGO_INCREMENTAL", "0")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo test in the temporary crate");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "the generated crate failed:\n{stdout}\n{stderr}"
    );
    CrateRun { generated, stdout }
}

/// The target dir these tests were built in (`target/` or
/// `$CARGO_TARGET_DIR`): cargo holds its lock while it builds, not while
/// the tests run, so a crate built from a test reuses the dependencies the
/// workspace has built already instead of building a tree of its own.
pub fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target dir")
        .to_path_buf()
}

/// A Rust string literal for a path.
pub fn literal(path: &Path) -> String {
    format!("{:?}", path.display().to_string())
}

/// Decoding a whole-file generic tile whose pipeline is GZIP only, with the
/// generated structures: shared by the crates' tests.
pub const GZIP_PAYLOAD: &str = r#"
/// The payload of a whole-file generic tile whose pipeline is GZIP only.
#[allow(dead_code)]
fn payload(bytes: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let (header, used): (GenericTileHeader, u64) =
        read_prefix(bytes, (), "GenericTileHeader").expect("header");
    assert_eq!(header.pipeline.filters.len(), 1);
    assert_eq!(header.pipeline.filters[0].filter_type, FilterType::Gzip);
    let start = used as usize;
    let tile: Tile = read_exact_from(&bytes[start..start + header.persisted_size as usize], (), "Tile")
        .expect("tile");
    let mut out = Vec::new();
    for chunk in &tile.chunks {
        // The compression filter's metadata: part counts, then (original, compressed) sizes.
        let md = &chunk.metadata;
        let word = |i: usize| u32::from_le_bytes(md[4 * i..4 * i + 4].try_into().unwrap()) as usize;
        let parts = word(0) + word(1);
        let mut at = 0;
        for part in 0..parts {
            let (original, compressed) = (word(2 + 2 * part), word(3 + 2 * part));
            let mut inflated = Vec::with_capacity(original);
            flate2::read::ZlibDecoder::new(&chunk.data[at..at + compressed])
                .read_to_end(&mut inflated)
                .expect("zlib");
            assert_eq!(inflated.len(), original);
            out.extend(inflated);
            at += compressed;
        }
    }
    assert_eq!(out.len() as u64, header.tile_size);
    out
}
"#;
