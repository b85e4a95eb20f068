//! Consolidation, format 22 (FORMAT_NOTES §6.3–6.4): commits into a `.con`
//! file, fragment metadata footers into a `__fragment_meta/*.meta` file,
//! array metadata into one `__meta` file plus its `.vac`, and fragments into
//! one fragment plus a `.vac`.
//!
//! Sparse fragments are consolidated as TileDB does without
//! `sm.consolidation.purge_deleted_cells`: every cell of every input is kept
//! with its timestamp (`t`), and cells removed by deletes stay too, marked by
//! delete metadata (`dt`: the timestamp of the first delete that removed the
//! cell, `dci`: its index in the new fragment's processed conditions, both
//! `u64::MAX` for a live cell). The processed conditions are every delete
//! and update commit of the array, by timestamp. Inputs that are
//! consolidations themselves are read with their own `t`, `dt` and `dci`;
//! purging deleted cells is not offered.
//!
//! Fragment consolidation chooses its inputs as TileDB does (`select`):
//! runs of adjacent fragments, step by step, under the
//! `sm.consolidation.*` settings of a [`ConsolidationConfig`] (steps, run
//! lengths, size ratio, dense amplification, time range). With TileDB's
//! defaults the only run considered is every candidate (the minimum run
//! length is capped at the candidate count): they are merged in one step,
//! unless the array is dense and their union would amplify (hold more cells
//! than their non-empty domains expanded to tiles), when nothing is merged.
//! Not offered: `sm.consolidation.max_fragment_size` (TileDB then splits the
//! output into several fragments) and `purge_deleted_cells`.
//! Consolidation leaves the inputs in place; [`crate::vacuum`] removes them.

pub(crate) mod select;

use std::collections::HashSet;
use std::path::Path;

pub use select::ConsolidationConfig;
use select::{Candidate, IntRect};

use crate::directory::text_files::{
    encode_consolidated_commits, encode_lines, parse_consolidated_commits,
};
use crate::directory::{ArrayDirectory, COMMITS_DIR, FRAGMENT_META_DIR, METADATA_DIR};
use crate::directory::{Extension, TimestampedName};
use crate::error::{Cause, Error, Result};
use crate::format::generated as stored;
use crate::format::io::write_to_vec;
use crate::read::{ReadQuery, ResultOrder};
use crate::schema::Scalar;
use crate::snapshot::{OpenOptions, Snapshot};
use crate::storage::{LocalStorage, RelPath, Storage};
use crate::tile::generic::write_generic_tile;
use crate::write::fragment::{write_fragment_named, DeleteMeta, FragmentInput};
use crate::write::WRITE_VERSION;

fn everything(storage: &dyn Storage) -> Result<ArrayDirectory> {
    ArrayDirectory::open(storage, 0, u64::MAX)
}

/// A name spanning `[t1, t2]` (fresh label), with the write version when
/// `versioned`.
fn span_name(t1: u64, t2: u64, versioned: bool, ext: Option<Extension>) -> Result<TimestampedName> {
    TimestampedName::generate(
        t1.max(1),
        t2.max(t1.max(1)),
        versioned.then_some(WRITE_VERSION),
        ext,
    )
}

/// Writes `__commits/<first t1>_<last t2>_<label>_22.con` listing every
/// commit (`.wrt`, `.del`) not already in a `.con` file, after the entries
/// of the existing `.con` files. Returns its name, or `None` when there is
/// nothing to consolidate.
pub fn consolidate_commits(storage: &dyn Storage) -> Result<Option<String>> {
    let commits = RelPath::parse(COMMITS_DIR)?;
    let mut listed: Vec<(RelPath, Option<Vec<u8>>, TimestampedName)> = Vec::new();
    let entries = storage.list(&commits)?.unwrap_or_default();
    for e in entries
        .iter()
        .filter(|e| e.is_file() && e.name.ends_with(".con"))
    {
        let path = commits.join(&e.name)?;
        let data = storage.read(&path)?;
        let describe = storage.describe(&path);
        for c in parse_consolidated_commits(&data).map_err(|err| err.in_file(&describe))? {
            let tile = c.embedded.map(|t| {
                let start = t.offset as usize;
                data.get(start..start + t.size as usize)
                    .unwrap_or_default()
                    .to_vec()
            });
            listed.push((c.path, tile, c.name));
        }
    }
    for e in entries.iter().filter(|e| e.is_file()) {
        let is_commit = e.name.ends_with(".wrt") || e.name.ends_with(".del");
        if !is_commit {
            continue;
        }
        let path = commits.join(&e.name)?;
        if listed.iter().any(|(p, _, _)| *p == path) {
            continue;
        }
        let name = TimestampedName::parse(&e.name)?;
        let tile = e
            .name
            .ends_with(".del")
            .then(|| storage.read(&path))
            .transpose()?;
        listed.push((path, tile, name));
    }
    if listed.len() < 2 {
        return Ok(None);
    }
    let t1 = listed
        .iter()
        .map(|(_, _, n)| n.timestamp_start())
        .min()
        .unwrap_or(0);
    let t2 = listed
        .iter()
        .map(|(_, _, n)| n.timestamp_end())
        .max()
        .unwrap_or(0);
    let bytes =
        encode_consolidated_commits(listed.iter().map(|(p, tile, _)| (p, tile.as_deref())))?;
    let name = span_name(t1, t2, true, Some(Extension::Con))?;
    storage.write(&commits.join(name.as_str())?, &bytes)?;
    Ok(Some(name.as_str().to_string()))
}

/// Writes `__fragment_meta/<first t1>_<last t2>_<label>_22.meta` holding the
/// footer of every committed fragment (format 3 and later).
pub fn consolidate_fragment_meta(storage: &dyn Storage) -> Result<Option<String>> {
    let dir = everything(storage)?;
    let fragments: Vec<_> = dir
        .committed_fragments()
        .iter()
        .filter(|f| stored::footer_after_tiles(f.format_version()))
        .cloned()
        .collect();
    if fragments.is_empty() {
        return Ok(None);
    }
    let mut footers: Vec<(String, Vec<u8>)> = Vec::new();
    for f in &fragments {
        // Only the footer is needed: its length (the last 8 bytes), then
        // the footer itself, by ranged reads; the file is never read whole.
        let path = f.metadata_path()?;
        let describe = storage.describe(&path);
        let size = storage.size(&path)?;
        let trailer = size.checked_sub(8).ok_or_else(|| {
            let cause = Cause::Truncated {
                needed: 8,
                available: size,
            };
            Error::corrupt(0, "FooterLength", cause).in_file(&describe)
        })?;
        let footer_len = storage
            .read_range(&path, trailer, 8)?
            .try_into()
            .map(u64::from_le_bytes)
            .unwrap_or(u64::MAX);
        let start = trailer.checked_sub(footer_len).ok_or_else(|| {
            let cause = Cause::OutOfRange {
                value: footer_len,
                limit: trailer,
            };
            Error::corrupt(trailer, "FooterLength.footer_len", cause).in_file(&describe)
        })?;
        if footer_len > crate::fragment::MAX_FRAGMENT_FOOTER_SIZE {
            return Err(Error::unsupported(format!(
                "the fragment footer is {footer_len} bytes, more than the {} this reader accepts",
                crate::fragment::MAX_FRAGMENT_FOOTER_SIZE
            ))
            .in_file(&describe));
        }
        footers.push((
            f.name.as_str().to_string(),
            storage.read_range(&path, start, footer_len)?,
        ));
    }
    let header_len: u64 = 4 + footers
        .iter()
        .map(|(name, _)| 16 + name.len() as u64)
        .sum::<u64>();
    let mut offset = header_len;
    let mut entries = Vec::new();
    let mut all = Vec::new();
    for (name, footer) in &footers {
        entries.push(stored::ConsolidatedFragmentEntry {
            name: name.as_bytes().to_vec(),
            offset,
        });
        offset += footer.len() as u64;
        all.extend_from_slice(footer);
    }
    let payload = write_to_vec(
        &stored::ConsolidatedFragmentMetadata {
            entries,
            footers: all,
        },
        (),
        "ConsolidatedFragmentMetadata",
    )?;
    let t1 = fragments
        .iter()
        .map(|f| f.name.timestamp_start())
        .min()
        .unwrap_or(0);
    let t2 = fragments
        .iter()
        .map(|f| f.name.timestamp_end())
        .max()
        .unwrap_or(0);
    let name = span_name(t1, t2, true, Some(Extension::Meta))?;
    let meta_dir = RelPath::parse(FRAGMENT_META_DIR)?;
    storage.create_dir(&meta_dir)?;
    storage.write(
        &meta_dir.join(name.as_str())?,
        &write_generic_tile(&payload, WRITE_VERSION, None)?,
    )?;
    Ok(Some(name.as_str().to_string()))
}

/// Merges every visible array metadata file into one
/// `__meta/<first t1>_<last t2>_<label>` holding the live keys, and writes
/// `<that>.vac` listing the merged files.
pub fn consolidate_array_meta(root: &Path) -> Result<Option<String>> {
    let storage = LocalStorage::new(root);
    let dir = everything(&storage)?;
    let files = dir.metadata().files.clone();
    if files.len() < 2 {
        return Ok(None);
    }
    let array = Snapshot::open_path(root, OpenOptions::default())?;
    let meta = array.metadata()?;
    let entries = meta
        .entries
        .iter()
        .map(|(k, v)| stored::MetadataEntry {
            key: k.as_bytes().to_vec(),
            deleted: false,
            value_type: v.datatype,
            value_num: v.value_num,
            value: Some(v.bytes.clone()),
        })
        .collect();
    let payload = write_to_vec(&stored::Metadata { entries }, (), "Metadata")?;
    let t1 = files
        .iter()
        .map(|f| f.name.timestamp_start())
        .min()
        .unwrap_or(0);
    let t2 = files
        .iter()
        .map(|f| f.name.timestamp_end())
        .max()
        .unwrap_or(0);
    let name = span_name(t1, t2, false, None)?;
    let meta_dir = RelPath::parse(METADATA_DIR)?;
    storage.write(
        &meta_dir.join(name.as_str())?,
        &write_generic_tile(&payload, WRITE_VERSION, None)?,
    )?;
    let lines: Vec<String> = files.iter().map(|f| f.path.as_str().to_string()).collect();
    let vac = name.with_extension(Some(Extension::Vac));
    storage.write(
        &meta_dir.join(vac.as_str())?,
        &encode_lines(lines.iter().map(String::as_str))?,
    )?;
    Ok(Some(name.as_str().to_string()))
}

/// Consolidates fragments as TileDB does with its default configuration
/// (see [`consolidate_fragments_with`]). Returns the name of the last
/// fragment written, `None` when TileDB would merge nothing.
pub fn consolidate_fragments(root: &Path) -> Result<Option<String>> {
    Ok(consolidate_fragments_with(root, &ConsolidationConfig::default())?.pop())
}

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
pub fn consolidate_fragments_with(
    root: &Path,
    config: &ConsolidationConfig,
) -> Result<Vec<String>> {
    config.validate()?;
    let listing = open_for_consolidation(root)?;
    let dense = listing.schema().is_dense();
    let storage = LocalStorage::new(root);
    let mut anterior: Option<IntRect> = None;
    let mut candidates: Vec<(String, Candidate)> = Vec::new();
    for f in listing.fragments() {
        let (t1, t2) = (f.name.timestamp_start(), f.name.timestamp_end());
        if t1 < config.timestamp_start {
            if let Some(domain) = int_domain(&listing, f, root)? {
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
            candidates.push((
                f.name.as_str().to_string(),
                candidate(&storage, &listing, f, root)?,
            ));
        }
    }
    drop(listing);
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
        let mut array = open_for_consolidation(root)?;
        array.retain_fragments(|f| chosen.contains(f.name.as_str()));
        let inputs: Vec<_> = array
            .directory()
            .fragments(crate::directory::TimeTravelRule::FullContainment)
            .into_iter()
            .filter(|f| chosen.contains(f.name.as_str()))
            .collect();
        if inputs.len() != chosen.len() || array.fragments().len() != chosen.len() {
            return Err(Error::Usage(format!(
                "{}: the fragments chosen for consolidation changed while consolidating",
                root.display()
            )));
        }
        let Some(name) = (if dense {
            consolidate_dense(root, &array, &inputs)?
        } else {
            consolidate_sparse(root, &array, &inputs, &mut with_delete_meta)?
        }) else {
            break;
        };
        drop(array);
        let after = open_for_consolidation(root)?;
        let Some(new) = after.fragments().iter().find(|f| f.name.as_str() == name) else {
            return Err(Error::Usage(format!(
                "{}: the consolidated fragment {name} is not visible",
                root.display()
            )));
        };
        let new = (name.clone(), candidate(&storage, &after, new, root)?);
        candidates.splice(run, std::iter::once(new));
        written.push(name);
        step += 1;
        if step >= config.steps {
            break;
        }
    }
    Ok(written)
}

/// The array over all time, as TileDB's consolidation opens it.
fn open_for_consolidation(root: &Path) -> Result<Snapshot> {
    Snapshot::open_path(
        root,
        OpenOptions {
            timestamp_start: 0,
            timestamp_end: u64::MAX,
            key: None,
        },
    )
}

/// A dense fragment's non-empty domain as integers (`None` for sparse
/// arrays and empty fragments).
fn int_domain(
    array: &Snapshot,
    fragment: &crate::fragment::FragmentMetadata,
    root: &Path,
) -> Result<Option<IntRect>> {
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
            _ => {
                return Err(Error::Unsupported {
                    file: root.to_path_buf(),
                    what: "non-integer dense domains".into(),
                })
            }
        }
    }
    Ok(Some(out))
}

/// Expands an integer rectangle to whole space tiles, as TileDB's fragment
/// info does for dense fragments: without a current domain the expansion is
/// not clamped (not even to the domain), with one it is clamped to the
/// current domain.
fn expand_to_tiles(schema: &crate::schema::ArraySchema, rect: &IntRect) -> IntRect {
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
fn candidate(
    storage: &dyn Storage,
    array: &Snapshot,
    fragment: &crate::fragment::FragmentMetadata,
    root: &Path,
) -> Result<Candidate> {
    let metadata_file = fragment.path.join("__fragment_metadata.tdb")?;
    let size = fragment
        .data_file_bytes()
        .saturating_add(storage.size(&metadata_file)?);
    let domain = int_domain(array, fragment, root)?;
    let expanded = domain.as_ref().map(|d| expand_to_tiles(array.schema(), d));
    Ok(Candidate {
        size,
        domain,
        expanded,
    })
}

/// Merges the dense fragments `array` holds (one chosen run) into one
/// fragment over the union of their non-empty domains expanded to whole
/// space tiles within the domain.
fn consolidate_dense(
    root: &Path,
    array: &Snapshot,
    inputs: &[crate::directory::Fragment],
) -> Result<Option<String>> {
    let Some(ned) = array.non_empty_domain() else {
        return Ok(None);
    };
    let mut subarray = Vec::new();
    for (lo, hi) in &ned {
        match (lo, hi) {
            (Scalar::Int(a), Scalar::Int(b)) => subarray.push((*a, *b)),
            _ => {
                return Err(Error::Unsupported {
                    file: root.to_path_buf(),
                    what: "non-integer dense domains".into(),
                })
            }
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
        non_empty_domain: Some(union),
        attrs: result.attributes,
        ..Default::default()
    };
    write_consolidated(root, schema, &input, inputs, &[])
}

/// Sparse runs (FORMAT_NOTES §6.3): every cell of every fragment of the
/// run `array` holds, kept with its timestamp (no deduplication), in one
/// fragment with a `t` field. The array is opened over all time, as
/// TileDB's consolidation opens it by default. Cells removed by a delete
/// are kept too: when any delete is as recent as the run's oldest
/// fragment, an input already has delete metadata, or an earlier step of
/// the same consolidation wrote delete metadata (`with_delete_meta`), the
/// new fragment records per cell the delete that removed it (`dt`, `dci`).
/// Its processed conditions are every delete of the array, oldest first,
/// the list `dci` indexes. Inputs that are themselves consolidations
/// (t1 < t2) need their per-cell timestamps (`t`); without them they are
/// refused.
fn consolidate_sparse(
    root: &Path,
    array: &Snapshot,
    inputs: &[crate::directory::Fragment],
    with_delete_meta: &mut bool,
) -> Result<Option<String>> {
    let unsupported = |what: &str| Error::Unsupported {
        file: root.to_path_buf(),
        what: what.into(),
    };
    if array
        .fragments()
        .iter()
        .any(|f| f.name.timestamp_start() != f.name.timestamp_end() && !f.has_timestamps)
    {
        return Err(unsupported(
            "consolidating a fragment consolidated without per-cell timestamps",
        ));
    }
    let first_t1 = inputs
        .first()
        .map(|f| f.name.timestamp_start())
        .unwrap_or(0);
    *with_delete_meta = *with_delete_meta
        || array.conditions().iter().any(|c| c.timestamp >= first_t1)
        || array.fragments().iter().any(|f| f.has_delete_meta);
    let with_delete_meta = *with_delete_meta;

    let cells = crate::read::sparse::read_for_consolidation(array)?;
    let schema = array.schema();
    // The columns read are the columns written: no cell is copied.
    let input = FragmentInput {
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
        ..Default::default()
    };
    let processed: Vec<String> = array
        .conditions()
        .iter()
        .map(|c| c.marker.clone())
        .collect();
    write_consolidated(root, schema, &input, inputs, &processed)
}

/// Writes the consolidated fragment, named after the span of its inputs, and
/// then the `.vac` file that lists the inputs for vacuuming.
fn write_consolidated(
    root: &Path,
    schema: &crate::schema::ArraySchema,
    input: &FragmentInput,
    inputs: &[crate::directory::Fragment],
    processed: &[String],
) -> Result<Option<String>> {
    let t1 = inputs
        .iter()
        .map(|f| f.name.timestamp_start())
        .min()
        .unwrap_or(0);
    let t2 = inputs
        .iter()
        .map(|f| f.name.timestamp_end())
        .max()
        .unwrap_or(0);
    let name = span_name(t1, t2, true, None)?;
    let storage = LocalStorage::new(root);
    write_fragment_named(&storage, schema, input, &name, processed)?;
    let lines: Vec<String> = inputs
        .iter()
        .map(|f| format!("/{}", f.path.as_str()))
        .collect();
    let vac = name.with_extension(Some(Extension::Vac));
    storage.write(
        &RelPath::parse(COMMITS_DIR)?.join(vac.as_str())?,
        &encode_lines(lines.iter().map(String::as_str))?,
    )?;
    Ok(Some(name.as_str().to_string()))
}
