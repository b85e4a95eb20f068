//! The `tdb` command line: output of `tdb read` and `tdb info` on corpus
//! arrays (compared with what TileDB read, from the corpus's expected.json),
//! and bad input exiting with code 2 and a message, never a panic.

mod support;

use serde_json::{json, Value};
use support::{corpus_case, tdb};

fn unhex(s: &str) -> String {
    let bytes: Vec<u8> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn read_json_matches_tiledb() {
    let case = corpus_case("sparse.delete.condition");
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(case.join("expected.json")).unwrap())
            .unwrap();
    let latest = expected["reads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "latest")
        .unwrap();
    let cells = latest["cells"].as_array().unwrap();
    // d and a are INT32 (JSON integers in both encodings), s is UTF-8 text.
    let want = json!({
        "dimensions": {"d": cells.iter().map(|c| c[0].clone()).collect::<Vec<_>>()},
        "attributes": {
            "a": cells.iter().map(|c| c[1].clone()).collect::<Vec<_>>(),
            "s": cells.iter().map(|c| json!(unhex(c[2].as_str().unwrap()))).collect::<Vec<_>>(),
        }
    });
    let out = tdb(&[
        "read",
        case.join("array").to_str().unwrap(),
        "--format",
        "json",
        "--layout",
        "global",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got, want);

    let out = tdb(&[
        "read",
        case.join("array").to_str().unwrap(),
        "--format",
        "null",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        cells.len().to_string()
    );
}

#[test]
fn read_time_travel_and_subarray() {
    let case = corpus_case("sparse.delete.condition");
    let array = case.join("array");
    let out = tdb(&[
        "read",
        array.to_str().unwrap(),
        "--format",
        "json",
        "--at",
        "15",
        "--subarray",
        "d=2:4",
        "--attrs",
        "a",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    // At 15 the first write (d 1..6, a = [1, 9, 3, 9, 5, 7]) is visible and no delete yet.
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(case.join("expected.json")).unwrap())
            .unwrap();
    let at15 = expected["reads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "at-15")
        .unwrap();
    let rows: Vec<&Value> = at15["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| (2..=4).contains(&c[0].as_i64().unwrap()))
        .collect();
    assert_eq!(
        got,
        json!({"dimensions": {"d": rows.iter().map(|c| c[0].clone()).collect::<Vec<_>>()},
               "attributes": {"a": rows.iter().map(|c| c[1].clone()).collect::<Vec<_>>()}})
    );
}

#[test]
fn info_describes_arrays_and_groups() {
    let out = tdb(&[
        "info",
        corpus_case("group.basic").join("group").to_str().unwrap(),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = doc["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["first", "second-array", "sub"]);

    let out = tdb(&[
        "info",
        corpus_case("sparse.fragments.time_travel")
            .join("array")
            .to_str()
            .unwrap(),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema"]["array_type"], "sparse");
    assert!(!doc["fragments"].as_array().unwrap().is_empty());
    for f in doc["fragments"].as_array().unwrap() {
        assert_eq!(f["format_version"], 22);
    }
}

#[test]
fn bad_input_exits_2_with_a_message() {
    let array = corpus_case("sparse.delete.condition").join("array");
    let array = array.to_str().unwrap();
    for (args, needle) in [
        (vec!["read", array, "--layout", "diagonal"], "--layout"),
        (vec!["read", array, "--format", "xml"], "--format"),
        (vec!["read", array, "--subarray", "nope=1:2"], "nope"),
        (vec!["read", array, "--subarray", "d=1"], "DIM=LO:HI"),
        (vec!["read", array, "--subarray", "d=x:2"], "not an integer"),
        (
            vec!["read", array, "--subarray", "d=1:99999999999"],
            "does not fit",
        ),
        (vec!["read", array, "--attrs", "zz"], "zz"),
        (vec!["read", "/no/such/array"], "/no/such/array"),
        (vec!["info", "/no/such/array"], "/no/such/array"),
        (vec!["read", array, "--key", "short"], "--key"),
        (vec!["read", array, "--at", "soon"], "soon"),
    ] {
        let out = tdb(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
