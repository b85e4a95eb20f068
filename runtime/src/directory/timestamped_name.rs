//! Timestamped names: how fragments, commits, schemas and metadata files are
//! named in every format version.
//!
//! Three forms exist:
//!
//! | form | text | written by |
//! |---|---|---|
//! | [`NameForm::UuidTimestamp`] | `__<uuid>_<t>` | format v1–v2 fragments |
//! | [`NameForm::Range`] | `__<t1>_<t2>_<label>` | v3–v4 fragments; schema, array and group metadata files of every later version |
//! | [`NameForm::Versioned`] | `__<t1>_<t2>_<label>_<v>` | v5+ fragments and commit files; group details (`v` = group details version) |
//!
//! A name may carry one extension (`.ok`, `.wrt`, …). Timestamps are decimal
//! milliseconds and `t1 ≤ t2`. New labels are 32 lowercase hex characters: the
//! first 8 count names made within one millisecond (so they sort in creation
//! order), the other 24 are random.

use std::fmt;

use crate::error::{Cause, Error, Result};
pub use crate::storage::label::{new_label, now_ms, LabelGenerator};

/// The extensions a timestamped name can carry, with their suffixes and
/// gates: generated from `[[extension]]` of spec/directory.toml.
pub use crate::format::generated::Extension;

/// Which of the three layouts a name has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NameForm {
    /// `__<uuid>_<t>` (format v1–v2): one timestamp, `t1 = t2 = t`.
    UuidTimestamp,
    /// `__<t1>_<t2>_<label>`: v3–v4 fragments, and every schema and
    /// metadata file (which carry no version).
    Range,
    /// `__<t1>_<t2>_<label>_<v>`: v5+ fragments and commits.
    Versioned,
}

/// A parsed timestamped name. It keeps the text it was parsed from, so that
/// comparing and printing use the name exactly as it is stored.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TimestampedName {
    text: String,
    stem_len: usize,
    form: NameForm,
    t1: u64,
    t2: u64,
    label_start: usize,
    label_len: usize,
    version: Option<u32>,
    extension: Option<Extension>,
}

/// A name that breaks the rule `expected` states.
fn bad_name(name: &str, expected: &'static str) -> Error {
    let name = name.to_owned();
    Error::corrupt(0, "timestamped name", Cause::BadName { name, expected })
}

/// A decimal token of a name; `what` states the two rules (decimal, fits in
/// 64 bits) for the token's part of the name.
fn parse_decimal_u64(name: &str, token: &str, what: (&'static str, &'static str)) -> Result<u64> {
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad_name(name, what.0));
    }
    token.parse::<u64>().map_err(|_| bad_name(name, what.1))
}

fn check_label(name: &str, label: &str) -> Result<()> {
    if label.is_empty()
        || !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return Err(bad_name(
            name,
            "a name whose label is ASCII letters, digits and '-'",
        ));
    }
    Ok(())
}

/// The rules a timestamp token breaks: not decimal, or too large.
const TIMESTAMP: (&str, &str) = (
    "a name whose timestamps are decimal numbers",
    "a name whose timestamps fit in 64 bits",
);
const LABEL_LENGTH: &str = "a name whose label is 32 characters long";
const VERSION_32_BITS: &str = "a name whose format version fits in 32 bits";

/// Length of the random label in the `__t1_t2_label` forms.
pub const LABEL_LEN: usize = 32;

impl TimestampedName {
    /// Parses one path component such as `__1_2_0123…_22.wrt`.
    ///
    /// Errors (class corrupt) quote the name. TileDB is laxer — it reads any
    /// name with an underscore and lets bad timestamps become 0 — but every
    /// name TileDB writes passes here.
    pub fn parse(name: &str) -> Result<Self> {
        if name.contains('/') {
            return Err(bad_name(name, "a single name, not a path"));
        }
        let (stem, extension) = match name.rfind('.') {
            Some(dot) => {
                let suffix = &name[dot + 1..];
                let ext = Extension::from_suffix(suffix)
                    .ok_or_else(|| bad_name(name, "a name with a known extension"))?;
                (&name[..dot], Some(ext))
            }
            None => (name, None),
        };
        if stem.contains('.') {
            return Err(bad_name(name, "a name with at most one extension"));
        }
        let Some(body) = stem.strip_prefix("__") else {
            return Err(bad_name(name, "a name starting with \"__\""));
        };
        let tokens: Vec<&str> = body.split('_').collect();
        let label_offset = |label: &str| label.as_ptr() as usize - name.as_ptr() as usize;
        let (form, t1, t2, label, version) = match tokens.as_slice() {
            [uuid, t] => {
                let t = parse_decimal_u64(name, t, TIMESTAMP)?;
                (NameForm::UuidTimestamp, t, t, *uuid, None)
            }
            [t1, t2, label] => {
                if label.len() != LABEL_LEN {
                    return Err(bad_name(name, LABEL_LENGTH));
                }
                let t1 = parse_decimal_u64(name, t1, TIMESTAMP)?;
                let t2 = parse_decimal_u64(name, t2, TIMESTAMP)?;
                (NameForm::Range, t1, t2, *label, None)
            }
            [t1, t2, label, v] => {
                if label.len() != LABEL_LEN {
                    return Err(bad_name(name, LABEL_LENGTH));
                }
                let t1 = parse_decimal_u64(name, t1, TIMESTAMP)?;
                let t2 = parse_decimal_u64(name, t2, TIMESTAMP)?;
                let version_rules = (
                    "a name whose format version is a decimal number",
                    VERSION_32_BITS,
                );
                let v = parse_decimal_u64(name, v, version_rules)?;
                let v = u32::try_from(v).map_err(|_| bad_name(name, VERSION_32_BITS))?;
                (NameForm::Versioned, t1, t2, *label, Some(v))
            }
            _ => {
                return Err(bad_name(
                    name,
                    "one of __<uuid>_<t>, __<t1>_<t2>_<label>, __<t1>_<t2>_<label>_<v>",
                ))
            }
        };
        check_label(name, label)?;
        if t1 > t2 {
            return Err(bad_name(
                name,
                "a name whose start timestamp is not after its end timestamp",
            ));
        }
        Ok(TimestampedName {
            text: name.to_owned(),
            stem_len: stem.len(),
            form,
            t1,
            t2,
            label_start: label_offset(label),
            label_len: label.len(),
            version,
            extension,
        })
    }

    /// A new name `__<t1>_<t2>_<label>[_<version>][ext]` with a fresh label.
    /// When both timestamps are 0 the current time is used for both.
    pub fn generate(
        t1: u64,
        t2: u64,
        version: Option<u32>,
        extension: Option<Extension>,
    ) -> Result<Self> {
        if t1 > t2 {
            return Err(Error::Usage(format!(
                "cannot name a range whose start {t1} is after its end {t2}"
            )));
        }
        let (label, now) = new_label()?;
        let (t1, t2) = if t1 == 0 && t2 == 0 {
            (now, now)
        } else {
            (t1, t2)
        };
        Ok(Self::from_parts(t1, t2, &label, version, extension))
    }

    /// Builds a name from its parts; `label` must be 32 alphanumeric
    /// characters (as [`new_label`] makes) or the name will not parse back.
    pub fn from_parts(
        t1: u64,
        t2: u64,
        label: &str,
        version: Option<u32>,
        extension: Option<Extension>,
    ) -> Self {
        let mut text = format!("__{t1}_{t2}_");
        let label_start = text.len();
        text.push_str(label);
        if let Some(v) = version {
            text.push_str(&format!("_{v}"));
        }
        let stem_len = text.len();
        if let Some(ext) = extension {
            text.push_str(ext.suffix());
        }
        TimestampedName {
            text,
            stem_len,
            form: if version.is_some() {
                NameForm::Versioned
            } else {
                NameForm::Range
            },
            t1,
            t2,
            label_start,
            label_len: label.len(),
            version,
            extension,
        }
    }

    /// The whole name, as stored.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The name without its extension (a fragment's directory name for its
    /// `.ok`/`.wrt`/`.vac` file).
    pub fn stem(&self) -> &str {
        &self.text[..self.stem_len]
    }

    /// Which of the three name layouts it uses.
    pub fn form(&self) -> NameForm {
        self.form
    }

    /// The start of its time range, in milliseconds.
    pub fn timestamp_start(&self) -> u64 {
        self.t1
    }

    /// The end of its time range, inclusive, in milliseconds (the start, for names with one timestamp).
    pub fn timestamp_end(&self) -> u64 {
        self.t2
    }

    /// The time range, `(start, end)`, inclusive, in milliseconds.
    pub fn timestamp_range(&self) -> (u64, u64) {
        (self.t1, self.t2)
    }

    /// The unique label after the timestamps (a UUID in TileDB's names).
    pub fn label(&self) -> &str {
        &self.text[self.label_start..self.label_start + self.label_len]
    }

    /// The version suffix, if the name has one.
    pub fn version(&self) -> Option<u32> {
        self.version
    }

    /// The format version the name implies, as TileDB reads it: 2 for
    /// `__<uuid>_<t>`, 4 for `__<t1>_<t2>_<label>` (spec/format.toml),
    /// else the suffix. Meaningful for fragment and commit names only.
    pub fn format_version(&self) -> u32 {
        use crate::format::generated::{RANGE_NAME_FORMAT_VERSION, UUID_NAME_FORMAT_VERSION};
        match self.form {
            NameForm::UuidTimestamp => UUID_NAME_FORMAT_VERSION as u32,
            NameForm::Range | NameForm::Versioned => {
                self.version.unwrap_or(RANGE_NAME_FORMAT_VERSION as u32)
            }
        }
    }

    /// The file extension (`.ok`, `.wrt`, `.vac`, ...), if any.
    pub fn extension(&self) -> Option<Extension> {
        self.extension
    }

    /// The same name with another extension (or none).
    pub fn with_extension(&self, extension: Option<Extension>) -> Self {
        let mut text = self.stem().to_owned();
        if let Some(ext) = extension {
            text.push_str(ext.suffix());
        }
        TimestampedName {
            text,
            extension,
            ..self.clone()
        }
    }

    /// Whether `[t1, t2]` lies wholly inside `[start, end]`.
    pub fn contained_in(&self, start: u64, end: u64) -> bool {
        self.t1 >= start && self.t2 <= end
    }

    /// Whether `[t1, t2]` shares at least one instant with `[start, end]`.
    pub fn overlaps(&self, start: u64, end: u64) -> bool {
        self.t1 <= end && start <= self.t2
    }
}

impl fmt::Display for TimestampedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_form() {
        let v1 =
            TimestampedName::parse("__b4cae15e1a294904a1296510c34f19ec_1538747712566").unwrap();
        assert_eq!(v1.form(), NameForm::UuidTimestamp);
        assert_eq!(v1.timestamp_range(), (1538747712566, 1538747712566));
        assert_eq!(v1.label(), "b4cae15e1a294904a1296510c34f19ec");
        assert_eq!(v1.format_version(), 2);
        assert_eq!(v1.version(), None);

        let v3 = TimestampedName::parse("__1_2_0123456789abcdef0123456789abcdef").unwrap();
        assert_eq!(v3.form(), NameForm::Range);
        assert_eq!(v3.timestamp_range(), (1, 2));
        assert_eq!(v3.format_version(), 4);

        let v5 = TimestampedName::parse(
            "__1657562300109_1657562300109_8dc3a927a28e445080d5dfd288825e1d_4294967295.ok",
        )
        .unwrap();
        assert_eq!(v5.form(), NameForm::Versioned);
        assert_eq!(v5.version(), Some(u32::MAX));
        assert_eq!(v5.format_version(), u32::MAX);
        assert_eq!(v5.extension(), Some(Extension::Ok));
        assert_eq!(
            v5.stem(),
            "__1657562300109_1657562300109_8dc3a927a28e445080d5dfd288825e1d_4294967295"
        );
        assert_eq!(v5.label(), "8dc3a927a28e445080d5dfd288825e1d");
    }

    #[test]
    fn parses_every_extension() {
        for ext in Extension::ALL {
            let text = format!("__5_9_0123456789abcdef0123456789abcdef_22{}", ext.suffix());
            let name = TimestampedName::parse(&text).unwrap();
            assert_eq!(name.extension(), Some(ext));
            assert_eq!(name.as_str(), text);
            assert_eq!(
                name.with_extension(None).as_str(),
                &text[..text.len() - ext.suffix().len()]
            );
        }
    }

    #[test]
    fn rejects_malformed_names_with_the_name_in_the_error() {
        let bad = [
            "",
            "_",
            "__",
            "abc",
            "__lock.tdb",
            "__array_schema.tdb",
            "__2_1_0123456789abcdef0123456789abcdef_22",
            "__1_2_short_22",
            "__1_2_0123456789abcdef0123456789abcdef_99999999999",
            "__x_2_0123456789abcdef0123456789abcdef_22",
            "__1__0123456789abcdef0123456789abcdef_22",
            "__-1_2_0123456789abcdef0123456789abcdef_22",
            "__1_2_0123456789abcdef0123456789abcdef_22.ok.ok",
            "__1_2_0123456789abcdef0123456789abcdef_22.bad",
            "__1_2_0123456789abcdef0123456789abcdef_22_7",
            "__18446744073709551616_18446744073709551616_0123456789abcdef0123456789abcdef_22",
            "__uuid_",
            "___1",
            "dir/__1_2_0123456789abcdef0123456789abcdef_22",
            "__1_2_01234567/9abcdef0123456789abcdef_22",
            "__1_2_0123456789abcdef0123456789abcde\u{e9}_22",
        ];
        for text in bad {
            let err = TimestampedName::parse(text).expect_err(text);
            assert_eq!(err.class(), crate::ErrorClass::Corrupt, "{text}");
            assert!(
                err.to_string().contains(&format!("{text:?}")),
                "{err} for {text}"
            );
        }
        // The one-extension `__1_2_<label>` with 31 characters is rejected too.
        assert!(TimestampedName::parse("__1_2_0123456789abcdef0123456789abcde").is_err());
    }

    #[test]
    fn accepts_the_largest_timestamps() {
        let text = format!("__{0}_{0}_0123456789abcdef0123456789abcdef_22", u64::MAX);
        let name = TimestampedName::parse(&text).unwrap();
        assert_eq!(name.timestamp_range(), (u64::MAX, u64::MAX));
    }

    #[test]
    fn generated_names_parse_back() {
        for _ in 0..50 {
            let name = TimestampedName::generate(7, 9, Some(22), Some(Extension::Wrt)).unwrap();
            let parsed = TimestampedName::parse(name.as_str()).unwrap();
            assert_eq!(parsed, name);
            assert_eq!(parsed.timestamp_range(), (7, 9));
            assert_eq!(parsed.version(), Some(22));
            assert_eq!(parsed.label().len(), LABEL_LEN);
            assert!(parsed
                .label()
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        }
    }

    #[test]
    fn labels_of_one_millisecond_sort_in_creation_order() {
        let generator = LabelGenerator::new();
        let counter = |s: &str| u32::from_str_radix(&s[..8], 16).unwrap();
        let labels: Vec<String> = (0..100)
            .map(|_| generator.label_at(12345).unwrap())
            .collect();
        assert!(counter(&labels[0]) < 0x8000_0000);
        for pair in labels.windows(2) {
            assert_eq!(counter(&pair[1]), counter(&pair[0]) + 1);
            assert!(pair[0] < pair[1]);
        }
        // A new millisecond restarts the counter at a random value.
        let restarted: Vec<u32> = (0..8)
            .map(|ms| counter(&generator.label_at(ms).unwrap()))
            .collect();
        assert!(restarted.iter().all(|&c| c < 0x8000_0000));
        assert!(restarted.windows(2).any(|w| w[1] != w[0].wrapping_add(1)));
    }

    #[test]
    fn zero_range_takes_the_clock() {
        let before = now_ms();
        let name = TimestampedName::generate(0, 0, None, None).unwrap();
        assert!(name.timestamp_start() >= before);
        assert_eq!(name.timestamp_start(), name.timestamp_end());
        assert_eq!(name.form(), NameForm::Range);
        assert!(TimestampedName::generate(3, 2, None, None).is_err());
    }

    #[test]
    fn containment_and_overlap() {
        let name =
            TimestampedName::from_parts(5, 9, "0123456789abcdef0123456789abcdef", Some(22), None);
        assert!(name.contained_in(5, 9));
        assert!(!name.contained_in(6, 9));
        assert!(name.overlaps(9, 20));
        assert!(name.overlaps(0, 5));
        assert!(!name.overlaps(10, 20));
    }
}
