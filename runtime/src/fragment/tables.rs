//! What a fragment's metadata gives on demand: field slots and file names,
//! the per-field tile tables, file sizes, cell counts, the R-tree and the
//! processed conditions, each loaded from the file once.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::generated as stored;
use crate::storage::{RelPath, Storage};
use crate::tile::generic::{load_generic_tile, GenericTile};

use super::parse::{parse_processed_conditions, parse_rtree, parse_tile_offsets, rect_from_stored};
use super::{percent_encode_v8, Field, FieldTileTables, FragmentMetadata, Rectangle, StoredFooter};
use crate::format::generated::DATA_FILE_SUFFIX;

impl FragmentMetadata {
    /// The slot of `field` in this fragment's field index space, if the
    /// fragment has it.
    pub fn field_index(&self, field: Field) -> Option<usize> {
        let a = self.schema.attributes.len();
        let d = self.schema.dimensions.len();
        let dims = if stored::dimensions_stored_apart(self.version) {
            d
        } else {
            0
        };
        let ts = usize::from(self.has_timestamps);
        match field {
            Field::Attribute(i) => (i < a).then_some(i),
            Field::Coords => Some(a),
            Field::Dimension(j) => {
                (stored::dimensions_stored_apart(self.version) && j < d).then_some(a + 1 + j)
            }
            Field::Timestamps => self.has_timestamps.then_some(a + 1 + dims),
            Field::DeleteTimestamps => self.has_delete_meta.then_some(a + 1 + dims + ts),
            Field::DeleteConditionIndex => self.has_delete_meta.then_some(a + 2 + dims + ts),
        }
    }

    /// The data file of `field` (without `_var`/`_validity`), per version.
    pub fn file_stem(&self, field: Field) -> Option<String> {
        let index = self.field_index(field)?;
        let a = self.schema.attributes.len();
        let raw_name = match field {
            Field::Attribute(i) => self.schema.attributes[i].name.clone(),
            Field::Coords => "__coords".to_string(),
            Field::Dimension(j) => self.schema.dimensions[j].name.clone(),
            Field::Timestamps => "t".to_string(),
            Field::DeleteTimestamps => "dt".to_string(),
            Field::DeleteConditionIndex => "dci".to_string(),
        };
        Some(if stored::field_files_by_index(self.version) {
            match field {
                Field::Attribute(i) => format!("a{i}"),
                Field::Dimension(_) => format!("d{}", index - a - 1),
                _ => raw_name,
            }
        } else if stored::field_files_percent_encoded(self.version) {
            percent_encode_v8(&raw_name)
        } else {
            raw_name
        })
    }

    /// The file holding `field`'s fixed data (or offsets for var fields).
    pub fn data_path(&self, field: Field, suffix: &str) -> Result<RelPath> {
        let stem = self.file_stem(field).ok_or_else(|| {
            Error::Usage(format!("fragment {} has no field {field:?}", self.name))
        })?;
        self.path.join(&format!("{stem}{suffix}{DATA_FILE_SUFFIX}"))
    }

    /// The generic tile at `offset` of this fragment's metadata file, read
    /// by ranged reads (the file is never read whole; each table is loaded
    /// once and cached by the caller).
    pub(super) fn metadata_tile(&self, storage: &dyn Storage, offset: u64) -> Result<GenericTile> {
        let path = self.path.join(crate::directory::FRAGMENT_METADATA_FILE)?;
        let size = match self.file_size.get() {
            Some(size) => *size,
            // Loaded from consolidated metadata: the file is looked up
            // when a table is first needed.
            None => {
                let size = storage.size(&path)?;
                *self.file_size.get_or_init(|| size)
            }
        };
        load_generic_tile(storage, &path, size, offset, self.key.as_ref())
            .map_err(|e| e.in_file(storage.describe(&path)))
    }

    fn u64_tile(&self, storage: &dyn Storage, offset: u64, what: &str) -> Result<Vec<u64>> {
        let tile = self
            .metadata_tile(storage, offset)
            .map_err(|e| e.within(what.to_string()))?;
        parse_tile_offsets(&tile).map_err(|e| e.within(what.to_string()))
    }

    /// The tile tables of `field`, loaded once.
    pub fn field_tiles(&self, storage: &dyn Storage, field: Field) -> Result<Arc<FieldTileTables>> {
        if let Some(t) = self.fields.lock().ok().and_then(|m| m.get(&field).cloned()) {
            return Ok(t);
        }
        let describe = storage.describe(&self.path.join(crate::directory::FRAGMENT_METADATA_FILE)?);
        let index = self.field_index(field).ok_or_else(|| {
            Error::Usage(format!("fragment {} has no field {field:?}", self.name))
        })?;
        let mut tiles = FieldTileTables::default();
        match &self.footer {
            StoredFooter::Footer(f)
                if over_network(storage) && self.tile_num == 1 && !self.is_var(field) =>
            {
                // The one tile of a fixed-size field starts where its file
                // does (and ends where the footer's file size says): no
                // table to read, a request per fragment saved over a
                // network. `check` still reads and checks the stored table.
                tiles.offsets = vec![0];
                if f.tile_validity_offsets_offsets.is_some() && self.is_nullable(field) {
                    tiles.validity_offsets = vec![0];
                }
            }
            StoredFooter::Footer(f) => {
                let pick = |list: &Vec<u64>| list.get(index).copied();
                if let Some(o) = pick(&f.tile_offsets_offsets) {
                    tiles.offsets = self.u64_tile(storage, o, "tile offsets")?;
                }
                if let Some(o) = pick(&f.tile_var_offsets_offsets) {
                    tiles.var_offsets = self.u64_tile(storage, o, "tile var offsets")?;
                }
                if let Some(o) = pick(&f.tile_var_sizes_offsets) {
                    tiles.var_sizes = self.u64_tile(storage, o, "tile var sizes")?;
                }
                if let Some(o) = f.tile_validity_offsets_offsets.as_ref().and_then(pick) {
                    tiles.validity_offsets = self.u64_tile(storage, o, "tile validity offsets")?;
                }
            }
            StoredFooter::Legacy(l) => {
                let get = |lists: &Vec<stored::LegacyU64List>| {
                    lists
                        .get(index)
                        .map(|l| l.values.clone())
                        .unwrap_or_default()
                };
                tiles.offsets = get(&l.tile_offsets);
                tiles.var_offsets = get(&l.tile_var_offsets);
                tiles.var_sizes = get(&l.tile_var_sizes);
            }
        }
        let tiles = Arc::new(tiles);
        let _ = describe;
        if let Ok(mut m) = self.fields.lock() {
            m.insert(field, tiles.clone());
        }
        Ok(tiles)
    }

    /// Whether `field`'s cells are var-sized (an offsets and a var file).
    fn is_var(&self, field: Field) -> bool {
        match field {
            Field::Attribute(i) => self
                .schema
                .attributes
                .get(i)
                .is_none_or(|a| a.cell_val_num.is_none()),
            Field::Dimension(j) => self.schema.dimensions.get(j).is_none_or(|d| d.var),
            _ => false,
        }
    }

    /// Whether `field` has validity (a nullable attribute).
    fn is_nullable(&self, field: Field) -> bool {
        matches!(field, Field::Attribute(i) if self.schema.attributes.get(i).is_some_and(|a| a.nullable))
    }

    /// The sum of every data file size the footer records (fixed, var and
    /// validity, over all fields): with the metadata file's size, the
    /// fragment size TileDB's consolidation weighs.
    pub fn data_file_bytes(&self) -> u64 {
        let sum = |v: &[u64]| v.iter().fold(0u64, |a, b| a.saturating_add(*b));
        match &self.footer {
            StoredFooter::Footer(f) => sum(&f.file_sizes)
                .saturating_add(sum(&f.file_var_sizes))
                .saturating_add(f.file_validity_sizes.as_deref().map_or(0, sum)),
            StoredFooter::Legacy(l) => sum(&l.file_sizes).saturating_add(sum(&l.file_var_sizes)),
        }
    }

    /// The file sizes of `field`: (fixed, var, validity).
    pub fn file_sizes(&self, field: Field) -> (u64, u64, u64) {
        let Some(index) = self.field_index(field) else {
            return (0, 0, 0);
        };
        match &self.footer {
            StoredFooter::Footer(f) => (
                f.file_sizes.get(index).copied().unwrap_or(0),
                f.file_var_sizes.get(index).copied().unwrap_or(0),
                f.file_validity_sizes
                    .as_ref()
                    .and_then(|v| v.get(index).copied())
                    .unwrap_or(0),
            ),
            StoredFooter::Legacy(l) => (
                l.file_sizes.get(index).copied().unwrap_or(0),
                l.file_var_sizes.get(index).copied().unwrap_or(0),
                0,
            ),
        }
    }

    /// Cells in tile `tile`.
    pub fn cell_num(&self, tile: u64, cells_per_dense_tile: u64) -> u64 {
        if self.dense {
            cells_per_dense_tile
        } else if tile + 1 == self.tile_num {
            if self.last_tile_cell_num == 0 {
                self.schema.capacity
            } else {
                self.last_tile_cell_num
            }
        } else {
            self.schema.capacity
        }
    }

    /// The MBR of every tile of a sparse fragment (the R-tree's leaves).
    pub fn mbrs(&self, storage: &dyn Storage) -> Result<Arc<Vec<Rectangle>>> {
        if let Some(m) = self.mbrs.get() {
            return Ok(m.clone());
        }
        let rects: Vec<Rectangle> = match (&self.footer, &self.non_empty_domain) {
            // One tile: its MBR is the non-empty domain (TileDB grows the
            // domain by each tile's MBR), so the R-tree (a request per
            // fragment over a network) need not be read. `check` still
            // reads and checks it.
            (StoredFooter::Footer(_), Some(domain))
                if over_network(storage) && self.tile_num == 1 && !self.dense =>
            {
                vec![domain.clone()]
            }
            (StoredFooter::Footer(f), _) => {
                let tile = self.metadata_tile(storage, f.rtree_offset)?;
                let rtree = parse_rtree(&tile, self.version, &self.schema.stored)
                    .map_err(|e| e.within("R-tree"))?;
                match rtree.levels.last() {
                    Some(level) => level
                        .mbrs
                        .iter()
                        .map(|r| rect_from_stored(r, &self.schema))
                        .collect::<Result<_>>()?,
                    None => Vec::new(),
                }
            }
            (StoredFooter::Legacy(l), _) => l
                .mbrs
                .iter()
                .map(|r| rect_from_stored(r, &self.schema))
                .collect::<Result<_>>()?,
        };
        let rects = Arc::new(rects);
        let _ = self.mbrs.set(rects.clone());
        Ok(rects)
    }

    /// The delete/update commits already applied to this fragment's cells
    /// (array-relative markers such as `__commits/<name>.del`).
    pub fn processed_conditions(&self, storage: &dyn Storage) -> Result<Vec<String>> {
        if let Some(p) = self.processed.get() {
            return Ok(p.clone());
        }
        let list = match &self.footer {
            StoredFooter::Footer(f) => match f.processed_conditions_offset {
                Some(offset) if stored::processed_conditions_stored(self.version) => {
                    let tile = self.metadata_tile(storage, offset)?;
                    let pc = parse_processed_conditions(&tile)?;
                    pc.conditions
                        .iter()
                        .map(|c| String::from_utf8_lossy(&c.marker).into_owned())
                        .collect()
                }
                _ => Vec::new(),
            },
            StoredFooter::Legacy(_) => Vec::new(),
        };
        let _ = self.processed.set(list.clone());
        Ok(list)
    }
}

/// Whether reads from `storage` wait on a network (an object store): then
/// a table the footer implies is not read from the metadata file. Local
/// reads keep reading every table, as TileDB does.
fn over_network(storage: &dyn Storage) -> bool {
    storage.concurrent_reads() > 0
}
