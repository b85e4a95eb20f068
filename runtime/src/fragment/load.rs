//! Loading a fragment's metadata: the footer (from a consolidated `.meta`
//! file, or found from the end of `__fragment_metadata.tdb` by ranged
//! reads), or the whole legacy tile of format 1-2.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::directory::Fragment;
use crate::error::{Cause, Error, Result};
use crate::format::generated as stored;
use crate::format::io::read_exact_from;
use crate::schema::legacy13::MAX_LEGACY_FILE_SIZE;
use crate::schema::{dimension_shapes, ArraySchema};
use crate::storage::{RelPath, Storage};
use crate::tile::generic::read_generic_tile;

use super::parse::{footer_schema_name, legacy_rect, parse_footer, rect_from_stored, SchemaCache};
use super::{FragmentMetadata, StoredFooter, MAX_FRAGMENT_FOOTER_SIZE};
use crate::format::generated::COORDS_FILE;

/// What a fragment's stored metadata (a footer, or the v1-v2 file) says of
/// it outright: the fields every `FragmentMetadata` has from its load on.
struct Head {
    version: u32,
    dense: bool,
    non_empty_domain: Option<super::Rectangle>,
    tile_num: u64,
    last_tile_cell_num: u64,
    has_timestamps: bool,
    has_delete_meta: bool,
}

impl FragmentMetadata {
    /// Loads the metadata of `fragment`: its footer from `consolidated`
    /// when present there, else from its own metadata file (v3+), or the
    /// whole legacy metadata tile (v1–v2).
    pub fn load(
        storage: &dyn Storage,
        fragment: &Fragment,
        schemas: &SchemaCache<'_>,
        consolidated: &HashMap<String, Vec<u8>>,
        key: Option<&[u8; 32]>,
    ) -> Result<FragmentMetadata> {
        let path = fragment.metadata_path()?;
        let describe = storage.describe(&path);
        let folder = fragment.path.file_name().unwrap_or_default().to_string();
        if let Some(bytes) = consolidated.get(&folder) {
            let schema = schemas.get(footer_schema_name(bytes)?.as_deref())?;
            let (footer, _) = parse_footer(bytes, &schema)?;
            return Self::from_footer(fragment, schema, footer, None, key);
        }
        let size = storage.size(&path)?;
        let named_version = fragment.name.version();
        // Formats 1-2 and TileDB 1.3: the whole file is one generic tile,
        // read whole, but only when small (see MAX_LEGACY_FILE_SIZE).
        if named_version.is_none_or(|v| !stored::footer_after_tiles(v))
            && size <= MAX_LEGACY_FILE_SIZE
        {
            let bytes = storage.read(&path)?;
            if let Ok(tile) = read_generic_tile(&bytes, 0, key) {
                if !stored::footer_after_tiles(tile.header.version)
                    && tile.end == bytes.len() as u64
                {
                    let schema = schemas.get(None)?;
                    let legacy = read_exact_from::<stored::FragmentMetadataV1V2>(
                        &tile.payload,
                        stored::FragmentMetadataV1V2BinReadArgs::builder()
                            .num_attributes(schema.attributes.len() as u64)
                            .dims(dimension_shapes(&schema.stored))
                            .finalize(),
                        "FragmentMetadataV1V2",
                    )
                    .map_err(|e| e.in_file(&describe))?;
                    let mut meta = Self::from_legacy(fragment, schema, legacy, key)
                        .map_err(|e| e.in_file(&describe))?;
                    meta.set_legacy_density(storage)?;
                    return Ok(meta);
                }
            }
            if named_version.is_none() && crate::schema::legacy13::is_v13_generic_tile(&bytes) {
                // TileDB 1.3: the v1-v2 layout behind the library's version
                // (spec: Legacy13FragmentMetadata).
                let schema = schemas.get(None)?;
                let payload = crate::schema::legacy13::read_generic_tile(&bytes)
                    .map_err(|e| e.in_file(&describe))?;
                let legacy = read_exact_from::<stored::Legacy13FragmentMetadata>(
                    &payload,
                    stored::Legacy13FragmentMetadataBinReadArgs::builder()
                        .num_attributes(schema.attributes.len() as u64)
                        .dims(dimension_shapes(&schema.stored))
                        .finalize(),
                    "Legacy13FragmentMetadata",
                )
                .map_err(|e| e.in_file(&describe))?;
                let mut meta = Self::from_legacy(fragment, schema, legacy.metadata, key)
                    .map_err(|e| e.in_file(&describe))?;
                meta.version = 0;
                meta.set_legacy_density(storage)?;
                return Ok(meta);
            }
        }
        let (footer, schema) = Self::locate_footer(
            storage,
            &path,
            size,
            schemas,
            fragment.name.format_version(),
        )
        .map_err(|e| e.in_file(&describe))?;
        Self::from_footer(fragment, schema, footer, Some(size), key)
            .map_err(|e| e.in_file(&describe))
    }

    /// Finds the footer of the metadata file `path` (of `len` bytes) from
    /// its end, by ranged reads. Where spec/ gives the footer's size before
    /// reading it (`FragmentFooter::known_size`: versions 3-9 with fixed
    /// dimensions, from the version the fragment's name implies and the
    /// schema, always `__array_schema.tdb` there), the footer is the file's
    /// last that many bytes; elsewhere the last 8 bytes hold its length
    /// (`FooterLength`). At most [`MAX_FRAGMENT_FOOTER_SIZE`] bytes of
    /// footer are read.
    fn locate_footer(
        storage: &dyn Storage,
        path: &RelPath,
        len: u64,
        schemas: &SchemaCache<'_>,
        named_version: u32,
    ) -> Result<(stored::FragmentFooter, Arc<ArraySchema>)> {
        let try_at =
            |start: u64, region: &[u8]| -> Result<(stored::FragmentFooter, Arc<ArraySchema>)> {
                let schema = schemas.get(
                    footer_schema_name(region)
                        .map_err(|e| e.at_base(start))?
                        .as_deref(),
                )?;
                let (footer, used) = parse_footer(region, &schema).map_err(|e| e.at_base(start))?;
                if used != region.len() as u64 {
                    return Err(Error::corrupt(
                        start + used,
                        "FragmentFooter",
                        Cause::TrailingBytes {
                            count: region.len() as u64 - used,
                        },
                    ));
                }
                Ok((footer, schema))
            };
        // From version 10 the trailer is always there (and the schema may
        // live in __schema/ only): no schema is needed to find the footer.
        let root_schema = if stored::footer_length_always_stored(named_version) {
            None
        } else {
            let schema = schemas.get(None)?;
            let shapes = dimension_shapes(&schema.stored);
            Some((schema.attributes.len() as u64, shapes))
        };
        let size_for = |version: u32| {
            root_schema.as_ref().and_then(|(attributes, shapes)| {
                stored::FragmentFooter::known_size(version, *attributes, shapes)
            })
        };
        let known_size = size_for(named_version);
        let (start, footer_len) = match known_size {
            Some(size) => (super::file::known_size_footer_start(len, size)?, size),
            None => Self::footer_from_trailer(storage, path, len)?,
        };
        if footer_len > MAX_FRAGMENT_FOOTER_SIZE {
            return Err(Error::unsupported(format!(
                "the fragment footer is {footer_len} bytes (from byte {start}), more than \
                 the {MAX_FRAGMENT_FOOTER_SIZE} this reader accepts"
            )));
        }
        let region = storage.read_range(path, start, footer_len)?;
        let (footer, schema) = try_at(start, &region)?;
        if let Some(size) = known_size {
            let own_size = size_for(footer.version);
            super::file::require_footer_of_size(
                start,
                size,
                own_size,
                named_version,
                footer.version,
            )?;
        }
        Ok((footer, schema))
    }

    /// The start and length of the footer that the `FooterLength` trailer
    /// (the file's last 8 bytes) measures.
    fn footer_from_trailer(storage: &dyn Storage, path: &RelPath, len: u64) -> Result<(u64, u64)> {
        let at = len.checked_sub(8).ok_or_else(|| {
            Error::corrupt(
                0,
                "FooterLength",
                Cause::Truncated {
                    needed: 8,
                    available: len,
                },
            )
        })?;
        let trailer: stored::FooterLength =
            read_exact_from(&storage.read_range(path, at, 8)?, (), "FooterLength")
                .map_err(|e| e.at_base(at))?;
        let start = at.checked_sub(trailer.footer_len).ok_or_else(|| {
            Error::corrupt(
                at,
                "FooterLength.footer_len",
                Cause::OutOfRange {
                    value: trailer.footer_len,
                    limit: at,
                },
            )
        })?;
        Ok((start, at - start))
    }

    fn from_footer(
        fragment: &Fragment,
        schema: Arc<ArraySchema>,
        footer: stored::FragmentFooter,
        file_size: Option<u64>,
        key: Option<&[u8; 32]>,
    ) -> Result<FragmentMetadata> {
        if footer.version > crate::schema::MAX_SUPPORTED_VERSION {
            return Err(Error::unsupported(format!(
                "unsupported format version {} (fragment)",
                footer.version
            )));
        }
        let non_empty_domain = if footer.null_non_empty_domain {
            None
        } else {
            // v3-v4 store fixed pairs, later versions ranges: the generated
            // layout reads both into the same form.
            Some(rect_from_stored(&footer.non_empty_domain, &schema)?)
        };
        let head = Head {
            version: footer.version,
            dense: footer.dense,
            non_empty_domain,
            tile_num: 0,
            last_tile_cell_num: footer.last_tile_cell_num,
            has_timestamps: footer.has_timestamps,
            has_delete_meta: footer.has_delete_meta,
        };
        let sparse_tile_num = footer.sparse_tile_num;
        let mut meta = Self::assemble(
            fragment,
            schema,
            head,
            StoredFooter::Footer(Box::new(footer)),
            key,
        );
        if let Some(size) = file_size {
            let _ = meta.file_size.set(size);
        }
        meta.tile_num = if meta.dense {
            meta.dense_tile_num()?
        } else {
            sparse_tile_num
        };
        Ok(meta)
    }

    fn from_legacy(
        fragment: &Fragment,
        schema: Arc<ArraySchema>,
        legacy: stored::FragmentMetadataV1V2,
        key: Option<&[u8; 32]>,
    ) -> Result<FragmentMetadata> {
        let non_empty_domain = if legacy.non_empty_domain.is_empty() {
            None
        } else {
            Some(legacy_rect(&legacy.non_empty_domain, &schema)?)
        };
        let coords_tiles = legacy
            .tile_offsets
            .get(schema.attributes.len())
            .map(|l| l.values.len())
            .unwrap_or(0);
        let dense = legacy.mbrs.is_empty() && coords_tiles == 0;
        let tile_num = legacy
            .tile_offsets
            .first()
            .map(|l| l.values.len() as u64)
            .unwrap_or(0);
        let head = Head {
            version: legacy.version,
            dense,
            non_empty_domain,
            tile_num,
            last_tile_cell_num: legacy.last_tile_cell_num,
            has_timestamps: false,
            has_delete_meta: false,
        };
        Ok(Self::assemble(
            fragment,
            schema,
            head,
            StoredFooter::Legacy(Box::new(legacy)),
            key,
        ))
    }

    /// The metadata of `fragment` from what either stored form says of it
    /// (`head`, `footer`), its lazily loaded parts not yet loaded.
    fn assemble(
        fragment: &Fragment,
        schema: Arc<ArraySchema>,
        head: Head,
        footer: StoredFooter,
        key: Option<&[u8; 32]>,
    ) -> FragmentMetadata {
        FragmentMetadata {
            path: fragment.path.clone(),
            name: fragment.name.clone(),
            version: head.version,
            dense: head.dense,
            non_empty_domain: head.non_empty_domain,
            tile_num: head.tile_num,
            last_tile_cell_num: head.last_tile_cell_num,
            has_timestamps: head.has_timestamps,
            has_delete_meta: head.has_delete_meta,
            schema,
            footer,
            key: key.copied(),
            file_size: OnceLock::new(),
            fields: Mutex::new(HashMap::new()),
            mbrs: OnceLock::new(),
            processed: OnceLock::new(),
            stats: Mutex::new(HashMap::new()),
            mmsn: OnceLock::new(),
        }
    }

    /// Before footers (v1-v2, TileDB 1.3) a fragment is dense exactly when
    /// it has no `__coords.tdb`.
    fn set_legacy_density(&mut self, storage: &dyn Storage) -> Result<()> {
        let coords = self.path.join(COORDS_FILE)?;
        self.dense = storage.kind(&coords)?.is_none();
        if self.dense {
            self.tile_num = self.dense_tile_num()?;
        }
        Ok(())
    }

    fn dense_tile_num(&self) -> Result<u64> {
        let Some(ned) = &self.non_empty_domain else {
            return Ok(0);
        };
        let mut n: u64 = 1;
        for (dim, (lo, hi)) in self.schema.dimensions.iter().zip(ned) {
            let (dlo, _) = dim.domain_scalars().ok_or_else(|| {
                let what = "the domain of a dense dimension";
                Error::corrupt(0, "domain", Cause::Missing { what })
            })?;
            let ext = dim
                .extent_scalar()
                .and_then(|e| e.as_int())
                .unwrap_or(1)
                .max(1);
            let lo = crate::schema::Scalar::decode(dim.datatype, lo).and_then(|s| s.as_int());
            let hi = crate::schema::Scalar::decode(dim.datatype, hi).and_then(|s| s.as_int());
            let dlo = dlo.as_int();
            match (lo, hi, dlo) {
                (Some(lo), Some(hi), Some(dlo)) => {
                    let tiles = (hi - dlo).div_euclid(ext) - (lo - dlo).div_euclid(ext) + 1;
                    n = n.saturating_mul(tiles.max(0) as u64);
                }
                _ => {
                    return Err(Error::corrupt(
                        0,
                        "non_empty_domain",
                        "not an integer domain",
                    ))
                }
            }
        }
        Ok(n)
    }
}
