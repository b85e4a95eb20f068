//! What the generated zero-copy views (`<Name>View`, for the structs marked
//! `view = true` in spec/) call: bounded splits of the input, lazy lists,
//! and the checks of their writers.
//!
//! A view checks each length once, when it is parsed, against the bytes
//! present; nothing is allocated, whatever a length says. On the hot path a
//! refusal is a [`ViewFault`], small and `Copy` (so that parsing returns in
//! registers); it becomes [`Error::corrupt`] — the byte offset from the
//! start of the parsed bytes, the `Struct.field` path and a structured
//! [`Cause`], as the binrw readers give them — where it leaves the view
//! (`<Name>View::parse`, `?`). The caller adds its base offset and file
//! ([`Error::at_base`], [`Error::in_file`]).

use crate::error::{Cause, Error, Result};

/// A structure read in place from bytes: the generated views, and the
/// numbers lists of them hold.
pub trait View<'a>: Sized + Copy + std::fmt::Debug {
    /// The params of the struct, as a tuple (`()` for none).
    type Args: Copy + std::fmt::Debug;
    /// The fewest bytes one occupies.
    const MIN_SIZE: usize;
    /// The bytes one occupies when the params alone fix it (so that a list
    /// of them can be split without reading each).
    fn stride(args: Self::Args) -> Option<usize>;
    /// Reads one from the start of `bytes`; returns it and the bytes after.
    fn parse_with(bytes: &'a [u8], args: Self::Args) -> Parsed<'a, Self>;
}

macro_rules! number_view {
    ($($t:ty),*) => {$(
        impl<'a> View<'a> for $t {
            type Args = ();
            const MIN_SIZE: usize = std::mem::size_of::<$t>();
            fn stride(_: ()) -> Option<usize> {
                Some(std::mem::size_of::<$t>())
            }
            fn parse_with(bytes: &'a [u8], _: ()) -> Parsed<'a, Self> {
                let (value, rest) = fixed::<{ std::mem::size_of::<$t>() }>(bytes, 0, stringify!($t))?;
                Ok((<$t>::from_le_bytes(*value), rest))
            }
        }

        impl ViewList<'_, $t> {
            /// The values, in order.
            pub fn values(&self) -> impl ExactSizeIterator<Item = $t> + '_ {
                self.bytes
                    .chunks_exact(std::mem::size_of::<$t>())
                    .map(|b| {
                        let mut value = [0u8; std::mem::size_of::<$t>()];
                        value.copy_from_slice(b);
                        <$t>::from_le_bytes(value)
                    })
            }
        }
    )*};
}
number_view!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

/// What parsing a view gives: it and the bytes after it, or the fault.
pub type Parsed<'a, V> = std::result::Result<(V, &'a [u8]), ViewFault>;

/// Why a view refused its bytes, kept small and `Copy` for the hot path;
/// it converts into [`Error`] (`?` does it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewFault {
    /// Byte offset from the start of the parsed bytes.
    pub at: u64,
    /// `Struct.field`.
    pub field: &'static str,
    /// The list element it lies in (`Struct.list` and the index), when it
    /// does (the innermost, should lists nest).
    pub element: Option<(&'static str, usize)>,
    /// What is wrong.
    pub kind: FaultKind,
}

/// What a [`ViewFault`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// `needed` bytes, `available` present.
    Truncated {
        /// Bytes needed from the offset on.
        needed: u64,
        /// Bytes present from the offset on.
        available: u64,
    },
    /// A field the spec fixes (`value`) holds another value.
    Value {
        /// The value the spec states.
        expected: u64,
        /// The value stored.
        found: u64,
    },
}

impl From<ViewFault> for Error {
    #[cold]
    #[inline(never)]
    fn from(fault: ViewFault) -> Error {
        let field = match fault.element {
            Some((list, index)) => format!("{list}[{index}], {}", fault.field),
            None => fault.field.to_string(),
        };
        let cause = match fault.kind {
            FaultKind::Truncated { needed, available } => Cause::Truncated { needed, available },
            FaultKind::Value { expected, found } => Cause::Inconsistent {
                what: fault.field,
                expected,
                found,
            },
        };
        Error::corrupt(fault.at, field, cause)
    }
}

/// The first `N` bytes of `rest` as an array, and the bytes after them;
/// `at` is where `rest` starts in the parsed bytes, `field` what is read.
#[inline]
pub fn fixed<'a, const N: usize>(
    rest: &'a [u8],
    at: usize,
    field: &'static str,
) -> std::result::Result<(&'a [u8; N], &'a [u8]), ViewFault> {
    match rest.split_first_chunk::<N>() {
        Some(split) => Ok(split),
        None => Err(truncated(at, field, N as u64, rest.len())),
    }
}

/// The first `len` bytes of `rest`, and the bytes after them.
#[inline]
pub fn bytes<'a>(
    rest: &'a [u8],
    at: usize,
    len: u64,
    field: &'static str,
) -> std::result::Result<(&'a [u8], &'a [u8]), ViewFault> {
    match usize::try_from(len) {
        Ok(len) if len <= rest.len() => Ok(rest.split_at(len)),
        _ => Err(truncated(at, field, len, rest.len())),
    }
}

#[cold]
fn truncated(at: usize, field: &'static str, needed: u64, available: usize) -> ViewFault {
    ViewFault {
        at: at as u64,
        field,
        element: None,
        kind: FaultKind::Truncated {
            needed,
            available: available as u64,
        },
    }
}

/// A field whose value the spec fixes (`value`) holds another.
#[inline]
pub fn check_value(
    found: u64,
    expected: u64,
    at: u64,
    field: &'static str,
) -> std::result::Result<(), ViewFault> {
    if found == expected {
        return Ok(());
    }
    Err(ViewFault {
        at,
        field,
        element: None,
        kind: FaultKind::Value { expected, found },
    })
}

/// Writing: bytes of a fixed (literal or param) size have it.
#[inline]
pub fn check_len(len: u64, expected: u64, field: &'static str) -> Result<()> {
    if len == expected {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "{field} must be {expected} bytes, got {len}"
    )))
}

/// Writing: a length as the integer type that stores it.
#[inline]
pub fn length<T: TryFrom<usize>>(len: usize, field: &'static str) -> Result<T> {
    T::try_from(len).map_err(|_| {
        Error::Usage(format!(
            "{field}: length {len} does not fit in {}",
            std::any::type_name::<T>()
        ))
    })
}

/// Bytes a view's writer takes: a slice, or [`Pieces`] written one after
/// another without being joined first.
pub trait ByteSource {
    /// How many bytes.
    fn byte_len(&self) -> usize;
    /// Appends them to `out`.
    fn append_to(&self, out: &mut Vec<u8>);
}

impl ByteSource for [u8] {
    fn byte_len(&self) -> usize {
        self.len()
    }
    fn append_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
}

/// An element of a list a view's writer writes: the generated struct
/// `Owned` itself, or anything the caller has that writes the same layout
/// (through `<Owned>View::write`) without building it. `Args` are the
/// struct's params, as a tuple.
pub trait Element<Owned, Args> {
    /// Appends the element to `out`.
    fn write_element(&self, out: &mut Vec<u8>, args: Args) -> Result<()>;
}

/// Byte pieces written as one field, in order.
#[derive(Debug, Clone, Copy)]
pub struct Pieces<'s, T>(pub &'s [T]);

impl<T: AsRef<[u8]>> ByteSource for Pieces<'_, T> {
    fn byte_len(&self) -> usize {
        self.0.iter().map(|p| p.as_ref().len()).sum()
    }
    fn append_to(&self, out: &mut Vec<u8>) {
        for piece in self.0 {
            out.extend_from_slice(piece.as_ref());
        }
    }
}

/// A list read in place: `count` elements of `V`, their bytes checked to be
/// present when the list was split from its struct, each read when asked for.
#[derive(Debug, Clone, Copy)]
pub struct ViewList<'a, V: View<'a>> {
    bytes: &'a [u8],
    count: usize,
    args: V::Args,
    /// Where the list starts in the bytes its struct was parsed from.
    at: usize,
    /// `Struct.field`, for errors met in an element.
    field: &'static str,
}

impl<'a, V: View<'a>> ViewList<'a, V> {
    /// Splits `count` elements off the start of `rest` (which starts at `at`
    /// of the parsed bytes). Elements of a size fixed by `args` are only
    /// measured; others are read once to find where the list ends.
    #[inline]
    pub fn split(
        rest: &'a [u8],
        at: usize,
        count: u64,
        args: V::Args,
        field: &'static str,
    ) -> std::result::Result<(Self, &'a [u8]), ViewFault> {
        // Every element takes at least MIN_SIZE (and one byte, so that a
        // count never makes us loop longer than the input is long).
        let least = count.saturating_mul(V::MIN_SIZE.max(1) as u64);
        if least > rest.len() as u64 {
            return Err(truncated(at, field, least, rest.len()));
        }
        let count = count as usize;
        let len = match V::stride(args) {
            Some(stride) => {
                let len = stride.saturating_mul(count);
                if len > rest.len() {
                    return Err(truncated(at, field, len as u64, rest.len()));
                }
                len
            }
            None => {
                let mut tail = rest;
                for i in 0..count {
                    let pos = rest.len() - tail.len();
                    tail = V::parse_with(tail, args)
                        .map_err(|e| element_error(e, field, i, at + pos))?
                        .1;
                }
                rest.len() - tail.len()
            }
        };
        let (bytes, rest) = rest.split_at(len);
        Ok((
            ViewList {
                bytes,
                count,
                args,
                at,
                field,
            },
            rest,
        ))
    }

    /// Takes `count` elements from `rest` without finding where they end
    /// (`parse_open`): the list holds every byte of `rest`, and each element
    /// is checked when the list is iterated. The count is judged against
    /// the bytes present first, as by [`ViewList::split`].
    #[inline]
    pub fn split_open(
        rest: &'a [u8],
        at: usize,
        count: u64,
        args: V::Args,
        field: &'static str,
    ) -> std::result::Result<Self, ViewFault> {
        let least = count.saturating_mul(V::MIN_SIZE.max(1) as u64);
        if least > rest.len() as u64 {
            return Err(truncated(at, field, least, rest.len()));
        }
        Ok(ViewList {
            bytes: rest,
            count: count as usize,
            args,
            at,
            field,
        })
    }

    /// The number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The bytes of the whole list (of a list from [`ViewList::split_open`],
    /// every byte after its start).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The elements, in order. Each is read as it comes; an error names its
    /// offset in the parsed bytes.
    #[inline]
    pub fn iter(&self) -> ViewIter<'a, V> {
        ViewIter {
            rest: self.bytes,
            index: 0,
            count: self.count,
            args: self.args,
            at: self.at,
            field: self.field,
        }
    }
}

/// The elements of a [`ViewList`].
#[derive(Debug, Clone)]
pub struct ViewIter<'a, V: View<'a>> {
    rest: &'a [u8],
    index: usize,
    count: usize,
    args: V::Args,
    at: usize,
    field: &'static str,
}

/// An element's fault, located in the list's struct: the list and the
/// index, its offset moved by where the element starts.
#[cold]
fn element_error(mut fault: ViewFault, field: &'static str, index: usize, at: usize) -> ViewFault {
    fault.at += at as u64;
    fault.element = fault.element.or(Some((field, index)));
    fault
}

impl<'a, V: View<'a>> Iterator for ViewIter<'a, V> {
    type Item = std::result::Result<V, ViewFault>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.index == self.count {
            return None;
        }
        let index = self.index;
        self.index += 1;
        Some(match V::parse_with(self.rest, self.args) {
            Ok((value, rest)) => {
                self.at += self.rest.len() - rest.len();
                self.rest = rest;
                Ok(value)
            }
            Err(e) => {
                self.index = self.count;
                Err(element_error(e, self.field, index, self.at))
            }
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.count - self.index;
        (left, Some(left))
    }
}
