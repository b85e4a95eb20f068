use super::*;
use crate::format::generated::{
    Extension, COMMITS_DIR, FRAGMENTS_DIR, FRAGMENT_META_DIR, METADATA_DIR,
};

impl Checker<'_> {
    /// Names of the fragments that vacuum files say were consolidated away.
    pub(super) fn vacuumed(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for path in self.files.keys() {
            if !path.ends_with(Extension::Vac.suffix()) {
                continue;
            }
            let Ok(bytes) = self.storage.read(&RelPath::parse(path).unwrap_or_default()) else {
                continue;
            };
            if let Ok(lines) = text_files::parse_vacuum_file(&bytes, &[FRAGMENTS_DIR, METADATA_DIR])
            {
                for line in lines {
                    if let Some(name) = line.file_name() {
                        out.insert(name.to_string());
                    }
                }
            }
        }
        out
    }

    pub(super) fn check_commits(&mut self) {
        let fragments: BTreeSet<String> = self.fragment_dirs().into_iter().collect();
        let vacuumed = self.vacuumed();
        for (path, _) in self.files_under(COMMITS_DIR) {
            let Some(file) = path.rsplit('/').next() else {
                continue;
            };
            let Ok(name) = TimestampedName::parse(file) else {
                continue; // reported by check_names
            };
            let bytes = if matches!(name.extension(), Some(Extension::Del | Extension::Upd)) {
                self.read_tile_file(&path)
            } else {
                self.read(&path)
            };
            let Some(bytes) = bytes else {
                continue;
            };
            let result: crate::Result<()> = match name.extension() {
                Some(Extension::Wrt) => {
                    let marker = crate::format::io::read_exact_from::<g::CommitMarker>(
                        &bytes,
                        (),
                        "CommitMarker",
                    );
                    if marker.is_err() {
                        self.find(&path, 0, "file", "a write commit file is empty in TileDB");
                    }
                    let fragment = name.stem().to_string();
                    // A fragment folder that could not be listed (a link
                    // leading outside the array, say) has its own finding.
                    let dir = format!("{FRAGMENTS_DIR}/{fragment}");
                    let unlisted = self.report.findings.iter().any(|f| f.file == dir);
                    if !fragments.contains(&fragment) && !vacuumed.contains(&fragment) && !unlisted
                    {
                        self.find(
                            &path,
                            0,
                            "commit",
                            format!("commits fragment {fragment}, which is not in __fragments"),
                        );
                    }
                    Ok(())
                }
                Some(Extension::Del) => commit(&bytes, ConditionKind::Delete, self.key.as_ref()),
                Some(Extension::Upd) => commit(&bytes, ConditionKind::Update, self.key.as_ref()),
                Some(Extension::Ign) => text_files::parse_ignore_file(&bytes).map(|_| ()),
                Some(Extension::Vac) => text_files::parse_vacuum_file(&bytes, &[FRAGMENTS_DIR])
                    .map(|lines| {
                        self.vacuumed_gone_note(&path, &lines);
                    }),
                Some(Extension::Con) => self.consolidated_commits(&bytes),
                _ => Ok(()),
            };
            if let Err(e) = result {
                self.error(&path, &e);
            }
        }
    }

    pub(super) fn consolidated_commits(&mut self, bytes: &[u8]) -> crate::Result<()> {
        for entry in text_files::parse_consolidated_commits(bytes)? {
            if let Some(tile) = entry.embedded {
                let start = usize::try_from(tile.offset).unwrap_or(usize::MAX);
                let end = start.saturating_add(usize::try_from(tile.size).unwrap_or(usize::MAX));
                let embedded = bytes.get(start..end).ok_or_else(|| {
                    let cause = Cause::Truncated {
                        needed: tile.size,
                        available: (bytes.len() as u64).saturating_sub(tile.offset),
                    };
                    Error::corrupt(tile.offset, "embedded delete", cause)
                })?;
                commit(embedded, ConditionKind::Delete, self.key.as_ref()).map_err(|e| {
                    e.within(format!("delete {}", entry.path))
                        .at_base(tile.offset)
                })?;
            }
        }
        Ok(())
    }

    /// A vacuum removes the fragments a `.vac` file lists, then the file
    /// (`vacuum::vacuum_fragments`, as TileDB's vacuum does): one stopped
    /// in between leaves a `.vac` file listing fragments that are gone.
    /// Readers only drop listed fragments that exist, so it is a note.
    pub(super) fn vacuumed_gone_note(&mut self, path: &str, lines: &[RelPath]) {
        let gone = lines
            .iter()
            .filter(|line| {
                let prefix = format!("{line}/");
                !self
                    .files
                    .range(prefix.clone()..)
                    .next()
                    .is_some_and(|(p, _)| p.starts_with(&prefix))
            })
            .count();
        if gone == 0 {
            return;
        }
        self.report.notes.push(Finding {
            class: ErrorClass::Corrupt,
            file: path.to_string(),
            offset: 0,
            field: "vacuum".into(),
            message: format!(
                "{gone} of the {} fragment(s) it lists are gone: a vacuum stopped before \
                 removing this file (readers ignore what it lists that no longer exists)",
                lines.len()
            ),
            cause: None,
        });
    }

    /// Commit paths (`__commits/<name>.wrt`) named by an `.ign` file, with
    /// that file: readers drop them from every `.con` file.
    pub(super) fn ignored_commits(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (path, _) in self.files_under(COMMITS_DIR) {
            if !path.ends_with(Extension::Ign.suffix()) {
                continue;
            }
            let bytes = RelPath::parse(&path)
                .ok()
                .and_then(|p| self.storage.read(&p).ok())
                .unwrap_or_default();
            for line in text_files::parse_ignore_file(&bytes).unwrap_or_default() {
                out.entry(line.as_str().to_string())
                    .or_insert_with(|| path.clone());
            }
        }
        out
    }

    /// Fragments committed by a `.wrt` file or a `.con` line that no
    /// `.ign` file names, as [`ArrayDirectory::open`] finds them.
    pub(super) fn committed(&self) -> BTreeSet<String> {
        let ignored = self.ignored_commits();
        let mut out = BTreeSet::new();
        for (path, _) in self.files_under(COMMITS_DIR) {
            let Some(file) = path.rsplit('/').next() else {
                continue;
            };
            if let Ok(name) = TimestampedName::parse(file) {
                match name.extension() {
                    Some(Extension::Wrt) => {
                        out.insert(name.stem().to_string());
                    }
                    Some(Extension::Con) => {
                        let bytes = RelPath::parse(&path)
                            .ok()
                            .and_then(|p| self.storage.read(&p).ok())
                            .unwrap_or_default();
                        for entry in
                            text_files::parse_consolidated_commits(&bytes).unwrap_or_default()
                        {
                            if entry.name.extension() == Some(Extension::Wrt)
                                && !ignored.contains_key(entry.path.as_str())
                            {
                                out.insert(entry.name.stem().to_string());
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }

    pub(super) fn check_fragment_meta(&mut self) {
        for (path, _) in self.files_under(FRAGMENT_META_DIR) {
            if is_tmp(&path) {
                continue; // judged by check_names
            }
            let Some(bytes) = self.read_tile_file(&path) else {
                continue;
            };
            let result = consolidated_fragment_metadata(&bytes, self.key.as_ref(), &self.schemas);
            if let Err(e) = result {
                self.error(&path, &e);
            }
        }
    }
}

/// A delete or update commit that should be one generic tile holding the
/// commit and nothing after it.
pub(super) fn commit(
    bytes: &[u8],
    kind: ConditionKind,
    key: Option<&[u8; 32]>,
) -> crate::Result<()> {
    let tile = read_generic_tile_exact(bytes, key)?;
    let (_, used) = parse_commit(&tile, kind)?;
    let len = tile.payload.len() as u64;
    if used != len {
        return Err(tile.locate(Error::corrupt(
            used,
            "commit",
            Cause::TrailingBytes { count: len - used },
        )));
    }
    Ok(())
}

/// A consolidated fragment metadata file: one generic tile whose every
/// footer parses, exactly, against the schema it names.
pub(super) fn consolidated_fragment_metadata(
    bytes: &[u8],
    key: Option<&[u8; 32]>,
    schemas: &BTreeMap<String, ArraySchema>,
) -> crate::Result<()> {
    let tile = read_generic_tile_exact(bytes, key)?;
    for (i, (_, region)) in crate::fragment::consolidated_footer_regions(&tile)?
        .iter()
        .enumerate()
    {
        let field = format!("ConsolidatedFragmentMetadata.entries[{i}]");
        let in_entry = |e: Error| tile.locate(e.within(&field));
        let (head, _) = crate::format::io::read_prefix::<g::FragmentFooterHead>(
            region,
            (),
            "FragmentFooterHead",
        )
        .map_err(in_entry)?;
        let name = String::from_utf8_lossy(head.schema_name.as_deref().unwrap_or_default());
        let schema = schemas.get(name.as_ref()).ok_or_else(|| {
            in_entry(Error::corrupt(
                0,
                "FragmentFooter.schema_name",
                Cause::BadName {
                    name: name.into_owned(),
                    expected: "the name of a schema in the array",
                },
            ))
        })?;
        let (_, used) = parse_footer(region, schema).map_err(in_entry)?;
        if used != region.len() as u64 {
            return Err(in_entry(Error::corrupt(
                used,
                "FragmentFooter",
                Cause::TrailingBytes {
                    count: region.len() as u64 - used,
                },
            )));
        }
    }
    Ok(())
}
