//! What a consolidation or a vacuum is asked to do: the mode, and TileDB's
//! `sm.consolidation.*` settings as text keys and values, parsed and checked
//! as TileDB's config and consolidators parse and check them.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// What a consolidation merges, or a vacuum removes (TileDB's
/// `sm.consolidation.mode` and `sm.vacuum.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConsolidationMode {
    /// `fragments`: runs of fragments merged into one (or several, under
    /// `max_fragment_size`); vacuum removes the merged ones.
    #[default]
    Fragments,
    /// `fragment_meta`: every fragment's footer in one `__fragment_meta`
    /// file; vacuum keeps only the newest such file.
    FragmentMeta,
    /// `commits`: every commit marker listed in one `.con` file; vacuum
    /// removes the markers it lists.
    Commits,
    /// `array_meta`: the array metadata files merged into one; vacuum
    /// removes the merged ones.
    ArrayMeta,
}

impl ConsolidationMode {
    /// Every mode, in TileDB's spelling order.
    pub const ALL: [ConsolidationMode; 4] = [
        ConsolidationMode::Fragments,
        ConsolidationMode::FragmentMeta,
        ConsolidationMode::Commits,
        ConsolidationMode::ArrayMeta,
    ];

    /// The mode as TileDB's config spells it.
    pub fn name(self) -> &'static str {
        match self {
            ConsolidationMode::Fragments => "fragments",
            ConsolidationMode::FragmentMeta => "fragment_meta",
            ConsolidationMode::Commits => "commits",
            ConsolidationMode::ArrayMeta => "array_meta",
        }
    }
}

impl fmt::Display for ConsolidationMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ConsolidationMode {
    type Err = Error;

    /// TileDB's names (`fragment_meta`), or the same with dashes
    /// (`fragment-meta`, as command-line options spell them).
    fn from_str(text: &str) -> Result<Self> {
        let wanted = text.trim().replace('-', "_");
        Self::ALL
            .into_iter()
            .find(|m| m.name() == wanted)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "unknown consolidation mode {text:?} (fragments, fragment_meta, commits or array_meta)"
                ))
            })
    }
}

/// TileDB's `sm.consolidation.*` settings. [`Default`] gives TileDB's
/// defaults (tiledb/sm/config/config.cc).
#[derive(Debug, Clone, PartialEq)]
pub struct ConsolidationConfig {
    /// `sm.consolidation.mode`.
    pub mode: ConsolidationMode,
    /// `sm.consolidation.steps`: how many runs to merge, one after another.
    pub steps: u32,
    /// `sm.consolidation.step_min_frags`.
    pub step_min_frags: u32,
    /// `sm.consolidation.step_max_frags`.
    pub step_max_frags: u32,
    /// `sm.consolidation.step_size_ratio`, in `[0, 1]`.
    pub step_size_ratio: f32,
    /// `sm.consolidation.amplification` (dense arrays), non-negative.
    pub amplification: f32,
    /// `sm.consolidation.timestamp_start`: older fragments (array metadata
    /// files) are not inputs.
    pub timestamp_start: u64,
    /// `sm.consolidation.timestamp_end`: fragments (array metadata files)
    /// ending later are not inputs.
    pub timestamp_end: u64,
    /// `sm.consolidation.purge_deleted_cells`: sparse cells removed by a
    /// delete are left out of the consolidated fragment (which then has no
    /// delete metadata) instead of kept and marked.
    pub purge_deleted_cells: bool,
    /// `sm.consolidation.max_fragment_size`: the most bytes of tiles one
    /// consolidated fragment may hold; the output is cut into several
    /// fragments (dense: each over a rectangle of whole tiles).
    pub max_fragment_size: u64,
    /// `sm.consolidation.buffer_size`: TileDB's read and write buffer per
    /// field. Accepted for compatibility; it bounds memory, never the
    /// result, and this consolidation sizes its buffers by the run.
    pub buffer_size: Option<u64>,
}

impl Default for ConsolidationConfig {
    fn default() -> Self {
        ConsolidationConfig {
            mode: ConsolidationMode::Fragments,
            steps: u32::MAX,
            step_min_frags: u32::MAX,
            step_max_frags: u32::MAX,
            step_size_ratio: 0.0,
            amplification: 1.0,
            timestamp_start: 0,
            timestamp_end: u64::MAX,
            purge_deleted_cells: false,
            max_fragment_size: u64::MAX,
            buffer_size: None,
        }
    }
}

/// A number as TileDB's config reads it (surrounding blanks allowed).
fn number<T: FromStr>(key: &str, value: &str, what: &str) -> Result<T> {
    value
        .trim()
        .parse()
        .map_err(|_| Error::Usage(format!("{key} = {value:?}: not {what}")))
}

impl ConsolidationConfig {
    /// Sets one `sm.consolidation.*` key from its text value, as TileDB's
    /// config parses it. Unknown keys are refused: a setting we would not
    /// honour is not silently dropped.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        match key {
            "sm.consolidation.mode" => self.mode = value.parse()?,
            "sm.consolidation.steps" => self.steps = number(key, value, "a u32")?,
            "sm.consolidation.step_min_frags" => {
                self.step_min_frags = number(key, value, "a u32")?;
            }
            "sm.consolidation.step_max_frags" => {
                self.step_max_frags = number(key, value, "a u32")?;
            }
            "sm.consolidation.step_size_ratio" => {
                self.step_size_ratio = number(key, value, "a number")?;
            }
            "sm.consolidation.amplification" => {
                self.amplification = number(key, value, "a number")?;
            }
            "sm.consolidation.timestamp_start" => {
                self.timestamp_start = number(key, value, "a u64")?;
            }
            "sm.consolidation.timestamp_end" => {
                self.timestamp_end = number(key, value, "a u64")?;
            }
            "sm.consolidation.max_fragment_size" => {
                self.max_fragment_size = number(key, value, "a u64")?;
            }
            "sm.consolidation.buffer_size" => {
                self.buffer_size = Some(number(key, value, "a u64")?);
            }
            "sm.consolidation.purge_deleted_cells" => {
                // TileDB's bool: `true` or `false`, in any case.
                self.purge_deleted_cells = match value.trim().to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" => false,
                    _ => {
                        return Err(Error::Usage(format!(
                            "{key} = {value:?}: not true or false"
                        )))
                    }
                };
            }
            _ => return Err(Error::Usage(format!("unknown consolidation setting {key}"))),
        }
        Ok(())
    }

    /// Sets `key=value` pairs (the command line's `--config`), in order.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self> {
        let mut config = ConsolidationConfig::default();
        for (key, value) in pairs {
            config.set(key, value)?;
        }
        config.validate()?;
        Ok(config)
    }

    /// TileDB's sanity checks on these settings.
    pub fn validate(&self) -> Result<()> {
        if self.step_min_frags > self.step_max_frags {
            return Err(Error::Usage(
                "sm.consolidation.step_min_frags is larger than step_max_frags".into(),
            ));
        }
        if !(0.0..=1.0).contains(&self.step_size_ratio) {
            return Err(Error::Usage(
                "sm.consolidation.step_size_ratio must be in [0.0, 1.0]".into(),
            ));
        }
        if self.amplification.is_nan() || self.amplification < 0.0 {
            return Err(Error::Usage(
                "sm.consolidation.amplification must be non-negative".into(),
            ));
        }
        if self.timestamp_start > self.timestamp_end {
            return Err(Error::Usage(
                "sm.consolidation.timestamp_start is after timestamp_end".into(),
            ));
        }
        if self.max_fragment_size == 0 {
            return Err(Error::Usage(
                "sm.consolidation.max_fragment_size must be positive".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_as_text_and_are_checked_as_tiledb_checks_them() {
        let mut config = ConsolidationConfig::default();
        config.set("sm.consolidation.step_min_frags", "3").unwrap();
        config
            .set("sm.consolidation.step_max_frags", " 2 ")
            .unwrap();
        assert_eq!((config.step_min_frags, config.step_max_frags), (3, 2));
        assert!(config.validate().is_err(), "min above max");
        config.set("sm.consolidation.step_min_frags", "2").unwrap();
        config.validate().unwrap();
        config
            .set("sm.consolidation.step_size_ratio", "1.5")
            .unwrap();
        assert!(config.validate().is_err(), "ratio above 1");
        config
            .set("sm.consolidation.step_size_ratio", "0.25")
            .unwrap();
        config.set("sm.consolidation.amplification", "-1").unwrap();
        assert!(config.validate().is_err(), "negative amplification");
        assert!(config.set("sm.consolidation.steps", "-1").is_err());
        config
            .set("sm.consolidation.max_fragment_size", "100")
            .unwrap();
        assert_eq!(config.max_fragment_size, 100);
        config
            .set("sm.consolidation.purge_deleted_cells", "TRUE")
            .unwrap();
        assert!(config.purge_deleted_cells);
        assert!(config
            .set("sm.consolidation.purge_deleted_cells", "yes")
            .is_err());
        config.set("sm.consolidation.mode", "array_meta").unwrap();
        assert_eq!(config.mode, ConsolidationMode::ArrayMeta);
        assert!(config.set("sm.consolidation.mode", "everything").is_err());
        assert!(config.set("sm.consolidation.no_such_key", "1").is_err());
        assert_eq!(
            "fragment-meta".parse::<ConsolidationMode>().unwrap(),
            ConsolidationMode::FragmentMeta
        );
    }
}
