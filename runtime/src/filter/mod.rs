//! The filter pipeline and every TileDB filter, in both directions.
