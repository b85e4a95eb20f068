//! Sparse row- and column-major reads cut into bands
//! (`tiledb_runtime::read::sparse::read_with_band_budget`) return the whole
//! read's cells; the array is written by the conformance kit's recipe replay.

use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::read::{sparse, ReadQuery, ReadResult, ResultOrder};

/// Two overlapping fragments (duplicates resolved across them), a
/// delete, a nullable and a var-sized attribute, capacity 3, stored in
/// row-major and in column-major order: read row- and column-major,
/// whole and through ranges, cut into bands of a few dozen cells, the
/// result is the unbanded read's, cell for cell. Bands are only cut
/// where the tiles allow it (along the first dimension of the stored
/// order); where they are, the test requires several.
#[test]
fn banded_sorted_reads_equal_the_whole_read() {
    for order in ["row-major", "col-major"] {
        let array_dir = banded_test_array(order);
        let array =
            Array::open_path(array_dir.path().join("array"), OpenOptions::default()).expect("open");
        let range64 =
            |lo: i64, hi: i64| vec![(lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec())];
        let range32 =
            |lo: i32, hi: i32| vec![(lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec())];
        for layout in [ResultOrder::RowMajor, ResultOrder::ColMajor] {
            for ranges in [
                Vec::new(),
                vec![range64(7, 41)],
                vec![Vec::new(), range32(3, 17)],
            ] {
                let query = ReadQuery {
                    ranges,
                    layout,
                    ..Default::default()
                };
                let whole = array.read(&query).unwrap();
                assert!(whole.cell_count() > 20, "{order} {layout:?}");
                let banded = sparse::read_with_band_budget(array.snapshot(), &query, 30).unwrap();
                assert_eq!(
                    result_cells(&banded),
                    result_cells(&whole),
                    "{order} {layout:?} {:?}",
                    query.ranges
                );
                let along_stored_order =
                    (order == "row-major") == (layout == ResultOrder::RowMajor);
                if along_stored_order {
                    let (outer, bands) = sparse::sorted_bands(array.snapshot(), &query, 30)
                        .unwrap()
                        .unwrap_or_else(|| panic!("{order} {layout:?}: not cut into bands"));
                    let least = if query.ranges.is_empty() { 3 } else { 2 };
                    assert!(
                        bands.len() >= least,
                        "{order} {layout:?} {:?}: {} bands",
                        query.ranges,
                        bands.len()
                    );
                    assert_eq!(
                        outer,
                        if layout == ResultOrder::RowMajor {
                            0
                        } else {
                            1
                        }
                    );
                }
            }
        }
    }
}

fn result_cells(r: &ReadResult) -> Vec<Vec<(Vec<u8>, bool)>> {
    r.dimensions
        .iter()
        .chain(&r.attributes)
        .map(|c| {
            (0..c.len())
                .map(|i| (c.cell(i).0.to_vec(), c.cell(i).1))
                .collect()
        })
        .collect()
}

fn banded_test_array(order: &str) -> tempfile::TempDir {
    let n = 400;
    let x: Vec<String> = (0..n).map(|i| ((i * 37) % 50).to_string()).collect();
    let y: Vec<String> = (0..n).map(|i| ((i * 11) % 23).to_string()).collect();
    let a: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    let s: Vec<String> = (0..n)
        .map(|i| format!("\"{}\"", "s".repeat(i % 4)))
        .collect();
    let v: Vec<String> = (0..n).map(|i| ((i % 3 != 0) as u8).to_string()).collect();
    let half = n / 2;
    let recipe = format!(
        r#"id = "banded"
title = "banded"
level = "required"
[schema]
type = "sparse"
capacity = 3
tile_order = "{order}"
cell_order = "{order}"
dims = [
  {{ name = "x", type = "INT64", domain = [0, 99], tile = 10 }},
  {{ name = "y", type = "INT32", domain = [0, 99], tile = 10 }},
]
attrs = [
  {{ name = "a", type = "INT32", nullable = true }},
  {{ name = "s", type = "STRING_UTF8", cell_val_num = "var" }},
]

[[steps]]
op = "write"
timestamp = 10
coords = {{ x = [{x1}], y = [{y1}] }}
data = {{ a = [{a1}], s = [{s1}] }}
validity = {{ a = [{v1}] }}

[[steps]]
op = "delete"
timestamp = 20
condition = "a < 5"

[[steps]]
op = "write"
timestamp = 30
coords = {{ x = [{x2}], y = [{y2}] }}
data = {{ a = [{a2}], s = [{s2}] }}
validity = {{ a = [{v2}] }}
"#,
        x1 = x[..half].join(", "),
        y1 = y[..half].join(", "),
        a1 = a[..half].join(", "),
        s1 = s[..half].join(", "),
        v1 = v[..half].join(", "),
        x2 = x[half..].join(", "),
        y2 = y[half..].join(", "),
        a2 = a[half..].join(", "),
        s2 = s[half..].join(", "),
        v2 = v[half..].join(", "),
    );
    let dir = tempfile::tempdir().unwrap();
    tiledb_conformance::recipe::replay_case(&recipe, dir.path()).expect("replay");
    dir
}
