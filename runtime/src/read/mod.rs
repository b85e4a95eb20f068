//! Reading: the cell orders, dense geometry and result assembly.

pub mod hilbert;
