//! The TileDB conformance kit.
