//! The part of an aggregate TileDB answers from tile metadata: a sparse
//! tile wholly inside one of the query's ranges on each dimension (and
//! meeting no other, so counted once), with no query condition, no
//! delete and no newer or older cell it could hide or be hidden by, gives
//! its cell count, null count, sum, minimum and maximum from the fragment
//! metadata without being decoded (TileDB's sparse readers,
//! `can_aggregate_tile_with_frag_md`: a full tile whose cells all reach the
//! result, in a fragment with tile metadata). The read then leaves those
//! tiles out ([`crate::read::skip::Prune::answered`]).

use std::collections::HashSet;
use std::sync::Arc;

use crate::error::Result;
use crate::filter::Datatype;
use crate::fragment::{Field, FieldTileStats, FragmentMetadata};
use crate::read::query::{decode_ranges, ReadQuery};
use crate::read::sparse::ranges::touched_tiles;
use crate::schema::Scalar;
use crate::snapshot::Snapshot;
use crate::storage::RelPath;

/// What the metadata of the answered tiles gives.
#[derive(Debug, Default)]
pub(crate) struct FromMetadata {
    /// The tiles answered, by fragment folder and tile.
    pub(crate) answered: HashSet<(RelPath, u64)>,
    /// Their cells.
    pub(crate) cells: u64,
    /// Per aggregated attribute, by name.
    pub(crate) fields: Vec<(String, FieldPart)>,
}

/// One attribute's part over the answered tiles.
#[derive(Debug, Default)]
pub(crate) struct FieldPart {
    /// Null cells.
    pub(crate) nulls: u64,
    /// Cells with a value.
    pub(crate) values: u64,
    /// Each tile's sum.
    pub(crate) sums: Vec<Scalar>,
    /// The minimum and maximum of each tile with a value.
    pub(crate) min_max: Vec<(Scalar, Scalar)>,
}

impl FromMetadata {
    /// The part of attribute `name`.
    pub(crate) fn field(&self, name: &str) -> Option<&FieldPart> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, p)| p)
    }
}

/// One aggregated attribute's statistics in a fragment.
pub(crate) struct RecordedStats {
    datatype: Datatype,
    nullable: bool,
    /// A var-sized string: its minimums and maximums are `var_min_max`,
    /// and it has no sums.
    var: bool,
    stats: Arc<FieldTileStats>,
}

/// The tile statistics of each of `names` in `fragment`, when every one
/// records its sums, minimums and maximums (and null counts, nullable) and
/// has the array's datatype; `None` otherwise (the fragment is decoded).
pub(crate) fn recorded_stats(
    snapshot: &Snapshot,
    fragment: &FragmentMetadata,
    names: &[String],
) -> Result<Option<Vec<RecordedStats>>> {
    let schema = snapshot.schema();
    let mut stats = Vec::new();
    for name in names {
        let Some((a, attribute)) = fragment.schema.attribute(name) else {
            return Ok(None);
        };
        if schema
            .attribute(name)
            .is_some_and(|(_, s)| s.datatype != attribute.datatype)
        {
            return Ok(None);
        }
        let s = fragment.tile_stats(snapshot.storage(), Field::Attribute(a))?;
        let var = attribute.cell_val_num.is_none();
        let bounds = if var {
            s.var_min_max(0).is_some()
        } else {
            s.sum(0).is_some() && s.min_max(0).is_some()
        };
        if !bounds || (attribute.nullable && s.null_count(0).is_none()) {
            return Ok(None);
        }
        stats.push(RecordedStats {
            datatype: attribute.datatype,
            nullable: attribute.nullable,
            var,
            stats: s,
        });
    }
    Ok(Some(stats))
}

/// Whether every one of `names` is an attribute whose aggregates tile
/// metadata may answer: one fixed-size number per cell, or a var-sized
/// ASCII string (`CHAR`, `STRING_ASCII`: TileDB records their minimums
/// and maximums, and aggregates no other strings).
pub(crate) fn answerable(schema: &crate::schema::ArraySchema, names: &[String]) -> bool {
    names.iter().all(|name| {
        schema.attribute(name).is_some_and(|(_, a)| {
            let number = a.cell_val_num == Some(1)
                && !matches!(
                    Scalar::decode(a.datatype, &[0; 8]),
                    Some(Scalar::Bytes(_)) | None
                );
            let ascii = a.cell_val_num.is_none()
                && matches!(a.datatype, Datatype::StringAscii | Datatype::Char);
            number || ascii
        })
    })
}

impl FromMetadata {
    /// Nothing answered yet, for the attributes `names`.
    pub(crate) fn new(names: &[String]) -> Self {
        FromMetadata {
            fields: names
                .iter()
                .map(|n| (n.clone(), FieldPart::default()))
                .collect(),
            ..FromMetadata::default()
        }
    }

    /// Adds the part of `tile` (of `cells` cells) its statistics record.
    pub(crate) fn add_tile(&mut self, stats: &[RecordedStats], tile: u64, cells: u64) {
        self.cells += cells;
        for ((_, part), r) in self.fields.iter_mut().zip(stats) {
            let s = &r.stats;
            let nulls = if r.nullable {
                s.null_count(tile).unwrap_or(0)
            } else {
                0
            };
            part.nulls += nulls;
            let values = cells.saturating_sub(nulls);
            part.values += values;
            if values > 0 {
                if let Some(sum) = s.sum(tile).filter(|_| !r.var) {
                    part.sums.push(sum_value(r.datatype, sum));
                }
                let bounds = if r.var {
                    s.var_min_max(tile)
                } else {
                    s.min_max(tile)
                };
                if let Some((lo, hi)) = bounds {
                    if let (Some(lo), Some(hi)) = (
                        Scalar::decode(r.datatype, lo),
                        Scalar::decode(r.datatype, hi),
                    ) {
                        part.min_max.push((lo, hi));
                    }
                }
            }
        }
    }
}

fn sum_value(datatype: Datatype, bytes: [u8; 8]) -> Scalar {
    use Datatype::*;
    match datatype {
        Float32 | Float64 => Scalar::Float(f64::from_le_bytes(bytes)),
        Uint8 | Uint16 | Uint32 | Uint64 | Bool => Scalar::Int(u64::from_le_bytes(bytes) as i128),
        _ => Scalar::Int(i64::from_le_bytes(bytes) as i128),
    }
}

/// The tiles of a sparse read of `query` (no condition) whose part of the
/// aggregates over `names` the metadata gives: each wholly inside one range
/// of each dimension and meeting no other; `None` when none may be
/// answered so (a dense array, deletes, an attribute of several values per
/// cell or of strings other than ASCII).
pub(crate) fn from_metadata(
    snapshot: &Snapshot,
    query: &ReadQuery,
    names: &[String],
) -> Result<Option<FromMetadata>> {
    let schema = snapshot.schema();
    if schema.is_dense() || !snapshot.conditions().is_empty() {
        return Ok(None);
    }
    if !answerable(schema, names) {
        return Ok(None);
    }
    let ranges = decode_ranges(schema, query)?;
    let storage = snapshot.storage();
    let mut out = FromMetadata::new(names);
    for fragment in snapshot.fragments() {
        if fragment.dense
            || fragment.non_empty_domain.is_none()
            || fragment.has_timestamps
            || fragment.has_delete_meta
        {
            continue;
        }
        let fschema = &fragment.schema;
        let Some(stats) = recorded_stats(snapshot, fragment, names)? else {
            continue;
        };
        let others: Vec<_> = if schema.allows_dups {
            Vec::new()
        } else {
            snapshot
                .fragments()
                .iter()
                .filter(|f| f.path != fragment.path)
                .filter_map(|f| f.non_empty_domain.as_ref())
                .collect()
        };
        let mbrs = fragment.mbrs(storage)?;
        for tile in touched_tiles(snapshot, fragment, &ranges)? {
            let Some(mbr) = mbrs.get(tile as usize) else {
                continue;
            };
            // Inside one range of each dimension and meeting no other, so
            // that its cells are counted once.
            let inside =
                fschema
                    .dimensions
                    .iter()
                    .zip(mbr)
                    .zip(&ranges)
                    .all(|((dim, (lo, hi)), r)| {
                        let (Some(lo), Some(hi)) = (
                            Scalar::decode(dim.datatype, lo),
                            Scalar::decode(dim.datatype, hi),
                        ) else {
                            return false;
                        };
                        let holding = r
                            .iter()
                            .filter(|(a, b)| !lo.compare(a).is_lt() && !hi.compare(b).is_gt())
                            .count();
                        let meeting = r
                            .iter()
                            .filter(|(a, b)| !hi.compare(a).is_lt() && !lo.compare(b).is_gt())
                            .count();
                        r.is_empty() || (holding == 1 && meeting == 1)
                    });
            if !inside
                || others
                    .iter()
                    .any(|o| crate::read::skip::meet(fschema, mbr, o))
            {
                continue;
            }
            out.add_tile(&stats, tile, fragment.cell_num(tile, 0));
            out.answered.insert((fragment.path.clone(), tile));
        }
    }
    Ok(Some(out))
}
