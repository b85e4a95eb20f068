//! Loading the data tiles of one fragment field: read the persisted bytes,
//! unfilter them (many tiles at once, in parallel), and give access to the
//! cells ([`load_tiles`], [`load_tiles_pooled`]); or decode a tile's cells
//! straight into the places a result wants them, chunk by chunk, without
//! assembling the tile ([`TileSource`]). Reads of many fragments fetch
//! their tiles ahead, in batches across the fragments (`prefetch_tiles`).

mod data;
mod load;
mod plain;
mod pool;
mod prefetch;
mod source;
mod stored;

pub use data::{FieldShape, TileData};
pub use load::{load_tiles, load_tiles_pooled, TileSelection};
pub use pool::TilePool;
pub(crate) use prefetch::{prefetch_tile_parts, prefetch_tiles, WantedCells, WantedTiles};
pub use source::{StoredBuffers, TilePart, TileSource};
pub(crate) use stored::no_such_tile;
