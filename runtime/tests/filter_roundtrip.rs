//! Round trips through the filter pipeline: arbitrary values, filtered and
//! unfiltered, must come back byte for byte.

use proptest::prelude::*;
use tiledb_runtime::filter::{Datatype, Filter, FilterContext, FilterPipeline};
use tiledb_runtime::tile::{filter_tile, unfilter_tile};

fn roundtrip(filters: Vec<Filter>, datatype: Datatype, cell_size: u64, data: &[u8]) -> Vec<u8> {
    let pipeline = FilterPipeline::new(filters);
    let ctx = FilterContext::new(datatype, cell_size, 22);
    let filtered = filter_tile(data, &pipeline, &ctx).expect("filter");
    unfilter_tile(&filtered, &pipeline, &ctx, data.len() as u64).expect("unfilter")
}

fn compressors() -> Vec<Filter> {
    vec![
        Filter::None,
        Filter::Gzip { level: -1 },
        Filter::Gzip { level: 9 },
        Filter::Zstd { level: 3 },
        Filter::Zstd { level: -10 },
        Filter::Lz4 { level: 1 },
        Filter::Bzip2 { level: 5 },
    ]
}

#[test]
fn compressors_roundtrip_across_chunks() {
    // 200 KiB of compressible and incompressible bytes: four chunks.
    let data: Vec<u8> = (0..200 * 1024u32)
        .map(|i| if i % 3 == 0 { (i * 7919 >> 5) as u8 } else { 0 })
        .collect();
    for f in compressors() {
        assert_eq!(
            roundtrip(vec![f.clone()], Datatype::Uint8, 1, &data),
            data,
            "{f:?}"
        );
    }
}

#[test]
fn empty_pipeline_frames_chunks() {
    let data: Vec<u8> = (0..70_000u32).map(|i| i as u8).collect();
    let pipeline = FilterPipeline::default();
    let ctx = FilterContext::new(Datatype::Uint8, 1, 22);
    let filtered = filter_tile(&data, &pipeline, &ctx).unwrap();
    // Two chunks of 65536 and 4464 bytes, each with a 12-byte header.
    assert_eq!(filtered.len(), 8 + 2 * 12 + data.len());
    assert_eq!(&filtered[..8], &2u64.to_le_bytes());
    assert_eq!(&filtered[8..12], &65536u32.to_le_bytes());
    assert_eq!(
        unfilter_tile(&filtered, &pipeline, &ctx, data.len() as u64).unwrap(),
        data
    );
}

proptest! {
    #[test]
    fn compressors_roundtrip(data in proptest::collection::vec(any::<u8>(), 0..3000)) {
        for f in compressors() {
            prop_assert_eq!(roundtrip(vec![f.clone()], Datatype::Uint8, 1, &data), data.clone());
        }
    }
}
