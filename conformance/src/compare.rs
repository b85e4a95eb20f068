//! Comparing a reader's canonical JSON with the expected one, and saying how they differ.
//!
//! Canonical values are exact (floats are their IEEE bits), so equality is plain JSON
//! equality; what needs care is the order of rows (`ordered: false` compares multisets) and a
//! diff a person can act on.

use std::collections::BTreeMap;

use serde_json::Value;

/// How many differing rows (or paths) a diff lists before summarising the rest.
const SHOWN: usize = 3;

/// `Ok` when `actual` is the result `expected` describes, else a diff whose first line
/// summarises the difference.
pub fn compare(expected: &Value, actual: &Value) -> Result<(), String> {
    if expected == actual {
        return Ok(());
    }
    match (expected.get("cells"), actual.get("cells")) {
        (Some(Value::Array(want)), Some(Value::Array(got))) => {
            compare_cells(expected, actual, want, got)
        }
        _ => {
            Err(first_difference("", expected, actual)
                .unwrap_or_else(|| "results differ".to_string()))
        }
    }
}

/// As [`compare`], for a row- or column-major read of an array that allows duplicates: TileDB
/// orders cells by coordinates with an unstable sort, so among cells of equal coordinates (the
/// values of the `dim` fields, first in each row) its order is unspecified. Those runs are
/// compared as multisets, everything else as [`compare`] does.
pub fn compare_duplicates_unordered(expected: &Value, actual: &Value) -> Result<(), String> {
    let dims = expected
        .get("fields")
        .and_then(Value::as_array)
        .map_or(0, |f| f.iter().filter(|f| f["kind"] == "dim").count());
    let normalise = |v: &Value| {
        let mut v = v.clone();
        if let Some(Value::Array(rows)) = v.get_mut("cells") {
            sort_equal_coordinates(rows, dims);
        }
        v
    };
    compare(&normalise(expected), &normalise(actual))
}

/// Sorts each run of rows with equal coordinates (their first `dims` values) by their text.
fn sort_equal_coordinates(rows: &mut [Value], dims: usize) {
    let coordinates = |v: &Value| -> Vec<Value> {
        v.as_array()
            .map(|a| a.iter().take(dims).cloned().collect())
            .unwrap_or_default()
    };
    let mut start = 0;
    while start < rows.len() {
        let mut end = start + 1;
        while end < rows.len() && coordinates(&rows[end]) == coordinates(&rows[start]) {
            end += 1;
        }
        rows[start..end].sort_by_key(std::string::ToString::to_string);
        start = end;
    }
}

fn compare_cells(
    expected: &Value,
    actual: &Value,
    want: &[Value],
    got: &[Value],
) -> Result<(), String> {
    if expected.get("fields") != actual.get("fields") {
        return Err(format!(
            "fields differ: expected {}, got {}",
            compact(expected.get("fields")),
            compact(actual.get("fields"))
        ));
    }
    let ordered = expected
        .get("ordered")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if actual
        .get("ordered")
        .and_then(Value::as_bool)
        .unwrap_or(true)
        != ordered
    {
        return Err(format!(
            "\"ordered\" is {}, expected {ordered}",
            compact(actual.get("ordered"))
        ));
    }
    if ordered {
        compare_ordered(want, got)
    } else {
        compare_multiset(want, got)
    }
}

fn compare_ordered(want: &[Value], got: &[Value]) -> Result<(), String> {
    let differing: Vec<usize> = (0..want.len().min(got.len()))
        .filter(|&i| want.get(i) != got.get(i))
        .collect();
    if differing.is_empty() && want.len() == got.len() {
        return Ok(());
    }
    let mut lines = Vec::new();
    let mut summary = Vec::new();
    if want.len() != got.len() {
        summary.push(format!("{} rows, expected {}", got.len(), want.len()));
    }
    if !differing.is_empty() {
        summary.push(format!(
            "{} of {} compared rows differ",
            differing.len(),
            want.len().min(got.len())
        ));
    }
    for &i in differing.iter().take(SHOWN) {
        lines.push(format!(
            "  row {i}: expected {}, got {}",
            compact(want.get(i)),
            compact(got.get(i))
        ));
    }
    if differing.len() > SHOWN {
        lines.push(format!(
            "  … and {} more differing rows",
            differing.len() - SHOWN
        ));
    }
    if got.len() > want.len() {
        lines.push(format!(
            "  first extra row {}: {}",
            want.len(),
            compact(got.get(want.len()))
        ));
    } else if want.len() > got.len() {
        lines.push(format!(
            "  first missing row {}: {}",
            got.len(),
            compact(want.get(got.len()))
        ));
    }
    Err(join(&summary.join("; "), &lines))
}

fn compare_multiset(want: &[Value], got: &[Value]) -> Result<(), String> {
    let mut counts: BTreeMap<String, i64> = BTreeMap::new();
    for row in want {
        *counts.entry(row.to_string()).or_default() += 1;
    }
    for row in got {
        *counts.entry(row.to_string()).or_default() -= 1;
    }
    let missing: Vec<&String> = counts
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(r, _)| r)
        .collect();
    let extra: Vec<&String> = counts
        .iter()
        .filter(|(_, &n)| n < 0)
        .map(|(r, _)| r)
        .collect();
    if missing.is_empty() && extra.is_empty() {
        return Ok(());
    }
    let mut lines = Vec::new();
    for row in missing.iter().take(SHOWN) {
        lines.push(format!("  missing {row}"));
    }
    for row in extra.iter().take(SHOWN) {
        lines.push(format!("  unexpected {row}"));
    }
    Err(join(
        &format!(
            "unordered rows differ: {} missing, {} unexpected ({} rows, expected {})",
            missing.len(),
            extra.len(),
            got.len(),
            want.len()
        ),
        &lines,
    ))
}

/// The first place (a JSON path) where two values differ.
fn first_difference(path: &str, want: &Value, got: &Value) -> Option<String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                let p = format!("{path}.{k}");
                match g.get(k) {
                    None => return Some(format!("{p}: missing, expected {}", compact(Some(wv)))),
                    Some(gv) => {
                        if let Some(d) = first_difference(&p, wv, gv) {
                            return Some(d);
                        }
                    }
                }
            }
            g.keys()
                .find(|k| !w.contains_key(*k))
                .map(|k| format!("{path}.{k}: not expected, got {}", compact(g.get(k))))
        }
        (Value::Array(w), Value::Array(g)) => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                if let Some(d) = first_difference(&format!("{path}[{i}]"), wv, gv) {
                    return Some(d);
                }
            }
            (w.len() != g.len()).then(|| {
                format!(
                    "{}: {} items, expected {}",
                    display_path(path),
                    g.len(),
                    w.len()
                )
            })
        }
        _ => (want != got).then(|| {
            format!(
                "{}: expected {}, got {}",
                display_path(path),
                compact(Some(want)),
                compact(Some(got))
            )
        }),
    }
}

fn display_path(path: &str) -> &str {
    if path.is_empty() {
        "result"
    } else {
        path
    }
}

fn join(summary: &str, lines: &[String]) -> String {
    if lines.is_empty() {
        summary.to_string()
    } else {
        format!("{summary}\n{}", lines.join("\n"))
    }
}

/// A JSON value on one line, cut to a readable length.
pub(crate) fn compact(value: Option<&Value>) -> String {
    let text = value.map_or("nothing".to_string(), Value::to_string);
    if text.chars().count() > 160 {
        let cut: String = text.chars().take(160).collect();
        format!("{cut}…")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(ordered: bool, cells: Value) -> Value {
        json!({"fields": [{"name": "d"}], "ordered": ordered, "cells": cells})
    }

    #[test]
    fn equal_results_pass() {
        let r = result(true, json!([[1, "0x3f800000"]]));
        assert_eq!(compare(&r, &r.clone()), Ok(()));
    }

    #[test]
    fn ordered_rows_name_the_first_differing_row() {
        let want = result(true, json!([[1, 10], [2, 20], [3, 30]]));
        let got = result(true, json!([[1, 10], [2, 21], [3, 30]]));
        let diff = compare(&want, &got).unwrap_err();
        assert!(diff.starts_with("1 of 3 compared rows differ"), "{diff}");
        assert!(
            diff.contains("row 1: expected [2,20], got [2,21]"),
            "{diff}"
        );
    }

    #[test]
    fn duplicates_may_be_reordered_among_themselves_only() {
        let fields = json!([{"name": "d", "kind": "dim"}, {"name": "a", "kind": "attr"}]);
        let rows = |cells: Value| json!({"fields": fields, "ordered": true, "cells": cells});
        let want = rows(json!([[1, 10], [2, 20], [2, 21], [3, 30]]));
        let swapped = rows(json!([[1, 10], [2, 21], [2, 20], [3, 30]]));
        assert!(compare(&want, &swapped).is_err());
        assert_eq!(compare_duplicates_unordered(&want, &swapped), Ok(()));
        // Rows of different coordinates keep their order.
        let moved = rows(json!([[2, 20], [1, 10], [2, 21], [3, 30]]));
        assert!(compare_duplicates_unordered(&want, &moved).is_err());
        let changed = rows(json!([[1, 10], [2, 21], [2, 22], [3, 30]]));
        assert!(compare_duplicates_unordered(&want, &changed).is_err());
    }

    #[test]
    fn ordered_rows_must_keep_their_order() {
        let want = result(true, json!([[1], [2]]));
        let got = result(true, json!([[2], [1]]));
        assert!(compare(&want, &got).is_err());
    }

    #[test]
    fn unordered_rows_compare_as_multisets() {
        let want = result(false, json!([[1], [2], [2]]));
        assert_eq!(
            compare(&want, &result(false, json!([[2], [1], [2]]))),
            Ok(())
        );
        let diff = compare(&want, &result(false, json!([[2], [1], [1]]))).unwrap_err();
        assert!(
            diff.contains("missing [2]") && diff.contains("unexpected [1]"),
            "{diff}"
        );
    }

    #[test]
    fn missing_rows_are_counted() {
        let want = result(true, json!([[1], [2]]));
        let diff = compare(&want, &result(true, json!([[1]]))).unwrap_err();
        assert!(diff.starts_with("1 rows, expected 2"), "{diff}");
        assert!(diff.contains("first missing row 1: [2]"), "{diff}");
    }

    #[test]
    fn other_kinds_report_a_json_path() {
        let want = json!({"metadata": {"k": {"type": "INT32", "values": [1, 2]}}});
        let got = json!({"metadata": {"k": {"type": "INT32", "values": [1, 3]}}});
        assert_eq!(
            compare(&want, &got),
            Err(".metadata.k.values[1]: expected 2, got 3".to_string())
        );
    }
}
