use super::*;
use crate::format::generated::{DATA_FILE_SUFFIX, VALIDITY_FILE_SUFFIX, VAR_FILE_SUFFIX};

/// What the passes over one field's files share.
pub(super) struct FieldPass<'f> {
    dir: &'f str,
    meta: &'f str,
    fm: &'f FragmentMetadataFile,
    field: &'f Field,
    version: u32,
    cells_of: &'f dyn Fn(u64) -> u64,
    /// How many tiles the fragment has.
    tiles: usize,
    /// A var field whose pipeline stores no offsets (the string filters).
    skips: bool,
    pipeline: FilterPipeline,
    data_ctx: FilterContext,
    /// Of a fixed field.
    cell_size: Option<u64>,
    var: bool,
    /// The recorded tile metadata to compare, where it can be.
    check: Option<TileMetaCheck>,
    /// Each tile's validity (nullable fields).
    validity: Vec<Option<Vec<bool>>>,
    /// Where each validity tile starts: a wrong null count names it.
    validity_at: Vec<(String, u64)>,
}

impl Checker<'_> {
    /// One field's data files against the fragment's metadata: every tile
    /// within its file and unfiltered (validity, then the fixed file, then
    /// the var file), and its recorded tile metadata recomputed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn check_field(
        &mut self,
        dir: &str,
        meta: &str,
        schema: &g::ArraySchema,
        fm: &FragmentMetadataFile,
        field: &Field,
        version: u32,
        validity_filters: &g::FilterPipeline,
        cells_of: &dyn Fn(u64) -> u64,
    ) {
        let footer = &fm.footer;
        let var = field.cell_val_num == u32::MAX;
        let Some(offsets) = fm.tile_offsets.get(field.index) else {
            return;
        };
        if !field.has_tiles {
            return;
        }
        let datatype = field.datatype;
        let pipeline = match self.data_pipeline(&field.filters, "filters") {
            Ok(p) => p,
            Err(e) => {
                self.error(meta, &e);
                return;
            }
        };
        let type_size = field.datatype.size();
        let (data_ctx, cell_size) = if var {
            (FilterContext::new(datatype, type_size, version), None)
        } else {
            let cell = type_size.saturating_mul(field.cell_val_num as u64);
            (FilterContext::new(datatype, cell, version), Some(cell))
        };
        let data_ctx = self.keyed(data_ctx);
        // Tile metadata is recomputed from the cells where the fragment
        // records it (format 11 on): every cell of a sparse tile, the
        // written cells of a dense one (not the padding around them).
        let kinds = tile_meta::kinds(datatype, field.is_dim, var, field.cell_val_num);
        let dense_written = if footer.dense {
            DenseWritten::of(schema, footer)
        } else {
            None
        };
        let check = (g::tile_metadata_stored(version) && footer.dense == dense_written.is_some())
            .then(|| TileMetaCheck {
                meta: meta.to_string(),
                field: field.index,
                datatype,
                kinds,
                var,
                nullable: field.nullable,
                cell_size: cell_size.unwrap_or(0),
                dense: dense_written,
                lossy: lossy::lossy_of(&pipeline, datatype),
                values_skipped: std::cell::Cell::new(0),
            });
        if let Some(check) = &check {
            self.lossy_note(check, &field.file);
        }
        let mut pass = FieldPass {
            dir,
            meta,
            fm,
            field,
            version,
            cells_of,
            tiles: offsets.len(),
            skips: var && pipeline.skips_offsets(datatype, version),
            pipeline,
            data_ctx,
            cell_size,
            var,
            check,
            validity: vec![None; offsets.len()],
            validity_at: Vec::new(),
        };
        // Validity first: the tile metadata of the other parts needs it.
        if field.nullable && !self.validity_pass(&mut pass, validity_filters) {
            return;
        }
        let Some(starts) = self.fixed_pass(&pass, &schema.offsets_filters) else {
            return;
        };
        if var {
            self.var_pass(&pass, starts);
        }
        if let Some(check) = &pass.check {
            self.lossy_skipped_note(check, &field.file);
        }
    }

    /// The validity file of a nullable field: each tile's validity kept
    /// for the tile metadata. `false` when the field's other files cannot
    /// be judged (reported).
    fn validity_pass(&mut self, pass: &mut FieldPass<'_>, filters: &g::FilterPipeline) -> bool {
        let (fm, meta, i) = (pass.fm, pass.meta, pass.field.index);
        let validity_file = format!("{}/{}{VALIDITY_FILE_SUFFIX}", pass.dir, pass.field.file);
        let size = fm
            .footer
            .file_validity_sizes
            .as_ref()
            .and_then(|s| s.get(i).copied())
            .unwrap_or(0);
        let validity_offsets = fm.tile_validity_offsets.get(i).cloned().unwrap_or_default();
        if validity_offsets.len() != pass.tiles {
            self.find(
                meta,
                0,
                format!("tile_validity_offsets[{i}]"),
                Cause::Inconsistent {
                    what: "the number of validity tile offsets",
                    expected: pass.tiles as u64,
                    found: validity_offsets.len() as u64,
                },
            );
            return false;
        }
        let pipeline = match self.data_pipeline(filters, "validity_filters") {
            Ok(p) => p,
            Err(e) => {
                self.error(meta, &e);
                return false;
            }
        };
        let ctx = self.keyed(FilterContext::new(filter::Datatype::Uint8, 1, pass.version));
        let size_field = format!("file_validity_sizes[{i}]");
        let ranges = self.tile_ranges(meta, &validity_file, &validity_offsets, size, &size_field);
        if let Some(ranges) = ranges.filter(|_| self.count_data_file(size)) {
            let mut tile = Vec::new();
            pass.validity_at = ranges
                .iter()
                .map(|r| (validity_file.clone(), r.0))
                .collect();
            for (t, range) in ranges.iter().enumerate() {
                if !self.read_tile(&validity_file, t, *range, &mut tile) {
                    continue;
                }
                let cells = Some((pass.cells_of)(t as u64));
                let result = decode(&tile, &pipeline, &ctx, cells, self.max_tile_size);
                if let (Ok(v), Some(slot)) = (&result, pass.validity.get_mut(t)) {
                    *slot = Some(v.iter().map(|&b| b != 0).collect());
                }
                self.tile_result(&validity_file, range.0, t, result.map(drop));
            }
        }
        if pass.validity.iter().any(Option::is_none) {
            // A validity tile is missing or broken (already reported):
            // the nulls of the metadata cannot be recounted.
            pass.check = None;
        }
        true
    }

    /// The fixed file: data (fixed fields) or offsets (var fields). Returns
    /// each tile's cell start offsets for the var pass (none for fixed
    /// fields); `None` when the field's var file cannot be judged.
    fn fixed_pass(
        &mut self,
        pass: &FieldPass<'_>,
        offsets_filters: &g::FilterPipeline,
    ) -> Option<Vec<Option<Vec<u64>>>> {
        let (fm, meta, i) = (pass.fm, pass.meta, pass.field.index);
        let fixed_file = format!("{}/{}{DATA_FILE_SUFFIX}", pass.dir, pass.field.file);
        let fixed_size = fm.footer.file_sizes.get(i).copied().unwrap_or(0);
        let offsets = &fm.tile_offsets[i];
        let size_field = format!("file_sizes[{i}]");
        let fixed_tiles = self.tile_ranges(meta, &fixed_file, offsets, fixed_size, &size_field)?;
        let offsets_pipeline = if pass.var {
            match self.data_pipeline(offsets_filters, "offsets_filters") {
                Ok(p) => p,
                Err(e) => {
                    self.error(meta, &e);
                    return None;
                }
            }
        } else {
            FilterPipeline::default()
        };
        let offsets_ctx = self.keyed(FilterContext::new(
            filter::Datatype::Uint64,
            8,
            pass.version,
        ));
        let limit = self.max_tile_size;
        // Var fields: each tile's cell start offsets, for the var pass.
        let mut starts_of_tile: Vec<Option<Vec<u64>>> = vec![None; pass.tiles];
        if !self.count_data_file(fixed_size) {
            return Some(starts_of_tile);
        }
        let mut tile = Vec::new();
        for (t, range) in fixed_tiles.iter().enumerate() {
            let cells = (pass.cells_of)(t as u64);
            if !self.read_tile(&fixed_file, t, *range, &mut tile) {
                continue;
            }
            let result = match (pass.var, pass.skips) {
                (true, true) => Ok(Vec::new()),
                (true, false) => decode(
                    &tile,
                    &offsets_pipeline,
                    &offsets_ctx,
                    Some(cells.saturating_mul(8)),
                    limit,
                ),
                (false, _) => decode(
                    &tile,
                    &pass.pipeline,
                    &pass.data_ctx,
                    pass.cell_size.map(|c| c.saturating_mul(cells)),
                    limit,
                ),
            };
            match (&result, pass.var, &pass.check, pass.cell_size) {
                (Ok(data), true, _, _) if !pass.skips => {
                    starts_of_tile[t] = Some(
                        data.chunks_exact(8)
                            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                            .collect(),
                    );
                }
                (Ok(data), false, Some(check), Some(size)) => {
                    let cells: Vec<&[u8]> = data.chunks(size.max(1) as usize).collect();
                    let finding = check.compare(fm, t, &cells, pass.validity[t].as_deref());
                    let at = (fixed_file.as_str(), range.0);
                    self.tile_meta_finding(finding, at, pass.validity_at.get(t));
                }
                _ => {}
            }
            self.tile_result(&fixed_file, range.0, t, result.map(drop));
        }
        Some(starts_of_tile)
    }

    /// The var file of a var-sized field, its tiles cut into cells at the
    /// start offsets the fixed pass decoded (or, where the pipeline skips
    /// offsets, the ones the string filters give).
    fn var_pass(&mut self, pass: &FieldPass<'_>, mut starts_of_tile: Vec<Option<Vec<u64>>>) {
        let (fm, meta, i) = (pass.fm, pass.meta, pass.field.index);
        let var_file = format!("{}/{}{VAR_FILE_SUFFIX}", pass.dir, pass.field.file);
        let var_size = fm.footer.file_var_sizes.get(i).copied().unwrap_or(0);
        let var_offsets = fm.tile_var_offsets.get(i).cloned().unwrap_or_default();
        let var_sizes = fm.tile_var_sizes.get(i).cloned().unwrap_or_default();
        if var_offsets.len() != pass.tiles || var_sizes.len() != pass.tiles {
            self.find(
                meta,
                fm.footer
                    .tile_var_offsets_offsets
                    .get(i)
                    .copied()
                    .unwrap_or(0),
                format!("tile_var_offsets[{i}]"),
                format!(
                    "{} var offsets and {} var sizes for {} tiles",
                    var_offsets.len(),
                    var_sizes.len(),
                    pass.tiles
                ),
            );
            return;
        }
        let size_field = format!("file_var_sizes[{i}]");
        let ranges = self.tile_ranges(meta, &var_file, &var_offsets, var_size, &size_field);
        let Some(ranges) = ranges.filter(|_| self.count_data_file(var_size)) else {
            return;
        };
        let limit = self.max_tile_size;
        let mut buffer = Vec::new();
        for (t, range) in ranges.iter().enumerate() {
            if !self.read_tile(&var_file, t, *range, &mut buffer) {
                continue;
            }
            let expected = var_sizes.get(t).copied();
            let result = if pass.skips {
                let cells = (pass.cells_of)(t as u64);
                let expected = expected.unwrap_or(0);
                decode_strings(
                    &buffer,
                    &pass.pipeline,
                    &pass.data_ctx,
                    expected,
                    cells,
                    limit,
                )
            } else {
                decode(&buffer, &pass.pipeline, &pass.data_ctx, expected, limit)
                    .map(|data| (data, starts_of_tile[t].take().unwrap_or_default()))
            };
            if let (Ok((data, starts)), Some(check)) = (&result, &pass.check) {
                let cells = var_cells(data, starts);
                let finding = check.compare(fm, t, &cells, pass.validity[t].as_deref());
                let at = (var_file.as_str(), range.0);
                self.tile_meta_finding(finding, at, pass.validity_at.get(t));
            }
            self.tile_result(&var_file, range.0, t, result.map(drop));
        }
    }

    /// A data tile pipeline: the schema's, plus the AES-256-GCM filter that
    /// TileDB appends to every pipeline of an encrypted array.
    pub(super) fn data_pipeline(
        &self,
        stored: &g::FilterPipeline,
        field: &str,
    ) -> crate::Result<FilterPipeline> {
        let mut pipeline = FilterPipeline::from_stored(stored).map_err(|e| e.within(field))?;
        if self.key.is_some() {
            pipeline.filters.push(filter::Filter::Aes256Gcm);
        }
        Ok(pipeline)
    }

    pub(super) fn keyed(&self, ctx: FilterContext) -> FilterContext {
        match self.key {
            Some(key) => ctx.with_key(key),
            None => ctx,
        }
    }

    pub(super) fn tile_result(
        &mut self,
        file: &str,
        offset: u64,
        t: usize,
        result: crate::Result<()>,
    ) {
        self.report.tiles_checked += 1;
        if let Err(e) = result {
            let e = e.within(format!("tile {t}")).at_base(offset);
            self.error(file, &e);
        }
    }

    /// Whether a data file the footer says has `size` bytes has tiles to
    /// read (nothing when 0), counting it as checked. Its tiles are read one
    /// by one ([`Self::read_tile`]); [`Self::tile_ranges`] has compared its
    /// size with the footer's.
    pub(super) fn count_data_file(&mut self, size: u64) -> bool {
        if size == 0 {
            return false;
        }
        self.report.files_checked += 1;
        true
    }

    /// The byte range of every tile of a data file: offsets ascending, the
    /// last tile ending at the footer's file size, which the file must have.
    pub(super) fn tile_ranges(
        &mut self,
        meta: &str,
        file: &str,
        offsets: &[u64],
        footer_size: u64,
        size_field: &str,
    ) -> Option<Vec<(u64, u64)>> {
        let actual = self.files.get(file).copied();
        match actual {
            None if footer_size > 0 || !offsets.is_empty() => {
                self.find(
                    file,
                    0,
                    "file",
                    format!("missing; the fragment metadata gives it {footer_size} bytes and {} tile(s)", offsets.len()),
                );
                return None;
            }
            None => return Some(Vec::new()),
            Some(actual) if actual != footer_size => {
                self.find(
                    file,
                    actual.min(footer_size),
                    "file size",
                    format!("{actual} bytes, but {meta} {size_field} says {footer_size}"),
                );
                if actual < footer_size {
                    return None;
                }
            }
            Some(_) => {}
        }
        let mut ranges = Vec::with_capacity(offsets.len());
        for (t, &start) in offsets.iter().enumerate() {
            let end = offsets.get(t + 1).copied().unwrap_or(footer_size);
            if start > end || end > footer_size {
                self.find(
                    file,
                    start.min(footer_size),
                    format!("tile {t}"),
                    format!(
                        "tile offsets {start}..{end} are not ascending within the {footer_size} byte file (from {meta})"
                    ),
                );
                return None;
            }
            ranges.push((start, end));
        }
        Some(ranges)
    }
}

pub(super) struct Field {
    /// Index in the footer's field space.
    pub(super) index: usize,
    /// A dimension (its tiles carry no min/max).
    pub(super) is_dim: bool,
    /// File stem: `a<i>`, `d<j>`, `t`, `dt` or `dci`.
    pub(super) file: String,
    pub(super) datatype: g::Datatype,
    pub(super) cell_val_num: u32,
    pub(super) nullable: bool,
    pub(super) filters: g::FilterPipeline,
    /// Whether this fragment stores tiles for the field.
    pub(super) has_tiles: bool,
}

/// Refuses a tile whose framing promises more than `limit` unfiltered
/// bytes, before anything is allocated for it.
pub(super) fn within_limit(tile: &[u8], limit: u64) -> crate::Result<u64> {
    let total: u64 = parse_chunks(tile)?
        .iter()
        .map(|c| c.original_len as u64)
        .sum();
    if total > limit {
        return Err(Error::unsupported(format!(
            "the tile unfilters to {total} bytes, more than this check's limit of {limit}"
        )));
    }
    Ok(total)
}

/// Unfilters one tile; `expected` is its unfiltered size when known (the
/// framing's chunk lengths are used otherwise).
pub(super) fn decode(
    tile: &[u8],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    expected: Option<u64>,
    limit: u64,
) -> crate::Result<Vec<u8>> {
    let total = within_limit(tile, limit)?;
    unfilter_tile(tile, pipeline, ctx, expected.unwrap_or(total))
}

pub(super) fn decode_strings(
    tile: &[u8],
    pipeline: &FilterPipeline,
    ctx: &FilterContext,
    expected: u64,
    cells: u64,
    limit: u64,
) -> crate::Result<(Vec<u8>, Vec<u64>)> {
    within_limit(tile, limit)?;
    unfilter_var_string_tile(tile, pipeline, ctx, expected, cells)
}

/// The cells of a var tile: `data` cut at each start offset (offsets out
/// of order or past the data give empty cells; the framing checks report
/// those).
pub(super) fn var_cells<'a>(data: &'a [u8], starts: &[u64]) -> Vec<&'a [u8]> {
    starts
        .iter()
        .enumerate()
        .map(|(c, &start)| {
            let end = starts.get(c + 1).copied().unwrap_or(data.len() as u64);
            usize::try_from(start)
                .ok()
                .zip(usize::try_from(end).ok())
                .and_then(|(a, b)| data.get(a..b))
                .unwrap_or_default()
        })
        .collect()
}
