//! Where the TileDB oracle is: the Python of the venv holding tiledb-py,
//! `.venv-tiledb/bin/python` in the workspace (what `.ci/run` installs),
//! else `$TILEDB_PY`. The one lookup every test suite, the runner and `tdb`
//! use; callers skip what needs TileDB, saying why, when it is absent.

use std::path::{Path, PathBuf};

/// The variable naming another Python with tiledb-py.
pub const PYTHON_VARIABLE: &str = "TILEDB_PY";

/// Why a caller skips: the words to print after "skipped …:".
pub const ABSENT: &str = "no TileDB oracle (.venv-tiledb in the workspace, or $TILEDB_PY)";

/// The workspace this crate was built in (the parent of its folder).
pub fn workspace() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The oracle's Python for `workspace`: its `.venv-tiledb/bin/python`, then
/// `$TILEDB_PY`; the first that is a file.
pub fn tiledb_python_in(workspace: &Path) -> Option<PathBuf> {
    let venv = workspace.join(".venv-tiledb").join("bin").join("python");
    let variable = std::env::var_os(PYTHON_VARIABLE).map(PathBuf::from);
    [Some(venv), variable]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
}

/// The oracle's Python for this workspace.
pub fn tiledb_python() -> Option<PathBuf> {
    tiledb_python_in(&workspace())
}

/// As [`tiledb_python`]; when there is none, prints `skipped {what}: …`
/// with the reason, so that the caller can skip what needs TileDB.
pub fn tiledb_python_or_skip(what: &str) -> Option<PathBuf> {
    let found = tiledb_python();
    if found.is_none() {
        println!("skipped {what}: {ABSENT}");
    }
    found
}
