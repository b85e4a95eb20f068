//! Writing dimension labels: a write's columns named after a label become
//! a fragment of that label's array (`__labels/l<i>`), over the labelled
//! dimension's range of the write's subarray — as TileDB's ordered
//! `DimensionLabelQuery` writes them, with its checks: one label per index
//! of the range, of the label's type, strictly increasing or decreasing
//! (as the label's order says) within the write.
//!
//! The label fragments are written before the array's own, as TileDB
//! writes them; every check (the array's write included) passes before
//! anything is written.

use std::borrow::Cow;

use crate::directory::ArrayDirectory;
use crate::error::{Error, Result};
use crate::format::generated::DataOrder;
use crate::schema::{ArraySchema, DimensionLabel, Scalar};
use crate::storage::{RelPath, Storage, SubStorage};

use super::fragment::{write_fragment, Column, FragmentInput};
use super::validate::Write;

fn usage(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}

/// One label's fragment, checked and ready to write.
pub(crate) struct LabelFragment {
    uri: RelPath,
    schema: ArraySchema,
    input: FragmentInput,
}

/// `write` without its label columns, and the label fragments they make,
/// each checked.
pub(crate) fn split_labels<'w>(
    storage: &dyn Storage,
    schema: &ArraySchema,
    write: &'w Write,
    key: Option<&[u8; 32]>,
) -> Result<(Cow<'w, Write>, Vec<LabelFragment>)> {
    let is_label = |c: &Column| schema.labels.iter().any(|l| l.name == c.name);
    if !write.columns.iter().any(is_label) {
        // The write itself, uncopied: its columns may be gigabytes.
        return Ok((Cow::Borrowed(write), Vec::new()));
    }
    let main = Write {
        layout: write.layout,
        subarray: write.subarray.clone(),
        columns: write
            .columns
            .iter()
            .filter(|c| !is_label(c))
            .cloned()
            .collect(),
        timestamp: write.timestamp,
    };
    let mut fragments = Vec::new();
    for column in write.columns.iter().filter(|c| is_label(c)) {
        let label = schema
            .labels
            .iter()
            .find(|l| l.name == column.name)
            .ok_or_else(|| usage(format!("no dimension label {}", column.name)))?;
        fragments.push(label_fragment(storage, schema, write, label, column, key)?);
    }
    Ok((Cow::Owned(main), fragments))
}

fn label_fragment(
    storage: &dyn Storage,
    schema: &ArraySchema,
    write: &Write,
    label: &DimensionLabel,
    column: &Column,
    key: Option<&[u8; 32]>,
) -> Result<LabelFragment> {
    let name = &label.name;
    if !schema.is_dense() {
        return Err(Error::unsupported(
            "writing dimension labels with a sparse array's cells",
        ));
    }
    if !label.relative_uri {
        return Err(Error::unsupported("writing an external dimension label"));
    }
    let range = write
        .subarray
        .as_ref()
        .and_then(|s| s.get(label.dim_index as usize))
        .copied()
        .ok_or_else(|| {
            usage(format!(
                "label {name}: the write has no subarray for its dimension"
            ))
        })?;
    if column.datatype != label.datatype || column.cell_val_num != label.cell_val_num {
        return Err(usage(format!(
            "label {name}: the column holds {}, the label is {}",
            column.datatype.name(),
            label.datatype.name()
        )));
    }
    if column.validity.is_some() {
        return Err(usage(format!("label {name}: labels are not nullable")));
    }
    let expected = u128::try_from(range.1 - range.0 + 1).unwrap_or(0);
    if column.len() as u128 != expected {
        return Err(usage(format!(
            "label {name}: {} labels for the {expected} indexes of the subarray",
            column.len()
        )));
    }
    check_order(label, column)?;
    let uri = RelPath::parse(&label.uri)?;
    let label_storage = SubStorage::new(storage, uri.clone());
    let dir = ArrayDirectory::open(&label_storage, 0, u64::MAX)?;
    let label_schema = ArraySchema::load(&label_storage, &dir.latest_schema().path, key)?;
    let mut labels = column.clone();
    labels.name.clone_from(&label.label_attr_name);
    Ok(LabelFragment {
        uri,
        schema: label_schema,
        input: FragmentInput {
            timestamp: write.timestamp,
            attrs: vec![labels],
            subarray: Some(vec![range]),
            key: key.copied(),
            ..FragmentInput::default()
        },
    })
}

/// Strictly increasing or decreasing labels, as the label's order says
/// (`WriterBase`: "not in the expected order").
fn check_order(label: &DimensionLabel, column: &Column) -> Result<()> {
    let increasing = match label.order {
        DataOrder::Increasing => true,
        DataOrder::Decreasing => false,
        DataOrder::Unordered => {
            return Err(Error::unsupported("writing an unordered dimension label"))
        }
    };
    let mut previous: Option<Scalar> = None;
    for i in 0..column.len() {
        let value = Scalar::decode(column.datatype, column.cell_bytes(i)).ok_or_else(|| {
            usage(format!(
                "label {}: cell {i} is not a {}",
                label.name,
                column.datatype.name()
            ))
        })?;
        if let Some(p) = &previous {
            let order = value.compare(p);
            if (increasing && !order.is_gt()) || (!increasing && !order.is_lt()) {
                return Err(usage(format!(
                    "label {}: the labels are not strictly {} (cell {i})",
                    label.name,
                    if increasing {
                        "increasing"
                    } else {
                        "decreasing"
                    }
                )));
            }
        }
        previous = Some(value);
    }
    Ok(())
}

/// Writes the label fragments (each into its label's array).
pub(crate) fn write_labels(storage: &dyn Storage, fragments: &[LabelFragment]) -> Result<()> {
    for f in fragments {
        let label_storage = SubStorage::new(storage, f.uri.clone());
        write_fragment(&label_storage, &f.schema, &f.input)?;
    }
    Ok(())
}
