//! Consolidation and vacuum leave the array in the shape TileDB leaves it:
//! for each consolidation case, after replaying it with our writer, every
//! folder of the array holds the same kinds of files as TileDB's array of
//! the corpus: the same count per extension, with the same timestamp spans
//! (labels differ; schema files carry the creation clock and are skipped),
//! and each fragment folder with the same files.
//! The spans of the fragments left show which fragments each consolidation
//! step merged: the cases with a consolidation `config` or
//! `timestamp_range` check that we choose TileDB's runs.
//! The reads themselves are checked by `write_roundtrip.rs`.

mod common;

use common::{tiledb_python, workspace};

use std::collections::BTreeMap;
use std::path::Path;

const CASES: &[&str] = &[
    "array.metadata.consolidate",
    "dense.consolidate.amplification",
    "dense.consolidate.amplification.config",
    "dense.consolidate.amplification.min_frags",
    "dense.consolidate.amplification.prefix",
    "dense.consolidate.fragments.vacuum",
    "dense.consolidate.timestamp_range",
    "sparse.consolidate.commits",
    "sparse.consolidate.commits.vacuum",
    "sparse.consolidate.fragment_meta",
    "sparse.consolidate.fragments",
    "sparse.consolidate.fragments.vacuum",
    "sparse.consolidate.size_ratio",
    "sparse.consolidate.steps",
    "sparse.consolidate.steps.delete_meta",
    "sparse.consolidate.timestamp_range",
    "sparse.delete.consolidated",
    "sparse.delete.consolidated.two_deletes",
    "sparse.delete.consolidated.twice",
    "sparse.delete.older_than_consolidated",
];

/// `folder → sorted list of "t1_t2.ext"` for the timestamped entries.
fn shape(array: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for folder in ["__fragments", "__commits", "__fragment_meta", "__meta"] {
        let mut items: Vec<String> = std::fs::read_dir(array.join(folder))
            .map(|r| r.flatten().collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let (stem, ext) = match name.split_once('.') {
                    Some((s, x)) => (s.to_string(), x.to_string()),
                    None => (name.clone(), String::new()),
                };
                let parts: Vec<&str> = stem.trim_start_matches("__").split('_').collect();
                let span = format!(
                    "{}_{}.{ext}",
                    parts.first().unwrap_or(&""),
                    parts.get(1).unwrap_or(&"")
                );
                // A fragment folder: its files too (which fields it stores,
                // e.g. whether a consolidated fragment has `t`, `dt`, `dci`).
                if e.path().is_dir() {
                    let mut files: Vec<String> = std::fs::read_dir(e.path())
                        .unwrap()
                        .flatten()
                        .map(|f| f.file_name().to_string_lossy().into_owned())
                        .collect();
                    files.sort();
                    format!("{span}[{}]", files.join(" "))
                } else {
                    span
                }
            })
            .collect();
        items.sort();
        out.insert(folder.to_string(), items);
    }
    out
}

#[test]
fn consolidation_and_vacuum_leave_tiledbs_layout() {
    let ws = workspace();
    let mut failures = Vec::new();
    for id in CASES {
        let text =
            std::fs::read_to_string(ws.join(format!("conformance/cases/{id}.toml"))).unwrap();
        let out = tempfile::tempdir().unwrap();
        tiledb_conformance::recipe::replay_case(&text, out.path()).unwrap();
        let ours = shape(&out.path().join("array"));
        let theirs = shape(&ws.join(format!("conformance/corpus/tiledb-2.30/{id}/array")));
        println!("{id}: {ours:?}");
        if ours != theirs {
            failures.push(format!("{id}:\n  ours   {ours:?}\n  TileDB {theirs:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A small deterministic generator (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// A recipe of writes (sparse: maybe a delete) and one fragment
/// consolidation with a random
/// `sm.consolidation.*` config (and sometimes a time range), no vacuum: the
/// `.vac` files and the consolidated fragments' spans show every run merged.
fn random_recipe(seed: u64) -> String {
    let mut rng = Lcg(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5);
    let dense = seed.is_multiple_of(2);
    let fragments = 2 + rng.below(5);
    let mut text = format!("id = \"random.consolidate.{seed}\"\nlevel = \"required\"\n\n");
    if dense {
        let tile = *rng.pick(&[4u64, 10]);
        text += &format!(
            "[schema]\ntype = \"dense\"\ndims = [{{ name = \"d\", type = \"INT32\", domain = [0, 199], tile = {tile} }}]\nattrs = [{{ name = \"a\", type = \"INT32\" }}]\n"
        );
    } else {
        text += "[schema]\ntype = \"sparse\"\ndims = [{ name = \"d\", type = \"INT32\", domain = [0, 99999], tile = 100 }]\nattrs = [{ name = \"a\", type = \"INT32\" }]\n";
    }
    // Sparse recipes sometimes delete between two writes: whether each new
    // fragment carries delete metadata shows in its files.
    let delete_after = (!dense && rng.below(3) == 0).then(|| 1 + rng.below(fragments));
    for k in 1..=fragments {
        let t = 10 * k;
        if delete_after == Some(k - 1) {
            text += &format!(
                "\n[[steps]]\nop = \"delete\"\ntimestamp = {}\ncondition = \"a < {}\"\n",
                t - 5,
                1000 * (k - 1) + 3
            );
        }
        if dense {
            let len = 1 + rng.below(24);
            let lo = rng.below(200 - len);
            text += &format!(
                "\n[[steps]]\nop = \"write\"\ntimestamp = {t}\nsubarray = [[{lo}, {}]]\ndata = {{ a = {{ start = {}, count = {len} }} }}\n",
                lo + len - 1,
                1000 * k
            );
        } else {
            let count = if rng.below(2) == 0 {
                1 + rng.below(6)
            } else {
                40 + rng.below(600)
            };
            let start = rng.below(90000);
            text += &format!(
                "\n[[steps]]\nop = \"write\"\ntimestamp = {t}\ncoords = {{ d = {{ start = {start}, count = {count} }} }}\ndata = {{ a = {{ start = {}, count = {count} }} }}\n",
                1000 * k
            );
        }
    }
    let mut config = Vec::new();
    let min = *rng.pick(&[None, Some(2u64), Some(3)]);
    let max = *rng.pick(&[None, Some(2u64), Some(3), Some(4)]);
    // TileDB refuses a minimum above the maximum; its default minimum is
    // the largest, so a maximum needs a minimum.
    let (min, max) = match (min, max) {
        (None, Some(m)) => (Some(2.min(m)), Some(m)),
        (Some(a), Some(b)) if a > b => (Some(b), Some(a)),
        other => other,
    };
    if let Some(m) = min {
        config.push(format!("\"sm.consolidation.step_min_frags\" = \"{m}\""));
    }
    if let Some(m) = max {
        config.push(format!("\"sm.consolidation.step_max_frags\" = \"{m}\""));
    }
    if let Some(r) = rng.pick(&[None, Some("0.3"), Some("0.5"), Some("0.8")]) {
        config.push(format!("\"sm.consolidation.step_size_ratio\" = \"{r}\""));
    }
    if let Some(s) = rng.pick(&[None, None, Some(1u64), Some(2)]) {
        config.push(format!("\"sm.consolidation.steps\" = \"{s}\""));
    }
    if dense {
        if let Some(a) = rng.pick(&[None, Some("1.5"), Some("3.0"), Some("10")]) {
            config.push(format!("\"sm.consolidation.amplification\" = \"{a}\""));
        }
    }
    text += "\n[[steps]]\nop = \"consolidate\"\nmode = \"fragments\"\n";
    if !config.is_empty() {
        text += &format!("config = {{ {} }}\n", config.join(", "));
    }
    if rng.below(3) == 0 {
        let start = 5 + 10 * rng.below(fragments);
        let end = start + 10 * (1 + rng.below(fragments));
        text += &format!("timestamp_range = [{start}, {end}]\n");
    }
    text
}

/// TileDB and our writer consolidate random recipes alike: the same runs
/// merged, step by step (compared through the folder layout). Needs the
/// oracle venv; without it the test prints why it skips.
#[test]
fn random_recipes_consolidate_the_runs_tiledb_consolidates() {
    let Some(python) = tiledb_python() else {
        println!("skipped: no TileDB oracle (.venv-tiledb in the workspace, or $TILEDB_PY)");
        return;
    };
    const RECIPES: u64 = 60;
    let work = tempfile::tempdir().unwrap();
    let recipes: Vec<String> = (0..RECIPES).map(random_recipe).collect();
    for (seed, text) in recipes.iter().enumerate() {
        std::fs::write(work.path().join(format!("{seed}.toml")), text).unwrap();
    }
    // One interpreter replays every recipe with TileDB.
    let script = format!(
        r#"
import sys, os, tomllib
sys.path.insert(0, {scripts:?})
import tdbcase
work = {work:?}
for seed in range({count}):
    with open(os.path.join(work, f"{{seed}}.toml"), "rb") as f:
        case = tomllib.load(f)
    out = os.path.join(work, f"tiledb-{{seed}}")
    os.makedirs(out)
    tdbcase.replay(case, out)
"#,
        scripts = workspace().join("conformance/scripts").to_string_lossy(),
        work = work.path().to_string_lossy(),
        count = RECIPES,
    );
    let run = std::process::Command::new(&python)
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "TileDB failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut failures = Vec::new();
    let mut merged = 0;
    let mut differs_from_all = 0;
    let mut with_delete_meta = 0;
    for (seed, text) in recipes.iter().enumerate() {
        let ours_dir = work.path().join(format!("ours-{seed}"));
        tiledb_conformance::recipe::replay_case(text, &ours_dir).unwrap();
        let ours = shape(&ours_dir.join("array"));
        let theirs = shape(&work.path().join(format!("tiledb-{seed}/array")));
        let vacs: Vec<&String> = theirs["__commits"]
            .iter()
            .filter(|n| n.ends_with(".vac"))
            .collect();
        let runs = vacs.len();
        // What consolidating everything at once (our former behaviour)
        // leaves: one run spanning every write.
        let written = text.matches("op = \"write\"").count();
        let everything = format!("10_{}.vac", 10 * written);
        with_delete_meta += theirs["__fragments"]
            .iter()
            .filter(|f| f.contains("dt.tdb"))
            .count();
        if !(runs == 1 && *vacs[0] == everything) {
            differs_from_all += 1;
        }
        merged += runs;
        if ours != theirs {
            failures.push(format!(
                "recipe {seed}:\n{text}\n  ours   {:?}\n  TileDB {:?}",
                ours["__fragments"], theirs["__fragments"]
            ));
        }
    }
    println!(
        "{RECIPES} recipes: TileDB merged {merged} runs ({with_delete_meta} with delete metadata); in {differs_from_all} recipes not just every fragment at once"
    );
    assert!(with_delete_meta > 0, "no run with delete metadata");
    // The recipes must exercise the choice: many runs merged, and many
    // recipes where merging everything would be wrong.
    assert!(merged > RECIPES as usize / 2, "only {merged} runs merged");
    assert!(
        differs_from_all > RECIPES as usize / 4,
        "only {differs_from_all} recipes exercise the choice"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
