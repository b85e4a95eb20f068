//! A global-order or unordered read of one sparse fragment streams its tiles
//! into the result a batch at a time (`read::sparse::stream::stream_stored_order`).
//! Over many batches — several hundred tiles, with and without ranges, with a
//! nullable attribute and an attribute added by schema evolution (filled) —
//! it must return exactly what the sorting path returns for a row-major read
//! of the same one-dimensional array (whose global order is coordinate order).

use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::read::{Column, ReadQuery, ResultOrder};

fn cells(c: &Column) -> Vec<(Vec<u8>, bool)> {
    (0..c.len())
        .map(|i| {
            let (bytes, valid) = c.cell(i);
            (bytes.to_vec(), valid)
        })
        .collect()
}

#[test]
fn streamed_stored_order_reads_equal_the_sorted_read() {
    let n = 2000;
    // Coordinates written in a scrambled order; capacity 3 makes ~667 tiles,
    // ten batches of the stream.
    let coords: Vec<String> = (0..n).map(|i| ((i * 7919) % n).to_string()).collect();
    let values: Vec<String> = (0..n).map(|i| (i * 3).to_string()).collect();
    let validity: Vec<String> = (0..n).map(|i| ((i % 5 != 0) as u8).to_string()).collect();
    let recipe = format!(
        r#"id = "streamed"
title = "streamed"
level = "required"
[schema]
type = "sparse"
capacity = 3
dims = [{{ name = "d", type = "INT32", domain = [0, {max}], tile = 100 }}]
attrs = [
  {{ name = "a", type = "INT64", filters = [{{ name = "ZSTD" }}] }},
  {{ name = "n", type = "INT32", nullable = true }},
]

[[steps]]
op = "write"
timestamp = 10
coords = {{ d = [{coords}] }}
data = {{ a = [{values}], n = [{values}] }}
validity = {{ n = [{validity}] }}

[[steps]]
op = "evolve"
add_attrs = [{{ name = "e", type = "FLOAT64", fill = 2.5 }}]
"#,
        max = n - 1,
        coords = coords.join(", "),
        values = values.join(", "),
        validity = validity.join(", "),
    );
    let dir = tempfile::tempdir().unwrap();
    tiledb_conformance::recipe::replay_case(&recipe, dir.path()).expect("replay");
    let array = Array::open_path(dir.path().join("array"), OpenOptions::default()).unwrap();
    let range =
        |lo: i32, hi: i32| vec![vec![(lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec())]];
    for ranges in [Vec::new(), range(150, 1733), range(1999, 1999)] {
        let read = |layout| {
            array
                .read(&ReadQuery {
                    ranges: ranges.clone(),
                    layout,
                    ..Default::default()
                })
                .unwrap()
        };
        let sorted = read(ResultOrder::RowMajor);
        assert!(sorted.cell_count() > 0);
        assert_eq!(sorted.attributes.len(), 3, "a, n and the evolved e");
        for layout in [ResultOrder::Global, ResultOrder::Unordered] {
            let streamed = read(layout);
            assert_eq!(streamed.cell_count(), sorted.cell_count(), "{layout:?}");
            for (a, b) in streamed.dimensions.iter().zip(&sorted.dimensions) {
                assert_eq!(cells(a), cells(b), "{layout:?} dimension {}", a.name);
            }
            for (a, b) in streamed.attributes.iter().zip(&sorted.attributes) {
                assert_eq!(cells(a), cells(b), "{layout:?} attribute {}", a.name);
            }
        }
    }
}
