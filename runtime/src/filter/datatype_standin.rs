//! A stand-in for the generated `Datatype` enum (from `spec/enums.toml`),
//! with the same variant names and methods, so that the filters can be
//! written before the generated code lands. Replace the `use` in
//! `filter/datatype.rs` with the generated enum and delete this file.

macro_rules! datatypes {
    ($($variant:ident = $value:literal, $name:literal, $size:literal;)*) => {
        /// The type of a value (TileDB `Datatype`, stored as a u8).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Datatype {
            $($variant = $value,)*
        }

        impl Datatype {
            /// The size of one value in bytes.
            pub fn size(self) -> u64 {
                match self { $(Datatype::$variant => $size,)* }
            }
            /// The name as TileDB's format spells it.
            pub fn name(self) -> &'static str {
                match self { $(Datatype::$variant => $name,)* }
            }
            /// The on-disk value.
            pub fn value(self) -> u8 {
                self as u8
            }
            /// The variant with this on-disk value, if any.
            pub fn from_value(value: u8) -> Option<Self> {
                match value { $($value => Some(Datatype::$variant),)* _ => None }
            }
        }
    };
}

datatypes! {
    Int32 = 0, "INT32", 4;
    Int64 = 1, "INT64", 8;
    Float32 = 2, "FLOAT32", 4;
    Float64 = 3, "FLOAT64", 8;
    Char = 4, "CHAR", 1;
    Int8 = 5, "INT8", 1;
    Uint8 = 6, "UINT8", 1;
    Int16 = 7, "INT16", 2;
    Uint16 = 8, "UINT16", 2;
    Uint32 = 9, "UINT32", 4;
    Uint64 = 10, "UINT64", 8;
    StringAscii = 11, "STRING_ASCII", 1;
    StringUtf8 = 12, "STRING_UTF8", 1;
    StringUtf16 = 13, "STRING_UTF16", 2;
    StringUtf32 = 14, "STRING_UTF32", 4;
    StringUcs2 = 15, "STRING_UCS2", 2;
    StringUcs4 = 16, "STRING_UCS4", 4;
    Any = 17, "ANY", 1;
    DatetimeYear = 18, "DATETIME_YEAR", 8;
    DatetimeMonth = 19, "DATETIME_MONTH", 8;
    DatetimeWeek = 20, "DATETIME_WEEK", 8;
    DatetimeDay = 21, "DATETIME_DAY", 8;
    DatetimeHr = 22, "DATETIME_HR", 8;
    DatetimeMin = 23, "DATETIME_MIN", 8;
    DatetimeSec = 24, "DATETIME_SEC", 8;
    DatetimeMs = 25, "DATETIME_MS", 8;
    DatetimeUs = 26, "DATETIME_US", 8;
    DatetimeNs = 27, "DATETIME_NS", 8;
    DatetimePs = 28, "DATETIME_PS", 8;
    DatetimeFs = 29, "DATETIME_FS", 8;
    DatetimeAs = 30, "DATETIME_AS", 8;
    TimeHr = 31, "TIME_HR", 8;
    TimeMin = 32, "TIME_MIN", 8;
    TimeSec = 33, "TIME_SEC", 8;
    TimeMs = 34, "TIME_MS", 8;
    TimeUs = 35, "TIME_US", 8;
    TimeNs = 36, "TIME_NS", 8;
    TimePs = 37, "TIME_PS", 8;
    TimeFs = 38, "TIME_FS", 8;
    TimeAs = 39, "TIME_AS", 8;
    Blob = 40, "BLOB", 1;
    Bool = 41, "BOOL", 1;
    GeomWkb = 42, "GEOM_WKB", 1;
    GeomWkt = 43, "GEOM_WKT", 1;
}
