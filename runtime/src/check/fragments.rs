use super::*;
use crate::format::generated::{Extension, COMMITS_DIR, FRAGMENTS_DIR, FRAGMENT_METADATA_FILE};

impl Checker<'_> {
    /// Fragment folder names under `__fragments` (from the files in them).
    pub(super) fn fragment_dirs(&self) -> Vec<String> {
        let mut out = BTreeSet::new();
        for (path, _) in self.files_under(FRAGMENTS_DIR) {
            let inside = &path[FRAGMENTS_DIR.len() + 1..];
            if let Some(dir) = inside.split('/').next() {
                if inside.contains('/') {
                    out.insert(dir.to_string());
                }
            }
        }
        out.into_iter().collect()
    }

    pub(super) fn check_fragments(&mut self, directory: Option<&ArrayDirectory>) {
        let committed = self.committed();
        let ignored = self.ignored_commits();
        for fragment in self.fragment_dirs() {
            let dir = format!("{FRAGMENTS_DIR}/{fragment}");
            let Ok(name) = TimestampedName::parse(&fragment) else {
                continue; // reported by check_names
            };
            if !committed.contains(name.stem()) {
                // Not corruption: a write that stopped before its commit
                // marker leaves exactly this, and so does a vacuum stopped
                // after removing the commit (its marker, or its `.con`
                // line through an `.ign` file) and before or while
                // removing the folder (some files may be gone); readers
                // skip it.
                let why = match ignored.get(&format!(
                    "{COMMITS_DIR}/{fragment}{}",
                    Extension::Wrt.suffix()
                )) {
                    Some(ign) => format!(
                        "a .con line commits it but {ign} tells readers to ignore that line: \
                         a vacuum is removing it, or stopped while doing so"
                    ),
                    None => format!("no __commits/{fragment}.wrt and no .con line commits it"),
                };
                self.uncommitted_note(&dir, &why);
                continue;
            }
            self.check_one_fragment(&dir, &name);
        }
        if let Some(directory) = directory {
            self.check_legacy_fragments(directory);
        }
    }

    /// A fragment without a commit marker: not corruption (a write that
    /// stopped before committing leaves exactly this, and readers skip it).
    pub(super) fn uncommitted_note(&mut self, dir: &str, why: &str) {
        self.report.notes.push(Finding {
            class: ErrorClass::Corrupt,
            file: dir.to_string(),
            offset: 0,
            field: "commit".into(),
            message: format!("uncommitted fragment ({why}): readers ignore it"),
            cause: None,
        });
    }

    /// Fragments of the hierarchies before format 12 (fragment folders in
    /// the array's root, committed by a `.ok` file or, before format 5, by
    /// their metadata file), found as the reader finds them.
    pub(super) fn check_legacy_fragments(&mut self, directory: &ArrayDirectory) {
        for fragment in directory.committed_fragments() {
            let dir = fragment.path.as_str().to_string();
            if dir.starts_with(&format!("{FRAGMENTS_DIR}/")) {
                continue; // checked above
            }
            let version = fragment
                .name
                .version()
                .unwrap_or_else(|| fragment.format_version());
            let footer_size_known = self
                .schemas
                .get("")
                .and_then(|schema| crate::fragment::known_footer_size(version, schema))
                .is_some();
            if !g::footer_length_always_stored(version) && !footer_size_known {
                // The check's footer loader needs a trailing footer length
                // (format 10 on) or a footer size spec/ computes from the
                // schema (formats 3-9, fixed dimensions); the full read
                // still decodes every tile of the others.
                self.report.notes.push(Finding {
                    class: ErrorClass::Unsupported,
                    file: dir.clone(),
                    offset: 0,
                    field: FRAGMENT_METADATA_FILE.into(),
                    message: format!(
                        "format {version} fragment: its files are checked by the full read only, not one by one"
                    ),
                    cause: None,
                });
                continue;
            }
            self.check_one_fragment(&dir, &fragment.name);
        }
        for entry in directory.uncommitted() {
            let dir = entry.path.as_str().to_string();
            if dir.starts_with(&format!("{FRAGMENTS_DIR}/")) {
                continue; // noted above
            }
            self.uncommitted_note(&dir, &format!("no {dir}.ok commits it"));
        }
    }

    /// One committed fragment: its metadata file against the schema it
    /// names, then its data files against the metadata.
    pub(super) fn check_one_fragment(&mut self, dir: &str, name: &TimestampedName) {
        let meta = format!("{dir}/{FRAGMENT_METADATA_FILE}");
        if !self.files.contains_key(&meta) {
            self.find(
                dir,
                0,
                FRAGMENT_METADATA_FILE,
                "the fragment has no metadata file",
            );
            return;
        }
        let Some(bytes) = self.read(&meta) else {
            return;
        };
        if let Some(version) = name.version() {
            if version > MAX_SUPPORTED_VERSION {
                self.error(
                    &meta,
                    &Error::unsupported(format!(
                        "fragment format version {version} is newer than {}",
                        MAX_SUPPORTED_VERSION
                    )),
                );
                return;
            }
        }
        // Formats 3-9 have no trailing footer length, and their schema is
        // always __array_schema.tdb (named "" here); the name's version
        // (4 for `__<t1>_<t2>_<uuid>`) places their footer, as the loader does.
        let named_version = name.format_version();
        let schema_name = if g::footer_after_tiles(named_version)
            && !g::footer_length_always_stored(named_version)
        {
            String::new()
        } else {
            let head = match crate::fragment::footer_region(&bytes) {
                Ok((head, _)) => head,
                Err(e) => {
                    self.error(&meta, &e);
                    return;
                }
            };
            head.schema_name
                .as_deref()
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .unwrap_or_default()
        };
        let Some(schema) = self.schemas.get(&schema_name).cloned() else {
            if self.broken_schemas.contains(&schema_name) {
                return; // the schema's own finding says why
            }
            self.find(
                &meta,
                0,
                "FragmentFooter.schema_name",
                format!("names schema {schema_name:?}, which is missing or unreadable"),
            );
            return;
        };
        match crate::fragment::parse_metadata_file(
            &bytes,
            &schema,
            self.key.as_ref(),
            named_version,
        ) {
            Ok(metadata) if g::footer_length_always_stored(metadata.footer.version) => {
                self.check_fragment_data(dir, &meta, &schema.stored, &metadata);
            }
            Ok(metadata) => {
                // Formats 3-9 name, slot and count their data files
                // differently (`__coords`, field names, empty slots);
                // the file-by-file data check knows format 10 on only.
                self.report.notes.push(Finding {
                    class: ErrorClass::Unsupported,
                    file: dir.to_string(),
                    offset: 0,
                    field: FRAGMENT_METADATA_FILE.into(),
                    message: format!(
                        "format {} fragment: its metadata is verified, its data files by the full read only",
                        metadata.footer.version
                    ),
                    cause: None,
                });
            }
            Err(e) => self.error(&meta, &e),
        }
    }

    pub(super) fn check_fragment_data(
        &mut self,
        dir: &str,
        meta: &str,
        schema: &g::ArraySchema,
        fm: &FragmentMetadataFile,
    ) {
        let footer = &fm.footer;
        let version = footer.version;
        let sparse = schema.array_type == g::ArrayType::Sparse;
        if footer.dense == sparse {
            self.find(
                meta,
                fm.footer_offset,
                "FragmentFooter.dense",
                format!(
                    "the fragment says dense={} but the schema is {}",
                    footer.dense,
                    if sparse { "sparse" } else { "dense" }
                ),
            );
            return;
        }
        // How many tiles, and how many cells each holds.
        let (tile_num, cells_per_tile) = if sparse {
            (footer.sparse_tile_num, schema.capacity)
        } else {
            match dense_tiles(schema, footer) {
                Ok(counts) => counts,
                Err(reason) => {
                    self.find(
                        meta,
                        fm.footer_offset,
                        "FragmentFooter.non_empty_domain",
                        reason,
                    );
                    return;
                }
            }
        };
        self.check_rtree_shape(meta, fm, sparse, tile_num);
        let cells_of = |t: u64| -> u64 {
            if sparse && t + 1 == tile_num && footer.last_tile_cell_num != 0 {
                footer.last_tile_cell_num
            } else {
                cells_per_tile
            }
        };
        let validity_filters = schema
            .validity_filters
            .clone()
            .unwrap_or(g::FilterPipeline {
                max_chunk_size: filter::DEFAULT_MAX_CHUNK_SIZE,
                filters: Vec::new(),
            });
        let fields = stored_fields(schema, footer, sparse);
        // Every slot lists tile_num offsets, even those that store no
        // tiles (`__coords`, and the dimensions of a dense fragment), which
        // TileDB fills with zeros.
        let expect_count = |_index: usize| -> u64 { tile_num };
        for (index, list) in fm.tile_offsets.iter().enumerate() {
            let expected = expect_count(index);
            if list.len() as u64 != expected {
                self.find(
                    meta,
                    footer.tile_offsets_offsets.get(index).copied().unwrap_or(0),
                    format!("tile_offsets[{index}]"),
                    Cause::Inconsistent {
                        what: "the number of tile offsets",
                        expected,
                        found: list.len() as u64,
                    },
                );
            }
        }
        for field in &fields {
            self.check_field(
                dir,
                meta,
                schema,
                fm,
                field,
                version,
                &validity_filters,
                &cells_of,
            );
        }
    }

    /// A sparse fragment's R-tree has one leaf MBR per tile; a dense
    /// fragment's has no levels.
    fn check_rtree_shape(
        &mut self,
        meta: &str,
        fm: &FragmentMetadataFile,
        sparse: bool,
        tile_num: u64,
    ) {
        let footer = &fm.footer;
        if sparse {
            let leaves = fm.rtree.levels.last().map_or(0, |l| l.mbrs.len() as u64);
            if leaves != tile_num {
                self.find(
                    meta,
                    footer.rtree_offset,
                    "RTree.levels[last].mbrs",
                    Cause::Inconsistent {
                        what: "the number of leaf MBRs (sparse_tile_num)",
                        expected: tile_num,
                        found: leaves,
                    },
                );
            }
        } else if !fm.rtree.levels.is_empty() {
            self.find(
                meta,
                footer.rtree_offset,
                "RTree.levels",
                "a dense fragment's R-tree has levels",
            );
        }
    }
}

/// The fields a fragment stores, in the footer's field space: the
/// attributes, the dimensions (tiles only in a sparse fragment), then the
/// special fields that follow the dimensions: cell timestamps, then delete
/// timestamps and delete condition indexes, all UINT64 under the coordinate
/// filters.
pub(super) fn stored_fields(
    schema: &g::ArraySchema,
    footer: &g::FragmentFooter,
    sparse: bool,
) -> Vec<Field> {
    let attributes = schema.attributes.len();
    let mut fields: Vec<Field> = Vec::new();
    for (i, a) in schema.attributes.iter().enumerate() {
        fields.push(Field {
            index: i,
            is_dim: false,
            file: format!("a{i}"),
            datatype: a.datatype,
            cell_val_num: a.cell_val_num,
            nullable: a.nullable,
            filters: a.filters.clone(),
            has_tiles: true,
        });
    }
    for (j, d) in schema.domain.dimensions.iter().enumerate() {
        let filters = match &d.filters {
            Some(f) if !f.filters.is_empty() => f.clone(),
            _ => schema.coords_filters.clone(),
        };
        fields.push(Field {
            index: attributes + 1 + j,
            is_dim: true,
            file: format!("d{j}"),
            datatype: d.datatype,
            cell_val_num: d.cell_val_num,
            nullable: false,
            filters,
            has_tiles: sparse,
        });
    }
    let first_special = attributes + 1 + schema.domain.dimensions.len();
    let mut specials = Vec::new();
    if footer.has_timestamps {
        specials.push("t");
    }
    if footer.has_delete_meta {
        specials.extend(["dt", "dci"]);
    }
    for (index, name) in (first_special..).zip(specials) {
        fields.push(Field {
            index,
            is_dim: false,
            file: name.to_string(),
            datatype: g::Datatype::Uint64,
            cell_val_num: 1,
            nullable: false,
            filters: schema.coords_filters.clone(),
            has_tiles: true,
        });
    }
    fields
}

/// A dense fragment's dimensions (domain and tile extent) and non-empty
/// domain, checked against each other.
pub(super) fn dense_shape(
    schema: &g::ArraySchema,
    footer: &g::FragmentFooter,
) -> Result<(Vec<DenseDimension>, Vec<Span>), String> {
    let mut dims = Vec::new();
    let mut non_empty = Vec::new();
    for (j, d) in schema.domain.dimensions.iter().enumerate() {
        let size = d.datatype.size() as usize;
        let value = |bytes: &[u8], k: usize| {
            bytes
                .get(k * size..(k + 1) * size)
                .and_then(|b| int_value(b, d.datatype))
        };
        let (Some(lo), Some(hi)) = (value(&d.domain, 0), value(&d.domain, 1)) else {
            return Err(format!("dimension {j} has no integer domain"));
        };
        let Some(extent) = d.extent.as_deref().and_then(|e| value(e, 0)) else {
            return Err(format!("dimension {j} of a dense array has no tile extent"));
        };
        if extent <= 0 {
            return Err(format!("dimension {j} has tile extent {extent}"));
        }
        let range = footer
            .non_empty_domain
            .ranges
            .get(j)
            .ok_or_else(|| format!("no range for dimension {j}"))?;
        let (Some(start), Some(end)) = (value(&range.data, 0), value(&range.data, 1)) else {
            return Err(format!("dimension {j}'s range is not two integers"));
        };
        if start > end || start < lo || end > hi {
            return Err(format!(
                "dimension {j}'s range [{start}, {end}] is not within the domain [{lo}, {hi}]"
            ));
        }
        dims.push(DenseDimension {
            low: lo,
            high: hi,
            extent,
        });
        non_empty.push((start, end));
    }
    Ok((dims, non_empty))
}

/// The tile count of a dense fragment (its non-empty domain expanded to
/// tile boundaries) and the cells per tile.
pub(super) fn dense_tiles(
    schema: &g::ArraySchema,
    footer: &g::FragmentFooter,
) -> Result<(u64, u64), String> {
    let (dims, non_empty) = dense_shape(schema, footer)?;
    let mut tiles: u64 = 1;
    let mut cells: u64 = 1;
    for (d, (start, end)) in dims.iter().zip(non_empty) {
        let count = u64::try_from(d.tile_index(end) - d.tile_index(start) + 1)
            .map_err(|_| "tile count overflows")?;
        tiles = tiles
            .checked_mul(count)
            .ok_or_else(|| "tile count overflows".to_string())?;
        cells = cells
            .checked_mul(u64::try_from(d.extent).map_err(|_| "extent overflows")?)
            .ok_or_else(|| "cells per tile overflow".to_string())?;
    }
    Ok((tiles, cells))
}
