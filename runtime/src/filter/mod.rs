//! The filter pipeline and every TileDB filter, in both directions.
//!
//! A [`FilterPipeline`] is the semantic form of what a schema or a generic
//! tile header stores: the filters in the order they run when writing. Each
//! filter works on one chunk at a time (see [`crate::tile`] for the framing),
//! and on that chunk's *parts*: the chunk starts as one data part and no
//! metadata parts; each filter prepends its own metadata part, and the
//! compressors and AES consume the metadata parts before them. Reading runs
//! the filters backwards, each taking its metadata from the front.
//!
//! Byte layouts follow TileDB 2.30's `tiledb/sm/filter/` and
//! `tiledb/sm/compressors/`; each module names what it mirrors.

pub mod datatype;
pub(crate) mod format_conversion;

pub(crate) mod bit_width_reduction;
pub(crate) mod bitshuffle;
pub(crate) mod byteshuffle;
pub(crate) mod checksum;
pub(crate) mod compression;
mod convert;
pub use convert::is_implemented;
pub(crate) mod delta;
pub(crate) mod double_delta;
pub(crate) mod encryption;
pub(crate) mod positive_delta;
pub(crate) mod rle;
pub(crate) mod run;
pub(crate) mod scale_float;
pub(crate) mod stage;
pub(crate) mod var_string;
pub(crate) mod webp;
pub(crate) mod xor;

pub use crate::format::generated::enums::{FilterType, WebpFormat};
pub use datatype::Datatype;

/// TileDB's default chunk size, the serialized `max_chunk_size` of every
/// pipeline TileDB writes. Chunking itself always uses this constant; the
/// serialized value only matters when it is 0 (no chunking).
pub const DEFAULT_MAX_CHUNK_SIZE: u32 = crate::format::generated::MAX_TILE_CHUNK_SIZE as u32;

/// The filters in write order, and the chunk size limit.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterPipeline {
    /// The largest chunk, in bytes, a tile is cut into before filtering; 0 stores the tile as one chunk.
    pub max_chunk_size: u32,
    /// The filters, in the order they are applied when writing (reading undoes them in reverse).
    pub filters: Vec<Filter>,
}

impl Default for FilterPipeline {
    fn default() -> Self {
        FilterPipeline {
            max_chunk_size: DEFAULT_MAX_CHUNK_SIZE,
            filters: Vec::new(),
        }
    }
}

impl FilterPipeline {
    /// A pipeline of these filters with TileDB's default chunk size.
    pub fn new(filters: Vec<Filter>) -> Self {
        FilterPipeline {
            max_chunk_size: DEFAULT_MAX_CHUNK_SIZE,
            filters,
        }
    }

    /// The pipeline TileDB uses for generic tiles: GZIP at level 1
    /// (`GenericTileIO`), plus AES-256-GCM when the array is encrypted.
    pub fn generic_tile(encrypted: bool) -> Self {
        let mut filters = vec![Filter::Gzip { level: 1 }];
        if encrypted {
            filters.push(Filter::Aes256Gcm);
        }
        FilterPipeline::new(filters)
    }

    /// The pipeline contains a filter of this type.
    pub fn has(&self, kind: FilterType) -> bool {
        self.filters.iter().any(|f| f.filter_type() == kind)
    }

    /// The datatype each filter sees, starting from the field's type
    /// (`FilterPipeline` chains `output_datatype`); one entry per filter.
    pub fn input_types(&self, first: Datatype) -> Vec<Datatype> {
        let mut types = Vec::with_capacity(self.filters.len());
        let mut current = first;
        for filter in &self.filters {
            types.push(current);
            current = filter.output_datatype(current);
        }
        types
    }

    /// Whether the offsets tile of a var-sized field of type `datatype` is
    /// left out (written as zero chunks) because the string form of RLE or
    /// dictionary encoding rebuilds it (`FilterPipeline::skip_offsets_filtering`).
    /// Pass the fragment's format version. (TileDB's reader passes the
    /// latest schema's version instead; the two differ only for a pre-v12/v17
    /// fragment read through an evolved schema.)
    pub fn skips_offsets(&self, datatype: Datatype, version: u32) -> bool {
        use crate::format::generated::{
            ascii_dictionary_rebuilds_offsets, ascii_rle_rebuilds_offsets,
            utf8_strings_rebuild_offsets,
        };
        let ascii = datatype == Datatype::StringAscii;
        let utf8 = datatype == Datatype::StringUtf8 && utf8_strings_rebuild_offsets(version);
        ((ascii_rle_rebuilds_offsets(version) && ascii) || utf8) && self.has(FilterType::Rle)
            || ((ascii_dictionary_rebuilds_offsets(version) && ascii) || utf8)
                && self.has(FilterType::Dictionary)
    }

    /// Whether a tile is cut into chunks at all (`use_tile_chunking`): not
    /// when `max_chunk_size` is 0, not for var ASCII/UTF8 tiles under RLE
    /// (v12+) or dictionary (v13+), and not under WebP.
    pub fn uses_chunking(&self, var_sized: bool, version: u32, datatype: Datatype) -> bool {
        if self.max_chunk_size == 0 {
            return false;
        }
        if var_sized && datatype::is_ascii_or_utf8(datatype) {
            // TileDB does not look at WebP on this branch.
            use crate::format::generated::{
                ascii_dictionary_rebuilds_offsets, ascii_rle_rebuilds_offsets,
            };
            return !((ascii_rle_rebuilds_offsets(version) && self.has(FilterType::Rle))
                || (ascii_dictionary_rebuilds_offsets(version)
                    && self.has(FilterType::Dictionary)));
        }
        !self.has(FilterType::Webp)
    }
}

/// A filter with its options, as TileDB stores it.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// Passes the bytes through unchanged.
    None,
    /// Deflate in a zlib stream; output byte-identical to TileDB's.
    Gzip {
        /// The compression level as stored in the filter's options.
        level: i32,
    },
    /// Zstandard.
    Zstd {
        /// The compression level as stored in the filter's options.
        level: i32,
    },
    /// LZ4 block compression.
    Lz4 {
        /// The compression level as stored; the codec ignores it.
        level: i32,
    },
    /// Run-length encoding of whole cells.
    Rle {
        /// The compression level as stored; the encoding ignores it.
        level: i32,
    },
    /// Bzip2.
    Bzip2 {
        /// The compression level as stored in the filter's options.
        level: i32,
    },
    /// Double-delta encoding of integers.
    DoubleDelta {
        /// The compression level as stored; the encoding ignores it.
        level: i32,
        /// Read the values as this type instead of the input type.
        reinterpret: Option<Datatype>,
    },
    /// Delta encoding of integers.
    Delta {
        /// The compression level as stored; the encoding ignores it.
        level: i32,
        /// Read the values as this type instead of the input type.
        reinterpret: Option<Datatype>,
    },
    /// Dictionary encoding of strings (var-sized fields).
    Dictionary {
        /// The compression level as stored; the encoding ignores it.
        level: i32,
    },
    /// Stores each window of integers in the fewest bits that hold them.
    BitWidthReduction {
        /// The most bytes of values per window.
        max_window: u32,
    },
    /// Delta encoding of non-decreasing integers (offsets).
    PositiveDelta {
        /// The most bytes of values per window.
        max_window: u32,
    },
    /// Transposes the bits of the values (bitshuffle).
    BitShuffle,
    /// Transposes the bytes of the values.
    ByteShuffle,
    /// Appends the MD5 digest of the bytes, checked when reading.
    ChecksumMd5,
    /// Appends the SHA-256 digest of the bytes, checked when reading.
    ChecksumSha256,
    /// Stores floats as integers: `round((value - offset) / scale)`.
    ScaleFloat {
        /// The quantum: the difference of two consecutive stored integers.
        scale: f64,
        /// Subtracted before scaling.
        offset: f64,
        /// The size of the stored integers in bytes: 1, 2, 4 or 8.
        byte_width: u64,
    },
    /// Each value XORed with the one before it.
    Xor,
    /// Images in WebP, one tile a picture (uint8 attributes of 2-D dense arrays).
    Webp {
        /// Lossy quality, 0 to 100 (ignored when lossless).
        quality: f32,
        /// The order of the colour channels in a pixel.
        format: WebpFormat,
        /// Lossless encoding.
        lossless: bool,
        /// The rows of one picture: its height in pixels.
        y_extent: u16,
        /// The bytes of one row of the picture: its width in pixels times the channels of a pixel.
        x_extent: u16,
    },
    /// Appended by TileDB to every pipeline of an encrypted array; the key
    /// comes from the caller ([`FilterContext::encryption_key`]).
    Aes256Gcm,
}

impl Filter {
    /// The type stored for this filter.
    pub fn filter_type(&self) -> FilterType {
        match self {
            Filter::None => FilterType::None,
            Filter::Gzip { .. } => FilterType::Gzip,
            Filter::Zstd { .. } => FilterType::Zstd,
            Filter::Lz4 { .. } => FilterType::Lz4,
            Filter::Rle { .. } => FilterType::Rle,
            Filter::Bzip2 { .. } => FilterType::Bzip2,
            Filter::DoubleDelta { .. } => FilterType::DoubleDelta,
            Filter::Delta { .. } => FilterType::Delta,
            Filter::Dictionary { .. } => FilterType::Dictionary,
            Filter::BitWidthReduction { .. } => FilterType::BitWidthReduction,
            Filter::PositiveDelta { .. } => FilterType::PositiveDelta,
            Filter::BitShuffle => FilterType::Bitshuffle,
            Filter::ByteShuffle => FilterType::Byteshuffle,
            Filter::ChecksumMd5 => FilterType::ChecksumMd5,
            Filter::ChecksumSha256 => FilterType::ChecksumSha256,
            Filter::ScaleFloat { .. } => FilterType::ScaleFloat,
            Filter::Xor => FilterType::Xor,
            Filter::Webp { .. } => FilterType::Webp,
            Filter::Aes256Gcm => FilterType::Aes256Gcm,
        }
    }

    /// TileDB's name of the filter (`GZIP`, `ZSTD`, ...), for messages and reports.
    pub fn name(&self) -> &'static str {
        self.filter_type().name()
    }

    /// The datatype this filter hands to the next one (`output_datatype`).
    pub fn output_datatype(&self, input: Datatype) -> Datatype {
        match self {
            Filter::DoubleDelta { reinterpret, .. } | Filter::Delta { reinterpret, .. } => {
                reinterpret.unwrap_or(input)
            }
            Filter::ScaleFloat { byte_width, .. } => match byte_width {
                1 => Datatype::Int8,
                2 => Datatype::Int16,
                4 => Datatype::Int32,
                8 => Datatype::Int64,
                // TileDB throws here; an invalid width is caught when the
                // filter runs, so keep the type unchanged.
                _ => input,
            },
            Filter::Xor => match input.size() {
                1 => Datatype::Int8,
                2 => Datatype::Int16,
                4 => Datatype::Int32,
                8 => Datatype::Int64,
                _ => input,
            },
            Filter::Aes256Gcm => Datatype::Blob,
            _ => input,
        }
    }

    /// Whether TileDB accepts this filter on values of type `input` when a
    /// schema is created (`accepts_input_datatype`).
    pub fn accepts(&self, input: Datatype) -> bool {
        match self {
            Filter::DoubleDelta { reinterpret, .. } | Filter::Delta { reinterpret, .. } => {
                let seen = reinterpret.unwrap_or(input);
                if datatype::is_real(seen) {
                    return false;
                }
                match reinterpret {
                    Some(r) => input.size().is_multiple_of(r.size()),
                    None => true,
                }
            }
            Filter::BitWidthReduction { .. } | Filter::PositiveDelta { .. } => {
                datatype::is_integer(input)
                    || datatype::is_datetime(input)
                    || datatype::is_time(input)
                    || datatype::is_byte(input)
            }
            Filter::ScaleFloat { .. } => matches!(input.size(), 4 | 8),
            Filter::Xor => datatype::xor_width(input).is_some(),
            Filter::Webp { .. } => input == Datatype::Uint8,
            _ => true,
        }
    }
}

/// What the filters need to know about the tile they run on.
#[derive(Clone)]
pub struct FilterContext {
    /// The type of the values entering the pipeline: the field's type for
    /// data tiles, UINT64 for offsets, UINT8 for validity, CHAR for generic
    /// tiles.
    pub datatype: Datatype,
    /// The tile's cell size, which numeric RLE works in: type size ×
    /// cell_val_num for fixed fields, the type size for var data, 8 for
    /// offsets, 1 for validity and generic tiles.
    pub cell_size: u64,
    /// The format version of the fragment or generic tile; some filters
    /// change behaviour with it.
    pub version: u32,
    /// The AES-256-GCM key, needed only when the pipeline has that filter.
    pub encryption_key: Option<[u8; 32]>,
}

impl std::fmt::Debug for FilterContext {
    /// Never prints the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilterContext")
            .field("datatype", &self.datatype)
            .field("cell_size", &self.cell_size)
            .field("version", &self.version)
            .field("encryption_key", &self.encryption_key.map(|_| "<redacted>"))
            .finish()
    }
}

impl FilterContext {
    /// The context of a field of `datatype`, `cell_size` bytes per cell, written at format `version`; no encryption key.
    pub fn new(datatype: Datatype, cell_size: u64, version: u32) -> Self {
        FilterContext {
            datatype,
            cell_size,
            version,
            encryption_key: None,
        }
    }

    /// The context of a generic tile written at `version`.
    pub fn generic_tile(version: u32) -> Self {
        FilterContext::new(Datatype::Char, 1, version)
    }

    /// The same context with the AES-256-GCM key of an encrypted array.
    pub fn with_key(mut self, key: [u8; 32]) -> Self {
        self.encryption_key = Some(key);
        self
    }
}
