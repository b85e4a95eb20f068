//! Reading: the cell orders, dense geometry and result assembly.

pub mod dense_geometry;
pub mod hilbert;
