//! Everything the filters need to know about datatypes, in one place: which
//! integer a filter sees a type as, which types a filter transforms, and the
//! type each filter hands to the next (`output_datatype`).

pub use crate::format::generated::enums::Datatype;

/// The machine integer a filter reads a value as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntKind {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
}

impl IntKind {
    pub fn size(self) -> usize {
        match self {
            IntKind::I8 | IntKind::U8 => 1,
            IntKind::I16 | IntKind::U16 => 2,
            IntKind::I32 | IntKind::U32 => 4,
            IntKind::I64 | IntKind::U64 => 8,
        }
    }

    pub fn signed(self) -> bool {
        matches!(
            self,
            IntKind::I8 | IntKind::I16 | IntKind::I32 | IntKind::I64
        )
    }
}

/// Booleans and the fixed-width integers: the types the integer filters take
/// (`datatype_is_integer`; from spec/).
pub fn is_integer(t: Datatype) -> bool {
    t.is_integer()
}

/// FLOAT32 and FLOAT64 (`datatype_is_real`; from spec/).
pub(crate) fn is_real(t: Datatype) -> bool {
    t.is_real()
}

/// The `DATETIME_*` types, 64-bit counts of a unit since the epoch
/// (`datatype_is_datetime`; from spec/).
pub fn is_datetime(t: Datatype) -> bool {
    t.is_datetime()
}

/// The `TIME_*` types (`datatype_is_time`; from spec/).
pub(crate) fn is_time(t: Datatype) -> bool {
    t.is_time()
}

/// TileDB's "byte" types: opaque bytes (`datatype_is_byte`; from spec/).
pub fn is_byte(t: Datatype) -> bool {
    t.is_byte()
}

/// The string types whose var-sized tiles get the string forms of RLE and
/// dictionary encoding (STRING_ASCII and STRING_UTF8; `string_codecs` from spec/).
pub fn is_ascii_or_utf8(t: Datatype) -> bool {
    t.string_codecs()
}

/// How DELTA and DOUBLE_DELTA read values of type `t`
/// (`delta_compressor.cc`, `dd_compressor.cc`); `None` for the floats.
pub(crate) fn delta_int_kind(t: Datatype) -> Option<IntKind> {
    use Datatype::*;
    Some(match t {
        Int8 | Char => IntKind::I8,
        Uint8 | Bool | Blob | GeomWkb | GeomWkt => IntKind::U8,
        StringAscii | StringUtf8 | StringUtf16 | StringUtf32 | StringUcs2 | StringUcs4 | Any => {
            IntKind::U8
        }
        Int16 => IntKind::I16,
        Uint16 => IntKind::U16,
        Int32 => IntKind::I32,
        Uint32 => IntKind::U32,
        Int64 => IntKind::I64,
        Uint64 => IntKind::U64,
        Float32 | Float64 => return None,
        _ if is_datetime(t) || is_time(t) => IntKind::I64,
        _ => return None,
    })
}

/// How BIT_WIDTH_REDUCTION reads values of type `t`; `None` means the filter
/// passes the data through untouched (8-bit and non-integer types, and
/// date/time types before format version 20).
pub(crate) fn bit_width_reduction_kind(t: Datatype, version: u32) -> Option<IntKind> {
    use Datatype::*;
    match t {
        Int16 => Some(IntKind::I16),
        Uint16 => Some(IntKind::U16),
        Int32 => Some(IntKind::I32),
        Uint32 => Some(IntKind::U32),
        Int64 => Some(IntKind::I64),
        Uint64 => Some(IntKind::U64),
        _ if (is_datetime(t) || is_time(t))
            && crate::format::generated::datetimes_filtered_as_int64(version) =>
        {
            Some(IntKind::I64)
        }
        _ => None,
    }
}

/// How POSITIVE_DELTA reads values of type `t`; `None` means pass-through.
pub(crate) fn positive_delta_kind(t: Datatype, version: u32) -> Option<IntKind> {
    use Datatype::*;
    match t {
        Int8 => Some(IntKind::I8),
        Uint8 | Bool | Blob | GeomWkb | GeomWkt => Some(IntKind::U8),
        Int16 => Some(IntKind::I16),
        Uint16 => Some(IntKind::U16),
        Int32 => Some(IntKind::I32),
        Uint32 => Some(IntKind::U32),
        Int64 => Some(IntKind::I64),
        Uint64 => Some(IntKind::U64),
        _ if (is_datetime(t) || is_time(t))
            && crate::format::generated::datetimes_filtered_as_int64(version) =>
        {
            Some(IntKind::I64)
        }
        _ => None,
    }
}

/// The word size XOR works on: the type's size if it is 1, 2, 4 or 8.
pub fn xor_width(t: Datatype) -> Option<usize> {
    match t.size() {
        1 | 2 | 4 | 8 => Some(t.size() as usize),
        _ => None,
    }
}
