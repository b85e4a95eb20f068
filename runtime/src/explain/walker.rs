//! The position-tracking reader the generated walkers (`walkers.rs`) call:
//! it reads little-endian values within a window of a byte buffer and
//! records a tree of [`Span`]s, one per field, as the walkers enter and
//! leave fields.

use crate::error::{Cause, Error, Result};

/// What the spec says of one field, as the codegen writes it into a walker.
#[derive(Debug, Clone, Copy)]
pub struct FieldInfo {
    /// `Struct.field`, as spec/ names it.
    pub name: &'static str,
    /// The field's type in spec/ terms (`u32`, `Datatype`, `list<Attribute>`).
    pub spec_type: &'static str,
    /// The spec file that defines it (`spec/array_schema.toml`).
    pub spec_file: &'static str,
    /// The upstream section or source file the field follows.
    pub source: &'static str,
    /// Where upstream's document is wrong about the field.
    pub erratum: Option<&'static str>,
    /// The version gate or condition that makes the field present.
    pub gate: Option<&'static str>,
}

/// The file bytes a range of an unfiltered payload comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FileOrigin {
    /// The first file byte.
    pub start: u64,
    /// One past the last file byte.
    pub end: u64,
    /// True: these file bytes are the payload bytes themselves (their chunk
    /// is stored unfiltered). False: the range is the filtered data of the
    /// chunk(s) the payload bytes are decoded from.
    pub exact: bool,
}

/// One explained range of bytes: a field, a list element or a part of a file.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Span {
    /// The field (`Struct.field`), `[i]` for a list element, or a part's name.
    pub name: String,
    /// The spec type.
    pub spec_type: String,
    /// Offset of the first byte, in the buffer the span's walk read.
    pub offset: u64,
    /// Number of bytes.
    pub size: u64,
    /// The decoded value of a number, flag or enum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The enum variant's spec name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enum_name: Option<String>,
    /// The bytes in hexadecimal (the first 64 of longer fields).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub hex: String,
    /// The gate that decided presence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    /// Whether the field is in the bytes (false: its gate did not hold).
    pub present: bool,
    /// The spec file.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub spec_file: String,
    /// The upstream source.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// Upstream's erratum, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub erratum: Option<String>,
    /// Where the bytes are: `file` or `payload` (of the generic tile around them).
    pub space: &'static str,
    /// For a span of an unfiltered payload: the file bytes it comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<FileOrigin>,
    /// The parts of the span.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Span>,
}

impl Span {
    /// A span that groups others (a file, a tile, a payload).
    pub fn group(name: impl Into<String>, space: &'static str, offset: u64, size: u64) -> Span {
        Span {
            name: name.into(),
            offset,
            size,
            present: true,
            space,
            ..Span::default()
        }
    }

    /// Adds `offset` to this span and every span under it.
    pub fn shift(&mut self, offset: u64) {
        self.offset += offset;
        for child in &mut self.children {
            child.shift(offset);
        }
    }

    /// The ranges of present, childless spans of `space` (the bytes fields claim).
    pub fn leaves(&self, space: &str, out: &mut Vec<(u64, u64)>) {
        if self.children.is_empty() {
            if self.present && self.size > 0 && self.space == space {
                out.push((self.offset, self.offset + self.size));
            }
        } else {
            for child in &self.children {
                child.leaves(space, out);
            }
        }
    }
}

/// Reads a buffer field by field, recording spans.
pub struct Walker<'a> {
    bytes: &'a [u8],
    pos: u64,
    end: u64,
    windows: Vec<u64>,
    stack: Vec<Span>,
    space: &'static str,
}

/// A little-endian number a walker reads.
pub trait Number: Sized + std::fmt::Display {
    /// Its size in bytes.
    const SIZE: usize;
    /// Decodes it from exactly `SIZE` bytes.
    fn from_le(bytes: &[u8]) -> Self;
}

macro_rules! number {
    ($($t:ty),*) => {$(
        impl Number for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn from_le(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                raw.copy_from_slice(bytes);
                <$t>::from_le_bytes(raw)
            }
        }
    )*};
}
number!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

fn hex(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(64)];
    let mut out: String = shown.iter().map(|b| format!("{b:02x}")).collect();
    if bytes.len() > shown.len() {
        out.push('…');
    }
    out
}

/// The layout version of an experimental format version
/// (spec/format.toml, facts `experimental_format_version` and
/// `experimental_format_layout`); `None` for every other version.
pub fn layout_of_version(version: u32) -> Option<u32> {
    use crate::format::generated::{EXPERIMENTAL_FORMAT_LAYOUT, EXPERIMENTAL_FORMAT_VERSION};
    (u64::from(version) == EXPERIMENTAL_FORMAT_VERSION).then_some(EXPERIMENTAL_FORMAT_LAYOUT as u32)
}

impl<'a> Walker<'a> {
    /// A walker over all of `bytes`, whose spans are in `space` (`file` or `payload`).
    pub fn new(bytes: &'a [u8], root: &str, space: &'static str) -> Walker<'a> {
        Walker {
            bytes,
            pos: 0,
            end: bytes.len() as u64,
            windows: Vec::new(),
            stack: vec![Span::group(root, space, 0, 0)],
            space,
        }
    }

    /// Starts at `pos` instead of 0.
    pub fn seek(&mut self, pos: u64) {
        self.pos = pos.min(self.end);
    }

    /// The current position.
    pub fn pos(&self) -> u64 {
        self.pos
    }

    /// The root span with everything walked so far.
    pub fn finish(mut self) -> Span {
        while self.stack.len() > 1 {
            self.leave();
        }
        let mut root = self.stack.pop().unwrap_or_default();
        root.size = self.pos.saturating_sub(root.offset);
        root
    }

    /// Bytes left in the current window.
    pub fn remaining(&self) -> u64 {
        self.end.saturating_sub(self.pos)
    }

    fn error(&self, cause: impl Into<Cause>) -> Error {
        let field = self
            .stack
            .last()
            .map(|s| s.name.clone())
            .unwrap_or_default();
        Error::corrupt(self.pos, field, cause)
    }

    /// Opens the span of a present field.
    pub fn enter(&mut self, info: &FieldInfo, gate_held: Option<bool>) {
        self.stack.push(Span {
            name: info.name.into(),
            spec_type: info.spec_type.into(),
            offset: self.pos,
            gate: info.gate.filter(|_| gate_held.is_some()).map(Into::into),
            present: true,
            spec_file: info.spec_file.into(),
            source: info.source.into(),
            erratum: info.erratum.map(Into::into),
            space: self.space,
            ..Span::default()
        });
    }

    /// Opens a span that groups the fields of a struct (`name`, of spec type `spec_type`).
    pub fn enter_group(&mut self, name: &str, spec_type: &str) {
        self.stack.push(Span {
            name: name.into(),
            spec_type: spec_type.into(),
            offset: self.pos,
            present: true,
            space: self.space,
            ..Span::default()
        });
    }

    /// Opens the span of list element `i`.
    pub fn enter_elem(&mut self, i: u64) {
        self.stack.push(Span {
            name: format!("[{i}]"),
            offset: self.pos,
            present: true,
            space: self.space,
            ..Span::default()
        });
    }

    /// Closes the innermost span.
    pub fn leave(&mut self) {
        if self.stack.len() < 2 {
            return;
        }
        if let Some(mut span) = self.stack.pop() {
            span.size = self.pos.saturating_sub(span.offset);
            if let Some(parent) = self.stack.last_mut() {
                parent.children.push(span);
            }
        }
    }

    /// Records a field whose gate did not hold.
    pub fn absent(&mut self, info: &FieldInfo) {
        self.enter(info, Some(false));
        if let Some(span) = self.stack.last_mut() {
            span.present = false;
        }
        self.leave();
    }

    /// The format version whose layout a struct with stored version
    /// `version` has: itself, except spec/format.toml's experimental
    /// version, which stands for `EXPERIMENTAL_FORMAT_LAYOUT`. The span of
    /// the version just walked (the last one closed) says so beside the
    /// stored value.
    pub fn layout_version(&mut self, version: u32) -> u32 {
        let Some(layout) = layout_of_version(version) else {
            return version;
        };
        let last = self.stack.last_mut().and_then(|s| s.children.last_mut());
        if let Some(span) = last {
            span.value = Some(format!(
                "{version} (experimental build: laid out as version {layout})"
            ));
        }
        layout
    }

    /// Checks a fixed value.
    pub fn expect(&self, info: &FieldInfo, held: bool) -> Result<()> {
        if held {
            Ok(())
        } else {
            Err(self.error(format!("{} does not hold its fixed value", info.name)))
        }
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.error(Cause::Truncated {
                needed: n,
                available: self.remaining(),
            }));
        }
        let start = self.pos as usize;
        self.pos += n;
        let bytes = &self.bytes[start..start + n as usize];
        if let Some(span) = self.stack.last_mut() {
            if span.hex.is_empty() {
                span.hex = hex(bytes);
            }
        }
        Ok(bytes)
    }

    fn set_value(&mut self, value: String) {
        if let Some(span) = self.stack.last_mut() {
            span.value = Some(value);
        }
    }

    /// Reads a number.
    pub fn prim<T: Number>(&mut self) -> Result<T> {
        let value = T::from_le(self.take(T::SIZE as u64)?);
        self.set_value(value.to_string());
        Ok(value)
    }

    /// Reads a flag (0 or 1).
    pub fn bool(&mut self) -> Result<bool> {
        match self.take(1)?[0] {
            0 => {
                self.set_value("false".into());
                Ok(false)
            }
            1 => {
                self.set_value("true".into());
                Ok(true)
            }
            other => Err(self.error(Cause::BadEnumValue {
                enum_name: "boolean",
                value: other.into(),
            })),
        }
    }

    /// Names the enum value just read.
    pub fn name_value(&mut self, name: &str) {
        if let Some(span) = self.stack.last_mut() {
            span.enum_name = Some(name.into());
        }
    }

    /// The error for a value no variant of `enum_name` has.
    pub fn bad_enum(&self, enum_name: &'static str, value: u64) -> Error {
        self.error(Cause::BadEnumValue { enum_name, value })
    }

    /// The error for a switch value the spec refuses.
    pub fn refused(&self, field: &str) -> Error {
        self.error(format!("{field}: a value the format refuses"))
    }

    /// The error for a layout the walkers do not describe.
    pub fn unsupported(&self) -> Error {
        self.error("a layout the explain walkers do not describe")
    }

    /// Reads `n` bytes (at most `max`).
    pub fn bytes(&mut self, n: u64, max: u64) -> Result<Vec<u8>> {
        if n > max {
            return Err(self.error(Cause::OutOfRange {
                value: n,
                limit: max,
            }));
        }
        let bytes = self.take(n)?.to_vec();
        self.set_text(&bytes);
        Ok(bytes)
    }

    fn set_text(&mut self, bytes: &[u8]) {
        if !bytes.is_empty() && bytes.len() <= 256 {
            if let Ok(text) = std::str::from_utf8(bytes) {
                if text.chars().all(|c| !c.is_control()) {
                    self.set_value(format!("{text:?}"));
                }
            }
        }
    }

    /// Reads the rest of the window (at most `max`).
    pub fn bytes_to_end(&mut self, max: u64) -> Result<Vec<u8>> {
        let n = self.remaining();
        self.bytes(n, max)
    }

    /// Reads up to and including `terminator`; gives the bytes before it
    /// (with `or_end`, the end of the window ends the value too, as
    /// `format::io::read_terminated` reads it).
    pub fn terminated(&mut self, terminator: u8, or_end: bool, max: u64) -> Result<Vec<u8>> {
        let rest = &self.bytes[self.pos as usize..self.end as usize];
        let bytes = match rest.iter().position(|b| *b == terminator) {
            Some(at) => {
                let mut bytes = self.bytes(at as u64 + 1, max.saturating_add(1))?;
                bytes.pop();
                bytes
            }
            // `or_end`: the end of the enclosing structure closes the value
            // too (a last line without its newline).
            None if or_end => self.bytes(rest.len() as u64, max)?,
            None => return Err(self.error(Cause::EndsEarly)),
        };
        self.set_text(&bytes);
        Ok(bytes)
    }

    /// Fails when nothing was read since `before` (an element of a list read
    /// to the end of its window must take bytes).
    pub fn advanced_since(&self, before: u64) -> Result<()> {
        if self.pos > before {
            Ok(())
        } else {
            Err(self.error("a list element that takes no bytes"))
        }
    }

    /// Checks a list's count against its bound and the bytes left.
    pub fn check_count(&self, n: u64, max: u64, elem_min: u64) -> Result<u64> {
        let limit = max.min(self.remaining() / elem_min.max(1));
        if n > limit {
            return Err(self.error(Cause::OutOfRange { value: n, limit }));
        }
        Ok(n)
    }

    /// Narrows the window to the next `size` bytes.
    pub fn push_window(&mut self, size: u64, max: u64) -> Result<()> {
        if size > max || size > self.remaining() {
            return Err(self.error(Cause::Truncated {
                needed: size,
                available: self.remaining(),
            }));
        }
        self.windows.push(self.end);
        self.end = self.pos + size;
        Ok(())
    }

    /// Ends a window, which must have been read whole.
    pub fn pop_window(&mut self) -> Result<()> {
        if self.pos != self.end {
            return Err(self.error(Cause::TrailingBytes {
                count: self.remaining(),
            }));
        }
        self.end = self.windows.pop().unwrap_or(self.bytes.len() as u64);
        Ok(())
    }
}
