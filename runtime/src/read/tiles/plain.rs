//! Reading part of a tile stored plainly: a fixed-size field (or validity)
//! without filters stores each chunk's cells as they are after its 12-byte
//! header, in chunks of TileDB's chunk size ([`chunk_size`]), so where the
//! chunks holding a given run of cells lie in the file follows from the
//! tile's offset alone. A read that needs a small part of such a tile (a
//! dense subarray cutting through it) fetches only those chunks: over a
//! network that is the bytes that matter, and a server reading the whole
//! object per request still sends far fewer. The planning of a read's
//! fetches ([`super::prefetch`]) and the load ([`super::TileSource`])
//! compute the same part, so the fetched ranges are the loaded ones.
//!
//! Nothing here trusts the layout: the part is taken only when the tile's
//! stored size is exactly the plain framing's, and the chunk headers
//! fetched are checked against it before any byte is used; a tile that
//! does not match is read whole (and its decode reports what is wrong).

use std::ops::Range;

use crate::format::generated::{Tile, TileChunk};
use crate::tile::{chunk_size, parse_chunks};

/// The bytes of a chunk header (original, filtered and metadata lengths;
/// a plain chunk has no metadata): spec/'s fixed part of a `TileChunk`.
const CHUNK_HEADER: u64 = TileChunk::MIN_SIZE;
/// The tile's chunk count in front of its chunks: spec/'s fixed part of a
/// `Tile`.
const CHUNK_COUNT: u64 = Tile::MIN_SIZE;
/// The fewest stored bytes a part must leave out to be read instead of the
/// whole tile: about what an object store would rather fetch than pay
/// another request for (the gap it merges ranges across), so that a part
/// that saves less stays one range with its neighbours.
const LEAVES_OUT: u64 = 256 * 1024;

/// The chunks of a plainly stored tile that hold some wanted bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlainPart {
    /// What to read, relative to the tile's first stored byte: the chunks'
    /// headers and cells, and the 8 bytes in front of the first (the
    /// tile's chunk count, or the end of the chunk before), which the load
    /// overwrites with the part's chunk count so that the bytes read frame
    /// a tile of their own.
    pub(crate) stored: Range<u64>,
    /// The part's unfiltered bytes within the tile's.
    pub(crate) cells: Range<u64>,
    /// How many chunks, and the unfiltered size of a full one.
    chunks: u64,
    chunk: u64,
}

impl PlainPart {
    /// Whether `bytes`, as read at [`PlainPart::stored`], frame the
    /// expected chunks once their first 8 bytes are the chunk count (which
    /// this writes): each header's lengths those of a plain chunk of its
    /// place. Anything else leaves the tile to be read whole.
    pub(crate) fn frame(&self, bytes: &mut [u8]) -> bool {
        let Some(count) = bytes.get_mut(..CHUNK_COUNT as usize) else {
            return false;
        };
        count.copy_from_slice(&self.chunks.to_le_bytes());
        let Ok(chunks) = parse_chunks(bytes) else {
            return false;
        };
        let mut at = self.cells.start;
        for chunk in &chunks {
            let len = self.chunk.min(self.cells.end - at);
            if u64::from(chunk.original_len) != len
                || chunk.data.len() as u64 != len
                || !chunk.metadata.is_empty()
            {
                return false;
            }
            at += len;
        }
        chunks.len() as u64 == self.chunks && at == self.cells.end
    }
}

/// The part of a tile of `expected_len` unfiltered bytes of `cell_size`-byte
/// cells, stored plainly in `stored_len` bytes, that holds its bytes
/// `wanted`; `None` when the tile is not stored plainly (its size is not
/// the plain framing's), the wanted bytes are not inside it, or the part is
/// not a small share of the tile: half of it or more, or leaving out less
/// than [`LEAVES_OUT`]. The whole tile is then read: one range, which
/// merges with its neighbours (a full read of fragments holding half of
/// each tile, say, stays a request per file and window, not per half).
pub(crate) fn plain_part(
    stored_len: u64,
    expected_len: u64,
    cell_size: u64,
    wanted: Range<u64>,
) -> Option<PlainPart> {
    if wanted.is_empty() || wanted.end > expected_len {
        return None;
    }
    let chunk = chunk_size(expected_len, cell_size).ok()?;
    if chunk < CHUNK_COUNT {
        return None;
    }
    let count = expected_len.div_ceil(chunk);
    let framed = count
        .checked_mul(CHUNK_HEADER)?
        .checked_add(CHUNK_COUNT)?
        .checked_add(expected_len)?;
    if framed != stored_len {
        return None;
    }
    let (first, end) = (wanted.start / chunk, wanted.end.div_ceil(chunk).min(count));
    // Chunk `c`'s header starts at 8 + c × (12 + chunk): the count's 8
    // bytes, then `c` full chunks (only the last may be short).
    let header_at = |c: u64| CHUNK_COUNT + c * (CHUNK_HEADER + chunk);
    let stored = header_at(first) - CHUNK_COUNT..header_at(end).min(stored_len);
    let part_len = stored.end - stored.start;
    if stored_len - part_len < LEAVES_OUT || part_len * 2 >= stored_len {
        return None;
    }
    Some(PlainPart {
        stored,
        cells: first * chunk..(end * chunk).min(expected_len),
        chunks: end - first,
        chunk,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{Datatype, FilterContext, FilterPipeline};
    use crate::tile::filter_tile;

    /// A plain tile of `cells` i64 cells (cell `i` holds `i`), as stored.
    fn plain_tile(cells: u64) -> (Vec<u8>, Vec<u8>) {
        let data: Vec<u8> = (0..cells as i64).flat_map(i64::to_le_bytes).collect();
        let ctx = FilterContext::new(Datatype::Int64, 8, 22);
        let stored = filter_tile(&data, &FilterPipeline::default(), &ctx).unwrap();
        (data, stored)
    }

    #[test]
    fn a_part_frames_its_chunks_and_holds_the_wanted_cells() {
        // 1 MiB of cells: 16 chunks of 64 KiB.
        let (data, stored) = plain_tile(131_072);
        let wanted = 200_000..300_000;
        let part = plain_part(stored.len() as u64, data.len() as u64, 8, wanted.clone()).unwrap();
        assert_eq!(
            part.cells,
            196_608..327_680,
            "chunks 3 to 4 hold the wanted bytes"
        );
        let mut bytes = stored[part.stored.start as usize..part.stored.end as usize].to_vec();
        assert!(part.frame(&mut bytes));
        let chunks = parse_chunks(&bytes).unwrap();
        let cells: Vec<u8> = chunks.iter().flat_map(|c| c.data.to_vec()).collect();
        assert_eq!(
            cells,
            data[part.cells.start as usize..part.cells.end as usize]
        );
    }

    #[test]
    fn the_last_short_chunk_ends_the_part() {
        // 100,000 cells: 12 chunks of 8,192 cells and one of 1,696.
        let (data, stored) = plain_tile(100_000);
        let len = data.len() as u64;
        let part = plain_part(stored.len() as u64, len, 8, len - 10..len).unwrap();
        assert_eq!(part.stored.end, stored.len() as u64);
        assert_eq!(part.cells, 12 * 65_536..len);
        let mut bytes = stored[part.stored.start as usize..].to_vec();
        assert!(part.frame(&mut bytes));
    }

    #[test]
    fn no_part_of_a_tile_not_stored_plainly_or_mostly_wanted() {
        let (data, stored) = plain_tile(131_072);
        let (len, stored_len) = (data.len() as u64, stored.len() as u64);
        assert!(
            plain_part(stored_len, len, 8, 0..len - 200_000).is_none(),
            "most of it"
        );
        assert!(
            plain_part(stored_len, len, 8, 0..len / 2).is_none(),
            "half of it"
        );
        assert!(
            plain_part(stored_len - 1, len, 8, 0..8).is_none(),
            "another framing"
        );
        assert!(
            plain_part(stored_len, len, 8, len..len + 8).is_none(),
            "past its end"
        );
        assert!(
            plain_part(stored_len, len, 8, 8..8).is_none(),
            "nothing wanted"
        );
        // Headers that do not frame plain chunks (a filtered chunk's
        // lengths) are refused before any cell is used.
        let part = plain_part(stored_len, len, 8, 0..8).unwrap();
        let mut bytes = stored[..part.stored.end as usize].to_vec();
        bytes[12..16].copy_from_slice(&1u32.to_le_bytes());
        assert!(!part.frame(&mut bytes));
    }
}
