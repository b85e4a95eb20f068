use super::*;
use crate::format::generated::{Extension, METADATA_DIR};

impl Checker<'_> {
    pub(super) fn check_metadata(&mut self) {
        for (path, _) in self.files_under(METADATA_DIR) {
            if is_tmp(&path) {
                continue; // judged by check_names
            }
            let bytes = if path.ends_with(Extension::Vac.suffix()) {
                self.read(&path)
            } else {
                self.read_tile_file(&path)
            };
            let Some(bytes) = bytes else {
                continue;
            };
            let result = if path.ends_with(Extension::Vac.suffix()) {
                text_files::parse_vacuum_file(&bytes, &[METADATA_DIR]).map(|_| ())
            } else {
                read_generic_tile_exact(&bytes, self.key.as_ref())
                    .and_then(|tile| parse_metadata_tile(&tile))
                    .map(drop)
            };
            if let Err(e) = result {
                self.error(&path, &e);
            }
        }
    }
}
