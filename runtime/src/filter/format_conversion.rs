//! Shims kept for the schema and generic-tile loaders: the conversion between
//! stored pipelines (the generated structures) and the runtime model lives in
//! [`FilterPipeline::from_stored`] / [`FilterPipeline::to_stored`], and the
//! filters use the generated [`Datatype`] itself.

use crate::error::Result;
use crate::filter::{Datatype, FilterPipeline};
use crate::format::generated as stored;

/// A stored datatype as the filters see it (the same type).
pub fn datatype(stored: stored::Datatype) -> Result<Datatype> {
    Ok(stored)
}

/// The runtime pipeline of a stored pipeline.
pub fn from_stored(pipeline: &stored::FilterPipeline) -> Result<FilterPipeline> {
    FilterPipeline::from_stored(pipeline)
}

/// The runtime pipeline of a stored pipeline read from a file of format
/// `version`: filter types that do not exist in that version are unsupported.
pub fn from_stored_at(pipeline: &stored::FilterPipeline, version: u32) -> Result<FilterPipeline> {
    FilterPipeline::from_stored_at(pipeline, version)
}

/// The stored form of a runtime pipeline.
pub fn to_stored(pipeline: &FilterPipeline) -> Result<stored::FilterPipeline> {
    Ok(pipeline.to_stored())
}
