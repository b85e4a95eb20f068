//! `tdb consolidate` and `tdb vacuum`: every mode on arrays TileDB wrote
//! (the 2.30 corpus: dense fragments, sparse deletes, array metadata, an
//! encrypted array), each read by TileDB (tiledb-py) and by us equal to the
//! array before; bad input exits 2 with a message naming what is wrong, and
//! the array untouched, byte for byte.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::{copy_dir, corpus_array, files, tdb, workspace};
use tiledb_conformance::adapter::tiledb_py_command;
use tiledb_conformance::{Adapter, Answer, ProcessAdapter, RuntimeAdapter};

const KEY: &str = "0123456789abcdeF0123456789abcdeF";
const MODES: [&str; 4] = ["fragments", "fragment-meta", "commits", "array-meta"];

fn case_file(case: &str) -> PathBuf {
    workspace().join(format!("conformance/cases/{case}.toml"))
}

/// A copy of the corpus array of `case` in `dir/array`.
fn copy_of(case: &str, dir: &Path) {
    copy_dir(&corpus_array(case), &dir.join("array"));
}

/// The case's reads at the latest time (time-travel reads see history
/// that consolidation and vacuum are meant to drop).
fn latest_reads(case: &str) -> Vec<String> {
    let text = std::fs::read_to_string(case_file(case)).unwrap();
    let doc: toml::Value = toml::from_str(&text).unwrap();
    doc.get("reads")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter(|r| r.get("timestamp").is_none() && r.get("timestamp_range").is_none())
        .filter_map(|r| r.get("id").and_then(toml::Value::as_str).map(String::from))
        .collect()
}

fn read_all(readers: &mut [&mut dyn Adapter], dir: &Path, case: &str) -> Vec<String> {
    let mut out = Vec::new();
    for reader in readers.iter_mut() {
        for id in latest_reads(case) {
            out.push(match reader.read(dir, &case_file(case), &id) {
                Answer::Value(v) => format!("{id}: {v}"),
                other => format!("{id}: {other:?}"),
            });
        }
    }
    out
}

fn tiledb_reader() -> Option<ProcessAdapter> {
    let ws = workspace();
    let Some(command) = tiledb_py_command(&ws, &ws.join("conformance")) else {
        println!("TileDB does not reread the arrays: no tiledb-py (.venv-tiledb or $TILEDB_PY)");
        return None;
    };
    Some(ProcessAdapter::start(command, Duration::from_secs(60)).expect("the adapter starts"))
}

#[test]
fn every_mode_leaves_what_tiledb_and_we_read_unchanged() {
    let mut tiledb = tiledb_reader();
    let mut ours = RuntimeAdapter::new();
    let cases = [
        ("dense.fragments.var_overlap", None),
        ("sparse.delete.condition", None),
        ("array.metadata.basic", None),
        ("sparse.encrypted.aes256gcm", Some(KEY)),
    ];
    for (case, key) in cases {
        let work = tempfile::tempdir().unwrap();
        copy_of(case, work.path());
        let array = work.path().join("array");
        let array = array.to_str().unwrap();
        let mut readers: Vec<&mut dyn Adapter> = vec![&mut ours];
        if let Some(t) = tiledb.as_mut() {
            readers.push(t);
        }
        let before = read_all(&mut readers, work.path(), case);
        let fragments_before = std::fs::read_dir(work.path().join("array/__fragments"))
            .map(Iterator::count)
            .unwrap_or(0);
        let mut written = Vec::new();
        for mode in MODES {
            let mut args = vec!["consolidate", array, "--mode", mode];
            if mode == "fragments" {
                args.extend(["--config", "purge_deleted_cells=true"]);
            }
            let key_args = key.map(|k| ["--key", k]);
            args.extend(key_args.iter().flatten());
            let out = tdb(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{case}: tdb {args:?}: {stderr}");
            written.extend(
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .map(String::from),
            );
            let mut vacuum = vec!["vacuum", array, "--mode", mode];
            vacuum.extend(key_args.iter().flatten());
            let out = tdb(&vacuum);
            assert!(
                out.status.success(),
                "{case}: tdb {vacuum:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let after = read_all(&mut readers, work.path(), case);
            assert_eq!(before, after, "{case}: the reads after {mode}");
        }
        if fragments_before > 1 {
            let left = std::fs::read_dir(work.path().join("array/__fragments"))
                .unwrap()
                .count();
            assert_eq!(
                left, 1,
                "{case}: one fragment after consolidating and vacuuming"
            );
            assert!(
                written.iter().any(|name| work
                    .path()
                    .join("array/__fragments")
                    .join(name)
                    .is_dir()),
                "{case}: the printed names are the new fragments: {written:?}"
            );
        }
    }
}

#[test]
fn bad_input_exits_2_naming_the_fault_and_leaves_the_array_as_it_was() {
    let work = tempfile::tempdir().unwrap();
    copy_of("sparse.encrypted.aes256gcm", work.path());
    copy_of("dense.fragments.var_overlap", &work.path().join("dense"));
    let encrypted = work.path().join("array");
    let dense = work.path().join("dense/array");
    let (encrypted, dense) = (encrypted.to_str().unwrap(), dense.to_str().unwrap());
    let wrong_key = "ffffffffffffffffffffffffffffffff";
    let refusals: Vec<(Vec<&str>, &str)> = vec![
        (vec!["consolidate", dense, "--mode", "everything"], "mode"),
        (vec!["vacuum", dense, "--mode", "all"], "mode"),
        (
            vec!["consolidate", dense, "--config", "step_size_ratio=2"],
            "step_size_ratio",
        ),
        (
            vec!["consolidate", dense, "--config", "no_such_setting=1"],
            "no_such_setting",
        ),
        (vec!["consolidate", dense, "--config", "steps"], "KEY=VALUE"),
        (vec!["consolidate", dense, "--config", "steps=-1"], "steps"),
        (
            vec!["consolidate", dense, "--config", "purge_deleted_cells=yes"],
            "purge_deleted_cells",
        ),
        (
            vec!["consolidate", dense, "--config", "mode=commits"],
            "contradicts",
        ),
        (
            vec!["consolidate", dense, "--config", "max_fragment_size=8"],
            "max_fragment_size",
        ),
        (
            vec!["consolidate", dense, "--config", "sm.mem.total_budget=1"],
            "total_budget",
        ),
        (vec!["consolidate", encrypted], "key is needed"),
        (
            vec!["consolidate", encrypted, "--key", wrong_key],
            "wrong key",
        ),
        (
            vec![
                "consolidate",
                encrypted,
                "--mode",
                "commits",
                "--key",
                wrong_key,
            ],
            "wrong key",
        ),
    ];
    let before = files(work.path());
    for (args, named) in refusals {
        let out = tdb(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "tdb {args:?}: {stderr}");
        assert!(
            stderr.contains(named),
            "tdb {args:?} should name {named:?}: {stderr}"
        );
        assert!(
            files(work.path()) == before,
            "tdb {args:?} changed the array"
        );
    }
}
