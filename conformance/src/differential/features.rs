//! Mutations of the features beyond the schema's knobs: a group's metadata,
//! the conditions of delete commits, the key of an encrypted array and the
//! order of a dimension label. Each keeps the recipe valid (or leaves it to
//! a writer to refuse, which the campaign counts), so that both readers must
//! still agree on what the array holds.

use super::Rng;

/// Group metadata values rarely written: extremes, empty and non-ASCII
/// strings, many values. `(type, values as TOML)`.
const GROUP_METADATA: &[(&str, &str)] = &[
    ("INT64", "[-9223372036854775808, 0, 9223372036854775807]"),
    ("UINT8", "[0, 255, 255, 0]"),
    ("FLOAT64", "[1.0e308, -0.0, 5.0e-324]"),
    ("FLOAT32", "[3.4e38, -1.5]"),
    ("STRING_UTF8", r#""""#),
    ("STRING_UTF8", r#""ünïcödé ✓ 🙂""#),
    ("STRING_ASCII", r#""a;b=c, d\td""#),
    (
        "INT32",
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]",
    ),
];

/// Keys rarely written.
const KEYS: &[&str] = &["k", "a key with spaces", "ключ", "__tiledb_like", "x.y/z"];

/// Comparison operators a condition may be turned into.
const OPERATORS: &[&str] = &["==", "!=", "<", "<=", ">", ">="];

fn steps(recipe: &mut toml::Value) -> Option<&mut Vec<toml::Value>> {
    recipe.get_mut("steps").and_then(toml::Value::as_array_mut)
}

/// A new step of operation `op` with string fields `fields`.
fn step_of(op: &str, fields: &[(&str, &str)]) -> toml::map::Map<String, toml::Value> {
    let mut table = toml::map::Map::new();
    table.insert("op".into(), toml::Value::String(op.into()));
    for (name, value) in fields {
        table.insert((*name).into(), toml::Value::String((*value).into()));
    }
    table
}

fn op_of(step: &toml::Value) -> &str {
    step.get("op").and_then(toml::Value::as_str).unwrap_or("")
}

/// Applies one feature mutation the recipe has room for, if any.
pub(super) fn mutate_features(recipe: &mut toml::Value, rng: &mut Rng, changes: &mut Vec<String>) {
    let mut kinds: Vec<fn(&mut toml::Value, &mut Rng, &mut Vec<String>)> = Vec::new();
    let has_op = |recipe: &toml::Value, op: &str| {
        recipe
            .get("steps")
            .and_then(toml::Value::as_array)
            .is_some_and(|s| s.iter().any(|step| op_of(step) == op))
    };
    if has_op(recipe, "create_group") {
        kinds.push(group_metadata);
    }
    if has_op(recipe, "delete") {
        kinds.push(delete_condition);
    }
    if recipe.get("encryption").is_some() {
        kinds.push(encryption_key);
    }
    if recipe
        .get("schema")
        .and_then(|s| s.get("dim_labels"))
        .is_some()
    {
        kinds.push(label_order);
    }
    if !kinds.is_empty() {
        let mutate = *rng.pick(&kinds);
        mutate(recipe, rng, changes);
    }
}

/// Puts a metadata item of an unusual key, type or value on the group (or a
/// subgroup), and sometimes deletes one the recipe put.
fn group_metadata(recipe: &mut toml::Value, rng: &mut Rng, changes: &mut Vec<String>) {
    let Some(steps) = steps(recipe) else {
        return;
    };
    let groups: Vec<String> = steps
        .iter()
        .filter(|s| op_of(s) == "create_group")
        .filter_map(|s| {
            s.get("uri")
                .and_then(toml::Value::as_str)
                .map(str::to_string)
        })
        .collect();
    let puts: Vec<(String, String)> = steps
        .iter()
        .filter(|s| op_of(s) == "group_meta_put")
        .filter_map(|s| {
            Some((
                s.get("uri")?.as_str()?.to_string(),
                s.get("key")?.as_str()?.to_string(),
            ))
        })
        .collect();
    if !puts.is_empty() && rng.one_in(3) {
        let (uri, key) = rng.pick(&puts).clone();
        let step = step_of("group_meta_delete", &[("uri", &uri), ("key", &key)]);
        steps.push(toml::Value::Table(step));
        changes.push(format!("group {uri}: metadata {key:?} deleted"));
        return;
    }
    let Some(uri) = (!groups.is_empty()).then(|| rng.pick(&groups).clone()) else {
        return;
    };
    let (datatype, values) = *rng.pick(GROUP_METADATA);
    let key = *rng.pick(KEYS);
    let Ok(parsed) = toml::from_str::<toml::Value>(&format!("v = {values}")) else {
        return;
    };
    let Some(values_value) = parsed.get("v").cloned() else {
        return;
    };
    let mut step = step_of(
        "group_meta_put",
        &[("uri", &uri), ("key", key), ("type", datatype)],
    );
    step.insert("values".into(), values_value);
    steps.push(toml::Value::Table(step));
    changes.push(format!("group {uri}: metadata {key:?} {datatype} {values}"));
}

/// Changes one delete's condition: another comparison operator, another
/// number, or an `or` with a second comparison.
fn delete_condition(recipe: &mut toml::Value, rng: &mut Rng, changes: &mut Vec<String>) {
    let Some(steps) = steps(recipe) else {
        return;
    };
    let deletes: Vec<usize> = (0..steps.len())
        .filter(|&i| op_of(&steps[i]) == "delete")
        .collect();
    let i = *rng.pick(&deletes);
    let Some(old) = steps[i]
        .get("condition")
        .and_then(toml::Value::as_str)
        .map(str::to_string)
    else {
        return;
    };
    let new = match rng.below(3) {
        0 => replace_operator(&old, rng),
        1 => replace_number(&old, rng),
        _ => {
            // `a == 9` → `a == 9 or a < N`: the same field compared again.
            let Some((field, _)) = first_comparison(&old) else {
                return;
            };
            let n = rng.below(12) as i64 - 1;
            format!("{old} or {field} {} {n}", rng.pick(OPERATORS))
        }
    };
    if new != old {
        if let Some(step) = steps[i].as_table_mut() {
            step.insert("condition".into(), toml::Value::String(new.clone()));
        }
        changes.push(format!("delete step {i}: condition {new:?} (was {old:?})"));
    }
}

/// The field and operator of the first comparison of a condition.
fn first_comparison(condition: &str) -> Option<(&str, &str)> {
    let mut words = condition.split_whitespace();
    let field = words.next()?;
    let op = words.next()?;
    OPERATORS.contains(&op).then_some((field, op))
}

fn replace_operator(condition: &str, rng: &mut Rng) -> String {
    let words: Vec<&str> = condition.split_whitespace().collect();
    let ops: Vec<usize> = (0..words.len())
        .filter(|&i| OPERATORS.contains(&words[i]))
        .collect();
    if ops.is_empty() {
        return condition.to_string();
    }
    let at = *rng.pick(&ops);
    let mut out: Vec<String> = words.iter().map(|w| (*w).to_string()).collect();
    out[at] = (*rng.pick(OPERATORS)).to_string();
    out.join(" ")
}

fn replace_number(condition: &str, rng: &mut Rng) -> String {
    let words: Vec<&str> = condition.split_whitespace().collect();
    let numbers: Vec<usize> = (0..words.len())
        .filter(|&i| words[i].parse::<i64>().is_ok())
        .collect();
    if numbers.is_empty() {
        return condition.to_string();
    }
    let at = *rng.pick(&numbers);
    let old: i64 = words[at].parse().unwrap_or(0);
    let new = match rng.below(4) {
        0 => old - 1,
        1 => old + 1,
        2 => 0,
        _ => -old,
    };
    let mut out: Vec<String> = words.iter().map(|w| (*w).to_string()).collect();
    out[at] = new.to_string();
    out.join(" ")
}

/// Another 32-byte key (printable ASCII, as the case files give keys).
fn encryption_key(recipe: &mut toml::Value, rng: &mut Rng, changes: &mut Vec<String>) {
    const CHARS: &[u8] =
        b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!#%&*+-./:=?@^_~ ";
    let key: String = (0..32).map(|_| *rng.pick(CHARS) as char).collect();
    if let Some(table) = recipe
        .get_mut("encryption")
        .and_then(toml::Value::as_table_mut)
    {
        table.insert("key".into(), toml::Value::String(key.clone()));
        changes.push(format!("encryption key {key:?}"));
    }
}

/// Flips a dimension label's order (increasing ↔ decreasing) and reverses
/// the label values of every write, so they follow the new order.
fn label_order(recipe: &mut toml::Value, rng: &mut Rng, changes: &mut Vec<String>) {
    let Some(labels) = recipe
        .get_mut("schema")
        .and_then(|s| s.get_mut("dim_labels"))
        .and_then(toml::Value::as_array_mut)
    else {
        return;
    };
    if labels.is_empty() {
        return;
    }
    let i = rng.below(labels.len());
    let Some(label) = labels[i].as_table_mut() else {
        return;
    };
    let name = label
        .get("name")
        .and_then(toml::Value::as_str)
        .unwrap_or("?")
        .to_string();
    let order = match label.get("order").and_then(toml::Value::as_str) {
        Some("increasing") => "decreasing",
        Some("decreasing") => "increasing",
        _ => return,
    };
    label.insert("order".into(), toml::Value::String(order.into()));
    for step in steps(recipe).into_iter().flatten() {
        if let Some(values) = step
            .get_mut("data")
            .and_then(|d| d.get_mut(&name))
            .and_then(toml::Value::as_array_mut)
        {
            values.reverse();
        }
    }
    changes.push(format!("label {name}: {order}, values reversed"));
}
