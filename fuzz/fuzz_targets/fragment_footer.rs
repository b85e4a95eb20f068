#![no_main]
//! Fuzz target `fragment_footer`: see `tiledb_fuzz_targets`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tiledb_fuzz::run("fragment_footer", data);
});
