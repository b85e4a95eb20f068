#![no_main]
//! Fuzz target `filter_checksum_sha256`: see `tiledb_fuzz_targets`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tiledb_fuzz::run("filter_checksum_sha256", data);
});
