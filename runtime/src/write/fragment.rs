//! One fragment, format 22: cells put in global order and cut into tiles,
//! every tile filtered with its field's pipeline (the special fields `t`,
//! `dt` and `dci` of consolidated sparse fragments use the coordinates
//! pipeline, as TileDB's `ArraySchema::filters` gives them), then the fragment metadata
//! (R-tree, tile offsets, var sizes, validity offsets, tile and fragment
//! min/max/sum/null count, processed conditions, footer) and last the commit
//! marker.

use crate::directory::{Extension, TimestampedName};
use crate::directory::{COMMITS_DIR, FRAGMENTS_DIR, FRAGMENT_METADATA_FILE};
use crate::error::Result;
use crate::format::generated as stored;
use crate::format::io::write_to_vec;
use crate::schema::ArraySchema;
use crate::storage::{RelPath, Storage};

pub use super::fragment_input::{Column, DeleteMeta, FragmentInput};

use super::cell_order::Coordinates;
use super::field_tiles::{field_tiles, Output};
use super::fragment_input::{usage, InputColumns};
use super::fragment_meta::{bounds, fragment_metadata, FragmentParts};
pub(crate) use super::tiling::TileCells;
use super::tiling::{DenseGrid, DenseInputOrder, SparseOrder, TilePlan};
use super::WRITE_VERSION;

/// Writes one fragment and commits it; returns the fragment's name.
pub fn write_fragment(
    storage: &dyn Storage,
    schema: &ArraySchema,
    input: &FragmentInput,
) -> Result<String> {
    let name =
        TimestampedName::generate(input.timestamp, input.timestamp, Some(WRITE_VERSION), None)?;
    write_fragment_named(storage, schema, input, &name, &[])
}

/// [`write_fragment`] of a sparse input whose cells' global order is known.
pub(crate) fn write_fragment_in_order(
    storage: &dyn Storage,
    schema: &ArraySchema,
    input: &FragmentInput,
    columns: &InputColumns<'_>,
    order: Option<SparseOrder>,
) -> Result<String> {
    let name =
        TimestampedName::generate(input.timestamp, input.timestamp, Some(WRITE_VERSION), None)?;
    write_fragment_ordered(storage, schema, input, columns, &name, &[], order)?;
    commit(storage, &name)?;
    Ok(name.as_str().to_string())
}

/// Writes one fragment under `name` and commits it; `processed` lists the
/// delete commits (array-relative paths) already applied to its cells.
///
/// In order: the cells cut into tiles, each field's tiles filtered into its
/// buffers (with their tile metadata), the non-empty domain and MBRs, the
/// field files, the fragment metadata, and last the commit marker.
pub fn write_fragment_named(
    storage: &dyn Storage,
    schema: &ArraySchema,
    input: &FragmentInput,
    name: &TimestampedName,
    processed: &[String],
) -> Result<String> {
    write_fragment_uncommitted(storage, schema, input, name, processed)?;
    // Last: the commit marker.
    commit(storage, name)?;
    Ok(name.as_str().to_string())
}

/// [`write_fragment_named`] without the commit marker: the caller commits
/// (consolidation commits several fragments at once, in one `.con` file).
pub(crate) fn write_fragment_uncommitted(
    storage: &dyn Storage,
    schema: &ArraySchema,
    input: &FragmentInput,
    name: &TimestampedName,
    processed: &[String],
) -> Result<()> {
    write_fragment_ordered(
        storage,
        schema,
        input,
        &input.columns(),
        name,
        processed,
        None,
    )
}

/// [`write_fragment_uncommitted`] of a sparse input whose global order is
/// known (`order`: the cells in global order), as validation finds it.
/// The columns are `columns` (the input's own, or those a checked write
/// lends).
pub(crate) fn write_fragment_ordered(
    storage: &dyn Storage,
    schema: &ArraySchema,
    input: &FragmentInput,
    columns: &InputColumns<'_>,
    name: &TimestampedName,
    processed: &[String],
    order: Option<SparseOrder>,
) -> Result<()> {
    let n = check_input(schema, input, columns)?;
    let plan = plan_tiles(schema, input, columns, n, order)?;
    let dir = RelPath::parse(FRAGMENTS_DIR)?.join(name.as_str())?;
    storage.create_dir(&dir)?;
    let written = write_files(storage, schema, (input, columns), &plan, n, processed, &dir);
    if written.is_err() {
        // Nothing commits the folder; removed so that a refused write
        // leaves nothing behind (a crash leaves it for vacuuming).
        let _ = storage.remove_dir(&dir);
    }
    written
}

/// The field files, then the fragment metadata, of a fragment's folder.
fn write_files(
    storage: &dyn Storage,
    schema: &ArraySchema,
    (input, columns): (&FragmentInput, &InputColumns<'_>),
    plan: &TilePlan,
    n: usize,
    processed: &[String],
    dir: &RelPath,
) -> Result<()> {
    let output = Output::Files {
        storage,
        dir: dir.clone(),
    };
    let fields = field_tiles(schema, input, columns, plan, n, processed, &output)?;
    let (ned, mbrs) = bounds(schema, input, columns, plan)?;
    let n_fields = fields.fields.len();
    let mut file_sizes = vec![0u64; n_fields];
    let mut file_var_sizes = vec![0u64; n_fields];
    let mut file_validity_sizes = vec![0u64; n_fields];
    for (i, f) in fields.fields.iter().enumerate() {
        let Some(f) = f.as_ref().filter(|f| !f.coords_slot) else {
            continue;
        };
        file_sizes[i] = f.fixed_len;
        file_var_sizes[i] = if f.var_sized { f.var_len } else { 0 };
        file_validity_sizes[i] = if f.nullable { f.validity_len } else { 0 };
    }
    let tile_cells: Vec<u64> = (0..plan.len()).map(|t| plan.cell_num(t)).collect();
    let meta = fragment_metadata(&FragmentParts {
        schema,
        key: input.key.as_ref(),
        fields: &fields,
        tile_cells: &tile_cells,
        cells_per_tile: plan.cells_per_tile(),
        dense: input.subarray.is_some(),
        ned: &ned,
        mbrs: &mbrs,
        file_sizes,
        file_var_sizes,
        file_validity_sizes,
        processed,
    })?;
    storage.write(&dir.join(FRAGMENT_METADATA_FILE)?, &meta)
}

/// How `input` is cut into tiles, and each tile's stored size: the bytes
/// of its filtered tiles summed over every field written (offsets, values
/// and validity), as TileDB's global order writer weighs a tile against
/// `max_fragment_size`. Fill cells of dense tiles are `None`.
pub(crate) fn tile_sizes(
    schema: &ArraySchema,
    input: &FragmentInput,
    processed: &[String],
) -> Result<(Vec<TileCells>, Vec<u64>)> {
    let columns = input.columns();
    let n = check_input(schema, input, &columns)?;
    let plan = plan_tiles(schema, input, &columns, n, None)?;
    let fields = field_tiles(schema, input, &columns, &plan, n, processed, &Output::Sizes)?;
    let mut sizes = vec![0u64; plan.len()];
    // A tile's size in one file: up to the next tile's offset, or the end.
    let add = |sizes: &mut [u64], offsets: &[u64], file_len: u64| {
        for (t, size) in sizes.iter_mut().enumerate() {
            let start = offsets.get(t).copied().unwrap_or(0);
            let end = offsets.get(t + 1).copied().unwrap_or(file_len);
            *size += end.saturating_sub(start);
        }
    };
    for f in fields.fields.iter().flatten().filter(|f| !f.coords_slot) {
        add(&mut sizes, &f.tile_offsets, f.fixed_len);
        if f.var_sized {
            add(&mut sizes, &f.var_offsets, f.var_len);
        }
        if f.nullable {
            add(&mut sizes, &f.validity_offsets, f.validity_len);
        }
    }
    let tiles = (0..plan.len()).map(|t| plan.cells(t).listed()).collect();
    Ok((tiles, sizes))
}

/// Checks the input against the schema: each column well formed and of its
/// field's shape, and the number of cells.
fn check_input(
    schema: &ArraySchema,
    input: &FragmentInput,
    columns: &InputColumns<'_>,
) -> Result<usize> {
    if columns.attrs.len() != schema.attributes.len() {
        return Err(usage("one column per attribute is needed"));
    }
    let dense = input.subarray.is_some();
    if !dense && columns.dims.len() != schema.dimensions.len() {
        return Err(usage("a sparse write needs one column per dimension"));
    }
    for (a, c) in schema.attributes.iter().zip(&columns.attrs) {
        if a.nullable != c.validity.is_some() {
            return Err(usage(format!("validity of {} missing or extra", a.name)));
        }
        check_shape(c, &a.name, a.datatype, a.cell_val_num)?;
    }
    if !dense {
        for (d, c) in schema.dimensions.iter().zip(&columns.dims) {
            if c.validity.is_some() {
                return Err(usage(format!("dimension {} has no validity", d.name)));
            }
            check_shape(c, &d.name, d.datatype, (!d.var).then_some(1))?;
        }
    }
    // A sparse array may have no attributes (TileDB creates and writes
    // it): its cells are then counted by the coordinates.
    let n = columns
        .attrs
        .first()
        .or(columns.dims.first())
        .map(|c| c.len())
        .unwrap_or(0);
    for c in columns.attrs.iter().chain(&columns.dims) {
        if c.len() != n {
            return Err(usage("columns of different lengths"));
        }
    }
    if n == 0 {
        return Err(usage("a write needs at least one cell"));
    }
    if input.timestamps.as_ref().is_some_and(|t| t.len() != n) {
        return Err(usage("one timestamp per cell is needed"));
    }
    Ok(n)
}

/// A column fits its field: well formed, var-sized when the field is, and
/// of the field's cell size (its datatype may be another of the same size,
/// e.g. `INT64` values for a `DATETIME_MS` field).
fn check_shape(
    column: &Column,
    field: &str,
    datatype: crate::filter::Datatype,
    cell_val_num: Option<u32>,
) -> Result<()> {
    if let Some(why) = column.shape_error() {
        return Err(usage(why));
    }
    let cell_size = cell_val_num.map(|n| (n as u64 * datatype.size()) as usize);
    if column.cell_size() != cell_size
        || (cell_size.is_none() && column.datatype.size() != datatype.size())
    {
        return Err(usage(format!(
            "the column for {field} ({} {}) does not fit the field ({datatype} {})",
            column.datatype,
            shape_name(column.cell_val_num),
            shape_name(cell_val_num),
        )));
    }
    Ok(())
}

/// How a message spells a field's values per cell: `x<n>` or `var`.
pub(super) fn shape_name(cell_val_num: Option<u32>) -> String {
    match cell_val_num {
        Some(n) => format!("x{n}"),
        None => "var".to_string(),
    }
}

/// How the cells are cut into tiles (dense: the subarray's cells by space
/// tile; sparse: the cells in global order, by capacity). `order`, when
/// known, is the sparse cells' global order.
fn plan_tiles(
    schema: &ArraySchema,
    input: &FragmentInput,
    columns: &InputColumns<'_>,
    n: usize,
    order: Option<SparseOrder>,
) -> Result<TilePlan> {
    Ok(match &input.subarray {
        Some(sub) => {
            if sub.len() != schema.dimensions.len() {
                return Err(usage("a subarray needs one range per dimension"));
            }
            let expect: i128 = sub.iter().map(|(a, b)| b - a + 1).product();
            if expect != n as i128 {
                return Err(usage(format!("the subarray holds {expect} cells, not {n}")));
            }
            let order = match (input.global_order, input.col_major) {
                (true, _) => DenseInputOrder::Global,
                (false, true) => DenseInputOrder::ColMajor,
                (false, false) => DenseInputOrder::RowMajor,
            };
            TilePlan::Dense(DenseGrid::new(schema, sub, order)?)
        }
        None => {
            let order = match order {
                Some(SparseOrder::Permuted(order)) if order.len() == n => {
                    SparseOrder::Permuted(order)
                }
                Some(SparseOrder::AsGiven) => SparseOrder::AsGiven,
                _ => SparseOrder::Permuted(
                    Coordinates::new(schema, &columns.dims)
                        .global_order(n, input.timestamps.as_deref())?,
                ),
            };
            TilePlan::Sparse {
                order,
                cells: n,
                capacity: schema.capacity.max(1) as usize,
            }
        }
    })
}

/// Writes the empty commit marker `__commits/<name>.wrt`.
pub fn commit(storage: &dyn Storage, name: &TimestampedName) -> Result<()> {
    let commits = RelPath::parse(COMMITS_DIR)?;
    storage.create_dir(&commits)?;
    let marker = name.with_extension(Some(Extension::Wrt));
    let empty = write_to_vec(&stored::CommitMarker::default(), (), "CommitMarker")?;
    storage.write(&commits.join(marker.as_str())?, &empty)
}
