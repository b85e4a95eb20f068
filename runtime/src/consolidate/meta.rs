//! The three consolidations of files other than fragments: commit markers
//! into a `.con` file, fragment footers into a `__fragment_meta` file, and
//! array metadata files into one.

use crate::directory::text_files::{
    encode_consolidated_commits, encode_lines, parse_consolidated_commits,
};
use crate::directory::{ArrayDirectory, Extension, TimestampedName};
use crate::directory::{COMMITS_DIR, FRAGMENT_META_DIR, METADATA_DIR};
use crate::error::{Cause, Error, Result};
use crate::format::generated as stored;
use crate::format::io::write_to_vec;
use crate::metadata::Metadata;
use crate::storage::{RelPath, Storage};
use crate::tile::generic::write_generic_tile;
use crate::write::WRITE_VERSION;

use super::{everything, span_name};

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
        .filter(|e| e.is_file() && e.name.ends_with(Extension::Con.suffix()))
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
        let is_commit =
            e.name.ends_with(Extension::Wrt.suffix()) || e.name.ends_with(Extension::Del.suffix());
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
            .ends_with(Extension::Del.suffix())
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
/// footer of every committed fragment (format 3 and later). The footers are
/// copied as stored (never encrypted); the file itself is a generic tile,
/// encrypted with `key` when the array is.
pub fn consolidate_fragment_meta(
    storage: &dyn Storage,
    key: Option<&[u8; 32]>,
) -> Result<Option<String>> {
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
        &write_generic_tile(&payload, WRITE_VERSION, key)?,
    )?;
    Ok(Some(name.as_str().to_string()))
}

/// Merges the array metadata files of `[timestamp_start, timestamp_end]`
/// (as TileDB opens the array for this: `sm.consolidation.timestamp_*`)
/// into one `__meta/<first t1>_<last t2>_<label>` holding their live keys,
/// encrypted with `key` when the array is, and writes `<that>.vac` listing
/// the merged files. Nothing is written for fewer than two files.
pub fn consolidate_array_meta(
    storage: &dyn Storage,
    timestamp_start: u64,
    timestamp_end: u64,
    key: Option<&[u8; 32]>,
) -> Result<Option<String>> {
    let dir = ArrayDirectory::open(storage, timestamp_start, timestamp_end)?;
    let files = dir.metadata().files.clone();
    if files.len() < 2 {
        return Ok(None);
    }
    let meta = Metadata::load(storage, &files, key)?;
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
        &write_generic_tile(&payload, WRITE_VERSION, key)?,
    )?;
    let lines: Vec<String> = files.iter().map(|f| f.path.as_str().to_string()).collect();
    let vac = name.with_extension(Some(Extension::Vac));
    storage.write(
        &meta_dir.join(vac.as_str())?,
        &encode_lines(lines.iter().map(String::as_str))?,
    )?;
    Ok(Some(name.as_str().to_string()))
}
