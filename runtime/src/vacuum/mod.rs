//! Vacuum, format 22 (FORMAT_NOTES §6.5): removes what consolidation made
//! obsolete. Each removal is ordered so that an interrupted vacuum leaves a
//! readable array: a fragment's commit marker goes before its folder, and a
//! `.vac` file goes last.

use crate::array::directory::{ArrayDirectory, COMMITS_DIR, FRAGMENT_META_DIR, METADATA_DIR};
use crate::array::text_files::{encode_lines, parse_consolidated_commits};
use crate::array::{Extension, RelPath, Storage, TimeTravelRule, TimestampedName};
use crate::error::Result;

fn everything(storage: &dyn Storage) -> Result<ArrayDirectory> {
    ArrayDirectory::open(storage, 0, u64::MAX)
}

fn files_in(storage: &dyn Storage, dir: &RelPath) -> Result<Vec<String>> {
    Ok(storage
        .list(dir)?
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.is_file())
        .map(|e| e.name)
        .collect())
}

/// The commit paths listed in every `.con` file.
fn consolidated_commit_paths(storage: &dyn Storage) -> Result<Vec<RelPath>> {
    let commits = RelPath::parse(COMMITS_DIR)?;
    let mut out = Vec::new();
    for name in files_in(storage, &commits)? {
        if name.ends_with(".con") {
            let path = commits.join(&name)?;
            let data = storage.read(&path)?;
            let describe = storage.describe(&path);
            for c in parse_consolidated_commits(&data).map_err(|e| e.in_file(&describe))? {
                out.push(c.path);
            }
        }
    }
    Ok(out)
}

/// Removes every fragment listed in a `.vac` file (its commit, then its
/// folder), then the `.vac` files. Commits that only a `.con` file records
/// are first listed in an `.ign` file.
pub fn vacuum_fragments(storage: &dyn Storage) -> Result<usize> {
    let dir = everything(storage)?;
    let doomed = dir.vacuumed_fragments(TimeTravelRule::FullContainment);
    let commits = RelPath::parse(COMMITS_DIR)?;
    let in_con = consolidated_commit_paths(storage)?;
    let mut ignored = Vec::new();
    for f in &doomed {
        let marker = commits.join(f.name.with_extension(Some(Extension::Wrt)).as_str())?;
        if in_con.contains(&marker) {
            ignored.push(marker.as_str().to_string());
        }
    }
    if !ignored.is_empty() {
        let t = doomed
            .iter()
            .map(|f| f.name.timestamp_end())
            .max()
            .unwrap_or(1);
        let ign = TimestampedName::generate(
            t,
            t,
            Some(crate::write::WRITE_VERSION),
            Some(Extension::Ign),
        )?;
        storage.write(
            &commits.join(ign.as_str())?,
            &encode_lines(ignored.iter().map(String::as_str)),
        )?;
    }
    for f in &doomed {
        let marker = commits.join(f.name.with_extension(Some(Extension::Wrt)).as_str())?;
        if storage.kind(&marker)?.is_some() {
            storage.remove_file(&marker)?;
        }
        if storage.kind(&f.path)?.is_some() {
            storage.remove_dir(&f.path)?;
        }
    }
    for vac in dir.fragment_vacuum_files() {
        storage.remove_file(&vac.path)?;
    }
    Ok(doomed.len())
}

/// Removes every `__fragment_meta/*.meta` file but those with the greatest
/// end timestamp.
pub fn vacuum_fragment_meta(storage: &dyn Storage) -> Result<usize> {
    let dir = RelPath::parse(FRAGMENT_META_DIR)?;
    let mut metas = Vec::new();
    for name in files_in(storage, &dir)? {
        if name.ends_with(".meta") {
            metas.push((TimestampedName::parse(&name)?, name));
        }
    }
    let newest = metas.iter().map(|(n, _)| n.timestamp_end()).max();
    let mut removed = 0;
    for (n, name) in &metas {
        if Some(n.timestamp_end()) != newest {
            storage.remove_file(&dir.join(name)?)?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Removes the individual commit files that a `.con` file records.
pub fn vacuum_commits(storage: &dyn Storage) -> Result<usize> {
    let commits = RelPath::parse(COMMITS_DIR)?;
    let listed = consolidated_commit_paths(storage)?;
    let mut removed = 0;
    for name in files_in(storage, &commits)? {
        let path = commits.join(&name)?;
        if (name.ends_with(".wrt") || name.ends_with(".del")) && listed.contains(&path) {
            storage.remove_file(&path)?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Removes the array metadata files that `.vac` files list, then those
/// `.vac` files.
pub fn vacuum_array_meta(storage: &dyn Storage) -> Result<usize> {
    let dir = everything(storage)?;
    let set = dir.metadata();
    let mut removed = 0;
    for f in &set.vacuumed {
        if storage.kind(&f.path)?.is_some() {
            storage.remove_file(&f.path)?;
            removed += 1;
        }
    }
    let meta = RelPath::parse(METADATA_DIR)?;
    for vac in &set.vacuum_files {
        let _ = &meta;
        storage.remove_file(&vac.path)?;
    }
    Ok(removed)
}
