#![no_main]
//! Fuzz target `enumeration`: see `tiledb_fuzz_targets`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tiledb_fuzz::run("enumeration", data);
});
