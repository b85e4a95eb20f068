//! A field's per-tile statistics (format 11 and later): each tile's
//! minimum, maximum and null count, and the fragment-wide ones (read from
//! format 12), loaded from the metadata file on first use. Readers use them
//! to leave out tiles no cell of which can satisfy a query condition.

use std::sync::Arc;

use crate::error::Result;
use crate::format::generated as stored;

use super::parse::parse_tile_offsets;
use super::{Field, FragmentMetadata, StoredFooter};

/// The recorded minimum, maximum and null count of each tile of one field.
/// A field without them (before format 11, or a kind TileDB records none
/// for) has empty tables, and every lookup answers `None`.
#[derive(Debug, Default)]
pub struct FieldTileStats {
    mins: Vec<u8>,
    maxes: Vec<u8>,
    null_counts: Vec<u64>,
    sums: Vec<u64>,
    cell_size: usize,
    /// A var-sized string field's minimums and maximums: per tile, where
    /// its value starts in the values (and the values' length after the
    /// last), then the values.
    var_mins: VarValues,
    var_maxes: VarValues,
}

/// Var-sized values, one per tile: their starts (one more than the tiles,
/// ascending, the last the values' length) and the values concatenated.
#[derive(Debug, Default)]
struct VarValues {
    starts: Vec<u64>,
    values: Vec<u8>,
}

impl VarValues {
    /// The values of a [`stored::TileMinMax`] of a var-sized field of
    /// `tiles` tiles, when its offsets are one per tile, ascending and
    /// within its values; `None` otherwise (left unused).
    fn new(stored: stored::TileMinMax, tiles: u64) -> Option<VarValues> {
        let mut starts: Vec<u64> = stored
            .fixed
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect();
        let len = stored.var.len() as u64;
        let fits = stored.fixed.len().is_multiple_of(8)
            && starts.len() as u64 == tiles
            && starts.windows(2).all(|w| w[0] <= w[1])
            && starts.last().is_none_or(|last| *last <= len);
        if !fits {
            return None;
        }
        starts.push(len);
        Some(VarValues {
            starts,
            values: stored.var,
        })
    }

    fn get(&self, tile: u64) -> Option<&[u8]> {
        let tile = usize::try_from(tile).ok()?;
        let (start, end) = (*self.starts.get(tile)?, *self.starts.get(tile + 1)?);
        self.values
            .get(usize::try_from(start).ok()?..usize::try_from(end).ok()?)
    }
}

impl FieldTileStats {
    /// The minimum and maximum recorded for `tile` (a fixed-sized field's
    /// value bytes); `None` when not recorded.
    pub fn min_max(&self, tile: u64) -> Option<(&[u8], &[u8])> {
        let size = self.cell_size;
        let start = usize::try_from(tile).ok()?.checked_mul(size)?;
        let end = start.checked_add(size)?;
        if size == 0 {
            return None;
        }
        Some((self.mins.get(start..end)?, self.maxes.get(start..end)?))
    }

    /// The minimum and maximum recorded for `tile` of a var-sized string
    /// field (TileDB records them for ASCII strings and `CHAR`); `None`
    /// when not recorded.
    pub fn var_min_max(&self, tile: u64) -> Option<(&[u8], &[u8])> {
        Some((self.var_mins.get(tile)?, self.var_maxes.get(tile)?))
    }

    /// The sum recorded for `tile`, as its 8 bytes (an `i64` for signed
    /// integers, a `u64` for unsigned ones, an `f64` for floats).
    pub fn sum(&self, tile: u64) -> Option<[u8; 8]> {
        let sum = self.sums.get(usize::try_from(tile).ok()?)?;
        Some(sum.to_le_bytes())
    }

    /// The number of null cells of `tile`, when recorded.
    pub fn null_count(&self, tile: u64) -> Option<u64> {
        self.null_counts.get(usize::try_from(tile).ok()?).copied()
    }
}

impl FragmentMetadata {
    /// The per-tile statistics of `field`, loaded once. Fixed-sized fields
    /// of one value per cell get minimums and maximums here, and var-sized
    /// ASCII strings (`var_min_max`); null counts come for every nullable
    /// field that records them.
    pub fn tile_stats(
        &self,
        storage: &dyn crate::storage::Storage,
        field: Field,
    ) -> Result<Arc<FieldTileStats>> {
        if let Some(s) = self.stats.lock().ok().and_then(|m| m.get(&field).cloned()) {
            return Ok(s);
        }
        let mut stats = FieldTileStats::default();
        if let (StoredFooter::Footer(f), Some(index), Field::Attribute(a)) =
            (&self.footer, self.field_index(field), field)
        {
            let attribute = &self.schema.attributes[a];
            let pick = |list: &Option<Vec<u64>>| list.as_ref().and_then(|l| l.get(index).copied());
            let fixed_single = attribute.cell_val_num == Some(1) && trusted_min_max(self, a);
            if let (true, Some(lo), Some(hi)) = (
                fixed_single,
                pick(&f.tile_mins_offsets),
                pick(&f.tile_maxes_offsets),
            ) {
                let mins = self.min_max_tile(storage, lo, "tile mins")?;
                let maxes = self.min_max_tile(storage, hi, "tile maxes")?;
                let size = attribute.datatype.size() as usize;
                let expected = (self.tile_num as usize).saturating_mul(size);
                // Tables of another size are not the per-tile values we
                // expect (a kind with no min/max records nothing): unused.
                if mins.fixed.len() == expected && maxes.fixed.len() == expected {
                    stats.mins = mins.fixed;
                    stats.maxes = maxes.fixed;
                    stats.cell_size = size;
                }
            }
            let var_strings = attribute.cell_val_num.is_none()
                && matches!(
                    attribute.datatype,
                    crate::filter::Datatype::StringAscii | crate::filter::Datatype::Char
                )
                && trusted_min_max(self, a);
            if let (true, Some(lo), Some(hi)) = (
                var_strings,
                pick(&f.tile_mins_offsets),
                pick(&f.tile_maxes_offsets),
            ) {
                let mins = self.min_max_tile(storage, lo, "tile mins")?;
                let maxes = self.min_max_tile(storage, hi, "tile maxes")?;
                if let (Some(mins), Some(maxes)) = (
                    VarValues::new(mins, self.tile_num),
                    VarValues::new(maxes, self.tile_num),
                ) {
                    stats.var_mins = mins;
                    stats.var_maxes = maxes;
                }
            }
            if let (true, Some(at)) = (
                attribute.cell_val_num == Some(1),
                pick(&f.tile_sums_offsets),
            ) {
                let tile = self.metadata_tile(storage, at)?;
                let sums = tile
                    .parse::<stored::TileSums>((), "TileSums")
                    .map_err(|e| e.within("tile sums"))?;
                if sums.values.len() as u64 == self.tile_num {
                    stats.sums = sums.values;
                }
            }
            if let (true, Some(at)) = (attribute.nullable, pick(&f.tile_null_counts_offsets)) {
                let tile = self.metadata_tile(storage, at)?;
                let counts = parse_tile_offsets(&tile).map_err(|e| e.within("tile null counts"))?;
                if counts.len() as u64 == self.tile_num {
                    stats.null_counts = counts;
                }
            }
        }
        let stats = Arc::new(stats);
        if let Ok(mut m) = self.stats.lock() {
            m.insert(field, stats.clone());
        }
        Ok(stats)
    }

    fn min_max_tile(
        &self,
        storage: &dyn crate::storage::Storage,
        offset: u64,
        what: &str,
    ) -> Result<stored::TileMinMax> {
        let tile = self
            .metadata_tile(storage, offset)
            .map_err(|e| e.within(what.to_string()))?;
        tile.parse::<stored::TileMinMax>((), "TileMinMax")
            .map_err(|e| e.within(what.to_string()))
    }

    /// The fragment-wide minimum, maximum (fixed-sized fields of one value
    /// per cell) and null count of attribute `attribute`, from format 12
    /// (TileDB reads them from 12 on); `None` before, or when absent.
    pub fn fragment_stats(
        &self,
        storage: &dyn crate::storage::Storage,
        attribute: usize,
    ) -> Result<Option<FragmentFieldStats>> {
        let mmsn = match self.mmsn.get() {
            Some(m) => m.clone(),
            None => {
                let loaded = match &self.footer {
                    StoredFooter::Footer(f) => match f.fragment_mmsn_offset {
                        Some(at) if stored::fragment_mmsn_read(self.version) => {
                            let tile = self.metadata_tile(storage, at)?;
                            let fields = f.tile_offsets_offsets.len() as u64;
                            let parsed = tile.parse::<stored::FragmentMmsn>(
                                stored::FragmentMmsnBinReadArgs::builder()
                                    .num_fields(fields)
                                    .finalize(),
                                "FragmentMmsn",
                            )?;
                            Some(Arc::new(parsed))
                        }
                        _ => None,
                    },
                    StoredFooter::Legacy(_) => None,
                };
                let _ = self.mmsn.set(loaded.clone());
                loaded
            }
        };
        let (Some(mmsn), Some(index)) = (mmsn, self.field_index(Field::Attribute(attribute)))
        else {
            return Ok(None);
        };
        let Some(entry) = mmsn.fields.get(index) else {
            return Ok(None);
        };
        let attr = &self.schema.attributes[attribute];
        let size = attr.datatype.size() as usize;
        let bounds = (attr.cell_val_num == Some(1)
            && trusted_min_max(self, attribute)
            && entry.min.len() == size
            && entry.max.len() == size)
            .then(|| (entry.min.clone(), entry.max.clone()));
        Ok(Some(FragmentFieldStats {
            sum: entry.sum.to_le_bytes(),
            min_max: bounds,
            null_count: attr.nullable.then_some(entry.null_count),
        }))
    }
}

/// Whether the recorded minimums and maximums of attribute `a` are
/// trusted: not for nullable fixed-sized strings before spec/'s gate
/// `nullable_char_min_max_trusted`.
fn trusted_min_max(fragment: &FragmentMetadata, a: usize) -> bool {
    let attribute = &fragment.schema.attributes[a];
    let char_like = matches!(
        attribute.datatype,
        crate::filter::Datatype::Char | crate::filter::Datatype::StringAscii
    );
    !(char_like && attribute.nullable) || stored::nullable_char_min_max_trusted(fragment.version)
}

/// The fragment-wide statistics of one attribute.
#[derive(Debug, Clone)]
pub struct FragmentFieldStats {
    /// The minimum and maximum value bytes (fixed-sized, one value per cell).
    pub min_max: Option<(Vec<u8>, Vec<u8>)>,
    /// The number of null cells (nullable attributes).
    pub null_count: Option<u64>,
    /// The sum, as its 8 bytes (see [`FieldTileStats::sum`]).
    pub sum: [u8; 8],
}
