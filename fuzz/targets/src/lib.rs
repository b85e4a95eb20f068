//! The code paths the fuzz targets drive, one function per target.
//!
//! They live in this workspace crate (not in the cargo-fuzz crate `fuzz/`,
//! which only wraps them in `fuzz_target!`) so that the regression test
//! `fuzz/targets/tests/fuzz_regressions.rs` replays every saved crash
//! through exactly the code the fuzzer ran, on the stable toolchain. They
//! call the library's public API only. Each function takes arbitrary bytes,
//! must never panic, hang or allocate without bound, and returns nothing:
//! errors are the expected outcome of most inputs. The only panics here are
//! the invariants the fuzzer checks (a round trip that does not return its
//! input, a path resolved outside the array).

mod allocator;
mod directory;
mod files;
mod filters;
mod roundtrip;

pub use allocator::{CappedAllocator, MALLOC_LIMIT};
pub use directory::{array_directory, encode_entry, ConfinedStorage};
pub use files::{
    array_metadata, array_schema, array_schema_payload, commit_files, consolidated_commits,
    consolidated_fragment_metadata, delete_condition, enumeration, fragment_footer,
    fragment_metadata, generic_tile, group_details,
};
pub use filters::{filter_from_options, filter_one, pipeline, FilterKind, FILTER_HEADER};
pub use roundtrip::roundtrip;

/// Tiles that would unfilter to more than this are skipped, to keep each
/// run fast; the size is checked against the framing before anything is
/// allocated anyway.
pub(crate) const MAX_FUZZ_TILE: u64 = 16 << 20;

/// The key every AES target uses.
pub const FUZZ_KEY: [u8; 32] = *b"0123456789abcdeF0123456789abcdeF";

/// The code a fuzz target runs on one input.
pub type Target = fn(&[u8]);

/// Every target, by name, for the regression test and the CI script.
pub const TARGETS: &[(&str, Target)] = &[
    ("generic_tile", generic_tile),
    ("array_schema", array_schema),
    ("array_schema_payload", array_schema_payload),
    ("fragment_footer", fragment_footer),
    ("fragment_metadata", fragment_metadata),
    (
        "consolidated_fragment_metadata",
        consolidated_fragment_metadata,
    ),
    ("commit_files", commit_files),
    ("consolidated_commits", consolidated_commits),
    ("delete_condition", delete_condition),
    ("array_metadata", array_metadata),
    ("group_details", group_details),
    ("enumeration", enumeration),
    ("filter_none", |d| filter_one(d, FilterKind::None)),
    ("filter_gzip", |d| filter_one(d, FilterKind::Gzip)),
    ("filter_zstd", |d| filter_one(d, FilterKind::Zstd)),
    ("filter_lz4", |d| filter_one(d, FilterKind::Lz4)),
    ("filter_rle", |d| filter_one(d, FilterKind::Rle)),
    ("filter_bzip2", |d| filter_one(d, FilterKind::Bzip2)),
    ("filter_double_delta", |d| {
        filter_one(d, FilterKind::DoubleDelta);
    }),
    ("filter_delta", |d| filter_one(d, FilterKind::Delta)),
    ("filter_dictionary", |d| {
        filter_one(d, FilterKind::Dictionary);
    }),
    ("filter_bit_width_reduction", |d| {
        filter_one(d, FilterKind::BitWidthReduction);
    }),
    ("filter_positive_delta", |d| {
        filter_one(d, FilterKind::PositiveDelta);
    }),
    ("filter_bitshuffle", |d| {
        filter_one(d, FilterKind::BitShuffle);
    }),
    ("filter_byteshuffle", |d| {
        filter_one(d, FilterKind::ByteShuffle);
    }),
    ("filter_checksum_md5", |d| filter_one(d, FilterKind::Md5)),
    ("filter_checksum_sha256", |d| {
        filter_one(d, FilterKind::Sha256);
    }),
    ("filter_scale_float", |d| {
        filter_one(d, FilterKind::ScaleFloat);
    }),
    ("filter_xor", |d| filter_one(d, FilterKind::Xor)),
    ("filter_webp", |d| filter_one(d, FilterKind::Webp)),
    ("filter_aes256gcm", |d| filter_one(d, FilterKind::Aes)),
    ("pipeline", pipeline),
    ("array_directory", array_directory),
    ("roundtrip", roundtrip),
];

/// Runs the target called `name`; false when there is no such target.
pub fn run(name: &str, data: &[u8]) -> bool {
    match TARGETS.iter().find(|(n, _)| *n == name) {
        Some((_, target)) => {
            target(data);
            true
        }
        None => false,
    }
}

/// Splits `[len u32][first len bytes][rest]`, the layout of targets that
/// take two files.
pub fn split_pair(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = data.split_first_chunk::<4>()?;
    let len = u32::from_le_bytes(*len) as usize;
    if len > rest.len() {
        return None;
    }
    Some(rest.split_at(len))
}

/// Joins two files into the layout [`split_pair`] reads.
pub fn join_pair(first: &[u8], second: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + first.len() + second.len());
    out.extend_from_slice(&(first.len() as u32).to_le_bytes());
    out.extend_from_slice(first);
    out.extend_from_slice(second);
    out
}
