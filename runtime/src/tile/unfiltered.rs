//! A tile whose pipeline has no filters, framed without copying its cells:
//! the frame's own bytes (the chunk count, each chunk's lengths) are made
//! apart, and the cells are written between them straight from where they
//! are (`writev`), so the kernel's copy into the file is the only one.
//! The bytes written are those [`filter_tile`](super::filter_tile) gives.

use std::cell::RefCell;
use std::ops::Range;

use super::{chunk_size, fixed_chunk_bounds};
use crate::filter::{FilterContext, FilterPipeline};
use crate::format::generated::{TileChunk, TileChunkView, TileView};
use crate::format::view::{ByteSource, Element};
use crate::Result;

/// The frame of an unfiltered tile: in file order, for each chunk the
/// frame bytes `headers[header]` (the tile's chunk count before the first
/// chunk's lengths), then the tile's bytes `data`.
#[derive(Debug, Clone, Default)]
pub struct UnfilteredFrame {
    /// The frame's own bytes.
    pub headers: Vec<u8>,
    /// Per chunk: its frame bytes in `headers`, its bytes in the tile.
    pub chunks: Vec<(Range<usize>, Range<usize>)>,
}

impl UnfilteredFrame {
    /// The framed tile's size in bytes.
    pub fn len(&self) -> usize {
        self.headers.len() + self.chunks.iter().map(|(_, d)| d.len()).sum::<usize>()
    }

    /// Whether the framed tile has no bytes (never: it holds its chunk count).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The framed tile's pieces in file order, the tile's bytes taken
    /// from `data` (the tile's bytes, as long as the frame was made for).
    pub fn pieces<'a>(&'a self, data: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.chunks
            .iter()
            .flat_map(move |(h, d)| [&self.headers[h.clone()], &data[d.clone()]])
            .filter(|piece| !piece.is_empty())
    }
}

/// A chunk's bytes as the chunk's lengths count them, not appended: the
/// generated writer writes the lengths, the caller the bytes.
struct Deferred(usize);

impl ByteSource for Deferred {
    fn byte_len(&self) -> usize {
        self.0
    }
    fn append_to(&self, _out: &mut Vec<u8>) {}
}

/// One chunk as [`TileView::write`] takes it; records where its frame
/// bytes end.
struct DeferredChunk<'e> {
    len: usize,
    ends: &'e RefCell<Vec<usize>>,
}

impl Element<TileChunk, ()> for DeferredChunk<'_> {
    fn write_element(&self, out: &mut Vec<u8>, (): ()) -> Result<()> {
        let original_len = u32::try_from(self.len)
            .map_err(|_| crate::Error::Usage("a chunk exceeds 4 GiB".into()))?;
        TileChunkView::write(out, original_len, &[] as &[u8], &Deferred(self.len))?;
        self.ends.borrow_mut().push(out.len());
        Ok(())
    }
}

/// The frame of a tile of `len` bytes when `pipeline` has no filters (the
/// applied pipeline: an encrypted field's has one), cut into chunks as
/// [`filter_tile`](super::filter_tile) cuts it; `None` otherwise.
pub fn unfiltered_frame(
    len: usize,
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
) -> Result<Option<UnfilteredFrame>> {
    if !pipeline.filters.is_empty() {
        return Ok(None);
    }
    let chunk = if pipeline.uses_chunking(false, ctx.version, ctx.datatype) {
        chunk_size(len as u64, ctx.cell_size)? as usize
    } else {
        len
    };
    let bounds = fixed_chunk_bounds(len, chunk);
    let ends = RefCell::new(Vec::with_capacity(bounds.len()));
    let elements: Vec<DeferredChunk<'_>> = bounds
        .iter()
        .map(|&(start, end)| DeferredChunk {
            len: end - start,
            ends: &ends,
        })
        .collect();
    let mut headers =
        Vec::with_capacity(TileView::MIN_SIZE + TileChunkView::MIN_SIZE * bounds.len());
    TileView::write(&mut headers, &elements)?;
    drop(elements);
    let ends = ends.into_inner();
    let mut chunks = Vec::with_capacity(bounds.len());
    let mut from = 0;
    for (&end, &(start, stop)) in ends.iter().zip(&bounds) {
        chunks.push((from..end, start..stop));
        from = end;
    }
    // A tile of no chunks: its count alone.
    if chunks.is_empty() {
        chunks.push((0..headers.len(), 0..0));
    }
    Ok(Some(UnfilteredFrame { headers, chunks }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{Datatype, Filter};

    fn framed(data: &[u8], frame: &UnfilteredFrame) -> Vec<u8> {
        frame.pieces(data).flatten().copied().collect()
    }

    #[test]
    fn the_frame_with_the_cells_between_is_the_filtered_tile() {
        let ctx = FilterContext::new(Datatype::Int64, 8, 22);
        let pipeline = FilterPipeline::default();
        for len in [0usize, 8, 65_528, 65_536, 65_544, 3 * 65_536 + 24, 8 << 20] {
            let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let frame = unfiltered_frame(len, &pipeline, &ctx).unwrap().unwrap();
            let expected = super::super::filter_tile(&data, &pipeline, &ctx).unwrap();
            assert_eq!(frame.len(), expected.len(), "{len} bytes");
            assert!(framed(&data, &frame) == expected, "{len} bytes");
        }
        // Chunking off: one chunk of the whole tile.
        let whole = FilterPipeline {
            max_chunk_size: 0,
            ..FilterPipeline::default()
        };
        let data = vec![7u8; 200_000];
        let frame = unfiltered_frame(data.len(), &whole, &ctx).unwrap().unwrap();
        assert_eq!(frame.chunks.len(), 1);
        assert_eq!(
            framed(&data, &frame),
            super::super::filter_tile(&data, &whole, &ctx).unwrap()
        );
    }

    #[test]
    fn a_pipeline_with_a_filter_has_no_unfiltered_frame() {
        let ctx = FilterContext::new(Datatype::Int64, 8, 22);
        let mut pipeline = FilterPipeline::default();
        pipeline.filters.push(Filter::Zstd { level: 1 });
        assert!(unfiltered_frame(64, &pipeline, &ctx).unwrap().is_none());
    }
}
