//! The buffers a read-ahead receives planned ranges into
//! (`object_read_ahead`), used again once the read is done with them.
//!
//! A large read from an object store receives every byte of its tiles into
//! memory. Fresh memory is pages the kernel must find, zero and map as they
//! are first written, and unmap again, interrupting the other cores to
//! flush their TLBs, when freed: on two cores, a sixth of the CPU of a
//! large read over S3. So each planned range is received into a buffer of
//! its own, handed to the cache and the read as [`Bytes`] that own it
//! ([`Received`]), and given back here when the last of them is dropped;
//! later ranges are received into it. The buffers kept are bounded by what
//! the cache may hold, and are freed with the storage.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use bytes::Bytes;

/// Ranges shorter than this are received into buffers of their own that
/// are not kept: the allocator reuses small blocks by itself, without the
/// kernel, and a read of many small ranges (a few cells of each of
/// thousands of fragments) would otherwise pile them up here.
const KEPT_FROM_BYTES: usize = 256 * 1024;

/// Buffers of received ranges the read is done with, waiting to be used
/// again.
#[derive(Debug, Default)]
pub(super) struct ReceiveBuffers {
    free: Mutex<Free>,
}

#[derive(Debug, Default)]
struct Free {
    buffers: Vec<Vec<u8>>,
    /// The capacity of `buffers`, in all.
    bytes: u64,
    /// The most bytes kept.
    limit: u64,
    /// The buffers allocated, not taken from those kept.
    #[cfg(test)]
    allocated: usize,
}

impl ReceiveBuffers {
    fn free(&self) -> std::sync::MutexGuard<'_, Free> {
        // Only free buffers are kept: a panic elsewhere leaves them free.
        self.free.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps at most `bytes` of free buffers (what the cache may hold: a
    /// read's ranges are given back as fast as the cache lets them go).
    pub(super) fn set_limit(&self, bytes: u64) {
        let mut free = self.free();
        free.limit = bytes;
        while free.bytes > free.limit {
            let Some(buffer) = free.buffers.pop() else {
                break;
            };
            free.bytes -= buffer.capacity() as u64;
        }
    }

    /// An empty buffer with room for `len` bytes: the smallest kept one
    /// large enough, else a new one (advised for huge pages when large).
    pub(super) fn take(&self, len: usize) -> Vec<u8> {
        if len < KEPT_FROM_BYTES {
            return Vec::with_capacity(len);
        }
        let kept = {
            let mut free = self.free();
            #[cfg(test)]
            {
                free.allocated += 1;
            }
            let best = (free.buffers.iter().enumerate())
                .filter(|(_, b)| b.capacity() >= len)
                .min_by_key(|(_, b)| b.capacity())
                .map(|(i, _)| i);
            best.map(|i| {
                let buffer = free.buffers.swap_remove(i);
                free.bytes -= buffer.capacity() as u64;
                #[cfg(test)]
                {
                    free.allocated -= 1;
                }
                buffer
            })
        };
        kept.unwrap_or_else(|| {
            let mut buffer = Vec::with_capacity(len);
            crate::memory::advise_spare(buffer.spare_capacity_mut());
            buffer
        })
    }

    /// Keeps `buffer` for a later range, if there is room.
    fn give_back(&self, mut buffer: Vec<u8>) {
        let mut free = self.free();
        let size = buffer.capacity() as u64;
        if buffer.capacity() >= KEPT_FROM_BYTES && free.bytes + size <= free.limit {
            buffer.clear();
            free.bytes += size;
            free.buffers.push(buffer);
        }
    }

    /// The free buffers kept, and their capacity in all.
    #[cfg(test)]
    fn kept(&self) -> (usize, u64) {
        let free = self.free();
        (free.buffers.len(), free.bytes)
    }

    /// The buffers allocated so far.
    #[cfg(test)]
    fn allocated(&self) -> usize {
        self.free().allocated
    }
}

/// A received range, owning its buffer: the owner of the [`Bytes`] handed
/// out ([`Bytes::from_owner`]), which gives the buffer back to the storage
/// (if it is still there) when the last of them is dropped.
struct Received {
    bytes: Vec<u8>,
    home: Weak<ReceiveBuffers>,
}

impl AsRef<[u8]> for Received {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Received {
    fn drop(&mut self) {
        if let Some(home) = self.home.upgrade() {
            home.give_back(std::mem::take(&mut self.bytes));
        }
    }
}

/// `bytes` (a buffer from `home`, filled) as [`Bytes`] that give it back
/// to `home` when the last of them is dropped.
pub(super) fn received(bytes: Vec<u8>, home: &Arc<ReceiveBuffers>) -> Bytes {
    Bytes::from_owner(Received {
        bytes,
        home: Arc::downgrade(home),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::object::ObjectStorage;
    use crate::storage::{RelPath, Storage};

    #[test]
    fn a_long_read_receives_into_the_buffers_of_ranges_it_is_done_with() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let storage = ObjectStorage::new(store, "root".into(), "memory://buffers/root")
            .with_read_ahead(1 << 20);
        // Two files, each more than the cache holds (32 MiB besides two
        // windows), read in ranges of 256 KiB.
        let size = 48usize << 20;
        let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let range = 256u64 << 10;
        let ranges: Vec<(u64, u64)> = (0..size as u64 / range)
            .map(|i| (i * range, range))
            .collect();
        let read_whole = |name: &str| {
            let file = RelPath::parse(name).unwrap();
            storage.write(&file, &data).unwrap();
            storage.prefetch(&[(file.clone(), ranges.clone())]);
            for &(offset, len) in &ranges {
                let got = storage.read_range(&file, offset, len).unwrap();
                assert!(got == data[offset as usize..(offset + len) as usize]);
            }
        };
        read_whole("f");
        let first = storage.received.allocated();
        assert!(
            first < ranges.len() * 3 / 4,
            "once the cache is full, ranges are received into buffers given back: \
             {first} allocated for {} ranges",
            ranges.len()
        );
        read_whole("g");
        assert_eq!(
            storage.received.allocated(),
            first,
            "a second read allocates none"
        );
    }

    #[test]
    fn a_buffer_comes_back_when_its_last_bytes_are_dropped() {
        let home = Arc::new(ReceiveBuffers::default());
        home.set_limit(4 << 20);
        let mut buffer = home.take(1 << 20);
        buffer.extend_from_slice(&[7u8; 1 << 20]);
        let pointer = buffer.as_ptr();
        let bytes = received(buffer, &home);
        let part = bytes.slice(10..20);
        drop(bytes);
        assert_eq!(home.kept().0, 0, "a slice still holds it");
        assert_eq!(&part[..], &[7u8; 10]);
        drop(part);
        assert_eq!(home.kept().0, 1);
        // The next range of that size is received into the same memory,
        // emptied.
        let again = home.take(800 << 10);
        assert_eq!(again.as_ptr(), pointer);
        assert!(again.is_empty() && again.capacity() >= 1 << 20);
        assert_eq!(home.kept(), (0, 0));
        // Small buffers are neither kept nor taken from those kept.
        drop(received(again, &home));
        drop(received(vec![0u8; 1000], &home));
        assert_eq!(home.kept().0, 1);
        assert_eq!(home.take(1000).capacity(), 1000);
        assert_eq!(home.kept().0, 1);
    }

    #[test]
    fn the_smallest_that_fits_is_taken_and_the_limit_holds() {
        const MIB: usize = 1 << 20;
        let home = Arc::new(ReceiveBuffers::default());
        home.set_limit(3 * MIB as u64);
        for len in [2 * MIB, MIB / 2, MIB] {
            drop(received(vec![0u8; len], &home));
        }
        // 2 MiB + 512 KiB are kept; 1 MiB more would pass the limit.
        let (count, bytes) = home.kept();
        assert_eq!(count, 2);
        assert!(bytes <= 3 * MIB as u64, "{bytes}");
        let smallest = home.take(400 << 10).capacity();
        assert!(smallest < 2 * MIB, "the 512 KiB one: {smallest}");
        assert!(
            home.take(400 << 10).capacity() >= 2 * MIB,
            "then the 2 MiB one"
        );
        assert!(
            (400 << 10..MIB / 2).contains(&home.take(400 << 10).capacity()),
            "then a new one"
        );
        // A lower limit lets buffers go.
        drop(received(vec![0u8; 2 * MIB], &home));
        home.set_limit(0);
        assert_eq!(home.kept(), (0, 0));
        // Dropped after the storage: nothing to give back to, nothing fails.
        let orphan = received(vec![1u8; 10], &home);
        drop(home);
        assert_eq!(&orphan[..], &[1u8; 10]);
    }
}
