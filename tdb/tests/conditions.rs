//! `tdb read --where`, `tdb agg` and `tdb delete --where` on copies of
//! corpus arrays: bad input exits 2 with the array untouched; a delete we
//! write is read by TileDB (tiledb-py, when the oracle venv is present) as
//! we read it.

mod support;

use std::process::{Command, Output};
use support::{copy_dir, corpus_array, files, tdb};

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "tdb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn bad_conditions_exit_2_and_leave_the_array_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let sparse = dir.path().join("sparse");
    let dense = dir.path().join("dense");
    copy_dir(&corpus_array("sparse.attr.int32"), &sparse);
    copy_dir(&corpus_array("dense.attr.int32"), &dense);
    let (before_sparse, before_dense) = (files(&sparse), files(&dense));
    let s = sparse.to_str().unwrap();
    for bad in ["nosuch > 1", "a > 2.5", "a == 'x'", "a >", "a < 3000000000"] {
        for args in [
            vec!["delete", s, "--where", bad],
            vec!["read", s, "--where", bad],
            vec!["agg", s, "--op", "count", "--where", bad],
        ] {
            let out = tdb(&args);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{args:?} exited {:?}",
                out.status
            );
            assert!(!out.stderr.is_empty(), "{args:?}: no message");
        }
    }
    let out = tdb(&["delete", dense.to_str().unwrap(), "--where", "a > 0"]);
    assert_eq!(out.status.code(), Some(2), "a delete on a dense array");
    assert!(String::from_utf8_lossy(&out.stderr).contains("sparse arrays only"));
    for op in ["sum", "nope:a", "null_count:a", "sum:d"] {
        assert_eq!(
            tdb(&["agg", s, "--op", op]).status.code(),
            Some(2),
            "--op {op}"
        );
    }
    assert_eq!(before_sparse, files(&sparse), "the sparse array changed");
    assert_eq!(before_dense, files(&dense), "the dense array changed");
}

#[test]
fn a_delete_then_reads_and_aggregates_agree_with_tiledb() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("sparse");
    copy_dir(&corpus_array("sparse.attr.int32"), &array);
    let a = array.to_str().unwrap();
    // The corpus array holds a = [-2147483647, 2147483647, -2147483648, 0, 2147483646].
    let kept = stdout(&tdb(&[
        "read",
        a,
        "--where",
        "a >= 0 and d != 999",
        "--format",
        "json",
    ]));
    assert_eq!(
        kept.trim(),
        r#"{"dimensions":{"d":[1,500]},"attributes":{"a":[2147483647,0]}}"#
    );
    let agg = stdout(&tdb(&[
        "agg", a, "--op", "count", "--op", "min:a", "--op", "max:a", "--where", "a < 1", "--json",
    ]));
    assert_eq!(agg.trim(), r#"{"count":3,"min(a)":-2147483648,"max(a)":0}"#);
    stdout(&tdb(&[
        "delete",
        a,
        "--where",
        "a < 0 or d == 500",
        "--timestamp",
        "4102444800000",
    ]));
    let after = stdout(&tdb(&[
        "read",
        a,
        "--format",
        "json",
        "--at",
        "4102444800000",
    ]));
    assert_eq!(
        after.trim(),
        r#"{"dimensions":{"d":[1,999]},"attributes":{"a":[2147483647,2147483646]}}"#
    );
    let Some(python) = tiledb_conformance::oracle::tiledb_python_or_skip("the TileDB half") else {
        return;
    };
    let script = format!(
        "import tiledb, json\nA = tiledb.open({a:?}, timestamp=4102444800000)\nr = A[:]\nprint(json.dumps({{'d': [int(x) for x in r['d']], 'a': [int(x) for x in r['a']]}}))"
    );
    let out = Command::new(python).args(["-c", &script]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        r#"{"d": [1, 999], "a": [2147483647, 2147483646]}"#
    );
}

/// `--where` under a budget of a few cells per batch prints what the
/// default budget prints: the condition applies to every batch (sparse
/// batches left without cells are skipped, dense cells that fail read as
/// fill values), in every output format.
#[test]
fn a_condition_streams_under_a_small_memory_budget() {
    for (case, condition) in [
        ("sparse.attr.int32", "a >= 0 and d != 999"),
        ("sparse.attr.int32", "a < 0"),
        ("dense.attr.int32", "a > 0"),
        ("dense.attr.int32", "a <= 0 or a == 7"),
    ] {
        let array = corpus_array(case);
        let a = array.to_str().unwrap();
        for format in ["json", "csv", "table"] {
            let whole = stdout(&tdb(&["read", a, "--where", condition, "--format", format]));
            let batched = stdout(&tdb(&[
                "read",
                a,
                "--where",
                condition,
                "--format",
                format,
                "--memory-budget",
                "16",
            ]));
            assert_eq!(batched, whole, "{case} {condition:?} as {format}");
        }
        let unconditioned = stdout(&tdb(&["read", a, "--format", "csv"]));
        let conditioned = stdout(&tdb(&["read", a, "--where", condition, "--format", "csv"]));
        if case.starts_with("sparse") {
            assert!(conditioned.lines().count() < unconditioned.lines().count());
        } else {
            // Dense: the shape is kept, failing cells read as fill values.
            assert_eq!(conditioned.lines().count(), unconditioned.lines().count());
            assert_ne!(conditioned, unconditioned, "{case} {condition:?}");
        }
    }
}
