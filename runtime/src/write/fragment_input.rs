//! What one write puts in a fragment: its columns of cells, and for
//! consolidation their timestamps and delete metadata.

pub use crate::column::Column;
use crate::error::Error;

/// What one write puts in a fragment.
#[derive(Debug, Clone, Default)]
pub struct FragmentInput {
    /// `t1 = t2` of the fragment's name, in milliseconds (0 means now).
    pub timestamp: u64,
    /// Sparse: one column per dimension, cells in any order.
    pub dims: Vec<Column>,
    /// One column per attribute of the schema, in schema order, each of
    /// the attribute's shape (a nullable attribute's column has validity).
    pub attrs: Vec<Column>,
    /// Dense: the inclusive `[lo, hi]` written, per dimension.
    pub subarray: Option<Vec<(i128, i128)>>,
    /// Dense: the cells are given in column-major order of the subarray.
    pub col_major: bool,
    /// Dense: the cells are given in global order, tile after tile (the
    /// subarray on space tile bounds); each tile is then read in place.
    pub global_order: bool,
    /// Sparse, consolidation: each cell's write timestamp, stored as the
    /// `t` field (`has_timestamps`). Equal coordinates are then kept, newest
    /// first.
    pub timestamps: Option<Vec<u64>>,
    /// Sparse, consolidation: per-cell delete metadata, stored as the `dt`
    /// and `dci` fields (`has_delete_meta`). The indexes refer to the
    /// `processed` list given to
    /// [`write_fragment_named`](super::fragment::write_fragment_named).
    pub delete_meta: Option<DeleteMeta>,
    /// Dense, consolidation: the non-empty domain to record when it is
    /// smaller than the subarray written (TileDB rewrites whole tiles but
    /// keeps the union of the inputs' domains).
    pub non_empty_domain: Option<Vec<(i128, i128)>>,
    /// The AES-256-GCM key of an encrypted array: every tile and generic
    /// tile is then encrypted (the footer never is).
    pub key: Option<[u8; 32]>,
    /// The unfiltered bytes of the tiles built (and held) at once; `None`
    /// for 64 MiB.
    /// The fragment written is the same whatever the value.
    pub tile_group_bytes: Option<u64>,
}

/// The columns of a fragment, borrowed: the attributes in schema order and
/// (sparse) the dimensions. A checked write lends its own, uncopied.
#[derive(Debug, Clone)]
pub(crate) struct InputColumns<'a> {
    pub(crate) attrs: Vec<&'a Column>,
    pub(crate) dims: Vec<&'a Column>,
}

impl FragmentInput {
    /// The input's own columns.
    pub(crate) fn columns(&self) -> InputColumns<'_> {
        InputColumns {
            attrs: self.attrs.iter().collect(),
            dims: self.dims.iter().collect(),
        }
    }
}

/// The delete metadata of a consolidated sparse fragment, one entry per cell
/// (in the input's cell order).
#[derive(Debug, Clone, Default)]
pub struct DeleteMeta {
    /// The timestamp of the delete that removed the cell, `u64::MAX` when
    /// none did.
    pub timestamps: Vec<u64>,
    /// The index of that delete in the fragment's processed conditions,
    /// `u64::MAX` when none did.
    pub condition_indexes: Vec<u64>,
}

pub(crate) fn usage(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}
