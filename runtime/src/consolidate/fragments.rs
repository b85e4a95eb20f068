//! Fragment consolidation: runs of fragments chosen as TileDB chooses them
//! (`select`), each merged into one fragment (or several, under
//! `max_fragment_size`: `split`) plus a `.vac` file listing the run.

use std::collections::HashSet;
use std::sync::Arc;

use super::select::{self, Candidate, IntRect};
use super::{split, ConsolidationConfig, Progress};
use crate::directory::TimeTravelRule;
use crate::error::{Error, Result};
use crate::format::generated::FRAGMENT_METADATA_FILE;
use crate::fragment::FragmentMetadata;
use crate::read::{ReadQuery, ResultOrder};
use crate::schema::{ArraySchema, Scalar};
use crate::snapshot::{OpenOptions, Snapshot};
use crate::storage::{RelPath, Storage};
use crate::write::fragment::{DeleteMeta, FragmentInput};

/// Fragment consolidation steered by `config`, step by step as TileDB runs
/// it: each step picks a run of adjacent fragments (`select::next_run`),
/// merges it into one fragment named `__<first t1>_<last t2>_<label>_22`
/// plus `__commits/<that>.vac` listing the run, and puts the new fragment in
/// the run's place among the candidates; the steps stop after
/// `config.steps`, or when fewer than two candidates or no admissible run
/// remain. Candidates are the visible fragments with
/// `timestamp_start <= t1` and `t2 <= timestamp_end`; older ones only bar
/// dense runs from overlapping them. Returns the new fragments' names.
///
/// Dense runs become one fragment over the union of their non-empty
/// domains, expanded to whole space tiles (cells the run did not write get
/// the fill value, as a read of the run alone returns them). Sparse runs:
/// see `consolidate_sparse`.
pub fn consolidate_fragments(
    storage: Arc<dyn Storage>,
    config: &ConsolidationConfig,
    key: Option<[u8; 32]>,
) -> Result<Vec<String>> {
    consolidate_fragments_reporting(storage, config, key, &mut |_| {})
}

/// [`consolidate_fragments`], calling `progress` after each step.
pub(super) fn consolidate_fragments_reporting(
    storage: Arc<dyn Storage>,
    config: &ConsolidationConfig,
    key: Option<[u8; 32]>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<String>> {
    config.validate()?;
    let listing = open_for_consolidation(&storage, key)?;
    let dense = listing.schema().is_dense();
    let mut anterior: Option<IntRect> = None;
    let mut candidates: Vec<(String, Candidate)> = Vec::new();
    for f in listing.fragments() {
        let (t1, t2) = (f.name.timestamp_start(), f.name.timestamp_end());
        if t1 < config.timestamp_start {
            if let Some(domain) = int_domain(&listing, f)? {
                match &mut anterior {
                    Some(a) => {
                        for ((lo, hi), (dlo, dhi)) in a.iter_mut().zip(&domain) {
                            *lo = (*lo).min(*dlo);
                            *hi = (*hi).max(*dhi);
                        }
                    }
                    None => anterior = Some(domain),
                }
            }
        } else if t2 <= config.timestamp_end {
            candidates.push((f.name.as_str().to_string(), candidate(&listing, f)?));
        }
    }
    drop(listing);
    let total = candidates.len();
    let mut merged = 0;
    let mut written = Vec::new();
    // TileDB decides per step whether the new fragment carries delete
    // metadata, and once one step did, every later step does too.
    let mut with_delete_meta = false;
    let mut step: u32 = 0;
    loop {
        if candidates.len() <= 1 {
            break;
        }
        let view: Vec<Candidate> = candidates.iter().map(|(_, c)| c.clone()).collect();
        let Some((run, _)) = select::next_run(config, dense, &view, anterior.as_ref()) else {
            break;
        };
        if run.end() <= run.start() {
            break;
        }
        let chosen: HashSet<String> = candidates
            .get(run.clone())
            .unwrap_or_default()
            .iter()
            .map(|(name, _)| name.clone())
            .collect();
        let mut array = open_for_consolidation(&storage, key)?;
        array.retain_fragments(|f| chosen.contains(f.name.as_str()));
        let inputs: Vec<_> = array
            .directory()
            .fragments(TimeTravelRule::FullContainment)
            .into_iter()
            .filter(|f| chosen.contains(f.name.as_str()))
            .collect();
        if inputs.len() != chosen.len() || array.fragments().len() != chosen.len() {
            return Err(Error::Usage(format!(
                "{}: the fragments chosen for consolidation changed while consolidating",
                root_of(storage.as_ref()).display()
            )));
        }
        let names = if dense {
            consolidate_dense(&array, &inputs, config)?
        } else {
            consolidate_sparse(&array, &inputs, &mut with_delete_meta, config)?
        };
        // TileDB puts only the first fragment written back among the
        // candidates (its fragment info loads that one URI).
        let Some(name) = names.first().cloned() else {
            break;
        };
        drop(array);
        let after = open_for_consolidation(&storage, key)?;
        let Some(new) = after.fragments().iter().find(|f| f.name.as_str() == name) else {
            return Err(Error::Usage(format!(
                "{}: the consolidated fragment {name} is not visible",
                root_of(storage.as_ref()).display()
            )));
        };
        let new = (name.clone(), candidate(&after, new)?);
        merged += run.end() + 1 - run.start();
        candidates.splice(run, std::iter::once(new));
        written.extend(names);
        step += 1;
        progress(Progress {
            steps: step,
            merged,
            candidates: total,
        });
        if step >= config.steps {
            break;
        }
    }
    Ok(written)
}

/// The array over all time, as TileDB's consolidation opens it.
fn open_for_consolidation(storage: &Arc<dyn Storage>, key: Option<[u8; 32]>) -> Result<Snapshot> {
    Snapshot::open_shared(
        Arc::clone(storage),
        OpenOptions {
            timestamp_start: 0,
            timestamp_end: u64::MAX,
            key,
        },
    )
}

/// How errors name the array: its root as the storage describes it.
fn root_of(storage: &dyn Storage) -> std::path::PathBuf {
    storage.describe(&RelPath::root())
}

fn non_integer(array: &Snapshot) -> Error {
    Error::Unsupported {
        file: root_of(array.storage()),
        what: "non-integer dense domains".into(),
    }
}

/// A dense fragment's non-empty domain as integers (`None` for sparse
/// arrays and empty fragments).
fn int_domain(array: &Snapshot, fragment: &FragmentMetadata) -> Result<Option<IntRect>> {
    if !array.schema().is_dense() {
        return Ok(None);
    }
    let Some(ned) = &fragment.non_empty_domain else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(ned.len());
    for ((lo, hi), dim) in ned.iter().zip(&array.schema().dimensions) {
        match (
            Scalar::decode(dim.datatype, lo),
            Scalar::decode(dim.datatype, hi),
        ) {
            (Some(Scalar::Int(a)), Some(Scalar::Int(b))) => out.push((a, b)),
            _ => return Err(non_integer(array)),
        }
    }
    Ok(Some(out))
}

/// Expands an integer rectangle to whole space tiles, as TileDB's fragment
/// info does for dense fragments: without a current domain the expansion is
/// not clamped (not even to the domain), with one it is clamped to the
/// current domain.
fn expand_to_tiles(schema: &ArraySchema, rect: &IntRect) -> IntRect {
    let current = schema.current_domain.as_ref();
    rect.iter()
        .zip(&schema.dimensions)
        .enumerate()
        .map(|(d, (&(lo, hi), dim))| {
            let (Some((Scalar::Int(dlo), _)), Some(Scalar::Int(ext))) =
                (dim.domain_scalars(), dim.extent_scalar())
            else {
                return (lo, hi);
            };
            if ext <= 0 {
                return (lo, hi);
            }
            let mut out = (
                dlo + (lo - dlo).div_euclid(ext) * ext,
                dlo + ((hi - dlo).div_euclid(ext) + 1) * ext - 1,
            );
            let bounds = current.and_then(|c| c.get(d)).and_then(|(clo, chi)| {
                match (
                    Scalar::decode(dim.datatype, clo),
                    Scalar::decode(dim.datatype, chi),
                ) {
                    (Some(Scalar::Int(a)), Some(Scalar::Int(b))) => Some((a, b)),
                    _ => None,
                }
            });
            if let Some((clo, chi)) = bounds {
                out = (out.0.max(clo), out.1.min(chi));
            }
            out
        })
        .collect()
}

/// What the choice needs to know of one fragment.
fn candidate(array: &Snapshot, fragment: &FragmentMetadata) -> Result<Candidate> {
    let metadata_file = fragment.path.join(FRAGMENT_METADATA_FILE)?;
    let size = fragment
        .data_file_bytes()
        .saturating_add(array.storage().size(&metadata_file)?);
    let domain = int_domain(array, fragment)?;
    let expanded = domain.as_ref().map(|d| expand_to_tiles(array.schema(), d));
    Ok(Candidate {
        size,
        domain,
        expanded,
    })
}

/// Merges the dense fragments `array` holds (one chosen run) into one
/// fragment over the union of their non-empty domains expanded to whole
/// space tiles within the domain (or several, under `max_fragment_size`).
fn consolidate_dense(
    array: &Snapshot,
    inputs: &[crate::directory::Fragment],
    config: &ConsolidationConfig,
) -> Result<Vec<String>> {
    let Some(ned) = array.non_empty_domain() else {
        return Ok(Vec::new());
    };
    let mut subarray = Vec::new();
    for (lo, hi) in &ned {
        match (lo, hi) {
            (Scalar::Int(a), Scalar::Int(b)) => subarray.push((*a, *b)),
            _ => return Err(non_integer(array)),
        }
    }
    let schema = array.schema();
    let union = subarray.clone();
    // TileDB rewrites the union expanded to whole space tiles (within the
    // domain): cells no fragment wrote are consolidated as fill values.
    for ((lo, hi), dim) in subarray.iter_mut().zip(&schema.dimensions) {
        if let (Some((Scalar::Int(dlo), Scalar::Int(dhi))), Some(Scalar::Int(ext))) =
            (dim.domain_scalars(), dim.extent_scalar())
        {
            if ext > 0 {
                *lo = dlo + (*lo - dlo).div_euclid(ext) * ext;
                *hi = (dlo + ((*hi - dlo).div_euclid(ext) + 1) * ext - 1).min(dhi);
            }
        }
    }
    let ranges = schema
        .dimensions
        .iter()
        .zip(&subarray)
        .map(|(d, (lo, hi))| {
            let enc = |v: i128| crate::read::encode_scalar(d.datatype, &Scalar::Int(v));
            match (enc(*lo), enc(*hi)) {
                (Some(a), Some(b)) => Ok(vec![(a, b)]),
                _ => Err(Error::Usage("cannot encode a dense bound".into())),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let result = crate::read::read(
        array,
        &ReadQuery {
            ranges,
            layout: ResultOrder::RowMajor,
            attributes: None,
            ..Default::default()
        },
    )?;
    // The columns read are the columns written: no cell is copied.
    let input = FragmentInput {
        subarray: Some(subarray),
        non_empty_domain: Some(union.clone()),
        attrs: result.attributes,
        key: array.options().key,
        ..Default::default()
    };
    split::write_step(split::StepOutput {
        storage: array.storage(),
        schema,
        input,
        inputs,
        processed: &[],
        union: Some(&union),
        max_fragment_size: config.max_fragment_size,
    })
}

/// Sparse runs (FORMAT_NOTES §6.3): every cell of every fragment of the
/// run `array` holds, kept with its timestamp (no deduplication), in one
/// fragment with a `t` field. The array is opened over all time, as
/// TileDB's consolidation opens it by default. Cells removed by a delete
/// are kept too, unless `purge_deleted_cells` drops them: when any delete
/// is as recent as the run's oldest fragment, an input already has delete
/// metadata, or an earlier step of the same consolidation wrote delete
/// metadata (`with_delete_meta`), the new fragment records per cell the
/// delete that removed it (`dt`, `dci`); purging never records any. Its
/// processed conditions are every delete of the array, oldest first, the
/// list `dci` indexes (purged or not: those deletes are applied to its
/// cells). Inputs that are themselves consolidations (t1 < t2) need their
/// per-cell timestamps (`t`); without them they are refused.
fn consolidate_sparse(
    array: &Snapshot,
    inputs: &[crate::directory::Fragment],
    with_delete_meta: &mut bool,
    config: &ConsolidationConfig,
) -> Result<Vec<String>> {
    if array
        .fragments()
        .iter()
        .any(|f| f.name.timestamp_start() != f.name.timestamp_end() && !f.has_timestamps)
    {
        return Err(Error::Unsupported {
            file: root_of(array.storage()),
            what: "consolidating a fragment consolidated without per-cell timestamps".into(),
        });
    }
    let first_t1 = inputs
        .first()
        .map(|f| f.name.timestamp_start())
        .unwrap_or(0);
    if !config.purge_deleted_cells {
        *with_delete_meta = *with_delete_meta
            || array.conditions().iter().any(|c| c.timestamp >= first_t1)
            || array.fragments().iter().any(|f| f.has_delete_meta);
    }
    let with_delete_meta = *with_delete_meta;

    let cells = crate::read::sparse::read_for_consolidation(array)?;
    let schema = array.schema();
    // The columns read are the columns written: no cell is copied.
    let mut input = FragmentInput {
        dims: cells.result.dimensions,
        attrs: cells.result.attributes,
        timestamps: Some(cells.timestamps),
        delete_meta: with_delete_meta.then(|| DeleteMeta {
            timestamps: cells
                .deleted_by
                .iter()
                .map(|d| d.map_or(u64::MAX, |(t, _)| t))
                .collect(),
            condition_indexes: cells
                .deleted_by
                .iter()
                .map(|d| d.map_or(u64::MAX, |(_, i)| i))
                .collect(),
        }),
        key: array.options().key,
        ..Default::default()
    };
    if config.purge_deleted_cells && cells.deleted_by.iter().any(Option::is_some) {
        let live: Vec<usize> = (0..cells.deleted_by.len())
            .filter(|&i| cells.deleted_by[i].is_none())
            .collect();
        if live.is_empty() {
            // TileDB's copy loop stops on a read of no cells.
            return Err(Error::Usage(format!(
                "{}: consolidation read 0 cells (every cell of the run is deleted), no progress can be made",
                root_of(array.storage()).display()
            )));
        }
        input = split::gather_input(&input, &live);
    }
    let processed: Vec<String> = array
        .conditions()
        .iter()
        .map(|c| c.marker.clone())
        .collect();
    split::write_step(split::StepOutput {
        storage: array.storage(),
        schema,
        input,
        inputs,
        processed: &processed,
        union: None,
        max_fragment_size: config.max_fragment_size,
    })
}
