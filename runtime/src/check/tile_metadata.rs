use super::*;

impl Checker<'_> {
    /// Says how the tile metadata of a lossy field is compared (see
    /// [`lossy`]): within the quantization step, or not at all.
    pub(super) fn lossy_note(&mut self, check: &TileMetaCheck, stem: &str) {
        let i = check.field;
        let message = match check.lossy {
            None => return,
            Some(lossy::Lossy::Scale { scale, .. }) => format!(
                "{stem} is filtered by SCALE_FLOAT, whose tiles TileDB stores rounded to steps of {scale} \
                 after it computed their min, max and sum from the unrounded cells: those are \
                 compared within half a step per cell, not exactly"
            ),
            Some(lossy::Lossy::Unchecked(why)) => format!(
                "{stem} is filtered by {why}, whose tiles TileDB stores altered after it computed \
                 their min, max and sum from the original cells: those are not compared \
                 (null counts are)"
            ),
        };
        self.report.notes.push(Finding {
            class: ErrorClass::Unsupported,
            file: check.meta.clone(),
            offset: 0,
            field: format!("tile_mins/tile_maxes/tile_sums[{i}]"),
            message,
            cause: None,
        });
    }

    pub(super) fn lossy_skipped_note(&mut self, check: &TileMetaCheck, stem: &str) {
        let skipped = check.values_skipped.get();
        if skipped == 0 {
            return;
        }
        let Some(lossy::Lossy::Scale { byte_width, .. }) = check.lossy else {
            return;
        };
        self.report.notes.push(Finding {
            class: ErrorClass::Unsupported,
            file: check.meta.clone(),
            offset: 0,
            field: format!("tile_mins/tile_maxes/tile_sums[{}]", check.field),
            message: format!(
                "{skipped} tile(s) of {stem} record a min or max that does not fit SCALE_FLOAT's \
                 {byte_width}-byte integers: TileDB stored those cells out of range, so the \
                 tiles' min, max and sum are not compared"
            ),
            cause: None,
        });
    }

    /// A tile whose cells disagree with the min, max, sum or null count the
    /// fragment metadata records for it names the data tile, at its offset
    /// (`(file, offset)`; a null count, the validity tile): the metadata's
    /// tiles are GZIP-compressed generic tiles whose Adler-32 catches a
    /// changed byte, a data tile often has nothing that would, so the cells
    /// are what changed. The message says where the record is.
    pub(super) fn tile_meta_finding(
        &mut self,
        finding: Option<(String, u64, String, String)>,
        (file, offset): (&str, u64),
        validity: Option<&(String, u64)>,
    ) {
        self.report.tile_metadata_checked += 1;
        if let Some((meta, at, field, reason)) = finding {
            let (file, offset) = match validity {
                Some((v, o)) if field.starts_with("tile_null_counts") => (v.as_str(), *o),
                _ => (file, offset),
            };
            let message = format!("{reason} ({meta} records it in the tile at byte {at})");
            self.find(file, offset, field, message);
        }
    }
}

/// How a dense writer's slabs change a tile's recorded metadata
/// ([`TileMetaCheck::dense_candidates`]); the default leaves it as computed.
#[derive(Default, Clone, Copy)]
pub(super) struct Dense {
    /// The null count to expect instead of the written cells' nulls.
    pub(super) nulls: Option<u64>,
    /// The sum is taken this many cells at a time.
    pub(super) sum_slab: Option<usize>,
}

/// Recomputes one field's tile metadata (min, max, sum, null count) from
/// its cells, as TileDB's writer computes it (`write::tile_meta`), and
/// compares it with what the fragment metadata records.
pub(super) struct TileMetaCheck {
    pub(super) meta: String,
    pub(super) field: usize,
    pub(super) datatype: filter::Datatype,
    pub(super) kinds: tile_meta::MetaKinds,
    pub(super) var: bool,
    pub(super) nullable: bool,
    pub(super) cell_size: u64,
    /// Of a dense fragment: which cells were written.
    pub(super) dense: Option<DenseWritten>,
    /// A lossy filter in the field's pipeline: its min, max and sum are
    /// those of the cells before filtering ([`lossy`]).
    pub(super) lossy: Option<lossy::Lossy>,
    /// Tiles whose min, max and sum were not compared (out of the lossy
    /// filter's range).
    pub(super) values_skipped: std::cell::Cell<u64>,
}

impl TileMetaCheck {
    /// The first disagreement for tile `t`: (file, offset, field, reason).
    pub(super) fn compare(
        &self,
        fm: &FragmentMetadataFile,
        t: usize,
        cells: &[&[u8]],
        validity: Option<&[bool]>,
    ) -> Option<(String, u64, String, String)> {
        if self.lossy.is_some() && !self.values_comparable(fm, t) {
            self.values_skipped.set(self.values_skipped.get() + 1);
        }
        // The tile's cell count as the fragment metadata knows it: every
        // cell of a dense tile, written or not.
        let tile_cells = Some(cells.len() as u64);
        let Some(dense) = &self.dense else {
            let finding = self.compare_cells(fm, t, cells, validity, tile_cells, Dense::default());
            // A tile whose cells are all null normally records zeros for its
            // min and max (`TileMeta::into_recorded`), but TileDB 2.30's
            // global-order writer (consolidation) was seen to leave the
            // generator's values on the last tile of a fragment: its check
            // looks up the cell count by the tile's index within the write
            // batch, which for the last tile need not be that tile's count.
            let last = fm
                .tile_offsets
                .get(self.field)
                .is_some_and(|o| t + 1 == o.len());
            if finding.is_some()
                && last
                && self
                    .compare_cells(fm, t, cells, validity, None, Dense::default())
                    .is_none()
            {
                return None;
            }
            return finding;
        };
        // A dense tile's metadata covers its written cells.
        let mut first = None;
        for cover in &dense.covers {
            let mask = dense.tiling.written_cells(t as u64, cells.len(), cover);
            let keep = |i: &usize| mask.get(*i).copied().unwrap_or(false);
            let written: Vec<&[u8]> = (0..cells.len()).filter(keep).map(|i| cells[i]).collect();
            let written_validity: Option<Vec<bool>> =
                validity.map(|v| (0..v.len()).filter(keep).map(|i| v[i]).collect());
            let slab = dense.tiling.slab_cells(t as u64, cover);
            for (nulls, sum_slab) in self.dense_candidates(validity, &mask, slab) {
                // A write whose layout is not the cell order hands the cells
                // over one at a time in its own (row-major) order, which
                // decides where a sum saturates: that order is built only
                // for the one candidate that needs it, the last.
                let reordered;
                let (cells_in_order, validity_in_order) = if sum_slab == Some(1) {
                    let order: Vec<usize> = dense
                        .tiling
                        .row_major_order(cells.len())
                        .into_iter()
                        .filter(keep)
                        .collect();
                    reordered = (
                        order.iter().map(|&i| cells[i]).collect::<Vec<&[u8]>>(),
                        validity.map(|v| {
                            order
                                .iter()
                                .map(|&i| v.get(i).copied().unwrap_or(true))
                                .collect::<Vec<bool>>()
                        }),
                    );
                    (&reordered.0, reordered.1.as_deref())
                } else {
                    (&written, written_validity.as_deref())
                };
                match self.compare_cells(
                    fm,
                    t,
                    cells_in_order,
                    validity_in_order,
                    tile_cells,
                    Dense { nulls, sum_slab },
                ) {
                    None => return None,
                    Some(finding) => {
                        first.get_or_insert(finding);
                    }
                }
            }
        }
        first
    }

    /// What TileDB 2.30's dense writer may record for a tile, as
    /// candidates: its metadata generator is handed the written cells a
    /// slab at a time. A slab holds `slab` cells
    /// ([`FragmentTiling::slab_cells`]) when the write's layout is the cell
    /// order, one cell otherwise, and a run of consecutive cells when the
    /// consolidator wrote the tile; none of that is recorded, so each is a
    /// candidate. Per slab, a nullable fixed-size field without min/max
    /// (several values per cell, say) counts the nulls of the whole tile,
    /// padding included, and a sum that saturates stops only its slab.
    pub(super) fn dense_candidates(
        &self,
        validity: Option<&[bool]>,
        written: &[bool],
        slab: Option<u64>,
    ) -> Vec<(Option<u64>, Option<usize>)> {
        let cells = written.iter().filter(|w| **w).count() as u64;
        let mut runs = Vec::new();
        let mut previous = false;
        for &w in written {
            match (w, previous) {
                (true, false) => runs.push(1usize),
                (true, true) => *runs.last_mut().unwrap_or(&mut 0) += 1,
                _ => {}
            }
            previous = w;
        }
        let slab = slab.filter(|s| *s > 0).unwrap_or(cells.max(1));
        let counted = validity.filter(|_| self.nullable && !self.var && !self.kinds.min_max);
        let nulls = counted.map(|v| v.iter().filter(|v| !**v).count() as u64);
        let run_len = (runs.len() == 1).then(|| runs[0]);
        vec![
            (nulls.map(|n| n * cells.div_ceil(slab)), Some(slab as usize)),
            (nulls.map(|n| n * runs.len() as u64), run_len),
            (nulls.map(|n| n * cells), Some(1)),
        ]
    }

    pub(super) fn compare_cells(
        &self,
        fm: &FragmentMetadataFile,
        t: usize,
        cells: &[&[u8]],
        validity: Option<&[bool]>,
        tile_cells: Option<u64>,
        dense: Dense,
    ) -> Option<(String, u64, String, String)> {
        let i = self.field;
        let footer = &fm.footer;
        let computed = if self.var {
            tile_meta::var_tile(self.kinds, cells, validity)
        } else {
            tile_meta::fixed_tile(self.datatype, self.kinds, cells, validity)
        };
        // `None`: the generator's values as they are, without the rule.
        let mut computed = match tile_cells {
            Some(n) => computed.into_recorded(self.nullable, n, self.var),
            None => computed,
        };
        if let Some(n) = dense.nulls {
            computed.null_count = n;
        }
        if let (Some(slab), false) = (dense.sum_slab, self.var) {
            if self.kinds.sum {
                computed.sum = tile_meta::slabbed_sum(self.datatype, cells, validity, slab);
            }
        }
        let at = |offsets: &Option<Vec<u64>>| {
            offsets
                .as_ref()
                .and_then(|o| o.get(i).copied())
                .unwrap_or(fm.footer_offset)
        };
        let finding = |offsets: &Option<Vec<u64>>, what: &str, reason: String| {
            Some((
                self.meta.clone(),
                at(offsets),
                format!("{what}[{i}] tile {t}"),
                reason,
            ))
        };
        // TileDB 2.30's dense writer records var-sized minima, maxima and
        // null counts that do not follow from the tile's cells (seen in its
        // random arrays: the right length holding zeros or another cell's
        // bytes, or nothing at all; null counts off by a cell or two either
        // way), so they are compared for sparse tiles only.
        let unreliable_var = self.var && self.dense.is_some();
        let values_compared = self.values_comparable(fm, t);
        if self.kinds.min_max && !unreliable_var && values_compared {
            for (list, want, what, offsets) in [
                (
                    &fm.tile_mins,
                    &computed.min,
                    "tile_mins",
                    &footer.tile_mins_offsets,
                ),
                (
                    &fm.tile_maxes,
                    &computed.max,
                    "tile_maxes",
                    &footer.tile_maxes_offsets,
                ),
            ] {
                let Some(stored) = list.get(i) else { continue };
                let recorded = if self.var {
                    stored_var_value(stored, t)
                } else {
                    let size = self.cell_size as usize;
                    t.checked_mul(size)
                        .and_then(|a| stored.fixed.get(a..a.checked_add(size)?))
                };
                let want = want.as_deref().unwrap_or_default();
                if !self.same_value(recorded, want) {
                    return finding(
                        offsets,
                        what,
                        format!(
                            "records {} but the tile's cells give {}",
                            recorded.map_or("nothing".to_string(), hex),
                            hex(want)
                        ),
                    );
                }
            }
        }
        if self.kinds.sum && values_compared {
            let recorded = fm.tile_sums.get(i).and_then(|s| s.get(t)).copied();
            let want = u64::from_le_bytes(computed.sum);
            if !self.same_sum(recorded, want, cells, validity) {
                return finding(
                    &footer.tile_sums_offsets,
                    "tile_sums",
                    format!(
                        "records {} but the tile's cells sum to {}",
                        recorded.map_or("nothing".to_string(), |r| hex(&r.to_le_bytes())),
                        hex(&want.to_le_bytes())
                    ),
                );
            }
        }
        if self.nullable && !unreliable_var {
            let recorded = fm.tile_null_counts.get(i).and_then(|s| s.get(t)).copied();
            if recorded != Some(computed.null_count) {
                return finding(
                    &footer.tile_null_counts_offsets,
                    "tile_null_counts",
                    format!(
                        "records {} null(s) but the tile has {}",
                        recorded.map_or("no count".to_string(), |r| r.to_string()),
                        computed.null_count
                    ),
                );
            }
        }
        None
    }
}

impl TileMetaCheck {
    /// Whether tile `t`'s recorded min, max and sum can be compared with
    /// its cells: always, but for a lossy field ([`lossy`]) only when the
    /// recorded min and max show that every cell fitted the filter's
    /// integers.
    pub(super) fn values_comparable(&self, fm: &FragmentMetadataFile, t: usize) -> bool {
        let scale = match self.lossy {
            None => return true,
            Some(lossy::Lossy::Unchecked(_)) => return false,
            Some(scale) => scale,
        };
        let size = self.cell_size as usize;
        let float32 = matches!(self.datatype, filter::Datatype::Float32);
        let recorded = |list: &[g::TileMinMax]| {
            list.get(self.field)
                .and_then(|m| {
                    m.fixed
                        .get(t.checked_mul(size)?..(t + 1).checked_mul(size)?)
                })
                .and_then(|b| lossy::value(b, float32))
        };
        match (recorded(&fm.tile_mins), recorded(&fm.tile_maxes)) {
            (Some(min), Some(max)) => scale.fits(min) && scale.fits(max),
            // No min/max recorded (several values per cell): nothing
            // bounds the cells, so their sums cannot be trusted either.
            _ => false,
        }
    }

    /// A recorded min or max against the computed one: byte for byte, or
    /// within the lossy filter's step.
    pub(super) fn same_value(&self, recorded: Option<&[u8]>, want: &[u8]) -> bool {
        if recorded == Some(want) {
            return true;
        }
        let (Some(scale @ lossy::Lossy::Scale { float32, .. }), Some(recorded)) =
            (self.lossy, recorded)
        else {
            return false;
        };
        match (lossy::value(recorded, float32), lossy::value(want, float32)) {
            (Some(r), Some(c)) => scale.close(r, c),
            _ => false,
        }
    }

    /// A recorded sum against the computed one: exactly, or within the
    /// lossy filter's step per summed cell.
    pub(super) fn same_sum(
        &self,
        recorded: Option<u64>,
        want: u64,
        cells: &[&[u8]],
        validity: Option<&[bool]>,
    ) -> bool {
        if recorded == Some(want) {
            return true;
        }
        let (Some(scale @ lossy::Lossy::Scale { float32, .. }), Some(recorded)) =
            (self.lossy, recorded)
        else {
            return false;
        };
        let mut summed = 0u64;
        let mut magnitude = 0f64;
        for (c, cell) in cells.iter().enumerate() {
            if validity.is_some_and(|v| !v.get(c).copied().unwrap_or(true)) {
                continue;
            }
            summed += 1;
            magnitude += lossy::value(cell, float32).map_or(0.0, f64::abs);
        }
        scale.close_sum(
            f64::from_bits(recorded),
            f64::from_bits(want),
            summed,
            magnitude,
        )
    }
}

/// The value of tile `t` in the var part of a `TileMinMax`.
pub(super) fn stored_var_value(stored: &g::TileMinMax, t: usize) -> Option<&[u8]> {
    let offset = |k: usize| -> Option<usize> {
        let b = stored
            .fixed
            .get(k.checked_mul(8)?..k.checked_mul(8)?.checked_add(8)?)?;
        usize::try_from(u64::from_le_bytes(b.try_into().ok()?)).ok()
    };
    let start = offset(t)?;
    let end = match offset(t + 1) {
        Some(e) => e,
        None => stored.var.len(),
    };
    stored.var.get(start..end)
}

pub(super) fn hex(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "an empty value".to_string();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A dimension value as a signed 128-bit integer (dense dimensions are
/// integers or datetimes).
pub(super) fn int_value(bytes: &[u8], t: g::Datatype) -> Option<i128> {
    let unsigned = t.name().starts_with("UINT");
    Some(match (bytes.len(), unsigned) {
        (1, false) => i8::from_le_bytes(bytes.try_into().ok()?) as i128,
        (1, true) => u8::from_le_bytes(bytes.try_into().ok()?) as i128,
        (2, false) => i16::from_le_bytes(bytes.try_into().ok()?) as i128,
        (2, true) => u16::from_le_bytes(bytes.try_into().ok()?) as i128,
        (4, false) => i32::from_le_bytes(bytes.try_into().ok()?) as i128,
        (4, true) => u32::from_le_bytes(bytes.try_into().ok()?) as i128,
        (8, false) => i64::from_le_bytes(bytes.try_into().ok()?) as i128,
        (8, true) => u64::from_le_bytes(bytes.try_into().ok()?) as i128,
        _ => return None,
    })
}

/// Which cells of a dense fragment's tiles its write covered: tile metadata
/// counts those cells only, never the padding around them. A write covers
/// its non-empty domain; a consolidation rewrites the union of its inputs'
/// domains expanded to whole tiles (within the domain), fill values
/// included, and records the union as the non-empty domain. Nothing in a
/// fragment says which of the two made it (a consolidated fragment's name
/// may carry one timestamp), so metadata matching either is accepted.
pub(super) struct DenseWritten {
    pub(super) tiling: FragmentTiling,
    /// The non-empty domain, and that domain expanded to whole tiles.
    pub(super) covers: [Vec<Span>; 2],
}

impl DenseWritten {
    pub(super) fn of(schema: &g::ArraySchema, footer: &g::FragmentFooter) -> Option<DenseWritten> {
        let (dims, non_empty) = dense_shape(schema, footer).ok()?;
        let order = |layout: g::Layout| match layout {
            g::Layout::ColMajor => Order::ColMajor,
            _ => Order::RowMajor,
        };
        let expanded = dims
            .iter()
            .zip(&non_empty)
            // Not clamped to the domain: a consolidated tile that runs past
            // the domain's end counts its cells there as written (TileDB
            // 2.30 counts their fill values' nulls, for one).
            .map(|(d, span)| d.expand_to_tiles(*span))
            .collect();
        Some(DenseWritten {
            tiling: FragmentTiling::new(
                &dims,
                &non_empty,
                order(schema.tile_order),
                order(schema.cell_order),
            ),
            covers: [non_empty, expanded],
        })
    }
}
