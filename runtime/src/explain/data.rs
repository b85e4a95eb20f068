//! A data file of a fragment explained: its tiles (from `files`), then —
//! when the fragment's schema can be found — each chunk's filter metadata
//! walked as the struct of the field's last filter, and each tile's cell
//! count for a fixed-size field.

use std::path::Path;

use super::fragment::array_dir;
use super::tiles::{explain_chunk_metadata, explain_data_tiles};
use super::walker::Span;
use crate::error::Result;
use crate::format::generated::{FilterPipeline, FilterType};
use crate::fragment::{footer_region, footer_schema_name};
use crate::schema::ArraySchema;
use crate::storage::LocalStorage;

/// What the schema says of the data file's field: its pipeline's last
/// filter, and the bytes of one cell (fixed-size data only).
struct FieldFacts {
    last_filter: Option<FilterType>,
    cell_size: Option<u64>,
}

/// The tiles of the data file at `path`.
pub fn explain_data_file(path: &Path, bytes: &[u8], key: Option<&[u8; 32]>) -> Result<Vec<Span>> {
    let mut spans = explain_data_tiles(bytes)?;
    let Some(facts) = field_facts(path, key) else {
        return Ok(spans);
    };
    for span in &mut spans {
        if let Some(last) = facts.last_filter {
            explain_chunk_metadata(bytes, span, last);
        }
        if let (Some(cell), Some(value)) = (facts.cell_size.filter(|c| *c > 0), &mut span.value) {
            let unfiltered: u64 = span
                .children
                .iter()
                .filter(|c| c.name == "Tile.chunks")
                .flat_map(|c| &c.children)
                .flat_map(|chunk| &chunk.children)
                // A chunk's `orig_len` (named without its struct, which the
                // runtime does not otherwise use; see `--unused`).
                .filter(|f| f.name.ends_with(".orig_len"))
                .filter_map(|f| f.value.as_deref()?.parse::<u64>().ok())
                .sum();
            value.push_str(&format!("; {} cell(s) of {cell} bytes", unfiltered / cell));
        }
    }
    Ok(spans)
}

/// The schema's facts for the field a data file holds (`a<i>`, `d<j>`,
/// with `_var` or `_validity`), from the schema its fragment's footer names.
fn field_facts(path: &Path, key: Option<&[u8; 32]>) -> Option<FieldFacts> {
    let metadata_path = path.with_file_name("__fragment_metadata.tdb");
    let metadata = std::fs::read(&metadata_path).ok()?;
    let (head, start) = footer_region(&metadata).ok()?;
    if head.version < 10 {
        return None;
    }
    let name = footer_schema_name(metadata.get(start as usize..)?).ok()?;
    let storage = LocalStorage::new(array_dir(&metadata_path)?);
    let schema =
        ArraySchema::load(&storage, &ArraySchema::path_for(name.as_deref()).ok()?, key).ok()?;
    let stored = &schema.stored;
    let stem = path.file_stem()?.to_str()?;
    let (field, suffix) = match stem.split_once('_') {
        Some((field, suffix)) => (field, suffix),
        None => (stem, ""),
    };
    let index: usize = field.get(1..)?.parse().ok()?;
    let last = |p: &FilterPipeline| p.filters.last().map(|f| f.filter_type);
    let offsets = FieldFacts {
        last_filter: last(&stored.offsets_filters),
        cell_size: Some(8),
    };
    Some(match (field.as_bytes().first()?, suffix) {
        (b'a', "validity") => FieldFacts {
            last_filter: stored.validity_filters.as_ref().and_then(last),
            cell_size: Some(1),
        },
        (b'a', "var") => FieldFacts {
            last_filter: last(&stored.attributes.get(index)?.filters),
            cell_size: None,
        },
        (b'a', "") => {
            let attribute = schema.attributes.get(index)?;
            match attribute.cell_size() {
                None => offsets,
                Some(size) => FieldFacts {
                    last_filter: last(&stored.attributes.get(index)?.filters),
                    cell_size: Some(size),
                },
            }
        }
        (b'd', suffix) => {
            let dimension = schema.dimensions.get(index)?;
            let own = stored.domain.dimensions.get(index)?.filters.as_ref();
            // A dimension with no filters of its own uses the coordinates' pipeline.
            let pipeline = own
                .filter(|p| !p.filters.is_empty())
                .unwrap_or(&stored.coords_filters);
            match (dimension.var, suffix) {
                (true, "") => offsets,
                (true, _) => FieldFacts {
                    last_filter: last(pipeline),
                    cell_size: None,
                },
                (false, _) => FieldFacts {
                    last_filter: last(pipeline),
                    cell_size: Some(dimension.coord_size()),
                },
            }
        }
        _ => return None,
    })
}
