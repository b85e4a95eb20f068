//! Listing a folder of timestamped files: refusing a file that masks an
//! owned folder, parsing the names, applying `.vac` files.

use std::collections::HashSet;

use crate::directory::files::TimestampedFile;
use crate::directory::text_files;
use crate::directory::timestamped_name::{Extension, TimestampedName};
use crate::error::{Cause, Error, Result};
use crate::storage::{DirEntry, FoldAt, RelPath, Storage};

pub(crate) fn in_file(storage: &dyn Storage, path: &RelPath) -> impl Fn(Error) -> Error {
    let file = storage.describe(path);
    move |e: Error| e.in_file(&file)
}

/// Lists `dir`, refusing a zero-byte file named like one of `owned_dirs`
/// (on object stores such a file masks the folder of that name).
pub(crate) fn list_checked(
    storage: &dyn Storage,
    dir: &RelPath,
    owned_dirs: &[&str],
) -> Result<Option<Vec<DirEntry>>> {
    // Sizes are looked up only where they matter (below, and for the
    // condition files the caller reads): not for thousands of commit files.
    let Some(entries) = storage.list_names(dir)? else {
        return Ok(None);
    };
    refuse_masking_files(storage, dir, owned_dirs, &entries)?;
    Ok(Some(entries))
}

/// Where a listing of `__commits/` may fold names
/// ([`Storage::list_names_folded`]): at `.wrt`, the ending of one commit
/// marker per fragment; a whole name is a timestamped name.
pub(crate) const COMMITS_FOLD: FoldAt = FoldAt {
    suffix: Extension::Wrt.suffix(),
    is_whole_name: |name| TimestampedName::parse(name).is_ok(),
};

/// [`list_checked`] of `__commits/`, folded at [`COMMITS_FOLD`] where the
/// storage can.
pub(crate) fn list_commits_checked(
    storage: &dyn Storage,
    dir: &RelPath,
    owned_dirs: &[&str],
) -> Result<Option<Vec<DirEntry>>> {
    let Some(entries) = storage.list_names_folded(dir, &COMMITS_FOLD)? else {
        return Ok(None);
    };
    refuse_masking_files(storage, dir, owned_dirs, &entries)?;
    Ok(Some(entries))
}

/// Refuses a zero-byte file of `entries` named like one of `owned_dirs`.
fn refuse_masking_files(
    storage: &dyn Storage,
    dir: &RelPath,
    owned_dirs: &[&str],
    entries: &[DirEntry],
) -> Result<()> {
    for entry in entries {
        if !entry.is_file() || !owned_dirs.contains(&entry.name.as_str()) {
            continue;
        }
        let path = dir.join(&entry.name)?;
        let size = match entry.size {
            Some(size) => size,
            None => storage.size(&path)?,
        };
        if size == 0 {
            return Err(Error::corrupt(
                0,
                "directory listing",
                Cause::BadName {
                    name: entry.name.clone(),
                    expected: "a folder, not a zero-byte file masking it",
                },
            )
            .in_file(storage.describe(&path)));
        }
    }
    Ok(())
}

pub(crate) fn parse_listed(
    storage: &dyn Storage,
    dir: &RelPath,
    name: &str,
) -> Result<TimestampedName> {
    let path = dir.join(name)?;
    TimestampedName::parse(name).map_err(in_file(storage, &path))
}

/// Files in one folder named by timestamps (array metadata, group metadata,
/// group details), with `.vac` files applied: the ones fully inside the open
/// range, in time order.
#[derive(Debug, Clone, Default)]
pub struct TimestampedSet {
    /// Visible files, by `t1` then name.
    pub files: Vec<TimestampedFile>,
    /// Files removed by an applicable `.vac` file.
    pub vacuumed: Vec<TimestampedFile>,
    /// The `.vac` files that apply.
    pub vacuum_files: Vec<TimestampedFile>,
}

impl TimestampedSet {
    /// Loads `dir` (absent → empty). Names without an extension are members;
    /// `.vac` files fully inside the range are read and applied, their lines
    /// normalized with `kept_dirs`; `.tmp` files are partial writes and
    /// skipped; other names are ignored.
    pub(crate) fn load(
        storage: &dyn Storage,
        dir: &RelPath,
        owned_dirs: &[&str],
        kept_dirs: &[&str],
        start: u64,
        end: u64,
    ) -> Result<Self> {
        let mut set = TimestampedSet::default();
        let Some(entries) = list_checked(storage, dir, owned_dirs)? else {
            return Ok(set);
        };
        let mut members = Vec::new();
        for entry in entries.iter().filter(|e| e.is_file()) {
            let is_vac = entry.name.ends_with(Extension::Vac.suffix());
            if !is_vac && entry.name.contains('.') {
                continue;
            }
            let name = parse_listed(storage, dir, &entry.name)?;
            let file = TimestampedFile {
                path: dir.join(&entry.name)?,
                name,
            };
            if !file.name.contained_in(start, end) {
                continue;
            }
            if is_vac {
                set.vacuum_files.push(file);
            } else {
                members.push(file);
            }
        }
        let mut removed: HashSet<RelPath> = HashSet::new();
        for vac in &set.vacuum_files {
            let data = storage.read(&vac.path)?;
            let lines = text_files::parse_vacuum_file(&data, kept_dirs)
                .map_err(in_file(storage, &vac.path))?;
            removed.extend(lines);
        }
        for file in members {
            if removed.contains(&file.path) {
                set.vacuumed.push(file);
            } else {
                set.files.push(file);
            }
        }
        sort_by_time(&mut set.files, |f| &f.name);
        sort_by_time(&mut set.vacuumed, |f| &f.name);
        Ok(set)
    }
}

/// TileDB sorts by `t1` alone with an unstable sort; the name breaks ties
/// here so that the order is deterministic.
pub(crate) fn sort_by_time<T>(items: &mut [T], name: impl Fn(&T) -> &TimestampedName) {
    items.sort_by(|a, b| {
        let (a, b) = (name(a), name(b));
        (a.timestamp_start(), a.as_str()).cmp(&(b.timestamp_start(), b.as_str()))
    });
}
