//! Malformed specs, one test per bad spec, each asserting the exact error
//! (the file, the key path and what is wrong). One test binary: the
//! modules below were separate binaries, each linking the codegen again.
//! The small spec they start from is `tests/spec_fixture/`.

#[path = "../spec_fixture/mod.rs"]
mod spec_fixture;

mod directory_names;
mod exprs;
mod known_size;
mod layout;
mod names;
mod open_switches;
mod struct_properties;
mod switches;
mod versions;
mod views;
