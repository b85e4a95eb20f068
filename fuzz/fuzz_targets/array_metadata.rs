#![no_main]
//! Fuzz target `array_metadata`: see `tiledb_fuzz_targets`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tiledb_fuzz::run("array_metadata", data);
});
