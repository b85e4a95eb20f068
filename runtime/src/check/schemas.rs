use super::*;
use crate::format::generated::{ARRAY_SCHEMA_FILE, ENUMERATIONS_DIR, SCHEMA_DIR};

impl Checker<'_> {
    pub(super) fn check_schemas(&mut self) {
        let mut schema_files: Vec<(String, String)> = Vec::new();
        for (path, _) in self.files_under(SCHEMA_DIR) {
            let rest = &path[SCHEMA_DIR.len() + 1..];
            if is_tmp(&path) {
                continue; // judged by check_names
            }
            if rest
                .strip_prefix(ENUMERATIONS_DIR)
                .is_some_and(|r| r.starts_with('/'))
            {
                if let Some(bytes) = self.read_tile_file(&path) {
                    let file_name = rest.rsplit('/').next().unwrap_or_default();
                    let loaded = read_generic_tile_exact(&bytes, self.key.as_ref())
                        .and_then(|tile| crate::schema::enumeration_from_tile(&tile, file_name));
                    if let Err(e) = loaded {
                        self.error(&path, &e);
                    }
                }
            } else if !rest.contains('/') {
                schema_files.push((path.clone(), rest.to_string()));
            }
        }
        if self.files.contains_key(ARRAY_SCHEMA_FILE) {
            schema_files.push((ARRAY_SCHEMA_FILE.into(), String::new()));
        }
        if schema_files.is_empty() {
            self.find(SCHEMA_DIR, 0, "", "the array has no schema");
        }
        for (path, name) in schema_files {
            let Some(bytes) = self.read_tile_file(&path) else {
                continue;
            };
            let file_name = path.rsplit('/').next().unwrap_or_default();
            let loaded = crate::schema::ArraySchema::from_file_bytes(
                file_name,
                &bytes,
                self.key.as_ref(),
                true,
            );
            match loaded {
                Ok(schema) => {
                    for (i, reference) in schema.stored.enumerations.iter().flatten().enumerate() {
                        let file = format!(
                            "{SCHEMA_DIR}/{ENUMERATIONS_DIR}/{}",
                            String::from_utf8_lossy(&reference.path)
                        );
                        if !self.files.contains_key(&file) {
                            self.find(
                                &path,
                                0,
                                format!("ArraySchema.enumerations[{i}].path"),
                                format!("names {file}, which is missing"),
                            );
                        }
                    }
                    self.schemas.insert(name, schema);
                }
                Err(e) => {
                    self.error(&path, &e);
                    self.broken_schemas.insert(name);
                }
            }
        }
    }
}
