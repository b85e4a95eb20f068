//! Arrays of format versions 3 to 9, which no writer at hand produces any
//! more (tiledb-py for this Python writes only format 22), written by the
//! down-version writer of `old_versions/` from the generated layouts at each
//! version: a dense array of two dimensions and three attributes (one
//! var-sized), a sparse one of two dimensions with a var-sized attribute,
//! and a sparse one of one dimension. Their fragment metadata files end
//! with the footer and no length trailer (every dimension is fixed-sized),
//! so a reader finds the footer only through its size computed from the
//! schema: spec/'s `FragmentFooter.known_size`.
//!
//! TileDB 2.30 (tiledb-py in `.venv-tiledb`) reads every array and returns
//! the cells written; our reader returns the same cells; a footer region
//! one u64 off the computed size is refused naming the file, the offset
//! and the field; and the generated size equals the length of the footer
//! the generated layout writes, for every version and shape, so a wrong
//! formula fails here. `tdb explain` attributes every byte of every file
//! of these arrays, the footer and the tiles its offsets point at holding
//! the values written.

mod common;
mod old_versions;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use old_versions::{footer_bytes, Attr, Dim, OldArray};
use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::explain::{coverage, explain_file, FileKind, Span};
use tiledb_runtime::format::generated::{
    Datatype, DimensionShape, FragmentFooter, FragmentFooterBinReadArgs, NDRectangle, Range,
};
use tiledb_runtime::format::io::read_exact_from;
use tiledb_runtime::read::ReadQuery;
use tiledb_runtime::{Error, ErrorClass};

const VERSIONS: std::ops::RangeInclusive<u32> = 3..=9;

fn int32(v: i32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn float64(v: f64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn text(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn dim(name: &'static str, lo: i64, hi: i64, extent: i64) -> Dim {
    Dim {
        name,
        lo,
        hi,
        extent,
    }
}

fn attr(name: &'static str, datatype: Datatype) -> Attr {
    Attr { name, datatype }
}

/// The three arrays, by name.
fn arrays() -> Vec<(&'static str, OldArray)> {
    let dense = OldArray {
        dense: true,
        dims: vec![dim("rows", 1, 2, 2), dim("cols", 1, 2, 2)],
        attrs: vec![
            attr("a", Datatype::Int32),
            attr("s", Datatype::Char),
            attr("b", Datatype::Float64),
        ],
        coords: Vec::new(),
        values: vec![
            vec![int32(1), int32(-2), int32(3), int32(40)],
            vec![text("a"), text("bb"), text(""), text("dddd")],
            vec![float64(0.5), float64(-1.25), float64(1e10), float64(3.0)],
        ],
    };
    let sparse = OldArray {
        dense: false,
        dims: vec![dim("x", 1, 4, 2), dim("y", 1, 4, 2)],
        attrs: vec![attr("a", Datatype::Int32), attr("s", Datatype::Char)],
        // Global order: space tiles row-major, then cells row-major.
        coords: vec![vec![1, 1], vec![2, 3], vec![4, 4]],
        values: vec![
            vec![int32(7), int32(8), int32(9)],
            vec![text("seven"), text("eight"), text("nine")],
        ],
    };
    let sparse_1d = OldArray {
        dense: false,
        dims: vec![dim("d", 0, 99, 10)],
        attrs: vec![attr("b", Datatype::Float64)],
        coords: vec![vec![3], vec![7]],
        values: vec![vec![float64(2.5), float64(-7.0)]],
    };
    vec![
        ("dense", dense),
        ("sparse", sparse),
        ("sparse_1d", sparse_1d),
    ]
}

/// The cells written: per cell, the bytes of each dimension then each
/// attribute, hex-encoded, sorted.
fn written_rows(array: &OldArray) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = array
        .cell_coords()
        .iter()
        .enumerate()
        .map(|(i, coords)| {
            let mut row: Vec<String> = coords.iter().map(|c| hex(&c.to_le_bytes())).collect();
            row.extend(array.values.iter().map(|column| hex(&column[i])));
            row
        })
        .collect();
    rows.sort();
    rows
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The cells our reader returns, as [`written_rows`].
fn our_rows(dir: &Path) -> Result<Vec<Vec<String>>, Error> {
    let array = Array::open_path(dir, OpenOptions::default())?;
    let result = array.read(&ReadQuery::default())?;
    let columns: Vec<_> = result.dimensions.iter().chain(&result.attributes).collect();
    let mut rows: Vec<Vec<String>> = (0..result.cell_count())
        .map(|i| columns.iter().map(|c| hex(c.cell(i).0)).collect())
        .collect();
    rows.sort();
    Ok(rows)
}

/// What TileDB 2.30 reads from each array: the rows as [`written_rows`], or
/// its error.
const TILEDB_READ: &str = r#"
import json, sys
import numpy as np
import tiledb
out = {}
for path in sys.argv[1:]:
    try:
        with tiledb.open(path) as A:
            data = A.query(dims=True)[:]
            names = [d.name for d in A.schema.domain] + [a.name for a in A.schema]
            flat = {n: data[n].ravel() for n in names}
            def raw(v):
                if isinstance(v, bytes):
                    return v.hex()
                if isinstance(v, str):
                    return v.encode().hex()
                return np.asarray(v).tobytes().hex()
            rows = [[raw(flat[n][i]) for n in names] for i in range(len(flat[names[0]]))]
            out[path] = {"rows": sorted(rows)}
    except Exception as e:
        out[path] = {"error": f"{type(e).__name__}: {e}"}
print(json.dumps(out))
"#;

fn tiledb_rows(python: &Path, dirs: &[PathBuf]) -> BTreeMap<String, serde_json::Value> {
    let run = Command::new(python)
        .arg("-c")
        .arg(TILEDB_READ)
        .args(dirs)
        .output()
        .expect("run tiledb-py");
    assert!(
        run.status.success(),
        "tiledb-py failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&run.stdout).expect("tiledb-py's JSON")
}

/// The footer the writer put at the end of the file, found by the size
/// spec/ computes from the version in the fragment's name and the schema.
fn footer_region(dir: &Path, array: &OldArray, version: u32) -> (PathBuf, Vec<u8>, u64) {
    let fragment = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("one fragment folder");
    let metadata = fragment.join("__fragment_metadata.tdb");
    let bytes = std::fs::read(&metadata).unwrap();
    let shapes = vec![
        DimensionShape {
            var: false,
            coord_size: 8,
        };
        array.dims.len()
    ];
    let size = FragmentFooter::known_size(version.max(4), array.attrs.len() as u64, &shapes)
        .expect("a v3-9 footer with fixed dimensions has a known size");
    (metadata, bytes, size)
}

#[test]
fn tiledb_and_our_reader_read_versions_3_to_9_through_the_computed_footer_size() {
    let work = tempfile::tempdir().unwrap();
    let mut dirs = Vec::new();
    for version in VERSIONS {
        for (name, array) in arrays() {
            let dir = work.path().join(format!("{name}_v{version}"));
            array.write(&dir, version);
            // The file ends with the footer, no trailer: its last
            // `known_size` bytes are exactly the footer written.
            let (_, bytes, size) = footer_region(&dir, &array, version);
            let region = &bytes[bytes.len() - size as usize..];
            assert!(
                region.starts_with(&version.to_le_bytes()),
                "{name} v{version}: the footer starts {size} bytes before the end"
            );
            let rows = our_rows(&dir).unwrap_or_else(|e| panic!("{name} v{version}: {e}"));
            assert_eq!(rows, written_rows(&array), "{name} v{version}: our reader");
            dirs.push((dir, written_rows(&array)));
        }
    }
    let Some(python) = common::tiledb_python() else {
        println!("skipped the TileDB comparison: no .venv-tiledb (set TILEDB_PY)");
        return;
    };
    let paths: Vec<PathBuf> = dirs.iter().map(|(d, _)| d.clone()).collect();
    let read = tiledb_rows(&python, &paths);
    let mut refused = Vec::new();
    for (dir, written) in &dirs {
        let answer = &read[&dir.display().to_string()];
        if let Some(error) = answer.get("error") {
            refused.push(format!("{}: {error}", dir.display()));
            continue;
        }
        let rows: Vec<Vec<String>> = serde_json::from_value(answer["rows"].clone()).unwrap();
        assert_eq!(&rows, written, "{}: TileDB 2.30", dir.display());
    }
    assert!(
        refused.is_empty(),
        "TileDB 2.30 refused:\n{}",
        refused.join("\n")
    );
}

/// A footer region one u64 away from the computed size — what a wrong
/// formula would give — is refused as corrupt, naming the metadata file,
/// the byte offset and the footer's field (TileDB refuses it too).
#[test]
fn a_footer_one_u64_off_the_computed_size_is_refused_naming_file_offset_and_field() {
    let work = tempfile::tempdir().unwrap();
    let mut damaged = Vec::new();
    for version in VERSIONS {
        for (name, array) in arrays() {
            let dir = work.path().join(format!("{name}_v{version}"));
            array.write(&dir, version);
            let (metadata, mut bytes, _) = footer_region(&dir, &array, version);
            // Eight more bytes at the end: the computed size now starts the
            // footer eight bytes late, as a formula eight bytes short would.
            bytes.extend(u64::MAX.to_le_bytes());
            std::fs::write(&metadata, &bytes).unwrap();
            let err = our_rows(&dir).expect_err("a misplaced footer");
            assert_eq!(err.class(), ErrorClass::Corrupt, "{name} v{version}: {err}");
            let Error::Corrupt { at, .. } = &err else {
                unreachable!()
            };
            assert!(
                at.file.ends_with("__fragment_metadata.tdb"),
                "{name} v{version}: {err}"
            );
            assert!(
                at.offset >= (bytes.len() as u64).saturating_sub(1 << 12),
                "{name} v{version}: the offset is within the footer: {err}"
            );
            assert!(
                at.field.contains("FragmentFooter"),
                "{name} v{version}: {err}"
            );
            damaged.push(dir);
        }
    }
    let Some(python) = common::tiledb_python() else {
        println!("skipped the TileDB comparison: no .venv-tiledb (set TILEDB_PY)");
        return;
    };
    // TileDB, which takes the footer from the same computed size, refuses them too.
    let read = tiledb_rows(&python, &damaged);
    for dir in &damaged {
        let answer = &read[&dir.display().to_string()];
        assert!(
            answer.get("error").is_some(),
            "{}: TileDB read {answer}",
            dir.display()
        );
    }
}

/// The generated size is the length of the footer the generated layout
/// writes, for every version it covers and every shape tried; elsewhere
/// (versions before 3 or from 10, or a var-sized dimension) it is `None`.
#[test]
fn the_known_size_is_the_written_footer_length() {
    let fixed = |coord_size| DimensionShape {
        var: false,
        coord_size,
    };
    let shapes = [
        vec![fixed(8)],
        vec![fixed(4), fixed(4), fixed(4)],
        vec![fixed(8), fixed(1)],
    ];
    for version in 1..=23u32 {
        for dims in &shapes {
            for num_attributes in [0u64, 1, 5] {
                let known = FragmentFooter::known_size(version, num_attributes, dims);
                if !VERSIONS.contains(&version) {
                    assert_eq!(known, None, "v{version}");
                    continue;
                }
                let slots = if version >= 5 {
                    num_attributes + 1 + dims.len() as u64
                } else {
                    num_attributes + 1
                };
                let var_slots = if version >= 5 { slots } else { num_attributes };
                let footer = FragmentFooter {
                    version,
                    non_empty_domain: NDRectangle {
                        ranges: dims
                            .iter()
                            .map(|d| Range {
                                data: vec![0; 2 * d.coord_size as usize],
                                ..Default::default()
                            })
                            .collect(),
                    },
                    file_sizes: vec![1; slots as usize],
                    file_var_sizes: vec![2; var_slots as usize],
                    file_validity_sizes: Some(vec![3; slots as usize]),
                    tile_offsets_offsets: vec![4; slots as usize],
                    tile_var_offsets_offsets: vec![5; var_slots as usize],
                    tile_var_sizes_offsets: vec![6; var_slots as usize],
                    tile_validity_offsets_offsets: Some(vec![7; slots as usize]),
                    ..Default::default()
                };
                let written = footer_bytes(&footer, num_attributes, dims).len() as u64;
                assert_eq!(
                    known,
                    Some(written),
                    "v{version}, {num_attributes} attributes, {dims:?}"
                );
            }
        }
        let var = [DimensionShape {
            var: true,
            coord_size: 0,
        }];
        assert_eq!(
            FragmentFooter::known_size(version, 1, &var),
            None,
            "v{version} var"
        );
    }
}

/// `tdb check` (`check_array`) finds each fragment's footer by the same
/// computed size: every array of formats 3-9 checks clean with its
/// fragment metadata (footer, R-tree, tile tables) verified, and a footer
/// moved off that size or a damaged metadata tile is a finding naming the
/// metadata file (before, these fragments were left to the full read).
#[test]
fn check_verifies_the_metadata_of_versions_3_to_9_and_finds_a_misplaced_footer_or_bad_tile() {
    use tiledb_runtime::check::{check_array, CheckOptions};
    let work = tempfile::tempdir().unwrap();
    for version in VERSIONS {
        for (name, array) in arrays() {
            let dir = work.path().join(format!("{name}_v{version}"));
            array.write(&dir, version);
            let report = check_array(&dir, &CheckOptions::default());
            assert!(
                report.is_clean(),
                "{name} v{version}: {:?}",
                report.findings
            );
            assert!(
                report
                    .notes
                    .iter()
                    .any(|n| n.message.contains("its metadata is verified")),
                "{name} v{version}: the metadata was not verified: {report:?}"
            );
            assert!(report.cells_read > 0, "{name} v{version}: {report:?}");

            let (metadata, bytes, size) = footer_region(&dir, &array, version);
            let mut moved = bytes.clone();
            moved.extend(u64::MAX.to_le_bytes());
            std::fs::write(&metadata, &moved).unwrap();
            let report = check_array(&dir, &CheckOptions::default());
            assert!(
                report
                    .findings
                    .iter()
                    .any(|f| f.class == ErrorClass::Corrupt
                        && f.file.ends_with("__fragment_metadata.tdb")
                        && f.field.contains("FragmentFooter")),
                "{name} v{version}: a misplaced footer: {:?}",
                report.findings
            );

            // The R-tree's generic tile opens the file: its persisted size
            // (after the version, the persisted size field at byte 4) made
            // larger than the file.
            let mut bad_tile = bytes.clone();
            assert!(bad_tile.len() as u64 > size + 12, "{name} v{version}");
            bad_tile[4..12].copy_from_slice(&u64::MAX.to_le_bytes());
            std::fs::write(&metadata, &bad_tile).unwrap();
            let report = check_array(&dir, &CheckOptions::default());
            assert!(
                report
                    .findings
                    .iter()
                    .any(|f| f.class == ErrorClass::Corrupt
                        && f.file.ends_with("__fragment_metadata.tdb")),
                "{name} v{version}: a damaged R-tree tile: {:?}",
                report.findings
            );
        }
    }
}

/// Every file under `dir`, sorted.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
    out.sort();
}

/// Every span named `name` under `span`, in order.
fn spans_named<'a>(span: &'a Span, name: &str, out: &mut Vec<&'a Span>) {
    if span.name == name {
        out.push(span);
    }
    for child in &span.children {
        spans_named(child, name, out);
    }
}

fn values_of(span: &Span, name: &str) -> Vec<String> {
    let mut found = Vec::new();
    spans_named(span, name, &mut found);
    found
        .iter()
        .map(|s| s.value.clone().unwrap_or_default())
        .collect()
}

/// Each payload under `span` (in payload offsets), to check it is covered
/// whole too.
fn payloads<'a>(span: &'a Span, out: &mut Vec<&'a Span>) {
    if span.name == "payload" && span.space == "payload" {
        out.push(span);
    }
    for child in &span.children {
        payloads(child, out);
    }
}

/// `tdb explain` explains every byte of every file of versions 3 to 9: the
/// footer found by its computed size (no trailer), every generic tile its
/// offsets point at, and the data tiles with their cell counts. The
/// explained values are the footer the writer wrote (read back with the
/// generated layout) and the cells it wrote.
#[test]
fn explain_attributes_every_byte_of_versions_3_to_9() {
    let work = tempfile::tempdir().unwrap();
    for version in VERSIONS {
        for (name, array) in arrays() {
            let dir = work.path().join(format!("{name}_v{version}"));
            array.write(&dir, version);
            let mut all = Vec::new();
            files_under(&dir, &mut all);
            for path in all {
                let what = format!("{name} v{version} {}", path.display());
                let bytes = std::fs::read(&path).unwrap();
                let explained =
                    explain_file(&path, &bytes, None).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(explained.incomplete, None, "{what}");
                let size = bytes.len() as u64;
                let cover = coverage(&explained.root, "file", size);
                assert_eq!(cover.unexplained, Vec::new(), "{what}");
                assert_eq!(cover.covered, size, "{what}");
                let mut inner = Vec::new();
                payloads(&explained.root, &mut inner);
                for p in inner {
                    let c = coverage(p, "payload", p.size);
                    assert_eq!(c.unexplained, Vec::new(), "{what}: payload at {}", p.offset);
                }
                match explained.kind {
                    FileKind::FragmentMetadata => {
                        check_footer(&what, &explained.root, &bytes, &array, version);
                    }
                    FileKind::DataTiles => check_data_tiles(&what, &explained.root, &path, &array),
                    _ => {}
                }
            }
        }
    }
}

/// The explained footer: at the file's last `known_size` bytes, no
/// trailer, its values those written, and each offset it holds followed to
/// the generic tile explained there.
fn check_footer(what: &str, root: &Span, bytes: &[u8], array: &OldArray, version: u32) {
    let shapes = vec![
        DimensionShape {
            var: false,
            coord_size: 8,
        };
        array.dims.len()
    ];
    let attributes = array.attrs.len() as u64;
    let size = FragmentFooter::known_size(version.max(4), attributes, &shapes).unwrap();
    let start = bytes.len() as u64 - size;
    let args = FragmentFooterBinReadArgs::builder()
        .num_attributes(attributes)
        .dims(shapes)
        .finalize();
    let written: FragmentFooter =
        read_exact_from(&bytes[start as usize..], args, "FragmentFooter").unwrap();
    let mut footer = Vec::new();
    spans_named(root, "FragmentFooter", &mut footer);
    assert_eq!(footer.len(), 1, "{what}: one footer");
    assert_eq!((footer[0].offset, footer[0].size), (start, size), "{what}");
    assert!(
        values_of(root, "FooterLength").is_empty(),
        "{what}: no trailer"
    );
    assert_eq!(
        values_of(root, "FragmentFooter.version"),
        [version.to_string()],
        "{what}"
    );
    assert_eq!(
        values_of(root, "FragmentFooter.rtree_offset"),
        [written.rtree_offset.to_string()],
        "{what}"
    );
    let mut tiles: Vec<(String, u64)> = vec![("rtree".into(), written.rtree_offset)];
    for (list, offsets) in [
        ("tile_offsets", &written.tile_offsets_offsets),
        ("tile_var_offsets", &written.tile_var_offsets_offsets),
        ("tile_var_sizes", &written.tile_var_sizes_offsets),
    ] {
        let mut spans = Vec::new();
        spans_named(root, &format!("FragmentFooter.{list}_offsets"), &mut spans);
        assert_eq!(spans.len(), 1, "{what}: {list}_offsets");
        let explained: Vec<u64> = (spans[0].children.iter())
            .map(|element| {
                element
                    .value
                    .as_deref()
                    .unwrap_or_default()
                    .parse()
                    .unwrap()
            })
            .collect();
        assert_eq!(&explained, offsets, "{what}: {list}_offsets");
        tiles.extend(
            offsets
                .iter()
                .enumerate()
                .map(|(i, &o)| (format!("{list}[{i}]"), o)),
        );
    }
    for (i, &o) in written
        .tile_validity_offsets_offsets
        .iter()
        .flatten()
        .enumerate()
    {
        tiles.push((format!("tile_validity_offsets[{i}]"), o));
    }
    for (tile, offset) in tiles {
        let mut found = Vec::new();
        spans_named(root, &format!("{tile}: generic tile"), &mut found);
        assert_eq!(found.len(), 1, "{what}: {tile}");
        assert_eq!(found[0].offset, offset, "{what}: {tile}");
    }
}

/// A data file's one tile, with the number of cells written.
fn check_data_tiles(what: &str, root: &Span, path: &Path, array: &OldArray) {
    let tiles: Vec<&Span> = root.children.iter().collect();
    assert_eq!(tiles.len(), 1, "{what}: one tile");
    let cells = array.cell_coords().len();
    let value = tiles[0].value.clone().unwrap_or_default();
    assert!(
        value.contains(&format!("; {cells} cell(s) of ")),
        "{what}: {value} ({})",
        path.display()
    );
}
