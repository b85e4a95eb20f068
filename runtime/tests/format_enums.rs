//! The generated enumerations against TileDB's own tables, and the methods
//! every generated enum has (`ALL`, `name`, `value`, `from_value`,
//! properties, `is_deprecated`).
//!
//! Expected values are TileDB 2.30.1's: `tiledb/api/c_api/datatype/datatype_api_enum.h`
//! and `tiledb/sm/enums/datatype.h` (`datatype_size`),
//! `tiledb/api/c_api/filter/filter_api_enum.h` (plus the internal
//! AES-256-GCM = 11 of `tiledb/sm/enums/filter_type.h`).

mod common;

use binrw::BinRead;
use tiledb_runtime::format::generated::{Datatype, FilterType};

/// (name, value, size in bytes) from TileDB 2.30.1.
const DATATYPES: &[(&str, u8, u64)] = &[
    ("INT32", 0, 4),
    ("INT64", 1, 8),
    ("FLOAT32", 2, 4),
    ("FLOAT64", 3, 8),
    ("CHAR", 4, 1),
    ("INT8", 5, 1),
    ("UINT8", 6, 1),
    ("INT16", 7, 2),
    ("UINT16", 8, 2),
    ("UINT32", 9, 4),
    ("UINT64", 10, 8),
    ("STRING_ASCII", 11, 1),
    ("STRING_UTF8", 12, 1),
    ("STRING_UTF16", 13, 2),
    ("STRING_UTF32", 14, 4),
    ("STRING_UCS2", 15, 2),
    ("STRING_UCS4", 16, 4),
    ("ANY", 17, 1),
    ("DATETIME_YEAR", 18, 8),
    ("DATETIME_MONTH", 19, 8),
    ("DATETIME_WEEK", 20, 8),
    ("DATETIME_DAY", 21, 8),
    ("DATETIME_HR", 22, 8),
    ("DATETIME_MIN", 23, 8),
    ("DATETIME_SEC", 24, 8),
    ("DATETIME_MS", 25, 8),
    ("DATETIME_US", 26, 8),
    ("DATETIME_NS", 27, 8),
    ("DATETIME_PS", 28, 8),
    ("DATETIME_FS", 29, 8),
    ("DATETIME_AS", 30, 8),
    ("TIME_HR", 31, 8),
    ("TIME_MIN", 32, 8),
    ("TIME_SEC", 33, 8),
    ("TIME_MS", 34, 8),
    ("TIME_US", 35, 8),
    ("TIME_NS", 36, 8),
    ("TIME_PS", 37, 8),
    ("TIME_FS", 38, 8),
    ("TIME_AS", 39, 8),
    ("BLOB", 40, 1),
    ("BOOL", 41, 1),
    ("GEOM_WKB", 42, 1),
    ("GEOM_WKT", 43, 1),
];

/// (name without `FILTER_`, value) from TileDB 2.30.1.
const FILTER_TYPES: &[(&str, u8)] = &[
    ("NONE", 0),
    ("GZIP", 1),
    ("ZSTD", 2),
    ("LZ4", 3),
    ("RLE", 4),
    ("BZIP2", 5),
    ("DOUBLE_DELTA", 6),
    ("BIT_WIDTH_REDUCTION", 7),
    ("BITSHUFFLE", 8),
    ("BYTESHUFFLE", 9),
    ("POSITIVE_DELTA", 10),
    ("AES_256_GCM", 11),
    ("CHECKSUM_MD5", 12),
    ("CHECKSUM_SHA256", 13),
    ("DICTIONARY", 14),
    ("SCALE_FLOAT", 15),
    ("XOR", 16),
    ("DEPRECATED", 17),
    ("WEBP", 18),
    ("DELTA", 19),
];

#[test]
fn datatypes_match_tiledb() {
    assert_eq!(Datatype::ALL.len(), DATATYPES.len());
    for (&datatype, &(name, value, size)) in Datatype::ALL.iter().zip(DATATYPES) {
        assert_eq!(datatype.name(), name);
        assert_eq!(datatype.value(), value, "{name}");
        assert_eq!(datatype.size(), size, "{name}");
        assert_eq!(Datatype::from_value(value), Some(datatype));
        assert_eq!(datatype.to_string(), name);
    }
    for value in 44..=u8::MAX {
        assert_eq!(Datatype::from_value(value), None, "{value}");
    }
    // Deprecated in datatype_api_external.h: CHAR, STRING_UCS2, STRING_UCS4, ANY.
    let deprecated: Vec<&str> = Datatype::ALL
        .iter()
        .filter(|d| d.is_deprecated())
        .map(|d| d.name())
        .collect();
    assert_eq!(deprecated, ["CHAR", "STRING_UCS2", "STRING_UCS4", "ANY"]);
    assert_eq!(Datatype::DatetimeYear.name(), "DATETIME_YEAR");
    assert_eq!(Datatype::StringAscii.name(), "STRING_ASCII");
}

#[test]
fn filter_types_match_tiledb() {
    let names: Vec<(&str, u8)> = FilterType::ALL
        .iter()
        .map(|f| (f.name(), f.value()))
        .collect();
    assert_eq!(names, FILTER_TYPES);
    assert_eq!(FilterType::BitWidthReduction.value(), 7);
    assert_eq!(FilterType::from_value(20), None);
}

#[test]
fn reading_an_enum_takes_its_repr_and_refuses_other_values() {
    let mut cursor = binrw::io::Cursor::new([41u8, 44]);
    let read = Datatype::read_le(&mut cursor).expect("BOOL");
    assert_eq!(read, Datatype::Bool);
    assert!(
        Datatype::read_le(&mut cursor).is_err(),
        "44 is not a datatype"
    );
}

/// The datatype classes and default fill values spec/ gives the Datatype table, against
/// TileDB 2.30's `datatype_is_*` (tiledb/sm/enums/datatype.h) and `constants::fill_value`
/// (tiledb/sm/misc/constants.cc), written out here type by type.
#[test]
fn datatype_classes_and_default_fills_are_tiledbs() {
    use tiledb_runtime::format::generated::Datatype::{self, *};
    use tiledb_runtime::schema::value::default_fill;
    let integers = [
        Bool, Int8, Uint8, Int16, Uint16, Int32, Uint32, Int64, Uint64,
    ];
    for &t in Datatype::ALL {
        assert_eq!(t.is_integer(), integers.contains(&t), "{t}");
        assert_eq!(t.is_real(), matches!(t, Float32 | Float64), "{t}");
        assert_eq!(t.is_datetime(), t.name().starts_with("DATETIME_"), "{t}");
        assert_eq!(t.is_time(), t.name().starts_with("TIME_"), "{t}");
        assert_eq!(t.is_byte(), matches!(t, Blob | GeomWkb | GeomWkt), "{t}");
        let want: Vec<u8> = match t {
            Int8 | Char => vec![0x80],
            Int16 => i16::MIN.to_le_bytes().to_vec(),
            Int32 => i32::MIN.to_le_bytes().to_vec(),
            Int64 => i64::MIN.to_le_bytes().to_vec(),
            Uint8 => vec![u8::MAX],
            Uint16 => u16::MAX.to_le_bytes().to_vec(),
            Uint32 => u32::MAX.to_le_bytes().to_vec(),
            Uint64 => u64::MAX.to_le_bytes().to_vec(),
            Float32 => f32::NAN.to_le_bytes().to_vec(),
            Float64 => f64::NAN.to_le_bytes().to_vec(),
            _ if t.is_datetime() || t.is_time() => i64::MIN.to_le_bytes().to_vec(),
            _ => vec![0; t.size() as usize],
        };
        assert_eq!(default_fill(t), want, "{t}");
    }
}

/// The `time_unit` of every Datatype (spec/enums.toml) is the unit of the
/// numpy dtype tiledb-py gives the type: `datetime64[<unit>]` for the
/// DATETIME_ types, `timedelta64[<unit>]` for the TIME_ ones, and no unit
/// for any other type.
#[test]
fn datatype_time_units_are_tiledb_pys() {
    let Some(python) = common::tiledb_python() else {
        println!("skipped: the TileDB oracle venv (.venv-tiledb or TILEDB_PY) is absent");
        return;
    };
    let names: Vec<&str> = Datatype::ALL.iter().map(|d| d.name()).collect();
    let script = format!(
        "import tiledb\nfrom tiledb.datatypes import DataType\nfor n in {names:?}:\n    \
         t = getattr(tiledb.libtiledb.DataType, n, None)\n    \
         try:\n        d = str(DataType.from_tiledb(t).np_dtype) if t is not None else '-'\n    \
         except Exception:\n        d = '-'\n    print(n, d)\n"
    );
    let output = std::process::Command::new(python)
        .args(["-c", &script])
        .output()
        .expect("run the oracle's python");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let mut timed = 0;
    for line in text.lines() {
        let (name, dtype) = line.split_once(' ').expect("name and dtype");
        let datatype = *Datatype::ALL
            .iter()
            .find(|d| d.name() == name)
            .expect("a spec name");
        let numpy_unit = dtype
            .strip_prefix("datetime64[")
            .or_else(|| dtype.strip_prefix("timedelta64["))
            .and_then(|u| u.strip_suffix(']'))
            .unwrap_or("");
        assert_eq!(
            datatype.time_unit(),
            numpy_unit,
            "{name}: tiledb-py gives {dtype}"
        );
        assert_eq!(
            dtype.starts_with("datetime64"),
            datatype.is_datetime(),
            "{name}: {dtype}"
        );
        timed += usize::from(!numpy_unit.is_empty());
    }
    assert_eq!(timed, 22, "13 DATETIME_ and 9 TIME_ types:\n{text}");
}
