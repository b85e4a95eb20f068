#![no_main]
//! Fuzz target `roundtrip`: see `tiledb_runtime::check::targets`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tiledb_runtime::check::targets::run("roundtrip", data);
});
