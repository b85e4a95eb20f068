//! Reads through a dimension label: the label array (`__labels/<uri>`, a
//! dense array mapping `index` to `label`) turns a label range into index
//! ranges on the labelled dimension; the result carries the label of each
//! cell first. On an N-D array the other dimensions stay whole, so a label
//! range selects the whole slab, as TileDB's label reads do.

use crate::error::{Cause, Error, Result};
use crate::read::query::{encode_scalar, ReadQuery};
use crate::read::result::{Column, ReadResult};
use crate::schema::Scalar;
use crate::snapshot::Snapshot;

/// Reads the cells of `array` whose label `label_name` lies in `[lo, hi]`;
/// `label_array` is the opened label array. Returns the label column as the
/// only "dimension" column, followed by the attributes of `query`.
pub fn read_by_label(
    array: &Snapshot,
    label_array: &Snapshot,
    label_name: &str,
    lo: &Scalar,
    hi: &Scalar,
    query: &ReadQuery,
) -> Result<ReadResult> {
    let schema = array.schema();
    let label = schema
        .labels
        .iter()
        .find(|l| l.name == label_name)
        .ok_or_else(|| Error::Usage(format!("no dimension label named {label_name:?}")))?;
    let dim = label.dim_index as usize;
    let dimension = schema.dimensions.get(dim).ok_or_else(|| {
        let cause = Cause::IndexOutOfRange {
            index: label.dim_index.into(),
            count: schema.dimensions.len() as u64,
        };
        Error::corrupt(0, "DimensionLabel.dim_index", cause)
    })?;
    let labels = crate::read::read(
        label_array,
        &ReadQuery {
            attributes: Some(vec![label.label_attr_name.clone()]),
            ..ReadQuery::default()
        },
    )?;
    let (Some(index_col), Some(label_col)) = (labels.dimensions.first(), labels.attributes.first())
    else {
        return Err(Error::corrupt(
            0,
            "label array",
            Cause::Missing {
                what: "the label array's index dimension or label attribute",
            },
        ));
    };
    let mut selected: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut by_index = std::collections::HashMap::new();
    for i in 0..label_col.len() {
        let (index_bytes, _) = index_col.cell(i);
        let (label_bytes, _) = label_col.cell(i);
        by_index.insert(index_bytes.to_vec(), label_bytes.to_vec());
        if let Some(v) = Scalar::decode(label_col.datatype, label_bytes) {
            if !v.compare(lo).is_lt() && !v.compare(hi).is_gt() {
                selected.push((index_bytes.to_vec(), index_bytes.to_vec()));
            }
        }
    }
    let mut out_label = Column::new(label_name, label.datatype, label.cell_val_num, false);
    if selected.is_empty() {
        let attrs = query
            .attributes
            .clone()
            .unwrap_or_else(|| schema.attributes.iter().map(|a| a.name.clone()).collect());
        let attributes = attrs
            .iter()
            .filter_map(|n| schema.attribute(n))
            .map(|(_, a)| Column::new(&a.name, a.datatype, a.cell_val_num, a.nullable))
            .collect();
        return Ok(ReadResult {
            dimensions: vec![out_label],
            attributes,
        });
    }
    let mut q = query.clone();
    q.ranges.resize(schema.dimensions.len(), Vec::new());
    q.ranges[dim] = selected;
    let result = crate::read::read(array, &q)?;
    let coords = &result.dimensions[dim];
    for i in 0..coords.len() {
        let (index, _) = coords.cell(i);
        let bytes = by_index
            .get(index)
            .cloned()
            .unwrap_or_else(|| encode_scalar(label.datatype, &Scalar::Int(0)).unwrap_or_default());
        out_label.push(&bytes, true);
    }
    let _ = dimension;
    Ok(ReadResult {
        dimensions: vec![out_label],
        attributes: result.attributes,
    })
}
