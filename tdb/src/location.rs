//! Where an array or group lives: a local folder or an object-store URL
//! (`s3://`, `gs://`, `az://`, `http(s)://`, `memory://`), with the
//! `--config key=value` pairs given on the command line (credentials and
//! endpoints otherwise come from the environment: `tiledb_runtime::storage::open_url`).

use std::path::Path;
use std::sync::OnceLock;

use tiledb_runtime::array::{Array, OpenOptions};
use tiledb_runtime::group::Group;
use tiledb_runtime::schema::SchemaBuilder;
use tiledb_runtime::storage::{is_url, open_url, parse_config, Storage};

use crate::Failure;

static CONFIG: OnceLock<Vec<(String, String)>> = OnceLock::new();

/// Records the `--config` pairs for every later opening.
pub fn set_config(pairs: &[String]) -> Result<(), Failure> {
    let parsed = parse_config(pairs).map_err(|e| e.to_string())?;
    let _ = CONFIG.set(parsed);
    Ok(())
}

fn config() -> &'static [(String, String)] {
    CONFIG.get().map_or(&[], Vec::as_slice)
}

/// The location as text (a URL passes through a `PathBuf` unchanged).
fn text(path: &Path) -> Result<&str, Failure> {
    path.to_str()
        .ok_or_else(|| Failure::Message(format!("{}: not UTF-8", path.display())))
}

/// `path` names an object store rather than a local folder.
pub fn is_remote(path: &Path) -> bool {
    path.to_str().is_some_and(is_url)
}

/// Refuses a local `path` that is not a folder; URLs pass (an object store
/// has no folders to look at beforehand).
pub fn require_folder(path: &Path) -> Result<(), Failure> {
    if is_remote(path) || path.is_dir() {
        Ok(())
    } else {
        Err(Failure::Message(format!(
            "{}: not a folder",
            path.display()
        )))
    }
}

/// The storage rooted at `path`.
pub fn storage(path: &Path) -> Result<Box<dyn Storage>, Failure> {
    open_url(text(path)?, config())
        .map_err(|e| Failure::Message(format!("{}: {e}", path.display())))
}

/// Opens the array at `path`.
pub fn open_array(path: &Path, options: OpenOptions) -> Result<Array, Failure> {
    Array::open_url(text(path)?, config(), options)
        .map_err(|e| Failure::Message(format!("{}: {e}", path.display())))
}

/// Opens the group at `path`.
pub fn open_group(path: &Path, options: OpenOptions) -> Result<Group, Failure> {
    Group::open_url(text(path)?, config(), options)
        .map_err(|e| Failure::Message(format!("{}: {e}", path.display())))
}

/// Creates the array at `path` from `schema`.
pub fn create_array(path: &Path, schema: &SchemaBuilder) -> Result<Array, Failure> {
    Array::create_url(text(path)?, config(), schema)
        .map_err(|e| Failure::Message(format!("{}: {e}", path.display())))
}
