//! Every expected result in the corpus follows the canonical JSON of conformance/README.md:
//! the runner can rely on these shapes without re-checking them.

use serde_json::Value;
use std::fs;
use std::path::Path;

const BYTE_TYPES: &[&str] = &[
    "CHAR",
    "STRING_ASCII",
    "STRING_UTF8",
    "BLOB",
    "GEOM_WKB",
    "GEOM_WKT",
];
const NARROW_INTS: &[&str] = &[
    "INT8", "INT16", "INT32", "UINT8", "UINT16", "UINT32", "BOOL",
];

fn is_wide_int(t: &str) -> bool {
    matches!(t, "INT64" | "UINT64") || t.starts_with("DATETIME_") || t.starts_with("TIME_")
}

fn is_hex(s: &str) -> bool {
    s.len() & 1 == 0
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Why `v` is not a canonical single value of type `t`, if it is not.
fn check_scalar(t: &str, v: &Value) -> Option<String> {
    if NARROW_INTS.contains(&t) {
        return (!v.is_i64() && !v.is_u64())
            .then(|| format!("{t} value {v} is not a JSON integer"));
    }
    if is_wide_int(t) {
        let ok = v.as_str().is_some_and(|s| s.parse::<i128>().is_ok());
        return (!ok).then(|| format!("{t} value {v} is not a decimal string"));
    }
    let digits = match t {
        "FLOAT32" => 8,
        "FLOAT64" => 16,
        _ => return Some(format!("unknown type {t}")),
    };
    let ok = v
        .as_str()
        .and_then(|s| s.strip_prefix("0x"))
        .is_some_and(|h| h.len() == digits && is_hex(h));
    (!ok).then(|| format!("{t} value {v} is not 0x + {digits} hex digits"))
}

/// Why `v` is not a canonical cell of the field described by `field`, if it is not.
fn check_cell(field: &Value, v: &Value) -> Option<String> {
    let t = field["type"].as_str().unwrap_or("?");
    if v.is_null() {
        let nullable = field["nullable"].as_bool().unwrap_or(false);
        return (!nullable).then(|| format!("null in the non-nullable field {}", field["name"]));
    }
    if BYTE_TYPES.contains(&t) {
        let ok = v.as_str().is_some_and(is_hex);
        return (!ok).then(|| format!("{t} cell {v} is not a hex string"));
    }
    match &field["cell_val_num"] {
        Value::String(s) if s == "var" => match v.as_array() {
            Some(values) => values.iter().find_map(|x| check_scalar(t, x)),
            None => Some(format!("var cell {v} is not an array")),
        },
        n if n.as_u64() == Some(1) => check_scalar(t, v),
        n => match (v.as_array(), n.as_u64()) {
            (Some(values), Some(count)) if values.len() as u64 == count => {
                values.iter().find_map(|x| check_scalar(t, x))
            }
            _ => Some(format!("cell {v} does not hold {n} values")),
        },
    }
}

fn check_read(read: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let id = read["id"].as_str().unwrap_or("?");
    let (Some(fields), Some(cells)) = (read["fields"].as_array(), read["cells"].as_array()) else {
        return problems;
    };
    if !read["ordered"].is_boolean() {
        problems.push(format!("{id}: `ordered` is not a boolean"));
    }
    for (i, row) in cells.iter().enumerate() {
        match row.as_array() {
            Some(values) if values.len() == fields.len() => {
                for (field, v) in fields.iter().zip(values) {
                    if let Some(p) = check_cell(field, v) {
                        problems.push(format!("{id}: row {i}: {p}"));
                    }
                }
            }
            _ => problems.push(format!("{id}: row {i} does not have one value per field")),
        }
    }
    problems
}

#[test]
fn expected_results_are_canonical_json() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut problems = Vec::new();
    let mut cells_checked = 0usize;
    for producer in fs::read_dir(&corpus).expect("corpus folder").flatten() {
        if !producer.path().is_dir() {
            continue;
        }
        for case in fs::read_dir(producer.path())
            .expect("producer folder")
            .flatten()
        {
            let path = case.path().join("expected.json");
            let text = fs::read_to_string(&path).unwrap_or_default();
            let Ok(expected) = serde_json::from_str::<Value>(&text) else {
                problems.push(format!("{}: not JSON", path.display()));
                continue;
            };
            for read in expected["reads"].as_array().into_iter().flatten() {
                if let Some(class) = read.get("error") {
                    if !matches!(class.as_str(), Some("unsupported" | "corrupt")) {
                        problems.push(format!("{}: error class {class}", path.display()));
                    }
                    continue;
                }
                if let Some(cells) = read["cells"].as_array() {
                    cells_checked += cells.len();
                }
                for p in check_read(read) {
                    problems.push(format!("{}: {p}", path.display()));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        cells_checked > 1000,
        "only {cells_checked} cells were checked"
    );
}

#[test]
fn the_checker_rejects_what_is_not_canonical() {
    let field = |t: &str, n: Value, nullable: bool| serde_json::json!({"name": "f", "type": t, "cell_val_num": n, "nullable": nullable});
    let one = Value::from(1);
    let var = Value::from("var");
    assert!(check_cell(&field("INT64", one.clone(), false), &Value::from(5)).is_some());
    assert!(check_cell(&field("INT64", one.clone(), false), &Value::from("-5")).is_none());
    assert!(check_cell(
        &field("FLOAT32", one.clone(), false),
        &Value::from("0x3fc00000")
    )
    .is_none());
    assert!(check_cell(&field("FLOAT32", one.clone(), false), &Value::from(1.5)).is_some());
    assert!(check_cell(
        &field("FLOAT64", one.clone(), false),
        &Value::from("0x3fc00000")
    )
    .is_some());
    assert!(check_cell(&field("INT32", one.clone(), false), &Value::Null).is_some());
    assert!(check_cell(&field("INT32", one, true), &Value::Null).is_none());
    assert!(check_cell(&field("BLOB", var.clone(), false), &Value::from("0g")).is_some());
    assert!(check_cell(&field("UINT8", var, false), &serde_json::json!([1, 2])).is_none());
    assert!(check_cell(
        &field("INT16", Value::from(3), false),
        &serde_json::json!([1, 2])
    )
    .is_some());
}
