//! Dense subarrays that cut through tiles decode only the chunks holding
//! the cells they read (`TileSelection`); everything else in a tile buffer
//! is stale bytes of an earlier tile. These reads cross tiles of several
//! chunks each, at every offset, in both layouts, over two overlapping
//! fragments, a nullable attribute and a nullable var-sized one (whose
//! data tiles are several chunks too), and every cell must be the one
//! written — a chunk skipped that was needed shows up as a wrong value.

use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::read::{ReadQuery, ResultOrder};

/// Rows and columns of the domain, and of a space tile: a 256×256 tile of
/// INT64 is 512 KiB, eight 64 KiB chunks of 32 rows each.
const SIDE: i64 = 512;
const TILE: i64 = 256;

fn first(r: i64, c: i64) -> i64 {
    r * 1000 + c
}

/// The second fragment overwrites rows 100..=399, columns 50..=299.
fn second(r: i64, c: i64) -> Option<i64> {
    ((100..=399).contains(&r) && (50..=299).contains(&c)).then(|| -(r * 1000 + c))
}

fn valid(r: i64, c: i64) -> bool {
    (r + c) % 3 != 0
}

/// The string written at (r, c) by the first fragment (`second` = false)
/// or the second: lengths from 0 to 11 bytes, so no two cells line up
/// with the chunks the same way.
fn text(r: i64, c: i64, second: bool) -> String {
    let tag = if second { "s" } else { "f" };
    let body = format!("{tag}{r}.{c}");
    body[..((r * 7 + c * 3) % 12).min(body.len() as i64) as usize].to_string()
}

fn quoted(values: impl Iterator<Item = String>) -> String {
    list(values.map(|v| format!("{v:?}")))
}

fn list(values: impl Iterator<Item = String>) -> String {
    values.collect::<Vec<_>>().join(",")
}

#[test]
fn subarrays_through_multi_chunk_tiles_read_the_written_cells() {
    let cells = |rows: std::ops::RangeInclusive<i64>, cols: std::ops::RangeInclusive<i64>| {
        rows.flat_map(move |r| cols.clone().map(move |c| (r, c)))
            .collect::<Vec<_>>()
    };
    let all = cells(0..=SIDE - 1, 0..=SIDE - 1);
    let patch = cells(100..=399, 50..=299);
    let recipe = format!(
        r#"id = "dense_chunks"
title = "dense_chunks"
level = "required"
[schema]
type = "dense"
dims = [
  {{ name = "r", type = "INT64", domain = [0, {max}], tile = {TILE} }},
  {{ name = "c", type = "INT64", domain = [0, {max}], tile = {TILE} }},
]
attrs = [
  {{ name = "a", type = "INT64", filters = [{{ name = "ZSTD", level = 1 }}] }},
  {{ name = "n", type = "INT64", nullable = true }},
  {{ name = "s", type = "STRING_ASCII", cell_val_num = "var", nullable = true, filters = [{{ name = "ZSTD", level = 1 }}] }},
]

[[steps]]
op = "write"
timestamp = 10
subarray = [[0, {max}], [0, {max}]]
data = {{ a = [{a1}], n = [{a1}], s = [{s1}] }}
validity = {{ n = [{v1}], s = [{v1}] }}

[[steps]]
op = "write"
timestamp = 20
subarray = [[100, 399], [50, 299]]
data = {{ a = [{a2}], n = [{a2}], s = [{s2}] }}
validity = {{ n = [{v2}], s = [{v2}] }}
"#,
        max = SIDE - 1,
        a1 = list(all.iter().map(|&(r, c)| first(r, c).to_string())),
        v1 = list(all.iter().map(|&(r, c)| u8::from(valid(r, c)).to_string())),
        s1 = quoted(all.iter().map(|&(r, c)| text(r, c, false))),
        s2 = quoted(patch.iter().map(|&(r, c)| text(r, c, true))),
        a2 = list(
            patch
                .iter()
                .map(|&(r, c)| second(r, c).unwrap().to_string())
        ),
        v2 = list(
            patch
                .iter()
                .map(|&(r, c)| u8::from(valid(r, c)).to_string())
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    tiledb_conformance::recipe::replay_case(&recipe, dir.path()).expect("replay");
    let array = Array::open_path(dir.path().join("array"), OpenOptions::default()).unwrap();

    // Boxes whose edges fall on, just before and just after chunk (32-row)
    // and tile (256) boundaries, plus a deterministic spread of others.
    let mut boxes: Vec<[(i64, i64); 2]> = vec![
        [(0, SIDE - 1), (0, SIDE - 1)],
        [(31, 32), (0, 511)],
        [(255, 256), (255, 256)],
        [(63, 64), (200, 300)],
        [(96, 415), (40, 480)],
        [(511, 511), (0, 511)],
        [(0, 0), (511, 511)],
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |below: i64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % below as u64) as i64
    };
    for _ in 0..40 {
        let (r0, c0) = (next(SIDE), next(SIDE));
        let (r1, c1) = (r0 + next(SIDE - r0), c0 + next(SIDE - c0));
        boxes.push([(r0, r1), (c0, c1)]);
    }

    for [(r0, r1), (c0, c1)] in boxes {
        for layout in [ResultOrder::RowMajor, ResultOrder::ColMajor] {
            let ranges = vec![
                vec![(r0.to_le_bytes().to_vec(), r1.to_le_bytes().to_vec())],
                vec![(c0.to_le_bytes().to_vec(), c1.to_le_bytes().to_vec())],
            ];
            let result = array
                .read(&ReadQuery {
                    ranges,
                    layout,
                    skip_coordinates: true,
                    ..Default::default()
                })
                .unwrap();
            let expected: Vec<(i64, i64)> = match layout {
                ResultOrder::ColMajor => (c0..=c1)
                    .flat_map(|c| (r0..=r1).map(move |r| (r, c)))
                    .collect(),
                _ => cells(r0..=r1, c0..=c1),
            };
            let what = format!("box rows {r0}..={r1} cols {c0}..={c1}, {layout:?}");
            assert_eq!(result.cell_count() as usize, expected.len(), "{what}");
            let a = &result.attributes[0];
            let n = &result.attributes[1];
            let s = &result.attributes[2];
            let validity = n.validity.as_ref().expect("n is nullable");
            let s_offsets = s.offsets.as_ref().expect("s is var-sized");
            let s_validity = s.validity.as_ref().expect("s is nullable");
            assert_eq!(s_offsets.len(), expected.len() + 1, "{what}");
            for (i, &(r, c)) in expected.iter().enumerate() {
                let want = second(r, c).unwrap_or_else(|| first(r, c));
                let got = |col: &tiledb_runtime::read::Column| {
                    i64::from_le_bytes(col.data[i * 8..i * 8 + 8].try_into().unwrap())
                };
                assert_eq!(got(a), want, "a at ({r}, {c}), {what}");
                assert_eq!(got(n), want, "n at ({r}, {c}), {what}");
                assert_eq!(
                    validity[i] != 0,
                    valid(r, c),
                    "validity at ({r}, {c}), {what}"
                );
                let want_text = text(r, c, second(r, c).is_some());
                let got_text = &s.data[s_offsets[i] as usize..s_offsets[i + 1] as usize];
                assert_eq!(got_text, want_text.as_bytes(), "s at ({r}, {c}), {what}");
                assert_eq!(
                    s_validity[i] != 0,
                    valid(r, c),
                    "s validity at ({r}, {c}), {what}"
                );
            }
        }
    }
}
