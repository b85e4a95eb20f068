#![no_main]
//! Fuzz target `consolidated_commits`: see `tiledb_fuzz_targets`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tiledb_fuzz::run("consolidated_commits", data);
});
