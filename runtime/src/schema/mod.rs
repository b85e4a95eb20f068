//! The array schema as the reader uses it: the stored schema (the generated
//! [`crate::format::generated::ArraySchema`]) resolved into names, datatypes,
//! runtime filter pipelines, fill values and enumerations.

pub mod builder;
pub mod legacy13;
pub mod value;

use crate::directory::{ENUMERATIONS_DIR, SCHEMA_DIR};
use crate::error::{Cause, Error, Result};
use crate::filter::{format_conversion, Datatype, FilterPipeline};
use crate::format::generated as stored;
use crate::format::generated::NEWEST_READ_FORMAT_VERSION;
use crate::format::io::read_exact_from;
use crate::storage::{RelPath, Storage};
use crate::tile::generic::{
    load_generic_tile, load_generic_tile_file, read_generic_tile, read_generic_tile_exact,
    GenericTile,
};

pub use builder::{
    AttributeSpec, BuiltSchema, DimensionSpec, EnumerationSpec, LabelSpec, SchemaBuilder,
};
pub use value::Scalar;

/// The newest format version this runtime reads: `reads` in
/// `spec/format.toml`, stated there apart from the newest layout the spec
/// describes (`current`).
pub const MAX_SUPPORTED_VERSION: u32 = NEWEST_READ_FORMAT_VERSION;

/// Dense or sparse: the generated enum, which has exactly these two values.
pub use crate::format::generated::ArrayType;
use crate::format::generated::Layout;

/// The order of tiles, or of the cells inside a tile, that a schema holds:
/// the subset of [`Layout`] that is valid there (row-major, column-major,
/// and for the cells of a sparse array Hilbert), checked when the schema is
/// loaded ([`TryFrom<Layout>`]); `GLOBAL_ORDER` and `UNORDERED` are query
/// layouts only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaOrder {
    /// The last dimension varies fastest.
    RowMajor,
    /// The first dimension varies fastest.
    ColMajor,
    /// Sparse cell order only.
    Hilbert,
}

impl SchemaOrder {
    /// TileDB's name of the order (`row-major`, `col-major`, `hilbert`).
    pub fn name(self) -> &'static str {
        match self {
            SchemaOrder::RowMajor => "row-major",
            SchemaOrder::ColMajor => "col-major",
            SchemaOrder::Hilbert => "hilbert",
        }
    }
}

impl TryFrom<Layout> for SchemaOrder {
    /// The layout given, which is no tile or cell order.
    type Error = Layout;

    fn try_from(layout: Layout) -> Result<Self, Layout> {
        match layout {
            Layout::RowMajor => Ok(SchemaOrder::RowMajor),
            Layout::ColMajor => Ok(SchemaOrder::ColMajor),
            Layout::Hilbert => Ok(SchemaOrder::Hilbert),
            other => Err(other),
        }
    }
}

impl From<SchemaOrder> for Layout {
    fn from(order: SchemaOrder) -> Layout {
        match order {
            SchemaOrder::RowMajor => Layout::RowMajor,
            SchemaOrder::ColMajor => Layout::ColMajor,
            SchemaOrder::Hilbert => Layout::Hilbert,
        }
    }
}

/// A dimension.
#[derive(Debug, Clone)]
pub struct Dimension {
    /// The dimension's name, unique among dimensions and attributes.
    pub name: String,
    /// The type of its coordinates.
    pub datatype: Datatype,
    /// Var-sized (string) coordinates.
    pub var: bool,
    /// `[lo, hi]` as stored (fixed dimensions only).
    pub domain: Option<(Vec<u8>, Vec<u8>)>,
    /// The tile extent as stored, if any.
    pub extent: Option<Vec<u8>>,
    /// The effective pipeline: an empty dimension pipeline means the
    /// schema's coords pipeline.
    pub filters: FilterPipeline,
}

impl Dimension {
    /// The size of one coordinate (fixed dimensions).
    pub fn coord_size(&self) -> u64 {
        self.datatype.size()
    }

    /// The domain decoded as scalars; `None` for var-sized dimensions.
    pub fn domain_scalars(&self) -> Option<(Scalar, Scalar)> {
        let (lo, hi) = self.domain.as_ref()?;
        Some((
            Scalar::decode(self.datatype, lo)?,
            Scalar::decode(self.datatype, hi)?,
        ))
    }

    pub(crate) fn extent_scalar(&self) -> Option<Scalar> {
        Scalar::decode(self.datatype, self.extent.as_ref()?)
    }
}

/// An attribute.
#[derive(Debug, Clone)]
pub struct Attribute {
    /// The attribute's name, unique among dimensions and attributes.
    pub name: String,
    /// The type of each value.
    pub datatype: Datatype,
    /// Values per cell; `None` for var-sized cells.
    pub cell_val_num: Option<u32>,
    /// Cells may be null: a validity tile is stored beside the data.
    pub nullable: bool,
    /// The fill value (one cell; one value for var-sized attributes).
    pub fill: Vec<u8>,
    /// The validity of the fill value (cells never written read as this).
    pub fill_validity: bool,
    /// The filters its data tiles go through.
    pub filters: FilterPipeline,
    /// The name of the enumeration its values index, if any (v20+).
    pub enumeration: Option<String>,
}

impl Attribute {
    /// Bytes per cell of a fixed attribute.
    pub fn cell_size(&self) -> Option<u64> {
        self.cell_val_num
            .map(|n| (n as u64).saturating_mul(self.datatype.size()))
    }
}

/// An enumeration (`__schema/__enumerations/`).
#[derive(Debug, Clone)]
pub struct Enumeration {
    /// The enumeration's name, unique in the schema.
    pub name: String,
    /// The type of its values.
    pub datatype: Datatype,
    /// Values per entry; `None` for var-sized entries (strings).
    pub cell_val_num: Option<u32>,
    /// The order of the values is meaningful (`<` compares positions).
    pub ordered: bool,
    /// The values, each as its bytes.
    pub values: Vec<Vec<u8>>,
}

/// A dimension label (v18+); the label array lives under `__labels/`.
#[derive(Debug, Clone)]
pub struct DimensionLabel {
    /// The label's name, unique in the schema.
    pub name: String,
    /// The index of the dimension it labels.
    pub dim_index: u32,
    /// Where the label array is (usually `__labels/l<n>`).
    pub uri: String,
    /// `uri` is relative to the array's folder.
    pub relative_uri: bool,
    /// The attribute of the label array that holds the labels.
    pub label_attr_name: String,
    /// The type of the labels.
    pub datatype: Datatype,
    /// Values per label; `None` for var-sized labels.
    pub cell_val_num: Option<u32>,
    /// How the labels are ordered along the dimension (increasing or decreasing).
    pub order: stored::DataOrder,
}

/// A loaded array schema.
#[derive(Debug, Clone)]
pub struct ArraySchema {
    /// The schema file name (`__t1_t2_label`, or `__array_schema.tdb`).
    pub name: String,
    /// From the file name; `None` for `__array_schema.tdb`.
    pub timestamp_range: Option<(u64, u64)>,
    /// The format version of the schema file.
    pub version: u32,
    /// Dense or sparse.
    pub array_type: ArrayType,
    /// The order of the tiles in the domain.
    pub tile_order: SchemaOrder,
    /// The order of the cells within a tile.
    pub cell_order: SchemaOrder,
    /// Sparse arrays: the most cells a data tile holds.
    pub capacity: u64,
    /// Sparse arrays: several cells may share coordinates.
    pub allows_dups: bool,
    /// The default pipeline of dimensions that have none of their own.
    pub coords_filters: FilterPipeline,
    /// The pipeline of the offsets tiles of var-sized fields.
    pub offsets_filters: FilterPipeline,
    /// The pipeline of the validity tiles of nullable attributes.
    pub validity_filters: FilterPipeline,
    /// The dimensions, in order (the first is the slowest in row-major order).
    pub dimensions: Vec<Dimension>,
    /// The attributes, in schema order.
    pub attributes: Vec<Attribute>,
    /// The dimension labels (v18+; empty before).
    pub labels: Vec<DimensionLabel>,
    /// The enumerations the schema loads (v20+; empty before).
    pub enumerations: Vec<Enumeration>,
    /// The current domain (v22+), one `[lo, hi]` per dimension, when set.
    pub current_domain: Option<Vec<(Vec<u8>, Vec<u8>)>>,
    /// The stored form, for the structures whose layout depends on it.
    pub stored: stored::ArraySchema,
}

fn utf8(bytes: &[u8], field: &str) -> Result<String> {
    String::from_utf8(bytes.to_vec())
        .map_err(|_| Error::corrupt(0, field.to_string(), Cause::NotUtf8))
}

fn order(layout: stored::Layout, field: &str) -> Result<SchemaOrder> {
    SchemaOrder::try_from(layout).map_err(|other| {
        Error::corrupt(
            0,
            field.to_string(),
            Cause::BadEnumValue {
                enum_name: "cell or tile order",
                value: other.value().into(),
            },
        )
    })
}

fn cell_val_num(n: u32) -> Option<u32> {
    (n != u32::MAX).then_some(n)
}

/// Splits a stored `[lo, hi]` range: fixed halves, or `start_size` for var.
pub fn split_range(range: &stored::Range, fixed_size: Option<u64>) -> Result<(Vec<u8>, Vec<u8>)> {
    let cut = match fixed_size {
        Some(size) => size,
        None => range.start_size,
    };
    let len = range.data.len() as u64;
    let cut = usize::try_from(cut)
        .ok()
        .filter(|c| *c <= range.data.len())
        .ok_or_else(|| {
            Error::corrupt(
                0,
                "Range.start_size",
                Cause::OutOfRange {
                    value: cut,
                    limit: len,
                },
            )
        })?;
    if fixed_size.is_some() && len != cut as u64 * 2 {
        return Err(Error::corrupt(
            0,
            "Range.data",
            Cause::Inconsistent {
                what: "the byte length of a fixed [lo, hi] range",
                expected: cut as u64 * 2,
                found: len,
            },
        ));
    }
    Ok((range.data[..cut].to_vec(), range.data[cut..].to_vec()))
}

/// The shape of each dimension, as the generated fragment structures need it.
pub fn dimension_shapes(schema: &stored::ArraySchema) -> Vec<stored::DimensionShape> {
    schema
        .domain
        .dimensions
        .iter()
        .map(stored::DimensionShape::from)
        .collect()
}

/// One `[lo, hi]` per dimension, as stored bytes.
type Ranges = Vec<(Vec<u8>, Vec<u8>)>;

/// The `[lo, hi]` of every dimension in a stored current domain, or `None`
/// when it is empty.
fn current_domain_ranges(
    current: &stored::CurrentDomain,
    domain: &stored::Domain,
) -> Result<Option<Ranges>> {
    let Some(rect) = current.ndrectangle.as_ref().filter(|_| !current.empty) else {
        return Ok(None);
    };
    let mut ranges = Vec::new();
    for (range, dimension) in rect.ranges.iter().zip(&domain.dimensions) {
        let shape = stored::DimensionShape::from(dimension);
        ranges.push(split_range(
            range,
            (!shape.var).then_some(shape.coord_size),
        )?);
    }
    Ok(Some(ranges))
}

impl ArraySchema {
    /// Decodes a schema from the payload of its generic tile.
    pub fn from_payload(name: &str, payload: &[u8]) -> Result<ArraySchema> {
        let version = payload
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
            .ok_or_else(|| {
                Error::corrupt(
                    0,
                    "ArraySchema.version",
                    Cause::Truncated {
                        needed: 4,
                        available: payload.len() as u64,
                    },
                )
            })?;
        if version > MAX_SUPPORTED_VERSION {
            return Err(Error::unsupported(format!(
                "unsupported format version {version} (this reader knows versions up to {MAX_SUPPORTED_VERSION})"
            )));
        }
        let schema: stored::ArraySchema = read_exact_from(payload, (), "ArraySchema")?;
        Self::from_stored(name, schema)
    }

    /// Decodes a schema from its generic tile: the one loader of schema
    /// files, which the reader ([`Self::load`]), `tdb check` and the fuzz
    /// targets call. Errors point at the tile's body, the payload offset in
    /// their field.
    pub fn from_tile(name: &str, tile: &GenericTile) -> Result<ArraySchema> {
        Self::from_payload(name, &tile.payload).map_err(|e| tile.locate(e))
    }

    /// Decodes a schema file held in `bytes`: a TileDB 1.3 schema (only
    /// under the legacy name `__array_schema.tdb`), else one generic tile
    /// ([`Self::from_tile`]). With `exact`, bytes after the tile are an
    /// error (`tdb check`'s view); the reader ignores them, as TileDB does.
    pub fn from_file_bytes(
        name: &str,
        bytes: &[u8],
        key: Option<&[u8; 32]>,
        exact: bool,
    ) -> Result<ArraySchema> {
        if name == crate::directory::ARRAY_SCHEMA_FILE && legacy13::is_v13_generic_tile(bytes) {
            // Written by TileDB 1.3, before format versions.
            let payload = legacy13::read_generic_tile(bytes)?;
            let stored = legacy13::parse_schema(&payload)?;
            return Self::from_stored(name, stored);
        }
        let tile = if exact {
            read_generic_tile_exact(bytes, key)?
        } else {
            read_generic_tile(bytes, 0, key)?
        };
        Self::from_tile(name, &tile)
    }

    fn from_stored(name: &str, s: stored::ArraySchema) -> Result<ArraySchema> {
        let coords_filters = format_conversion::from_stored_at(&s.coords_filters, s.version)?;
        let offsets_filters = format_conversion::from_stored_at(&s.offsets_filters, s.version)?;
        let validity_filters = match &s.validity_filters {
            Some(p) => format_conversion::from_stored_at(p, s.version)?,
            None => FilterPipeline::new(Vec::new()),
        };
        let mut dimensions = Vec::new();
        for d in &s.domain.dimensions {
            let datatype = format_conversion::datatype(d.datatype)?;
            let var = d.cell_val_num == u32::MAX;
            let filters = match &d.filters {
                Some(p) if !p.filters.is_empty() => {
                    format_conversion::from_stored_at(p, s.version)?
                }
                _ => coords_filters.clone(),
            };
            let domain = if var || d.domain.is_empty() {
                None
            } else {
                let half = d.domain.len() / 2;
                if half as u64 != datatype.size() {
                    return Err(Error::corrupt(
                        0,
                        "Dimension.domain",
                        Cause::Inconsistent {
                            what: "the byte length of the domain",
                            expected: datatype.size().saturating_mul(2),
                            found: d.domain.len() as u64,
                        },
                    ));
                }
                Some((d.domain[..half].to_vec(), d.domain[half..].to_vec()))
            };
            dimensions.push(Dimension {
                name: utf8(&d.name, "Dimension.name")?,
                datatype,
                var,
                domain,
                extent: d.extent.clone(),
                filters,
            });
        }
        let mut attributes = Vec::new();
        for a in &s.attributes {
            let datatype = format_conversion::datatype(a.datatype)?;
            let cvn = cell_val_num(a.cell_val_num);
            if cvn == Some(0) {
                return Err(Error::corrupt(
                    0,
                    "Attribute.cell_val_num",
                    Cause::Empty { what: "each cell" },
                ));
            }
            let fill = match &a.fill {
                Some(fill) if !fill.is_empty() => fill.clone(),
                _ => {
                    let one = value::default_fill(datatype);
                    let copies = cvn.unwrap_or(1).min(1 << 16) as usize;
                    one.repeat(copies)
                }
            };
            attributes.push(Attribute {
                name: utf8(&a.name, "Attribute.name")?,
                datatype,
                cell_val_num: cvn,
                nullable: a.nullable,
                fill,
                fill_validity: a.fill_validity != 0,
                filters: format_conversion::from_stored_at(&a.filters, s.version)?,
                enumeration: match &a.enumeration_name {
                    Some(n) if !n.is_empty() => Some(utf8(n, "Attribute.enumeration_name")?),
                    _ => None,
                },
            });
        }
        let mut labels = Vec::new();
        for l in s.labels.iter().flatten() {
            labels.push(DimensionLabel {
                name: utf8(&l.name, "DimensionLabel.name")?,
                dim_index: l.dim_index,
                uri: utf8(&l.uri, "DimensionLabel.uri")?,
                relative_uri: l.relative_uri,
                label_attr_name: utf8(&l.label_attr_name, "DimensionLabel.label_attr_name")?,
                datatype: format_conversion::datatype(l.label_datatype)?,
                cell_val_num: cell_val_num(l.label_cell_val_num),
                order: l.label_order,
            });
        }
        let current_domain = match &s.current_domain {
            Some(cd) => current_domain_ranges(cd, &s.domain)?,
            None => None,
        };
        let timestamp_range = crate::directory::TimestampedName::parse(name)
            .ok()
            .map(|n| n.timestamp_range());
        Ok(ArraySchema {
            name: name.to_string(),
            timestamp_range,
            version: s.version,
            array_type: s.array_type,
            tile_order: order(s.tile_order, "ArraySchema.tile_order")?,
            cell_order: order(s.cell_order, "ArraySchema.cell_order")?,
            capacity: s.capacity,
            allows_dups: s.allows_dups,
            coords_filters,
            offsets_filters,
            validity_filters,
            dimensions,
            attributes,
            labels,
            enumerations: Vec::new(),
            current_domain,
            stored: s,
        })
    }

    /// Loads the schema file at `path` (in `storage`, rooted at the array),
    /// and the enumerations it names.
    pub fn load(
        storage: &dyn Storage,
        path: &RelPath,
        key: Option<&[u8; 32]>,
    ) -> Result<ArraySchema> {
        let file = storage.describe(path);
        let name = path.file_name().unwrap_or_default().to_string();
        let size = storage.size(path)?;
        let tile = if name == crate::directory::ARRAY_SCHEMA_FILE
            && size <= legacy13::MAX_LEGACY_FILE_SIZE
        {
            // The old name, which TileDB 1.3 wrote too: a small file, read
            // whole to tell a 1.3 tile (judged by the file's size) from a
            // modern one.
            let bytes = storage.read(path)?;
            Self::from_file_bytes(&name, &bytes, key, false).map_err(|e| e.in_file(&file))?
        } else {
            let tile =
                load_generic_tile(storage, path, size, 0, key).map_err(|e| e.in_file(&file))?;
            Self::from_tile(&name, &tile).map_err(|e| e.in_file(&file))?
        };
        let mut schema = tile;
        let refs = schema.stored.enumerations.clone().unwrap_or_default();
        for r in refs {
            let file_name = utf8(&r.path, "EnumerationRef.path")?;
            let path = RelPath::root()
                .join(SCHEMA_DIR)?
                .join(ENUMERATIONS_DIR)?
                .join(&file_name)?;
            let enumeration = load_enumeration(storage, &path, key)?;
            // TileDB refuses a file naming another enumeration than the
            // reference that led to it.
            if enumeration.name.as_bytes() != r.name.as_slice() {
                return Err(Error::corrupt(
                    0,
                    "Enumeration.name",
                    Cause::NameMismatch {
                        expected: String::from_utf8_lossy(&r.name).into_owned(),
                        found: enumeration.name.clone(),
                    },
                )
                .in_file(storage.describe(&path)));
            }
            schema.enumerations.push(enumeration);
        }
        Ok(schema)
    }

    /// The schema file of a fragment: `__schema/<name>`, or the legacy
    /// `__array_schema.tdb` when `name` is `None`.
    pub fn path_for(name: Option<&str>) -> Result<RelPath> {
        match name {
            Some(name) => RelPath::root().join(SCHEMA_DIR)?.join(name),
            None => RelPath::root().join(crate::directory::ARRAY_SCHEMA_FILE),
        }
    }

    /// The array is dense.
    pub fn is_dense(&self) -> bool {
        self.array_type == ArrayType::Dense
    }

    /// The dimension called `name`, with its index.
    pub fn dimension(&self, name: &str) -> Option<(usize, &Dimension)> {
        self.dimensions
            .iter()
            .enumerate()
            .find(|(_, d)| d.name == name)
    }

    /// The attribute called `name`, with its index.
    pub fn attribute(&self, name: &str) -> Option<(usize, &Attribute)> {
        self.attributes
            .iter()
            .enumerate()
            .find(|(_, a)| a.name == name)
    }

    /// The enumeration called `name`.
    pub fn enumeration(&self, name: &str) -> Option<&Enumeration> {
        self.enumerations.iter().find(|e| e.name == name)
    }
}

/// Loads one enumeration file.
pub fn load_enumeration(
    storage: &dyn Storage,
    path: &RelPath,
    key: Option<&[u8; 32]>,
) -> Result<Enumeration> {
    let file = storage.describe(path);
    let tile = load_generic_tile_file(storage, path, key)?;
    enumeration_from_tile(&tile, path.file_name().unwrap_or_default()).map_err(|e| e.in_file(&file))
}

/// Var-sized values' offsets stored as raw little-endian u64s: a whole
/// number of them (TileDB's `Enumeration` constructor refuses others),
/// ascending, each within the `data_len` bytes of data.
pub fn parse_offsets_bytes(offsets: &[u8], data_len: u64) -> Result<Vec<u64>> {
    if !offsets.len().is_multiple_of(8) {
        return Err(Error::corrupt(
            0,
            "offsets",
            Cause::NotMultiple {
                size: offsets.len() as u64,
                unit: 8,
            },
        ));
    }
    let mut previous = 0u64;
    let mut out = Vec::with_capacity(offsets.len() / 8);
    for (i, chunk) in offsets.chunks_exact(8).enumerate() {
        let value = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        let cause = if value < previous {
            Cause::NotAscending { previous, value }
        } else {
            Cause::OutOfRange {
                value,
                limit: data_len,
            }
        };
        if value < previous || value > data_len {
            return Err(Error::corrupt(
                (i * 8) as u64,
                format!("offsets[{i}]"),
                cause,
            ));
        }
        previous = value;
        out.push(value);
    }
    Ok(out)
}

/// Decodes the enumeration file `file_name` from its generic tile: the one
/// loader of enumerations, which the reader ([`load_enumeration`]), `tdb
/// check` and the fuzz targets call.
pub fn enumeration_from_tile(tile: &GenericTile, file_name: &str) -> Result<Enumeration> {
    let e: stored::Enumeration = tile.parse((), "Enumeration")?;
    // TileDB refuses a file whose recorded path is not the one it was read
    // from (an extension's new file must carry its own path).
    if e.path != file_name.as_bytes() {
        return Err(tile.locate(Error::corrupt(
            0,
            "Enumeration.path",
            Cause::NameMismatch {
                expected: file_name.to_string(),
                found: String::from_utf8_lossy(&e.path).into_owned(),
            },
        )));
    }
    let datatype = format_conversion::datatype(e.datatype)?;
    let cvn = cell_val_num(e.cell_val_num);
    let mut values = Vec::new();
    match (&e.offsets, cvn) {
        (Some(offsets), None) => {
            let starts = parse_offsets_bytes(offsets, e.data.len() as u64)
                .map_err(|err| tile.locate(err.within("Enumeration.offsets")))?;
            for (i, start) in starts.iter().enumerate() {
                let end = starts.get(i + 1).copied().unwrap_or(e.data.len() as u64);
                values.push(e.data[*start as usize..end as usize].to_vec());
            }
        }
        (_, Some(n)) => {
            let size = (n as u64 * datatype.size()).max(1) as usize;
            values.extend(e.data.chunks(size).map(<[u8]>::to_vec));
        }
        (None, None) => {
            return Err(tile.locate(Error::corrupt(
                0,
                "Enumeration.offsets",
                Cause::Missing {
                    what: "the offsets of a var-sized enumeration",
                },
            )))
        }
    }
    Ok(Enumeration {
        name: utf8(&e.name, "Enumeration.name")?,
        datatype,
        cell_val_num: cvn,
        ordered: e.ordered,
        values,
    })
}
