//! One error type for the whole runtime.
//!
//! A conformance runner, and any careful caller, must tell a valid file we do
//! not handle ([`Error::Unsupported`]) from an invalid one ([`Error::Corrupt`]);
//! so the class is part of the type, and every corrupt-input error locates the
//! fault: the file, the byte offset in it, and the structure/field path; and
//! says what was wrong as data ([`Cause`]), so that tests assert exact errors.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in which file a problem was found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    /// The file, as the caller named it; empty while the error is still being
    /// raised inside code that works on buffers (see [`Error::in_file`]).
    pub file: PathBuf,
    /// Byte offset in `file`.
    pub offset: u64,
    /// The structure and field, e.g. `ArraySchema.domain.dimensions[1].name`
    /// or `tile 3, chunk 0, ZSTD`.
    pub field: String,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.file.as_os_str().is_empty() {
            write!(f, "byte {}: {}", self.offset, self.field)
        } else {
            write!(
                f,
                "{}: byte {}: {}",
                self.file.display(),
                self.offset,
                self.field
            )
        }
    }
}

/// What is wrong with a corrupt input, as data. `Display` gives the human
/// message; [`Cause::Text`] holds the causes not (yet) given a structure.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cause {
    /// `needed` bytes are needed at the offset, but only `available` remain.
    Truncated {
        /// Bytes the structure needs from the offset on.
        needed: u64,
        /// Bytes the input has from the offset on.
        available: u64,
    },
    /// The data ends inside a structure (the binary reader ran out; how
    /// much more it wanted is not known).
    EndsEarly,
    /// A stored value beyond its limit (`value > limit`).
    OutOfRange {
        /// The stored value.
        value: u64,
        /// The largest value allowed.
        limit: u64,
    },
    /// A stored value that names no variant of the enumeration `enum_name`
    /// (`"boolean"` for a flag that must be 0 or 1).
    BadEnumValue {
        /// The enumeration (or `boolean`).
        enum_name: &'static str,
        /// The stored value.
        value: u64,
    },
    /// A checksum (`algorithm`) that does not match the bytes it covers;
    /// the digests in hexadecimal.
    ChecksumMismatch {
        /// The checksum filter, by its TileDB name (`CHECKSUM_MD5`, `CHECKSUM_SHA256`).
        algorithm: &'static str,
        /// The digest stored in the file.
        expected: String,
        /// The digest of the bytes.
        actual: String,
    },
    /// Two stored facts that must agree do not: `what` is `found`, the rest
    /// of the file says `expected`.
    Inconsistent {
        /// The stored fact that disagrees.
        what: &'static str,
        /// What the rest of the file implies.
        expected: u64,
        /// What is stored.
        found: u64,
    },
    /// `count` bytes after the end of the structure.
    TrailingBytes {
        /// How many bytes follow the structure.
        count: u64,
    },
    /// Bytes that must be UTF-8 text (a name, a path, a line) are not.
    NotUtf8,
    /// Something that must not be empty is: a count of 0, an empty name.
    Empty {
        /// What is empty, e.g. `the member URI`.
        what: &'static str,
    },
    /// A part the format requires is absent.
    Missing {
        /// What is missing, e.g. `the domain of a dense dimension`.
        what: &'static str,
    },
    /// An index past the end of the table it indexes (`index >= count`).
    IndexOutOfRange {
        /// The index, stored or implied (a tile, a dimension, a condition).
        index: u64,
        /// How many entries the table has.
        count: u64,
    },
    /// Stored values that must ascend do not: `value` follows `previous`.
    NotAscending {
        /// The value before.
        previous: u64,
        /// The value that is smaller.
        value: u64,
    },
    /// A byte length that is not a whole number of units.
    NotMultiple {
        /// The stored length.
        size: u64,
        /// The unit it must be a multiple of.
        unit: u64,
    },
    /// A stored name that differs from the one the rest of the array gives
    /// it (the field path says which name).
    NameMismatch {
        /// The name the rest of the array gives.
        expected: String,
        /// The name stored.
        found: String,
    },
    /// A stored name or path without the form the format requires.
    BadName {
        /// The name or path as stored.
        name: String,
        /// The form it must have, e.g. `a timestamped name`.
        expected: &'static str,
    },
    /// A codec (a compressor, an image format) refused the stored bytes:
    /// which codec is data, its library's own message is `detail`.
    Codec {
        /// The codec, e.g. `zlib`, `zstd`, `lz4`, `bzip2`, `WebP`.
        codec: &'static str,
        /// What the codec's library reported.
        detail: String,
    },
    /// Authenticated decryption (`algorithm`) refused part `part` of a chunk:
    /// the key is wrong or the bytes were altered.
    Unauthentic {
        /// The cipher, e.g. `AES-256-GCM`.
        algorithm: &'static str,
        /// The index of the refused part in the chunk's parts.
        part: u64,
    },
    /// A stored value outside the set the format allows, e.g. a width that
    /// must be 1, 2, 4 or 8.
    NotOneOf {
        /// What the value is, e.g. `the bit width of a window`.
        what: &'static str,
        /// The stored value.
        value: u64,
        /// The values allowed.
        allowed: &'static [u64],
    },
    /// Stored sizes that add up to `size` bytes, more memory than the
    /// system gives (an allocation of that size failed).
    TooLarge {
        /// The bytes the stored sizes call for.
        size: u64,
    },
    /// Any other cause, as text.
    Text(String),
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Truncated { needed, available } => {
                write!(f, "needs {needed} bytes, but only {available} remain")
            }
            Cause::EndsEarly => f.write_str("the data ends early"),
            Cause::OutOfRange { value, limit } => {
                write!(f, "{value} exceeds the maximum {limit}")
            }
            Cause::BadEnumValue { enum_name, value } => {
                write!(f, "{value} is not a valid {enum_name}")
            }
            Cause::ChecksumMismatch {
                algorithm,
                expected,
                actual,
            } => write!(
                f,
                "{algorithm} mismatch: stored {expected}, computed {actual}"
            ),
            Cause::Inconsistent {
                what,
                expected,
                found,
            } => write!(f, "{what} is {found}, expected {expected}"),
            Cause::TrailingBytes { count } => write!(f, "{count} unexpected trailing byte(s)"),
            Cause::NotUtf8 => f.write_str("not valid UTF-8"),
            Cause::Empty { what } => write!(f, "{what} is empty"),
            Cause::Missing { what } => write!(f, "{what} is missing"),
            Cause::IndexOutOfRange { index, count } => {
                write!(f, "index {index} is past the {count} entries")
            }
            Cause::NotAscending { previous, value } => {
                write!(f, "{value} follows {previous}, but the values must ascend")
            }
            Cause::NotMultiple { size, unit } => {
                write!(f, "{size} bytes is not a whole number of {unit}-byte units")
            }
            Cause::NameMismatch { expected, found } => {
                write!(f, "stored {found:?}, expected {expected:?}")
            }
            Cause::BadName { name, expected } => write!(f, "{name:?} is not {expected}"),
            Cause::Codec { codec, detail } => write!(f, "{codec}: {detail}"),
            Cause::Unauthentic { algorithm, part } => write!(
                f,
                "{algorithm} authentication failed on part {part} (wrong key or corrupt data)"
            ),
            Cause::NotOneOf {
                what,
                value,
                allowed,
            } => {
                let allowed: Vec<String> = allowed.iter().map(u64::to_string).collect();
                write!(f, "{what} is {value}, not one of {}", allowed.join(", "))
            }
            Cause::TooLarge { size } => {
                write!(f, "needs {size} bytes, more than can be allocated")
            }
            Cause::Text(text) => f.write_str(text),
        }
    }
}

impl From<String> for Cause {
    fn from(text: String) -> Cause {
        Cause::Text(text)
    }
}

impl From<&str> for Cause {
    fn from(text: &str) -> Cause {
        Cause::Text(text.to_string())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
/// An error of the library, in four classes ([`ErrorClass`]); `Display` gives the message.
pub enum Error {
    /// The input breaks the format: truncated, out of range, inconsistent,
    /// a failed checksum, a path that escapes the array's folder.
    #[error("corrupt: {at}: {cause}")]
    Corrupt {
        /// Where: the file, the byte offset and the structure's field.
        at: Location,
        /// What is wrong.
        cause: Cause,
    },
    /// A valid input that this implementation does not handle (a format
    /// version newer than ours, a filter we lack, a missing key).
    #[error("unsupported: {}{what}", file_prefix(.file))]
    Unsupported {
        /// The file (empty when the input is not tied to one).
        file: PathBuf,
        /// What is not supported.
        what: String,
    },
    /// The operating system refused a read or write.
    #[error("i/o: {}: {message}", .file.display())]
    Io {
        /// The file the operation was on.
        file: PathBuf,
        /// What the operating system reported, as its kind.
        kind: std::io::ErrorKind,
        /// The operating system's message.
        message: String,
    },
    /// The caller asked for something impossible (a range outside the domain,
    /// an unknown attribute, a value of the wrong type).
    #[error("invalid request: {0}")]
    Usage(String),
}

fn file_prefix(file: &Path) -> String {
    if file.as_os_str().is_empty() {
        String::new()
    } else {
        format!("{}: ", file.display())
    }
}

/// The short class name a conformance runner compares against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The input breaks the format.
    Corrupt,
    /// A valid input this implementation does not handle.
    Unsupported,
    /// The operating system refused a read or write.
    Io,
    /// The caller asked for something impossible.
    Usage,
}

impl ErrorClass {
    /// The class as conformance cases name it: `corrupt`, `unsupported`, `io` or `usage`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Corrupt => "corrupt",
            ErrorClass::Unsupported => "unsupported",
            ErrorClass::Io => "io",
            ErrorClass::Usage => "usage",
        }
    }
}

impl Error {
    /// A corrupt-input error raised while working on a buffer; the caller
    /// that knows the file adds it with [`Error::in_file`]. `cause` is a
    /// [`Cause`], or text (which becomes [`Cause::Text`]).
    pub fn corrupt(offset: u64, field: impl Into<String>, cause: impl Into<Cause>) -> Self {
        Error::Corrupt {
            at: Location {
                file: PathBuf::new(),
                offset,
                field: field.into(),
            },
            cause: cause.into(),
        }
    }

    /// The cause of a corrupt-input error.
    pub fn cause(&self) -> Option<&Cause> {
        match self {
            Error::Corrupt { cause, .. } => Some(cause),
            _ => None,
        }
    }

    /// An unsupported input, not tied to a file.
    pub fn unsupported(what: impl Into<String>) -> Self {
        Error::Unsupported {
            file: PathBuf::new(),
            what: what.into(),
        }
    }

    /// An I/O error on `file`.
    pub fn io(file: impl Into<PathBuf>, err: &std::io::Error) -> Self {
        Error::Io {
            file: file.into(),
            kind: err.kind(),
            message: err.to_string(),
        }
    }

    /// Its class.
    pub fn class(&self) -> ErrorClass {
        match self {
            Error::Corrupt { .. } => ErrorClass::Corrupt,
            Error::Unsupported { .. } => ErrorClass::Unsupported,
            Error::Io { .. } => ErrorClass::Io,
            Error::Usage(_) => ErrorClass::Usage,
        }
    }

    /// Names the file the error was found in, unless a file is named already.
    pub fn in_file(mut self, file: impl AsRef<Path>) -> Self {
        match &mut self {
            Error::Corrupt { at, .. } if at.file.as_os_str().is_empty() => {
                at.file = file.as_ref().to_path_buf();
            }
            Error::Unsupported { file: f, .. } if f.as_os_str().is_empty() => {
                *f = file.as_ref().to_path_buf();
            }
            _ => {}
        }
        self
    }

    /// Shifts a buffer-relative offset to a file offset: the buffer started
    /// at byte `base` of its file.
    pub fn at_base(mut self, base: u64) -> Self {
        if let Error::Corrupt { at, .. } = &mut self {
            at.offset = at.offset.saturating_add(base);
        }
        self
    }

    /// Prefixes the field path with the enclosing structure, e.g. `tile 3`.
    pub fn within(mut self, outer: impl fmt::Display) -> Self {
        if let Error::Corrupt { at, .. } = &mut self {
            at.field = if at.field.is_empty() {
                outer.to_string()
            } else {
                format!("{outer}, {}", at.field)
            };
        }
        self
    }
}

/// A result whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
