//! Float tiles holding NaN: each tile's minimum, maximum and sum, and the
//! fragment's, as TileDB 2.30 records them. TileDB's metadata generator
//! keeps the running minimum only while `min < value` (and the maximum
//! while `max > value`), so a NaN cell takes the place of both and the
//! next cell replaces it: the extremes restart after a NaN, and a tile
//! ending in NaN records NaN. TileDB (tiledb-py, in the test) writes the
//! same cells into a second array of the same schema; the tile metadata of
//! the two fragments must be equal byte for byte. Without the oracle venv
//! the test is skipped with a printed reason.

mod common;

use std::path::{Path, PathBuf};

use common::tiledb_python;
use serde_json::json;
use tiledb_runtime::array::Array;
use tiledb_runtime::directory::TimestampedName;
use tiledb_runtime::filter::Datatype;
use tiledb_runtime::fragment::{footer_region, parse_metadata_file, FragmentMetadataFile};
use tiledb_runtime::schema::{ArraySchema, AttributeSpec, DimensionSpec, SchemaBuilder};
use tiledb_runtime::storage::LocalStorage;
use tiledb_runtime::tile::generic::read_generic_tile;
use tiledb_runtime::write::{Column, Write};

/// Four cells a tile, NaN first, in the middle, last, everywhere, twice,
/// and between values that would be the extremes were NaN skipped.
const CELLS: [f64; 24] = [
    f64::NAN,
    1.0,
    2.0,
    3.0, //
    1.0,
    9.0,
    f64::NAN,
    5.0, //
    3.0,
    4.0,
    5.0,
    f64::NAN, //
    f64::NAN,
    f64::NAN,
    f64::NAN,
    f64::NAN, //
    7.0,
    f64::NAN,
    f64::NAN,
    2.0, //
    -1.0,
    8.0,
    f64::NAN,
    -3.0,
];

/// The nullable attribute's validity: a null right after a NaN, a null
/// before one, and a tile whose only valid cells are NaN.
fn valid(i: usize) -> bool {
    !matches!(i, 2 | 5 | 11 | 14 | 16 | 19 | 21)
}

/// Writes the same cells with TileDB: `a` float64, `b` float32, `c`
/// nullable float64, one row-major write of the whole domain.
const TILEDB: &str = r#"
import json, sys, numpy as np, tiledb
spec = json.loads(sys.argv[1])
values = np.array([np.nan if v is None else v for v in spec["cells"]], dtype=np.float64)
with tiledb.open(spec["uri"], "w", timestamp=1) as A:
    ctx = tiledb.libtiledb.Context(A.ctx)
    q = tiledb.libtiledb.Query(ctx, A.array, tiledb.libtiledb.QueryType.WRITE)
    q.layout = tiledb.libtiledb.LayoutType.ROW_MAJOR
    sub = tiledb.libtiledb.Subarray(ctx, A.array)
    sub._add_dim_range(0, (np.int32(0), np.int32(len(values) - 1)))
    q.set_subarray(sub)
    a = values
    b = values.astype(np.float32)
    c = values.copy()
    valid = np.array(spec["valid"], dtype=np.uint8)
    q.set_data_buffer("a", a, len(a))
    q.set_data_buffer("b", b, len(b))
    q.set_data_buffer("c", c, len(c))
    q.set_validity_buffer("c", valid, len(valid))
    q._submit()
    q.finalize()
    del q
"#;

fn create(path: &Path) -> Array {
    let schema = SchemaBuilder::dense()
        .dimension(DimensionSpec::new::<i32>("d", 0, 23, Some(4)))
        .attribute(AttributeSpec::new("a", Datatype::Float64))
        .attribute(AttributeSpec::new("b", Datatype::Float32))
        .attribute(AttributeSpec::new("c", Datatype::Float64).nullable());
    Array::create_path(path, &schema).unwrap()
}

/// The one fragment's metadata file, loaded against the array's schema,
/// and the payload of its fragment-wide min/max/sum tile.
fn fragment(array: &Path) -> (FragmentMetadataFile, Vec<u8>) {
    let fragments: Vec<PathBuf> = std::fs::read_dir(array.join("__fragments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(fragments.len(), 1, "{fragments:?}");
    let bytes = std::fs::read(fragments[0].join("__fragment_metadata.tdb")).unwrap();
    let (head, _) = footer_region(&bytes).unwrap();
    let schema_name = String::from_utf8(head.schema_name.unwrap()).unwrap();
    let schema = ArraySchema::load(
        &LocalStorage::new(array),
        &ArraySchema::path_for(Some(&schema_name)).unwrap(),
        None,
    )
    .unwrap();
    let name = fragments[0].file_name().unwrap().to_string_lossy();
    let version = TimestampedName::parse(&name).unwrap().format_version();
    let file = parse_metadata_file(&bytes, &schema, None, version).unwrap();
    let mmsn = file
        .footer
        .fragment_mmsn_offset
        .expect("a fragment min/max tile");
    let tile = read_generic_tile(&bytes, mmsn, None).unwrap();
    (file, tile.payload)
}

#[test]
fn float_tile_extremes_restart_after_nan_as_in_tiledb() {
    let Some(python) = tiledb_python() else {
        println!("skipped: no .venv-tiledb, so no TileDB to compare with");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (ours, theirs) = (dir.path().join("ours"), dir.path().join("theirs"));
    let validity: Vec<bool> = (0..CELLS.len()).map(valid).collect();
    let f32s: Vec<f32> = CELLS.iter().map(|&v| v as f32).collect();
    create(&ours)
        .write(
            &Write::dense(
                vec![(0, 23)],
                vec![
                    Column::from_values("a", &CELLS),
                    Column::from_values("b", &f32s),
                    Column::from_values("c", &CELLS).with_validity(&validity),
                ],
            )
            .at(1),
        )
        .unwrap();
    create(&theirs);
    let cells: Vec<Option<f64>> = CELLS.iter().map(|v| (!v.is_nan()).then_some(*v)).collect();
    let spec = json!({"uri": theirs, "cells": cells, "valid": validity.iter().map(|&v| u8::from(v)).collect::<Vec<_>>()});
    let run = std::process::Command::new(python)
        .args(["-c", TILEDB, &spec.to_string()])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    let (ours, ours_mmsn) = fragment(&ours);
    let (theirs, theirs_mmsn) = fragment(&theirs);
    // The restart is what is being compared: were NaN skipped, the second
    // tile of `a` would have 1 and 9 for its extremes, not 5 and 5.
    let second_min = f64::from_le_bytes(theirs.tile_mins[0].fixed[8..16].try_into().unwrap());
    assert_eq!(second_min, 5.0, "TileDB restarts the minimum after NaN");
    for field in 0..3 {
        assert_eq!(
            ours.tile_mins[field], theirs.tile_mins[field],
            "tile minima of field {field}"
        );
        assert_eq!(
            ours.tile_maxes[field], theirs.tile_maxes[field],
            "tile maxima of field {field}"
        );
        assert_eq!(
            ours.tile_sums[field], theirs.tile_sums[field],
            "tile sums of field {field}"
        );
    }
    assert_eq!(ours_mmsn, theirs_mmsn, "the fragment's min/max/sum");
}
