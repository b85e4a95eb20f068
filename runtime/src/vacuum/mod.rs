//! Vacuum, format 22 (FORMAT_NOTES §6.5): removes what consolidation made
//! obsolete. Each removal is ordered so that an interrupted vacuum leaves a
//! readable array: a fragment's commit marker goes before its folder, and a
//! `.vac` file goes last. Every mode also removes the temporary files that
//! killed writes left behind ([`remove_stale_temp_files`]).

use crate::directory::text_files::{encode_lines, parse_consolidated_commits};
use crate::directory::timestamped_name::now_ms;
use crate::directory::{ArrayDirectory, COMMITS_DIR, FRAGMENT_META_DIR, METADATA_DIR};
use crate::directory::{Extension, TimeTravelRule, TimestampedName};
use crate::error::Result;
use crate::storage::{is_temp_file_name, temp_file_started_ms};
use crate::storage::{RelPath, Storage};

fn everything(storage: &dyn Storage) -> Result<ArrayDirectory> {
    ArrayDirectory::open(storage, 0, u64::MAX)
}

fn files_in(storage: &dyn Storage, dir: &RelPath) -> Result<Vec<String>> {
    Ok(storage
        .list(dir)?
        .unwrap_or_default()
        .into_iter()
        .filter(super::storage::DirEntry::is_file)
        .map(|e| e.name)
        .collect())
}

/// The commit paths listed in every `.con` file.
fn consolidated_commit_paths(storage: &dyn Storage) -> Result<Vec<RelPath>> {
    let commits = RelPath::parse(COMMITS_DIR)?;
    let mut out = Vec::new();
    for name in files_in(storage, &commits)? {
        if name.ends_with(Extension::Con.suffix()) {
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

/// How old a temporary file must be before vacuum takes it for a leftover:
/// a younger one may belong to a write still running in another process
/// (its name records when that write started). An hour is far longer than
/// writing one file takes.
pub const TEMP_FILE_GRACE_MS: u64 = 60 * 60 * 1000;

/// Removes temporary files that writes killed before their rename left
/// behind: those of [`crate::storage::LocalStorage::write`] in the
/// root started more than `older_than_ms` ago, and any `.tmp` file in the
/// folders TileDB lists whole (`listed_whole` in spec/directory.toml:
/// `__schema/`, `__meta/`, `__fragment_meta/`), which an earlier version of
/// this writer left and TileDB cannot open an array beside, and in
/// `__commits/`, where that writer left them too. Returns how many were removed.
pub fn remove_stale_temp_files(storage: &dyn Storage, older_than_ms: u64) -> Result<usize> {
    let now = now_ms();
    let mut removed = 0;
    for name in files_in(storage, &RelPath::root())? {
        let stale = temp_file_started_ms(&name)
            .is_some_and(|started| now.saturating_sub(started) >= older_than_ms);
        if stale {
            storage.remove_file(&RelPath::root().join(&name)?)?;
            removed += 1;
        }
    }
    let listed_whole = crate::format::generated::FOLDERS
        .iter()
        .filter(|f| f.listed_whole && f.in_array)
        .map(|f| f.path);
    for dir in listed_whole.chain([COMMITS_DIR]) {
        let dir = RelPath::parse(dir)?;
        for name in files_in(storage, &dir)? {
            if is_temp_file_name(&name) {
                storage.remove_file(&dir.join(&name)?)?;
                removed += 1;
            }
        }
    }
    Ok(removed)
}

/// Removes every fragment listed in a `.vac` file (its commit, then its
/// folder), then the `.vac` files. Commits that only a `.con` file records
/// are first listed in an `.ign` file.
pub fn vacuum_fragments(storage: &dyn Storage) -> Result<usize> {
    remove_stale_temp_files(storage, TEMP_FILE_GRACE_MS)?;
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
            &encode_lines(ignored.iter().map(String::as_str))?,
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
    remove_stale_temp_files(storage, TEMP_FILE_GRACE_MS)?;
    let dir = RelPath::parse(FRAGMENT_META_DIR)?;
    let mut metas = Vec::new();
    for name in files_in(storage, &dir)? {
        if name.ends_with(Extension::Meta.suffix()) {
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
    remove_stale_temp_files(storage, TEMP_FILE_GRACE_MS)?;
    let commits = RelPath::parse(COMMITS_DIR)?;
    let listed = consolidated_commit_paths(storage)?;
    let mut removed = 0;
    for name in files_in(storage, &commits)? {
        let path = commits.join(&name)?;
        if (name.ends_with(Extension::Wrt.suffix()) || name.ends_with(Extension::Del.suffix()))
            && listed.contains(&path)
        {
            storage.remove_file(&path)?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Removes the array metadata files that `.vac` files list, then those
/// `.vac` files.
pub fn vacuum_array_meta(storage: &dyn Storage) -> Result<usize> {
    remove_stale_temp_files(storage, TEMP_FILE_GRACE_MS)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::directory::SCHEMA_DIR;
    use crate::storage::LocalStorage;

    #[test]
    fn stale_temporary_files_are_removed_and_fresh_ones_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let storage = LocalStorage::new(tmp.path());
        let file = |p: &str| RelPath::parse(p).unwrap();
        storage.create_dir(&file(SCHEMA_DIR)).unwrap();
        let fresh = format!(".__meta_x.{}_0123abcd.tmp", now_ms());
        let old = ".__5_5_ab.1000_0123abcd.tmp";
        for name in [
            fresh.as_str(),
            old,
            "user-notes.tmp",
            "__schema/__1_1_ab.tmp",
        ] {
            std::fs::write(tmp.path().join(name), b"partial").unwrap();
        }
        // The old one of ours and the one TileDB cannot open beside go; a fresh one may be
        // a write in progress; a file not named as ours is not ours to remove.
        assert_eq!(
            remove_stale_temp_files(&storage, TEMP_FILE_GRACE_MS).unwrap(),
            2
        );
        assert!(tmp.path().join(&fresh).exists());
        assert!(tmp.path().join("user-notes.tmp").exists());
        assert!(!tmp.path().join(old).exists());
        assert!(!tmp.path().join("__schema/__1_1_ab.tmp").exists());
        assert_eq!(remove_stale_temp_files(&storage, 0).unwrap(), 1);
        assert!(!tmp.path().join(&fresh).exists());
    }
}
