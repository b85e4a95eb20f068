//! What a read asks for: [`ReadQuery`] (ranges per dimension, [`ResultOrder`],
//! fields), shared by the dense and the sparse readers, with the helpers
//! both use to decode it against a schema.

use crate::error::{Error, Result};
use crate::filter::Datatype;
use crate::schema::{ArraySchema, Scalar};

/// The order of the result cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResultOrder {
    #[default]
    /// The last dimension varies fastest.
    RowMajor,
    /// The first dimension varies fastest.
    ColMajor,
    /// Tile order, then cell order (Hilbert for Hilbert-ordered arrays).
    Global,
    /// Any order (this reader returns the global order).
    Unordered,
}

impl ResultOrder {
    /// Parses the names the conformance cases and `tdb` use: `row-major`, `col-major`, `global`, `unordered`.
    pub fn parse(text: &str) -> Option<ResultOrder> {
        Some(match text {
            "row-major" => ResultOrder::RowMajor,
            "col-major" => ResultOrder::ColMajor,
            "global" => ResultOrder::Global,
            "unordered" => ResultOrder::Unordered,
            _ => return None,
        })
    }
}

/// An inclusive range of one dimension, as the dimension's value bytes
/// (little-endian numbers, or the bytes of a string).
pub type Range = (Vec<u8>, Vec<u8>);

/// What to read.
#[derive(Debug, Clone, Default)]
pub struct ReadQuery {
    /// Per dimension, the ranges to read (several = multi-range). A missing
    /// or empty entry means the whole domain (dense) or every cell (sparse).
    pub ranges: Vec<Vec<Range>>,
    /// The order of the result cells.
    pub layout: ResultOrder,
    /// The attributes to return, in this order; `None` = all, in schema order.
    pub attributes: Option<Vec<String>>,
    /// Leave the result's `dimensions` empty (a dense read then never
    /// builds the coordinates at all).
    pub skip_coordinates: bool,
}

/// The bytes of a value of `datatype` given as a scalar (for building
/// ranges); `None` when the value is not one of `datatype` (a float for an
/// integer type, an integer out of range or one a float type cannot hold
/// exactly). A float for `FLOAT32` is rounded to the nearest `f32`, as the
/// text `0.1` means. The typed API ([`crate::read::typed`]) is stricter.
pub fn encode_scalar(datatype: Datatype, value: &Scalar) -> Option<Vec<u8>> {
    use Datatype::*;
    Some(match value {
        Scalar::Bytes(b) => b.clone(),
        Scalar::Float(f) => match datatype {
            Float32 => (*f as f32).to_le_bytes().to_vec(),
            Float64 => f.to_le_bytes().to_vec(),
            _ => return None,
        },
        Scalar::Int(v) => {
            let v = *v;
            match datatype {
                Int8 | Char => i8::try_from(v).ok()?.to_le_bytes().to_vec(),
                Uint8 | Bool => u8::try_from(v).ok()?.to_le_bytes().to_vec(),
                Int16 => i16::try_from(v).ok()?.to_le_bytes().to_vec(),
                Uint16 => u16::try_from(v).ok()?.to_le_bytes().to_vec(),
                Int32 => i32::try_from(v).ok()?.to_le_bytes().to_vec(),
                Uint32 => u32::try_from(v).ok()?.to_le_bytes().to_vec(),
                Uint64 => u64::try_from(v).ok()?.to_le_bytes().to_vec(),
                // Only integers the float holds exactly: never a rounded bound.
                Float32 => {
                    let f = v as f32;
                    (f as i128 == v).then(|| f.to_le_bytes().to_vec())?
                }
                Float64 => {
                    let f = v as f64;
                    (f as i128 == v).then(|| f.to_le_bytes().to_vec())?
                }
                _ => i64::try_from(v).ok()?.to_le_bytes().to_vec(),
            }
        }
    })
}

/// Decoded ranges of the query, per dimension (empty = everything).
pub(crate) fn decode_ranges(
    schema: &ArraySchema,
    query: &ReadQuery,
) -> Result<Vec<Vec<(Scalar, Scalar)>>> {
    if query.ranges.len() > schema.dimensions.len() {
        return Err(Error::Usage(format!(
            "{} range lists for {} dimensions",
            query.ranges.len(),
            schema.dimensions.len()
        )));
    }
    schema
        .dimensions
        .iter()
        .enumerate()
        .map(|(d, dim)| {
            query
                .ranges
                .get(d)
                .map(|ranges| {
                    ranges
                        .iter()
                        .map(|(lo, hi)| {
                            // A bound of another size is a value of another
                            // type (f64 bytes on an INT32 dimension): refuse
                            // it rather than read its first bytes.
                            let size = dim.coord_size() as usize;
                            if !dim.var && (lo.len() != size || hi.len() != size) {
                                return Err(Error::Usage(format!(
                                    "a range of dimension {} has {}- and {}-byte bounds; its {} values are {size} bytes",
                                    dim.name,
                                    lo.len(),
                                    hi.len(),
                                    dim.datatype.name()
                                )));
                            }
                            let lo = Scalar::decode(dim.datatype, lo);
                            let hi = Scalar::decode(dim.datatype, hi);
                            match (lo, hi) {
                                (Some(lo), Some(hi)) => Ok((lo, hi)),
                                _ => Err(Error::Usage(format!(
                                    "a range of dimension {} has the wrong size",
                                    dim.name
                                ))),
                            }
                        })
                        .collect::<Result<Vec<_>>>()
                })
                .unwrap_or(Ok(Vec::new()))
        })
        .collect()
}

/// The attributes a query returns, by name, in order.
pub(crate) fn output_attributes(schema: &ArraySchema, query: &ReadQuery) -> Result<Vec<usize>> {
    match &query.attributes {
        None => Ok((0..schema.attributes.len()).collect()),
        Some(names) => names
            .iter()
            .map(|n| {
                schema
                    .attribute(n)
                    .map(|(i, _)| i)
                    .ok_or_else(|| Error::Usage(format!("no attribute named {n:?}")))
            })
            .collect(),
    }
}
