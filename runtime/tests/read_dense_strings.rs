//! Dense reads of strings that RLE or DICTIONARY encode whole (no offsets
//! tile is stored): where a read takes a whole tile, the tile is decoded
//! straight into the result, strings and offsets
//! (`read::dense::copy_var::scatter_strings_band`); where it takes part of
//! one, the tile is decoded on its own first. TileDB 2.30 writes the array
//! (four fragments: whole tiles, one tile exactly, a part of two tiles, a
//! tile past a gap of fill) and reads every box; ours must give the same
//! cells, offsets and validity.
//!
//! Needs the oracle (`common::tiledb_python`); without one the test prints
//! why it skips.

mod common;

use serde_json::{json, Value};

/// Words of every length class the decoder copies differently: empty,
/// short, exactly 32 bytes (one block), and longer than a block.
const WORDS: [&str; 8] = [
    "",
    "a",
    "tile",
    "dictionary",
    "0123456789abcdef0123456789abcdef",
    "a string longer than one block of thirty-two bytes",
    "ünïcödé",
    "run",
];

/// The value written at cell `i` by fragment `fragment`: runs of equal
/// strings (what RLE encodes), and a vocabulary (what DICTIONARY encodes).
fn word(i: i64, fragment: i64) -> &'static str {
    WORDS[((i / 3 + fragment * 5) % WORDS.len() as i64) as usize]
}

fn valid(i: i64, fragment: i64) -> bool {
    (i + fragment) % 4 != 1
}

fn write(fragment: i64, timestamp: u64, lo: i64, hi: i64) -> Value {
    let strings: Vec<&str> = (lo..=hi).map(|i| word(i, fragment)).collect();
    let ascii: Vec<String> = strings
        .iter()
        .map(|s| s.chars().filter(char::is_ascii).collect())
        .collect();
    let validity: Vec<u8> = (lo..=hi).map(|i| u8::from(valid(i, fragment))).collect();
    json!({
        "op": "write",
        "timestamp": timestamp,
        "subarray": [[lo, hi]],
        "data": {
            "rle": ascii,
            "dict": ascii,
            "dict_zstd": ascii,
            "dict_null": ascii,
            "utf8": strings,
        },
        "validity": { "dict_null": validity },
    })
}

#[test]
fn strings_encoded_whole_read_as_tiledb_reads_them() {
    let Some(python) = common::tiledb_python() else {
        println!("skipped: no TileDB oracle (.venv-tiledb in the workspace, or $TILEDB_PY)");
        return;
    };
    let var = |name: &str, datatype: &str, filters: Value| json!({ "name": name, "type": datatype, "cell_val_num": "var", "filters": filters });
    let mut dict_null = var(
        "dict_null",
        "STRING_ASCII",
        json!([{ "name": "DICTIONARY" }]),
    );
    dict_null["nullable"] = json!(true);
    let mut dict = var("dict", "STRING_ASCII", json!([{ "name": "DICTIONARY" }]));
    dict["fill"] = json!("~fill~");
    let schema = json!({
        "type": "dense",
        "dims": [{ "name": "i", "type": "INT64", "domain": [0, 1199], "tile": 100 }],
        "attrs": [
            var("rle", "STRING_ASCII", json!([{ "name": "RLE" }])),
            dict,
            var("dict_zstd", "STRING_ASCII", json!([{ "name": "DICTIONARY" }, { "name": "ZSTD", "level": 1 }])),
            dict_null,
            var("utf8", "STRING_UTF8", json!([{ "name": "DICTIONARY" }])),
        ],
    });
    // Tiles 0-8 whole; tile 2 again, exactly; part of tiles 4 and 5; tile
    // 10, after tile 9 that no fragment writes (fill), and before tile 11.
    let steps = vec![
        write(1, 10, 0, 899),
        write(2, 20, 200, 299),
        write(3, 30, 450, 520),
        write(4, 40, 1000, 1099),
    ];
    let boxes: [(i64, i64); 9] = [
        (0, 1199),
        (200, 299),
        (100, 399),
        (0, 899),
        (900, 999),
        (430, 1150),
        (250, 260),
        (500, 699),
        (1000, 1099),
    ];
    let mut reads = Vec::new();
    for (lo, hi) in boxes {
        for layout in ["row-major", "col-major", "global"] {
            reads.push(json!({ "id": format!("{lo}-{hi} {layout}"), "layout": layout, "ranges": [[[lo, hi]]] }));
        }
    }
    let case = json!({ "id": "dense_strings", "schema": schema, "steps": steps, "reads": reads });

    let dir = tempfile::tempdir().unwrap();
    let scripts = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/scripts");
    let expected = common::python_json(
        &python,
        r#"
import json, sys
spec = json.loads(sys.argv[1])
sys.path.insert(0, spec["scripts"])
import tdbcase
case = spec["case"]
tdbcase.replay(case, spec["dir"])
print(json.dumps([dict(id=r["id"], **tdbcase.run_read(spec["dir"], case, r)) for r in case["reads"]]))
"#,
        &json!({ "scripts": scripts, "case": case, "dir": dir.path() }),
    );
    let mut failures = Vec::new();
    for (read, exp) in reads.iter().zip(expected.as_array().unwrap()) {
        assert_eq!(read["id"], exp["id"]);
        assert!(
            exp.get("error").is_none(),
            "TileDB failed {}: {exp}",
            read["id"]
        );
        let outcome = common::run_read(dir.path(), &case, read)
            .map_err(|e| format!("error: {e}"))
            .and_then(|actual| common::compare(exp, &actual));
        if let Err(message) = outcome {
            failures.push(format!("{}: {message}", read["id"]));
        }
    }
    assert!(
        failures.is_empty(),
        "{} read(s) differ from TileDB:\n{}",
        failures.len(),
        failures.join("\n")
    );

    // A dictionary id past the dictionary, in the tile a read decodes in
    // place (the last fragment's only tile, the last byte of its `dict`
    // data: the chunk's ids follow its metadata), is an error that names
    // the file, the byte offset, the tile and the field.
    let mut fragments: Vec<_> = std::fs::read_dir(dir.path().join("array/__fragments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    fragments.sort();
    let var_file = fragments.last().unwrap().join("a1_var.tdb");
    let mut bytes = std::fs::read(&var_file).unwrap();
    *bytes.last_mut().unwrap() = 0xFF;
    std::fs::write(&var_file, &bytes).unwrap();
    let array = tiledb_runtime::array::Array::open_path(
        dir.path().join("array"),
        tiledb_runtime::array::OpenOptions::default(),
    )
    .unwrap();
    let error = array
        .read(&tiledb_runtime::read::ReadQuery {
            ranges: vec![vec![(
                1000i64.to_le_bytes().to_vec(),
                1099i64.to_le_bytes().to_vec(),
            )]],
            attributes: Some(vec!["dict".into()]),
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
    // The file's only tile starts at byte 0, its one chunk after the
    // chunk count (8 bytes).
    for part in [
        "a1_var.tdb",
        "byte 8",
        "tile 0",
        "DICTIONARY, dictionary id",
    ] {
        assert!(
            error.contains(part),
            "{part:?} is not in the error: {error}"
        );
    }
}
