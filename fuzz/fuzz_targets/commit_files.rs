#![no_main]
//! Fuzz target `commit_files`: see `tiledb_fuzz_targets`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tiledb_fuzz::run("commit_files", data);
});
