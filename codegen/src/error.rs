//! Errors in a spec: each names the file, the key path inside it and what is wrong.

use std::fmt;

/// A problem found in `spec/`, located by file and key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The spec file as the repository names it, e.g. `spec/array_schema.toml`.
    pub file: String,
    /// Where in the file, e.g. `struct Attribute, field fill`; empty for the file as a whole.
    pub path: String,
    /// What is wrong.
    pub kind: SpecErrorKind,
}

/// The kinds of malformed spec the codegen rejects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpecErrorKind {
    /// The file could not be read.
    Io(String),
    /// The file is not TOML of the expected shape (unknown key, wrong value type).
    Syntax(String),
    /// A type name that is neither a primitive, `bytes`, nor a declared enum, struct or context.
    UnknownType(String),
    /// An expression names something that is not declared (or not yet declared).
    UnknownName {
        /// The key holding the expression.
        key: String,
        /// The name that resolves to nothing.
        name: String,
    },
    /// An expression names a field that is declared after the one that uses it.
    LaterField {
        /// The key holding the expression.
        key: String,
        /// The field named before its declaration.
        name: String,
    },
    /// An expression that is not in the expression language.
    BadExpression {
        /// The key holding the expression.
        key: String,
        /// What the parser or type checker objects to.
        reason: String,
    },
    /// `since` is not lower than `until`.
    InvertedGate {
        /// The version the field appears in.
        since: u32,
        /// The version it is removed in, not above `since`.
        until: u32,
    },
    /// A gate outside `oldest..=current+1`.
    GateOutOfRange {
        /// `since` or `until`.
        key: &'static str,
        /// The version the gate names.
        value: u32,
        /// `oldest` of `format.toml`.
        oldest: u32,
        /// `current + 1`, the highest gate allowed.
        newest: u32,
    },
    /// Two enum variants with the same value.
    DuplicateValue {
        /// The value both carry.
        value: i64,
        /// The variant declared first.
        first: String,
        /// The variant that repeats its value.
        second: String,
    },
    /// Two things with the same name in one scope.
    DuplicateName {
        /// What kind of thing repeats (`field`, `variant`, `struct`, …).
        what: String,
        /// The repeated name.
        name: String,
    },
    /// An enum variant that does not set a declared property.
    MissingProperty(String),
    /// An enum variant that sets a key that is not a declared property.
    UnknownProperty(String),
    /// `length_of`/`size_of` names a field that is missing or comes earlier.
    BadLengthTarget {
        /// `length_of` or `size_of`.
        key: &'static str,
        /// The field it names.
        target: String,
        /// Why that field cannot be measured from here.
        reason: String,
    },
    /// A switch case that names a variant its enum does not have.
    UnknownVariant {
        /// The enum switched on.
        enum_name: String,
        /// The case key that is none of its variants.
        variant: String,
    },
    /// A switch over an enum that leaves variants out without saying why
    /// they take the default.
    NonExhaustiveSwitch {
        /// The enum switched on.
        enum_name: String,
        /// Its variants that neither `cases` nor `errors` lists.
        unlisted: Vec<String>,
        /// The switch has a `default` (then it lacks `default_reason`).
        has_default: bool,
    },
    /// A switch over an open enum (`enum = …`) without a `default` for the
    /// values the enum does not know.
    OpenSwitchWithoutFallback {
        /// The open enum.
        enum_name: String,
    },
    /// `format.toml` sets a version (`current`, `reads`, `writes`) or spans
    /// one (`oldest..=current`) that has no `[[version]]` history entry.
    MissingVersionEntry {
        /// The key that sets or spans the version.
        key: &'static str,
        /// The version without an entry.
        version: u32,
    },
    /// A struct's declared `fixed_size` disagrees with its fields.
    FixedSizeMismatch {
        /// `fixed_size` as the spec states it.
        declared: u64,
        /// The sum of the fields, or why they have no fixed size.
        computed: String,
    },
    /// `view = true` on a struct whose layout a zero-copy view cannot read.
    NotViewable(String),
    /// Anything else that makes the spec inconsistent.
    Invalid(String),
}

impl fmt::Display for SpecErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecErrorKind::Io(message) => write!(f, "cannot read: {message}"),
            SpecErrorKind::Syntax(message) => write!(f, "{message}"),
            SpecErrorKind::UnknownType(name) => write!(
                f,
                "unknown type \"{name}\" (not a primitive, bytes, or a declared enum, struct or context)"
            ),
            SpecErrorKind::UnknownName { key, name } => write!(
                f,
                "{key} refers to \"{name}\", which is not an earlier field or a param"
            ),
            SpecErrorKind::LaterField { key, name } => write!(
                f,
                "{key} refers to \"{name}\", which is declared later; only earlier fields and params can be used"
            ),
            SpecErrorKind::BadExpression { key, reason } => write!(f, "{key}: {reason}"),
            SpecErrorKind::InvertedGate { since, until } => write!(
                f,
                "since = {since} is not lower than until = {until}, so the field is never present"
            ),
            SpecErrorKind::GateOutOfRange { key, value, oldest, newest } => write!(
                f,
                "{key} = {value} is outside the versions {oldest}..={newest} (oldest..=current+1)"
            ),
            SpecErrorKind::DuplicateValue { value, first, second } => write!(
                f,
                "value {value} is used by both {first} and {second}"
            ),
            SpecErrorKind::DuplicateName { what, name } => {
                write!(f, "{what} \"{name}\" is declared twice")
            }
            SpecErrorKind::MissingProperty(property) => {
                write!(f, "property \"{property}\" is declared by the enum but not set")
            }
            SpecErrorKind::UnknownProperty(key) => write!(
                f,
                "key \"{key}\" is neither a variant key nor a property declared by the enum"
            ),
            SpecErrorKind::BadLengthTarget { key, target, reason } => {
                write!(f, "{key} = \"{target}\": {reason}")
            }
            SpecErrorKind::UnknownVariant { enum_name, variant } => {
                write!(f, "switch case \"{variant}\" is not a variant of {enum_name}")
            }
            SpecErrorKind::NonExhaustiveSwitch {
                enum_name,
                unlisted,
                has_default,
            } => {
                let unlisted = unlisted.join(", ");
                if *has_default {
                    write!(
                        f,
                        "type.cases: the switch over {enum_name} sends {unlisted} to its default without saying why; list them in cases or errors, or give default_reason"
                    )
                } else {
                    write!(
                        f,
                        "type.cases: the switch over {enum_name} does not list {unlisted}; list them in cases or errors, or give a default with default_reason"
                    )
                }
            }
            SpecErrorKind::OpenSwitchWithoutFallback { enum_name } => write!(
                f,
                "type.default: the switch over the open enum {enum_name} has no default for the values {enum_name} does not know; give one (a struct holding the bytes) so that newer files stay readable"
            ),
            SpecErrorKind::MissingVersionEntry { version, .. } => write!(
                f,
                "version {version} has no [[version]] entry in the history; add one saying what it changed"
            ),
            SpecErrorKind::FixedSizeMismatch { declared, computed } => write!(
                f,
                "fixed_size = {declared}, but the fields take {computed}"
            ),
            SpecErrorKind::NotViewable(why) => write!(f, "view = true, but the field {why}"),
            SpecErrorKind::Invalid(message) => write!(f, "{message}"),
        }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}: {}", self.file, self.kind)
        } else {
            write!(f, "{}: {}: {}", self.file, self.path, self.kind)
        }
    }
}

impl std::error::Error for SpecError {}
