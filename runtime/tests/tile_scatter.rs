//! Decoding a tile straight into the places a read wants its bytes
//! (`unfilter_tile_scattered`, the dense read path): every run must receive
//! exactly the bytes of the whole unfiltered tile at its offset (or, for a
//! run across the tile, its cells one every so many bytes), whatever the
//! runs' sizes and wherever they cross chunk boundaries; chunks no run
//! touches are not decoded; faults are reported, never panics.

use proptest::prelude::*;
use tiledb_runtime::filter::{Datatype, Filter, FilterContext, FilterPipeline};
use tiledb_runtime::tile::{
    filter_tile, parse_chunks, unfilter_tile, unfilter_tile_scattered, Across, ScatterRun, TileJob,
};

fn ctx() -> FilterContext {
    FilterContext::new(Datatype::Int64, 8, 22)
}

fn pipelines() -> Vec<FilterPipeline> {
    vec![
        FilterPipeline::default(),
        FilterPipeline::new(vec![Filter::Zstd { level: 1 }]),
        FilterPipeline::new(vec![Filter::ByteShuffle, Filter::Lz4 { level: 0 }]),
        FilterPipeline::new(vec![
            Filter::Delta {
                level: 0,
                reinterpret: None,
            },
            Filter::Gzip { level: 1 },
        ]),
    ]
}

/// `cells` int64 values that compress, but not to nothing.
fn cells(cells: usize, seed: u64) -> Vec<u8> {
    (0..cells as u64)
        .flat_map(|i| (i / 3).wrapping_mul(seed | 1).to_le_bytes())
        .collect()
}

fn job(bytes: &[u8], expected_len: u64) -> TileJob<'_> {
    TileJob {
        bytes,
        file_offset: 1000,
        index: 7,
        expected_len,
        wanted: None,
    }
}

/// Scatters `runs` (tile offset, length) of `filtered` and returns what each
/// run received.
fn scatter(
    filtered: &[u8],
    pipeline: &FilterPipeline,
    expected_len: u64,
    runs: &[(u64, usize)],
) -> tiledb_runtime::Result<Vec<Vec<u8>>> {
    let mut outputs: Vec<Vec<u8>> = runs.iter().map(|(_, len)| vec![0xEE; *len]).collect();
    let places = outputs
        .iter_mut()
        .zip(runs)
        .map(|(dest, (offset, _))| ScatterRun {
            tile_offset: *offset,
            dest,
            across: None,
        })
        .collect();
    unfilter_tile_scattered(&job(filtered, expected_len), pipeline, &ctx(), places)?;
    Ok(outputs)
}

/// Scatters `runs` (tile offset, cells, cell size, distance between cells)
/// of `filtered`, each across the tile, beside one run of consecutive
/// bytes `plain` when given, and returns what each received.
fn scatter_across(
    filtered: &[u8],
    pipeline: &FilterPipeline,
    expected_len: u64,
    runs: &[(u64, usize, u64, u64)],
    plain: Option<(u64, usize)>,
) -> tiledb_runtime::Result<(Vec<Vec<u8>>, Vec<u8>)> {
    let mut outputs: Vec<Vec<u8>> = runs
        .iter()
        .map(|(_, cells, cell, _)| vec![0xEE; cells * *cell as usize])
        .collect();
    let mut consecutive = vec![0xEE; plain.map_or(0, |(_, len)| len)];
    let mut places: Vec<ScatterRun<'_>> = outputs
        .iter_mut()
        .zip(runs)
        .map(|(dest, (offset, _, cell, every))| ScatterRun {
            tile_offset: *offset,
            dest,
            across: Some(Across {
                cell: *cell,
                every: *every,
            }),
        })
        .collect();
    if let Some((offset, _)) = plain {
        places.push(ScatterRun {
            tile_offset: offset,
            dest: &mut consecutive,
            across: None,
        });
    }
    unfilter_tile_scattered(&job(filtered, expected_len), pipeline, &ctx(), places)?;
    Ok((outputs, consecutive))
}

/// Cells `at`, `at + every`, ... (`cells` of `cell` bytes) of `data`.
fn cells_across(data: &[u8], at: u64, cells: usize, cell: u64, every: u64) -> Vec<u8> {
    (0..cells as u64)
        .flat_map(|i| {
            let from = (at + i * every) as usize;
            data[from..from + cell as usize].to_vec()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn runs_across_receive_the_tiles_cells(
        cell_count in 1usize..40_000,
        seed in any::<u64>(),
        which in 0usize..4,
        cell_kind in 0usize..5,
        raw_runs in prop::collection::vec((any::<u64>(), 1u64..5_000, 0usize..600), 1..12),
        plain in prop::option::of((any::<u64>(), 0usize..70_000)),
    ) {
        let data = cells(cell_count, seed);
        let pipeline = &pipelines()[which];
        let filtered = filter_tile(&data, pipeline, &ctx()).unwrap();
        let len = data.len() as u64;
        // Cells of 1 to 16 bytes, or of 3 (a size with no fast path); a
        // distance of at least one cell; as many cells as fit.
        let cell = [1u64, 3, 4, 8, 16][cell_kind];
        let runs: Vec<(u64, usize, u64, u64)> = raw_runs
            .iter()
            .filter(|_| len >= cell)
            .map(|(at, every, n)| {
                let at = at % (len - cell + 1);
                let every = cell + every % 4_096;
                let fit = ((len - cell - at) / every + 1) as usize;
                (at, (*n).min(fit), cell, every)
            })
            .collect();
        let plain = plain.map(|(at, n)| {
            let at = at % len;
            (at, n.min((len - at) as usize))
        });
        let (got, consecutive) = scatter_across(&filtered, pipeline, len, &runs, plain).unwrap();
        for ((at, n, cell, every), bytes) in runs.iter().zip(&got) {
            prop_assert_eq!(bytes, &cells_across(&data, *at, *n, *cell, *every));
        }
        if let Some((at, n)) = plain {
            prop_assert_eq!(&consecutive[..], &data[at as usize..at as usize + n]);
        }
    }

    #[test]
    fn runs_receive_the_tiles_bytes(
        cell_count in 1usize..40_000,
        seed in any::<u64>(),
        which in 0usize..4,
        raw_runs in prop::collection::vec((any::<u64>(), 0usize..100_000), 0..12),
    ) {
        let data = cells(cell_count, seed);
        let pipeline = &pipelines()[which];
        let filtered = filter_tile(&data, pipeline, &ctx()).unwrap();
        let len = data.len() as u64;
        // Runs anywhere in the tile, of any length that fits; they may
        // overlap one another.
        let runs: Vec<(u64, usize)> = raw_runs
            .iter()
            .map(|(at, n)| {
                let at = at % len;
                (at, (*n).min((len - at) as usize))
            })
            .collect();
        let got = scatter(&filtered, pipeline, len, &runs).unwrap();
        for ((at, n), bytes) in runs.iter().zip(&got) {
            prop_assert_eq!(&bytes[..], &data[*at as usize..*at as usize + n]);
        }
    }
}

#[test]
fn every_cell_of_a_multi_chunk_tile_one_cell_at_a_time() {
    // 20,000 cells: two chunks of 8,192 cells and one of 3,616.
    let data = cells(20_000, 11);
    for pipeline in pipelines() {
        let filtered = filter_tile(&data, &pipeline, &ctx()).unwrap();
        assert_eq!(parse_chunks(&filtered).unwrap().len(), 3, "{pipeline:?}");
        let runs: Vec<(u64, usize)> = (0..20_000u64).rev().map(|c| (c * 8, 8)).collect();
        let got = scatter(&filtered, &pipeline, data.len() as u64, &runs).unwrap();
        let whole: Vec<u8> = got.into_iter().rev().flatten().collect();
        assert_eq!(whole, data, "{pipeline:?}");
        // And one run over the whole tile, crossing every chunk boundary.
        let got = scatter(&filtered, &pipeline, data.len() as u64, &[(0, data.len())]).unwrap();
        assert_eq!(got[0], data, "{pipeline:?}");
    }
}

/// Where chunk `c` of a filtered tile starts and how many stored bytes it
/// has after its header.
fn chunk_body(filtered: &[u8], c: usize) -> std::ops::Range<usize> {
    let chunk = parse_chunks(filtered).unwrap()[c];
    let start = chunk.offset + 12 + chunk.metadata.len();
    start..start + chunk.data.len()
}

#[test]
fn chunks_no_run_touches_are_not_decoded() {
    let data = cells(20_000, 5);
    let pipeline = FilterPipeline::new(vec![Filter::Zstd { level: 1 }]);
    let mut filtered = filter_tile(&data, &pipeline, &ctx()).unwrap();
    // Ruin the second chunk's compressed bytes.
    let body = chunk_body(&filtered, 1);
    filtered[body].fill(0xFF);
    // The whole tile does not decode...
    let whole = unfilter_tile(&filtered, &pipeline, &ctx(), data.len() as u64);
    assert!(whole.is_err());
    // ...but runs in the first and third chunks do.
    let runs = [(8, 800), (2 * 65_536 + 16, 64)];
    let got = scatter(&filtered, &pipeline, data.len() as u64, &runs).unwrap();
    assert_eq!(got[0], &data[8..808]);
    assert_eq!(got[1], &data[2 * 65_536 + 16..2 * 65_536 + 80]);
    // A run reaching into the ruined chunk fails, naming the chunk, the
    // filter and the tile.
    let err = scatter(&filtered, &pipeline, data.len() as u64, &[(65_000, 1_000)]).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("chunk 1") && text.contains("ZSTD"), "{text}");
    assert!(text.contains("tile 7"), "{text}");
}

#[test]
fn faults_are_errors() {
    let data = cells(10_000, 3);
    let pipeline = FilterPipeline::default();
    let filtered = filter_tile(&data, &pipeline, &ctx()).unwrap();
    let len = data.len() as u64;
    // A run past the tile's end.
    assert!(scatter(&filtered, &pipeline, len, &[(len - 8, 16)]).is_err());
    assert!(scatter(&filtered, &pipeline, len, &[(u64::MAX - 2, 8)]).is_err());
    // Chunks that do not add up to the tile's size.
    assert!(scatter(&filtered, &pipeline, len + 8, &[(0, 8)]).is_err());
    // A stored chunk shorter than it says (unfiltered: copied as is).
    let mut short = filtered.clone();
    short[12..16].copy_from_slice(&100u32.to_le_bytes());
    assert!(scatter(&short, &pipeline, len, &[(0, 8)]).is_err());
    // Truncated framing.
    assert!(scatter(&filtered[..20], &pipeline, len, &[(0, 8)]).is_err());
    // No runs: nothing is decoded, and nothing fails.
    assert_eq!(scatter(&filtered, &pipeline, len, &[]).unwrap().len(), 0);
}

#[test]
fn a_column_of_a_tile_read_across_its_chunks() {
    // A tile of 160 rows of 125 int64 cells: every column, read down the
    // rows, crosses both chunk boundaries, and the second boundary (at
    // cell 16,384) falls inside a row.
    let data = cells(20_000, 7);
    for pipeline in pipelines() {
        let filtered = filter_tile(&data, &pipeline, &ctx()).unwrap();
        let runs: Vec<(u64, usize, u64, u64)> =
            (0..125u64).map(|c| (c * 8, 160, 8, 1_000)).collect();
        let (got, _) = scatter_across(&filtered, &pipeline, 160_000, &runs, None).unwrap();
        for (c, column) in got.iter().enumerate() {
            assert_eq!(
                column,
                &cells_across(&data, c as u64 * 8, 160, 8, 1_000),
                "{pipeline:?}"
            );
        }
    }
}

#[test]
fn runs_across_that_do_not_fit_are_errors() {
    let data = cells(10_000, 3);
    let pipeline = FilterPipeline::default();
    let filtered = filter_tile(&data, &pipeline, &ctx()).unwrap();
    let len = data.len() as u64;
    let fails = |runs: &[(u64, usize, u64, u64)]| {
        scatter_across(&filtered, &pipeline, len, runs, None).is_err()
    };
    // The last cell one byte past the tile.
    assert!(fails(&[(1, 10, 8, (len - 8) / 9)]));
    assert!(!fails(&[(0, 10, 8, (len - 8) / 9)]));
    // Cells that overlap (closer than a cell), a cell of no bytes, and a
    // distance that overflows.
    assert!(fails(&[(0, 4, 8, 4)]));
    assert!(fails(&[(0, 4, 0, 8)]));
    assert!(fails(&[(0, 3, 8, u64::MAX / 2)]));
    // Whole cells are what a run across takes: 12 bytes of 8-byte cells
    // fail.
    let mut dest = vec![0u8; 12];
    let run = ScatterRun {
        tile_offset: 0,
        dest: &mut dest,
        across: Some(Across { cell: 8, every: 16 }),
    };
    assert!(unfilter_tile_scattered(&job(&filtered, len), &pipeline, &ctx(), vec![run]).is_err());
}
