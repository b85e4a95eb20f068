//! Known failures: `known_failures/<implementation>.toml`, one file per implementation.
//!
//! ```toml
//! [[failure]]
//! case = "sparse.filter.webp"      # required: a case id
//! read = "all"                     # optional: one read of the case (default: every read)
//! producer = "tiledb-2.13"         # optional: one producer, e.g. "live:tiledb-py" (default: all)
//! role = "writer"                  # optional: "reader" (default) or "writer" (a live replay)
//! reason = "WebP tiles are not decoded yet"   # required
//! ```
//!
//! A listed failure is reported as `expected-failure`. A listed failure that passes, and an
//! entry naming a case or read that does not exist, fail the run: the list must stay true.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::case::Case;

/// One entry of `known_failures/<implementation>.toml`: checks it is
/// expected to fail, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownFailure {
    /// The case id.
    pub case: String,
    /// One read of the case; every read when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    /// One producer; every producer when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer: Option<String>,
    /// `reader` (the default) or `writer`.
    #[serde(default = "reader_role")]
    pub role: String,
    /// Why it fails, shown in the report beside the result.
    pub reason: String,
}

fn reader_role() -> String {
    "reader".to_string()
}

#[derive(Debug, Deserialize)]
struct File {
    #[serde(default)]
    failure: Vec<KnownFailure>,
}

impl KnownFailure {
    pub(crate) fn matches(
        &self,
        role: &str,
        case: &str,
        read: Option<&str>,
        producer: &str,
    ) -> bool {
        self.role == role
            && self.case == case
            && self.read.as_deref().is_none_or(|r| Some(r) == read)
            && self.producer.as_deref().is_none_or(|p| p == producer)
    }

    /// Why this entry cannot be true of any run, if it cannot.
    pub(crate) fn staleness(&self, cases: &[Case]) -> Option<String> {
        if self.role != "reader" && self.role != "writer" {
            return Some(format!("role {:?} is neither reader nor writer", self.role));
        }
        let Some(case) = cases.iter().find(|c| c.id == self.case) else {
            return Some(format!("no case {:?}", self.case));
        };
        match &self.read {
            Some(r) if !case.reads.contains(r) => {
                Some(format!("case {} has no read {r:?}", self.case))
            }
            _ => None,
        }
    }
}

/// The known failures of every implementation, by implementation name.
#[derive(Debug, Clone, Default)]
pub(crate) struct KnownFailures {
    pub by_implementation: BTreeMap<String, Vec<KnownFailure>>,
}

impl KnownFailures {
    /// Load every `*.toml` in `dir` (a missing folder means no known failures).
    pub fn load(dir: &Path) -> Result<KnownFailures, String> {
        let mut out = KnownFailures::default();
        let Ok(entries) = fs::read_dir(dir) else {
            return Ok(out);
        };
        for entry in entries {
            let path = entry
                .map_err(|e| format!("listing {}: {e}", dir.display()))?
                .path();
            if path.extension().is_none_or(|x| x != "toml") {
                continue;
            }
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .ok_or_else(|| format!("{}: bad file name", path.display()))?
                .to_string();
            let text = fs::read_to_string(&path)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            let file: File =
                toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            out.by_implementation.insert(name, file.failure);
        }
        Ok(out)
    }

    pub fn lookup(
        &self,
        implementation: &str,
        role: &str,
        case: &str,
        read: Option<&str>,
        producer: &str,
    ) -> Option<&KnownFailure> {
        self.by_implementation
            .get(implementation)?
            .iter()
            .find(|k| k.matches(role, case, read, producer))
    }
}
