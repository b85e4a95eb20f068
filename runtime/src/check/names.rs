use super::*;
use crate::format::generated::{
    listed_whole_folder, Folder, ARRAY_SCHEMA_FILE, COMMITS_DIR, COORDS_FILE, DATA_FILE_SUFFIX,
    DELETE_CONDITION_INDEX_FILE, DELETE_TIMESTAMPS_FILE, ENUMERATIONS_DIR, FRAGMENTS_DIR,
    FRAGMENT_METADATA_FILE, FRAGMENT_META_DIR, LABELS_DIR, LOCK_FILE, METADATA_DIR, SCHEMA_DIR,
    TIMESTAMPS_FILE, VALIDITY_FILE_SUFFIX, VAR_FILE_SUFFIX,
};

impl Checker<'_> {
    /// Every name is one the format allows where it sits.
    /// A temporary file that readers (ours and TileDB) ignore.
    pub(super) fn leftover_tmp_note(&mut self, path: String) {
        self.report.notes.push(Finding {
            class: ErrorClass::Corrupt,
            file: path,
            offset: 0,
            field: "file name".into(),
            message: "a temporary file left by an interrupted write: readers (ours and TileDB) \
                      ignore it"
                .into(),
            cause: None,
        });
    }

    pub(super) fn check_names(&mut self) {
        let paths: Vec<String> = self.files.keys().cloned().collect();
        for path in paths {
            match leftover_tmp(&path) {
                Some(Ok(())) => self.leftover_tmp_note(path),
                Some(Err(problem)) => self.find(&path, 0, "file name", problem),
                None => {
                    if let Some(problem) = name_problem(&path) {
                        self.find(&path, 0, "file name", problem);
                    }
                }
            }
        }
    }
}

/// Whether a file is a writer's temporary file: any name ending in
/// `.tmp` (our writer writes `.<final name>.<random>.tmp` in the array
/// folder and renames it into place; older versions of its schema writer
/// left `__schema/<name>.tmp`).
pub(super) fn is_tmp(path: &str) -> bool {
    path.rsplit('/')
        .next()
        .is_some_and(|name| name.ends_with(".tmp"))
}

/// A `.tmp` file left by an interrupted write: `Some(Ok)` where readers
/// ignore it, `Some(Err(why))` where TileDB cannot open the array with it,
/// `None` for other files.
///
/// TileDB 2.30 reads an array with such a file in the array folder,
/// `__commits/`, `__fragments/`, a fragment folder or
/// `__schema/__enumerations/` (it looks there only for the names it
/// expects), but not in `__schema/` or `__fragment_meta/` (it cannot open
/// the array) nor in `__meta/` (it cannot load the array's metadata),
/// whose every file it loads as a schema, consolidated fragment metadata
/// or a metadata file (tiledb/sm/array/array_directory.cc lists those
/// folders whole; measured with tiledb-py in
/// runtime/tests/check_leftovers.rs). Our reader skips such files in
/// `__meta/` and `__fragment_meta/`, but an array TileDB cannot open is
/// not clean.
pub fn leftover_tmp(path: &str) -> Option<Result<(), String>> {
    if !is_tmp(path) {
        return None;
    }
    let parts: Vec<&str> = path.split('/').collect();
    // The folders TileDB lists whole come from spec/directory.toml.
    if let [dir, _] = parts.as_slice() {
        if let Some(folder) = listed_whole_folder(dir, false) {
            return Some(Err(leftover_in_listed_folder(folder)));
        }
    }
    Some(match parts.as_slice() {
        [_]
        | [COMMITS_DIR, _]
        | [FRAGMENTS_DIR, _]
        | [FRAGMENTS_DIR, _, _]
        | [SCHEMA_DIR, ENUMERATIONS_DIR, _] => Ok(()),
        // Inside a root fragment folder (before format 12).
        [fragment, _] if TimestampedName::parse(fragment).is_ok() => Ok(()),
        _ => return None,
    })
}

/// The problem with a temporary file in a folder TileDB lists whole
/// (`listed_whole` in spec/directory.toml).
pub(super) fn leftover_in_listed_folder(folder: &Folder) -> String {
    format!(
        "a temporary file left by an interrupted write, where TileDB 2.30 loads every \
         file as {}: TileDB cannot {} until it is removed",
        folder.loaded_as, folder.refusal
    )
}

/// Why a file's name is not one the format allows where it sits.
pub fn name_problem(path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split('/').collect();
    let timestamped = |name: &str| TimestampedName::parse(name).map_err(|e| e.to_string());
    match parts.as_slice() {
        [LOCK_FILE] | [ARRAY_SCHEMA_FILE] => None,
        [SCHEMA_DIR, name] => extension_problem(name, SCHEMA_DIR, &[None]),
        [SCHEMA_DIR, ENUMERATIONS_DIR, name] => {
            if name.starts_with("__") {
                None
            } else {
                Some(format!(
                    "{name}: enumeration files are named __<label>_<version>"
                ))
            }
        }
        [COMMITS_DIR, name] => extension_problem(name, COMMITS_DIR, &[Some(Extension::Vac)]),
        [FRAGMENT_META_DIR, name] => {
            extension_problem(name, FRAGMENT_META_DIR, &[Some(Extension::Meta)])
        }
        [METADATA_DIR, name] => {
            extension_problem(name, METADATA_DIR, &[None, Some(Extension::Vac)])
        }
        [FRAGMENTS_DIR, fragment, file] => {
            if let Err(e) = timestamped(fragment).and_then(|n| {
                if n.extension().is_none() && n.version().is_some() {
                    Ok(n)
                } else {
                    Err(format!("{fragment}: not a fragment folder name"))
                }
            }) {
                return Some(e);
            }
            fragment_file_problem(fragment, file)
        }
        [LABELS_DIR, ..] => None,
        [root, ..] if ROOT_DIRS.contains(root) => Some(format!("{path}: unexpected here")),
        // Legacy (format < 12) commit, vacuum and metadata files in the root.
        [name] => extension_problem(name, "", &[Some(Extension::Vac), Some(Extension::Meta)]),
        [fragment, file] if TimestampedName::parse(fragment).is_ok() => {
            fragment_file_problem(fragment, file)
        }
        _ => Some(format!("{path}: not a file of an array")),
    }
}

/// Why the timestamped `name` may not stand in `folder` (`""`: the array's
/// root). Its extension must be one spec/directory.toml places there
/// (`Extension::folder`), in a format version that names files with it
/// (`Extension::since`, `until`, where the name states its version), or
/// one of `elsewhere`: the extensions spec/ places in no one folder
/// (`.vac`, `.meta`) and the bare name, where this folder holds them.
fn extension_problem(name: &str, folder: &str, elsewhere: &[Option<Extension>]) -> Option<String> {
    let parsed = match TimestampedName::parse(name) {
        Ok(parsed) => parsed,
        Err(e) => return Some(e.to_string()),
    };
    let extension = parsed.extension();
    if elsewhere.contains(&extension) {
        return None;
    }
    let Some(extension) = extension else {
        return Some(format!(
            "{name}: a name without an extension does not belong here"
        ));
    };
    let suffix = extension.suffix();
    match extension.folder() {
        Some(home) if home == folder => {}
        Some("") => {
            return Some(format!(
                "{name}: a {suffix} file belongs in the array's folder"
            ))
        }
        Some(home) => return Some(format!("{name}: a {suffix} file belongs in {home}/")),
        None => return Some(format!("{name}: a {suffix} file does not belong here")),
    }
    let version = parsed.version()?;
    let named_from = extension.since().unwrap_or(0);
    match extension.until() {
        Some(until) if version >= until => Some(format!(
            "{name}: format version {version} names no {suffix} files (versions {named_from} to {})",
            until - 1
        )),
        _ if version < named_from => Some(format!(
            "{name}: format version {version} names no {suffix} files (from version {named_from})"
        )),
        _ => None,
    }
}

/// Why `file` is no file of the fragment folder `fragment`: from the
/// version that names field files by index, only those names (before it,
/// files are named after their fields, so any name goes).
fn fragment_file_problem(fragment: &str, file: &str) -> Option<String> {
    let named_by_index = TimestampedName::parse(fragment)
        .map(|n| g::field_files_by_index(n.format_version()))
        .unwrap_or(false);
    if !named_by_index || fragment_file_ok(file) {
        None
    } else {
        Some(format!("{file}: not a fragment file name"))
    }
}

/// `__fragment_metadata.tdb`, `a<i>`/`d<j>` with `.tdb`, `_var.tdb`,
/// `_validity.tdb`; `t.tdb`, `dt.tdb`, `dci.tdb`; `__coords.tdb`.
pub(super) fn fragment_file_ok(file: &str) -> bool {
    if matches!(
        file,
        FRAGMENT_METADATA_FILE
            | TIMESTAMPS_FILE
            | DELETE_TIMESTAMPS_FILE
            | DELETE_CONDITION_INDEX_FILE
            | COORDS_FILE
    ) {
        return true;
    }
    let Some(stem) = [VAR_FILE_SUFFIX, VALIDITY_FILE_SUFFIX, DATA_FILE_SUFFIX]
        .into_iter()
        .find_map(|suffix| file.strip_suffix(suffix))
    else {
        return false;
    };
    let digits = stem.strip_prefix('a').or_else(|| stem.strip_prefix('d'));
    digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}
