//! The chunk-gathered packed tile ([`chunk_gathered_tile`]) against the
//! tile gathered whole: the same filtered bytes and the same metadata, for
//! dense runs (rows, strided columns, runs cut anywhere by the chunks) and
//! sparse lists of cells, integer types of every width, pipelines with and
//! without BYTESHUFFLE, and sums that may overflow (added cell by cell).

use super::*;
use crate::column::CellValue;
use crate::filter::Filter;

/// A small xorshift generator: reproducible cells without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The tile gathered whole, cell by cell, filtered and scanned by the
/// general functions.
fn expected(recipe: &TileRecipe, column: &Column, cells: &Cells<'_>) -> (Vec<u8>, TileMeta) {
    let cell_size = recipe.cell_size.unwrap_or(0);
    let mut data = Vec::new();
    cells.for_each(|c| {
        let i = c.unwrap_or(usize::MAX);
        data.extend_from_slice(&column.data[i * cell_size..(i + 1) * cell_size]);
    });
    let packed = Packed {
        data: &data,
        cell_size,
    };
    let meta = tile_meta::fixed_tile(recipe.datatype, recipe.kinds, &packed, None).into_recorded(
        false,
        cells.len() as u64,
        false,
    );
    let filtered = filter_tile(&data, &recipe.pipeline, &recipe.data_ctx).unwrap();
    (filtered, meta)
}

fn check<T: CellValue>(values: &[T], pipeline: &[Filter], rng: &mut Rng) {
    let column = Column::from_values("a", values);
    let t = column.datatype;
    let pipeline = FilterPipeline::new(pipeline.to_vec());
    let none = FilterPipeline::default();
    let recipe = recipe(
        t,
        Some(1),
        false,
        false,
        [&pipeline, &none, &none],
        vec![0; t.size() as usize],
        false,
        "a0".into(),
        None,
    );
    let n = values.len();
    // Rows of random lengths, some strided (a column-major input), the
    // last run ending at the column's end.
    let mut runs = Vec::new();
    let mut at = 0;
    while at < n {
        let len = (1 + rng.next() as usize % 5000).min(n - at);
        let step = if rng.next().is_multiple_of(4) && len > 1 {
            2
        } else {
            1
        };
        let len = if step == 2 {
            len.div_ceil(2).min((n - at) / 2).max(1)
        } else {
            len
        };
        runs.push(Run {
            from: Some(at),
            step,
            len,
        });
        at += if step == 2 { 2 * len - 1 } else { len };
    }
    let mut list: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        list.swap(i, rng.next() as usize % (i + 1));
    }
    for cells in [Cells::Runs(runs.clone()), Cells::Listed(&list)] {
        let pool = BufferPool::default();
        let built = chunk_gathered_tile(&recipe, &column, &cells, t.size() as usize, &pool)
            .expect("an integer tile with a pipeline is gathered by chunks")
            .unwrap();
        let (filtered, meta) = expected(&recipe, &column, &cells);
        let what = format!("{} cells of {}, {pipeline:?}", cells.len(), t.name());
        assert!(built.fixed == filtered, "filtered bytes differ: {what}");
        assert_eq!(built.meta.min, meta.min, "{what}");
        assert_eq!(built.meta.max, meta.max, "{what}");
        assert_eq!(built.meta.sum, meta.sum, "{what}");
        assert_eq!(built.meta.null_count, meta.null_count, "{what}");
    }
}

#[test]
fn a_tile_gathered_by_chunks_equals_the_tile_gathered_whole() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let pipelines = [
        vec![Filter::ByteShuffle, Filter::Lz4 { level: 0 }],
        vec![Filter::Zstd { level: 1 }],
        vec![Filter::ByteShuffle],
    ];
    for pipeline in &pipelines {
        for n in [1usize, 100, 8192, 20_011] {
            let small: Vec<i64> = (0..n).map(|_| (rng.next() % 1000) as i64 - 500).collect();
            check(&small, pipeline, &mut rng);
            // Magnitudes whose sum can overflow: added cell by cell.
            let large: Vec<i64> = (0..n).map(|_| rng.next() as i64).collect();
            check(&large, pipeline, &mut rng);
            let unsigned: Vec<u64> = (0..n).map(|_| rng.next()).collect();
            check(&unsigned, pipeline, &mut rng);
            let narrow: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
            check(&narrow, pipeline, &mut rng);
            let shorts: Vec<u16> = (0..n).map(|_| rng.next() as u16).collect();
            check(&shorts, pipeline, &mut rng);
            let bytes: Vec<i8> = (0..n).map(|_| rng.next() as i8).collect();
            check(&bytes, pipeline, &mut rng);
        }
    }
}

#[test]
fn floats_and_unfiltered_tiles_are_gathered_whole() {
    let column = Column::from_values("a", &[1.5f64, 2.5]);
    let none = FilterPipeline::default();
    let shuffle = FilterPipeline::new(vec![Filter::ByteShuffle]);
    let cells = Cells::Runs(vec![Run {
        from: Some(0),
        step: 1,
        len: 2,
    }]);
    let pool = BufferPool::default();
    for (datatype, pipeline) in [(Datatype::Float64, &shuffle), (Datatype::Int64, &none)] {
        let recipe = recipe(
            datatype,
            Some(1),
            false,
            false,
            [pipeline, &none, &none],
            vec![0; 8],
            false,
            "a0".into(),
            None,
        );
        assert!(chunk_gathered_tile(&recipe, &column, &cells, 8, &pool).is_none());
    }
}

/// Unfiltered tiles of several input runs, written from the runs.
mod unfiltered_runs {
    use super::*;
    use crate::filter::FilterPipeline;

    fn int64_recipe() -> TileRecipe {
        let none = FilterPipeline::default();
        recipe(
            Datatype::Int64,
            Some(1),
            false,
            false,
            [&none, &none, &none],
            vec![0; 8],
            false,
            "a0".into(),
            None,
        )
    }

    /// A tile of `rows` row segments of `width` cells, every other input
    /// row skipped (as a dense tile narrower than the write's rows).
    fn built(
        values: &[i64],
        rows: usize,
        width: usize,
    ) -> (Vec<u8>, TileMeta, Vec<u8>, TileMeta, bool) {
        let recipe = int64_recipe();
        let mut column = Column::new("a", Datatype::Int64, Some(1), false);
        column.data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let runs = (0..rows)
            .map(|r| Run {
                from: Some(2 * r * width),
                step: 1,
                len: width,
            })
            .collect();
        let cells = Cells::Runs(runs);
        let tile = build_tile(&recipe, &column, &cells, &BufferPool::default()).unwrap();
        let ours = match &tile.unframed {
            Some((frame, bytes)) => bytes.framed(frame).concat(),
            None => tile.fixed.clone(),
        };
        // The reference: the tile gathered, its metadata and frame as any
        // filtered tile's.
        let gathered: Vec<u8> = (0..rows)
            .flat_map(|r| column.data[2 * r * width * 8..(2 * r + 1) * width * 8].to_vec())
            .collect();
        let packed = Packed {
            data: &gathered,
            cell_size: 8,
        };
        let meta = tile_meta::fixed_tile(Datatype::Int64, recipe.kinds, &packed, None)
            .into_recorded(false, (rows * width) as u64, false);
        let framed = filter_tile(&gathered, &recipe.pipeline, &recipe.data_ctx).unwrap();
        let from_runs = matches!(tile.unframed, Some((_, TileBytes::Runs(_))));
        (ours, tile.meta, framed, meta, from_runs)
    }

    fn assert_same(values: &[i64], rows: usize, width: usize, runs: bool) {
        let (ours, ours_meta, framed, meta, from_runs) = built(values, rows, width);
        assert_eq!(from_runs, runs, "written from the input's runs");
        assert!(
            ours == framed,
            "{rows} rows of {width}: the framed tile differs"
        );
        assert_eq!(
            (
                ours_meta.min,
                ours_meta.max,
                ours_meta.sum,
                ours_meta.null_count
            ),
            (meta.min, meta.max, meta.sum, meta.null_count),
            "{rows} rows of {width}"
        );
    }

    #[test]
    fn a_tile_of_row_segments_is_framed_and_summed_as_when_gathered() {
        let (rows, width) = (64usize, 1000usize);
        let n = (2 * rows * width) as i64;
        let small: Vec<i64> = (0..n).map(|i| (i * 7919) % 2001 - 1000).collect();
        assert_same(&small, rows, width, true);
        // Sums that saturate part way: the runs' sums are not merged (the
        // tile is gathered), and the result is the gathered tile's.
        let large: Vec<i64> = (0..n)
            .map(|i| {
                if i % 3 == 0 {
                    i64::MIN + i
                } else {
                    i64::MAX - i
                }
            })
            .collect();
        assert_same(&large, rows, width, false);
    }
}
