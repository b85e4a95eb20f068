//! What every fuzz target links: the entry point into the shared target
//! code (`tiledb_fuzz_targets`, in `fuzz/targets/`, where the regression
//! test replays the same functions) and the allocator that holds each single
//! allocation to the fuzzers' cap. With a sanitizer, libFuzzer's
//! `-malloc_limit_mb` enforces the same cap; without one (`cargo fuzz build
//! -s none`, the fast build of the long campaign) libFuzzer cannot see
//! allocations, and this allocator is what turns an unbounded request into
//! a reported crash.

use tiledb_fuzz_targets::CappedAllocator;

#[global_allocator]
static ALLOCATOR: CappedAllocator = CappedAllocator;

/// Runs the fuzz target called `name` on `data`.
pub fn run(name: &str, data: &[u8]) {
    assert!(
        tiledb_fuzz_targets::run(name, data),
        "no fuzz target called {name}"
    );
}
