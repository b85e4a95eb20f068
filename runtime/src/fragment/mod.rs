//! Fragment metadata: the footer of each fragment (from a consolidated
//! `.meta` file when one holds it, else from the fragment's own
//! `__fragment_metadata.tdb`), and, loaded only when a read needs them, the
//! per-field tile offsets, var sizes, validity offsets and the R-tree.
//!
//! Field index space (notes §2.11): attributes `0..A`, the legacy
//! `__coords` slot `A`, dimensions `A+1..=A+D` (v5+), then the cell
//! timestamps `t`, then the delete metadata `dt` and `dci`.

mod file;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

pub use file::{footer_region, parse_metadata_file, FragmentMetadataFile};

use crate::directory::{Fragment, TimestampedName};

use crate::error::{Error, Result};
use crate::format::generated as stored;
use crate::format::io::{read_exact_from, read_prefix};
use crate::schema::legacy13::MAX_LEGACY_FILE_SIZE;
use crate::schema::{dimension_shapes, split_range, ArraySchema};
use crate::storage::{RelPath, Storage};
use crate::tile::generic::{
    load_generic_tile, load_generic_tile_file, load_generic_tile_header, read_generic_tile,
    GenericTile,
};

/// The largest fragment footer read. A footer holds a few u64 per field and
/// the non-empty domain (for string dimensions, the smallest and largest
/// coordinate): kilobytes even for schemas of thousands of fields. It is
/// read from the end of the file, and in the oldest layouts (3-9 without a
/// trailer) found by trying the positions after each generic tile, so this
/// bounds what a file far larger than its metadata makes us read.
pub const MAX_FRAGMENT_FOOTER_SIZE: u64 = 16 << 20;

/// A field of a fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    Attribute(usize),
    /// The zipped coordinates of format v1–v4.
    Coords,
    Dimension(usize),
    /// Per-cell timestamps (`t`, v14+).
    Timestamps,
    /// Per-cell delete timestamps (`dt`, v15+).
    DeleteTimestamps,
    /// Per-cell index of the delete condition (`dci`, v15+).
    DeleteConditionIndex,
}

/// A `[lo, hi]` range per dimension, as stored bytes.
pub type Rectangle = Vec<(Vec<u8>, Vec<u8>)>;

/// The per-tile tables of one field, loaded on demand.
#[derive(Debug, Default, Clone)]
pub struct FieldTiles {
    pub offsets: Vec<u64>,
    pub var_offsets: Vec<u64>,
    pub var_sizes: Vec<u64>,
    pub validity_offsets: Vec<u64>,
}

/// The footer as stored, in either metadata generation: the footer of
/// format 3 and later, or the single generic tile of format 1-2.
#[derive(Debug, Clone)]
enum StoredFooter {
    Footer(Box<stored::FragmentFooter>),
    Legacy(Box<stored::FragmentMetadataV1V2>),
}

/// One fragment's metadata as readers hold it: the footer, parsed when
/// loaded, and the per-field tile tables, the R-tree and the processed
/// conditions, each loaded from the file on first use. The same file loaded
/// whole, as `tdb check` and the fuzz targets want it, is a
/// [`FragmentMetadataFile`].
#[derive(Debug)]
pub struct FragmentMetadata {
    pub path: RelPath,
    pub name: TimestampedName,
    pub version: u32,
    pub schema: Arc<ArraySchema>,
    pub dense: bool,
    /// `None` when the fragment is empty (null non-empty domain).
    pub non_empty_domain: Option<Rectangle>,
    pub tile_num: u64,
    pub last_tile_cell_num: u64,
    pub has_timestamps: bool,
    pub has_delete_meta: bool,
    footer: StoredFooter,
    key: Option<[u8; 32]>,
    /// The size of `__fragment_metadata.tdb`, once looked up: its generic
    /// tiles are read by ranged reads, judged against it.
    file_size: OnceLock<u64>,
    fields: Mutex<HashMap<Field, Arc<FieldTiles>>>,
    mbrs: OnceLock<Arc<Vec<Rectangle>>>,
    processed: OnceLock<Vec<String>>,
}

/// Parses a footer at the front of `bytes`, against the schema its head
/// names (the field counts come from it); returns it and its length.
pub fn parse_footer(bytes: &[u8], schema: &ArraySchema) -> Result<(stored::FragmentFooter, u64)> {
    let dims = dimension_shapes(&schema.stored);
    read_prefix(
        bytes,
        stored::FragmentFooterBinReadArgs::builder()
            .num_attributes(schema.attributes.len() as u64)
            .dims(dims)
            .finalize(),
        "FragmentFooter",
    )
}

/// The schema name a footer names (v10+), from its first bytes.
pub fn footer_schema_name(bytes: &[u8]) -> Result<Option<String>> {
    let (head, _): (stored::FragmentFooterHead, u64) =
        read_prefix(bytes, (), "FragmentFooterHead")?;
    Ok(match head.schema_name {
        Some(name) => Some(
            String::from_utf8(name)
                .map_err(|_| Error::corrupt(4, "FragmentFooter.schema_name", "not UTF-8"))?,
        ),
        None => None,
    })
}

/// Loads schemas by file name, each once.
pub struct SchemaCache<'a> {
    storage: &'a dyn Storage,
    key: Option<[u8; 32]>,
    loaded: Mutex<HashMap<Option<String>, Arc<ArraySchema>>>,
}

impl<'a> SchemaCache<'a> {
    pub fn new(storage: &'a dyn Storage, key: Option<[u8; 32]>) -> Self {
        SchemaCache {
            storage,
            key,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    /// Seeds the cache with an already loaded schema.
    pub fn insert(&self, name: Option<String>, schema: Arc<ArraySchema>) {
        if let Ok(mut map) = self.loaded.lock() {
            map.insert(name, schema);
        }
    }

    /// The schema `__schema/<name>`, or `__array_schema.tdb` for `None`.
    pub fn get(&self, name: Option<&str>) -> Result<Arc<ArraySchema>> {
        let key = name.map(str::to_string);
        if let Some(s) = self.loaded.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(s);
        }
        let path = ArraySchema::path_for(name)?;
        let schema = Arc::new(ArraySchema::load(self.storage, &path, self.key.as_ref())?);
        self.insert(key, schema.clone());
        Ok(schema)
    }
}

/// The footers of consolidated fragment metadata files, by fragment name.
pub fn load_consolidated_footers(
    storage: &dyn Storage,
    meta_files: &[RelPath],
    key: Option<&[u8; 32]>,
) -> Result<HashMap<String, Vec<u8>>> {
    let mut footers = HashMap::new();
    for path in meta_files {
        let file = storage.describe(path);
        let tile = load_generic_tile_file(storage, path, key)?;
        for (name, region) in consolidated_footer_regions(&tile).map_err(|e| e.in_file(&file))? {
            let name = String::from_utf8_lossy(&name).into_owned();
            // Names are fragment folder names (v9+) or absolute URIs.
            let name = name
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_string();
            footers.entry(name).or_insert(region);
        }
    }
    Ok(footers)
}

/// A tile offsets table (tile offsets, var offsets, var sizes, validity
/// offsets, null counts): one generic tile of the metadata file.
pub fn parse_tile_offsets(tile: &GenericTile) -> Result<Vec<u64>> {
    tile.parse::<stored::TileOffsets>((), "TileOffsets")
        .map(|l| l.values)
}

/// The R-tree tile of a format `version` fragment of `schema`.
pub fn parse_rtree(
    tile: &GenericTile,
    version: u32,
    schema: &stored::ArraySchema,
) -> Result<stored::RTree> {
    tile.parse(
        stored::RTreeBinReadArgs::builder()
            .version(version)
            .dims(dimension_shapes(schema))
            .finalize(),
        "RTree",
    )
}

/// The processed-conditions tile (format 16 on).
pub fn parse_processed_conditions(tile: &GenericTile) -> Result<stored::ProcessedConditions> {
    tile.parse((), "ProcessedConditions")
}

/// The footers of one consolidated fragment metadata file's tile
/// (`__fragment_meta/*.meta`): each entry's stored name and its footer's
/// bytes, in the file's order. Entry offsets count from the start of the
/// payload; each footer runs to the next entry's offset or the end.
pub fn consolidated_footer_regions(tile: &GenericTile) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let meta: stored::ConsolidatedFragmentMetadata =
        tile.parse((), "ConsolidatedFragmentMetadata")?;
    let payload_len = tile.payload.len() as u64;
    let mut out = Vec::with_capacity(meta.entries.len());
    for (i, entry) in meta.entries.iter().enumerate() {
        let end = meta.entries.get(i + 1).map_or(payload_len, |e| e.offset);
        let region = usize::try_from(entry.offset)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(s, e)| tile.payload.get(s..e))
            .ok_or_else(|| {
                tile.locate(Error::corrupt(
                    entry.offset,
                    format!("ConsolidatedFragmentMetadata.entries[{i}].offset"),
                    format!(
                        "footer bytes {}..{end} are not within the {payload_len} byte payload",
                        entry.offset
                    ),
                ))
            })?;
        out.push((entry.name.clone(), region.to_vec()));
    }
    Ok(out)
}

fn rect_from_stored(rect: &stored::NDRectangle, schema: &ArraySchema) -> Result<Rectangle> {
    rect.ranges
        .iter()
        .zip(&schema.dimensions)
        .map(|(r, d)| split_range(r, (!d.var).then(|| d.coord_size())))
        .collect()
}

fn legacy_rect(bytes: &[u8], schema: &ArraySchema) -> Result<Rectangle> {
    let mut out = Vec::new();
    let mut at = 0usize;
    for d in &schema.dimensions {
        let size = d.coord_size() as usize;
        let lo = bytes.get(at..at + size);
        let hi = bytes.get(at + size..at + 2 * size);
        match (lo, hi) {
            (Some(lo), Some(hi)) => out.push((lo.to_vec(), hi.to_vec())),
            _ => return Err(Error::corrupt(at as u64, "non_empty_domain", "too short")),
        }
        at += 2 * size;
    }
    Ok(out)
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
        if named_version.is_none_or(|v| v <= 2) && size <= MAX_LEGACY_FILE_SIZE {
            let bytes = storage.read(&path)?;
            if let Ok(tile) = read_generic_tile(&bytes, 0, key) {
                if tile.header.version <= 2 && tile.end == bytes.len() as u64 {
                    let schema = schemas.get(None)?;
                    let mut meta = Self::from_legacy(fragment, schema, &tile.payload, key)
                        .map_err(|e| e.in_file(&describe))?;
                    meta.set_legacy_density(storage)?;
                    return Ok(meta);
                }
            }
            if named_version.is_none() && crate::schema::legacy13::is_v13_generic_tile(&bytes) {
                // TileDB 1.3: the v1-v2 layout behind a 12-byte library
                // version (major, minor, revision) instead of the format
                // version.
                let schema = schemas.get(None)?;
                let payload = crate::schema::legacy13::read_generic_tile(&bytes)
                    .map_err(|e| e.in_file(&describe))?;
                let rest = payload.get(8..).ok_or_else(|| {
                    Error::corrupt(0, "version", "the data ends early").in_file(&describe)
                })?;
                let mut meta = Self::from_legacy(fragment, schema, rest, key)
                    .map_err(|e| e.in_file(&describe))?;
                meta.version = 0;
                meta.set_legacy_density(storage)?;
                return Ok(meta);
            }
        }
        let (footer, schema) = Self::locate_footer(storage, &path, size, schemas, named_version)
            .map_err(|e| e.in_file(&describe))?;
        Self::from_footer(fragment, schema, footer, Some(size), key)
            .map_err(|e| e.in_file(&describe))
    }

    /// Finds the footer of the metadata file `path` (of `len` bytes) from
    /// its end, by ranged reads: the footer length in the last 8 bytes
    /// (v10+, and v3-9 with var dimensions), then the footer it measures;
    /// else (v3-9) the footer that follows the last generic tile, found by
    /// reading the tiles' headers only. At most
    /// [`MAX_FRAGMENT_FOOTER_SIZE`] bytes of footer are read.
    fn locate_footer(
        storage: &dyn Storage,
        path: &RelPath,
        len: u64,
        schemas: &SchemaCache<'_>,
        named_version: Option<u32>,
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
                        "the footer does not fill its region",
                    ));
                }
                Ok((footer, schema))
            };
        let trailer = match len.checked_sub(8) {
            Some(at) => {
                let bytes = storage.read_range(path, at, 8)?;
                bytes.try_into().ok().map(u64::from_le_bytes)
            }
            None => None,
        };
        let with_trailer =
            trailer.and_then(|footer_len| Some(((len - 8).checked_sub(footer_len)?, len - 8)));
        if named_version.is_some_and(|v| v >= 10) {
            let (start, end) = with_trailer.ok_or_else(|| {
                Error::corrupt(
                    len.saturating_sub(8),
                    "FooterLength",
                    "footer length past the start of the file",
                )
            })?;
            if end - start > MAX_FRAGMENT_FOOTER_SIZE {
                return Err(Error::unsupported(format!(
                    "the fragment footer is {} bytes (FooterLength at byte {end}), more than \
                     the {MAX_FRAGMENT_FOOTER_SIZE} this reader accepts",
                    end - start
                )));
            }
            let region = storage.read_range(path, start, end - start)?;
            return try_at(start, &region);
        }
        if let Some((start, end)) =
            with_trailer.filter(|(start, end)| end - start <= MAX_FRAGMENT_FOOTER_SIZE)
        {
            let region = storage.read_range(path, start, end - start)?;
            if let Ok(found) = try_at(start, &region) {
                return Ok(found);
            }
        }
        // Versions 3-9 without var dimensions: no trailer; the footer follows
        // the last generic tile. Only a position within the file's last
        // MAX_FRAGMENT_FOOTER_SIZE bytes can start it: that tail is read
        // once, the tiles before it are skipped by their headers.
        let tail_start = len.saturating_sub(MAX_FRAGMENT_FOOTER_SIZE);
        let mut tail: Option<Vec<u8>> = None;
        let mut at = 0u64;
        while at < len {
            if at >= tail_start {
                let tail = match &mut tail {
                    Some(tail) => tail,
                    None => tail.insert(storage.read_range(path, tail_start, len - tail_start)?),
                };
                if let Ok(found) = try_at(at, &tail[(at - tail_start) as usize..]) {
                    return Ok(found);
                }
            }
            at = generic_tile_end(storage, path, len, at)?;
        }
        Err(Error::corrupt(len, "FragmentFooter", "no footer found"))
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
        } else if footer.version <= 4 {
            // v3-v4: fixed pairs, already split by the generated layout.
            Some(rect_from_stored(&footer.non_empty_domain, &schema)?)
        } else {
            Some(rect_from_stored(&footer.non_empty_domain, &schema)?)
        };
        let tile_num = footer.tile_offsets_offsets.len();
        let mut meta = FragmentMetadata {
            path: fragment.path.clone(),
            name: fragment.name.clone(),
            version: footer.version,
            dense: footer.dense,
            non_empty_domain,
            tile_num: 0,
            last_tile_cell_num: footer.last_tile_cell_num,
            has_timestamps: footer.has_timestamps,
            has_delete_meta: footer.has_delete_meta,
            schema,
            footer: StoredFooter::Footer(Box::new(footer)),
            key: key.copied(),
            file_size: OnceLock::new(),
            fields: Mutex::new(HashMap::new()),
            mbrs: OnceLock::new(),
            processed: OnceLock::new(),
        };
        let _ = tile_num;
        if let Some(size) = file_size {
            let _ = meta.file_size.set(size);
        }
        meta.tile_num = if meta.dense {
            meta.dense_tile_num()?
        } else {
            match &meta.footer {
                StoredFooter::Footer(f) => f.sparse_tile_num,
                StoredFooter::Legacy(_) => 0,
            }
        };
        Ok(meta)
    }

    fn from_legacy(
        fragment: &Fragment,
        schema: Arc<ArraySchema>,
        payload: &[u8],
        key: Option<&[u8; 32]>,
    ) -> Result<FragmentMetadata> {
        let dims = dimension_shapes(&schema.stored);
        let legacy: stored::FragmentMetadataV1V2 = read_exact_from(
            payload,
            stored::FragmentMetadataV1V2BinReadArgs::builder()
                .num_attributes(schema.attributes.len() as u64)
                .dims(dims)
                .finalize(),
            "FragmentMetadataV1V2",
        )?;
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
        let meta = FragmentMetadata {
            path: fragment.path.clone(),
            name: fragment.name.clone(),
            version: legacy.version,
            dense,
            non_empty_domain,
            tile_num,
            last_tile_cell_num: legacy.last_tile_cell_num,
            has_timestamps: false,
            has_delete_meta: false,
            schema,
            footer: StoredFooter::Legacy(Box::new(legacy)),
            key: key.copied(),
            file_size: OnceLock::new(),
            fields: Mutex::new(HashMap::new()),
            mbrs: OnceLock::new(),
            processed: OnceLock::new(),
        };
        Ok(meta)
    }

    /// Before footers (v1-v2, TileDB 1.3) a fragment is dense exactly when
    /// it has no `__coords.tdb`.
    fn set_legacy_density(&mut self, storage: &dyn Storage) -> Result<()> {
        let coords = self.path.join("__coords.tdb")?;
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
            let (dlo, _) = dim
                .domain_scalars()
                .ok_or_else(|| Error::corrupt(0, "domain", "dense dimension without domain"))?;
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

    /// The slot of `field` in this fragment's field index space, if the
    /// fragment has it.
    pub fn field_index(&self, field: Field) -> Option<usize> {
        let a = self.schema.attributes.len();
        let d = self.schema.dimensions.len();
        let dims = if self.version >= 5 { d } else { 0 };
        let ts = usize::from(self.has_timestamps);
        match field {
            Field::Attribute(i) => (i < a).then_some(i),
            Field::Coords => Some(a),
            Field::Dimension(j) => (self.version >= 5 && j < d).then_some(a + 1 + j),
            Field::Timestamps => self.has_timestamps.then_some(a + 1 + dims),
            Field::DeleteTimestamps => self.has_delete_meta.then_some(a + 1 + dims + ts),
            Field::DeleteConditionIndex => self.has_delete_meta.then_some(a + 2 + dims + ts),
        }
    }

    /// The data file of `field` (without `_var`/`_validity`), per version.
    pub fn file_stem(&self, field: Field) -> Option<String> {
        let index = self.field_index(field)?;
        let a = self.schema.attributes.len();
        let raw_name = match field {
            Field::Attribute(i) => self.schema.attributes[i].name.clone(),
            Field::Coords => "__coords".to_string(),
            Field::Dimension(j) => self.schema.dimensions[j].name.clone(),
            Field::Timestamps => "t".to_string(),
            Field::DeleteTimestamps => "dt".to_string(),
            Field::DeleteConditionIndex => "dci".to_string(),
        };
        Some(if self.version >= 9 {
            match field {
                Field::Attribute(i) => format!("a{i}"),
                Field::Dimension(_) => format!("d{}", index - a - 1),
                _ => raw_name,
            }
        } else if self.version == 8 {
            percent_encode_v8(&raw_name)
        } else {
            raw_name
        })
    }

    /// The file holding `field`'s fixed data (or offsets for var fields).
    pub fn data_path(&self, field: Field, suffix: &str) -> Result<RelPath> {
        let stem = self.file_stem(field).ok_or_else(|| {
            Error::Usage(format!("fragment {} has no field {field:?}", self.name))
        })?;
        self.path.join(&format!("{stem}{suffix}.tdb"))
    }

    /// The generic tile at `offset` of this fragment's metadata file, read
    /// by ranged reads (the file is never read whole; each table is loaded
    /// once and cached by the caller).
    fn metadata_tile(&self, storage: &dyn Storage, offset: u64) -> Result<GenericTile> {
        let path = self.path.join(crate::directory::FRAGMENT_METADATA_FILE)?;
        let size = match self.file_size.get() {
            Some(size) => *size,
            // Loaded from consolidated metadata: the file is looked up
            // when a table is first needed.
            None => {
                let size = storage.size(&path)?;
                *self.file_size.get_or_init(|| size)
            }
        };
        load_generic_tile(storage, &path, size, offset, self.key.as_ref())
            .map_err(|e| e.in_file(storage.describe(&path)))
    }

    fn u64_tile(&self, storage: &dyn Storage, offset: u64, what: &str) -> Result<Vec<u64>> {
        let tile = self
            .metadata_tile(storage, offset)
            .map_err(|e| e.within(what.to_string()))?;
        parse_tile_offsets(&tile).map_err(|e| e.within(what.to_string()))
    }

    /// The tile tables of `field`, loaded once.
    pub fn field_tiles(&self, storage: &dyn Storage, field: Field) -> Result<Arc<FieldTiles>> {
        if let Some(t) = self.fields.lock().ok().and_then(|m| m.get(&field).cloned()) {
            return Ok(t);
        }
        let describe = storage.describe(&self.path.join(crate::directory::FRAGMENT_METADATA_FILE)?);
        let index = self.field_index(field).ok_or_else(|| {
            Error::Usage(format!("fragment {} has no field {field:?}", self.name))
        })?;
        let mut tiles = FieldTiles::default();
        match &self.footer {
            StoredFooter::Footer(f) => {
                let pick = |list: &Vec<u64>| list.get(index).copied();
                if let Some(o) = pick(&f.tile_offsets_offsets) {
                    tiles.offsets = self.u64_tile(storage, o, "tile offsets")?;
                }
                if let Some(o) = pick(&f.tile_var_offsets_offsets) {
                    tiles.var_offsets = self.u64_tile(storage, o, "tile var offsets")?;
                }
                if let Some(o) = pick(&f.tile_var_sizes_offsets) {
                    tiles.var_sizes = self.u64_tile(storage, o, "tile var sizes")?;
                }
                if let Some(o) = f.tile_validity_offsets_offsets.as_ref().and_then(pick) {
                    tiles.validity_offsets = self.u64_tile(storage, o, "tile validity offsets")?;
                }
            }
            StoredFooter::Legacy(l) => {
                let get = |lists: &Vec<stored::LegacyU64List>| {
                    lists
                        .get(index)
                        .map(|l| l.values.clone())
                        .unwrap_or_default()
                };
                tiles.offsets = get(&l.tile_offsets);
                tiles.var_offsets = get(&l.tile_var_offsets);
                tiles.var_sizes = get(&l.tile_var_sizes);
            }
        }
        let tiles = Arc::new(tiles);
        let _ = describe;
        if let Ok(mut m) = self.fields.lock() {
            m.insert(field, tiles.clone());
        }
        Ok(tiles)
    }

    /// The sum of every data file size the footer records (fixed, var and
    /// validity, over all fields): with the metadata file's size, the
    /// fragment size TileDB's consolidation weighs.
    pub fn data_file_bytes(&self) -> u64 {
        let sum = |v: &[u64]| v.iter().fold(0u64, |a, b| a.saturating_add(*b));
        match &self.footer {
            StoredFooter::Footer(f) => sum(&f.file_sizes)
                .saturating_add(sum(&f.file_var_sizes))
                .saturating_add(f.file_validity_sizes.as_deref().map_or(0, sum)),
            StoredFooter::Legacy(l) => sum(&l.file_sizes).saturating_add(sum(&l.file_var_sizes)),
        }
    }

    /// The file sizes of `field`: (fixed, var, validity).
    pub fn file_sizes(&self, field: Field) -> (u64, u64, u64) {
        let Some(index) = self.field_index(field) else {
            return (0, 0, 0);
        };
        match &self.footer {
            StoredFooter::Footer(f) => (
                f.file_sizes.get(index).copied().unwrap_or(0),
                f.file_var_sizes.get(index).copied().unwrap_or(0),
                f.file_validity_sizes
                    .as_ref()
                    .and_then(|v| v.get(index).copied())
                    .unwrap_or(0),
            ),
            StoredFooter::Legacy(l) => (
                l.file_sizes.get(index).copied().unwrap_or(0),
                l.file_var_sizes.get(index).copied().unwrap_or(0),
                0,
            ),
        }
    }

    /// Cells in tile `tile`.
    pub fn cell_num(&self, tile: u64, cells_per_dense_tile: u64) -> u64 {
        if self.dense {
            cells_per_dense_tile
        } else if tile + 1 == self.tile_num {
            if self.last_tile_cell_num == 0 {
                self.schema.capacity
            } else {
                self.last_tile_cell_num
            }
        } else {
            self.schema.capacity
        }
    }

    /// The MBR of every tile of a sparse fragment (the R-tree's leaves).
    pub fn mbrs(&self, storage: &dyn Storage) -> Result<Arc<Vec<Rectangle>>> {
        if let Some(m) = self.mbrs.get() {
            return Ok(m.clone());
        }
        let rects: Vec<Rectangle> = match &self.footer {
            StoredFooter::Footer(f) => {
                let tile = self.metadata_tile(storage, f.rtree_offset)?;
                let rtree = parse_rtree(&tile, self.version, &self.schema.stored)
                    .map_err(|e| e.within("R-tree"))?;
                match rtree.levels.last() {
                    Some(level) => level
                        .mbrs
                        .iter()
                        .map(|r| rect_from_stored(r, &self.schema))
                        .collect::<Result<_>>()?,
                    None => Vec::new(),
                }
            }
            StoredFooter::Legacy(l) => l
                .mbrs
                .iter()
                .map(|r| rect_from_stored(r, &self.schema))
                .collect::<Result<_>>()?,
        };
        let rects = Arc::new(rects);
        let _ = self.mbrs.set(rects.clone());
        Ok(rects)
    }

    /// The delete/update commits already applied to this fragment's cells
    /// (array-relative markers such as `__commits/<name>.del`).
    pub fn processed_conditions(&self, storage: &dyn Storage) -> Result<Vec<String>> {
        if let Some(p) = self.processed.get() {
            return Ok(p.clone());
        }
        let list = match &self.footer {
            StoredFooter::Footer(f) => match f.processed_conditions_offset {
                Some(offset) if self.version >= 16 => {
                    let tile = self.metadata_tile(storage, offset)?;
                    let pc = parse_processed_conditions(&tile)?;
                    pc.conditions
                        .iter()
                        .map(|c| String::from_utf8_lossy(&c.marker).into_owned())
                        .collect()
                }
                _ => Vec::new(),
            },
            StoredFooter::Legacy(_) => Vec::new(),
        };
        let _ = self.processed.set(list.clone());
        Ok(list)
    }
}

/// The offset just past the generic tile at `offset` of `file` (of
/// `file_size` bytes), from its header alone: the body is neither read nor
/// decoded.
fn generic_tile_end(
    storage: &dyn Storage,
    file: &RelPath,
    file_size: u64,
    offset: u64,
) -> Result<u64> {
    let (header, header_len, _) = load_generic_tile_header(storage, file, file_size, offset)?;
    (offset + header_len)
        .checked_add(header.persisted_size)
        .filter(|end| *end <= file_size)
        .ok_or_else(|| {
            Error::corrupt(
                offset + 4,
                "GenericTileHeader.persisted_size",
                format!(
                    "the tile's {} bytes run past the end of the file ({file_size} bytes)",
                    header.persisted_size
                ),
            )
        })
}

/// TileDB's v8 file-name encoding (`FragmentMetadata::encode_name`),
/// including its non-standard entries for Windows-illegal characters.
pub fn percent_encode_v8(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let code = match c {
            '!' => "%21",
            '#' => "%23",
            '$' => "%24",
            '%' => "%25",
            '&' => "%26",
            '\'' => "%27",
            '(' => "%28",
            ')' => "%29",
            '*' => "%2A",
            '+' => "%2B",
            ',' => "%2C",
            '/' => "%2F",
            ':' => "%3A",
            ';' => "%3B",
            '=' => "%3D",
            '?' => "%3F",
            '@' => "%40",
            '[' => "%5B",
            ']' => "%5D",
            '"' => "%22",
            '<' => "%20",
            '>' => "%2D",
            '\\' => "%30",
            '|' => "%3C",
            _ => {
                out.push(c);
                continue;
            }
        };
        out.push_str(code);
    }
    out
}
