//! Between the stored pipeline (`format::generated::filter_pipeline`, read
//! and written from `spec/filter_pipeline.toml`) and the semantic model.
//!
//! TileDB builds a compression filter from the *compressor* byte of its
//! options, not from the filter type (`FilterCreate::deserialize`), and a
//! compression filter without a compressor is NONE; the reinterpret type is
//! read only for DELTA (v19+) and DOUBLE_DELTA (v20+) and ANY means none.

use crate::format::generated::enums::{Compressor, FilterType};
use crate::format::generated::filter_pipeline as stored;
use crate::{Error, Result};

use super::{Datatype, Filter, FilterPipeline};

fn reinterpret(t: Datatype) -> Option<Datatype> {
    (t != Datatype::Any).then_some(t)
}

fn from_compressor(compressor: Compressor, level: i32, reinterpret_type: Datatype) -> Filter {
    let reinterpret = reinterpret(reinterpret_type);
    match compressor {
        Compressor::NoCompression => Filter::None,
        Compressor::Gzip => Filter::Gzip { level },
        Compressor::Zstd => Filter::Zstd { level },
        Compressor::Lz4 => Filter::Lz4 { level },
        Compressor::Rle => Filter::Rle { level },
        Compressor::Bzip2 => Filter::Bzip2 { level },
        Compressor::DoubleDelta => Filter::DoubleDelta { level, reinterpret },
        Compressor::Dictionary => Filter::Dictionary { level },
        Compressor::Delta => Filter::Delta { level, reinterpret },
    }
}

/// The filter types [`FilterPipeline::from_stored`] turns into filters.
/// Any other type `spec/enums.toml` may gain is `unsupported` until its code
/// is written and listed here, never misread as another filter.
const IMPLEMENTED: &[FilterType] = &[
    FilterType::None,
    FilterType::Gzip,
    FilterType::Zstd,
    FilterType::Lz4,
    FilterType::Rle,
    FilterType::Bzip2,
    FilterType::DoubleDelta,
    FilterType::BitWidthReduction,
    FilterType::Bitshuffle,
    FilterType::Byteshuffle,
    FilterType::PositiveDelta,
    FilterType::Aes256Gcm,
    FilterType::ChecksumMd5,
    FilterType::ChecksumSha256,
    FilterType::Dictionary,
    FilterType::ScaleFloat,
    FilterType::Xor,
    FilterType::Deprecated, // known, and refused as TileDB refuses it
    FilterType::Webp,
    FilterType::Delta,
];

/// Whether this runtime has code for a filter type.
pub fn is_implemented(filter_type: FilterType) -> bool {
    IMPLEMENTED.contains(&filter_type)
}

impl FilterPipeline {
    /// The semantic pipeline of a stored one read from a file of format
    /// `version`: a filter type outside its `since`/`until` for that version
    /// is `unsupported` (see [`crate::format::check_in_version`]).
    pub fn from_stored_at(pipeline: &stored::FilterPipeline, version: u32) -> Result<Self> {
        for f in &pipeline.filters {
            let t = f.filter_type;
            crate::format::check_in_version(
                "filter type",
                t.name(),
                u64::from(t.value()),
                (t.since(), t.until()),
                version,
            )?;
            let compressor = match &f.options {
                stored::FilterOptions::CompressionOptions(o) => Some(o.compressor),
                stored::FilterOptions::DeltaOptions(o) => Some(o.compressor),
                stored::FilterOptions::DoubleDeltaOptions(o) => Some(o.compressor),
                _ => None,
            };
            if let Some(c) = compressor {
                crate::format::check_in_version(
                    "compressor",
                    c.name(),
                    u64::from(c.value()),
                    (c.since(), c.until()),
                    version,
                )?;
            }
        }
        Self::from_stored(pipeline)
    }

    /// The semantic pipeline of a stored one.
    pub fn from_stored(pipeline: &stored::FilterPipeline) -> Result<Self> {
        let mut filters = Vec::with_capacity(pipeline.filters.len());
        for (i, f) in pipeline.filters.iter().enumerate() {
            let field = || format!("FilterPipeline.filters[{i}]");
            if !is_implemented(f.filter_type) {
                return Err(Error::unsupported(format!(
                    "filter type {} ({}) is not implemented by this reader",
                    f.filter_type.name(),
                    f.filter_type.value()
                )));
            }
            let mismatch = || {
                Error::corrupt(
                    0,
                    field(),
                    format!("options do not fit filter type {}", f.filter_type.name()),
                )
            };
            use stored::FilterOptions as O;
            let filter = match (&f.filter_type, &f.options) {
                (FilterType::None, _) => Filter::None,
                (_, O::CompressionOptions(o)) => {
                    from_compressor(o.compressor, o.level, Datatype::Any)
                }
                (_, O::DeltaOptions(o)) => {
                    from_compressor(o.compressor, o.level, o.reinterpret_type)
                }
                (_, O::DoubleDeltaOptions(o)) => {
                    from_compressor(o.compressor, o.level, o.reinterpret_type)
                }
                (FilterType::BitWidthReduction, O::BitWidthReductionOptions(o)) => {
                    Filter::BitWidthReduction {
                        max_window: o.max_window,
                    }
                }
                (FilterType::PositiveDelta, O::PositiveDeltaOptions(o)) => Filter::PositiveDelta {
                    max_window: o.max_window,
                },
                (FilterType::ScaleFloat, O::ScaleFloatOptions(o)) => Filter::ScaleFloat {
                    scale: o.scale,
                    offset: o.offset,
                    byte_width: o.byte_width,
                },
                (FilterType::Webp, O::WebpOptions(o)) => Filter::Webp {
                    quality: o.quality,
                    format: o.format,
                    lossless: o.lossless,
                    y_extent: o.y_extent,
                    x_extent: o.x_extent,
                },
                (FilterType::Bitshuffle, _) => Filter::BitShuffle,
                (FilterType::Byteshuffle, _) => Filter::ByteShuffle,
                (FilterType::ChecksumMd5, _) => Filter::ChecksumMd5,
                (FilterType::ChecksumSha256, _) => Filter::ChecksumSha256,
                (FilterType::Xor, _) => Filter::Xor,
                (FilterType::Aes256Gcm, _) => Filter::Aes256Gcm,
                (FilterType::Deprecated, _) => {
                    // A valid value of the format that no reader handles
                    // any more: unsupported, not corrupt.
                    return Err(Error::unsupported(format!(
                        "{}: filter type 17 is retired; TileDB rejects it",
                        field()
                    )));
                }
                _ => return Err(mismatch()),
            };
            filters.push(filter);
        }
        Ok(FilterPipeline {
            max_chunk_size: pipeline.max_chunk_size,
            filters,
        })
    }

    /// The stored form of this pipeline, as TileDB writes it.
    pub fn to_stored(&self) -> stored::FilterPipeline {
        let compression = |compressor, level| {
            stored::FilterOptions::CompressionOptions(stored::CompressionOptions {
                compressor,
                level,
            })
        };
        let filters = self
            .filters
            .iter()
            .map(|f| {
                let options = match f {
                    Filter::Gzip { level } => compression(Compressor::Gzip, *level),
                    Filter::Zstd { level } => compression(Compressor::Zstd, *level),
                    Filter::Lz4 { level } => compression(Compressor::Lz4, *level),
                    Filter::Rle { level } => compression(Compressor::Rle, *level),
                    Filter::Bzip2 { level } => compression(Compressor::Bzip2, *level),
                    Filter::Dictionary { level } => compression(Compressor::Dictionary, *level),
                    Filter::Delta { level, reinterpret } => {
                        stored::FilterOptions::DeltaOptions(stored::DeltaOptions {
                            compressor: Compressor::Delta,
                            level: *level,
                            reinterpret_type: reinterpret.unwrap_or(Datatype::Any),
                        })
                    }
                    Filter::DoubleDelta { level, reinterpret } => {
                        stored::FilterOptions::DoubleDeltaOptions(stored::DoubleDeltaOptions {
                            compressor: Compressor::DoubleDelta,
                            level: *level,
                            reinterpret_type: reinterpret.unwrap_or(Datatype::Any),
                        })
                    }
                    Filter::BitWidthReduction { max_window } => {
                        stored::FilterOptions::BitWidthReductionOptions(
                            stored::BitWidthReductionOptions {
                                max_window: *max_window,
                            },
                        )
                    }
                    Filter::PositiveDelta { max_window } => {
                        stored::FilterOptions::PositiveDeltaOptions(stored::PositiveDeltaOptions {
                            max_window: *max_window,
                        })
                    }
                    Filter::ScaleFloat {
                        scale,
                        offset,
                        byte_width,
                    } => stored::FilterOptions::ScaleFloatOptions(stored::ScaleFloatOptions {
                        scale: *scale,
                        offset: *offset,
                        byte_width: *byte_width,
                    }),
                    Filter::Webp {
                        quality,
                        format,
                        lossless,
                        y_extent,
                        x_extent,
                    } => stored::FilterOptions::WebpOptions(stored::WebpOptions {
                        quality: *quality,
                        format: *format,
                        lossless: *lossless,
                        y_extent: *y_extent,
                        x_extent: *x_extent,
                        padding: 0,
                    }),
                    Filter::None
                    | Filter::BitShuffle
                    | Filter::ByteShuffle
                    | Filter::ChecksumMd5
                    | Filter::ChecksumSha256
                    | Filter::Xor
                    | Filter::Aes256Gcm => stored::FilterOptions::NoOptions(stored::NoOptions {}),
                };
                stored::Filter {
                    filter_type: f.filter_type(),
                    options,
                }
            })
            .collect();
        stored::FilterPipeline {
            max_chunk_size: self.max_chunk_size,
            filters,
        }
    }
}
