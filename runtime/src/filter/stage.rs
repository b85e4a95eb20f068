//! The pieces every filter stage shares: the parts of a chunk on the way
//! forward, a bounds-checked cursor over metadata on the way back, the output
//! slot a reverse stage writes into, and the stage-level error.

use std::borrow::Cow;

use super::{Datatype, Filter, FilterContext};
use crate::error::{Cause, Error};
use crate::format::view::View;

/// Why a filter stage failed. The tile code turns it into an [`crate::Error`]
/// that names the tile, chunk and filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The stored bytes are inconsistent.
    Corrupt(Cause),
    /// The stored bytes are inconsistent in one part of the chunk (e.g.
    /// `DELTA metadata byte 4`), named after the filter in the error's field.
    CorruptPart(String, Cause),
    /// Valid, but not something we handle (e.g. lossy WebP encoding).
    #[cfg_attr(feature = "libwebp", allow(dead_code))]
    Unsupported(String),
    /// The caller's values or pipeline cannot be filtered (writing only),
    /// or a needed input such as the key is missing.
    Usage(String),
}

pub(crate) type StageResult<T> = Result<T, Fault>;

pub(crate) fn corrupt<T>(cause: impl Into<Cause>) -> StageResult<T> {
    Err(Fault::Corrupt(cause.into()))
}

/// A fault in one named part of the chunk (e.g. `windows`, `bit stream`):
/// the part goes into the error's field after the filter's name.
pub(crate) fn corrupt_part<T>(part: &str, cause: Cause) -> StageResult<T> {
    Err(Fault::CorruptPart(part.to_string(), cause))
}

/// A codec's refusal: the codec as data, its library's message as detail.
pub(crate) fn codec_fault(codec: &'static str, detail: String) -> Fault {
    Fault::Corrupt(Cause::Codec { codec, detail })
}

impl Fault {
    pub(crate) fn corrupt(cause: impl Into<Cause>) -> Fault {
        Fault::Corrupt(cause.into())
    }
}

/// A chunk on the way forward: its metadata parts and data parts, in order.
/// TileDB compresses, checksums and encrypts part by part, so the part
/// boundaries are part of the byte format.
/// The data parts may borrow the caller's chunk until a filter rewrites them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Parts<'a> {
    pub metadata: Vec<Vec<u8>>,
    pub data: Vec<Cow<'a, [u8]>>,
}

impl Parts<'_> {
    /// The data parts as slices.
    pub fn data_slices(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        self.data.iter().map(|p| &**p)
    }
    /// Every metadata part, then every data part.
    pub fn all_slices(&self) -> impl Iterator<Item = &[u8]> {
        self.metadata
            .iter()
            .map(Vec::as_slice)
            .chain(self.data_slices())
    }
    pub fn data_len(&self) -> usize {
        self.data.iter().map(|p| p.len()).sum()
    }
}

/// What a filter sees when TileDB hands it a *view* of earlier parts
/// (`FilterBuffer::append_view`): nothing at all when the parts hold no
/// bytes, and never a trailing empty part.
pub(crate) fn view<T: AsRef<[u8]>>(mut parts: Vec<T>) -> Vec<T> {
    while parts.last().is_some_and(|p| p.as_ref().is_empty()) {
        parts.pop();
    }
    parts
}

/// The forward output of a filter that adds its own metadata part in front
/// of the earlier ones and replaces the data.
pub(crate) fn prepend_metadata<'a>(
    own: Vec<u8>,
    earlier: Vec<Vec<u8>>,
    data: Vec<Vec<u8>>,
) -> Parts<'a> {
    let mut metadata = Vec::with_capacity(earlier.len() + 1);
    metadata.push(own);
    metadata.extend(view(earlier));
    Parts {
        metadata,
        data: data.into_iter().map(Cow::Owned).collect(),
    }
}

/// Chunk buffers given back by the write path (a filtered chunk once its
/// tile is framed, a stage's input once the next stage consumed it) for
/// the next chunks' stages. A tile of 64 KiB chunks otherwise allocates
/// and frees two fresh buffers per chunk per stage, and the freed memory
/// is handed back to the system and faulted in again, page by page.
struct Scratch {
    buffers: Vec<Vec<u8>>,
    bytes: usize,
}

static SCRATCH: std::sync::Mutex<Scratch> = std::sync::Mutex::new(Scratch {
    buffers: Vec::new(),
    bytes: 0,
});

/// The most bytes of buffers kept for reuse (across threads).
const SCRATCH_BYTES: usize = 32 << 20;

fn scratch_lock() -> std::sync::MutexGuard<'static, Scratch> {
    SCRATCH
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An empty buffer of at least `capacity` bytes, reused when one was given
/// back ([`recycle`]).
pub(crate) fn scratch(capacity: usize) -> Vec<u8> {
    let reused = {
        let mut pool = scratch_lock();
        let buffer = pool.buffers.pop();
        if let Some(b) = &buffer {
            pool.bytes -= b.capacity();
        }
        buffer
    };
    match reused {
        Some(mut buffer) => {
            buffer.clear();
            buffer.reserve(capacity);
            buffer
        }
        None => Vec::with_capacity(capacity),
    }
}

/// Gives a buffer back for [`scratch`] (dropped when the pool is full or
/// the buffer larger than chunks are).
pub(crate) fn recycle(buffer: Vec<u8>) {
    let capacity = buffer.capacity();
    if capacity == 0 || capacity > SCRATCH_BYTES / 16 {
        return;
    }
    let mut pool = scratch_lock();
    if pool.bytes + capacity <= SCRATCH_BYTES {
        pool.bytes += capacity;
        pool.buffers.push(buffer);
    }
}

/// Gives back the data buffers a chunk's parts own.
pub(crate) fn recycle_parts(parts: Parts<'_>) {
    for part in parts.data {
        if let Cow::Owned(buffer) = part {
            recycle(buffer);
        }
    }
}

/// A cursor over bytes read from a file; every read is checked.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Cursor {
            bytes,
            pos: 0,
            what,
        }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The bytes not yet read.
    pub fn rest(&self) -> &'a [u8] {
        &self.bytes[self.pos..]
    }

    pub fn take(&mut self, n: usize) -> StageResult<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.truncated(n));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// The generated zero-copy view `V` (spec/filter_metadata.toml) read
    /// at the position, which moves past it. Returns it and where it starts,
    /// for [`Cursor::fault`] on errors met later in its lists.
    pub fn read_view<V: View<'a>>(&mut self, args: V::Args) -> StageResult<(V, usize)> {
        let start = self.pos;
        match V::parse_with(self.rest(), args) {
            Ok((value, rest)) => {
                self.pos = self.bytes.len() - rest.len();
                Ok((value, start))
            }
            Err(e) => Err(self.fault(start, e)),
        }
    }

    /// A view's error, whose offset counts from `start` of these bytes, as
    /// a fault naming this cursor's bytes, the byte and the field.
    pub fn fault(&self, start: usize, err: impl Into<Error>) -> Fault {
        view_fault(self.what, start, err.into())
    }

    /// `needed` bytes at the current position, beyond the end.
    fn truncated(&self, needed: usize) -> Fault {
        Fault::CorruptPart(
            format!("{} byte {}", self.what, self.pos),
            Cause::Truncated {
                needed: needed as u64,
                available: self.remaining() as u64,
            },
        )
    }
}

/// A view's error (offset counted from `start` of the bytes called `what`)
/// as a stage fault: `WHAT byte N, Struct.field` and its cause.
pub(crate) fn view_fault(what: &str, start: usize, err: Error) -> Fault {
    match err {
        Error::Corrupt { at, cause } => Fault::CorruptPart(
            format!("{what} byte {}, {}", start as u64 + at.offset, at.field),
            cause,
        ),
        other => Fault::Corrupt(Cause::Text(other.to_string())),
    }
}

/// A view writer's refusal (a length that does not fit) as a stage fault.
pub(crate) fn write_fault(err: Error) -> Fault {
    Fault::Usage(err.to_string())
}

/// Where a reverse stage writes its data. The stage that runs last (the
/// pipeline's first filter) writes straight into the caller's buffer, whose
/// length is the chunk's declared original size; earlier stages get a vector
/// whose size is bounded, so that no declared length can make us allocate
/// without limit.
pub(crate) enum OutBuf<'o> {
    Fixed(&'o mut [u8]),
    /// A buffer the stage sizes itself (up to `limit`). It may come with
    /// another chunk's bytes in it: until `alloc` sizes it, it holds no
    /// output (`allocated` false).
    Grow {
        buf: Vec<u8>,
        limit: usize,
        allocated: bool,
    },
}

impl<'o> OutBuf<'o> {
    /// A buffer of exactly `len` bytes. Its contents are unspecified (a
    /// reused buffer keeps what it held): every stage writes all of what it
    /// allocates, or fails.
    pub fn alloc(&mut self, len: usize) -> StageResult<&mut [u8]> {
        match self {
            OutBuf::Fixed(buf) => {
                if buf.len() != len {
                    return corrupt(Cause::Inconsistent {
                        what: "the filter output size",
                        expected: buf.len() as u64,
                        found: len as u64,
                    });
                }
                Ok(&mut buf[..])
            }
            OutBuf::Grow {
                buf,
                limit,
                allocated,
            } => {
                if len > *limit {
                    return corrupt(Cause::OutOfRange {
                        value: len as u64,
                        limit: *limit as u64,
                    });
                }
                // Only growth is zeroed: rewriting bytes every stage
                // overwrites anyway costs a pass over each chunk.
                if buf.len() >= len {
                    buf.truncate(len);
                } else {
                    buf.resize(len, 0);
                }
                *allocated = true;
                Ok(&mut buf[..])
            }
        }
    }

    pub fn limit(&self) -> usize {
        match self {
            OutBuf::Fixed(buf) => buf.len(),
            OutBuf::Grow { limit, .. } => *limit,
        }
    }

    /// Copies `data` in whole.
    pub fn put(&mut self, data: &[u8]) -> StageResult<()> {
        self.alloc(data.len())?.copy_from_slice(data);
        Ok(())
    }

    pub fn into_vec(self) -> Vec<u8> {
        match self {
            OutBuf::Fixed(buf) => buf.to_vec(),
            OutBuf::Grow {
                mut buf, allocated, ..
            } => {
                // A stage that wrote nothing produced nothing.
                if !allocated {
                    buf.clear();
                }
                buf
            }
        }
    }
}

/// What a reverse stage hands to the stage before it besides the data it
/// wrote: either the rest of its input metadata (most filters) or new
/// metadata (the compressors and AES, which restore the metadata parts they
/// had consumed).
pub(crate) enum MetadataOut {
    /// The input metadata after what this filter read.
    Rest,
    New(Vec<u8>),
}

/// Everything a stage needs besides its bytes.
pub(crate) struct StageEnv<'c> {
    pub filter: &'c Filter,
    /// The datatype this filter sees.
    pub datatype: Datatype,
    pub ctx: &'c FilterContext,
    /// The chunk's final output lands in a tile too large to stay in cache
    /// until it is read: a stage writing it may bypass the caches.
    pub stream_output: bool,
}

/// The value of a little-endian integer of `width` bytes (1, 2, 4 or 8)
/// at the start of `bytes`. Callers in loops pass a constant width (see
/// [`by_width`]) so that this compiles to a single load.
#[inline(always)]
pub(crate) fn read_uint(bytes: &[u8], width: usize) -> u64 {
    let mut buf = [0u8; 8];
    buf[..width].copy_from_slice(&bytes[..width]);
    u64::from_le_bytes(buf)
}

/// Sign-extends the low `width` bytes of `value`.
#[inline(always)]
pub(crate) fn sign_extend(value: u64, width: usize) -> i64 {
    let shift = 64 - 8 * width as u32;
    ((value << shift) as i64) >> shift
}

#[inline(always)]
pub(crate) fn write_uint(out: &mut [u8], value: u64, width: usize) {
    out[..width].copy_from_slice(&value.to_le_bytes()[..width]);
}

/// Big-endian unsigned integer of `width` bytes (1..=8).
#[inline]
pub(crate) fn read_be(bytes: &[u8], width: usize) -> u64 {
    bytes[..width]
        .iter()
        .fold(0u64, |acc, &b| (acc << 8) | b as u64)
}

#[inline]
pub(crate) fn push_be(out: &mut Vec<u8>, value: u64, width: usize) {
    out.extend_from_slice(&value.to_be_bytes()[8 - width..]);
}

/// Calls `$f::<W>($args)` with the const width `W` equal to `$width`
/// (1, 2, 4 or 8), so that per-value loops are compiled once per width.
macro_rules! by_width {
    ($width:expr, $f:ident($($arg:expr),* $(,)?)) => {
        match $width {
            1 => $f::<1>($($arg),*),
            2 => $f::<2>($($arg),*),
            4 => $f::<4>($($arg),*),
            _ => $f::<8>($($arg),*),
        }
    };
}
pub(crate) use by_width;

#[cfg(test)]
mod out_buf_tests {
    use super::OutBuf;

    /// A reused buffer's old bytes never pass for a stage's output: what a
    /// stage did not size is empty, and what it sized is exactly that long.
    #[test]
    fn a_reused_buffer_holds_only_what_the_stage_sized() {
        let stale = || OutBuf::Grow {
            buf: vec![7u8; 100],
            limit: 1000,
            allocated: false,
        };
        assert!(stale().into_vec().is_empty());
        let mut out = stale();
        out.alloc(3).unwrap().copy_from_slice(b"abc");
        assert_eq!(out.into_vec(), b"abc");
        let mut out = stale();
        assert_eq!(out.alloc(150).unwrap().len(), 150);
        assert!(out.alloc(1001).is_err());
    }
}
