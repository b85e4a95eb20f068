use super::*;

impl Checker<'_> {
    pub(super) fn check_metadata(&mut self) {
        for (path, _) in self.files_under("__meta") {
            if is_tmp(&path) {
                continue; // judged by check_names
            }
            let bytes = if path.ends_with(".vac") {
                self.read(&path)
            } else {
                self.read_tile_file(&path)
            };
            let Some(bytes) = bytes else {
                continue;
            };
            let result = if path.ends_with(".vac") {
                text_files::parse_vacuum_file(&bytes, &["__meta"]).map(|_| ())
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
