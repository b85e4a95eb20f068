//! Consolidation and vacuum, every mode and option, against TileDB 2.30.
//!
//! Recipes of dense and sparse arrays (var-sized and nullable attributes,
//! deletes, array metadata, two of them encrypted) are written twice: by
//! TileDB (tiledb-py) and by our writer. Each written array is copied once
//! per variant (a mode and its `sm.consolidation.*` settings) and per
//! consolidator: we consolidate one copy, TileDB the other, then both are
//! vacuumed in the same mode. After the consolidation and after the vacuum:
//!
//! * TileDB reads our copy equal to the array before consolidation, and so
//!   does our reader (cells at the latest time, and the metadata);
//! * our reader reads TileDB's copy equal to it too;
//! * both copies hold the same fragments (time span, non-empty domain and
//!   cell count, as TileDB's fragment info reports them) and the same
//!   numbers of commit, vacuum, fragment-metadata and metadata files —
//!   every recipe uses filters whose output sizes do not depend on the
//!   codec build, so `max_fragment_size` cuts at the same tiles.
//!
//! Refused settings (a bad value, a limit below one tile) are refused by
//! both, and our copy is left byte for byte as it was.
//!
//! Without the oracle venv the test prints why it skips.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{tiledb_python, workspace};
use serde_json::Value;
use tiledb_conformance::adapter::tiledb_py_command;
use tiledb_conformance::{Adapter, Answer, ProcessAdapter, RuntimeAdapter};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::consolidate::{ConsolidationConfig, ConsolidationMode};
use tiledb_runtime::storage::{LocalStorage, Storage};

const KEY: &str = "0123456789abcdeF0123456789abcdeF";

/// Uncompressed everywhere: tile sizes are then the same from either
/// writer, and `max_fragment_size` is deterministic.
const PLAIN: &str = "coords_filters = []\noffsets_filters = []\nvalidity_filters = []\n";

/// Where and when a dense recipe writes: `(t, (rows, cols))`.
type DenseWrites = [(usize, ((i32, i32), (i32, i32)))];

/// Three writes whose union is the whole 8x8 domain of 2x2 tiles (no
/// amplification), the third overlapping both; a fourth, later, of one tile.
const ALIGNED: &DenseWrites = &[
    (10, ((1, 4), (1, 8))),
    (20, ((5, 8), (1, 8))),
    (30, ((3, 6), (3, 6))),
    (40, ((7, 8), (7, 8))),
];

/// On a 10x10 domain of 4x4 tiles, whose last tiles run past its end: a
/// union ([2, 9] both ways) that is no rectangle of whole tiles, so the
/// split fragments' domains are their tiles cut to it.
const UNALIGNED: &DenseWrites = &[
    (10, ((2, 5), (2, 9))),
    (20, ((6, 9), (2, 9))),
    (30, ((4, 7), (3, 8))),
];

fn dense_recipe(id: &str, encrypted: bool, writes: &DenseWrites) -> String {
    let encryption = if encrypted {
        format!("encryption = {{ type = \"AES_256_GCM\", key = \"{KEY}\" }}\n")
    } else {
        String::new()
    };
    let (hi, tile) = if std::ptr::eq(writes, UNALIGNED) {
        (10, 4)
    } else {
        (8, 2)
    };
    let mut steps = String::new();
    for &(t, (r, c)) in writes {
        let cells = ((r.1 - r.0 + 1) * (c.1 - c.0 + 1)) as usize;
        let a: Vec<String> = (0..cells).map(|i| (t * 100 + i).to_string()).collect();
        let s: Vec<String> = (0..cells)
            .map(|i| format!("\"{}\"", "s".repeat(i % 4)))
            .collect();
        let x: Vec<String> = (0..cells).map(|i| format!("{}.5", t + i)).collect();
        let valid: Vec<&str> = (0..cells)
            .map(|i| if i % 3 == 0 { "0" } else { "1" })
            .collect();
        steps += &format!(
            "[[steps]]\nop = \"write\"\ntimestamp = {t}\nsubarray = [[{}, {}], [{}, {}]]\n\
             data = {{ a = [{}], s = [{}], x = [{}] }}\nvalidity = {{ s = [{v}], x = [{v}] }}\n\n",
            r.0,
            r.1,
            c.0,
            c.1,
            a.join(", "),
            s.join(", "),
            x.join(", "),
            v = valid.join(", "),
        );
        steps += &meta_put(t);
    }
    format!(
        "id = \"{id}\"\ntitle = \"dense\"\nlevel = \"optional\"\nmin_format = 22\n{encryption}\n\
         [schema]\ntype = \"dense\"\n{PLAIN}\
         dims = [{{ name = \"r\", type = \"INT32\", domain = [1, {hi}], tile = {tile} }}, \
                 {{ name = \"c\", type = \"INT32\", domain = [1, {hi}], tile = {tile} }}]\n\
         attrs = [{{ name = \"a\", type = \"INT32\" }}, \
                  {{ name = \"s\", type = \"STRING_UTF8\", cell_val_num = \"var\", nullable = true }}, \
                  {{ name = \"x\", type = \"FLOAT64\", nullable = true }}]\n\n{steps}{READS}"
    )
}

fn meta_put(t: usize) -> String {
    format!(
        "[[steps]]\nop = \"meta_put\"\ntimestamp = {t}\nkey = \"k{}\"\ntype = \"INT64\"\nvalues = [{t}]\n\n\
         [[steps]]\nop = \"meta_put\"\ntimestamp = {t}\nkey = \"latest\"\ntype = \"STRING_UTF8\"\nvalues = \"at {t}\"\n\n",
        t % 20
    )
}

fn sparse_recipe(id: &str, encrypted: bool) -> String {
    let encryption = if encrypted {
        format!("encryption = {{ type = \"AES_256_GCM\", key = \"{KEY}\" }}\n")
    } else {
        String::new()
    };
    let mut steps = String::new();
    for (k, t) in [10usize, 20, 30, 40].into_iter().enumerate() {
        // 14 cells per write, on a diagonal band that later writes overlap.
        let r: Vec<String> = (0..14)
            .map(|i| (1 + (i * 3 + k * 5) % 40).to_string())
            .collect();
        let c: Vec<String> = (0..14)
            .map(|i| (1 + (i * 7 + k) % 40).to_string())
            .collect();
        let a: Vec<String> = (0..14)
            .map(|i| ((i * 13 + k * 7) % 20).to_string())
            .collect();
        let s: Vec<String> = (0..14)
            .map(|i| format!("\"{}{t}\"", "v".repeat(i % 5)))
            .collect();
        let n: Vec<String> = (0..14).map(|i| format!("{i}.25")).collect();
        let valid: Vec<&str> = (0..14)
            .map(|i| if i % 4 == 1 { "0" } else { "1" })
            .collect();
        steps += &format!(
            "[[steps]]\nop = \"write\"\ntimestamp = {t}\ncoords = {{ r = [{}], c = [{}] }}\n\
             data = {{ a = [{}], s = [{}], n = [{}] }}\nvalidity = {{ n = [{}] }}\n\n",
            r.join(", "),
            c.join(", "),
            a.join(", "),
            s.join(", "),
            n.join(", "),
            valid.join(", "),
        );
        steps += &meta_put(t);
        if t == 20 {
            steps += "[[steps]]\nop = \"delete\"\ntimestamp = 25\ncondition = \"a < 5\"\n\n";
        }
        if t == 30 {
            steps += "[[steps]]\nop = \"delete\"\ntimestamp = 35\ncondition = \"a > 16\"\n\n\
                      [[steps]]\nop = \"meta_delete\"\ntimestamp = 35\nkey = \"k10\"\n\n";
        }
    }
    format!(
        "id = \"{id}\"\ntitle = \"sparse\"\nlevel = \"optional\"\nmin_format = 22\n{encryption}\n\
         [schema]\ntype = \"sparse\"\ncapacity = 4\nallows_duplicates = false\n{PLAIN}\
         dims = [{{ name = \"r\", type = \"INT32\", domain = [1, 40], tile = 10 }}, \
                 {{ name = \"c\", type = \"INT32\", domain = [1, 40], tile = 10 }}]\n\
         attrs = [{{ name = \"a\", type = \"INT32\" }}, \
                  {{ name = \"s\", type = \"STRING_ASCII\", cell_val_num = \"var\" }}, \
                  {{ name = \"n\", type = \"FLOAT64\", nullable = true }}]\n\n{steps}{READS}"
    )
}

const READS: &str = "[[reads]]\nid = \"all\"\nlayout = \"row-major\"\n\n\
                     [[reads]]\nid = \"metadata\"\nkind = \"metadata\"\n";

/// A mode and its settings, applied alike by both consolidators.
struct Variant {
    name: &'static str,
    mode: ConsolidationMode,
    config: &'static [(&'static str, &'static str)],
}

const VARIANTS: &[Variant] = &[
    Variant {
        name: "fragments",
        mode: ConsolidationMode::Fragments,
        config: &[],
    },
    Variant {
        name: "steps",
        mode: ConsolidationMode::Fragments,
        config: &[
            ("sm.consolidation.step_min_frags", "2"),
            ("sm.consolidation.step_max_frags", "2"),
            ("sm.consolidation.steps", "2"),
        ],
    },
    Variant {
        name: "range",
        mode: ConsolidationMode::Fragments,
        config: &[
            ("sm.consolidation.timestamp_start", "15"),
            ("sm.consolidation.timestamp_end", "35"),
        ],
    },
    Variant {
        name: "purge",
        mode: ConsolidationMode::Fragments,
        config: &[("sm.consolidation.purge_deleted_cells", "true")],
    },
    Variant {
        name: "split",
        mode: ConsolidationMode::Fragments,
        config: &[("sm.consolidation.max_fragment_size", "1000")],
    },
    Variant {
        name: "purge-split",
        mode: ConsolidationMode::Fragments,
        config: &[
            ("sm.consolidation.purge_deleted_cells", "true"),
            ("sm.consolidation.max_fragment_size", "700"),
            ("sm.consolidation.buffer_size", "4096"),
        ],
    },
    Variant {
        name: "fragment_meta",
        mode: ConsolidationMode::FragmentMeta,
        config: &[],
    },
    Variant {
        name: "commits",
        mode: ConsolidationMode::Commits,
        config: &[],
    },
    Variant {
        name: "array_meta",
        mode: ConsolidationMode::ArrayMeta,
        config: &[],
    },
];

/// Settings both consolidators must refuse, leaving the array as it was.
const REFUSED: &[(&str, &str)] = &[
    ("sm.consolidation.max_fragment_size", "16"),
    ("sm.consolidation.step_size_ratio", "1.5"),
    ("sm.consolidation.purge_deleted_cells", "maybe"),
];

/// The Python side: consolidate or vacuum a list of jobs, and report each
/// array's fragments and file counts.
const SCRIPT: &str = r#"
import sys, os, json, tomllib, collections
sys.path.insert(0, SCRIPTS)
import tdbcase, tiledb

def ctx_for(case_file):
    with open(case_file, "rb") as f:
        return tdbcase.make_ctx(tomllib.load(f))

def with_key(case_file, cfg):
    # A consolidation or vacuum config replaces the context's: the key goes in it too.
    with open(case_file, "rb") as f:
        case = tomllib.load(f)
    if "encryption" in case:
        cfg["sm.encryption_type"] = case["encryption"]["type"]
        cfg["sm.encryption_key"] = case["encryption"]["key"]
    return tiledb.Config(cfg)

def files(root):
    counts = collections.Counter()
    for folder in ("__commits", "__fragment_meta", "__meta", "__fragments"):
        path = os.path.join(root, folder)
        for name in (os.listdir(path) if os.path.isdir(path) else []):
            ext = name.rsplit(".", 1)[1] if "." in name else "-"
            counts[f"{folder}/{ext}"] += 1
    return dict(counts)

def info(root, ctx):
    out = []
    for f in tiledb.FragmentInfoList(root, ctx=ctx):
        ned = [[int(v) for v in d] for d in f.nonempty_domain]
        out.append([list(f.timestamp_range), ned, int(f.cell_num)])
    return {"fragments": sorted(out), "files": files(root)}

jobs = json.load(open(sys.argv[1]))
answers = []
for job in jobs:
    ctx = ctx_for(job["case"])
    try:
        if job["op"] == "consolidate":
            cfg = dict(job["config"])
            cfg["sm.consolidation.mode"] = job["mode"]
            tiledb.consolidate(job["array"], config=with_key(job["case"], cfg), ctx=ctx)
        elif job["op"] == "vacuum":
            tiledb.vacuum(job["array"], config=with_key(job["case"], {"sm.vacuum.mode": job["mode"]}), ctx=ctx)
        answers.append(info(job["array"], ctx))
    except tiledb.TileDBError as e:
        answers.append({"error": str(e)})
json.dump(answers, open(sys.argv[2], "w"))
"#;

/// Runs SCRIPT over `jobs`; one answer per job.
fn tiledb_jobs(python: &Path, work: &Path, jobs: &[Value]) -> Vec<Value> {
    let input = work.join("jobs.json");
    let output = work.join("answers.json");
    std::fs::write(&input, serde_json::to_vec(jobs).unwrap()).unwrap();
    let script = format!(
        "SCRIPTS = {:?}\n{SCRIPT}",
        workspace().join("conformance/scripts").to_string_lossy()
    );
    let run = std::process::Command::new(python)
        .arg("-c")
        .arg(&script)
        .arg(&input)
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "TileDB's jobs failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap()
}

fn job(
    op: &str,
    array: &Path,
    case: &Path,
    mode: ConsolidationMode,
    config: &[(&str, &str)],
) -> Value {
    let config: serde_json::Map<String, Value> = config
        .iter()
        .map(|(k, v)| (k.to_string(), Value::from(*v)))
        .collect();
    serde_json::json!({
        "op": op, "array": array, "case": case, "mode": mode.name(), "config": config,
    })
}

/// Every file under `root` with its bytes.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(
                    path.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&path).unwrap(),
                );
            }
        }
    }
    out
}

fn key_of(case: &str) -> Option<[u8; 32]> {
    case.contains("encryption")
        .then(|| KEY.as_bytes().try_into().unwrap())
}

fn open(array: &Path, case: &str) -> Array {
    let options = OpenOptions {
        key: key_of(case),
        ..OpenOptions::default()
    };
    Array::open_path(array, options).unwrap()
}

fn config_of(variant: &Variant) -> ConsolidationConfig {
    let mut config = ConsolidationConfig {
        mode: variant.mode,
        ..Default::default()
    };
    for (k, v) in variant.config {
        config.set(k, v).unwrap();
    }
    config
}

/// The reads of one array by both readers, as text.
fn reads(
    ours: &mut RuntimeAdapter,
    tiledb: &mut ProcessAdapter,
    dir: &Path,
    case_file: &Path,
) -> [(String, String); 2] {
    let one = |reader: &mut dyn Adapter, id: &str| match reader.read(dir, case_file, id) {
        Answer::Value(v) => v.to_string(),
        other => format!("{other:?}"),
    };
    let all = (one(ours, "all"), one(tiledb, "all"));
    let meta = (one(ours, "metadata"), one(tiledb, "metadata"));
    [all, meta]
}

/// One written array (`source`): every variant by both consolidators.
struct Source {
    case: String,
    case_file: PathBuf,
    /// The folder holding `array/`, as written.
    dir: PathBuf,
    label: String,
    /// The names of the variants run on it.
    variants: &'static [&'static str],
}

/// Every variant.
const ALL: &[&str] = &[
    "fragments",
    "steps",
    "range",
    "purge",
    "split",
    "purge-split",
    "fragment_meta",
    "commits",
    "array_meta",
];

#[test]
fn our_consolidation_and_vacuum_equal_tiledbs_in_every_mode() {
    let Some(python) = tiledb_python() else {
        println!("skipped: no TileDB oracle (.venv-tiledb in the workspace, or $TILEDB_PY)");
        return;
    };
    let ws = workspace();
    let mut tiledb = ProcessAdapter::start(
        tiledb_py_command(&ws, &ws.join("conformance")).expect("the tiledb-py adapter"),
        Duration::from_secs(120),
    )
    .expect("the tiledb-py adapter starts");
    let mut ours = RuntimeAdapter::new();
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let recipes = [
        ("dense", dense_recipe("c.dense", false, ALIGNED), ALL),
        ("dense-aes", dense_recipe("c.dense.aes", true, ALIGNED), ALL),
        (
            "dense-edge",
            dense_recipe("c.dense.edge", false, UNALIGNED),
            &["fragments", "split"][..],
        ),
        ("sparse", sparse_recipe("c.sparse", false), ALL),
        ("sparse-aes", sparse_recipe("c.sparse.aes", true), ALL),
    ];
    let mut sources = Vec::new();
    for (name, text, variants) in &recipes {
        let case_file = work.join(format!("{name}.toml"));
        std::fs::write(&case_file, text).unwrap();
        for (writer, adapter) in [
            ("tiledb", &mut tiledb as &mut dyn Adapter),
            ("ours", &mut ours),
        ] {
            let dir = work.join(format!("src-{writer}-{name}"));
            let answer = adapter.write(&case_file, &dir);
            assert!(
                matches!(answer, Answer::Value(_)),
                "{writer} writes {name}: {answer:?}"
            );
            sources.push(Source {
                case: text.clone(),
                case_file: case_file.clone(),
                dir,
                label: format!("{name} written by {writer}"),
                variants,
            });
        }
    }
    let mut failures = Vec::new();
    let mut compared = 0;
    for source in &sources {
        let before = reads(&mut ours, &mut tiledb, &source.dir, &source.case_file);
        for (ours_read, theirs) in &before {
            assert_eq!(
                ours_read, theirs,
                "{}: the readers differ before consolidating",
                source.label
            );
        }
        compared += run_variants(
            &python,
            work,
            source,
            &before,
            &mut ours,
            &mut tiledb,
            &mut failures,
        );
        refusals(&python, work, source, &mut failures);
    }
    println!("{compared} consolidated arrays compared");
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every variant of one source; returns how many arrays were compared.
fn run_variants(
    python: &Path,
    work: &Path,
    source: &Source,
    before: &[(String, String); 2],
    ours: &mut RuntimeAdapter,
    tiledb: &mut ProcessAdapter,
    failures: &mut Vec<String>,
) -> usize {
    let slug = source
        .dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let mut pairs = Vec::new();
    for variant in VARIANTS
        .iter()
        .filter(|v| source.variants.contains(&v.name))
    {
        let mine = work.join(format!("{slug}-{}-ours", variant.name));
        let theirs = work.join(format!("{slug}-{}-tiledb", variant.name));
        common::copy_dir(&source.dir, &mine);
        common::copy_dir(&source.dir, &theirs);
        pairs.push((variant, mine, theirs));
    }
    let mut compared = 0;
    for phase in ["consolidate", "vacuum"] {
        let jobs: Vec<Value> = pairs
            .iter()
            .map(|(v, _, theirs)| {
                job(
                    phase,
                    &theirs.join("array"),
                    &source.case_file,
                    v.mode,
                    v.config,
                )
            })
            .collect();
        let mut our_errors = Vec::new();
        for (variant, mine, _) in &pairs {
            let array = open(&mine.join("array"), &source.case);
            let outcome = if phase == "consolidate" {
                array.consolidate(&config_of(variant)).map(drop)
            } else {
                array.vacuum(variant.mode).map(drop)
            };
            our_errors.push(outcome.err().map(|e| e.to_string()));
        }
        // One TileDB process: its own copies consolidated (or vacuumed),
        // then the fragments and files of ours, already done, reported.
        let info_jobs = pairs
            .iter()
            .map(|(v, mine, _)| job("info", &mine.join("array"), &source.case_file, v.mode, &[]));
        let answers = tiledb_jobs(
            python,
            work,
            &jobs.into_iter().chain(info_jobs).collect::<Vec<_>>(),
        );
        let (their_infos, our_infos) = answers.split_at(pairs.len());
        for (((variant, mine, theirs), their_info), our_info) in
            pairs.iter().zip(their_infos).zip(our_infos)
        {
            let at = format!("{} / {} / after {phase}", source.label, variant.name);
            let split = their_info["fragments"].as_array().map_or(0, Vec::len);
            if variant.name.ends_with("split") && phase == "vacuum" && split < 2 {
                failures.push(format!("{at}: the limit cut nothing ({split} fragment)"));
            }
            if our_info != their_info {
                failures.push(format!(
                    "{at}: fragments and files: ours {our_info}, TileDB's {their_info}"
                ));
            }
            for (dir, whose) in [(mine, "our"), (theirs, "TileDB's")] {
                let after = reads(ours, tiledb, dir, &source.case_file);
                for ((expected, _), (by_us, by_tiledb), what) in before
                    .iter()
                    .zip(&after)
                    .zip(["cells", "metadata"])
                    .map(|((a, b), c)| (a, b, c))
                {
                    if by_tiledb != expected {
                        failures.push(format!(
                            "{at}: TileDB reads the {what} of {whose} copy differently"
                        ));
                    }
                    if by_us != expected {
                        failures.push(format!(
                            "{at}: we read the {what} of {whose} copy differently"
                        ));
                    }
                }
            }
            compared += 1;
        }
    }
    compared
}

/// Settings both consolidators refuse; our copy is left as it was.
fn refusals(python: &Path, work: &Path, source: &Source, failures: &mut Vec<String>) {
    let slug = source
        .dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let mut jobs = Vec::new();
    for (k, (key, value)) in REFUSED.iter().enumerate() {
        let mine = work.join(format!("{slug}-refused{k}-ours"));
        let theirs = work.join(format!("{slug}-refused{k}-tiledb"));
        common::copy_dir(&source.dir, &mine);
        common::copy_dir(&source.dir, &theirs);
        let before = snapshot(&mine);
        let mut config = ConsolidationConfig::default();
        let refused = config.set(key, value).and_then(|()| {
            let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(mine.join("array")));
            tiledb_runtime::consolidate::consolidate(storage, &config, key_of(&source.case))
        });
        let at = format!("{} / {key} = {value}", source.label);
        match refused {
            Err(e) if e.class().name() == "usage" => {}
            other => failures.push(format!(
                "{at}: we did not refuse it as a usage error: {other:?}"
            )),
        }
        if snapshot(&mine) != before {
            failures.push(format!("{at}: our refusal changed the array"));
        }
        jobs.push(job(
            "consolidate",
            &theirs.join("array"),
            &source.case_file,
            ConsolidationMode::Fragments,
            &[(key, value)],
        ));
    }
    // TileDB's refusals in one process, each on its own copy.
    let answers = tiledb_jobs(python, work, &jobs);
    for ((key, value), answer) in REFUSED.iter().zip(&answers) {
        if answer.get("error").is_none() {
            let at = format!("{} / {key} = {value}", source.label);
            failures.push(format!("{at}: TileDB did not refuse it: {answer}"));
        }
    }
}

/// Purging a run whose every cell is deleted leaves nothing to write:
/// TileDB refuses ("Consolidation read 0 cells"), so do we, and both
/// arrays stay as they were.
#[test]
fn purging_a_run_of_deleted_cells_only_is_refused_as_tiledb_refuses_it() {
    let Some(python) = tiledb_python() else {
        println!("skipped: no TileDB oracle (.venv-tiledb in the workspace, or $TILEDB_PY)");
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let case_file = work.join("case.toml");
    std::fs::write(
        &case_file,
        "id = \"c.purge.all\"\ntitle = \"t\"\nlevel = \"optional\"\nmin_format = 22\n\n\
         [schema]\ntype = \"sparse\"\n\
         dims = [{ name = \"d\", type = \"INT32\", domain = [0, 99], tile = 10 }]\n\
         attrs = [{ name = \"a\", type = \"INT32\" }]\n\n\
         [[steps]]\nop = \"write\"\ntimestamp = 1\ncoords = { d = [1, 2, 3] }\ndata = { a = [1, 2, 3] }\n\n\
         [[steps]]\nop = \"write\"\ntimestamp = 2\ncoords = { d = [4, 5] }\ndata = { a = [4, 5] }\n\n\
         [[steps]]\nop = \"delete\"\ntimestamp = 3\ncondition = \"a < 10\"\n",
    )
    .unwrap();
    let written = RuntimeAdapter::new().write(&case_file, &work.join("ours"));
    assert!(matches!(written, Answer::Value(_)), "{written:?}");
    let array = work.join("ours/array");
    let before = snapshot(&array);
    let config = ConsolidationConfig {
        purge_deleted_cells: true,
        ..Default::default()
    };
    let err = open(&array, "").consolidate(&config).unwrap_err();
    assert_eq!(err.class().name(), "usage", "{err}");
    assert!(err.to_string().contains("0 cells"), "{err}");
    assert!(snapshot(&array) == before, "our refusal changed the array");
    let purge = [("sm.consolidation.purge_deleted_cells", "true")];
    let answer = tiledb_jobs(
        &python,
        work,
        &[job(
            "consolidate",
            &array,
            &case_file,
            ConsolidationMode::Fragments,
            &purge,
        )],
    );
    let message = answer[0]
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(message.contains("read 0 cells"), "TileDB: {}", answer[0]);
    assert!(
        snapshot(&array) == before,
        "TileDB's refusal changed the array"
    );
}
