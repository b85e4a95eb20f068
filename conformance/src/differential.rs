//! Differential fuzzing against TileDB: arrays made valid-but-unusual from the case recipes,
//! read by our runtime and by TileDB, which must agree.
//!
//! Each execution takes a case recipe and mutates it structurally — the knobs a schema has
//! (capacity, tile extents, cell and tile order, the filter pipelines of attributes,
//! coordinates, offsets and validity) set to values that are legal but rarely written (a
//! capacity of 1, extents of 1, Hilbert order, a checksum after a compressor, …). Either
//! writer, ours or TileDB's, replays the mutated recipe; sometimes a fragment is then removed
//! (its folder and its commit file: still a valid array). Both readers run every read of the
//! case on the result. They must return the same cells, or both refuse. Anything else — one
//! side refusing what the other reads, different cells, a crash or a hang on either side, a
//! writer crashing — is a finding, saved with the mutated recipe, the array and a one-line
//! repro (`tdb differential --replay DIR`).
//!
//! A refusal by the writer is not a finding (a mutation can make a schema TileDB rejects,
//! such as a filter that does not apply to a datatype); it is counted.

mod features;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tiledb_runtime::format::generated::{Extension, COMMITS_DIR, FRAGMENTS_DIR};

use crate::adapter::{Adapter, Answer};
use crate::case::Case;
use crate::compare::compare_duplicates_unordered;

/// Filter pipelines that apply to every datatype of the cases (compressors, shuffles and
/// checksums), in the recipe vocabulary.
const PIPELINES: &[&str] = &[
    "[]",
    r#"[{ name = "ZSTD" }]"#,
    r#"[{ name = "ZSTD", level = 19 }]"#,
    r#"[{ name = "GZIP", level = 9 }]"#,
    r#"[{ name = "LZ4" }]"#,
    r#"[{ name = "BZIP2" }]"#,
    r#"[{ name = "RLE" }]"#,
    r#"[{ name = "BYTESHUFFLE" }, { name = "LZ4" }]"#,
    r#"[{ name = "BITSHUFFLE" }, { name = "ZSTD" }]"#,
    r#"[{ name = "CHECKSUM_MD5" }]"#,
    r#"[{ name = "CHECKSUM_SHA256" }]"#,
    r#"[{ name = "ZSTD" }, { name = "CHECKSUM_SHA256" }]"#,
    r#"[{ name = "BYTESHUFFLE" }, { name = "BITSHUFFLE" }, { name = "GZIP" }]"#,
];

/// More pipelines for fixed-size integer attributes: the delta and bit-width filters.
const INTEGER_PIPELINES: &[&str] = &[
    r#"[{ name = "DELTA" }]"#,
    r#"[{ name = "DOUBLE_DELTA" }]"#,
    r#"[{ name = "DOUBLE_DELTA" }, { name = "BITSHUFFLE" }, { name = "ZSTD" }]"#,
    r#"[{ name = "BIT_WIDTH_REDUCTION", max_window = 8 }]"#,
    r#"[{ name = "POSITIVE_DELTA", max_window = 16 }, { name = "ZSTD" }]"#,
    r#"[{ name = "XOR" }, { name = "LZ4" }]"#,
];

/// More pipelines for var-sized string attributes.
const STRING_PIPELINES: &[&str] = &[
    r#"[{ name = "DICTIONARY" }]"#,
    r#"[{ name = "DICTIONARY" }, { name = "ZSTD" }]"#,
    r#"[{ name = "RLE" }, { name = "GZIP" }]"#,
];

const CAPACITIES: &[i64] = &[1, 2, 3, 5, 64, 10_000];

/// What a campaign runs.
#[derive(Debug, Clone)]
pub struct CampaignConfig {
    /// The folder of case recipes (`conformance/cases`).
    pub cases_dir: PathBuf,
    /// Where findings are saved (a folder per finding) and scratch arrays are made.
    pub out_dir: PathBuf,
    /// The seed of the mutations: the same seed replays the same campaign.
    pub seed: u64,
    /// Stop after this many executions…
    pub executions: Option<u64>,
    /// …or after this long, whichever comes first.
    pub duration: Option<Duration>,
    /// How the repro commands start, e.g. `tdb differential`.
    pub repro_prefix: String,
    /// Only the cases whose id contains this (`group`, `delete`, `encrypted`, `label`).
    pub only: Option<String>,
}

/// What one execution found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The folder holding `case.toml`, `array/` (or `group/`) and `finding.json`.
    pub dir: PathBuf,
    /// `differ`, `only-ours-refused`, `only-tiledb-refused`, `ours-crashed`,
    /// `tiledb-crashed`, `ours-timeout`, `tiledb-timeout`, `writer-crashed`.
    pub kind: String,
    /// The case, the read and the first line of the difference.
    pub summary: String,
    /// The one-line command that shows it again.
    pub repro: String,
}

/// The counts of a campaign.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Mutated recipes tried.
    pub executions: u64,
    /// Mutated recipes a writer refused (not findings).
    pub writes_refused: u64,
    /// Reads both readers answered with the same cells.
    pub reads_agreed: u64,
    /// Reads both readers refused.
    pub reads_both_refused: u64,
    /// Every disagreement found, saved with its reproduction.
    pub findings: Vec<Finding>,
}

/// A seeded generator (SplitMix64): campaigns replay from their seed.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// True with probability `1 / n`.
    pub(crate) fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A pipeline of the tables above as a recipe value.
fn pipeline_value(text: &str) -> toml::Value {
    toml::from_str::<toml::Value>(&format!("f = {text}"))
        .ok()
        .and_then(|t| t.get("f").cloned())
        .unwrap_or(toml::Value::Array(Vec::new()))
}

/// A pipeline as a change note: `ZSTD+CHECKSUM_SHA256`, or `no filter`.
fn pipeline_text(text: &str) -> String {
    let names: Vec<String> = pipeline_value(text)
        .as_array()
        .map(|stages| {
            stages
                .iter()
                .filter_map(|s| s.get("name").and_then(toml::Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if names.is_empty() {
        "no filter".into()
    } else {
        names.join("+")
    }
}

/// The pipelines that apply to an attribute of the recipe: every datatype's, and the
/// integer or string ones where they fit.
fn pipelines_for(attr: &toml::map::Map<String, toml::Value>) -> Vec<&'static str> {
    let datatype = attr.get("type").and_then(toml::Value::as_str).unwrap_or("");
    let var = attr.get("cell_val_num").and_then(toml::Value::as_str) == Some("var");
    let mut out = PIPELINES.to_vec();
    if !var && (datatype.starts_with("INT") || datatype.starts_with("UINT")) {
        out.extend_from_slice(INTEGER_PIPELINES);
    }
    if var && matches!(datatype, "STRING_ASCII" | "STRING_UTF8") {
        out.extend_from_slice(STRING_PIPELINES);
    }
    out
}

/// Appends a copy of one write step at a later timestamp: a newer fragment over the same
/// cells (overwritten in a dense array, duplicated or superseded in a sparse one).
fn repeat_a_write(recipe: &mut toml::Value, rng: &mut Rng, changes: &mut Vec<String>) {
    let Some(steps) = recipe.get_mut("steps").and_then(toml::Value::as_array_mut) else {
        return;
    };
    let writes: Vec<usize> = (0..steps.len())
        .filter(|&i| steps[i].get("op").and_then(toml::Value::as_str) == Some("write"))
        .collect();
    let latest = steps
        .iter()
        .filter_map(|s| s.get("timestamp").and_then(toml::Value::as_integer))
        .max();
    let (Some(latest), false) = (latest, writes.is_empty()) else {
        return;
    };
    let i = *rng.pick(&writes);
    let mut copy = steps[i].clone();
    let Some(table) = copy.as_table_mut() else {
        return;
    };
    let timestamp = latest + 1 + rng.below(5) as i64;
    table.insert("timestamp".into(), toml::Value::Integer(timestamp));
    steps.push(copy);
    changes.push(format!("write step {i} repeated at timestamp {timestamp}"));
}

/// Mutates a case recipe: returns the new recipe and what was changed (at least one change
/// when the schema has a knob to turn).
pub(crate) fn mutate_recipe(text: &str, rng: &mut Rng) -> Result<(String, Vec<String>), String> {
    let mut recipe: toml::Value = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut changes = Vec::new();
    // Group, delete, encryption and label mutations first (they read the
    // schema, which the knobs below then change).
    if rng.one_in(2) {
        features::mutate_features(&mut recipe, rng, &mut changes);
    }
    // An array's schema, or the schema of a group's member arrays.
    let table = if recipe.get("schema").is_some() {
        "schema"
    } else {
        "member_schema"
    };
    let Some(schema) = recipe.get_mut(table).and_then(toml::Value::as_table_mut) else {
        return Err("the recipe has no [schema] or [member_schema]".into());
    };
    let feature_changes = changes.len();
    let sparse = schema.get("type").and_then(toml::Value::as_str) == Some("sparse");
    let mut knobs = 0;
    while changes.len() == feature_changes && knobs < 8 {
        knobs += 1;
        match rng.below(6) {
            0 if sparse => {
                let capacity = *rng.pick(CAPACITIES);
                schema.insert("capacity".into(), toml::Value::Integer(capacity));
                changes.push(format!("capacity {capacity}"));
            }
            1 => mutate_extents(schema, rng, &mut changes),
            2 => {
                let which = if rng.one_in(2) {
                    "cell_order"
                } else {
                    "tile_order"
                };
                let orders: &[&str] = if sparse && which == "cell_order" {
                    &["row-major", "col-major", "hilbert"]
                } else {
                    &["row-major", "col-major"]
                };
                let order = *rng.pick(orders);
                schema.insert(which.into(), toml::Value::String(order.into()));
                changes.push(format!("{which} {order}"));
            }
            3 => {
                if let Some(attrs) = schema.get_mut("attrs").and_then(toml::Value::as_array_mut) {
                    if !attrs.is_empty() {
                        let i = rng.below(attrs.len());
                        if let Some(attr) = attrs[i].as_table_mut() {
                            let pipeline = *rng.pick(&pipelines_for(attr));
                            let name = attr
                                .get("name")
                                .and_then(toml::Value::as_str)
                                .unwrap_or("?")
                                .to_string();
                            attr.insert("filters".into(), pipeline_value(pipeline));
                            changes.push(format!("attribute {name}: {}", pipeline_text(pipeline)));
                        }
                    }
                }
            }
            4 => {
                let which = *rng.pick(&["coords_filters", "offsets_filters", "validity_filters"]);
                let pipeline = *rng.pick(PIPELINES);
                schema.insert(which.into(), pipeline_value(pipeline));
                changes.push(format!("{which}: {}", pipeline_text(pipeline)));
            }
            _ => {}
        }
    }
    // Sometimes also a newer fragment over older cells.
    if rng.one_in(3) {
        repeat_a_write(&mut recipe, rng, &mut changes);
    }
    let text = toml::to_string(&recipe).map_err(|e| e.to_string())?;
    Ok((text, changes))
}

/// Sets one integer dimension's tile extent to 1, 2, 3 or its whole domain.
fn mutate_extents(
    schema: &mut toml::map::Map<String, toml::Value>,
    rng: &mut Rng,
    changes: &mut Vec<String>,
) {
    let Some(dims) = schema.get_mut("dims").and_then(toml::Value::as_array_mut) else {
        return;
    };
    let candidates: Vec<usize> = (0..dims.len())
        .filter(|&i| {
            let d = &dims[i];
            let ints = d
                .get("domain")
                .and_then(toml::Value::as_array)
                .is_some_and(|b| b.len() == 2 && b.iter().all(toml::Value::is_integer));
            ints && d.get("tile").is_some_and(toml::Value::is_integer)
        })
        .collect();
    if candidates.is_empty() {
        return;
    }
    let i = *rng.pick(&candidates);
    let Some(dim) = dims[i].as_table_mut() else {
        return;
    };
    let bounds: Vec<i64> = dim["domain"]
        .as_array()
        .map(|b| b.iter().filter_map(toml::Value::as_integer).collect())
        .unwrap_or_default();
    let span = bounds[1].saturating_sub(bounds[0]).saturating_add(1);
    let extent = *rng.pick(&[1, 2, 3, span]);
    if extent < 1 || extent > span {
        return;
    }
    let name = dim
        .get("name")
        .and_then(toml::Value::as_str)
        .unwrap_or("?")
        .to_string();
    dim.insert("tile".into(), toml::Value::Integer(extent));
    changes.push(format!("dimension {name}: tile extent {extent}"));
}

/// Removes one fragment (its folder and its commit file) when the array has two or more.
pub(crate) fn drop_a_fragment(out_dir: &Path, rng: &mut Rng) -> Option<String> {
    let array = out_dir.join("array");
    let fragments = array.join(FRAGMENTS_DIR);
    let mut names: Vec<String> = fs::read_dir(&fragments)
        .ok()?
        .filter_map(std::result::Result::ok)
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    if names.len() < 2 {
        return None;
    }
    names.sort();
    let name = names[rng.below(names.len())].clone();
    fs::remove_dir_all(fragments.join(&name)).ok()?;
    let commit = format!("{name}{}", Extension::Wrt.suffix());
    let _ = fs::remove_file(array.join(COMMITS_DIR).join(commit));
    Some(format!("fragment {name} removed"))
}

/// How two readers' answers to one read differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    /// The finding's kind (see [`Finding::kind`]).
    pub kind: String,
    /// A diff of the cells, or what each side answered.
    pub detail: String,
}

impl Disagreement {
    fn new(kind: &str, detail: String) -> Disagreement {
        Disagreement {
            kind: kind.to_string(),
            detail,
        }
    }
}

/// How two readers' answers to one read differ, if they do.
pub fn disagreement(ours: &Answer, theirs: &Answer) -> Option<Disagreement> {
    let describe = |a: &Answer| match a {
        Answer::Value(_) => "a result".to_string(),
        Answer::Refused { class, message } => format!("a {class} refusal: {message}"),
        Answer::Crashed(why) => format!("a crash: {why}"),
        Answer::TimedOut(t) => format!("no answer within {}s", t.as_secs_f32()),
    };
    match (ours, theirs) {
        (Answer::Value(a), Answer::Value(b)) => compare_duplicates_unordered(b, a)
            .err()
            .map(|diff| Disagreement::new("differ", format!("TileDB (expected) vs ours: {diff}"))),
        (Answer::Refused { .. }, Answer::Refused { .. }) => None,
        (Answer::Crashed(_), _) => Some(Disagreement::new("ours-crashed", describe(ours))),
        (_, Answer::Crashed(_)) => Some(Disagreement::new("tiledb-crashed", describe(theirs))),
        (Answer::TimedOut(_), _) => Some(Disagreement::new("ours-timeout", describe(ours))),
        (_, Answer::TimedOut(_)) => Some(Disagreement::new("tiledb-timeout", describe(theirs))),
        (Answer::Refused { .. }, Answer::Value(_)) => {
            Some(Disagreement::new("only-ours-refused", describe(ours)))
        }
        (Answer::Value(_), Answer::Refused { .. }) => {
            Some(Disagreement::new("only-tiledb-refused", describe(theirs)))
        }
    }
}

fn answer_json(answer: &Answer) -> Value {
    match answer {
        Answer::Value(v) => json!({"result": v}),
        Answer::Refused { class, message } => json!({"refused": class, "message": message}),
        Answer::Crashed(why) => json!({"crashed": why}),
        Answer::TimedOut(t) => json!({"timed_out_seconds": t.as_secs_f64()}),
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// The cases a campaign draws from: positive, replayable array cases both implementations
/// claim.
pub(crate) fn campaign_cases(
    cases_dir: &Path,
    only: Option<&str>,
    ours: &dyn Adapter,
    theirs: &dyn Adapter,
) -> Result<Vec<Case>, String> {
    let cases = Case::load_all(cases_dir)?;
    Ok(cases
        .into_iter()
        .filter(|c| c.expect_error.is_none() && !c.is_derived() && !c.frozen)
        // Arrays, and groups whose member arrays share a schema to mutate.
        .filter(|c| {
            fs::read_to_string(&c.file)
                .ok()
                .and_then(|t| toml::from_str::<toml::Value>(&t).ok())
                .is_some_and(|t| {
                    ["schema", "member_schema"]
                        .iter()
                        .any(|k| t.get(k).is_some_and(toml::Value::is_table))
                })
        })
        .filter(|c| only.is_none_or(|part| c.id.contains(part)))
        .filter(|c| {
            let required = c.required_capabilities();
            ours.info().first_unclaimed(&required).is_none()
                && theirs.info().first_unclaimed(&required).is_none()
        })
        .collect())
}

/// Runs a campaign (see the module documentation). `progress` hears each execution's number
/// and each finding as it happens.
pub fn run_campaign(
    config: &CampaignConfig,
    ours: &mut dyn Adapter,
    theirs: &mut dyn Adapter,
    progress: &mut dyn FnMut(u64, Option<&Finding>),
) -> Result<Summary, String> {
    let cases = campaign_cases(&config.cases_dir, config.only.as_deref(), ours, theirs)?;
    if cases.is_empty() {
        return Err(format!(
            "no replayable case in {}",
            config.cases_dir.display()
        ));
    }
    let scratch = config.out_dir.join("scratch");
    let findings_dir = config.out_dir.join("findings");
    fs::create_dir_all(&findings_dir).map_err(|e| format!("{}: {e}", findings_dir.display()))?;
    let started = Instant::now();
    let mut rng = Rng::new(config.seed);
    let mut summary = Summary::default();
    loop {
        if config.executions.is_some_and(|n| summary.executions >= n)
            || config.duration.is_some_and(|d| started.elapsed() >= d)
        {
            break;
        }
        let execution = summary.executions;
        summary.executions += 1;
        let case = &cases[rng.below(cases.len())];
        let text =
            fs::read_to_string(&case.file).map_err(|e| format!("{}: {e}", case.file.display()))?;
        let (mutated, mut changes) = mutate_recipe(&text, &mut rng)?;
        let _ = fs::remove_dir_all(&scratch);
        let case_file = scratch.join(format!("{}.toml", case.id));
        let out_dir = scratch.join("out");
        fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
        fs::write(&case_file, &mutated).map_err(|e| format!("{}: {e}", case_file.display()))?;
        let tiledb_writes = rng.one_in(2);
        let (writer_name, write) = if tiledb_writes {
            (
                theirs.info().name.clone(),
                theirs.write(&case_file, &out_dir),
            )
        } else {
            (ours.info().name.clone(), ours.write(&case_file, &out_dir))
        };
        changes.insert(0, format!("written by {writer_name}"));
        let mut found: Vec<(String, String, Value)> = Vec::new();
        match &write {
            Answer::Value(_) => {}
            Answer::Refused { .. } => {
                summary.writes_refused += 1;
                progress(summary.executions, None);
                continue;
            }
            other => found.push((
                "writer-crashed".into(),
                format!(
                    "{writer_name} writing: {}",
                    crate::compare::compact(Some(&answer_json(other)))
                ),
                json!({"write": answer_json(other)}),
            )),
        }
        if found.is_empty() {
            if rng.one_in(3) {
                if let Some(change) = drop_a_fragment(&out_dir, &mut rng) {
                    changes.push(change);
                }
            }
            for read in &case.reads {
                let mine = ours.read(&out_dir, &case_file, read);
                let tiledb = theirs.read(&out_dir, &case_file, read);
                match disagreement(&mine, &tiledb) {
                    None => {
                        if matches!(mine, Answer::Value(_)) {
                            summary.reads_agreed += 1;
                        } else {
                            summary.reads_both_refused += 1;
                        }
                    }
                    Some(Disagreement { kind, detail }) => found.push((
                        kind,
                        format!("read {read}: {}", detail.lines().next().unwrap_or("")),
                        json!({"read": read, "ours": answer_json(&mine), "tiledb": answer_json(&tiledb), "detail": detail}),
                    )),
                }
            }
        }
        if let Some((kind, first, _)) = found.first().cloned() {
            let dir = findings_dir.join(format!("{}-{execution}-{}", config.seed, case.id));
            let _ = fs::remove_dir_all(&dir);
            copy_tree(&scratch, &dir).map_err(|e| format!("saving {}: {e}", dir.display()))?;
            let repro = format!("{} --replay {}", config.repro_prefix, dir.display());
            let record = json!({
                "case": case.id,
                "seed": config.seed,
                "execution": execution,
                "mutations": changes,
                "kinds": found.iter().map(|(k, _, _)| k.clone()).collect::<Vec<_>>(),
                "details": found.iter().map(|(_, _, d)| d.clone()).collect::<Vec<_>>(),
                "repro": repro,
            });
            let pretty = serde_json::to_string_pretty(&record).unwrap_or_default();
            fs::write(dir.join("finding.json"), pretty)
                .map_err(|e| format!("{}: {e}", dir.display()))?;
            let finding = Finding {
                dir,
                kind,
                summary: format!("{} ({}): {first}", case.id, changes.join(", ")),
                repro,
            };
            progress(summary.executions, Some(&finding));
            summary.findings.push(finding);
        } else {
            progress(summary.executions, None);
        }
    }
    let _ = fs::remove_dir_all(&scratch);
    Ok(summary)
}

/// Reads a saved finding again with both readers: per read, the disagreement if any.
pub fn replay_finding(
    dir: &Path,
    ours: &mut dyn Adapter,
    theirs: &mut dyn Adapter,
) -> Result<Vec<(String, Option<Disagreement>)>, String> {
    let case_file = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(std::result::Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "toml"))
        .ok_or_else(|| format!("{}: no case recipe (.toml) in the finding", dir.display()))?;
    let case = Case::load(&case_file)?;
    let out_dir = dir.join("out");
    Ok(case
        .reads
        .iter()
        .map(|read| {
            let mine = ours.read(&out_dir, &case_file, read);
            let tiledb = theirs.read(&out_dir, &case_file, read);
            (read.clone(), disagreement(&mine, &tiledb))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECIPE: &str = r#"
id = "sparse.x"
title = "t"
spec = []
level = "required"
min_format = 1
tags = { array = "sparse", datatypes = ["INT32"], filters = [], features = [] }

[schema]
type = "sparse"
capacity = 8
dims = [{ name = "d", type = "INT32", domain = [0, 99], tile = 10 }]
attrs = [{ name = "a", type = "INT32" }]

[[steps]]
op = "write"
timestamp = 10
coords = { d = [1, 2] }
data = { a = [3, 4] }

[[reads]]
id = "all"
layout = "global"
"#;

    #[test]
    fn mutations_change_the_schema_and_replay_from_the_seed() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let (a, changes) = mutate_recipe(RECIPE, &mut Rng::new(seed)).unwrap();
            let (b, _) = mutate_recipe(RECIPE, &mut Rng::new(seed)).unwrap();
            assert_eq!(a, b, "seed {seed} replays");
            assert!(!changes.is_empty());
            let parsed: toml::Value = toml::from_str(&a).unwrap();
            assert_eq!(parsed["steps"][0]["coords"]["d"][1].as_integer(), Some(2));
            let extent = parsed["schema"]["dims"][0]["tile"].as_integer().unwrap();
            assert!((1..=100).contains(&extent));
            for c in changes {
                seen.insert(c.split([' ', ':']).next().unwrap().to_string());
            }
        }
        for knob in [
            "capacity",
            "dimension",
            "cell_order",
            "tile_order",
            "attribute",
            "coords_filters",
        ] {
            assert!(seen.contains(knob), "{knob} never mutated: {seen:?}");
        }
    }

    /// The feature mutations reach each feature's recipe, and replay from the seed.
    #[test]
    fn groups_deletes_keys_and_labels_are_mutated() {
        let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
        for (case, change) in [
            ("group.basic", "group "),
            ("sparse.delete.condition", "delete step "),
            ("sparse.encrypted.aes256gcm", "encryption key "),
            ("dense.dimension_labels", "label height: decreasing"),
        ] {
            let text = fs::read_to_string(cases.join(format!("{case}.toml"))).unwrap();
            let mut reached = 0;
            for seed in 0..100 {
                let (a, changes) = mutate_recipe(&text, &mut Rng::new(seed)).unwrap();
                let (b, _) = mutate_recipe(&text, &mut Rng::new(seed)).unwrap();
                assert_eq!(a, b, "{case}: seed {seed} replays");
                let parsed: toml::Value = toml::from_str(&a).unwrap();
                if changes.iter().any(|c| c.starts_with(change)) {
                    reached += 1;
                    if case == "dense.dimension_labels" {
                        // The label values follow the new order.
                        let values = parsed["steps"][0]["data"]["height"].as_array().unwrap();
                        let first = values[0].as_float().unwrap();
                        let last = values[values.len() - 1].as_float().unwrap();
                        assert!(first > last, "{a}");
                    }
                    if case == "sparse.encrypted.aes256gcm" {
                        let key = parsed["encryption"]["key"].as_str().unwrap();
                        assert_eq!(key.len(), 32);
                    }
                }
                assert!(!changes.is_empty(), "{case}: seed {seed}");
            }
            assert!(reached >= 10, "{case}: {reached} of 100 seeds reached it");
        }
    }

    #[test]
    fn answers_are_judged_as_the_campaign_needs() {
        let result =
            |cells: Value| Answer::Value(json!({"fields": [], "ordered": true, "cells": cells}));
        let refused = Answer::Refused {
            class: "corrupt".into(),
            message: "m".into(),
        };
        assert_eq!(
            disagreement(&result(json!([[1]])), &result(json!([[1]]))),
            None
        );
        assert_eq!(disagreement(&refused, &refused), None);
        assert_eq!(
            disagreement(&result(json!([[1]])), &result(json!([[2]])))
                .unwrap()
                .kind,
            "differ"
        );
        assert_eq!(
            disagreement(&refused, &result(json!([]))).unwrap().kind,
            "only-ours-refused"
        );
        assert_eq!(
            disagreement(&result(json!([])), &refused).unwrap().kind,
            "only-tiledb-refused"
        );
        assert_eq!(
            disagreement(&result(json!([])), &Answer::Crashed("signal 11".into()))
                .unwrap()
                .kind,
            "tiledb-crashed"
        );
    }
}
