//! The allocation bound every fuzz target runs under.
#![allow(
    unsafe_code,
    reason = "a GlobalAlloc impl is unsafe by definition; it forwards to System"
)]

/// The largest single allocation a fuzz target may make: libFuzzer's
/// `-malloc_limit_mb` in the sanitizer builds, and [`CappedAllocator`]
/// everywhere else (builds without a sanitizer, where libFuzzer cannot see
/// allocations, and the regression test that replays saved inputs). The
/// runtime's own bound is far below it: generic tiles of at most 256 MiB,
/// intermediate filter stages of at most four times their chunk.
pub const MALLOC_LIMIT: usize = 2048 << 20;

/// A global allocator that refuses any single request above
/// [`MALLOC_LIMIT`], so an input that asks for an unbounded allocation
/// aborts the process ("memory allocation of N bytes failed") — which the
/// fuzzer reports as a crash and the regression test as a failure —
/// instead of passing on a machine with enough memory.
pub struct CappedAllocator;

// SAFETY: every call forwards to the system allocator with the caller's
// layout; refusing a request by returning null is allowed by the
// `GlobalAlloc` contract.
unsafe impl std::alloc::GlobalAlloc for CappedAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.size() > MALLOC_LIMIT {
            return std::ptr::null_mut();
        }
        std::alloc::System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.size() > MALLOC_LIMIT {
            return std::ptr::null_mut();
        }
        std::alloc::System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        std::alloc::System.dealloc(ptr, layout);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if new_size > MALLOC_LIMIT {
            return std::ptr::null_mut();
        }
        std::alloc::System.realloc(ptr, layout, new_size)
    }
}
