//! Arrays of the corpus mutated here, each file type truncated,
//! bit-flipped and removed: each mutation gets its finding, in the file it
//! should name.

use std::path::Path;

use tiledb_runtime::check::{check_array, CheckOptions, Finding};
use tiledb_runtime::ErrorClass;

use crate::{copy_dir, corpus, files_of, show};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mutation {
    /// Keep the first half.
    Truncate,
    /// Flip the top bit of a byte inside the file's first compressed or
    /// checksummed region (see `flip_offset`).
    BitFlip,
    Remove,
}

/// What kind of file a path is, for choosing mutations and expectations.
fn file_kind(path: &str) -> &'static str {
    let name = path.rsplit('/').next().unwrap_or(path);
    if path.starts_with("__schema/__enumerations/") {
        "enumeration"
    } else if path.starts_with("__schema/") {
        "schema"
    } else if name == "__fragment_metadata.tdb" {
        "fragment metadata"
    } else if path.starts_with("__fragments/") {
        "data"
    } else if name.ends_with(".wrt") {
        "write commit"
    } else if name.ends_with(".del") {
        "delete commit"
    } else if name.ends_with(".con") {
        "consolidated commits"
    } else if name.ends_with(".vac") {
        "vacuum"
    } else if name.ends_with(".meta") {
        "consolidated fragment metadata"
    } else if path.starts_with("__meta/") {
        "metadata"
    } else {
        "other"
    }
}

/// Where a bit flip is certain to be caught: inside the body of the first
/// generic tile (GZIP carries an Adler-32 of its output), inside a
/// checksummed data tile, or in the text of a commit list (the top bit
/// makes it invalid UTF-8).
fn flip_offset(kind: &str, bytes: &[u8]) -> Option<usize> {
    match kind {
        // Generic tiles: the header and GZIP pipeline take 60 bytes; the
        // chunk framing 20 more; flip a byte inside the deflate stream.
        "schema"
        | "enumeration"
        | "fragment metadata"
        | "delete commit"
        | "metadata"
        | "consolidated fragment metadata" => (bytes.len() > 90).then_some(84),
        // Data tiles of an array whose pipeline ends in a checksum: flip the
        // last byte of the first tile's data.
        "data" => (bytes.len() > 40).then(|| bytes.len() - 3),
        "consolidated commits" | "vacuum" => (!bytes.is_empty()).then_some(2),
        _ => None,
    }
}

/// The file a finding must name after `mutation` of `path`.
fn expected_file(
    path: &str,
    kind: &str,
    mutation: Mutation,
    fragment_schema_users: &[String],
    consolidated_commits: &str,
) -> Option<Vec<String>> {
    let fragment_dir = || {
        let mut parts = path.split('/');
        let first = parts.next().unwrap_or_default();
        let second = parts.next().unwrap_or_default();
        format!("{first}/{second}")
    };
    match mutation {
        Mutation::Truncate | Mutation::BitFlip => Some(vec![path.to_string()]),
        Mutation::Remove => match kind {
            "data" => Some(vec![path.to_string()]),
            "fragment metadata" => Some(vec![fragment_dir()]),
            "write commit" => {
                let stem = path
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches(".wrt");
                // A commit that a .con file repeats is still committed.
                (!consolidated_commits.contains(stem)).then(|| vec![format!("__fragments/{stem}")])
            }
            // The fragments that name the schema report it missing.
            "schema" => Some(fragment_schema_users.to_vec()),
            // The schema that names the enumeration reports it missing.
            "enumeration" => Some(vec![]),
            // Removing a delete, a vacuum list, metadata or consolidated
            // fragment metadata leaves a valid (different) array.
            _ => None,
        },
    }
}

fn mutate(root: &Path, path: &str, mutation: Mutation, bytes: &[u8], kind: &str) -> bool {
    let full = root.join(path);
    match mutation {
        Mutation::Truncate => {
            if bytes.len() < 2 {
                return false;
            }
            std::fs::write(&full, &bytes[..bytes.len() / 2]).expect("truncate");
        }
        Mutation::BitFlip => {
            let Some(at) = flip_offset(kind, bytes) else {
                return false;
            };
            let mut copy = bytes.to_vec();
            copy[at] ^= 0x80;
            std::fs::write(&full, copy).expect("flip");
        }
        Mutation::Remove => std::fs::remove_file(&full).expect("remove"),
    }
    true
}

#[test]
fn mutated_corpus_arrays_are_diagnosed() {
    // Arrays that between them hold every kind of file; checksummed data
    // tiles so that flipped data bits are detectable.
    let bases = [
        "sparse.filter.checksum_md5",
        "dense.filter.checksum_sha256",
        "sparse.attr.var_utf8.nullable.zstd",
        "sparse.delete.condition",
        "sparse.consolidate.commits",
        "sparse.consolidate.fragment_meta",
        "sparse.consolidate.fragments.vacuum",
        "sparse.enumeration",
        "array.metadata.basic",
    ];
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let mut diagnosed = std::collections::BTreeMap::<(String, String), usize>::new();
    let mut failures = Vec::new();
    for base in bases {
        let source = corpus("tiledb-2.30").join(base).join("array");
        assert!(source.is_dir(), "{} is missing", source.display());
        let mut files = Vec::new();
        files_of(&source, &source, &mut files);
        let schema_users: Vec<String> = files
            .iter()
            .filter(|f| f.ends_with("__fragment_metadata.tdb"))
            .cloned()
            .collect();
        // The text of the array's .con files (their lines name commits).
        let con_text: String = files
            .iter()
            .filter(|f| f.ends_with(".con"))
            .map(|f| {
                String::from_utf8_lossy(&std::fs::read(source.join(f)).unwrap_or_default())
                    .into_owned()
            })
            .collect();
        for path in &files {
            let kind = file_kind(path);
            let bytes = std::fs::read(source.join(path)).expect("read");
            for mutation in [Mutation::Truncate, Mutation::BitFlip, Mutation::Remove] {
                let Some(expected) = expected_file(path, kind, mutation, &schema_users, &con_text)
                else {
                    continue;
                };
                if kind == "data" && mutation == Mutation::BitFlip && !base.contains("checksum") {
                    continue;
                }
                let copy = scratch
                    .path()
                    .join(format!("{base}-{}", diagnosed.len() + failures.len()));
                copy_dir(&source, &copy);
                if !mutate(&copy, path, mutation, &bytes, kind) {
                    let _ = std::fs::remove_dir_all(&copy);
                    continue;
                }
                let report = check_array(&copy, &CheckOptions::default());
                let ok = |f: &Finding| {
                    f.class == ErrorClass::Corrupt
                        && (expected.contains(&f.file)
                            || (kind == "enumeration" && f.file.starts_with("__schema/"))
                            || (kind == "schema" && f.file.starts_with("__schema")))
                };
                // Without its commit marker a fragment is what an interrupted
                // write leaves: not corruption (readers skip it), but reported
                // as a note naming the fragment.
                let uncommitted = mutation == Mutation::Remove && path.ends_with(".wrt");
                let diagnosed_here = if uncommitted {
                    report.notes.iter().any(|n| expected.contains(&n.file))
                } else {
                    report.findings.iter().any(ok)
                };
                if diagnosed_here {
                    *diagnosed
                        .entry((kind.to_string(), format!("{mutation:?}")))
                        .or_default() += 1;
                } else {
                    failures.push(format!(
                        "{base}: {mutation:?} {path} ({kind}): expected a corrupt finding in {expected:?}, got:\n{}",
                        show(&report)
                    ));
                }
                let _ = std::fs::remove_dir_all(&copy);
            }
        }
    }
    for ((kind, mutation), count) in &diagnosed {
        println!("{kind:>32} {mutation:<9} {count} diagnosed");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for kind in [
        "schema",
        "enumeration",
        "fragment metadata",
        "data",
        "delete commit",
        "consolidated commits",
        "consolidated fragment metadata",
        "metadata",
        "write commit",
    ] {
        assert!(
            diagnosed.keys().any(|(k, _)| k == kind),
            "no mutation of a {kind} file was tried"
        );
    }
}

#[test]
fn findings_locate_a_truncated_data_file() {
    let case = corpus("tiledb-2.30").join("negative.tile.truncated");
    let report = check_array(&case.join("array"), &CheckOptions::default());
    let finding = report
        .findings
        .iter()
        .find(|f| f.file.ends_with("a0.tdb"))
        .expect("a finding in a0.tdb");
    // The file keeps 30 of its 60 bytes (the mutation in expected.json).
    assert_eq!(finding.offset, 30);
    assert_eq!(finding.field, "file size");
}
