//! Case recipes (`cases/*.toml`): only what the runner needs to select cases and reads.
//!
//! The full case format is described in `conformance/README.md`; writers replay the recipe
//! themselves, so the runner never interprets schemas or steps.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// How much a conforming reader is expected to support a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Every conforming reader must read it.
    Required,
    /// A conforming reader should read it.
    Recommended,
    /// A conforming reader may leave it out.
    Optional,
}

impl Level {
    /// The level `--level` names, if any.
    pub fn parse(text: &str) -> Option<Level> {
        match text {
            "required" => Some(Level::Required),
            "recommended" => Some(Level::Recommended),
            "optional" => Some(Level::Optional),
            _ => None,
        }
    }

    /// How case files and reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Required => "required",
            Level::Recommended => "recommended",
            Level::Optional => "optional",
        }
    }
}

/// The tags of a case, which `--tag` selects by and the report shows.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Tags {
    /// `dense`, `sparse` or `group`.
    #[serde(default)]
    pub array: Option<String>,
    /// The datatypes its fields use.
    #[serde(default)]
    pub datatypes: Vec<String>,
    /// The filters its pipelines use.
    #[serde(default)]
    pub filters: Vec<String>,
    /// The features it exercises (and which capabilities a reader must claim).
    #[serde(default)]
    pub features: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ReadSpec {
    pub id: String,
}

#[derive(Debug, Clone, Deserialize)]
struct CaseFile {
    id: String,
    #[serde(default)]
    title: String,
    level: Level,
    #[serde(default = "first_format")]
    min_format: u32,
    #[serde(default)]
    max_format: Option<u32>,
    #[serde(default)]
    tags: Tags,
    #[serde(default)]
    base: Option<String>,
    #[serde(default)]
    expect_error: Option<String>,
    #[serde(default)]
    reads: Vec<ReadSpec>,
    #[serde(default)]
    frozen: bool,
}

fn first_format() -> u32 {
    1
}

/// One case, as the runner sees it.
#[derive(Debug, Clone)]
pub struct Case {
    /// Its id, also its file name (`cases/<id>.toml`).
    pub id: String,
    /// A one-line description.
    pub title: String,
    /// How much a reader is expected to support it.
    pub level: Level,
    /// The oldest format version it applies to: a producer replays it only within
    /// `min_format..=max_format`.
    pub min_format: u32,
    /// The newest format version it applies to (inclusive); no upper bound when absent.
    pub max_format: Option<u32>,
    /// What it covers.
    pub tags: Tags,
    /// Derived cases name the case whose arrays they mutate.
    pub base: Option<String>,
    /// The error class a reader must report on a negative case.
    pub expect_error: Option<String>,
    /// Read ids, in the case's order.
    pub reads: Vec<String>,
    /// The recipe file (absolute), handed to adapters.
    pub file: PathBuf,
    /// A frozen array read in place (TileDB's own legacy test inputs): no
    /// recipe, so no writer replays it.
    pub frozen: bool,
}

impl Case {
    /// Reads `path`; its `id` must match the file name.
    pub fn load(path: &Path) -> Result<Case, String> {
        let text =
            fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let parsed: CaseFile =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if parsed.id != stem {
            return Err(format!(
                "{}: id {:?} differs from the file name",
                path.display(),
                parsed.id
            ));
        }
        let file = fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Case {
            id: parsed.id,
            title: parsed.title,
            level: parsed.level,
            min_format: parsed.min_format,
            max_format: parsed.max_format,
            tags: parsed.tags,
            base: parsed.base,
            expect_error: parsed.expect_error,
            reads: parsed.reads.into_iter().map(|r| r.id).collect(),
            file,
            frozen: parsed.frozen,
        })
    }

    /// Every case in `cases_dir`, sorted by id.
    pub(crate) fn load_all(cases_dir: &Path) -> Result<Vec<Case>, String> {
        let entries =
            fs::read_dir(cases_dir).map_err(|e| format!("listing {}: {e}", cases_dir.display()))?;
        let mut paths = Vec::new();
        for entry in entries {
            let path = entry
                .map_err(|e| format!("listing {}: {e}", cases_dir.display()))?
                .path();
            if path.extension().is_some_and(|x| x == "toml") {
                paths.push(path);
            }
        }
        paths.sort();
        paths.iter().map(|p| Case::load(p)).collect()
    }

    /// A case made by mutating another case's arrays (negative, or positive such as an
    /// uncommitted fragment): it exists only in the corpus, writers cannot replay it.
    pub(crate) fn is_derived(&self) -> bool {
        self.base.is_some()
    }

    /// Whether the case applies to arrays of this format version.
    pub(crate) fn applies_to(&self, format_version: u32) -> bool {
        let below_max = match self.max_format {
            Some(max) => format_version <= max,
            None => true,
        };
        self.min_format <= format_version && below_max
    }

    /// Every tag a selection (`--tag`) may name: the array kind, features, datatypes, filters
    /// and the level.
    pub(crate) fn all_tags(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        out.extend(self.tags.array.iter().cloned());
        out.extend(self.tags.features.iter().cloned());
        out.extend(self.tags.datatypes.iter().cloned());
        out.extend(self.tags.filters.iter().cloned());
        out.insert(self.level.name().to_string());
        out
    }

    /// The feature rows this case counts under in the features × implementations matrix.
    pub(crate) fn feature_rows(&self) -> Vec<String> {
        let mut out: Vec<String> = self.tags.array.iter().cloned().collect();
        for f in &self.tags.features {
            if !out.contains(f) {
                out.push(f.clone());
            }
        }
        out
    }

    /// The capabilities a reader (or writer) must claim to be asked about this case: the
    /// array kind, and the features that name a capability (see [`CAPABILITIES`]).
    pub(crate) fn required_capabilities(&self) -> Vec<String> {
        let mut out = Vec::new();
        for tag in self.tags.array.iter().chain(&self.tags.features) {
            if CAPABILITIES.contains(&tag.as_str()) && !out.contains(tag) {
                out.push(tag.clone());
            }
        }
        out
    }
}

/// The capability vocabulary of the adapter contract. A case feature in this list must be
/// claimed by an implementation (`info`'s `capabilities`) before the runner asks it about the
/// case; other features (`basic`, `multi-range`, `negative`, …) describe the case and every
/// reader must handle them.
pub const CAPABILITIES: &[&str] = &[
    "dense",
    "sparse",
    "group",
    "var",
    "nullable",
    "multi-value",
    "fill",
    "filter",
    "datatype",
    "dimension",
    "string-dimension",
    "fragments",
    "time-travel",
    "duplicates",
    "hilbert",
    "col-major",
    "consolidation",
    "vacuum",
    "delete",
    "schema-evolution",
    "metadata",
    "enumeration",
    "dimension-label",
    "encryption",
];
