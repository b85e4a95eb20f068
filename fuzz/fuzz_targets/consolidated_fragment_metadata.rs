#![no_main]
//! Fuzz target `consolidated_fragment_metadata`: see `tiledb_fuzz_targets`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tiledb_fuzz::run("consolidated_fragment_metadata", data);
});
