//! [`SchemaBuilder`]: an array schema described field by field, checked as
//! TileDB checks it (`ArraySchema::check` and the setters of the schema, its
//! domain, dimensions, attributes, filters and enumerations; the rules are
//! in `builder/validate.rs`), and built into the stored form
//! ([`stored::ArraySchema`], format 22) with the enumeration files and the
//! schemas of the dimension labels' arrays it refers to.
//!
//! A loaded schema turns back into a builder ([`SchemaBuilder::from_schema`]);
//! building it again gives the same stored bytes.

use crate::column::CellValue;
use crate::error::{Error, Result};
use crate::filter::{Datatype, Filter, FilterPipeline};
use crate::format::generated as stored;
use crate::format::generated::{ArrayType, DataOrder, LABELS_DIR, WRITE_FORMAT_VERSION};

use super::{dimension_shapes, value, ArraySchema, SchemaOrder};

/// TileDB's default capacity of a sparse data tile (spec/format.toml).
pub const DEFAULT_CAPACITY: u64 = crate::format::generated::DEFAULT_CAPACITY;

/// One dimension of a schema being built.
#[derive(Debug, Clone, PartialEq)]
pub struct DimensionSpec {
    /// The dimension's name.
    pub name: String,
    /// The type of its coordinates (`STRING_ASCII` for a string dimension).
    pub datatype: Datatype,
    /// `[lo, hi]`, each one coordinate's bytes; `None` for string dimensions.
    pub domain: Option<(Vec<u8>, Vec<u8>)>,
    /// The tile extent's bytes; `None` for none (TileDB then uses the
    /// domain's range, unless the cell order is Hilbert).
    pub extent: Option<Vec<u8>>,
    /// Its own pipeline; empty means the schema's coordinate filters.
    pub filters: FilterPipeline,
}

impl DimensionSpec {
    /// A numeric dimension typed by `T` (`i32` → `INT32`, …) over
    /// `[lo, hi]`, with a tile extent or none.
    pub fn new<T: CellValue>(name: &str, lo: T, hi: T, extent: Option<T>) -> DimensionSpec {
        DimensionSpec {
            name: name.to_string(),
            datatype: T::DATATYPE,
            domain: Some((le(lo), le(hi))),
            extent: extent.map(le),
            filters: FilterPipeline::new(Vec::new()),
        }
    }

    /// A string (`STRING_ASCII`) dimension: no domain, no extent.
    pub fn string(name: &str) -> DimensionSpec {
        DimensionSpec {
            name: name.to_string(),
            datatype: Datatype::StringAscii,
            domain: None,
            extent: None,
            filters: FilterPipeline::new(Vec::new()),
        }
    }

    /// The same dimension stored as `datatype`, e.g. `i64` bounds as
    /// `DATETIME_MS` (the sizes must agree; [`SchemaBuilder::build`] checks).
    pub fn with_datatype(mut self, datatype: Datatype) -> DimensionSpec {
        self.datatype = datatype;
        self
    }

    /// Its own filter pipeline.
    pub fn with_filters(mut self, filters: Vec<Filter>) -> DimensionSpec {
        self.filters = FilterPipeline::new(filters);
        self
    }
}

/// One attribute of a schema being built.
#[derive(Debug, Clone, PartialEq)]
pub struct AttributeSpec {
    /// The attribute's name.
    pub name: String,
    /// The type of each value.
    pub datatype: Datatype,
    /// Values per cell; `None` for var-sized cells.
    pub cell_val_num: Option<u32>,
    /// Cells may be null.
    pub nullable: bool,
    /// The fill value's bytes (one cell; any number of values when
    /// var-sized); `None` for TileDB's default.
    pub fill: Option<Vec<u8>>,
    /// The validity of the fill value (nullable attributes).
    pub fill_validity: bool,
    /// The filters of its data tiles.
    pub filters: FilterPipeline,
    /// The enumeration its values index.
    pub enumeration: Option<String>,
    /// The order of its values (only dimension labels' arrays have one).
    pub order: DataOrder,
}

impl AttributeSpec {
    /// An attribute of one `datatype` value per cell (var-sized for `ANY`,
    /// as TileDB makes it).
    pub fn new(name: &str, datatype: Datatype) -> AttributeSpec {
        AttributeSpec {
            name: name.to_string(),
            datatype,
            cell_val_num: if datatype == Datatype::Any {
                None
            } else {
                Some(1)
            },
            nullable: false,
            fill: None,
            fill_validity: false,
            filters: FilterPipeline::new(Vec::new()),
            enumeration: None,
            order: DataOrder::Unordered,
        }
    }

    /// `n` values per cell.
    pub fn with_cell_val_num(mut self, n: u32) -> AttributeSpec {
        self.cell_val_num = Some(n);
        self
    }

    /// Var-sized cells.
    pub fn var(mut self) -> AttributeSpec {
        self.cell_val_num = None;
        self
    }

    /// Cells may be null.
    pub fn nullable(mut self) -> AttributeSpec {
        self.nullable = true;
        self
    }

    /// The fill value's bytes, and its validity (nullable attributes).
    pub fn with_fill(mut self, fill: Vec<u8>, valid: bool) -> AttributeSpec {
        self.fill = Some(fill);
        self.fill_validity = valid;
        self
    }

    /// The filter pipeline of its data.
    pub fn with_filters(mut self, filters: Vec<Filter>) -> AttributeSpec {
        self.filters = FilterPipeline::new(filters);
        self
    }

    /// Its values index the enumeration `name`.
    pub fn with_enumeration(mut self, name: &str) -> AttributeSpec {
        self.enumeration = Some(name.to_string());
        self
    }
}

/// An enumeration of a schema being built.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumerationSpec {
    /// Its name, which attributes refer to.
    pub name: String,
    /// The type of its values.
    pub datatype: Datatype,
    /// Values per entry; `None` for var-sized entries (strings).
    pub cell_val_num: Option<u32>,
    /// The order of the values is meaningful.
    pub ordered: bool,
    /// The entries, each as its bytes.
    pub values: Vec<Vec<u8>>,
    /// The file name under `__schema/__enumerations/`; `None` makes a fresh
    /// one (`__<uuid>_0`) when built.
    pub path: Option<String>,
}

impl EnumerationSpec {
    /// An enumeration of strings (`STRING_UTF8`, var-sized).
    pub fn strings<S: AsRef<str>>(name: &str, values: &[S], ordered: bool) -> EnumerationSpec {
        EnumerationSpec {
            name: name.to_string(),
            datatype: Datatype::StringUtf8,
            cell_val_num: None,
            ordered,
            values: values
                .iter()
                .map(|v| v.as_ref().as_bytes().to_vec())
                .collect(),
            path: None,
        }
    }

    /// An enumeration of numbers typed by `T`.
    pub fn values<T: CellValue>(name: &str, values: &[T], ordered: bool) -> EnumerationSpec {
        EnumerationSpec {
            name: name.to_string(),
            datatype: T::DATATYPE,
            cell_val_num: Some(1),
            ordered,
            values: values.iter().map(|v| le(*v)).collect(),
            path: None,
        }
    }
}

/// A dimension label of a schema being built: an array beside the main one
/// (`__labels/l<i>`) mapping the labelled dimension's indices to labels.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelSpec {
    /// The label's name, unique among dimensions, attributes and labels.
    pub name: String,
    /// The index of the dimension it labels.
    pub dim_index: u32,
    /// Increasing or decreasing labels.
    pub order: DataOrder,
    /// The type of the labels.
    pub datatype: Datatype,
    /// Values per label; `None` for var-sized labels.
    pub cell_val_num: Option<u32>,
    /// Where the label array is; `None` for `__labels/l<i>`.
    pub uri: Option<String>,
    /// `uri` is relative to the array.
    pub relative_uri: bool,
    /// The attribute of the label array holding the labels.
    pub label_attr_name: String,
    /// The label array is not created with the array.
    pub is_external: bool,
}

impl LabelSpec {
    /// A label `name` of the dimension `dim_index`, of `datatype` values in
    /// `order`, in TileDB's default place.
    pub fn new(name: &str, dim_index: u32, order: DataOrder, datatype: Datatype) -> LabelSpec {
        LabelSpec {
            name: name.to_string(),
            dim_index,
            order,
            datatype,
            cell_val_num: if datatype.is_string() { None } else { Some(1) },
            uri: None,
            relative_uri: true,
            label_attr_name: "label".to_string(),
            is_external: false,
        }
    }
}

/// An array schema being described; [`SchemaBuilder::build`] checks it as
/// TileDB does and gives the stored form.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaBuilder {
    /// Dense or sparse.
    pub array_type: ArrayType,
    /// The order of the tiles (row- or column-major).
    pub tile_order: SchemaOrder,
    /// The order of the cells in a tile (row-, column-major, or Hilbert for sparse arrays).
    pub cell_order: SchemaOrder,
    /// Sparse arrays: the most cells a data tile holds.
    pub capacity: u64,
    /// Sparse arrays: several cells may share coordinates.
    pub allows_dups: bool,
    /// The pipeline of dimensions that have none of their own.
    pub coords_filters: FilterPipeline,
    /// The pipeline of the offsets of var-sized fields.
    pub offsets_filters: FilterPipeline,
    /// The pipeline of validity tiles.
    pub validity_filters: FilterPipeline,
    /// The dimensions, slowest first in row-major order.
    pub dimensions: Vec<DimensionSpec>,
    /// The attributes.
    pub attributes: Vec<AttributeSpec>,
    /// The enumerations attributes refer to.
    pub enumerations: Vec<EnumerationSpec>,
    /// The dimension labels.
    pub labels: Vec<LabelSpec>,
    /// The current domain: one `[lo, hi]` per dimension (bytes of one
    /// coordinate each; any length for string dimensions); `None` for none.
    pub current_domain: Option<Vec<(Vec<u8>, Vec<u8>)>>,
    /// The AES-256-GCM key of an encrypted array.
    pub encryption_key: Option<[u8; 32]>,
}

/// What [`SchemaBuilder::build`] gives: the stored schema and the files it
/// refers to.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltSchema {
    /// The schema, format 22.
    pub schema: stored::ArraySchema,
    /// The enumeration files, named by their `path`.
    pub enumerations: Vec<stored::Enumeration>,
    /// The schemas of the label arrays to create: `(uri, schema)`, the uri
    /// relative to the array.
    pub label_arrays: Vec<(String, stored::ArraySchema)>,
}

fn le<T: CellValue>(v: T) -> Vec<u8> {
    let mut out = Vec::new();
    v.put_le(&mut out);
    out
}

/// TileDB's default pipelines: ZSTD (level -1) for coordinates and offsets,
/// RLE (level -1) for validity (`constants.cc`).
fn default_pipeline(filter: Filter) -> FilterPipeline {
    FilterPipeline::new(vec![filter])
}

impl SchemaBuilder {
    /// A schema of `array_type` with TileDB's defaults: row-major orders,
    /// capacity 10,000, no duplicates, ZSTD coordinates and offsets, RLE
    /// validity.
    pub fn new(array_type: ArrayType) -> SchemaBuilder {
        SchemaBuilder {
            array_type,
            tile_order: SchemaOrder::RowMajor,
            cell_order: SchemaOrder::RowMajor,
            capacity: DEFAULT_CAPACITY,
            allows_dups: false,
            coords_filters: default_pipeline(Filter::Zstd { level: -1 }),
            offsets_filters: default_pipeline(Filter::Zstd { level: -1 }),
            validity_filters: default_pipeline(Filter::Rle { level: -1 }),
            dimensions: Vec::new(),
            attributes: Vec::new(),
            enumerations: Vec::new(),
            labels: Vec::new(),
            current_domain: None,
            encryption_key: None,
        }
    }

    /// A dense schema with TileDB's defaults.
    pub fn dense() -> SchemaBuilder {
        Self::new(ArrayType::Dense)
    }

    /// A sparse schema with TileDB's defaults.
    pub fn sparse() -> SchemaBuilder {
        Self::new(ArrayType::Sparse)
    }

    /// Adds a dimension.
    pub fn dimension(mut self, dimension: DimensionSpec) -> SchemaBuilder {
        self.dimensions.push(dimension);
        self
    }

    /// Adds an attribute.
    pub fn attribute(mut self, attribute: AttributeSpec) -> SchemaBuilder {
        self.attributes.push(attribute);
        self
    }

    /// Adds an enumeration.
    pub fn enumeration(mut self, enumeration: EnumerationSpec) -> SchemaBuilder {
        self.enumerations.push(enumeration);
        self
    }

    /// Adds a dimension label.
    pub fn label(mut self, label: LabelSpec) -> SchemaBuilder {
        self.labels.push(label);
        self
    }

    /// Sets the tile and cell orders.
    pub fn orders(mut self, tile_order: SchemaOrder, cell_order: SchemaOrder) -> SchemaBuilder {
        self.tile_order = tile_order;
        self.cell_order = cell_order;
        self
    }

    /// Sets the capacity of sparse data tiles.
    pub fn capacity(mut self, capacity: u64) -> SchemaBuilder {
        self.capacity = capacity;
        self
    }

    /// Allows (or not) duplicate coordinates.
    pub fn allows_dups(mut self, allows: bool) -> SchemaBuilder {
        self.allows_dups = allows;
        self
    }

    /// Sets the coordinates, offsets and validity pipelines.
    pub fn pipelines(
        mut self,
        coords: Vec<Filter>,
        offsets: Vec<Filter>,
        validity: Vec<Filter>,
    ) -> SchemaBuilder {
        self.coords_filters = FilterPipeline::new(coords);
        self.offsets_filters = FilterPipeline::new(offsets);
        self.validity_filters = FilterPipeline::new(validity);
        self
    }

    /// Sets the current domain, one `[lo, hi]` per dimension as bytes.
    pub fn current_domain(mut self, ranges: Vec<(Vec<u8>, Vec<u8>)>) -> SchemaBuilder {
        self.current_domain = Some(ranges);
        self
    }

    /// Encrypts the array with AES-256-GCM under `key`.
    pub fn encryption_key(mut self, key: [u8; 32]) -> SchemaBuilder {
        self.encryption_key = Some(key);
        self
    }

    /// The builder of a loaded schema (its stored form and the enumerations
    /// it loaded): [`Self::build`] gives the same stored schema back.
    pub fn from_schema(schema: &ArraySchema) -> Result<SchemaBuilder> {
        from_stored::builder_of(schema)
    }

    /// Checks the schema as TileDB does and builds its stored form. Every
    /// refusal is a `usage` error naming what is wrong.
    pub fn build(&self) -> Result<BuiltSchema> {
        validate::check(self)?;
        let enumerations = self.stored_enumerations()?;
        let mut schema = self.stored_schema()?;
        schema.enumerations = Some(
            enumerations
                .iter()
                .map(|e| stored::EnumerationRef {
                    name: e.name.clone(),
                    path: e.path.clone(),
                })
                .collect(),
        );
        let mut label_arrays = Vec::new();
        for (i, label) in schema.labels.iter().flatten().enumerate() {
            if !self.labels[i].is_external {
                label_arrays.push((
                    String::from_utf8_lossy(&label.uri).into_owned(),
                    label_schema(&schema, label)?,
                ));
            }
        }
        Ok(BuiltSchema {
            schema,
            enumerations,
            label_arrays,
        })
    }

    fn stored_schema(&self) -> Result<stored::ArraySchema> {
        let mut dimensions = Vec::new();
        for d in &self.dimensions {
            let extent = match (&d.extent, &d.domain) {
                (Some(e), _) => Some(e.clone()),
                // TileDB's `Domain::set_null_tile_extents_to_range` (called
                // by `ArraySchema::set_domain` unless the cell order is
                // Hilbert): a missing extent becomes the domain's range.
                (None, Some(domain)) if self.cell_order != SchemaOrder::Hilbert => {
                    Some(value::range_extent(d.datatype, &domain.0, &domain.1).ok_or_else(
                        || usage(format!("dimension {}: the domain spans its whole type, so it has no range to use as tile extent", d.name)),
                    )?)
                }
                (None, _) => None,
            };
            let mut domain = Vec::new();
            if let Some((lo, hi)) = &d.domain {
                domain.extend_from_slice(lo);
                domain.extend_from_slice(hi);
            }
            dimensions.push(stored::Dimension {
                name: d.name.as_bytes().to_vec(),
                datatype: d.datatype,
                cell_val_num: if d.datatype.is_string() { u32::MAX } else { 1 },
                filters: Some(d.filters.to_stored()),
                domain,
                null_extent: u8::from(extent.is_none()),
                extent,
            });
        }
        let webp_extents = webp_extents(&dimensions);
        let attributes = self
            .attributes
            .iter()
            .map(|a| stored_attribute(a, webp_extents))
            .collect();
        let mut schema = stored::ArraySchema {
            version: WRITE_FORMAT_VERSION,
            allows_dups: self.allows_dups,
            array_type: self.array_type,
            tile_order: self.tile_order.into(),
            cell_order: self.cell_order.into(),
            capacity: self.capacity,
            coords_filters: self.coords_filters.to_stored(),
            offsets_filters: self.offsets_filters.to_stored(),
            validity_filters: Some(self.validity_filters.to_stored()),
            domain: stored::Domain {
                datatype: None,
                dimensions,
            },
            attributes,
            labels: Some(
                self.labels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| stored_label(i, l))
                    .collect(),
            ),
            enumerations: Some(Vec::new()),
            // Fields of later versions take their defaults.
            ..Default::default()
        };
        schema.current_domain = Some(stored_current_domain(
            &schema,
            self.current_domain.as_deref(),
        )?);
        Ok(schema)
    }

    fn stored_enumerations(&self) -> Result<Vec<stored::Enumeration>> {
        let mut out = Vec::new();
        for e in &self.enumerations {
            let path = match &e.path {
                Some(p) => p.clone(),
                None => {
                    let (label, _) = crate::directory::timestamped_name::new_label()?;
                    format!("__{label}_0")
                }
            };
            let mut data = Vec::new();
            let mut offsets = Vec::new();
            for v in &e.values {
                offsets.extend((data.len() as u64).to_le_bytes());
                data.extend_from_slice(v);
            }
            out.push(stored::Enumeration {
                name: e.name.as_bytes().to_vec(),
                path: path.into_bytes(),
                datatype: e.datatype,
                cell_val_num: e.cell_val_num.unwrap_or(u32::MAX),
                ordered: e.ordered,
                data,
                offsets: e.cell_val_num.is_none().then_some(offsets),
            });
        }
        Ok(out)
    }
}

/// The `(rows, columns)` tile extents WEBP takes from the first two
/// dimensions (`ArraySchema::check_webp_filter` sets them on the filter).
fn webp_extents(dimensions: &[stored::Dimension]) -> (u16, u16) {
    let extent = |d: usize| -> u16 {
        dimensions
            .get(d)
            .and_then(|dim| dim.extent.as_ref())
            .map(|e| {
                let mut b = [0u8; 8];
                let n = e.len().min(8);
                b[..n].copy_from_slice(&e[..n]);
                u64::from_le_bytes(b) as u16
            })
            .unwrap_or(0)
    };
    (extent(0), extent(1))
}

fn stored_attribute(a: &AttributeSpec, webp: (u16, u16)) -> stored::Attribute {
    let fill = a.fill.clone().unwrap_or_else(|| {
        let one = value::default_fill(a.datatype);
        one.repeat(a.cell_val_num.unwrap_or(1) as usize)
    });
    let mut filters = a.filters.clone();
    for f in &mut filters.filters {
        if let Filter::Webp {
            y_extent, x_extent, ..
        } = f
        {
            (*y_extent, *x_extent) = webp;
        }
    }
    stored::Attribute {
        name: a.name.as_bytes().to_vec(),
        datatype: a.datatype,
        cell_val_num: a.cell_val_num.unwrap_or(u32::MAX),
        filters: filters.to_stored(),
        fill: Some(fill),
        nullable: a.nullable,
        fill_validity: u8::from(a.fill_validity),
        order: a.order,
        enumeration_name: Some(a.enumeration.clone().unwrap_or_default().into_bytes()),
    }
}

fn stored_label(i: usize, l: &LabelSpec) -> stored::DimensionLabel {
    stored::DimensionLabel {
        dim_index: l.dim_index,
        name: l.name.as_bytes().to_vec(),
        relative_uri: l.relative_uri,
        uri: l
            .uri
            .clone()
            .unwrap_or_else(|| format!("{LABELS_DIR}/l{i}"))
            .into_bytes(),
        label_attr_name: l.label_attr_name.as_bytes().to_vec(),
        label_order: l.order,
        label_datatype: l.datatype,
        label_cell_val_num: l.cell_val_num.unwrap_or(u32::MAX),
        is_external: l.is_external,
    }
}

/// The stored current domain: TileDB's empty one (`CurrentDomain::default()`)
/// when `ranges` is `None`, else an NDRectangle of one range per dimension
/// (a fixed-size range's `start_size` is its coordinate size, a var one's
/// the length of its lower bound). The one place the builder makes it.
pub fn stored_current_domain(
    schema: &stored::ArraySchema,
    ranges: Option<&[(Vec<u8>, Vec<u8>)]>,
) -> Result<stored::CurrentDomain> {
    let Some(ranges) = ranges else {
        return Ok(stored::CurrentDomain::default());
    };
    let shapes = dimension_shapes(schema);
    if ranges.len() != shapes.len() {
        return Err(usage(format!(
            "the current domain has {} ranges for {} dimensions",
            ranges.len(),
            shapes.len()
        )));
    }
    Ok(stored::CurrentDomain {
        empty: false,
        domain_type: Some(stored::CurrentDomainType::Ndrectangle),
        ndrectangle: Some(stored::NDRectangle {
            ranges: ranges
                .iter()
                .zip(&shapes)
                .map(|((lo, hi), shape)| stored::Range {
                    start_size: if shape.var {
                        lo.len() as u64
                    } else {
                        shape.coord_size
                    },
                    data: [lo.as_slice(), hi.as_slice()].concat(),
                })
                .collect(),
        }),
    })
}

/// The schema of a label's array (`__labels/l<i>`), as TileDB makes it:
/// dense, one dimension `index` shaped like the labelled one, one attribute
/// holding the labels in their order.
fn label_schema(
    main: &stored::ArraySchema,
    label: &stored::DimensionLabel,
) -> Result<stored::ArraySchema> {
    let mut dim = main
        .domain
        .dimensions
        .get(label.dim_index as usize)
        .cloned()
        .ok_or_else(|| usage("a label on a missing dimension"))?;
    dim.name = b"index".to_vec();
    dim.filters = Some(FilterPipeline::new(Vec::new()).to_stored());
    let mut schema = main.clone();
    schema.array_type = ArrayType::Dense;
    schema.tile_order = stored::Layout::RowMajor;
    schema.cell_order = stored::Layout::RowMajor;
    schema.capacity = DEFAULT_CAPACITY;
    schema.allows_dups = false;
    schema.coords_filters = default_pipeline(Filter::Zstd { level: -1 }).to_stored();
    schema.offsets_filters = default_pipeline(Filter::Zstd { level: -1 }).to_stored();
    schema.validity_filters = Some(default_pipeline(Filter::Rle { level: -1 }).to_stored());
    schema.domain.dimensions = vec![dim];
    let fill = value::default_fill(label.label_datatype);
    schema.attributes = vec![stored::Attribute {
        name: label.label_attr_name.clone(),
        datatype: label.label_datatype,
        cell_val_num: label.label_cell_val_num,
        filters: FilterPipeline::new(Vec::new()).to_stored(),
        fill: Some(fill),
        nullable: false,
        fill_validity: 0,
        order: label.label_order,
        enumeration_name: Some(Vec::new()),
    }];
    schema.labels = Some(Vec::new());
    schema.enumerations = Some(Vec::new());
    schema.current_domain = Some(stored_current_domain(&schema, None)?);
    Ok(schema)
}

pub(crate) fn usage(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}

mod from_stored;
mod validate;
