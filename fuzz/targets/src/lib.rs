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

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use arbitrary::{Arbitrary, Unstructured};

use tiledb_runtime::condition::parse_commit;
use tiledb_runtime::directory::ConditionKind;
use tiledb_runtime::directory::{text_files, ArrayDirectory, GroupDirectory};
use tiledb_runtime::filter::{self, Datatype, Filter, FilterContext, FilterPipeline, WebpFormat};
use tiledb_runtime::format::generated as g;
use tiledb_runtime::format::io::read_exact_from;
use tiledb_runtime::fragment::{
    consolidated_footer_regions, footer_region, parse_footer, parse_metadata_file,
};
use tiledb_runtime::metadata::{group_contents::parse_group_details, parse_metadata_tile};
use tiledb_runtime::schema::{
    dimension_shapes, enumeration_from_tile, ArraySchema, MAX_SUPPORTED_VERSION,
};
use tiledb_runtime::storage::{DirEntry, EntryKind, IoCounters};
use tiledb_runtime::storage::{LocalStorage, RelPath, Storage};
use tiledb_runtime::tile::generic::{read_generic_tile, read_generic_tile_exact};
use tiledb_runtime::tile::{
    filter_tile, filter_var_tile, parse_chunks, unfilter_tile, unfilter_tile_scattered,
    unfilter_var_string_tile, ScatterRun, TileJob,
};

/// Tiles that would unfilter to more than this are skipped, to keep each
/// run fast; the size is checked against the framing before anything is
/// allocated anyway.
const MAX_FUZZ_TILE: u64 = 16 << 20;

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
        filter_one(d, FilterKind::DoubleDelta)
    }),
    ("filter_delta", |d| filter_one(d, FilterKind::Delta)),
    ("filter_dictionary", |d| {
        filter_one(d, FilterKind::Dictionary)
    }),
    ("filter_bit_width_reduction", |d| {
        filter_one(d, FilterKind::BitWidthReduction)
    }),
    ("filter_positive_delta", |d| {
        filter_one(d, FilterKind::PositiveDelta)
    }),
    ("filter_bitshuffle", |d| {
        filter_one(d, FilterKind::BitShuffle)
    }),
    ("filter_byteshuffle", |d| {
        filter_one(d, FilterKind::ByteShuffle)
    }),
    ("filter_checksum_md5", |d| filter_one(d, FilterKind::Md5)),
    ("filter_checksum_sha256", |d| {
        filter_one(d, FilterKind::Sha256)
    }),
    ("filter_scale_float", |d| {
        filter_one(d, FilterKind::ScaleFloat)
    }),
    ("filter_xor", |d| filter_one(d, FilterKind::Xor)),
    ("filter_webp", |d| filter_one(d, FilterKind::Webp)),
    ("filter_aes256gcm", |d| filter_one(d, FilterKind::Aes)),
    ("pipeline", pipeline),
    ("array_directory", array_directory),
    ("roundtrip", roundtrip),
];

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
        std::alloc::System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if new_size > MALLOC_LIMIT {
            return std::ptr::null_mut();
        }
        std::alloc::System.realloc(ptr, layout, new_size)
    }
}

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

/// A whole generic tile: header, framing, pipeline and payload; then the
/// framing alone through the generated structure.
pub fn generic_tile(data: &[u8]) {
    let _ = read_generic_tile(data, 0, None);
    let _ = read_generic_tile(data, 0, Some(&FUZZ_KEY));
    let _ = read_exact_from::<g::Tile>(data, (), "Tile");
    let _ = parse_chunks(data);
}

/// A schema file (generic tile + payload; the version comes from the payload).
pub fn array_schema(data: &[u8]) {
    let _ = ArraySchema::from_file_bytes("schema", data, None, true);
}

/// A schema payload, unfiltered: as stored, and with the leading version
/// replaced by each version TileDB has written, so every gate is reached.
pub fn array_schema_payload(data: &[u8]) {
    let _ = read_exact_from::<g::ArraySchema>(data, (), "ArraySchema");
    if data.len() >= 4 {
        let mut copy = data.to_vec();
        for version in 1..=MAX_SUPPORTED_VERSION {
            copy[..4].copy_from_slice(&version.to_le_bytes());
            if let Ok(schema) = read_exact_from::<g::ArraySchema>(&copy, (), "ArraySchema") {
                if let Some(current) = schema.current_domain.as_ref() {
                    let _ = read_exact_from::<g::CurrentDomain>(
                        current,
                        g::CurrentDomainBinReadArgs::builder()
                            .dims(dimension_shapes(&schema))
                            .finalize(),
                        "CurrentDomain",
                    );
                }
            }
        }
    }
}

/// The arguments a fragment's structures are read with, from 4 bytes:
/// attribute count, dimension count, each dimension's var flag and size.
fn fuzzed_shapes(head: [u8; 4]) -> (u64, Vec<g::DimensionShape>) {
    let attributes = (head[0] % 8) as u64;
    let dims = 1 + (head[1] % 4) as usize;
    let shapes = (0..dims)
        .map(|d| g::DimensionShape {
            var: head[2] >> d & 1 == 1,
            coord_size: [1, 2, 4, 8][(head[3] >> (2 * d) & 3) as usize],
        })
        .collect();
    (attributes, shapes)
}

/// Every structure of a fragment metadata file, with fuzzed arguments:
/// the footer, the R-tree, offsets lists, mins/maxes, sums, null counts,
/// the fragment-wide summary and processed conditions.
pub fn fragment_footer(data: &[u8]) {
    let Some((head, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let (attributes, dims) = fuzzed_shapes(*head);
    let version = 1 + (head[0] as u32 >> 3) % MAX_SUPPORTED_VERSION;
    let _ = read_exact_from::<g::FragmentFooter>(
        rest,
        g::FragmentFooterBinReadArgs::builder()
            .num_attributes(attributes)
            .dims(dims.clone())
            .finalize(),
        "FragmentFooter",
    );
    let _ = read_exact_from::<g::RTree>(
        rest,
        g::RTreeBinReadArgs::builder()
            .version(version)
            .dims(dims.clone())
            .finalize(),
        "RTree",
    );
    let _ = read_exact_from::<g::TileOffsets>(rest, (), "TileOffsets");
    let _ = read_exact_from::<g::TileMinMax>(rest, (), "TileMinMax");
    let _ = read_exact_from::<g::TileSums>(rest, (), "TileSums");
    let fields = attributes + 1 + dims.len() as u64;
    let _ = read_exact_from::<g::FragmentMmsn>(
        rest,
        g::FragmentMmsnBinReadArgs::builder()
            .num_fields(fields)
            .finalize(),
        "FragmentMmsn",
    );
    let _ = read_exact_from::<g::ProcessedConditions>(rest, (), "ProcessedConditions");
    let _ = read_exact_from::<g::NDRectangle>(
        rest,
        g::NDRectangleBinReadArgs::builder().dims(dims).finalize(),
        "NDRectangle",
    );
    // The whole file through the loader, which finds the footer by its
    // trailing length.
    let _ = footer_region(rest);
}

/// A schema file and a fragment metadata file (`[len u32][schema][fragment
/// metadata]`): the fragment is loaded against the schema, as `tdb check`
/// does.
pub fn fragment_metadata(data: &[u8]) {
    let Some((schema, file)) = split_pair(data) else {
        return;
    };
    let Ok(schema) = ArraySchema::from_file_bytes("schema", schema, None, true) else {
        return;
    };
    let _ = parse_metadata_file(file, &schema, None);
}

/// A schema file and a consolidated fragment metadata file; every footer
/// is read against that schema.
pub fn consolidated_fragment_metadata(data: &[u8]) {
    let Some((schema, file)) = split_pair(data) else {
        return;
    };
    let Ok(schema) = ArraySchema::from_file_bytes("schema", schema, None, true) else {
        return;
    };
    let Ok(tile) = read_generic_tile_exact(file, None) else {
        return;
    };
    for (_, footer) in consolidated_footer_regions(&tile).unwrap_or_default() {
        let _ = parse_footer(&footer, &schema);
    }
}

/// The files of `__commits`: delete and update commits, ignore and vacuum
/// lists.
pub fn commit_files(data: &[u8]) {
    if let Ok(tile) = read_generic_tile_exact(data, None) {
        let _ = parse_commit(&tile, ConditionKind::Delete);
        let _ = parse_commit(&tile, ConditionKind::Update);
    }
    let _ = text_files::parse_ignore_file(data);
    let _ = text_files::parse_vacuum_file(data, &["__fragments"]);
    let _ = text_files::parse_vacuum_file(data, &["__meta"]);
}

/// A consolidated commits file, with every embedded delete commit decoded.
pub fn consolidated_commits(data: &[u8]) {
    let Ok(entries) = text_files::parse_consolidated_commits(data) else {
        return;
    };
    for entry in entries {
        if let Some(tile) = entry.embedded {
            let start = usize::try_from(tile.offset).unwrap_or(usize::MAX);
            let end = start.saturating_add(usize::try_from(tile.size).unwrap_or(usize::MAX));
            if let Some(bytes) = data.get(start..end) {
                if let Ok(tile) = read_generic_tile_exact(bytes, None) {
                    let _ = parse_commit(&tile, ConditionKind::Delete);
                }
            }
        }
    }
}

/// A delete condition's AST, unfiltered (the payload of a `.del` file).
pub fn delete_condition(data: &[u8]) {
    let _ = read_exact_from::<g::DeleteCommit>(data, (), "DeleteCommit");
    let _ = read_exact_from::<g::UpdateCommit>(data, (), "UpdateCommit");
    let _ = read_exact_from::<g::AstNode>(data, (), "AstNode");
}

/// An array (or group) metadata file, and its payload alone.
pub fn array_metadata(data: &[u8]) {
    let _ = read_generic_tile_exact(data, None).and_then(|t| parse_metadata_tile(&t));
    let _ = read_exact_from::<g::Metadata>(data, (), "Metadata");
}

/// A group details file, and its payload alone.
pub fn group_details(data: &[u8]) {
    let _ = read_generic_tile_exact(data, None).and_then(|t| parse_group_details(&t));
    let _ = read_exact_from::<g::GroupDetails>(data, (), "GroupDetails");
}

/// An enumeration file, and its payload alone.
pub fn enumeration(data: &[u8]) {
    let _ = read_generic_tile_exact(data, None).and_then(|t| enumeration_from_tile(&t, "e"));
    let _ = read_exact_from::<g::Enumeration>(data, (), "Enumeration");
}

/// The filter a `filter_*` target decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterKind {
    None,
    Gzip,
    Zstd,
    Lz4,
    Rle,
    Bzip2,
    DoubleDelta,
    Delta,
    Dictionary,
    BitWidthReduction,
    PositiveDelta,
    BitShuffle,
    ByteShuffle,
    Md5,
    Sha256,
    ScaleFloat,
    Xor,
    Webp,
    Aes,
}

/// The bytes before the tile in a `filter_*` input: datatype, version, cell
/// value count, then 29 bytes of filter options.
pub const FILTER_HEADER: usize = 32;

fn le_u32(bytes: &[u8], at: usize) -> u32 {
    let mut raw = [0u8; 4];
    if let Some(src) = bytes.get(at..at + 4) {
        raw.copy_from_slice(src);
    }
    u32::from_le_bytes(raw)
}

fn le_f64(bytes: &[u8], at: usize) -> f64 {
    let mut raw = [0u8; 8];
    if let Some(src) = bytes.get(at..at + 8) {
        raw.copy_from_slice(src);
    }
    f64::from_le_bytes(raw)
}

fn reinterpret(byte: u8) -> Option<Datatype> {
    if byte == 0xFF {
        None
    } else {
        Datatype::from_value(byte)
    }
}

/// The filter a header describes.
pub fn filter_from_options(kind: FilterKind, o: &[u8]) -> Filter {
    let level = le_u32(o, 0) as i32;
    match kind {
        FilterKind::None => Filter::None,
        FilterKind::Gzip => Filter::Gzip { level },
        FilterKind::Zstd => Filter::Zstd { level },
        FilterKind::Lz4 => Filter::Lz4 { level },
        FilterKind::Rle => Filter::Rle { level },
        FilterKind::Bzip2 => Filter::Bzip2 { level },
        FilterKind::DoubleDelta => Filter::DoubleDelta {
            level,
            reinterpret: reinterpret(o.get(4).copied().unwrap_or(0xFF)),
        },
        FilterKind::Delta => Filter::Delta {
            level,
            reinterpret: reinterpret(o.get(4).copied().unwrap_or(0xFF)),
        },
        FilterKind::Dictionary => Filter::Dictionary { level },
        FilterKind::BitWidthReduction => Filter::BitWidthReduction {
            max_window: le_u32(o, 0),
        },
        FilterKind::PositiveDelta => Filter::PositiveDelta {
            max_window: le_u32(o, 0),
        },
        FilterKind::BitShuffle => Filter::BitShuffle,
        FilterKind::ByteShuffle => Filter::ByteShuffle,
        FilterKind::Md5 => Filter::ChecksumMd5,
        FilterKind::Sha256 => Filter::ChecksumSha256,
        FilterKind::ScaleFloat => Filter::ScaleFloat {
            scale: le_f64(o, 0),
            offset: le_f64(o, 8),
            byte_width: u64::from(o.get(16).copied().unwrap_or(0)),
        },
        FilterKind::Xor => Filter::Xor,
        FilterKind::Webp => Filter::Webp {
            quality: f32::from_bits(le_u32(o, 0)),
            format: WebpFormat::from_value(o.get(4).copied().unwrap_or(0) % 5)
                .unwrap_or(WebpFormat::Rgb),
            lossless: o.get(5).is_some_and(|b| b & 1 == 1),
            y_extent: u16::from_le_bytes([
                o.get(6).copied().unwrap_or(0),
                o.get(7).copied().unwrap_or(0),
            ]),
            x_extent: u16::from_le_bytes([
                o.get(8).copied().unwrap_or(0),
                o.get(9).copied().unwrap_or(0),
            ]),
        },
        FilterKind::Aes => Filter::Aes256Gcm,
    }
}

/// Decodes `tile` with `pipeline` as a fixed tile and, for string types, as
/// a whole-string var tile.
fn decode_tile(tile: &[u8], pipeline: &FilterPipeline, ctx: &FilterContext, cells: u64) {
    let Ok(chunks) = parse_chunks(tile) else {
        return;
    };
    let expected: u64 = chunks.iter().map(|c| c.original_len as u64).sum();
    if expected > MAX_FUZZ_TILE {
        return;
    }
    let whole = unfilter_tile(tile, pipeline, ctx, expected);
    // The dense read's path: the same tile decoded chunk by chunk into
    // runs that cut across chunks at odd places. It must agree with the
    // whole decode: the same bytes, and no failure the whole decode does
    // not have (it may succeed where the whole decode fails: a chunk of no
    // bytes holds no run and is not decoded).
    let mut scattered = vec![0u8; expected as usize];
    let mut runs = Vec::new();
    let mut rest = scattered.as_mut_slice();
    let mut at = 0u64;
    let mut step = 1 + (tile.len() % 97);
    while !rest.is_empty() {
        let take = step.min(rest.len());
        let (run, tail) = std::mem::take(&mut rest).split_at_mut(take);
        runs.push(ScatterRun {
            tile_offset: at,
            dest: run,
        });
        at += take as u64;
        rest = tail;
        step = step * 7 % 65_521 + 1;
    }
    let job = TileJob {
        bytes: tile,
        file_offset: 0,
        index: 0,
        expected_len: expected,
        wanted: None,
    };
    let outcome = unfilter_tile_scattered(&job, pipeline, ctx, runs);
    match (&whole, outcome) {
        (Ok(bytes), Ok(())) => assert!(
            *bytes == scattered,
            "a scattered decode differs from the whole tile's"
        ),
        (Err(_), _) => {}
        (Ok(_), Err(e)) => panic!("the whole tile decodes, the scattered decode fails: {e}"),
    }
    if filter::datatype::is_ascii_or_utf8(ctx.datatype) {
        let _ = unfilter_var_string_tile(tile, pipeline, ctx, expected, cells);
    }
}

/// One filter's decoding: `[FILTER_HEADER bytes][tile]`.
pub fn filter_one(data: &[u8], kind: FilterKind) {
    let Some((header, tile)) = data.split_first_chunk::<FILTER_HEADER>() else {
        return;
    };
    let datatype = Datatype::from_value(header[0]).unwrap_or(Datatype::Uint8);
    let version = 1 + u32::from(header[1]) % MAX_SUPPORTED_VERSION;
    let cell_val_num = 1 + u64::from(header[2] % 8);
    let pipeline = FilterPipeline::new(vec![filter_from_options(kind, &header[3..])]);
    let mut ctx = FilterContext::new(datatype, datatype.size() * cell_val_num, version);
    if kind == FilterKind::Aes {
        ctx = ctx.with_key(FUZZ_KEY);
    }
    decode_tile(tile, &pipeline, &ctx, u64::from(header[2]));
}

/// An arbitrary stored pipeline and a tile: `[version u8][datatype u8]
/// [cells u8][len u32][pipeline][tile]`.
pub fn pipeline(data: &[u8]) {
    let Some((head, rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let Some((stored, tile)) = split_pair(rest) else {
        return;
    };
    let version = 1 + u32::from(head[0]) % MAX_SUPPORTED_VERSION;
    let Ok(stored) = read_exact_from::<g::FilterPipeline>(
        stored,
        g::FilterPipelineBinReadArgs::builder()
            .version(version)
            .finalize(),
        "FilterPipeline",
    ) else {
        return;
    };
    let Ok(pipeline) = FilterPipeline::from_stored(&stored) else {
        return;
    };
    let datatype = Datatype::from_value(head[1]).unwrap_or(Datatype::Uint8);
    let ctx = FilterContext::new(datatype, datatype.size(), version).with_key(FUZZ_KEY);
    decode_tile(tile, &pipeline, &ctx, u64::from(head[2]));
}

/// A storage that panics if any path it is asked for resolves (after
/// symbolic links) outside its root: the fuzzer's proof that no file of an
/// array can make us read another.
pub struct ConfinedStorage {
    inner: LocalStorage,
    root: PathBuf,
}

impl ConfinedStorage {
    pub fn new(root: &Path) -> Self {
        ConfinedStorage {
            inner: LocalStorage::new(root),
            root: std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()),
        }
    }

    fn confirm(&self, path: &RelPath) {
        let full = self.inner.describe(path);
        if let Ok(real) = std::fs::canonicalize(&full) {
            assert!(
                real.starts_with(&self.root),
                "{path} resolved to {} outside {}",
                real.display(),
                self.root.display()
            );
        }
    }

    fn checked<T>(
        &self,
        path: &RelPath,
        result: tiledb_runtime::Result<T>,
    ) -> tiledb_runtime::Result<T> {
        if result.is_ok() {
            self.confirm(path);
        }
        result
    }
}

impl Storage for ConfinedStorage {
    fn describe(&self, path: &RelPath) -> PathBuf {
        self.inner.describe(path)
    }
    fn list(&self, dir: &RelPath) -> tiledb_runtime::Result<Option<Vec<DirEntry>>> {
        self.checked(dir, self.inner.list(dir))
    }
    fn kind(&self, path: &RelPath) -> tiledb_runtime::Result<Option<EntryKind>> {
        self.inner.kind(path)
    }
    fn size(&self, file: &RelPath) -> tiledb_runtime::Result<u64> {
        self.checked(file, self.inner.size(file))
    }
    fn read(&self, file: &RelPath) -> tiledb_runtime::Result<Vec<u8>> {
        self.checked(file, self.inner.read(file))
    }
    fn read_range(&self, file: &RelPath, offset: u64, len: u64) -> tiledb_runtime::Result<Vec<u8>> {
        self.checked(file, self.inner.read_range(file, offset, len))
    }
    fn create_dir(&self, _dir: &RelPath) -> tiledb_runtime::Result<()> {
        panic!("opening an array must not create folders")
    }
    fn write(&self, _file: &RelPath, _data: &[u8]) -> tiledb_runtime::Result<()> {
        panic!("opening an array must not write")
    }
    fn rename(&self, _from: &RelPath, _to: &RelPath) -> tiledb_runtime::Result<()> {
        panic!("opening an array must not rename")
    }
    fn remove_file(&self, _file: &RelPath) -> tiledb_runtime::Result<()> {
        panic!("opening an array must not remove files")
    }
    fn remove_dir(&self, _dir: &RelPath) -> tiledb_runtime::Result<()> {
        panic!("opening an array must not remove folders")
    }
    fn counters(&self) -> IoCounters {
        self.inner.counters()
    }
}

/// One entry of an `array_directory` input: `[path_len u8][path]
/// [data_len u16][data]`. Data starting with `@` makes a symbolic link to
/// the rest of the data instead of a file.
pub fn encode_entry(path: &str, data: &[u8], out: &mut Vec<u8>) {
    let path = &path.as_bytes()[..path.len().min(255)];
    let data = &data[..data.len().min(u16::MAX as usize)];
    out.push(path.len() as u8);
    out.extend_from_slice(path);
    out.extend_from_slice(&(data.len() as u16).to_le_bytes());
    out.extend_from_slice(data);
}

fn decode_entries(mut data: &[u8]) -> Vec<(String, &[u8])> {
    let mut entries = Vec::new();
    while let Some((&len, rest)) = data.split_first() {
        let Some((path, rest)) = rest.split_at_checked(len as usize) else {
            break;
        };
        let Some((size, rest)) = rest.split_first_chunk::<2>() else {
            break;
        };
        let size = u16::from_le_bytes(*size) as usize;
        let (body, rest) = rest.split_at(size.min(rest.len()));
        entries.push((String::from_utf8_lossy(path).into_owned(), body));
        data = rest;
        if entries.len() >= 64 {
            break;
        }
    }
    entries
}

static SCRATCH: AtomicU64 = AtomicU64::new(0);

/// Builds an array folder from the input in a scratch folder, then opens
/// it as an array and as a group, reads every cell (in a layout chosen by
/// the input) and checks it, through a storage that asserts nothing outside
/// the folder is ever resolved.
pub fn array_directory(data: &[u8]) {
    let scratch = std::env::temp_dir().join(format!(
        "tdb-fuzz-{}-{}",
        std::process::id(),
        SCRATCH.fetch_add(1, Ordering::Relaxed)
    ));
    let root = scratch.join("array");
    if std::fs::create_dir_all(&root).is_err() {
        return;
    }
    // A file beside the array that a path escaping the folder would reach.
    let _ = std::fs::write(scratch.join("outside"), b"outside the array");
    // Regular files first, links last, and nothing is ever created through
    // a link: the fuzzer names the links' targets, and the machine outside
    // the scratch folder must stay untouched.
    let entries = decode_entries(data);
    for link_pass in [false, true] {
        for (path, body) in &entries {
            let link = body.strip_prefix(b"@");
            if link.is_some() != link_pass {
                continue;
            }
            // Only well-formed relative paths are created; the hostile
            // ones are the links and the names written inside files.
            let Ok(rel) = RelPath::parse(path) else {
                continue;
            };
            let mut full = root.clone();
            let mut through_link = false;
            for component in rel.components() {
                if std::fs::symlink_metadata(&full).is_ok_and(|m| !m.is_dir()) {
                    through_link = true;
                    break;
                }
                full.push(component);
            }
            if through_link || std::fs::symlink_metadata(&full).is_ok() {
                continue;
            }
            let Some(parent) = full.parent() else {
                continue;
            };
            match link {
                None => {
                    let _ = std::fs::create_dir_all(parent);
                    let _ = std::fs::write(&full, body);
                }
                Some(target) => {
                    // Links go only into folders made in the first pass.
                    #[cfg(unix)]
                    if std::fs::symlink_metadata(parent).is_ok_and(|m| m.is_dir()) {
                        let target = String::from_utf8_lossy(target).into_owned();
                        let _ = std::os::unix::fs::symlink(target, &full);
                    }
                    #[cfg(not(unix))]
                    let _ = (target, parent);
                }
            }
        }
    }
    let storage = ConfinedStorage::new(&root);
    let _ = ArrayDirectory::open(&storage, 0, u64::MAX);
    let _ = ArrayDirectory::open(&storage, 5, 15);
    let _ = GroupDirectory::open(&storage, 0, u64::MAX);
    // The full read: open (schemas, footers, delete conditions), metadata,
    // and every cell of every attribute.
    let open = tiledb_runtime::snapshot::OpenOptions {
        timestamp_start: 0,
        timestamp_end: u64::MAX,
        key: None,
    };
    // One layout per input (from its length, so a saved input replays the
    // same way): each takes its own path through the reader (sorted,
    // streamed in stored order), and reading all four would quarter the
    // rate of executions.
    let layout = [
        tiledb_runtime::read::Layout::RowMajor,
        tiledb_runtime::read::Layout::Unordered,
        tiledb_runtime::read::Layout::Global,
        tiledb_runtime::read::Layout::ColMajor,
    ][data.len() % 4];
    if let Ok(snapshot) =
        tiledb_runtime::snapshot::Snapshot::open(Box::new(ConfinedStorage::new(&root)), open)
    {
        let _ = snapshot.metadata();
        let _ = tiledb_runtime::read::read(
            &snapshot,
            &tiledb_runtime::read::ReadQuery {
                layout,
                ..Default::default()
            },
        );
    }
    let options = tiledb_runtime::check::CheckOptions {
        max_tile_size: Some(MAX_FUZZ_TILE),
        ..Default::default()
    };
    let _ = tiledb_runtime::check::check_storage(&storage, &options);
    let _ = std::fs::remove_dir_all(&scratch);
}

/// A filter the round trip may put in a pipeline: every lossless filter.
#[derive(Debug, Clone, Arbitrary)]
enum LosslessFilter {
    None,
    Gzip(u8),
    Zstd(u8),
    Lz4,
    Rle,
    Bzip2(u8),
    DoubleDelta(Option<u8>),
    Delta(Option<u8>),
    Dictionary,
    BitWidthReduction(u16),
    PositiveDelta(u16),
    BitShuffle,
    ByteShuffle,
    Md5,
    Sha256,
    Xor,
    Aes,
}

impl LosslessFilter {
    fn filter(&self) -> Filter {
        let pick = |t: &Option<u8>| t.and_then(Datatype::from_value);
        match self {
            LosslessFilter::None => Filter::None,
            LosslessFilter::Gzip(l) => Filter::Gzip {
                level: i32::from(*l % 10),
            },
            LosslessFilter::Zstd(l) => Filter::Zstd {
                level: 1 + i32::from(*l % 5),
            },
            LosslessFilter::Lz4 => Filter::Lz4 { level: 1 },
            LosslessFilter::Rle => Filter::Rle { level: 0 },
            LosslessFilter::Bzip2(l) => Filter::Bzip2 {
                level: 1 + i32::from(*l % 9),
            },
            LosslessFilter::DoubleDelta(t) => Filter::DoubleDelta {
                level: 0,
                reinterpret: pick(t),
            },
            LosslessFilter::Delta(t) => Filter::Delta {
                level: 0,
                reinterpret: pick(t),
            },
            LosslessFilter::Dictionary => Filter::Dictionary { level: 0 },
            LosslessFilter::BitWidthReduction(w) => Filter::BitWidthReduction {
                max_window: u32::from(*w),
            },
            LosslessFilter::PositiveDelta(w) => Filter::PositiveDelta {
                max_window: u32::from(*w),
            },
            LosslessFilter::BitShuffle => Filter::BitShuffle,
            LosslessFilter::ByteShuffle => Filter::ByteShuffle,
            LosslessFilter::Md5 => Filter::ChecksumMd5,
            LosslessFilter::Sha256 => Filter::ChecksumSha256,
            LosslessFilter::Xor => Filter::Xor,
            LosslessFilter::Aes => Filter::Aes256Gcm,
        }
    }
}

/// A tile context and cells, built by `arbitrary` from the input.
#[derive(Debug, Arbitrary)]
struct RoundTripCase {
    datatype: u8,
    cell_val_num: u8,
    var: bool,
    filters: Vec<LosslessFilter>,
    /// Cell lengths of a var tile (taken modulo the data left).
    cell_lengths: Vec<u8>,
    cells: Vec<u8>,
}

/// Structure-aware round trip: cells → filtered tile → cells, through an
/// arbitrary lossless pipeline; what comes back must equal what went in.
pub fn roundtrip(data: &[u8]) {
    let mut input = Unstructured::new(data);
    let Ok(case) = RoundTripCase::arbitrary(&mut input) else {
        return;
    };
    let Some(datatype) = Datatype::from_value(case.datatype) else {
        return;
    };
    let filters: Vec<Filter> = case.filters.iter().take(4).map(|f| f.filter()).collect();
    let pipeline = FilterPipeline::new(filters);
    // Only pipelines TileDB would accept on this type.
    let types = pipeline.input_types(datatype);
    if pipeline
        .filters
        .iter()
        .zip(&types)
        .any(|(f, &t)| !f.accepts(t))
    {
        return;
    }
    let version = MAX_SUPPORTED_VERSION;
    let type_size = datatype.size() as usize;
    if type_size == 0 {
        return;
    }
    let mut cells = case.cells;
    cells.truncate(256 * 1024);
    if case.var {
        cells.truncate(cells.len() / type_size * type_size);
        let mut offsets = Vec::new();
        let mut at = 0usize;
        for len in &case.cell_lengths {
            if at > cells.len() {
                break;
            }
            offsets.push(at as u64);
            at += usize::from(*len) * type_size;
        }
        if offsets.is_empty() {
            offsets.push(0);
        }
        let ctx = FilterContext::new(datatype, type_size as u64, version).with_key(FUZZ_KEY);
        let Ok(tile) = filter_var_tile(&cells, &offsets, &pipeline, &ctx) else {
            return;
        };
        if pipeline.skips_offsets(datatype, version) {
            let (back, back_offsets) = unfilter_var_string_tile(
                &tile,
                &pipeline,
                &ctx,
                cells.len() as u64,
                offsets.len() as u64,
            )
            .unwrap_or_else(|e| panic!("a tile we filtered does not unfilter: {e}"));
            assert_eq!(back, cells, "var string data changed in the round trip");
            assert_eq!(back_offsets, offsets, "offsets changed in the round trip");
        } else {
            let back = unfilter_tile(&tile, &pipeline, &ctx, cells.len() as u64)
                .unwrap_or_else(|e| panic!("a tile we filtered does not unfilter: {e}"));
            assert_eq!(back, cells, "var data changed in the round trip");
        }
    } else {
        let cell_size = type_size * (1 + usize::from(case.cell_val_num % 4));
        cells.truncate(cells.len() / cell_size * cell_size);
        let ctx = FilterContext::new(datatype, cell_size as u64, version).with_key(FUZZ_KEY);
        let Ok(tile) = filter_tile(&cells, &pipeline, &ctx) else {
            return;
        };
        let back = unfilter_tile(&tile, &pipeline, &ctx, cells.len() as u64)
            .unwrap_or_else(|e| panic!("a tile we filtered does not unfilter: {e}"));
        assert_eq!(back, cells, "cells changed in the round trip");
        // The unfiltered tile is the same as with no filters at all.
        let plain = filter_tile(&cells, &FilterPipeline::default(), &ctx)
            .unwrap_or_else(|e| panic!("an unfiltered tile cannot be framed: {e}"));
        let plain_back =
            unfilter_tile(&plain, &FilterPipeline::default(), &ctx, cells.len() as u64)
                .unwrap_or_else(|e| panic!("an unfiltered tile does not read back: {e}"));
        assert_eq!(plain_back, back, "filtered and unfiltered tiles differ");
    }
}
