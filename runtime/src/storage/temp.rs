//! Temporary files: how a write names them, and how vacuum tells a stale one.

/// Temporary files end with this; readers skip them and vacuum removes the
/// stale ones ([`is_temp_file_name`], `vacuum::remove_temp_files`).
pub const TEMP_SUFFIX: &str = ".tmp";

/// Whether `name` is a temporary file a write made (and perhaps left behind
/// when it was killed before its rename).
pub fn is_temp_file_name(name: &str) -> bool {
    name.ends_with(TEMP_SUFFIX)
}

/// The moment (milliseconds since the epoch) a temporary file of
/// [`LocalStorage`](super::LocalStorage)'s [`write`](super::Storage::write)
/// was started, read back from its name
/// `.<final name>.<ms>_<label>.tmp`; `None` for other `.tmp` names.
pub fn temp_file_started_ms(name: &str) -> Option<u64> {
    let stem = name.strip_prefix('.')?.strip_suffix(TEMP_SUFFIX)?;
    let (_, stamp) = stem.rsplit_once('.')?;
    let (ms, label) = stamp.split_once('_')?;
    (!label.is_empty() && label.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| ms.parse().ok())
        .flatten()
}
