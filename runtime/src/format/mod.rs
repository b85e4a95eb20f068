//! Byte layouts of the format: the generated structures and the small I/O
//! helpers they call.

pub mod generated;
pub mod io;
