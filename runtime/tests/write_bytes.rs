//! Where TileDB is deterministic, our fragment files are TileDB's files: every
//! case the writer replays (bar those in `NOT_IDENTICAL`, with the reason) is
//! replayed with our writer and every
//! file of each fragment (data files and `__fragment_metadata.tdb`) is
//! compared byte for byte with the file TileDB wrote for the same input
//! (`conformance/corpus/tiledb-2.30/<case>/`). The only part allowed to
//! differ is the schema file name recorded in the footer, which carries the
//! creation time and a random label; it is swapped before comparing (both
//! names have the same length). Likewise the names of the delete commits a
//! consolidated fragment lists as processed: their labels are swapped in the
//! payloads of the metadata's generic tiles, which are then compared.

use std::path::{Path, PathBuf};

/// Cases whose fragments may differ from TileDB's, and why.
const NOT_IDENTICAL: &[(&str, &str)] = &[
    (
        "dense.filter.webp",
        "the default build encodes WebP with a pure-Rust lossless encoder whose bitstream differs from libwebp's (TileDB's)",
    ),
    (
        "sparse.encrypted.aes256gcm",
        "AES-256-GCM encryption draws a random initialization vector per tile",
    ),
    (
    "sparse.duplicates",
    "TileDB orders equal coordinates with its parallel quicksort, whose result depends on the thread count",
    ),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn schema_name(array: &Path) -> String {
    let dirs = sorted_dirs(&array.join("__schema"));
    dirs.iter()
        .filter(|p| p.is_file())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .next()
        .expect("a schema file")
}

fn replace_all(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let mut out = haystack.to_vec();
    let mut i = 0;
    while i + from.len() <= out.len() {
        if &out[i..i + from.len()] == from {
            out[i..i + from.len()].copy_from_slice(to);
            i += from.len();
        } else {
            i += 1;
        }
    }
    out
}

/// Compares our fragments of `id` with TileDB's; `Err` names the first
/// difference.
fn compare_case(id: &str) -> Result<usize, String> {
    let ws = workspace();
    let text = std::fs::read_to_string(ws.join(format!("conformance/cases/{id}.toml")))
        .map_err(|e| e.to_string())?;
    if text.contains("\nencryption = ") {
        return Err("encrypted tiles carry random initialization vectors".into());
    }
    let out = tempfile::tempdir().unwrap();
    tiledb_conformance::recipe::replay_case(&text, out.path())
        .map_err(|e| format!("replay: {e}"))?;
    let ours = out.path().join("array");
    let theirs = ws.join(format!("conformance/corpus/tiledb-2.30/{id}/array"));
    let (our_schema, their_schema) = (schema_name(&ours), schema_name(&theirs));
    let our_frags = sorted_dirs(&ours.join("__fragments"));
    let their_frags = sorted_dirs(&theirs.join("__fragments"));
    if our_frags.len() != their_frags.len() {
        return Err(format!(
            "{} fragments, TileDB wrote {}",
            our_frags.len(),
            their_frags.len()
        ));
    }
    let mut files = 0;
    // Delete commits: the whole generic tile (negated condition AST).
    let dels = |array: &Path| -> Vec<PathBuf> {
        sorted_dirs(&array.join("__commits"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "del"))
            .collect()
    };
    let (our_dels, their_dels) = (dels(&ours), dels(&theirs));
    if our_dels.len() != their_dels.len() {
        return Err(format!(
            "{} deletes, TileDB wrote {}",
            our_dels.len(),
            their_dels.len()
        ));
    }
    // A consolidated fragment lists the delete commits it applied, by name:
    // their random labels differ from TileDB's.
    let mut label_swaps: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for (a, b) in our_dels.iter().zip(&their_dels) {
        if std::fs::read(a).unwrap() != std::fs::read(b).unwrap() {
            return Err(format!("{} differs", a.display()));
        }
        let stem = |p: &Path| p.file_stem().unwrap().to_string_lossy().as_bytes().to_vec();
        label_swaps.push((stem(a), stem(b)));
        files += 1;
    }
    for (ofrag, tfrag) in our_frags.iter().zip(&their_frags) {
        let names = |d: &Path| -> Vec<String> {
            sorted_dirs(d)
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        if names(ofrag) != names(tfrag) {
            return Err(format!("files {:?} vs {:?}", names(ofrag), names(tfrag)));
        }
        for name in names(ofrag) {
            let mut a = std::fs::read(ofrag.join(&name)).unwrap();
            let b = std::fs::read(tfrag.join(&name)).unwrap();
            if name == "__fragment_metadata.tdb" {
                a = replace_all(&a, our_schema.as_bytes(), their_schema.as_bytes());
            }
            if a != b && name == "__fragment_metadata.tdb" && !label_swaps.is_empty() {
                // The processed conditions are a compressed generic tile:
                // compare the payloads with the delete labels swapped.
                let swap = |part: Vec<u8>| {
                    label_swaps
                        .iter()
                        .fold(part, |p, (o, t)| replace_all(&p, o, t))
                };
                let ours: Vec<Vec<u8>> = metadata_parts(&a).into_iter().map(swap).collect();
                let theirs = metadata_parts(&b);
                if ours == theirs {
                    files += 1;
                    continue;
                }
                let at = ours.iter().zip(&theirs).position(|(x, y)| x != y);
                return Err(format!(
                    "{name}: part {at:?} of {} differs with the delete labels swapped",
                    theirs.len()
                ));
            }
            if a != b && name == "__fragment_metadata.tdb" {
                return Err(format!("{name}: {}", metadata_difference(&a, &b)));
            }
            if a != b {
                let at = a.iter().zip(&b).position(|(x, y)| x != y);
                return Err(format!(
                    "{name}: {} bytes vs {}, first difference at {at:?}",
                    a.len(),
                    b.len()
                ));
            }
            files += 1;
        }
    }
    Ok(files)
}

/// The generic tiles of a fragment metadata file (payloads), then the footer.
fn metadata_parts(bytes: &[u8]) -> Vec<Vec<u8>> {
    let n = bytes.len();
    let footer_len = u64::from_le_bytes(bytes[n - 8..].try_into().unwrap()) as usize;
    let footer_start = n - 8 - footer_len;
    let mut parts = Vec::new();
    let mut at = 0u64;
    while (at as usize) < footer_start {
        let gt = tiledb_runtime::tile::generic::read_generic_tile(bytes, at, None).unwrap();
        parts.push(gt.payload);
        at = gt.end;
    }
    parts.push(bytes[footer_start..].to_vec());
    parts
}

fn metadata_difference(a: &[u8], b: &[u8]) -> String {
    let (pa, pb) = (metadata_parts(a), metadata_parts(b));
    for (i, (x, y)) in pa.iter().zip(&pb).enumerate() {
        if x != y {
            let at = x
                .iter()
                .zip(y)
                .position(|(p, q)| p != q)
                .unwrap_or(x.len().min(y.len()));
            let from = at.saturating_sub(8);
            return format!(
                "part {i} of {}, byte {at}: ours {:?} theirs {:?}",
                pa.len(),
                &x[from..x.len().min(at + 24)],
                &y[from..y.len().min(at + 24)]
            );
        }
    }
    format!("{} parts vs {}; payloads equal", pa.len(), pb.len())
}

#[derive(Debug)]
enum Outcome {
    Same(usize),
    NotReplayed,
    Different(String),
}

fn outcome(id: &str) -> Outcome {
    let ws = workspace();
    let Ok(text) = std::fs::read_to_string(ws.join(format!("conformance/cases/{id}.toml"))) else {
        return Outcome::NotReplayed;
    };
    // Only the main array folder is compared (group cases have none).
    if !ws
        .join(format!(
            "conformance/corpus/tiledb-2.30/{id}/array/__schema"
        ))
        .is_dir()
    {
        return Outcome::NotReplayed;
    }
    let probe = tempfile::tempdir().unwrap();
    match tiledb_conformance::recipe::replay_case(&text, probe.path()) {
        Err(e) if e.class().name() == "unsupported" => return Outcome::NotReplayed,
        _ => {}
    }
    match compare_case(id) {
        Ok(n) => Outcome::Same(n),
        Err(e) => Outcome::Different(e),
    }
}

fn case_ids() -> Vec<String> {
    let ws = workspace();
    let mut ids: Vec<String> = std::fs::read_dir(ws.join("conformance/cases"))
        .unwrap()
        .flatten()
        .map(|e| e.path().file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|id| !id.starts_with("negative."))
        // A case with a `base` is made by mutating another case's array: there
        // is no recipe to replay.
        .filter(|id| {
            std::fs::read_to_string(ws.join(format!("conformance/cases/{id}.toml")))
                .map(|text| {
                    !text.lines().any(|l| {
                        let l = l.trim_start();
                        l.starts_with("base ") || l.starts_with("base=")
                    })
                })
                .unwrap_or(false)
        })
        .filter(|id| {
            ws.join(format!("conformance/corpus/tiledb-2.30/{id}/expected.json"))
                .is_file()
        })
        .collect();
    ids.sort();
    ids
}

#[test]
fn fragments_are_byte_identical_to_tiledb() {
    let mut failures = Vec::new();
    let mut now_identical = Vec::new();
    let (mut cases, mut files) = (0, 0);
    for id in case_ids() {
        let excused = NOT_IDENTICAL.iter().find(|(c, _)| *c == id);
        match (outcome(&id), excused) {
            (Outcome::NotReplayed, _) => {}
            (Outcome::Same(_), Some(_)) => now_identical.push(id),
            (Outcome::Same(n), None) => {
                cases += 1;
                files += n;
            }
            (Outcome::Different(e), Some((_, why))) => println!("differs {id}: {why} ({e})"),
            (Outcome::Different(e), None) => failures.push(format!("{id}: {e}")),
        }
    }
    println!("{cases} cases, {files} fragment files byte-identical to TileDB's");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        now_identical.is_empty(),
        "now identical, unlist: {now_identical:?}"
    );
    assert!(cases > 100, "too few cases compared: {cases}");
}

/// Not a check: lists, for every case, whether our files equal TileDB's
/// (run with `--ignored --nocapture` to choose cases for `IDENTICAL`).
#[test]
#[ignore]
fn survey_byte_identity() {
    for id in case_ids() {
        println!("{id}: {:?}", outcome(&id));
    }
}
