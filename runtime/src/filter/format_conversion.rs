//! Conversion between the stored filter pipeline (the generated
//! [`crate::format::generated::FilterPipeline`], a list of filter ids with
//! their option bytes decoded) and the runtime model ([`FilterPipeline`],
//! which the filters run).

use crate::error::{Error, Result};
use crate::filter::{Datatype, Filter, FilterPipeline, WebpFormat};
use crate::format::generated as stored;

/// A stored datatype as the filters' datatype (the same numbering).
pub fn datatype(stored: stored::Datatype) -> Result<Datatype> {
    Datatype::from_value(stored as u8)
        .ok_or_else(|| Error::unsupported(format!("datatype {}", stored as u8)))
}

/// A filters' datatype as the stored datatype.
pub fn stored_datatype(datatype: Datatype) -> Result<stored::Datatype> {
    stored::Datatype::ALL
        .iter()
        .copied()
        .find(|d| *d as u8 == datatype.value())
        .ok_or_else(|| Error::unsupported(format!("datatype {}", datatype.value())))
}

fn reinterpret(stored: stored::Datatype) -> Result<Option<Datatype>> {
    if stored == stored::Datatype::Any {
        Ok(None)
    } else {
        datatype(stored).map(Some)
    }
}

fn level(options: &stored::FilterOptions, index: usize) -> Result<i32> {
    match options {
        stored::FilterOptions::CompressionOptions(o) => Ok(o.level),
        _ => Err(Error::corrupt(
            0,
            format!("filter {index}"),
            "a compression filter without compression options",
        )),
    }
}

/// The runtime pipeline of a stored pipeline. A filter id this runtime does
/// not run (the retired id 17) is `Unsupported`.
pub fn from_stored(pipeline: &stored::FilterPipeline) -> Result<FilterPipeline> {
    use stored::FilterOptions as O;
    use stored::FilterType as T;
    let mut filters = Vec::with_capacity(pipeline.filters.len());
    for (index, f) in pipeline.filters.iter().enumerate() {
        let filter = match (f.filter_type, &f.options) {
            (T::None, _) => Filter::None,
            (T::Gzip, o) => Filter::Gzip {
                level: level(o, index)?,
            },
            (T::Zstd, o) => Filter::Zstd {
                level: level(o, index)?,
            },
            (T::Lz4, o) => Filter::Lz4 {
                level: level(o, index)?,
            },
            (T::Rle, o) => Filter::Rle {
                level: level(o, index)?,
            },
            (T::Bzip2, o) => Filter::Bzip2 {
                level: level(o, index)?,
            },
            (T::Dictionary, o) => Filter::Dictionary {
                level: level(o, index)?,
            },
            (T::DoubleDelta, O::DoubleDeltaOptions(o)) => Filter::DoubleDelta {
                level: o.level,
                reinterpret: reinterpret(o.reinterpret_type)?,
            },
            (T::Delta, O::DeltaOptions(o)) => Filter::Delta {
                level: o.level,
                reinterpret: reinterpret(o.reinterpret_type)?,
            },
            (T::BitWidthReduction, O::BitWidthReductionOptions(o)) => Filter::BitWidthReduction {
                max_window: o.max_window,
            },
            (T::PositiveDelta, O::PositiveDeltaOptions(o)) => Filter::PositiveDelta {
                max_window: o.max_window,
            },
            (T::Bitshuffle, _) => Filter::BitShuffle,
            (T::Byteshuffle, _) => Filter::ByteShuffle,
            (T::ChecksumMd5, _) => Filter::ChecksumMd5,
            (T::ChecksumSha256, _) => Filter::ChecksumSha256,
            (T::Xor, _) => Filter::Xor,
            (T::Aes256Gcm, _) => Filter::Aes256Gcm,
            (T::ScaleFloat, O::ScaleFloatOptions(o)) => Filter::ScaleFloat {
                scale: o.scale,
                offset: o.offset,
                byte_width: o.byte_width,
            },
            (T::Webp, O::WebpOptions(o)) => Filter::Webp {
                quality: o.quality,
                format: WebpFormat::from_value(o.format as u8).ok_or_else(|| {
                    Error::corrupt(0, format!("filter {index}"), "unknown WebP format")
                })?,
                lossless: o.lossless,
                y_extent: o.y_extent,
                x_extent: o.x_extent,
            },
            (T::Deprecated, _) => {
                return Err(Error::unsupported(
                    "the retired filter id 17 (TileDB refuses it too)",
                ))
            }
            (kind, _) => {
                return Err(Error::corrupt(
                    0,
                    format!("filter {index}"),
                    format!("options do not match filter {kind}"),
                ))
            }
        };
        filters.push(filter);
    }
    Ok(FilterPipeline {
        max_chunk_size: pipeline.max_chunk_size,
        filters,
    })
}

fn compression(
    kind: stored::FilterType,
    compressor: stored::Compressor,
    level: i32,
) -> stored::Filter {
    stored::Filter {
        filter_type: kind,
        options: stored::FilterOptions::CompressionOptions(stored::CompressionOptions {
            compressor,
            level,
        }),
    }
}

fn plain(kind: stored::FilterType) -> stored::Filter {
    stored::Filter {
        filter_type: kind,
        options: stored::FilterOptions::NoOptions(stored::NoOptions {}),
    }
}

/// The stored form of a runtime pipeline.
pub fn to_stored(pipeline: &FilterPipeline) -> Result<stored::FilterPipeline> {
    use stored::Compressor as C;
    use stored::FilterType as T;
    let any = |d: Option<Datatype>| -> Result<stored::Datatype> {
        d.map(stored_datatype).unwrap_or(Ok(stored::Datatype::Any))
    };
    let mut filters = Vec::with_capacity(pipeline.filters.len());
    for filter in &pipeline.filters {
        filters.push(match filter {
            Filter::None => plain(T::None),
            Filter::Gzip { level } => compression(T::Gzip, C::Gzip, *level),
            Filter::Zstd { level } => compression(T::Zstd, C::Zstd, *level),
            Filter::Lz4 { level } => compression(T::Lz4, C::Lz4, *level),
            Filter::Rle { level } => compression(T::Rle, C::Rle, *level),
            Filter::Bzip2 { level } => compression(T::Bzip2, C::Bzip2, *level),
            Filter::Dictionary { level } => compression(T::Dictionary, C::Dictionary, *level),
            Filter::DoubleDelta { level, reinterpret } => stored::Filter {
                filter_type: T::DoubleDelta,
                options: stored::FilterOptions::DoubleDeltaOptions(stored::DoubleDeltaOptions {
                    compressor: C::DoubleDelta,
                    level: *level,
                    reinterpret_type: any(*reinterpret)?,
                }),
            },
            Filter::Delta { level, reinterpret } => stored::Filter {
                filter_type: T::Delta,
                options: stored::FilterOptions::DeltaOptions(stored::DeltaOptions {
                    compressor: C::Delta,
                    level: *level,
                    reinterpret_type: any(*reinterpret)?,
                }),
            },
            Filter::BitWidthReduction { max_window } => stored::Filter {
                filter_type: T::BitWidthReduction,
                options: stored::FilterOptions::BitWidthReductionOptions(
                    stored::BitWidthReductionOptions {
                        max_window: *max_window,
                    },
                ),
            },
            Filter::PositiveDelta { max_window } => stored::Filter {
                filter_type: T::PositiveDelta,
                options: stored::FilterOptions::PositiveDeltaOptions(
                    stored::PositiveDeltaOptions {
                        max_window: *max_window,
                    },
                ),
            },
            Filter::BitShuffle => plain(T::Bitshuffle),
            Filter::ByteShuffle => plain(T::Byteshuffle),
            Filter::ChecksumMd5 => plain(T::ChecksumMd5),
            Filter::ChecksumSha256 => plain(T::ChecksumSha256),
            Filter::Xor => plain(T::Xor),
            Filter::Aes256Gcm => plain(T::Aes256Gcm),
            Filter::ScaleFloat {
                scale,
                offset,
                byte_width,
            } => stored::Filter {
                filter_type: T::ScaleFloat,
                options: stored::FilterOptions::ScaleFloatOptions(stored::ScaleFloatOptions {
                    scale: *scale,
                    offset: *offset,
                    byte_width: *byte_width,
                }),
            },
            Filter::Webp { .. } => {
                return Err(Error::unsupported(
                    "writing a WebP filter into a stored pipeline",
                ))
            }
        });
    }
    Ok(stored::FilterPipeline {
        max_chunk_size: pipeline.max_chunk_size,
        filters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_tile_pipeline_round_trips() {
        for encrypted in [false, true] {
            let runtime = FilterPipeline::generic_tile(encrypted);
            let stored = to_stored(&runtime).unwrap();
            assert_eq!(from_stored(&stored).unwrap(), runtime);
        }
    }
}
