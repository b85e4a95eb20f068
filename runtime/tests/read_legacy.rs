//! TileDB's legacy test arrays (`../shared/tiledb-test-arrays`, or
//! `$TILEDB_SHARED_DIR/tiledb-test-arrays`) read as TileDB 2.30 reads them.
//! The expected answers were produced by TileDB 2.30 through
//! `conformance/scripts/legacy_expected.py` and are committed under
//! `conformance/legacy/` (where the conformance runner reads them too).

mod common;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::read::{ReadQuery, ResultOrder};
use tiledb_runtime::ErrorClass;

fn legacy_dir() -> Option<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()?
        .to_path_buf();
    let shared = std::env::var_os("TILEDB_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("../shared"));
    let dir = shared.join("tiledb-test-arrays");
    if dir.is_dir() {
        Some(dir)
    } else {
        println!(
            "skipped: TileDB's legacy test arrays are not at {}",
            dir.display()
        );
        None
    }
}

fn sorted(rows: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = rows.iter().map(Value::to_string).collect();
    v.sort();
    v
}

#[test]
fn legacy_arrays_read_as_tiledb_2_30_reads_them() {
    let Some(dir) = legacy_dir() else { return };
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/legacy");
    let mut checked = 0;
    for name in [
        "non_split_coords_v1_4_0",
        "zero_var_chunks_v10",
        "sparse_array_v11",
    ] {
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(data.join(format!("legacy.{name}.expected.json"))).unwrap(),
        )
        .unwrap();
        let array = Array::open_path(dir.join(name), OpenOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for read in expected["reads"].as_array().unwrap() {
            let layout = ResultOrder::parse(read["layout"].as_str().unwrap()).unwrap();
            let result = array
                .read(&ReadQuery {
                    layout,
                    ..ReadQuery::default()
                })
                .unwrap_or_else(|e| panic!("{name} {layout:?}: {e}"));
            let (fields, cells) = tiledb_conformance::canonical::cells(&result, "dim");
            assert_eq!(fields, read["fields"], "{name}: fields");
            let want = read["cells"].as_array().unwrap();
            if read["ordered"] == json!(true) {
                assert_eq!(&cells, want, "{name} {layout:?}");
            } else {
                assert_eq!(sorted(&cells), sorted(want), "{name} {layout:?}");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 10);
}

#[test]
fn a_format_version_above_ours_is_unsupported() {
    let Some(dir) = legacy_dir() else { return };
    let Err(err) = Array::open_path(
        dir.join("experimental_array_vUINT32_MAX"),
        OpenOptions::default(),
    ) else {
        panic!("an array of format version u32::MAX must be refused")
    };
    assert_eq!(err.class(), ErrorClass::Unsupported, "{err}");
    assert!(
        err.to_string()
            .contains("unsupported format version 4294967295"),
        "{err}"
    );
}

#[test]
fn tiledb_1_3_dense_array_reads() {
    let Some(dir) = legacy_dir() else { return };
    let array = Array::open_path(dir.join("dense_array_v1_3_0"), OpenOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let result = array
        .read(&ReadQuery::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let a = &result.attributes[0];
    let values: Vec<i32> = (0..a.len())
        .map(|i| i32::from_le_bytes(a.cell(i).0.try_into().unwrap()))
        .collect();
    // The array's test in TileDB writes 1..=16 into its 4x4 domain.
    assert_eq!(values, (1..=16).collect::<Vec<i32>>());
}

/// The TileDB 1.3 schema is a layout of spec/legacy13.toml: its payload
/// reads as `Legacy13ArraySchema` and writes back byte for byte.
#[test]
fn tiledb_1_3_schema_round_trips_through_the_spec() {
    use tiledb_runtime::format::generated::Legacy13ArraySchema;
    use tiledb_runtime::format::io::{read_exact_from, write_to_vec};
    let Some(dir) = legacy_dir() else { return };
    let bytes = std::fs::read(dir.join("dense_array_v1_3_0/__array_schema.tdb")).expect("schema");
    assert!(tiledb_runtime::schema::legacy13::is_v13_generic_tile(
        &bytes
    ));
    let payload = tiledb_runtime::schema::legacy13::read_generic_tile(&bytes).expect("payload");
    let schema: Legacy13ArraySchema =
        read_exact_from(&payload, (), "Legacy13ArraySchema").expect("schema");
    assert_eq!(schema.library_version[..2], [1, 3]);
    assert_eq!(schema.dimensions.len(), 2);
    let written = write_to_vec(&schema, (), "Legacy13ArraySchema").expect("write");
    assert_eq!(written, payload);
}
