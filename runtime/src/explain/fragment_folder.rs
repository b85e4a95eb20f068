//! A fragment's folder seen from one of its files: the array folder above
//! it and the other files beside it, as the explainers of fragment metadata
//! and of data files (of every version, TileDB 1.3's included) find them.

use crate::directory::files::FRAGMENTS_DIR;
use crate::error::Result;
use crate::storage::RelPath;

/// The array folder of a file in a fragment folder: `…/__fragments/<fragment>/`
/// from format 12, `…/<fragment>/` before; `None` for a file less deep.
pub(super) fn array_dir(file: &RelPath) -> Option<RelPath> {
    let parts: Vec<&str> = file.components().collect();
    let up = match parts.len() {
        0 | 1 => return None,
        n if n >= 3 && parts[n - 3] == FRAGMENTS_DIR => 3,
        _ => 2,
    };
    let mut dir = RelPath::root();
    for part in &parts[..parts.len() - up] {
        dir = dir.join(part).ok()?;
    }
    Some(dir)
}

/// The file `name` in the folder of `file` (its fragment's other files).
pub(super) fn beside(file: &RelPath, name: &str) -> Result<RelPath> {
    file.parent().join(name)
}

/// The file's name without its extension (`a0_var.tdb` → `a0_var`).
pub(super) fn file_stem(file: &RelPath) -> Option<&str> {
    let name = file.file_name()?;
    Some(name.rsplit_once('.').map_or(name, |(stem, _)| stem))
}
