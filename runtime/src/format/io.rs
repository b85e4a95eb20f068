//! Bounded readers and writers that the generated code calls.
//!
//! Every length or count read from a file goes through one of these before
//! anything is allocated: it is checked against the bytes that remain in the
//! stream (and against the spec's `max`), and lists grow as elements are
//! actually read rather than being reserved up front.

use binrw::io::{Read, Seek, SeekFrom, Write};
use binrw::{BinRead, BinResult, BinWrite, Endian};

use crate::error::Cause;

/// Grow a list by at most this many elements before they have been read.
const LIST_RESERVE_LIMIT: usize = 4096;

/// How deeply lists may nest inside lists. Structures nest through lists
/// only (a query condition's children are a list of nodes), so this bounds
/// the recursion a hostile file can cause to a depth whose stack use is
/// small, far beyond any real structure.
pub const MAX_LIST_NESTING: u32 = 64;

thread_local! {
    static LIST_NESTING: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Counts one level of list nesting while it lives.
struct Nesting;

impl Nesting {
    fn enter<R: Seek>(reader: &mut R, field: &str) -> BinResult<Nesting> {
        let depth = LIST_NESTING.with(std::cell::Cell::get);
        if depth >= MAX_LIST_NESTING {
            let pos = reader.stream_position()?;
            return Err(fail(
                pos,
                field,
                format!("lists nest more than {MAX_LIST_NESTING} deep"),
            ));
        }
        LIST_NESTING.with(|d| d.set(depth + 1));
        Ok(Nesting)
    }
}

impl Drop for Nesting {
    fn drop(&mut self) {
        LIST_NESTING.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Bytes left between the current position and the end of the stream.
pub fn remaining<R: Read + Seek>(reader: &mut R) -> BinResult<u64> {
    let pos = reader.stream_position()?;
    let end = reader.seek(SeekFrom::End(0))?;
    reader.seek(SeekFrom::Start(pos))?;
    Ok(end.saturating_sub(pos))
}

/// A bounded reader's refusal: the field (`Structure.field`) and the cause,
/// carried through binrw as its custom error and taken back out by
/// [`to_error`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldFault {
    field: String,
    cause: crate::error::Cause,
}

impl std::fmt::Display for FieldFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.cause)
    }
}

fn fail(pos: u64, field: &str, cause: impl Into<crate::error::Cause>) -> binrw::Error {
    binrw::Error::Custom {
        pos,
        err: Box::new(FieldFault {
            field: field.to_string(),
            cause: cause.into(),
        }),
    }
}

/// Checks that `count` elements of at least `min_size` bytes each fit in what
/// remains, and that `count` is at most `max`.
fn check_fits<R: Read + Seek>(
    reader: &mut R,
    count: u64,
    max: u64,
    min_size: u64,
    field: &str,
) -> BinResult<()> {
    let pos = reader.stream_position()?;
    if count > max {
        return Err(fail(
            pos,
            field,
            Cause::OutOfRange {
                value: count,
                limit: max,
            },
        ));
    }
    let left = remaining(reader)?;
    let needed = count.saturating_mul(min_size);
    if needed > left {
        return Err(fail(
            pos,
            field,
            Cause::Truncated {
                needed,
                available: left,
            },
        ));
    }
    Ok(())
}

/// Reads `count` raw bytes, after checking them against the stream and `max`.
pub fn read_bytes<R, T>(
    reader: &mut R,
    _endian: Endian,
    (count, max, field): (u64, u64, &'static str),
) -> BinResult<T>
where
    R: Read + Seek,
    T: From<Vec<u8>>,
{
    check_fits(reader, count, max, 1, field)?;
    let pos = reader.stream_position()?;
    let len = usize::try_from(count)
        .map_err(|_| fail(pos, field, format!("length {count} does not fit in memory")))?;
    let mut bytes = vec![0u8; len];
    reader.read_exact(&mut bytes)?;
    Ok(T::from(bytes))
}

/// Reads every byte up to the end of the stream (at most `max`).
pub fn read_bytes_to_end<R, T>(
    reader: &mut R,
    endian: Endian,
    (max, field): (u64, &'static str),
) -> BinResult<T>
where
    R: Read + Seek,
    T: From<Vec<u8>>,
{
    let count = remaining(reader)?;
    read_bytes(reader, endian, (count, max, field))
}

/// Reads `count` elements, each with the same arguments, after checking that
/// `count * min_size` bytes remain.
pub fn read_list<R, E, A, T>(
    reader: &mut R,
    endian: Endian,
    (count, max, min_size, field, args): (u64, u64, u64, &'static str, A),
) -> BinResult<T>
where
    R: Read + Seek,
    E: for<'a> BinRead<Args<'a> = A>,
    A: Clone,
    T: From<Vec<E>>,
{
    check_fits(reader, count, max, min_size.max(1), field)?;
    let _nesting = Nesting::enter(reader, field)?;
    let reserve = usize::try_from(count)
        .unwrap_or(usize::MAX)
        .min(LIST_RESERVE_LIMIT);
    let mut items = Vec::with_capacity(reserve);
    for _ in 0..count {
        items.push(E::read_options(reader, endian, args.clone())?);
    }
    Ok(T::from(items))
}

/// Reads one element per argument the iterator yields (an `each` list).
pub fn read_each<R, E, A, I, T>(
    reader: &mut R,
    endian: Endian,
    (args, min_size, field): (I, u64, &'static str),
) -> BinResult<T>
where
    R: Read + Seek,
    E: for<'a> BinRead<Args<'a> = A>,
    I: IntoIterator<Item = A>,
    T: From<Vec<E>>,
{
    let args = args.into_iter();
    let count = args.size_hint().1.unwrap_or(usize::MAX) as u64;
    check_fits(reader, count, u64::MAX, min_size.max(1), field)?;
    let _nesting = Nesting::enter(reader, field)?;
    let mut items = Vec::new();
    for arg in args {
        items.push(E::read_options(reader, endian, arg)?);
    }
    Ok(T::from(items))
}

/// Reads elements until the stream ends (at most `max`).
pub fn read_until_eof<R, E, A, T>(
    reader: &mut R,
    endian: Endian,
    (max, min_size, field, args): (u64, u64, &'static str, A),
) -> BinResult<T>
where
    R: Read + Seek,
    E: for<'a> BinRead<Args<'a> = A>,
    A: Clone,
    T: From<Vec<E>>,
{
    let _nesting = Nesting::enter(reader, field)?;
    let mut items = Vec::new();
    while remaining(reader)? > 0 {
        if items.len() as u64 >= max {
            let pos = reader.stream_position()?;
            // One more element than the spec's `max` allows.
            let cause = Cause::OutOfRange {
                value: max.saturating_add(1),
                limit: max,
            };
            return Err(fail(pos, field, cause));
        }
        let before = reader.stream_position()?;
        let item = match E::read_options(reader, endian, args.clone()) {
            Ok(item) => item,
            // A plain read that ran out of data has no position: locate it
            // at the end of the data, naming the element.
            Err(e) if binrw_pos(innermost(&e)).is_none() && is_eof(&e) => {
                let end = reader.seek(SeekFrom::End(0))?;
                let element = format!("{field}[{}]", items.len());
                return Err(fail(end, &element, Cause::EndsEarly));
            }
            Err(e) => return Err(e),
        };
        items.push(item);
        if reader.stream_position()? == before && min_size == 0 {
            // An element that reads nothing would loop forever.
            return Err(fail(before, field, "an element read no bytes"));
        }
    }
    Ok(T::from(items))
}

/// A list as the writers see it: a `Vec`, or an `Option<Vec>` that may be absent.
pub trait ListRef<E> {
    /// The items; none when absent.
    fn items(&self) -> &[E];
}

impl<E> ListRef<E> for Vec<E> {
    fn items(&self) -> &[E] {
        self
    }
}

impl<E> ListRef<E> for Option<Vec<E>> {
    fn items(&self) -> &[E] {
        self.as_deref().unwrap_or(&[])
    }
}

/// Writes one element per argument (an `each` list); the counts must agree.
pub fn write_each<W, L, E, A, I>(
    value: &L,
    writer: &mut W,
    endian: Endian,
    (args,): (I,),
) -> BinResult<()>
where
    W: Write + Seek,
    L: ListRef<E> + ?Sized,
    E: for<'a> BinWrite<Args<'a> = A>,
    I: IntoIterator<Item = A>,
{
    let items = value.items();
    let mut args = args.into_iter();
    for item in items {
        let Some(arg) = args.next() else {
            let pos = writer.stream_position()?;
            return Err(fail(
                pos,
                "each",
                format!(
                    "{} elements but fewer entries to describe them",
                    items.len()
                ),
            ));
        };
        item.write_options(writer, endian, arg)?;
    }
    if args.next().is_some() {
        let pos = writer.stream_position()?;
        return Err(fail(
            pos,
            "each",
            format!("{} elements but more entries to describe them", items.len()),
        ));
    }
    Ok(())
}

/// Something whose length a `length_of` field stores.
pub trait Length {
    /// The number of items written.
    fn length(&self) -> usize;
}

impl<E> Length for Vec<E> {
    fn length(&self) -> usize {
        self.len()
    }
}

impl<E> Length for Option<Vec<E>> {
    fn length(&self) -> usize {
        self.as_ref().map_or(0, Vec::len)
    }
}

/// The integer types a length or size is stored as.
pub trait LengthInt: Sized + Copy {
    /// The largest value the integer holds.
    const MAX: Self;
    /// The value, or `None` when it does not fit.
    fn from_u64(value: u64) -> Option<Self>;
}

macro_rules! length_int {
    ($($t:ty),*) => {$(
        impl LengthInt for $t {
            const MAX: Self = <$t>::MAX;
            fn from_u64(value: u64) -> Option<Self> {
                <$t>::try_from(value).ok()
            }
        }
    )*};
}
length_int!(u8, u16, u32, u64, i8, i16, i32, i64);

/// The length of `value` as the stored type; an error if it does not fit.
pub fn checked_length<P: LengthInt, L: Length + ?Sized>(value: &L, field: &str) -> BinResult<P> {
    let length = value.length() as u64;
    P::from_u64(length).ok_or_else(|| {
        fail(
            0,
            field,
            format!(
                "length {length} does not fit in {}",
                std::any::type_name::<P>()
            ),
        )
    })
}

/// The length of `value` as the stored type, saturating (for conditions on the write side).
pub fn saturating_length<P: LengthInt, L: Length + ?Sized>(value: &L) -> P {
    P::from_u64(value.length() as u64).unwrap_or(P::MAX)
}

/// A sink that only counts the bytes written to it.
#[derive(Debug, Default)]
pub struct Counter {
    pos: u64,
    len: u64,
}

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pos += buf.len() as u64;
        self.len = self.len.max(self.pos);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Seek for Counter {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        let target = match pos {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = target.ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start")
        })?;
        Ok(self.pos)
    }
}

/// The number of bytes `write` produces (for `size_of` fields).
pub fn written_size(
    write: impl FnOnce(&mut binrw::io::NoSeek<Counter>) -> BinResult<()>,
) -> BinResult<u64> {
    let mut counter = binrw::io::NoSeek::new(Counter::default());
    write(&mut counter)?;
    let counter = counter.into_inner();
    Ok(counter.len)
}

/// A serialized size as the stored type; an error if it does not fit.
pub fn checked_size<P: LengthInt>(size: BinResult<u64>, field: &str) -> BinResult<P> {
    let size = size?;
    P::from_u64(size).ok_or_else(|| {
        fail(
            0,
            field,
            format!("size {size} does not fit in {}", std::any::type_name::<P>()),
        )
    })
}

/// A serialized size as the stored type, saturating (for conditions on the write side).
pub fn saturating_size<P: LengthInt>(size: BinResult<u64>) -> P {
    size.ok().and_then(P::from_u64).unwrap_or(P::MAX)
}

/// The error of a generated enum read: `value` names no variant of
/// `enum_name` (the stored number was read at `pos`).
pub fn bad_enum_value(pos: u64, enum_name: &'static str, value: impl Into<u64>) -> binrw::Error {
    let value = value.into();
    fail(pos, enum_name, Cause::BadEnumValue { enum_name, value })
}

/// Converts a binrw error into the runtime's error, locating it at its byte
/// offset. A bounded reader's refusal keeps its field path and structured
/// cause; the end of the data is [`Cause::EndsEarly`]; anything else is
/// text under `what`.
pub fn to_error(err: binrw::Error, what: &str) -> crate::Error {
    let offset = binrw_pos(innermost(&err))
        .or_else(|| binrw_pos(&err))
        .unwrap_or(0);
    if let binrw::Error::Custom { err: custom, .. } = innermost(&err) {
        if let Some(fault) = custom.downcast_ref::<FieldFault>() {
            return crate::Error::corrupt(offset, fault.field.clone(), fault.cause.clone());
        }
    }
    crate::Error::corrupt(offset, what, flatten_message(&err))
}

fn binrw_pos(err: &binrw::Error) -> Option<u64> {
    match err {
        binrw::Error::BadMagic { pos, .. }
        | binrw::Error::AssertFail { pos, .. }
        | binrw::Error::Custom { pos, .. }
        | binrw::Error::NoVariantMatch { pos }
        | binrw::Error::EnumErrors { pos, .. } => Some(*pos),
        binrw::Error::Backtrace(bt) => binrw_pos(&bt.error),
        _ => None,
    }
}

/// The error that explains a failure: through backtraces, and for a switch
/// (an enum read) the variant that got furthest, since the others were
/// refused by their selector right away.
fn innermost(err: &binrw::Error) -> &binrw::Error {
    match err {
        binrw::Error::Backtrace(bt) => innermost(&bt.error),
        binrw::Error::EnumErrors { variant_errors, .. } => variant_errors
            .iter()
            .map(|(_, e)| innermost(e))
            // Furthest first; at one position, a real failure over a selector's refusal.
            .max_by_key(|e| {
                let refused = matches!(e, binrw::Error::AssertFail { .. });
                (binrw_pos(e).unwrap_or(u64::MAX), !refused)
            })
            .unwrap_or(err),
        other => other,
    }
}

/// The read ran out of data (a plain read, not a bounded reader's refusal).
fn is_eof(err: &binrw::Error) -> bool {
    matches!(innermost(err), binrw::Error::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof)
}

fn flatten_message(err: &binrw::Error) -> Cause {
    if is_eof(err) {
        return Cause::EndsEarly;
    }
    let text = innermost(err).to_string();
    Cause::Text(text.lines().next().unwrap_or_default().to_string())
}

/// Reads a whole buffer as `T`; trailing bytes are an error.
pub fn read_exact_from<T>(bytes: &[u8], args: T::Args<'_>, what: &str) -> crate::Result<T>
where
    T: BinRead,
{
    let mut cursor = binrw::io::Cursor::new(bytes);
    let value =
        T::read_options(&mut cursor, Endian::Little, args).map_err(|e| to_error(e, what))?;
    let end = cursor.position();
    if end != bytes.len() as u64 {
        return Err(crate::Error::corrupt(
            end,
            what,
            Cause::TrailingBytes {
                count: bytes.len() as u64 - end,
            },
        ));
    }
    Ok(value)
}

/// Reads a `T` from the front of a buffer; returns it with the bytes consumed.
pub fn read_prefix<T>(bytes: &[u8], args: T::Args<'_>, what: &str) -> crate::Result<(T, u64)>
where
    T: BinRead,
{
    let mut cursor = binrw::io::Cursor::new(bytes);
    let value =
        T::read_options(&mut cursor, Endian::Little, args).map_err(|e| to_error(e, what))?;
    Ok((value, cursor.position()))
}

/// Serializes a `T` to a new buffer.
pub fn write_to_vec<T>(value: &T, args: T::Args<'_>, what: &str) -> crate::Result<Vec<u8>>
where
    T: BinWrite,
{
    let mut cursor = binrw::io::Cursor::new(Vec::new());
    value
        .write_options(&mut cursor, Endian::Little, args)
        .map_err(|e| crate::Error::Usage(format!("cannot write {what}: {e}")))?;
    Ok(cursor.into_inner())
}

/// Whether an optional value is there wherever its layout requires it
/// (a value beyond its gate is fine: it is simply not written).
pub fn present_where_required(present: bool, required: bool) -> bool {
    present || !required
}

/// Reads a stored boolean: 0 or 1; anything else is corrupt.
pub fn read_bool<R, T>(reader: &mut R, _endian: Endian, (field,): (&'static str,)) -> BinResult<T>
where
    R: Read + Seek,
    T: From<bool>,
{
    let pos = reader.stream_position()?;
    let mut byte = [0u8; 1];
    reader.read_exact(&mut byte)?;
    match byte[0] {
        0 => Ok(T::from(false)),
        1 => Ok(T::from(true)),
        other => Err(fail(
            pos,
            field,
            Cause::BadEnumValue {
                enum_name: "boolean",
                value: other.into(),
            },
        )),
    }
}

/// A boolean as the writers see it: a `bool`, or an `Option<bool>` that may be absent.
pub trait BoolRef {
    /// The value; `None` when absent.
    fn get(&self) -> Option<bool>;
}

impl BoolRef for bool {
    fn get(&self) -> Option<bool> {
        Some(*self)
    }
}

impl BoolRef for Option<bool> {
    fn get(&self) -> Option<bool> {
        *self
    }
}

/// Writes a boolean as one byte (nothing for an absent `Option`).
pub fn write_bool<W, B>(value: &B, writer: &mut W, _endian: Endian, _args: ()) -> BinResult<()>
where
    W: Write + Seek,
    B: BoolRef + ?Sized,
{
    if let Some(value) = value.get() {
        writer.write_all(&[u8::from(value)])?;
    }
    Ok(())
}

/// Reads bytes up to `terminator`, which is consumed and not kept; the
/// terminator must come within `max` bytes and before the stream ends,
/// unless `or_end` lets the end of the stream end them too.
pub fn read_terminated<R, T>(
    reader: &mut R,
    _endian: Endian,
    (terminator, or_end, max, field): (u8, bool, u64, &'static str),
) -> BinResult<T>
where
    R: Read + Seek,
    T: From<Vec<u8>>,
{
    let start = reader.stream_position()?;
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 256];
    loop {
        let want = remaining(reader)?.min(chunk.len() as u64) as usize;
        if want == 0 && or_end {
            break;
        }
        if want == 0 {
            return Err(fail(
                start,
                field,
                format!("no terminator {terminator:#04x} before the end"),
            ));
        }
        reader.read_exact(&mut chunk[..want])?;
        if let Some(at) = chunk[..want].iter().position(|b| *b == terminator) {
            bytes.extend_from_slice(&chunk[..at]);
            // Step back to just after the terminator.
            let unread = (want - at - 1) as i64;
            reader.seek(SeekFrom::Current(-unread))?;
            break;
        }
        bytes.extend_from_slice(&chunk[..want]);
        if bytes.len() as u64 > max {
            let cause = Cause::OutOfRange {
                value: bytes.len() as u64,
                limit: max,
            };
            return Err(fail(start, field, cause));
        }
    }
    if bytes.len() as u64 > max {
        let cause = Cause::OutOfRange {
            value: bytes.len() as u64,
            limit: max,
        };
        return Err(fail(start, field, cause));
    }
    Ok(T::from(bytes))
}

/// Raw bytes as the writers see them: a `Vec<u8>`, or an `Option` that may be absent.
pub trait BytesRef {
    /// The bytes; `None` when absent.
    fn bytes(&self) -> Option<&[u8]>;
}

impl BytesRef for Vec<u8> {
    fn bytes(&self) -> Option<&[u8]> {
        Some(self)
    }
}

impl BytesRef for Option<Vec<u8>> {
    fn bytes(&self) -> Option<&[u8]> {
        self.as_deref()
    }
}

/// Writes bytes and their terminator; bytes that contain the terminator
/// could not be read back, so they are an error.
pub fn write_terminated<W, B>(
    value: &B,
    writer: &mut W,
    _endian: Endian,
    (terminator, field): (u8, &'static str),
) -> BinResult<()>
where
    W: Write + Seek,
    B: BytesRef + ?Sized,
{
    let Some(bytes) = value.bytes() else {
        return Ok(());
    };
    if bytes.contains(&terminator) {
        let pos = writer.stream_position()?;
        return Err(fail(
            pos,
            field,
            format!("the bytes contain the terminator {terminator:#04x}"),
        ));
    }
    writer.write_all(bytes)?;
    writer.write_all(&[terminator])?;
    Ok(())
}

/// Reads a `T` that occupies exactly `size` bytes: the bytes are checked
/// against the stream (and `max`) and read first, then `T` is parsed from
/// them and must use them all.
pub fn read_sized<R, E, A, T>(
    reader: &mut R,
    endian: Endian,
    (size, max, field, args): (u64, u64, &'static str, A),
) -> BinResult<T>
where
    R: Read + Seek,
    E: for<'a> BinRead<Args<'a> = A>,
    T: From<E>,
{
    let start = reader.stream_position()?;
    let bytes: Vec<u8> = read_bytes(reader, endian, (size, max, field))?;
    let mut inner = binrw::io::Cursor::new(bytes.as_slice());
    let value = E::read_options(&mut inner, endian, args).map_err(|err| {
        let inner_pos = binrw_pos(innermost(&err)).unwrap_or(0);
        fail(
            start.saturating_add(inner_pos),
            field,
            flatten_message(&err),
        )
    })?;
    let used = inner.position();
    if used != size {
        return Err(fail(
            start.saturating_add(used),
            field,
            Cause::TrailingBytes {
                count: size.saturating_sub(used),
            },
        ));
    }
    Ok(T::from(value))
}

/// The read side of a switch value the spec refuses: always an error.
pub fn reject<R: Read + Seek>(
    reader: &mut R,
    _endian: Endian,
    (field, reason): (&'static str, &'static str),
) -> BinResult<()> {
    let pos = reader.stream_position()?;
    Err(binrw::Error::Custom {
        pos,
        err: Box::new(format!("{field}: {reason}")),
    })
}

/// The write side of a refused switch value: it cannot be written either.
pub fn reject_write<W: Write + Seek>(
    _value: &(),
    writer: &mut W,
    _endian: Endian,
    (field,): (&'static str,),
) -> BinResult<()> {
    let pos = writer.stream_position()?;
    Err(fail(pos, field, "a refused value cannot be written"))
}

/// A fixed-size little-endian number, for bulk list reads.
pub trait LeNumber: Sized + Copy {
    /// Its size in bytes.
    const SIZE: usize;
    /// Reads it from the first `SIZE` bytes, little-endian.
    fn from_le_slice(bytes: &[u8]) -> Self;
}

macro_rules! le_number {
    ($($t:ty),*) => {$(
        impl LeNumber for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn from_le_slice(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                raw.copy_from_slice(bytes);
                <$t>::from_le_bytes(raw)
            }
        }
    )*};
}
le_number!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

/// Reads `count` little-endian numbers in bulk, after checking that they fit
/// in what remains (and in `max`).
pub fn read_numbers<R, N, T>(
    reader: &mut R,
    endian: Endian,
    (count, max, field): (u64, u64, &'static str),
) -> BinResult<T>
where
    R: Read + Seek,
    N: LeNumber,
    T: From<Vec<N>>,
{
    let _ = endian; // the format is little-endian throughout
    check_fits(reader, count, max, N::SIZE as u64, field)?;
    let pos = reader.stream_position()?;
    let total = usize::try_from(count.saturating_mul(N::SIZE as u64))
        .map_err(|_| fail(pos, field, format!("{count} numbers do not fit in memory")))?;
    let mut bytes = vec![0u8; total];
    reader.read_exact(&mut bytes)?;
    let numbers = bytes.chunks_exact(N::SIZE).map(N::from_le_slice).collect();
    Ok(T::from(numbers))
}
