//! The TileDB conformance kit: the runner behind `tdb conformance`.
//!
//! It runs a matrix: every case of the frozen corpus (written by real TileDB releases) read by
//! every reader, and every case replayed live by every writer and read by every reader, with
//! TileDB as the oracle whose live reads are the expected results. Implementations take part
//! through adapters ([`adapter`]); the contract is in `conformance/README.md`.

pub mod adapter;
pub mod canonical;
pub mod case;
pub mod compare;
pub mod corpus;
pub mod differential;
pub mod html;
pub mod known_failures;
pub mod oracle;
pub mod recipe;
pub mod report;
pub mod run;

/// The kit's own folder, where its `cases/`, `corpus/` and `adapters/` live
/// (the crate ships them, so this holds in a checkout and in a package alike).
pub fn kit_dir() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub use adapter::{Adapter, Answer, Info, ProcessAdapter, RuntimeAdapter};
pub use report::{CheckResult, Report, Status};
pub use run::{run, Progress, RunConfig, Selection};
