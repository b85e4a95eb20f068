//! The generated zero-copy views (`view = true` in spec/) against the
//! generated binrw structs of the same layouts, on real data tiles: every
//! tile of every fixed-size or string-encoded attribute of the TileDB 2.30
//! corpus's filter cases, and the chunk metadata of each single-filter
//! pipeline. A view must read what binrw reads (the same fields, the same
//! bytes consumed), its writer must write the bytes back exactly, and every
//! shorter prefix must be refused as truncated, never read.

#[path = "common/corpus.rs"]
mod corpus;

use corpus::{corpus, first_schema, sorted_entries};

use binrw::BinRead;
use tiledb_runtime::error::Cause;
use tiledb_runtime::format::generated::*;
use tiledb_runtime::format::io::{read_prefix, write_to_vec};
use tiledb_runtime::format::view::{FaultKind, Pieces, View, ViewFault};
use tiledb_runtime::Error;

/// Every proper prefix of `bytes` is refused as truncated by the view.
fn prefixes_are_truncated<'a, V: View<'a>>(bytes: &'a [u8], args: V::Args, what: &str) {
    for cut in 0..bytes.len() {
        match V::parse_with(&bytes[..cut], args) {
            Err(ViewFault {
                kind: FaultKind::Truncated { .. },
                ..
            }) => {}
            other => panic!("{what} cut at {cut} of {}: {other:?}", bytes.len()),
        }
    }
}

/// Reads `metadata` with binrw as `T`, returns it and the bytes it used.
fn binrw_read<T: BinRead>(metadata: &[u8], args: T::Args<'_>, what: &str) -> (T, usize) {
    let (value, used) = read_prefix::<T>(metadata, args, what).expect(what);
    (value, used as usize)
}

fn check_compression(md: &[u8]) {
    let (value, used) = binrw_read::<CompressionChunkMetadata>(md, (), "compression");
    let (view, rest) = CompressionChunkMetadataView::parse(md).unwrap();
    assert_eq!(rest.len(), md.len() - used);
    let parts: Vec<(u32, u32)> = view
        .md_parts()
        .iter()
        .chain(view.data_parts().iter())
        .map(|p| p.map(|p| (p.orig_len(), p.compressed_len())).unwrap())
        .collect();
    let expected: Vec<(u32, u32)> = value
        .md_parts
        .iter()
        .chain(&value.data_parts)
        .map(|p| (p.orig_len, p.compressed_len))
        .collect();
    assert_eq!(parts, expected);
    let mut out = Vec::new();
    CompressionChunkMetadataView::write(&mut out, &value.md_parts, &value.data_parts).unwrap();
    assert_eq!(out, &md[..used]);
    prefixes_are_truncated::<CompressionChunkMetadataView<'_>>(&md[..used], (), "compression");
}

fn check_checksum(md: &[u8], digest_len: u64) {
    let args = ChecksumChunkMetadataBinReadArgs::builder()
        .digest_len(digest_len)
        .finalize();
    let (value, used) = binrw_read::<ChecksumChunkMetadata>(md, args, "checksum");
    let (view, rest) = ChecksumChunkMetadataView::parse(md, digest_len).unwrap();
    assert_eq!(rest.len(), md.len() - used);
    for (read, expected) in view
        .md_checksums()
        .iter()
        .chain(view.data_checksums().iter())
        .zip(value.md_checksums.iter().chain(&value.data_checksums))
    {
        let read = read.unwrap();
        assert_eq!(
            (read.part_len(), read.digest()),
            (expected.part_len, &expected.digest[..])
        );
    }
    let mut out = Vec::new();
    ChecksumChunkMetadataView::write(
        &mut out,
        digest_len,
        &value.md_checksums,
        &value.data_checksums,
    )
    .unwrap();
    assert_eq!(out, &md[..used]);
    prefixes_are_truncated::<ChecksumChunkMetadataView<'_>>(&md[..used], (digest_len,), "checksum");
}

fn check_part_sizes(md: &[u8]) {
    let (value, used) = binrw_read::<PartSizesMetadata>(md, (), "part sizes");
    let (view, _) = PartSizesMetadataView::parse(md).unwrap();
    assert_eq!(
        view.part_sizes().values().collect::<Vec<u32>>(),
        value.part_sizes
    );
    let mut out = Vec::new();
    PartSizesMetadataView::write(&mut out, &value.part_sizes).unwrap();
    assert_eq!(out, &md[..used]);
    prefixes_are_truncated::<PartSizesMetadataView<'_>>(&md[..used], (), "part sizes");
}

fn check_bit_width(md: &[u8], value_size: u64) {
    let args = BitWidthReductionMetadataBinReadArgs::builder()
        .value_size(value_size)
        .finalize();
    let (value, used) = binrw_read::<BitWidthReductionMetadata>(md, args, "bit width");
    let (view, _) = BitWidthReductionMetadataView::parse(md, value_size).unwrap();
    assert_eq!(view.orig_len(), value.orig_len);
    for (read, expected) in view.windows().iter().zip(&value.windows) {
        let read = read.unwrap();
        assert_eq!(
            (read.offset(), read.bits(), read.window_bytes()),
            (&expected.offset[..], expected.bits, expected.window_bytes)
        );
    }
    let mut out = Vec::new();
    BitWidthReductionMetadataView::write(&mut out, value_size, value.orig_len, &value.windows)
        .unwrap();
    assert_eq!(out, &md[..used]);
    prefixes_are_truncated::<BitWidthReductionMetadataView<'_>>(
        &md[..used],
        (value_size,),
        "bit width",
    );
}

fn check_positive_delta(md: &[u8], value_size: u64) {
    let args = PositiveDeltaMetadataBinReadArgs::builder()
        .value_size(value_size)
        .finalize();
    let (value, used) = binrw_read::<PositiveDeltaMetadata>(md, args, "positive delta");
    let (view, _) = PositiveDeltaMetadataView::parse(md, value_size).unwrap();
    for (read, expected) in view.windows().iter().zip(&value.windows) {
        let read = read.unwrap();
        assert_eq!(
            (read.first(), read.window_bytes()),
            (&expected.first[..], expected.window_bytes)
        );
    }
    let mut out = Vec::new();
    PositiveDeltaMetadataView::write(&mut out, value_size, &value.windows).unwrap();
    assert_eq!(out, &md[..used]);
    prefixes_are_truncated::<PositiveDeltaMetadataView<'_>>(
        &md[..used],
        (value_size,),
        "positive delta",
    );
}

fn check_strings(md: &[u8], dictionary: bool) {
    if dictionary {
        let (value, used) = binrw_read::<VarStringDictionaryMetadata>(md, (), "dictionary");
        let (view, _) = VarStringDictionaryMetadataView::parse(md).unwrap();
        assert_eq!(
            (view.input_len(), view.output_len(), view.offsets_len()),
            (value.input_len, value.output_len, value.offsets_len)
        );
        assert_eq!(
            (view.id_width(), view.str_len_width(), view.dict()),
            (value.id_width, value.str_len_width, &value.dict[..])
        );
        let mut out = Vec::new();
        VarStringDictionaryMetadataView::write(
            &mut out,
            value.input_len,
            value.output_len,
            value.offsets_len,
            value.id_width,
            value.str_len_width,
            value.dict.as_slice(),
        )
        .unwrap();
        assert_eq!(out, &md[..used]);
        prefixes_are_truncated::<VarStringDictionaryMetadataView<'_>>(&md[..used], (), "dict");
    } else {
        let (value, used) = binrw_read::<VarStringRleMetadata>(md, (), "rle");
        let (view, _) = VarStringRleMetadataView::parse(md).unwrap();
        assert_eq!(
            (view.input_len(), view.output_len(), view.offsets_len()),
            (value.input_len, value.output_len, value.offsets_len)
        );
        let mut out = Vec::new();
        VarStringRleMetadataView::write(
            &mut out,
            value.input_len,
            value.output_len,
            value.offsets_len,
            view.run_len_width(),
            view.str_len_width(),
        )
        .unwrap();
        assert_eq!(out, &md[..used]);
        prefixes_are_truncated::<VarStringRleMetadataView<'_>>(&md[..used], (), "rle");
    }
}

/// One tile through [`TileView`] and through binrw's [`Tile`]; returns the
/// bytes it takes and the chunks' metadata.
fn check_tile(bytes: &[u8]) -> (usize, Vec<Vec<u8>>) {
    let (tile, used) = binrw_read::<Tile>(bytes, (), "Tile");
    let (view, rest) = TileView::parse(bytes).unwrap();
    assert_eq!(rest.len(), bytes.len() - used);
    assert_eq!(view.n_chunks(), tile.chunks.len() as u64);
    for (read, expected) in view.chunks().iter().zip(&tile.chunks) {
        let read = read.unwrap();
        assert_eq!(
            (read.orig_len(), read.metadata(), read.data()),
            (
                expected.orig_len,
                &expected.metadata[..],
                &expected.data[..]
            )
        );
        // The writer takes pieces as well as slices, and writes what binrw does.
        let (mut whole, mut pieces) = (Vec::new(), Vec::new());
        TileChunkView::write(&mut whole, read.orig_len(), read.metadata(), read.data()).unwrap();
        let halves = read.data().split_at(read.data().len() / 2);
        TileChunkView::write(
            &mut pieces,
            read.orig_len(),
            &Pieces(&[read.metadata()]),
            &Pieces(&[halves.0, halves.1]),
        )
        .unwrap();
        assert_eq!(whole, pieces);
        assert_eq!(whole, write_to_vec(expected, (), "TileChunk").unwrap());
    }
    let mut out = Vec::new();
    TileView::write(&mut out, &tile.chunks).unwrap();
    assert_eq!(out, &bytes[..used]);
    if used < 4096 {
        prefixes_are_truncated::<TileView<'_>>(&bytes[..used], (), "Tile");
    }
    (used, tile.chunks.into_iter().map(|c| c.metadata).collect())
}

#[test]
fn views_read_and_write_what_binrw_does_on_real_tiles() {
    let mut tiles = 0usize;
    let mut metadata = std::collections::BTreeMap::<FilterType, usize>::new();
    for case in sorted_entries(&corpus()) {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        if !name.contains(".filter.") {
            continue;
        }
        let array = case.join("array");
        let Some(schema) = first_schema(&array) else {
            continue;
        };
        for fragment in sorted_entries(&array.join("__fragments")) {
            for (index, attribute) in schema.attributes.iter().enumerate() {
                let filters = &attribute.filters.filters;
                let var = attribute.cell_val_num == u32::MAX;
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
                    let (used, chunk_metadata) = check_tile(&data[at..]);
                    at += used;
                    tiles += 1;
                    let [filter] = filters.as_slice() else {
                        continue;
                    };
                    let filter = filter.filter_type;
                    let size = attribute.datatype.size();
                    for md in &chunk_metadata {
                        if md.is_empty() {
                            continue;
                        }
                        match filter {
                            FilterType::Rle | FilterType::Dictionary
                                if var && attribute.datatype.is_string() =>
                            {
                                check_strings(md, filter == FilterType::Dictionary);
                            }
                            _ if var => continue,
                            FilterType::Gzip
                            | FilterType::Zstd
                            | FilterType::Lz4
                            | FilterType::Bzip2
                            | FilterType::Rle
                            | FilterType::DoubleDelta
                            | FilterType::Delta => check_compression(md),
                            FilterType::ChecksumMd5 => check_checksum(md, 16),
                            FilterType::ChecksumSha256 => check_checksum(md, 32),
                            FilterType::Bitshuffle
                            | FilterType::Byteshuffle
                            | FilterType::Xor
                            | FilterType::ScaleFloat
                            | FilterType::Webp => check_part_sizes(md),
                            FilterType::BitWidthReduction => check_bit_width(md, size),
                            FilterType::PositiveDelta => check_positive_delta(md, size),
                            _ => continue,
                        }
                        *metadata.entry(filter).or_insert(0) += 1;
                    }
                }
            }
        }
    }
    println!("{tiles} tiles, chunk metadata per filter: {metadata:?}");
    assert!(tiles > 50, "only {tiles} tiles");
    for filter in [
        FilterType::Zstd,
        FilterType::ChecksumSha256,
        FilterType::Byteshuffle,
        FilterType::BitWidthReduction,
        FilterType::PositiveDelta,
        FilterType::Dictionary,
        FilterType::Rle,
    ] {
        assert!(
            metadata.get(&filter).copied().unwrap_or(0) > 0,
            "no {filter} checked"
        );
    }
}

/// A fixed value the spec states (`value`) is checked on reading: the
/// string encodings' metadata starts with 0 metadata parts and 1 data part.
#[test]
fn a_fixed_value_that_differs_is_corrupt() {
    let mut md = Vec::new();
    VarStringRleMetadataView::write(&mut md, 10, 4, 16, 1, 1).unwrap();
    assert_eq!(&md[..8], &[0, 0, 0, 0, 1, 0, 0, 0]);
    md[4] = 2;
    assert_eq!(
        VarStringRleMetadataView::parse(&md).unwrap_err(),
        Error::corrupt(
            4,
            "VarStringRleMetadata.n_data_parts",
            Cause::Inconsistent {
                what: "VarStringRleMetadata.n_data_parts",
                expected: 1,
                found: 2
            }
        )
    );
}

/// An element's error names the list, the element and its field, at the
/// element's offset; a count beyond the bytes is refused before any
/// element is read.
#[test]
fn list_errors_name_the_element() {
    let mut tile = Vec::new();
    let chunk = TileChunk {
        orig_len: 3,
        metadata: vec![9],
        data: vec![1, 2, 3],
    };
    TileView::write(&mut tile, &[chunk.clone(), chunk]).unwrap();
    // The second chunk's data length (at 8 + 16 + 4) claims 200 bytes.
    tile[28..32].copy_from_slice(&200u32.to_le_bytes());
    assert_eq!(
        TileView::parse(&tile).unwrap_err(),
        Error::corrupt(
            8 + 16 + 12 + 1,
            "Tile.chunks[1], TileChunk.data",
            Cause::Truncated {
                needed: 200,
                available: 3
            }
        )
    );
    // `parse_open` finds the same fault when the chunks are iterated.
    let open = TileView::parse_open(&tile).unwrap();
    let faults: Vec<Error> = open
        .chunks()
        .iter()
        .filter_map(|c| c.err().map(Error::from))
        .collect();
    assert_eq!(faults, [TileView::parse(&tile).unwrap_err()]);
    let mut md = Vec::new();
    PartSizesMetadataView::write(&mut md, &[1, 2]).unwrap();
    md[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(
        PartSizesMetadataView::parse(&md).unwrap_err(),
        Error::corrupt(
            4,
            "PartSizesMetadata.part_sizes",
            Cause::Truncated {
                needed: 4 * u32::MAX as u64,
                available: 8
            }
        )
    );
}

/// A writer refuses bytes of another size than the spec fixes, and leaves
/// its output as it was.
#[test]
fn a_writer_refuses_bytes_of_the_wrong_size() {
    let mut out = Vec::new();
    let err = AesPartView::write(&mut out, 4, 4, &[0; 11], &[0; 16]).unwrap_err();
    assert!(matches!(err, Error::Usage(_)), "{err:?}");
    let err = ChecksumView::write(&mut out, 16, 3, &[0u8; 32][..]).unwrap_err();
    assert!(matches!(err, Error::Usage(_)), "{err:?}");
    assert!(out.is_empty(), "{out:?}");
    AesPartView::write(&mut out, 4, 4, &[1; 12], &[2; 16]).unwrap();
    let (part, _) = AesPartView::parse(&out).unwrap();
    assert_eq!(
        (part.plain_len(), part.iv(), part.tag()),
        (4, &[1u8; 12][..], &[2u8; 16][..])
    );
}

/// The stored offsets tile of a string-encoded var field is the framing of
/// a tile without chunks, as the view writes and reads it.
#[test]
fn the_skipped_offsets_tile_is_a_tile_of_no_chunks() {
    let mut empty = Vec::new();
    TileView::write(&mut empty, &[] as &[TileChunk]).unwrap();
    assert_eq!(empty, tiledb_runtime::tile::SKIPPED_OFFSETS_TILE);
    let (tile, rest) = TileView::parse(&tiledb_runtime::tile::SKIPPED_OFFSETS_TILE).unwrap();
    assert_eq!(
        (tile.n_chunks(), tile.chunks().len(), rest.len()),
        (0, 0, 0)
    );
}

/// Parses `bytes` as `V`: the bytes it takes, or 0 for a fault, which must
/// convert into a corrupt-input error located within the bytes.
fn walk<'a, V: View<'a>>(bytes: &'a [u8], args: V::Args) -> usize {
    match V::parse_with(bytes, args) {
        Ok((_, rest)) => bytes.len() - rest.len(),
        Err(fault) => {
            // The fault converts into the runtime's error, located in the bytes.
            let Error::Corrupt { at, .. } = Error::from(fault) else {
                panic!("a view fault is corrupt input");
            };
            assert!(at.offset <= bytes.len() as u64, "{at:?}");
            0
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

    /// Arbitrary bytes and params never make a view panic or claim bytes
    /// it does not have; iterating its lists either yields elements or a
    /// fault located inside the bytes.
    #[test]
    fn arbitrary_bytes_are_read_or_refused(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        size in proptest::prelude::prop_oneof![1u64..=8, proptest::prelude::Just(u64::MAX)],
    ) {
        let b = &bytes[..];
        let used = walk::<TileView<'_>>(b, ())
            + walk::<CompressionChunkMetadataView<'_>>(b, ())
            + walk::<ChecksumChunkMetadataView<'_>>(b, (size,))
            + walk::<PartSizesMetadataView<'_>>(b, ())
            + walk::<BitWidthReductionMetadataView<'_>>(b, (size,))
            + walk::<PositiveDeltaMetadataView<'_>>(b, (size,))
            + walk::<Aes256GcmMetadataView<'_>>(b, ())
            + walk::<DeltaHeaderView<'_>>(b, ())
            + walk::<DoubleDeltaHeaderView<'_>>(b, ())
            + walk::<VarStringRleMetadataView<'_>>(b, ())
            + walk::<VarStringDictionaryMetadataView<'_>>(b, ());
        proptest::prop_assert!(used <= 11 * bytes.len());
        if let Ok(tile) = TileView::parse_open(b) {
            for chunk in tile.chunks().iter() {
                match chunk {
                    Ok(chunk) => proptest::prop_assert!(chunk.data().len() <= bytes.len()),
                    Err(fault) => proptest::prop_assert!(fault.at <= bytes.len() as u64),
                }
            }
        }
        if let Ok((md, _)) = BitWidthReductionMetadataView::parse(b, size) {
            for window in md.windows().iter() {
                proptest::prop_assert!(window.is_ok());
            }
        }
    }
}

/// AES-256-GCM's chunk metadata (the corpus has no encrypted arrays): an
/// encrypted generic tile's chunks, read by the view and by binrw alike and
/// written back byte for byte.
#[test]
fn aes_metadata_of_an_encrypted_generic_tile() {
    let payload: Vec<u8> = (0..150_000u32).map(|i| (i % 251) as u8).collect();
    let bytes =
        tiledb_runtime::tile::generic::write_generic_tile(&payload, 22, Some(&[7; 32])).unwrap();
    let (_, header_len) = read_prefix::<GenericTileHeader>(&bytes, (), "header").unwrap();
    let (tile, _) = TileView::parse(&bytes[header_len as usize..]).unwrap();
    assert!(tile.chunks().len() > 1);
    for chunk in tile.chunks().iter() {
        let md = chunk.unwrap().metadata();
        let (value, used) = binrw_read::<Aes256GcmMetadata>(md, (), "AES");
        assert_eq!(used, md.len());
        let (view, rest) = Aes256GcmMetadataView::parse(md).unwrap();
        assert!(rest.is_empty());
        // GZIP's metadata part, then the data part.
        assert_eq!((view.md_parts().len(), view.data_parts().len()), (1, 1));
        for (read, expected) in view
            .md_parts()
            .iter()
            .chain(view.data_parts().iter())
            .zip(value.md_parts.iter().chain(&value.data_parts))
        {
            let read = read.unwrap();
            assert_eq!(
                (
                    read.plain_len(),
                    read.encrypted_len(),
                    read.iv(),
                    read.tag()
                ),
                (
                    expected.plain_len,
                    expected.encrypted_len,
                    &expected.iv[..],
                    &expected.tag[..]
                )
            );
        }
        let mut out = Vec::new();
        Aes256GcmMetadataView::write(&mut out, &value.md_parts, &value.data_parts).unwrap();
        assert_eq!(out, md);
        prefixes_are_truncated::<Aes256GcmMetadataView<'_>>(md, (), "AES");
    }
}
