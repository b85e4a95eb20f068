//! The per-chunk filter metadata of spec/filter_metadata.toml against real
//! data tiles: every chunk of every attribute whose pipeline has a single
//! filter (fixed-size attributes, and var-sized strings under RLE or
//! dictionary encoding), in the TileDB 2.30 corpus's filter cases, parses as
//! that filter's metadata (using all of it) and writes back byte for byte.

#[path = "common/corpus.rs"]
mod corpus;

use corpus::{corpus, first_schema, sorted_entries};
use std::collections::BTreeMap;

use binrw::{BinRead, BinWrite};
use tiledb_runtime::format::generated::*;
use tiledb_runtime::format::io::{read_exact_from, read_prefix, write_to_vec};

fn same_bytes<T>(
    bytes: &[u8],
    read_args: <T as BinRead>::Args<'_>,
    write_args: <T as BinWrite>::Args<'_>,
    what: &str,
) -> Result<(), String>
where
    T: BinRead + BinWrite,
{
    let value: T = read_exact_from(bytes, read_args, what).map_err(|e| e.to_string())?;
    let written = write_to_vec(&value, write_args, what).map_err(|e| e.to_string())?;
    if written == bytes {
        Ok(())
    } else {
        Err(format!("{what}: written back differently"))
    }
}

/// Round-trips one chunk's metadata as the metadata of `filter`; returns the kind checked.
fn check_metadata(
    filter: FilterType,
    value_size: u64,
    metadata: &[u8],
) -> Result<&'static str, String> {
    Ok(match filter {
        FilterType::Gzip
        | FilterType::Zstd
        | FilterType::Lz4
        | FilterType::Bzip2
        | FilterType::Rle
        | FilterType::DoubleDelta
        | FilterType::Delta => {
            same_bytes::<CompressionChunkMetadata>(metadata, (), (), "CompressionChunkMetadata")?;
            "CompressionChunkMetadata"
        }
        FilterType::ChecksumMd5 | FilterType::ChecksumSha256 => {
            let digest_len = if filter == FilterType::ChecksumMd5 {
                16
            } else {
                32
            };
            same_bytes::<ChecksumChunkMetadata>(
                metadata,
                ChecksumChunkMetadataBinReadArgs::builder()
                    .digest_len(digest_len)
                    .finalize(),
                ChecksumChunkMetadataBinWriteArgs::builder()
                    .digest_len(digest_len)
                    .finalize(),
                "ChecksumChunkMetadata",
            )?;
            "ChecksumChunkMetadata"
        }
        FilterType::Bitshuffle
        | FilterType::Byteshuffle
        | FilterType::Xor
        | FilterType::ScaleFloat
        | FilterType::Webp => {
            same_bytes::<PartSizesMetadata>(metadata, (), (), "PartSizesMetadata")?;
            "PartSizesMetadata"
        }
        FilterType::BitWidthReduction => {
            same_bytes::<BitWidthReductionMetadata>(
                metadata,
                BitWidthReductionMetadataBinReadArgs::builder()
                    .value_size(value_size)
                    .finalize(),
                BitWidthReductionMetadataBinWriteArgs::builder()
                    .value_size(value_size)
                    .finalize(),
                "BitWidthReductionMetadata",
            )?;
            "BitWidthReductionMetadata"
        }
        FilterType::PositiveDelta => {
            same_bytes::<PositiveDeltaMetadata>(
                metadata,
                PositiveDeltaMetadataBinReadArgs::builder()
                    .value_size(value_size)
                    .finalize(),
                PositiveDeltaMetadataBinWriteArgs::builder()
                    .value_size(value_size)
                    .finalize(),
                "PositiveDeltaMetadata",
            )?;
            "PositiveDeltaMetadata"
        }
        other => return Err(format!("SKIP {other}")),
    })
}

/// The chunk metadata of RLE or dictionary encoding of var-sized strings.
fn check_string_metadata(filter: FilterType, metadata: &[u8]) -> Result<&'static str, String> {
    if filter == FilterType::Rle {
        same_bytes::<VarStringRleMetadata>(metadata, (), (), "VarStringRleMetadata")?;
        Ok("VarStringRleMetadata")
    } else {
        same_bytes::<VarStringDictionaryMetadata>(metadata, (), (), "VarStringDictionaryMetadata")?;
        Ok("VarStringDictionaryMetadata")
    }
}

#[test]
fn chunk_metadata_of_real_tiles_round_trips() {
    let mut checked: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut skipped = BTreeMap::new();
    for case in sorted_entries(&corpus()) {
        let name = case
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !name.contains(".filter.") {
            continue;
        }
        let array = case.join("array");
        let schema = first_schema(&array).expect("a schema");
        for fragment in sorted_entries(&array.join("__fragments")) {
            for (index, attribute) in schema.attributes.iter().enumerate() {
                let filters = &attribute.filters.filters;
                let var = attribute.cell_val_num == u32::MAX;
                if filters.len() != 1 {
                    *skipped.entry("multi-filter attribute").or_insert(0) += 1;
                    continue;
                }
                let filter = filters[0].filter_type;
                // A var-sized string with RLE or dictionary encodes whole
                // strings in its var file; other var fields are left out.
                let string_encoding = var
                    && attribute.datatype.is_string()
                    && matches!(filter, FilterType::Rle | FilterType::Dictionary);
                if var && !string_encoding {
                    *skipped.entry("var-sized attribute").or_insert(0) += 1;
                    continue;
                }
                let file = if var {
                    format!("a{index}_var.tdb")
                } else {
                    format!("a{index}.tdb")
                };
                let Ok(data) = std::fs::read(fragment.join(file)) else {
                    continue;
                };
                let mut at = 0usize;
                while at < data.len() {
                    let (tile, used): (Tile, u64) = match read_prefix(&data[at..], (), "Tile") {
                        Ok(parsed) => parsed,
                        Err(err) => {
                            failures.push(format!("{name}: tile at {at}: {err}"));
                            break;
                        }
                    };
                    at += used as usize;
                    for chunk in &tile.chunks {
                        let result = if string_encoding {
                            check_string_metadata(filter, &chunk.metadata)
                        } else {
                            check_metadata(filter, attribute.datatype.size(), &chunk.metadata)
                        };
                        match result {
                            Ok(kind) => *checked.entry(kind).or_insert(0) += 1,
                            Err(message) if message.starts_with("SKIP") => {
                                *skipped
                                    .entry("filter without chunk metadata here")
                                    .or_insert(0) += 1;
                            }
                            Err(message) => failures.push(format!("{name} ({filter}): {message}")),
                        }
                    }
                }
            }
        }
    }
    println!("{checked:?}\nskipped: {skipped:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for kind in [
        "CompressionChunkMetadata",
        "ChecksumChunkMetadata",
        "PartSizesMetadata",
        "BitWidthReductionMetadata",
        "PositiveDeltaMetadata",
        "VarStringDictionaryMetadata",
    ] {
        assert!(
            checked.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} checked"
        );
    }
}
