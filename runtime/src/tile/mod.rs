//! Tiles: the chunked framing of filtered data, and generic tiles.
