//! A data file of a fragment explained: its tiles (from `files`), then —
//! when the fragment's schema can be found — each chunk's filter metadata
//! walked as the struct of the field's last filter, and each tile's cell
//! count for a fixed-size field.

use super::body::Body;
use super::fragment::{locate_footer, schema_of_fragment};
use super::fragment_folder::{array_dir, beside, file_stem};
use super::tiles::{explain_chunk_metadata, explain_data_tiles, metadata_stages, MetadataStage};
use super::walker::Span;
use crate::error::Result;
use crate::filter::{Datatype, Filter, FilterPipeline, FilterType};
use crate::format::generated::{
    field_files_by_index, field_files_percent_encoded, DATA_FILE_SUFFIX, FRAGMENT_METADATA_FILE,
};
use crate::fragment::{footer_schema_name, percent_encode_v8};
use crate::schema::ArraySchema;
use crate::storage::{RelPath, Storage};

/// What the schema says of the data file's field: the filters that leave
/// metadata in its chunks, and the bytes of one cell (`None`: var-sized
/// data, whose cells the offsets file counts).
struct FieldFacts {
    stages: Vec<MetadataStage>,
    cell_size: Option<u64>,
}

/// The tiles of the data file `file` of `storage`.
pub fn explain_data_file(
    storage: &dyn Storage,
    file: &RelPath,
    bytes: &[u8],
    key: Option<&[u8; 32]>,
) -> Result<Body> {
    if let Some(body) = super::legacy13::explain_legacy13_data_file(storage, file, bytes)? {
        return Ok(body);
    }
    let mut spans = explain_data_tiles(bytes)?;
    let Some(facts) = field_facts(storage, file, key) else {
        return Ok(Body::whole(spans, "Tile"));
    };
    // A var-sized data file's cells are counted by its offsets file, tile by tile.
    let offsets_cells = match facts.cell_size {
        None => offsets_tile_cells(storage, file),
        Some(_) => Vec::new(),
    };
    for (index, span) in spans.iter_mut().enumerate() {
        explain_chunk_metadata(bytes, span, &facts.stages);
        let cells = match facts.cell_size {
            Some(0) => continue,
            // No bytes: offsets the strings' encoding rebuilds (not stored).
            Some(cell) => Some(unfiltered_bytes(span) / cell)
                .filter(|n| *n > 0)
                .map(|n| (n, format!("{cell} bytes"))),
            // Offsets rebuilt from the strings' encoding are not stored: the
            // var-string metadata gives their bytes, 8 per cell.
            None => offsets_cells
                .get(index)
                .copied()
                .filter(|n| *n > 0)
                .or_else(|| Some(sum_of(span, "Metadata.offsets_len") / 8).filter(|n| *n > 0))
                .map(|n| (n, "var size".to_string())),
        };
        if let (Some((n, size)), Some(value)) = (cells, &mut span.value) {
            value.push_str(&format!("; {n} cell(s) of {size}"));
        }
    }
    Ok(Body::whole(spans, "Tile"))
}

/// The sum of the values of the fields under `span` whose names end with
/// `suffix`.
fn sum_of(span: &Span, suffix: &str) -> u64 {
    let own = span
        .name
        .ends_with(suffix)
        .then(|| span.value.as_deref()?.parse::<u64>().ok())
        .flatten()
        .unwrap_or(0);
    own + span.children.iter().map(|c| sum_of(c, suffix)).sum::<u64>()
}

/// The unfiltered bytes of a tile: its chunks' `orig_len` (named without
/// the chunk's struct, which the runtime does not otherwise use; see
/// `--unused`).
fn unfiltered_bytes(tile: &Span) -> u64 {
    tile.children
        .iter()
        .filter(|c| c.name == "Tile.chunks")
        .flat_map(|c| &c.children)
        .flat_map(|chunk| &chunk.children)
        .filter(|f| f.name.ends_with(".orig_len"))
        .filter_map(|f| f.value.as_deref()?.parse::<u64>().ok())
        .sum()
}

/// The cells of each tile of the offsets file beside a var-sized data file
/// (`a0_var.tdb` → `a0.tdb`): 8 bytes of unfiltered offsets per cell.
fn offsets_tile_cells(storage: &dyn Storage, file: &RelPath) -> Vec<u64> {
    let stem = file_stem(file).unwrap_or_default();
    let Some(field) = stem.strip_suffix("_var") else {
        return Vec::new();
    };
    let Ok(bytes) =
        beside(file, &format!("{field}{DATA_FILE_SUFFIX}")).and_then(|f| storage.read(&f))
    else {
        return Vec::new();
    };
    explain_data_tiles(&bytes)
        .map(|tiles| tiles.iter().map(|t| unfiltered_bytes(t) / 8).collect())
        .unwrap_or_default()
}

/// The field a data file holds.
#[derive(Debug, Clone, Copy)]
enum Field {
    Attribute(usize),
    Dimension(usize),
    /// `__coords`: the zipped coordinates of formats 3-4.
    Coordinates,
}

/// The field and the suffix (`var`, `validity` or none) of a data file's
/// stem, named as format `version` names its files: `a<i>` and `d<j>`
/// from format 9, the field's name before (percent-encoded in format 8),
/// and `__coords` for the zipped coordinates of formats 3-4.
fn field_of<'a>(schema: &ArraySchema, stem: &'a str, version: u32) -> Option<(Field, &'a str)> {
    let (base, suffix) = match stem.rsplit_once('_') {
        Some((base, suffix @ ("var" | "validity"))) => (base, suffix),
        _ => (stem, ""),
    };
    if base == "__coords" {
        return Some((Field::Coordinates, suffix));
    }
    let stem_of = |prefix: char, index: usize, name: &str| {
        if field_files_by_index(version) {
            format!("{prefix}{index}")
        } else if field_files_percent_encoded(version) {
            percent_encode_v8(name)
        } else {
            name.to_string()
        }
    };
    let attribute = (schema.attributes.iter().enumerate())
        .find(|(i, a)| stem_of('a', *i, &a.name) == base)
        .map(|(i, _)| Field::Attribute(i));
    let dimension = || {
        (schema.dimensions.iter().enumerate())
            .find(|(j, d)| stem_of('d', *j, &d.name) == base)
            .map(|(j, _)| Field::Dimension(j))
    };
    Some((attribute.or_else(dimension)?, suffix))
}

/// The schema's facts for the field a data file holds (`a<i>`, `d<j>`,
/// with `_var` or `_validity`; the field's name before format 9), from the
/// schema its fragment's footer names.
fn field_facts(
    storage: &dyn Storage,
    file: &RelPath,
    key: Option<&[u8; 32]>,
) -> Option<FieldFacts> {
    let metadata_file = beside(file, FRAGMENT_METADATA_FILE).ok()?;
    let metadata = storage.read(&metadata_file).ok()?;
    let place = locate_footer(storage, &metadata_file, &metadata, key).ok()?;
    let version = place.layout_version();
    let footer = metadata.get(place.start as usize..place.end as usize)?;
    let name = footer_schema_name(footer).ok()?;
    let dir = array_dir(&metadata_file)?;
    let schema = schema_of_fragment(storage, dir, name.as_deref(), place.version, key).ok()?;
    let stem = file_stem(file)?;
    let (field, suffix) = field_of(&schema, stem, version)?;
    let facts = |pipeline: &FilterPipeline, datatype: Datatype, var_data: bool, cell_size| {
        // An encrypted array's tiles end their pipeline with AES-256-GCM,
        // which the schema does not list (as the reader adds it).
        let mut pipeline = pipeline.clone();
        if key.is_some() && !pipeline.has(FilterType::Aes256Gcm) {
            pipeline.filters.push(Filter::Aes256Gcm);
        }
        let types = pipeline.input_types(datatype);
        let filters = pipeline.filters.iter().map(Filter::filter_type).zip(types);
        let var_strings = var_data && pipeline.skips_offsets(datatype, version);
        FieldFacts {
            stages: metadata_stages(filters, version, var_strings),
            cell_size,
        }
    };
    let offsets = facts(&schema.offsets_filters, Datatype::Uint64, false, Some(8));
    Some(match (field, suffix) {
        (Field::Attribute(_), "validity") => {
            facts(&schema.validity_filters, Datatype::Uint8, false, Some(1))
        }
        (Field::Attribute(index), "var") => {
            let attribute = schema.attributes.get(index)?;
            facts(&attribute.filters, attribute.datatype, true, None)
        }
        (Field::Attribute(index), "") => {
            let attribute = schema.attributes.get(index)?;
            match attribute.cell_size() {
                None => offsets,
                Some(size) => facts(&attribute.filters, attribute.datatype, false, Some(size)),
            }
        }
        (Field::Dimension(index), suffix) => {
            let dimension = schema.dimensions.get(index)?;
            match (dimension.var, suffix) {
                (true, "") => offsets,
                (true, _) => facts(&dimension.filters, dimension.datatype, true, None),
                (false, _) => facts(
                    &dimension.filters,
                    dimension.datatype,
                    false,
                    Some(dimension.coord_size()),
                ),
            }
        }
        // Before format 5, every dimension's coordinates zipped in one
        // file, through the coordinates' filters (all dimensions then
        // share one fixed-sized type).
        (Field::Coordinates, "") => {
            let first = schema.dimensions.first()?;
            let cell = schema
                .dimensions
                .iter()
                .map(crate::schema::Dimension::coord_size)
                .sum();
            facts(&schema.coords_filters, first.datatype, false, Some(cell))
        }
        _ => return None,
    })
}
