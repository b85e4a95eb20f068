//! Large buffers backed by transparent huge pages: read results, and the
//! bytes an object store's responses are read into.
//!
//! A read's result is hundreds of megabytes of memory the process has never
//! touched. With 4 KiB pages the kernel takes one fault per page when the
//! copy first writes it (131,072 faults for 512 MiB) and the profile of a
//! dense read was dominated by them. Asking for huge pages (`madvise` with
//! `MADV_HUGEPAGE`, effective when the system's transparent huge pages are
//! in `madvise` or `always` mode) makes that 256 faults of 2 MiB. numpy does
//! the same for every array of 4 MiB or more, so TileDB's results through
//! tiledb-py are already backed this way. Elsewhere, or when the kernel
//! declines, nothing changes but the speed.
#![allow(
    unsafe_code,
    reason = "set_len over reserved capacity and the madvise call; each block states its SAFETY"
)]

/// Below this, huge pages are not worth a system call (numpy's threshold).
const WORTH_ADVISING: usize = 4 << 20;

/// `len` zero bytes, in memory advised for huge pages when large.
pub(crate) fn zeroed_bytes(len: usize) -> Vec<u8> {
    // Large zeroed allocations come straight from the kernel, untouched:
    // the advice comes before any page is faulted in.
    let bytes = vec![0u8; len];
    advise_huge_pages(&bytes);
    bytes
}

/// Room for `additional` more values in `values`, advised for huge pages
/// when large (call before filling it).
pub(crate) fn reserve<T>(values: &mut Vec<T>, additional: usize) {
    values.reserve(additional);
    advise_huge_pages(values);
}

/// Room for about `additional` more values, if the system grants it (an
/// estimate may be too large: nothing fails when it is refused), advised
/// for huge pages when the allocation moved.
pub(crate) fn reserve_hint<T>(values: &mut Vec<T>, additional: usize) {
    let before = values.as_ptr();
    if values.try_reserve(additional).is_ok() && values.as_ptr() != before {
        advise_huge_pages(values);
    }
}

/// Grows `values` by `additional` zeros, zeroing (and so faulting in) the
/// new part on all threads: a result that grows by hundreds of megabytes
/// spends most of that time in the kernel clearing fresh pages, and a plain
/// `resize` does it all on the calling thread. The size often comes from a
/// file (the var sizes of tiles): memory the system refuses is an error
/// (`None`), never an abort.
#[must_use]
pub(crate) fn extend_zeroed<T: Copy + Default + Send + Sync>(
    values: &mut Vec<T>,
    additional: usize,
) -> Option<()> {
    use rayon::prelude::*;
    // Per piece of work: a few huge pages.
    const PIECE_BYTES: usize = 8 << 20;
    let piece = (PIECE_BYTES / std::mem::size_of::<T>().max(1)).max(1);
    if values.capacity() - values.len() < additional {
        values.try_reserve(additional).ok()?;
        advise_huge_pages(values);
    }
    if additional < piece {
        values.resize(values.len() + additional, T::default());
        return Some(());
    }
    let len = values.len();
    values.spare_capacity_mut()[..additional]
        .par_chunks_mut(piece)
        .for_each(|part| part.fill(std::mem::MaybeUninit::new(T::default())));
    // SAFETY: the `additional` values after `len` lie within the capacity
    // (reserved above) and were all initialized just now by the fill.
    unsafe { values.set_len(len + additional) };
    Some(())
}

/// Advises the not-yet-written room `spare` (a buffer's spare capacity,
/// before anything is written to it) for huge pages when large: a response
/// body of megabytes read into fresh memory otherwise takes a fault per
/// 4 KiB page as it arrives.
#[cfg_attr(
    not(feature = "object-store"),
    allow(dead_code, reason = "its one caller is the object store's read-ahead")
)]
pub(crate) fn advise_spare(spare: &[std::mem::MaybeUninit<u8>]) {
    advise_region(spare.as_ptr() as usize, spare.len());
}

fn advise_huge_pages<T>(values: &Vec<T>) {
    let bytes = values.capacity().saturating_mul(std::mem::size_of::<T>());
    advise_region(values.as_ptr() as usize, bytes);
}

/// Advises the whole huge pages inside `bytes` bytes from address `start`,
/// which must be memory the caller owns.
#[cfg(target_os = "linux")]
fn advise_region(start: usize, bytes: usize) {
    const HUGE_PAGE: usize = 2 << 20;
    if bytes < WORTH_ADVISING {
        return;
    }
    let first = start.next_multiple_of(HUGE_PAGE);
    let end = start.saturating_add(bytes) / HUGE_PAGE * HUGE_PAGE;
    if end > first {
        // SAFETY: the range [first, end) lies inside the caller's own
        // allocation (start..start + bytes), both ends page-aligned as
        // madvise requires; MADV_HUGEPAGE only changes how the kernel backs
        // those pages, never their contents, so no Rust value is affected.
        // A refusal (old kernel, THP disabled) is harmless and ignored.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_region(_start: usize, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_zeroed_and_sized() {
        for len in [0, 1, 4095, WORTH_ADVISING - 1, WORTH_ADVISING + 12345] {
            let b = zeroed_bytes(len);
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&x| x == 0));
        }
        let mut v: Vec<u64> = vec![7];
        reserve(&mut v, 1 << 20);
        assert!(v.capacity() > 1 << 20);
        assert_eq!(v, [7]);
    }

    #[test]
    fn extended_buffers_are_zeroed() {
        for (start, add) in [(0usize, 0usize), (3, 5), (1, (8 << 20) + 17), (5, 3 << 20)] {
            // Memory that held other values before, so that zeros are
            // written, not inherited.
            let mut v: Vec<u8> = vec![0xAB; start + add];
            v.truncate(start);
            extend_zeroed(&mut v, add).unwrap();
            assert_eq!(v.len(), start + add);
            assert!(v[..start].iter().all(|&x| x == 0xAB));
            assert!(v[start..].iter().all(|&x| x == 0));
        }
        let mut w: Vec<u64> = vec![9; 2];
        extend_zeroed(&mut w, 3 << 20).unwrap();
        // More than any system can give: refused, not an abort.
        let mut huge: Vec<u8> = vec![1];
        assert!(extend_zeroed(&mut huge, usize::MAX / 2).is_none());
        assert_eq!(huge, [1]);
        assert_eq!(w.len(), 2 + (3 << 20));
        assert!(w[..2] == [9, 9] && w[2..].iter().all(|&x| x == 0));
    }

    /// The advice is taken where the kernel offers huge pages (this reads
    /// the process's own memory map; skipped, with a reason, elsewhere).
    #[cfg(target_os = "linux")]
    #[test]
    fn large_buffers_are_advised_for_huge_pages() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if !(mode.contains("[madvise]") || mode.contains("[always]")) {
            println!("skipped: transparent huge pages are {mode:?} on this machine");
            return;
        }
        let b = zeroed_bytes(64 << 20);
        assert!(
            advised(b.as_ptr() as usize + (8 << 20)),
            "the buffer's mapping is not advised for huge pages"
        );
        // Room not yet written (a response body's buffer), advised too.
        let mut room: Vec<u8> = Vec::with_capacity(64 << 20);
        advise_spare(room.spare_capacity_mut());
        assert!(
            advised(room.as_ptr() as usize + (8 << 20)),
            "the spare room's mapping is not advised for huge pages"
        );
    }

    /// Whether the mapping holding address `at` carries the `hg` flag.
    #[cfg(target_os = "linux")]
    fn advised(at: usize) -> bool {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        let mut flagged = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((lo, hi)) = range.split_once('-') {
                    if let (Ok(lo), Ok(hi)) =
                        (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                    {
                        inside = (lo..hi).contains(&at);
                        continue;
                    }
                }
            }
            if inside && line.starts_with("VmFlags:") {
                flagged = line.split_whitespace().any(|f| f == "hg");
            }
        }
        flagged
    }
}
