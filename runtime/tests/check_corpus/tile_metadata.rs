//! Flipped bytes in data tiles that leave every file well formed: the
//! check recomputes the tile metadata the fragment records (min, max, sum)
//! and names the data file; and filtered tiles whose codec comes from the
//! compressor byte.

use std::path::{Path, PathBuf};

use tiledb_runtime::check::{check_array, CheckOptions, Report};
use tiledb_runtime::ErrorClass;

use crate::{copy_dir, corpus, files_of, show};

/// A bit flipped in an unfiltered data tile leaves every file well formed
/// (no checksum, no compressor to notice); only the tile metadata the
/// fragment records (min, max, sum, null count) can tell. The check
/// recomputes it from the cells and must name the disagreeing tile.
/// Every release whose corpus replays the core cases (formats 16–22).
const RELEASES: [&str; 7] = [
    "tiledb-2.13",
    "tiledb-2.14",
    "tiledb-2.15",
    "tiledb-2.16",
    "tiledb-2.17",
    "tiledb-2.19",
    "tiledb-2.30",
];

#[test]
fn unchecksummed_data_bit_flips_are_caught_by_tile_metadata() {
    let mut arrays: Vec<PathBuf> = [
        "sparse.attr.int8",
        "sparse.attr.uint16",
        "sparse.attr.int64",
        "sparse.attr.float32",
        "sparse.attr.float64",
    ]
    .iter()
    .map(|case| corpus("tiledb-2.30").join(case).join("array"))
    .collect();
    // The same recipe as written by every release of the corpus (formats 16-22).
    for producer in RELEASES {
        arrays.push(corpus(producer).join("sparse.basic.int32").join("array"));
    }
    let scratch = tempfile::tempdir().expect("a scratch folder");
    for (n, source) in arrays.iter().enumerate() {
        // The last byte is the top byte of the last cell's value.
        let (data, report) = flip_data_byte(source, &scratch.path().join(n.to_string()), 0);
        assert!(
            tile_metadata_reported(&data, &report),
            "{}: the flipped value is not reported:\n{}",
            source.display(),
            show(&report)
        );
    }
}

/// Copies `source` to `copy`, checks it is clean with tile metadata
/// compared, flips the top bit of the byte `from_end` bytes before the end
/// of its `a0.tdb` (one unfiltered, unchecksummed data file) and checks it
/// again. Returns the data file's path and the report.
fn flip_data_byte(source: &Path, copy: &Path, from_end: usize) -> (String, Report) {
    assert!(source.is_dir(), "{} is missing", source.display());
    copy_dir(source, copy);
    let clean = check_array(copy, &CheckOptions::default());
    assert!(clean.is_clean(), "{}: {}", source.display(), show(&clean));
    assert!(
        clean.tile_metadata_checked > 0,
        "{}: no tile metadata was compared",
        source.display()
    );
    let mut files = Vec::new();
    files_of(copy, copy, &mut files);
    let data = files
        .iter()
        .find(|f| f.ends_with("/a0.tdb"))
        .unwrap_or_else(|| panic!("{}: no a0.tdb", source.display()));
    let path = copy.join(data);
    let mut bytes = std::fs::read(&path).expect("read a0.tdb");
    let at = bytes.len() - 1 - from_end;
    bytes[at] ^= 0x80;
    std::fs::write(&path, bytes).expect("write a0.tdb");
    (data.clone(), check_array(copy, &CheckOptions::default()))
}

/// Whether `report` finds a tile of `data` (attribute 0's data file) whose
/// cells disagree with the min, max or sum its fragment metadata records:
/// the data file is named, not the metadata.
fn tile_metadata_reported(data: &str, report: &Report) -> bool {
    report.findings.iter().any(|f| {
        f.class == ErrorClass::Corrupt
            && f.file == data
            && (f.field.starts_with("tile_maxes[0] tile ")
                || f.field.starts_with("tile_mins[0] tile ")
                || f.field.starts_with("tile_sums[0] tile "))
    })
}

/// Dense tiles too: their metadata covers the cells inside the fragment's
/// non-empty domain, so a flipped written cell is reported and a flipped
/// padding cell (outside it, never read) is not.
#[test]
fn dense_bit_flips_in_written_cells_are_caught_and_padding_is_not_reported() {
    // Domain [0, 7], tiles of 4, cells 1..=5 written: the last tile holds
    // cells 4 and 5, then padding 6 and 7 at the end of the file.
    let padded: Vec<(PathBuf, usize)> = [
        ("dense.attr.int8", 1),
        ("dense.attr.int16", 2),
        ("dense.attr.int32", 4),
        ("dense.attr.int64", 8),
        ("dense.attr.float32", 4),
        ("dense.attr.float64", 8),
    ]
    .iter()
    .map(|(case, size)| (corpus("tiledb-2.30").join(case).join("array"), *size))
    .collect();
    // Rows 1-2 of a 4×4 domain in 2×2 tiles: the last byte is written data.
    let full: Vec<PathBuf> = RELEASES
        .iter()
        .map(|p| corpus(p).join("dense.basic.int32").join("array"))
        .collect();
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let mut n = 0;
    let mut flipped = |source: &Path, from_end: usize| {
        n += 1;
        flip_data_byte(source, &scratch.path().join(n.to_string()), from_end)
    };
    for (source, size) in &padded {
        // The top byte of cell 5, before the two padding cells.
        let (data, report) = flipped(source, 2 * size);
        assert!(
            tile_metadata_reported(&data, &report),
            "{}: the flipped cell 5 is not reported:\n{}",
            source.display(),
            show(&report)
        );
        // The top byte of padding cell 7.
        let (_, report) = flipped(source, 0);
        assert!(
            report.is_clean(),
            "{}: a flipped padding cell is reported:\n{}",
            source.display(),
            show(&report)
        );
    }
    for source in &full {
        let (data, report) = flipped(source, 0);
        assert!(
            tile_metadata_reported(&data, &report),
            "{}: the flipped last cell is not reported:\n{}",
            source.display(),
            show(&report)
        );
    }
}

/// A byte flipped inside a filtered data tile (bit width reduction, delta,
/// double delta: filters that decode whatever they are given) names the
/// data file and the tile's offset, never `__fragment_metadata.tdb`, whose
/// tiles are intact: whether the tile fails to decode or decodes to cells
/// that disagree with the min, max or sum recorded for them.
#[test]
fn a_flipped_byte_in_a_filtered_data_tile_names_the_data_file() {
    use tiledb_runtime::directory::TimestampedName;
    use tiledb_runtime::fragment::{footer_region, parse_metadata_file};
    use tiledb_runtime::schema::ArraySchema;
    let scratch = tempfile::tempdir().expect("a scratch folder");
    for (n, case) in [
        "sparse.filter.bit_width_reduction",
        "sparse.filter.double_delta",
        "sparse.filter.delta",
        "sparse.filter.zstd",
        "dense.filter.zstd",
    ]
    .iter()
    .enumerate()
    {
        let copy = scratch.path().join(n.to_string());
        copy_dir(&corpus("tiledb-2.30").join(case).join("array"), &copy);
        let mut files = Vec::new();
        files_of(&copy, &copy, &mut files);
        let data = files
            .iter()
            .find(|f| f.ends_with("/a0.tdb"))
            .expect("an a0.tdb")
            .clone();
        let meta = data.replace("a0.tdb", "__fragment_metadata.tdb");
        // The tiles of a0.tdb, from its fragment's metadata.
        let meta_bytes = std::fs::read(copy.join(&meta)).unwrap();
        let (head, _) = footer_region(&meta_bytes).unwrap();
        let schema_name = String::from_utf8(head.schema_name.unwrap()).unwrap();
        let schema_bytes = std::fs::read(copy.join("__schema").join(&schema_name)).unwrap();
        let schema = ArraySchema::from_file_bytes(&schema_name, &schema_bytes, None, true).unwrap();
        let fragment = meta.split('/').rev().nth(1).unwrap();
        let version = TimestampedName::parse(fragment).unwrap().format_version();
        let fm = parse_metadata_file(&meta_bytes, &schema, None, version).unwrap();
        let offsets = &fm.tile_offsets[0];
        let path = copy.join(&data);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() - 5;
        bytes[at] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        let t = offsets.iter().rposition(|&o| o <= at as u64).unwrap();
        let (start, end) = (
            offsets[t],
            offsets.get(t + 1).copied().unwrap_or(bytes.len() as u64),
        );
        let report = check_array(&copy, &CheckOptions::default());
        assert!(
            report.findings.iter().all(|f| f.file != meta),
            "{case}: the fragment metadata is blamed for a data byte:\n{}",
            show(&report)
        );
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.class == ErrorClass::Corrupt
                    && f.file == data
                    && (start..end).contains(&f.offset)
                    && f.field.contains(&format!("tile {t}"))),
            "{case}: no finding in tile {t} of {data} (bytes {start}..{end}):\n{}",
            show(&report)
        );
        // Cells that decode but disagree with their record name the tile's start.
        for f in report
            .findings
            .iter()
            .filter(|f| f.field.starts_with("tile_m"))
        {
            assert_eq!(f.offset, start, "{case}: {f}");
        }
    }
}

/// TileDB builds a compression filter from the compressor byte of its
/// options, not from its filter type (`FilterCreate::deserialize`,
/// tiledb/sm/filter/filter_create.cc): a schema whose ZSTD filter is
/// stored under the GZIP type decodes as ZSTD. Check and the reader load
/// pipelines with the same function, so both read such an array.
#[test]
fn the_compressor_byte_picks_the_codec_for_check_and_reader() {
    use tiledb_runtime::format::generated as g;
    use tiledb_runtime::format::io::write_to_vec;
    use tiledb_runtime::tile::generic::{read_generic_tile, write_generic_tile};
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let copy = scratch.path().join("array");
    copy_dir(
        &corpus("tiledb-2.30")
            .join("sparse.filter.zstd")
            .join("array"),
        &copy,
    );
    let schema_dir = copy.join("__schema");
    let schema_path = std::fs::read_dir(&schema_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_file())
        .expect("a schema file");
    let bytes = std::fs::read(&schema_path).unwrap();
    let tile = read_generic_tile(&bytes, 0, None).unwrap();
    let mut stored: g::ArraySchema =
        tiledb_runtime::format::io::read_exact_from(&tile.payload, (), "ArraySchema").unwrap();
    let mut retyped = 0;
    for attribute in &mut stored.attributes {
        for f in &mut attribute.filters.filters {
            if let g::FilterOptions::CompressionOptions(o) = &f.options {
                assert_eq!(o.compressor, g::Compressor::Zstd);
                f.filter_type = g::FilterType::Gzip;
                retyped += 1;
            }
        }
    }
    assert!(retyped > 0, "no ZSTD filter to retype");
    let payload = write_to_vec(&stored, (), "ArraySchema").unwrap();
    let rewritten = write_generic_tile(&payload, tile.header.version, None).unwrap();
    std::fs::write(&schema_path, rewritten).unwrap();
    let report = check_array(&copy, &CheckOptions::default());
    assert!(report.is_clean(), "{}", show(&report));
    assert!(report.cells_read > 0, "the reader read nothing");
}
