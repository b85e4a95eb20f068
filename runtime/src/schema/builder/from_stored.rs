//! A loaded schema back into a builder: its stored form, and the
//! enumerations it loaded, field by field.

use super::*;
use crate::schema::split_range;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn pipeline(p: &stored::FilterPipeline) -> Result<FilterPipeline> {
    FilterPipeline::from_stored(p)
}

fn cvn(n: u32) -> Option<u32> {
    (n != u32::MAX).then_some(n)
}

pub(super) fn builder_of(schema: &ArraySchema) -> Result<SchemaBuilder> {
    let s = &schema.stored;
    let mut dimensions = Vec::new();
    for d in &s.domain.dimensions {
        let var = d.cell_val_num == u32::MAX;
        let domain = if var || d.domain.is_empty() {
            None
        } else {
            let half = d.domain.len() / 2;
            Some((d.domain[..half].to_vec(), d.domain[half..].to_vec()))
        };
        dimensions.push(DimensionSpec {
            name: text(&d.name),
            datatype: d.datatype,
            domain,
            extent: d.extent.clone(),
            filters: match &d.filters {
                Some(p) => pipeline(p)?,
                None => FilterPipeline::new(Vec::new()),
            },
        });
    }
    let mut attributes = Vec::new();
    for a in &s.attributes {
        attributes.push(AttributeSpec {
            name: text(&a.name),
            datatype: a.datatype,
            cell_val_num: cvn(a.cell_val_num),
            nullable: a.nullable,
            fill: a.fill.clone(),
            fill_validity: a.fill_validity != 0,
            filters: pipeline(&a.filters)?,
            enumeration: a
                .enumeration_name
                .as_ref()
                .filter(|n| !n.is_empty())
                .map(|n| text(n)),
            order: a.order,
        });
    }
    let mut enumerations = Vec::new();
    for r in s.enumerations.iter().flatten() {
        let name = text(&r.name);
        let loaded = schema.enumeration(&name).ok_or_else(|| {
            usage(format!(
                "enumeration {name} is not loaded (load the schema with its enumerations)"
            ))
        })?;
        enumerations.push(EnumerationSpec {
            name,
            datatype: loaded.datatype,
            cell_val_num: loaded.cell_val_num,
            ordered: loaded.ordered,
            values: loaded.values.clone(),
            path: Some(text(&r.path)),
        });
    }
    let labels = s
        .labels
        .iter()
        .flatten()
        .map(|l| LabelSpec {
            name: text(&l.name),
            dim_index: l.dim_index,
            order: l.label_order,
            datatype: l.label_datatype,
            cell_val_num: cvn(l.label_cell_val_num),
            uri: Some(text(&l.uri)),
            relative_uri: l.relative_uri,
            label_attr_name: text(&l.label_attr_name),
            is_external: l.is_external,
        })
        .collect();
    let current_domain = match &schema.current_domain {
        None => None,
        Some(_) => Some(current_domain_ranges(s)?),
    };
    Ok(SchemaBuilder {
        array_type: s.array_type,
        tile_order: schema.tile_order,
        cell_order: schema.cell_order,
        capacity: s.capacity,
        allows_dups: s.allows_dups,
        coords_filters: pipeline(&s.coords_filters)?,
        offsets_filters: pipeline(&s.offsets_filters)?,
        validity_filters: match &s.validity_filters {
            Some(p) => pipeline(p)?,
            None => FilterPipeline::new(Vec::new()),
        },
        dimensions,
        attributes,
        enumerations,
        labels,
        current_domain,
        encryption_key: None,
    })
}

/// The ranges of a stored non-empty current domain, var ranges split at
/// their `start_size`.
fn current_domain_ranges(s: &stored::ArraySchema) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let dims = dimension_shapes(s);
    let Some(cd) = s.current_domain.clone() else {
        return Ok(Vec::new());
    };
    let rect = cd
        .ndrectangle
        .unwrap_or(stored::NDRectangle { ranges: Vec::new() });
    rect.ranges
        .iter()
        .zip(&dims)
        .map(|(r, d)| split_range(r, (!d.var).then_some(d.coord_size)))
        .collect()
}
