use super::*;

impl Checker<'_> {
    pub(super) fn run_group(&mut self, options: &CheckOptions) {
        // The group's own files; other folders in the root are members.
        let root_entries = self.list("");
        for entry in &root_entries {
            // Writes leave their temporaries in the group's folder, where TileDB ignores
            // unknown files (`storage::LocalStorage::write`).
            if entry.is_file() && is_tmp(&entry.name) {
                self.leftover_tmp_note(entry.name.clone());
                continue;
            }
            let known = match entry.name.as_str() {
                GROUP_FILE => entry.is_file(),
                GROUP_DETAILS_DIR | crate::directory::METADATA_DIR => entry.is_dir(),
                _ => entry.is_dir(),
            };
            if !known {
                self.find(&entry.name, 0, "file name", "not a file of a group");
            }
        }
        self.walk(GROUP_DETAILS_DIR);
        self.walk(crate::directory::METADATA_DIR);
        for (path, _) in self.files_under(GROUP_DETAILS_DIR) {
            let name = path.rsplit('/').next().unwrap_or_default();
            if is_tmp(name) {
                // TileDB 2.30 lists `__group/` whole (spec/directory.toml).
                if let Some(folder) =
                    crate::format::generated::listed_whole_folder(GROUP_DETAILS_DIR, true)
                {
                    self.find(
                        &path,
                        0,
                        "file name",
                        names::leftover_in_listed_folder(folder),
                    );
                    continue;
                }
            }
            let vacuum = match TimestampedName::parse(name) {
                Ok(n) if n.extension() == Some(Extension::Vac) => true,
                Ok(n) if n.extension().is_none() => false,
                Ok(_) => {
                    self.find(&path, 0, "file name", "not a group details file");
                    continue;
                }
                Err(e) => {
                    self.find(&path, 0, "file name", e.to_string());
                    continue;
                }
            };
            let bytes = if vacuum {
                self.read(&path)
            } else {
                self.read_tile_file(&path)
            };
            let Some(bytes) = bytes else {
                continue;
            };
            let result = if vacuum {
                text_files::parse_vacuum_file(&bytes, &[GROUP_DETAILS_DIR]).map(drop)
            } else {
                group_details(&bytes, self.key.as_ref())
            };
            if let Err(e) = result {
                self.error(&path, &e);
            }
        }
        self.check_metadata();
        if !self.report.findings.is_empty() {
            return;
        }
        // The contents as a reader loads them, then every member inside.
        let contents =
            match GroupContents::load(self.storage.as_ref(), 0, u64::MAX, self.key.as_ref()) {
                Ok(contents) => contents,
                Err(e) => {
                    let file = match &e {
                        Error::Corrupt { at, .. } => self.relative(&at.file),
                        _ => ".".to_string(),
                    };
                    self.error(&file, &e);
                    return;
                }
            };
        for member in &contents.members {
            self.check_member(member, options);
        }
    }

    /// One member of a group, checked through the group's own storage and
    /// its findings reported under its path; a member outside the group is
    /// a note, not checked.
    fn check_member(
        &mut self,
        member: &crate::metadata::group_contents::GroupMember,
        options: &CheckOptions,
    ) {
        let inside = match resolve_member(&member.uri, member.relative) {
            Ok(MemberLocation::Inside(path)) => path,
            Ok(MemberLocation::External(uri)) => {
                self.report.notes.push(Finding {
                    class: ErrorClass::Usage,
                    file: ".".into(),
                    offset: 0,
                    field: format!("member {:?}", member.name),
                    message: format!("not checked: {uri} is outside the group"),
                    cause: None,
                });
                return;
            }
            Err(e) => {
                self.error(".", &e);
                return;
            }
        };
        match self.storage.kind(&inside) {
            Ok(Some(EntryKind::Dir)) => {}
            Ok(_) => {
                self.find(
                    ".",
                    0,
                    format!("member {:?}", member.name),
                    format!("{inside} is not a folder in the group"),
                );
                return;
            }
            Err(e) => {
                self.error(inside.as_str(), &e);
                return;
            }
        }
        if self.depth + 1 >= MAX_GROUP_DEPTH {
            self.find(
                inside.as_str(),
                0,
                format!("member {:?}", member.name),
                format!("groups nest deeper than {MAX_GROUP_DEPTH}"),
            );
            return;
        }
        // The member through the group's own storage: a local folder
        // or a prefix of the same object store alike.
        let sub: Arc<dyn Storage> =
            Arc::new(SubStorage::new(Arc::clone(self.storage), inside.clone()));
        let report = check_at_depth(&sub, options, self.depth + 1);
        let within = |mut f: Finding| {
            f.file = if f.file == "." {
                inside.as_str().to_string()
            } else {
                format!("{inside}/{}", f.file)
            };
            f
        };
        self.report
            .findings
            .extend(report.findings.into_iter().map(within));
        self.report
            .notes
            .extend(report.notes.into_iter().map(within));
        self.report.files_checked += report.files_checked;
        self.report.tiles_checked += report.tiles_checked;
        self.report.tile_metadata_checked += report.tile_metadata_checked;
        self.report.cells_read += report.cells_read;
    }
}

/// A group details file: one generic tile, every member's URI UTF-8 and,
/// when relative, inside the group.
pub(super) fn group_details(bytes: &[u8], key: Option<&[u8; 32]>) -> crate::Result<()> {
    let tile = read_generic_tile_exact(bytes, key)?;
    let details = parse_group_details(&tile)?;
    for (i, member) in details.members.iter().enumerate() {
        let field = format!("GroupDetails.members[{i}]");
        let uri = std::str::from_utf8(&member.uri)
            .map_err(|_| tile.locate(Error::corrupt(0, format!("{field}.uri"), Cause::NotUtf8)))?;
        resolve_member(uri, member.relative).map_err(|e| tile.locate(e.within(&field)))?;
    }
    Ok(())
}
