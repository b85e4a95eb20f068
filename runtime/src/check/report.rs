use super::*;

/// One problem found in an array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Which kind of problem: the class an error of the same cause would have.
    pub class: ErrorClass,
    /// The file, relative to the array folder (`.` for the folder itself).
    pub file: String,
    /// Byte offset within the file (0 when the problem is the whole file).
    pub offset: u64,
    /// The structure and field, e.g. `FragmentFooter.file_sizes[2]`.
    pub field: String,
    /// What is wrong, for a person to read: the cause rendered, for a
    /// corrupt-class finding.
    pub message: String,
    /// What is wrong, as data, for a corrupt-class finding (the cause of the
    /// error that raised it, or the check's own); `None` for the other
    /// classes and for notes, which carry text only.
    pub cause: Option<Cause>,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}: byte {}: ",
            self.class.name(),
            self.file,
            self.offset
        )?;
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

/// What `check_array` found, and how much it looked at.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The problems; an array with none is clean.
    pub findings: Vec<Finding>,
    /// Things worth knowing that are not problems: readers ignore them and
    /// the array is still clean (an uncommitted fragment left by an
    /// interrupted write, which vacuuming or a later write may remove).
    pub notes: Vec<Finding>,
    /// Files loaded and verified.
    pub files_checked: usize,
    /// Data tiles unfiltered and verified.
    pub tiles_checked: usize,
    /// Tiles whose recorded min, max, sum and null count were recomputed
    /// from their cells (sparse fragments of format 11 and later).
    pub tile_metadata_checked: usize,
    /// Cells the full read returned (0 when it did not run).
    pub cells_read: u64,
}

impl Report {
    /// No findings (notes do not count).
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

/// Data tiles that unfilter to more than this are reported (class
/// unsupported) rather than decoded: a forged chunk length must not make the
/// check allocate without bound.
pub const DEFAULT_MAX_TILE_SIZE: u64 = 1 << 30;

/// Options of a check.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// The AES-256-GCM key of an encrypted array.
    pub encryption_key: Option<[u8; 32]>,
    /// The largest unfiltered data tile decoded (default
    /// [`DEFAULT_MAX_TILE_SIZE`]).
    pub max_tile_size: Option<u64>,
}

pub(super) fn finding_from(err: &Error, file: &str) -> Finding {
    match err {
        Error::Corrupt { at, cause } => Finding {
            class: ErrorClass::Corrupt,
            file: file.to_string(),
            offset: at.offset,
            field: at.field.clone(),
            message: cause.to_string(),
            cause: Some(cause.clone()),
        },
        Error::Unsupported { what, .. } => Finding {
            class: ErrorClass::Unsupported,
            file: file.to_string(),
            offset: 0,
            field: String::new(),
            message: what.clone(),
            cause: None,
        },
        Error::Io { message, .. } => Finding {
            class: ErrorClass::Io,
            file: file.to_string(),
            offset: 0,
            field: String::new(),
            message: message.clone(),
            cause: None,
        },
        Error::Usage(message) => Finding {
            class: ErrorClass::Usage,
            file: file.to_string(),
            offset: 0,
            field: String::new(),
            message: message.clone(),
            cause: None,
        },
        #[allow(unreachable_patterns)]
        other => Finding {
            class: other.class(),
            file: file.to_string(),
            offset: 0,
            field: String::new(),
            message: other.to_string(),
            cause: None,
        },
    }
}
