//! Reads under a memory budget (`read::batches`): for every cells read of
//! every corpus case (every producer), in its own layout and — on the
//! TileDB 2.30 corpus — in all four layouts, the batches under budgets small
//! enough to force many of them, concatenated, equal the whole-result read
//! (itself compared with TileDB's answer in `read_corpus.rs`); every batch
//! holds at most the budget, none is empty, and a cell larger than the
//! budget is a usage error.

mod common;

use common::{toml_to_json, workspace};

use std::path::PathBuf;

use serde_json::{json, Value};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::read::{batches, Column, ReadQuery, ReadResult, ResultOrder};
use tiledb_runtime::ErrorClass;

const LAYOUTS: [ResultOrder; 4] = [
    ResultOrder::RowMajor,
    ResultOrder::ColMajor,
    ResultOrder::Global,
    ResultOrder::Unordered,
];

/// Open options of a read spec (`timestamp` or `timestamp_range`), as the
/// conformance kit takes them.
fn open_options(read: &Value) -> OpenOptions {
    let mut options = OpenOptions::default();
    if let Some(t) = read.get("timestamp").and_then(Value::as_u64) {
        options.timestamp_end = t;
    }
    if let Some(r) = read.get("timestamp_range").and_then(Value::as_array) {
        options.timestamp_start = r.first().and_then(Value::as_u64).unwrap_or(0);
        options.timestamp_end = r
            .get(1)
            .and_then(Value::as_u64)
            .unwrap_or(options.timestamp_end);
    }
    options
}

fn columns(result: &ReadResult) -> Vec<&Column> {
    result.dimensions.iter().chain(&result.attributes).collect()
}

fn bytes(result: &ReadResult) -> u64 {
    columns(result)
        .iter()
        .map(|c| {
            let offsets = c.offsets.as_ref().map_or(0, |o| o.len() * 8);
            (c.data.len() + offsets + c.validity.as_ref().map_or(0, Vec::len)) as u64
        })
        .sum()
}

/// The bytes of the largest cell of a result, as the budget counts them.
fn largest_cell(result: &ReadResult) -> u64 {
    let ends = columns(result)
        .iter()
        .filter(|c| c.offsets.is_some())
        .count() as u64
        * 8;
    ends + (0..result.cell_count())
        .map(|i| {
            columns(result)
                .iter()
                .map(|c| {
                    let values = match &c.offsets {
                        Some(o) => o[i + 1] - o[i] + 8,
                        None => c.cell_size().unwrap_or(0) as u64,
                    };
                    values + u64::from(c.validity.is_some())
                })
                .sum::<u64>()
        })
        .max()
        .unwrap_or(0)
}

/// The batches of `query` under `budget` joined into one result, after
/// checking each batch; `Err` when the read fails.
fn joined(array: &Array, query: &ReadQuery, budget: u64) -> Result<(ReadResult, usize), String> {
    let mut whole: Option<ReadResult> = None;
    let mut count = 0;
    for batch in batches(array.snapshot(), query, budget).map_err(|e| e.to_string())? {
        let batch = batch.map_err(|e| e.to_string())?;
        count += 1;
        assert!(batch.cell_count() > 0, "an empty batch");
        assert!(
            bytes(&batch) <= budget,
            "a batch of {} bytes over a budget of {budget}",
            bytes(&batch)
        );
        match whole.as_mut() {
            None => whole = Some(batch),
            Some(w) => {
                for (into, add) in w
                    .dimensions
                    .iter_mut()
                    .chain(&mut w.attributes)
                    .zip(batch.dimensions.into_iter().chain(batch.attributes))
                {
                    let base = into.data.len() as u64;
                    into.data.extend_from_slice(&add.data);
                    if let (Some(o), Some(a)) = (into.offsets.as_mut(), add.offsets) {
                        o.extend(a.iter().skip(1).map(|x| x + base));
                    }
                    if let (Some(v), Some(a)) = (into.validity.as_mut(), add.validity) {
                        v.extend(a);
                    }
                }
            }
        }
    }
    Ok((
        whole.unwrap_or(ReadResult {
            dimensions: Vec::new(),
            attributes: Vec::new(),
        }),
        count,
    ))
}

/// Checks one query: its batches under two small budgets equal its whole
/// read. Returns how many batches the smaller budget gave.
fn check_query(array: &Array, query: &ReadQuery, what: &str, failures: &mut Vec<String>) -> usize {
    let whole = match array.read(query) {
        Ok(whole) => whole,
        Err(e) => {
            // The batched read fails as well.
            if joined(array, query, 1 << 20).is_ok() {
                failures.push(format!(
                    "{what}: the whole read fails ({e}), batches do not"
                ));
            }
            return 0;
        }
    };
    let total = bytes(&whole);
    let cell = largest_cell(&whole);
    let mut most = 0;
    for budget in [(total / 3).max(cell), (total / 12).max(cell)] {
        if budget == 0 {
            continue;
        }
        match joined(array, query, budget) {
            Err(e) => failures.push(format!("{what}, budget {budget}: {e}")),
            Ok((_, 0)) if whole.cell_count() == 0 => {}
            Ok((joined, count)) => {
                most = most.max(count);
                if columns(&joined) != columns(&whole) {
                    failures.push(format!(
                        "{what}, budget {budget}: {count} batches differ from the whole read \
                         ({} vs {} cells)",
                        joined.cell_count(),
                        whole.cell_count()
                    ));
                }
            }
        }
    }
    if cell > 1 && whole.cell_count() > 0 {
        // A budget below the largest cell: refused when that cell is met.
        let refused = batches(array.snapshot(), query, cell - 1)
            .map(Iterator::collect::<Result<Vec<_>, _>>)
            .and_then(|r| r);
        match refused {
            Err(e) if e.class() == ErrorClass::Usage => {}
            other => failures.push(format!(
                "{what}: a budget under the largest cell gave {:?}",
                other.map(|b| b.len())
            )),
        }
    }
    most
}

#[test]
fn batches_join_into_the_whole_read_over_the_corpus() {
    let corpus = workspace().join("conformance/corpus");
    let mut producers: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    producers.sort();
    let mut failures = Vec::new();
    let (mut queries, mut many) = (0, 0);
    for producer in producers {
        let all_layouts = producer.ends_with("tiledb-2.30");
        let mut cases: Vec<PathBuf> = std::fs::read_dir(&producer)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("expected.json").is_file())
            .collect();
        cases.sort();
        for case_dir in cases {
            let expected: Value = serde_json::from_str(
                &std::fs::read_to_string(case_dir.join("expected.json")).unwrap(),
            )
            .unwrap();
            let case_file = workspace()
                .join("conformance")
                .join(expected["case_file"].as_str().unwrap());
            let case = toml_to_json(
                toml::from_str(&std::fs::read_to_string(&case_file).unwrap()).unwrap(),
            );
            if case.get("encryption").is_some() {
                continue;
            }
            let reads = case.get("reads").and_then(Value::as_array).cloned();
            for read in reads.unwrap_or_else(|| vec![json!({"id": "all"})]) {
                let kind = read.get("kind").and_then(Value::as_str).unwrap_or("cells");
                if kind != "cells" || read.get("uri").is_some() {
                    continue;
                }
                let options = open_options(&read);
                let Ok(array) = Array::open_path(case_dir.join("array"), options) else {
                    continue;
                };
                let Ok(query) = tiledb_conformance::canonical::query(&array, &read) else {
                    continue;
                };
                let layouts: Vec<ResultOrder> = if all_layouts {
                    LAYOUTS.to_vec()
                } else {
                    vec![query.layout]
                };
                for layout in layouts {
                    let query = ReadQuery {
                        layout,
                        ..query.clone()
                    };
                    let what = format!(
                        "{}/{} read {} {layout:?}",
                        producer.file_name().unwrap().to_string_lossy(),
                        case_dir.file_name().unwrap().to_string_lossy(),
                        read.get("id").and_then(Value::as_str).unwrap_or("?"),
                    );
                    queries += 1;
                    if check_query(&array, &query, &what, &mut failures) >= 8 {
                        many += 1;
                    }
                }
            }
        }
    }
    println!("{queries} queries, {many} read in 8 batches or more");
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(queries > 500, "too few queries checked: {queries}");
    assert!(many > 100, "too few reads cut into many batches: {many}");
}

#[test]
fn a_budget_of_zero_is_refused() {
    let path = workspace().join("conformance/corpus/tiledb-2.30/sparse.dim.int32/array");
    let array = Array::open_path(path, OpenOptions::default()).unwrap();
    let err = batches(array.snapshot(), &ReadQuery::default(), 0).unwrap_err();
    assert_eq!(err.class(), ErrorClass::Usage);
}
