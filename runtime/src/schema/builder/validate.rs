//! The checks TileDB 2.30 makes before it creates an array, made on a
//! [`SchemaBuilder`]: each refusal a `usage` error naming the field and what
//! is wrong. Each rule names the TileDB function it follows (files under
//! `tiledb/sm/array_schema/` and `tiledb/sm/filter/` of TileDB 2.30.1).

use std::collections::HashSet;

use crate::error::Result;
use crate::filter::{Datatype, Filter, FilterPipeline};
use crate::format::generated::{ArrayType, DataOrder};

use super::{usage, AttributeSpec, DimensionSpec, EnumerationSpec, SchemaBuilder};
use crate::schema::value::{int_limits, Scalar};
use crate::schema::SchemaOrder;

/// Most dimensions a Hilbert cell order handles (spec/format.toml).
const HILBERT_MAX_DIMS: usize = crate::format::generated::HILBERT_MAX_DIMS as usize;
/// TileDB's default `sm.enumerations_max_size` and
/// `sm.enumerations_max_total_size` (spec/format.toml), which
/// `ArraySchema::check_enumerations` enforces.
use crate::format::generated::{ENUMERATIONS_MAX_TOTAL_SIZE, ENUMERATION_MAX_SIZE};

/// Every check, in the order TileDB meets them when a schema is assembled
/// and then created.
pub(crate) fn check(b: &SchemaBuilder) -> Result<()> {
    // array_schema.cc, check_without_config: "No dimensions provided".
    if b.dimensions.is_empty() {
        return Err(usage("the schema has no dimensions"));
    }
    check_orders(b)?;
    for d in &b.dimensions {
        check_dimension(d)?;
    }
    check_dense_domain(b)?;
    for a in &b.attributes {
        check_attribute(a)?;
    }
    check_enumerations(b)?;
    check_names(b)?;
    check_coords_filters(b)?;
    check_webp(b)?;
    check_labels(b)?;
    check_current_domain(b)
}

/// `ArraySchema::set_tile_order`, `set_cell_order`, `set_allows_dups`,
/// `set_capacity` and `check_without_config`.
fn check_orders(b: &SchemaBuilder) -> Result<()> {
    let dense = b.array_type == ArrayType::Dense;
    if b.tile_order == SchemaOrder::Hilbert {
        return Err(usage("the tile order cannot be Hilbert (cells only)"));
    }
    if dense && b.cell_order == SchemaOrder::Hilbert {
        return Err(usage(
            "the cell order of a dense array cannot be Hilbert (sparse arrays only)",
        ));
    }
    if b.cell_order == SchemaOrder::Hilbert && b.dimensions.len() > HILBERT_MAX_DIMS {
        return Err(usage(format!(
            "a Hilbert cell order handles at most {HILBERT_MAX_DIMS} dimensions, not {}",
            b.dimensions.len()
        )));
    }
    if dense && b.allows_dups {
        return Err(usage("a dense array cannot allow duplicate coordinates"));
    }
    if !dense && b.capacity == 0 {
        return Err(usage("the capacity of a sparse array cannot be 0"));
    }
    if dense && b.attributes.is_empty() {
        return Err(usage("a dense array needs at least one attribute"));
    }
    Ok(())
}

/// `ArraySchema::set_domain`: a dense array's dimensions share one integer,
/// date or time datatype (so no strings and no floats).
fn check_dense_domain(b: &SchemaBuilder) -> Result<()> {
    if b.array_type != ArrayType::Dense {
        return Ok(());
    }
    let first = b.dimensions[0].datatype;
    if let Some(d) = b.dimensions.iter().find(|d| d.datatype != first) {
        return Err(usage(format!(
            "dimension {}: the dimensions of a dense array must share one datatype ({} is not {})",
            d.name,
            d.datatype.name(),
            first.name()
        )));
    }
    if !(first.is_integer() || first.is_datetime() || first.is_time()) {
        return Err(usage(format!(
            "dimension {}: a dense array cannot have {} dimensions (integers, dates and times only)",
            b.dimensions[0].name,
            first.name()
        )));
    }
    Ok(())
}

/// `Dimension::ensure_datatype_is_supported`, `set_domain`,
/// `set_tile_extent`, `check_domain`, `check_tile_extent` (dimension.cc,
/// dimension.h), `set_filter_pipeline`.
fn check_dimension(d: &DimensionSpec) -> Result<()> {
    use Datatype::*;
    let name = &d.name;
    let t = d.datatype;
    if matches!(
        t,
        Char | Blob
            | GeomWkb
            | GeomWkt
            | Bool
            | StringUtf8
            | StringUtf16
            | StringUtf32
            | StringUcs2
            | StringUcs4
            | Any
    ) {
        return Err(usage(format!(
            "dimension {name}: {} is not a valid dimension datatype",
            t.name()
        )));
    }
    check_filter_types(&d.filters, t, t.is_string(), &format!("dimension {name}"))?;
    if t == StringAscii {
        if d.domain.is_some() || d.extent.is_some() {
            return Err(usage(format!(
                "dimension {name}: a string dimension has no domain and no tile extent"
            )));
        }
        return Ok(());
    }
    let Some((lo, hi)) = &d.domain else {
        return Err(usage(format!("dimension {name}: no domain")));
    };
    let size = t.size() as usize;
    if lo.len() != size || hi.len() != size || d.extent.as_ref().is_some_and(|e| e.len() != size) {
        return Err(usage(format!(
            "dimension {name}: the domain and extent must be {size}-byte {} values",
            t.name()
        )));
    }
    let (lo, hi) = (Scalar::decode(t, lo), Scalar::decode(t, hi));
    let extent = d.extent.as_ref().and_then(|e| Scalar::decode(t, e));
    match (lo, hi) {
        (Some(Scalar::Int(lo)), Some(Scalar::Int(hi))) => {
            check_int_domain(name, t, lo, hi, extent.and_then(|e| e.as_int()))
        }
        (Some(Scalar::Float(lo)), Some(Scalar::Float(hi))) => {
            check_float_domain(name, lo, hi, extent.and_then(|e| e.as_f64()))
        }
        _ => Err(usage(format!("dimension {name}: a domain of {}", t.name()))),
    }
}

fn check_int_domain(
    name: &str,
    t: Datatype,
    lo: i128,
    hi: i128,
    extent: Option<i128>,
) -> Result<()> {
    let (min, max) = int_limits(t).unwrap_or((i128::MIN, i128::MAX));
    if hi < lo {
        return Err(usage(format!(
            "dimension {name}: the domain [{lo}, {hi}] has its upper bound below its lower"
        )));
    }
    if lo == min && hi == max {
        return Err(usage(format!(
            "dimension {name}: the domain [{lo}, {hi}] spans the whole {} range",
            t.name()
        )));
    }
    let Some(extent) = extent else { return Ok(()) };
    let range = hi - lo + 1;
    if extent == 0 {
        return Err(usage(format!("dimension {name}: the tile extent is 0")));
    }
    // TileDB compares as unsigned 64-bit numbers, so a negative extent is
    // larger than any range.
    if extent < 0 || extent > range {
        return Err(usage(format!(
            "dimension {name}: the tile extent {extent} exceeds the domain's range [{lo}, {hi}]"
        )));
    }
    // check_tile_extent_upper_floor: the domain expanded to whole tiles
    // must stay representable.
    if range % extent != 0 {
        let upper_floor = ((range - 1) / extent) * extent + lo;
        let floor_max: i128 = if min < 0 {
            i64::MAX.into()
        } else {
            u64::MAX.into()
        };
        if upper_floor > floor_max - (extent - 1) || upper_floor > max {
            return Err(usage(format!(
                "dimension {name}: the domain's upper bound expanded to a whole tile of {extent} exceeds the largest {}",
                t.name()
            )));
        }
    }
    Ok(())
}

fn check_float_domain(name: &str, lo: f64, hi: f64, extent: Option<f64>) -> Result<()> {
    if !lo.is_finite() || !hi.is_finite() {
        return Err(usage(format!(
            "dimension {name}: the domain [{lo}, {hi}] is not finite"
        )));
    }
    if hi < lo {
        return Err(usage(format!(
            "dimension {name}: the domain [{lo}, {hi}] has its upper bound below its lower"
        )));
    }
    match extent {
        Some(e) if e.is_nan() || e <= 0.0 => Err(usage(format!(
            "dimension {name}: the tile extent {e} is not greater than 0"
        ))),
        Some(e) if e > hi - lo + 1.0 => Err(usage(format!(
            "dimension {name}: the tile extent {e} exceeds the domain's range [{lo}, {hi}]"
        ))),
        _ => Ok(()),
    }
}

/// `Attribute::validate_cell_val_num`, `set_nullable`, `set_fill_value`,
/// `set_filter_pipeline` (attribute.cc); `ArraySchema::add_attribute`
/// (reserved names).
fn check_attribute(a: &AttributeSpec) -> Result<()> {
    let name = &a.name;
    if name.starts_with("__") {
        return Err(usage(format!(
            "attribute {name}: names starting with '__' are reserved"
        )));
    }
    if a.datatype == Datatype::Any && a.cell_val_num.is_some() {
        return Err(usage(format!(
            "attribute {name}: an ANY attribute is always var-sized"
        )));
    }
    if a.order != DataOrder::Unordered {
        let ok = if a.datatype == Datatype::StringAscii {
            a.cell_val_num.is_none()
        } else {
            a.cell_val_num == Some(1)
        };
        if !ok || a.nullable {
            return Err(usage(format!(
                "attribute {name}: an ordered attribute has one value per cell (var-sized for STRING_ASCII) and no nulls"
            )));
        }
    }
    if a.cell_val_num == Some(0) {
        return Err(usage(format!("attribute {name}: zero values per cell")));
    }
    if let Some(fill) = &a.fill {
        if fill.is_empty() {
            return Err(usage(format!("attribute {name}: an empty fill value")));
        }
        let cell = a.cell_val_num.map(|n| u64::from(n) * a.datatype.size());
        if cell.is_some_and(|c| c != fill.len() as u64) {
            return Err(usage(format!(
                "attribute {name}: the fill value has {} bytes, a cell {}",
                fill.len(),
                cell.unwrap_or(0)
            )));
        }
    }
    if a.fill_validity && !a.nullable {
        return Err(usage(format!(
            "attribute {name}: a fill validity on an attribute that is not nullable"
        )));
    }
    if a.enumeration.as_ref().is_some_and(String::is_empty) {
        return Err(usage(format!(
            "attribute {name}: an empty enumeration name"
        )));
    }
    check_filter_types(
        &a.filters,
        a.datatype,
        a.cell_val_num.is_none(),
        &format!("attribute {name}"),
    )
}

/// `ArraySchema::check_attribute_dimension_label_names`.
fn check_names(b: &SchemaBuilder) -> Result<()> {
    let mut seen = HashSet::new();
    let names = b
        .dimensions
        .iter()
        .map(|d| &d.name)
        .chain(b.attributes.iter().map(|a| &a.name))
        .chain(b.labels.iter().map(|l| &l.name));
    for n in names {
        if !seen.insert(n) {
            return Err(usage(format!(
                "the name {n} is used twice: dimensions, attributes and labels need unique names"
            )));
        }
    }
    Ok(())
}

/// `ArraySchema::check_double_delta_compressor` and
/// `check_string_compressor`, on the coordinates pipeline for the
/// dimensions that inherit it.
fn check_coords_filters(b: &SchemaBuilder) -> Result<()> {
    let coords = &b.coords_filters.filters;
    let has = |want: fn(&Filter) -> bool| coords.iter().any(want);
    for d in b.dimensions.iter().filter(|d| d.filters.filters.is_empty()) {
        if d.datatype.is_real() && has(|f| matches!(f, Filter::DoubleDelta { .. })) {
            return Err(usage(format!(
                "dimension {}: a float dimension cannot inherit coordinate filters with DOUBLE_DELTA",
                d.name
            )));
        }
        if d.datatype == Datatype::StringAscii && coords.len() > 1 {
            for (what, is) in [
                (
                    "RLE",
                    (|f: &Filter| matches!(f, Filter::Rle { .. })) as fn(&Filter) -> bool,
                ),
                ("DICTIONARY", |f: &Filter| {
                    matches!(f, Filter::Dictionary { .. })
                }),
            ] {
                if has(is) && !is(&coords[0]) {
                    return Err(usage(format!(
                        "coordinate filters: {what} must come first for the string dimension {}",
                        d.name
                    )));
                }
            }
        }
    }
    Ok(())
}

/// `ArraySchema::check_webp_filter`.
fn check_webp(b: &SchemaBuilder) -> Result<()> {
    let webp = b.attributes.iter().find(|a| {
        a.filters
            .filters
            .iter()
            .any(|f| matches!(f, Filter::Webp { .. }))
    });
    let Some(a) = webp else { return Ok(()) };
    let dims = &b.dimensions;
    if b.array_type != ArrayType::Dense
        || dims.len() != 2
        || dims[0].datatype != dims[1].datatype
        || !dims[0].datatype.is_integer()
    {
        return Err(usage(format!(
            "attribute {}: WEBP needs a dense array of exactly 2 integer dimensions of one type",
            a.name
        )));
    }
    Ok(())
}

/// `FilterPipeline::check_filter_types` with each filter's
/// `accepts_input_datatype` and `output_datatype`, and the option checks
/// of `FloatScalingFilter::set_option_impl`.
fn check_filter_types(
    pipeline: &FilterPipeline,
    t: Datatype,
    var: bool,
    field: &str,
) -> Result<()> {
    let filters = &pipeline.filters;
    if filters.is_empty() {
        return Ok(());
    }
    if matches!(t, Datatype::StringAscii | Datatype::StringUtf8) && var && filters.len() > 1 {
        for (what, is) in [
            (
                "RLE",
                (|f: &Filter| matches!(f, Filter::Rle { .. })) as fn(&Filter) -> bool,
            ),
            ("DICTIONARY", |f: &Filter| {
                matches!(f, Filter::Dictionary { .. })
            }),
        ] {
            if filters.iter().any(is) && !is(&filters[0]) {
                return Err(usage(format!(
                    "{field}: {what} must be the first filter of a var-sized string"
                )));
            }
        }
    }
    let mut input = t;
    for f in filters {
        if let Filter::ScaleFloat {
            scale,
            offset,
            byte_width,
        } = f
        {
            if !matches!(byte_width, 1 | 2 | 4 | 8) {
                return Err(usage(format!(
                    "{field}: SCALE_FLOAT byte width {byte_width} is not 1, 2, 4 or 8"
                )));
            }
            if !scale.is_normal() {
                return Err(usage(format!(
                    "{field}: SCALE_FLOAT factor {scale} is zero, subnormal, infinite or NaN"
                )));
            }
            if !offset.is_finite() {
                return Err(usage(format!(
                    "{field}: SCALE_FLOAT offset {offset} is not finite"
                )));
            }
        }
        if !accepts(f, input) {
            return Err(usage(format!(
                "{field}: {} does not accept {} input",
                f.filter_type().name(),
                input.name()
            )));
        }
        input = output(f, input);
    }
    Ok(())
}

fn accepts(f: &Filter, t: Datatype) -> bool {
    let size = t.size();
    match f {
        Filter::Delta { reinterpret, .. } | Filter::DoubleDelta { reinterpret, .. } => {
            let r = reinterpret.filter(|r| *r != Datatype::Any);
            !r.unwrap_or(t).is_real()
                && r.is_none_or(|r| r.size() != 0 && size.is_multiple_of(r.size()))
        }
        Filter::BitWidthReduction { .. } | Filter::PositiveDelta { .. } => {
            t.is_integer() || t.is_datetime() || t.is_time() || t.is_byte()
        }
        Filter::ScaleFloat { .. } => size == 4 || size == 8,
        Filter::Webp { .. } => t == Datatype::Uint8,
        Filter::Xor => matches!(size, 1 | 2 | 4 | 8),
        _ => true,
    }
}

fn int_of_size(size: u64) -> Datatype {
    match size {
        1 => Datatype::Int8,
        2 => Datatype::Int16,
        4 => Datatype::Int32,
        _ => Datatype::Int64,
    }
}

fn output(f: &Filter, t: Datatype) -> Datatype {
    match f {
        Filter::Delta { reinterpret, .. } | Filter::DoubleDelta { reinterpret, .. } => {
            reinterpret.filter(|r| *r != Datatype::Any).unwrap_or(t)
        }
        Filter::ScaleFloat { byte_width, .. } => int_of_size(*byte_width),
        Filter::Xor => int_of_size(t.size()),
        _ => t,
    }
}

/// The `Enumeration` constructor and `validate` (enumeration.cc),
/// `ArraySchema::add_enumeration`, `add_attribute` (an attribute's
/// enumeration) and `check_enumerations` (sizes).
fn check_enumerations(b: &SchemaBuilder) -> Result<()> {
    let mut names = HashSet::new();
    let mut total = 0u64;
    for e in &b.enumerations {
        check_enumeration(e)?;
        if !names.insert(&e.name) {
            return Err(usage(format!("enumeration {} is defined twice", e.name)));
        }
        let size: u64 = e.values.iter().map(|v| v.len() as u64).sum::<u64>()
            + if e.cell_val_num.is_none() {
                8 * e.values.len() as u64
            } else {
                0
            };
        if size > ENUMERATION_MAX_SIZE {
            return Err(usage(format!(
                "enumeration {}: {size} bytes exceed {ENUMERATION_MAX_SIZE}",
                e.name
            )));
        }
        total += size;
    }
    if total > ENUMERATIONS_MAX_TOTAL_SIZE {
        return Err(usage(format!(
            "the enumerations hold {total} bytes, more than {ENUMERATIONS_MAX_TOTAL_SIZE}"
        )));
    }
    for a in &b.attributes {
        let Some(name) = &a.enumeration else { continue };
        let Some(e) = b.enumerations.iter().find(|e| &e.name == name) else {
            return Err(usage(format!(
                "attribute {}: no enumeration named {name}",
                a.name
            )));
        };
        if !a.datatype.is_integer() || a.cell_val_num != Some(1) {
            return Err(usage(format!(
                "attribute {}: an attribute with an enumeration holds one integer per cell",
                a.name
            )));
        }
        let max = int_limits(a.datatype).map_or(0, |(_, max)| max);
        if max <= e.values.len() as i128 {
            return Err(usage(format!(
                "attribute {}: {} cannot index the {} values of enumeration {name}",
                a.name,
                a.datatype.name(),
                e.values.len()
            )));
        }
    }
    Ok(())
}

fn check_enumeration(e: &EnumerationSpec) -> Result<()> {
    let name = &e.name;
    if name.is_empty() {
        return Err(usage("an enumeration without a name"));
    }
    if e.path
        .as_ref()
        .is_some_and(|p| p.contains('/') || p.is_empty())
    {
        return Err(usage(format!(
            "enumeration {name}: its file name must be one path component"
        )));
    }
    match e.cell_val_num {
        Some(0) => return Err(usage(format!("enumeration {name}: zero values per entry"))),
        Some(n) => {
            let size = u64::from(n) * e.datatype.size();
            if e.values.is_empty() || e.values.iter().any(|v| v.len() as u64 != size) {
                return Err(usage(format!(
                    "enumeration {name}: fixed-size entries of {size} bytes, at least one"
                )));
            }
        }
        None if e.values.is_empty() => {
            return Err(usage(format!("enumeration {name}: no values")));
        }
        None => {}
    }
    let mut seen = HashSet::new();
    if let Some(v) = e.values.iter().find(|v| !seen.insert(v.as_slice())) {
        return Err(usage(format!(
            "enumeration {name}: the value {:?} appears twice",
            String::from_utf8_lossy(v)
        )));
    }
    Ok(())
}

/// `ArraySchema::add_dimension_label`.
fn check_labels(b: &SchemaBuilder) -> Result<()> {
    for l in &b.labels {
        if l.order == DataOrder::Unordered {
            return Err(usage(format!(
                "label {}: unordered dimension labels are not supported",
                l.name
            )));
        }
        if l.dim_index as usize >= b.dimensions.len() {
            return Err(usage(format!(
                "label {}: no dimension {}",
                l.name, l.dim_index
            )));
        }
    }
    Ok(())
}

/// `CurrentDomain::check_schema_sanity` (current_domain.cc), which
/// `Array::create` calls: one range per dimension, each inside the domain.
fn check_current_domain(b: &SchemaBuilder) -> Result<()> {
    let Some(ranges) = &b.current_domain else {
        return Ok(());
    };
    if ranges.len() != b.dimensions.len() {
        return Err(usage(format!(
            "the current domain has {} ranges for {} dimensions",
            ranges.len(),
            b.dimensions.len()
        )));
    }
    for (d, (lo, hi)) in b.dimensions.iter().zip(ranges) {
        let t = d.datatype;
        let (Some(l), Some(h)) = (Scalar::decode(t, lo), Scalar::decode(t, hi)) else {
            return Err(usage(format!(
                "dimension {}: a current-domain range of another type",
                d.name
            )));
        };
        if !t.is_string() && (lo.len() as u64 != t.size() || hi.len() as u64 != t.size()) {
            return Err(usage(format!(
                "dimension {}: a current-domain bound is not one {}",
                d.name,
                t.name()
            )));
        }
        if h.compare(&l).is_lt() {
            return Err(usage(format!(
                "dimension {}: the current-domain range has its upper bound below its lower",
                d.name
            )));
        }
        if let Some((dlo, dhi)) = &d.domain {
            let (dlo, dhi) = (Scalar::decode(t, dlo), Scalar::decode(t, dhi));
            if dlo.is_some_and(|dlo| l.compare(&dlo).is_lt())
                || dhi.is_some_and(|dhi| h.compare(&dhi).is_gt())
            {
                return Err(usage(format!(
                    "dimension {}: the current domain reaches past the domain",
                    d.name
                )));
            }
        }
    }
    Ok(())
}
