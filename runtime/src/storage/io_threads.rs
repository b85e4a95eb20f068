//! [`on_io_threads`]: work whose loads wait on a network, run on enough
//! threads to keep a storage's requests in flight.
//!
//! The format layers load files from rayon threads; rayon has one thread
//! per core, right for decoding, but a load from an object store mostly
//! waits on a round trip. Where a storage takes many requests at once
//! ([`Storage::concurrent_reads`]), independent loads (fragment footers at
//! open, R-trees and tile offsets at a read) run on a pool of that many
//! threads instead, so that many requests are in flight; the storage itself
//! bounds the requests (an object store's `max_in_flight`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::Storage;

/// Runs `work` on a rayon pool of `storage.concurrent_reads()` threads when
/// that is more than the current pool has and there are at least two
/// `jobs`; otherwise here. The pools are kept, one per width.
pub fn on_io_threads<R: Send>(
    storage: &dyn Storage,
    jobs: usize,
    work: impl FnOnce() -> R + Send,
) -> R {
    let wanted = storage.concurrent_reads();
    if jobs < 2 || wanted <= rayon::current_num_threads() {
        return work();
    }
    match pool(wanted) {
        Some(pool) => pool.install(work),
        None => work(),
    }
}

fn pool(threads: usize) -> Option<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(pool) = pools.get(&threads) {
        return Some(Arc::clone(pool));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("tiledb-io-{i}"))
        .build()
        .ok()
        .map(Arc::new)?;
    pools.insert(threads, Arc::clone(&pool));
    Some(pool)
}
