//! The spec outside Rust, proven: `tiledb-codegen --emit ksy` writes Kaitai Struct
//! descriptions, the real Kaitai Struct compiler (the npm package, driven by
//! `kaitai/compile.js`) compiles them to Python, and the generated parsers (with the
//! `kaitaistruct` runtime from PyPI, in `.venv-tiledb`) parse every array schema,
//! enumeration, fragment metadata, array/group metadata, delete commit, group details
//! and consolidated fragment metadata file of the corpus (every producer) with the same
//! field values as the runtime's generated types (compared through their serde shape).
//!
//! Files whose payload Kaitai cannot reach (a filtered payload other than one GZIP
//! chunk) are counted and listed by reason; their headers are still compared. Each
//! kind must have at least a minimum number of files compared in full.
//!
//! Needs node/npm and `.venv-tiledb`; the test installs the pinned packages itself
//! (`npm ci` in `kaitai/`, `pip install kaitaistruct==0.11`) and `scripts/test` does
//! too. Without node or the venv it says why and passes, except under `CI=true`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use binrw::BinRead;
use serde::Serialize;
use serde_json::{json, Value};
use tiledb_runtime::format::generated::{
    ArraySchema, ConsolidatedFragmentMetadata, DeleteCommit, Enumeration, FragmentFooterHead,
    GenericTileHeader, GroupDetails, Metadata, UpdateCommit,
};
use tiledb_runtime::format::io::read_prefix;
use tiledb_runtime::tile::generic::{read_generic_tile, GenericTile};

const KAITAISTRUCT: &str = "kaitaistruct==0.11";

/// Files compared in full (header and payload), at least, per kind.
const MINIMUM: &[(&str, usize)] = &[
    ("array_schema", 450),
    ("enumeration", 10),
    ("fragment_metadata", 550),
    ("metadata", 10),
    ("group_details", 9),
    ("delete_commit", 20),
    ("consolidated_fragment_metadata", 5),
];

fn conformance_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn missing(what: &str) {
    assert!(
        std::env::var("CI").is_err(),
        "kaitai: {what} (scripts/test installs it)"
    );
    eprintln!("kaitai: SKIPPED: {what}; scripts/test installs it");
}

fn runs(program: &Path, args: &[&str], dir: &Path) -> bool {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .status()
        .is_ok_and(|s| s.success())
}

/// `kaitai/` with the compiler installed (`npm ci` on first use).
fn compiler_dir() -> Option<PathBuf> {
    let dir = conformance_dir().join("tests/kaitai");
    if !dir.join("node_modules/kaitai-struct-compiler").exists()
        && !runs(
            Path::new("npm"),
            &["ci", "--no-audit", "--no-fund", "--silent"],
            &dir,
        )
    {
        return None;
    }
    let node = Command::new("node").arg("--version").output();
    node.is_ok_and(|o| o.status.success()).then_some(dir)
}

/// The venv's python with kaitaistruct installed (pip on first use).
fn python() -> Option<PathBuf> {
    let python = tiledb_conformance::oracle::tiledb_python()?;
    let dir = conformance_dir();
    if !runs(&python, &["-c", "import kaitaistruct"], &dir)
        && !runs(
            &python,
            &[
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                KAITAISTRUCT,
            ],
            &dir,
        )
    {
        return None;
    }
    Some(python)
}

/// The kind of a corpus file, by where it lives.
fn kind_of(path: &Path) -> Option<&'static str> {
    let name = path.file_name()?.to_str()?;
    let parent = path.parent()?.file_name()?.to_str()?;
    if name.ends_with(".vac") || name.ends_with(".ok") {
        return None;
    }
    Some(match (parent, name) {
        ("__schema", _) | (_, "__array_schema.tdb") => "array_schema",
        ("__enumerations", _) => "enumeration",
        (_, "__fragment_metadata.tdb") => "fragment_metadata",
        ("__meta", _) => "metadata",
        ("__group", _) => "group_details",
        (_, n) if n.ends_with(".del") => "delete_commit",
        (_, n) if n.ends_with(".upd") => "update_commit",
        ("__fragment_meta", n) if n.ends_with(".meta") => "consolidated_fragment_metadata",
        _ => return None,
    })
}

fn corpus_files(dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("corpus readable")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            corpus_files(&path, out);
        } else if let Some(kind) = kind_of(&path) {
            out.push((kind.to_string(), path));
        }
    }
}

type Parsed = Result<Value, String>;

fn payload<T>(tile: &GenericTile, what: &str) -> Parsed
where
    T: for<'a> BinRead<Args<'a> = ()> + Serialize,
{
    let parsed: T = tile.parse((), what).map_err(|e| e.to_string())?;
    Ok(serde_json::to_value(parsed).expect("serializes"))
}

/// The generic tile header at `offset` and the offset just past its tile.
fn header_at(bytes: &[u8], offset: u64) -> Result<(GenericTileHeader, u64), String> {
    let rest = bytes.get(offset as usize..).ok_or("tile past the end")?;
    let (header, len) = read_prefix::<GenericTileHeader>(rest, (), "GenericTileHeader")
        .map_err(|e| e.to_string())?;
    let end = offset + len + header.persisted_size;
    Ok((header, end))
}

/// What the runtime's generated types read from one file, in the dumper's shape;
/// with `header_only`, a generic tile's header without its payload.
fn rust_value(kind: &str, bytes: &[u8], header_only: bool) -> Parsed {
    if kind == "fragment_metadata" {
        let trailer_start = bytes.len().checked_sub(8).ok_or("no footer length")?;
        let trailer: [u8; 8] = bytes[trailer_start..].try_into().unwrap();
        let footer_len = u64::from_le_bytes(trailer);
        let footer_start = usize::try_from(footer_len)
            .ok()
            .and_then(|len| trailer_start.checked_sub(len))
            .ok_or("footer length past the start")?;
        let mut headers = Vec::new();
        let mut offset = 0u64;
        while offset < footer_start as u64 {
            let (header, end) = header_at(&bytes[..footer_start], offset)?;
            headers.push(serde_json::to_value(&header).unwrap());
            offset = end;
        }
        let (head, _) =
            read_prefix::<FragmentFooterHead>(&bytes[footer_start..], (), "FragmentFooterHead")
                .map_err(|e| e.to_string())?;
        return Ok(json!({
            "footer_len": footer_len,
            "headers": headers,
            "footer_head": serde_json::to_value(head).unwrap(),
        }));
    }
    if header_only {
        let (header, _) = header_at(bytes, 0)?;
        return Ok(json!({ "header": serde_json::to_value(&header).unwrap() }));
    }
    let tile = read_generic_tile(bytes, 0, None).map_err(|e| e.to_string())?;
    let payload = match kind {
        "array_schema" => payload::<ArraySchema>(&tile, "ArraySchema")?,
        "enumeration" => payload::<Enumeration>(&tile, "Enumeration")?,
        "metadata" => payload::<Metadata>(&tile, "Metadata")?,
        "group_details" => payload::<GroupDetails>(&tile, "GroupDetails")?,
        "delete_commit" => payload::<DeleteCommit>(&tile, "DeleteCommit")?,
        "update_commit" => payload::<UpdateCommit>(&tile, "UpdateCommit")?,
        "consolidated_fragment_metadata" => {
            payload::<ConsolidatedFragmentMetadata>(&tile, "ConsolidatedFragmentMetadata")?
        }
        other => panic!("no runtime type for {other}"),
    };
    Ok(json!({ "header": serde_json::to_value(&tile.header).unwrap(), "payload": payload }))
}

/// The first difference between two values, as a JSON path and both sides.
fn difference(path: &str, rust: &Value, kaitai: &Value) -> Option<String> {
    match (rust, kaitai) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter().find_map(|k| {
                difference(
                    &format!("{path}.{k}"),
                    a.get(k).unwrap_or(&Value::Null),
                    b.get(k).unwrap_or(&Value::Null),
                )
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| difference(&format!("{path}[{i}]"), x, y)),
        // A field the Kaitai parsers keep as opaque bytes (manifest kind
        // "opaque", listed in UNSUPPORTED.md) is not compared.
        (_, Value::String(s)) if s == "<opaque>" => None,
        (Value::Number(a), Value::Number(b)) if a.is_f64() || b.is_f64() => {
            let (x, y) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            // f32 fields: serde prints the f32, Python widens it to f64.
            let close = x == y || (x - y).abs() <= 1e-6 * x.abs().max(y.abs());
            (!close).then(|| format!("{path}: runtime {x}, kaitai {y}"))
        }
        _ => (rust != kaitai).then(|| {
            let show = |v: &Value| {
                let text = v.to_string();
                if text.len() > 200 {
                    format!("{}…", &text[..200])
                } else {
                    text
                }
            };
            format!("{path}: runtime {}, kaitai {}", show(rust), show(kaitai))
        }),
    }
}

#[test]
fn kaitai_parsers_read_the_corpus_like_the_runtime() {
    let Some(compiler) = compiler_dir() else {
        return missing("node/npm or the kaitai-struct-compiler package");
    };
    let Some(python) = python() else {
        return missing(".venv-tiledb with kaitaistruct");
    };
    let work = tempfile::tempdir().expect("temp dir");
    let ksy_dir = work.path().join("ksy");
    let py_dir = work.path().join("py");
    let spec = conformance_dir().join("../spec");
    let files =
        tiledb_codegen::export(&spec, tiledb_codegen::EmitKind::Ksy).expect("spec/ is valid");
    tiledb_codegen::export::write_all(&ksy_dir, &files).expect("writes the ksy");

    let compiled = Command::new("node")
        .arg(compiler.join("compile.js"))
        .args([&ksy_dir, &py_dir])
        .output()
        .expect("node runs");
    assert!(
        compiled.status.success(),
        "the Kaitai Struct compiler refused the .ksy files:\n{}{}",
        String::from_utf8_lossy(&compiled.stdout),
        String::from_utf8_lossy(&compiled.stderr)
    );

    let mut corpus = Vec::new();
    corpus_files(&conformance_dir().join("corpus"), &mut corpus);
    let jobs: Vec<Value> = corpus
        .iter()
        .map(|(kind, path)| json!({"kind": kind, "path": path}))
        .collect();
    let jobs_path = work.path().join("jobs.json");
    let out_path = work.path().join("out.json");
    std::fs::write(&jobs_path, serde_json::to_string(&jobs).unwrap()).unwrap();
    let dumped = Command::new(&python)
        .arg(compiler.join("dump.py"))
        .args([
            &py_dir,
            &ksy_dir.join("manifest.json"),
            &jobs_path,
            &out_path,
        ])
        .output()
        .expect("python runs");
    assert!(
        dumped.status.success(),
        "dump.py failed:\n{}",
        String::from_utf8_lossy(&dumped.stderr)
    );
    let results: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    assert_eq!(results.len(), corpus.len());

    let mut compared: BTreeMap<String, usize> = BTreeMap::new();
    let mut filtered: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut rejected = Vec::new();
    for ((kind, path), result) in corpus.iter().zip(&results) {
        let shown = path
            .strip_prefix(conformance_dir())
            .unwrap_or(path)
            .display()
            .to_string();
        let bytes = std::fs::read(path).unwrap();
        let reason = result.get("filtered").and_then(Value::as_str);
        // A payload that stayed filtered: compare the header only.
        let rust = rust_value(kind, &bytes, reason.is_some());
        let kaitai_error = result.get("error").and_then(Value::as_str);
        let rust = match (rust, kaitai_error) {
            (Ok(rust), None) => rust,
            (Err(rust_error), Some(kaitai_error)) => {
                // A corrupt file (the corpus's negative cases): both must refuse it.
                let first_line = kaitai_error.lines().next().unwrap_or("");
                rejected.push(format!(
                    "{shown}: runtime: {rust_error}; kaitai: {first_line}"
                ));
                continue;
            }
            (Ok(_), Some(kaitai_error)) => {
                failures.push(format!(
                    "{shown}: only the kaitai parser failed: {kaitai_error}"
                ));
                continue;
            }
            (Err(rust_error), None) => {
                failures.push(format!("{shown}: only the runtime failed: {rust_error}"));
                continue;
            }
        };
        let kaitai = &result["value"];
        if let Some(reason) = reason {
            filtered
                .entry((kind.clone(), reason.to_string()))
                .or_default()
                .push(shown.clone());
        } else {
            *compared.entry(kind.clone()).or_default() += 1;
        }
        if let Some(diff) = difference(kind, &rust, kaitai) {
            failures.push(format!("{shown}: {diff}"));
        }
    }

    eprintln!("kaitai: files compared field by field, by kind:");
    for (kind, count) in &compared {
        eprintln!("  {kind}: {count}");
    }
    if !filtered.is_empty() {
        eprintln!("kaitai: payloads Kaitai cannot reach (headers compared only), by reason:");
        for ((kind, reason), paths) in &filtered {
            eprintln!(
                "  {kind}: {reason}: {} file(s), e.g. {}",
                paths.len(),
                paths[0]
            );
        }
    }
    eprintln!("kaitai: corrupt files both refuse: {}", rejected.len());
    for line in &rejected {
        eprintln!("  {line}");
    }
    assert!(
        rejected.iter().all(|line| line.contains("/negative.")),
        "only the corpus's negative cases may be refused"
    );
    assert!(
        failures.is_empty(),
        "{} file(s) differ between the Kaitai parsers and the runtime:\n{}",
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    for (kind, minimum) in MINIMUM {
        let count = compared.get(*kind).copied().unwrap_or(0);
        assert!(
            count >= *minimum,
            "only {count} {kind} file(s) compared in full, expected at least {minimum}"
        );
    }
}
