//! The frozen corpus: `corpus/MANIFEST.json` names the producers (TileDB releases) and their
//! cases; each case folder holds the arrays and `expected.json`, what that release read back.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// One producer of the corpus: a TileDB release that replayed the cases.
#[derive(Debug, Clone)]
pub(crate) struct Producer {
    pub name: String,
    pub format_version: u32,
    /// Case ids present in this producer's corpus.
    pub cases: BTreeSet<String>,
    /// Cases the producer could not replay, with the reason recorded by the generator.
    pub skipped: BTreeMap<String, String>,
    /// When the producer replays only some cases: where that selection is defined.
    pub selection: Option<String>,
    /// A producer whose arrays live outside the corpus folder (TileDB's
    /// legacy test arrays): the folder holding its array, and its expected
    /// results.
    pub external: Option<External>,
}

/// TileDB's legacy test arrays beside a workspace: `$TILEDB_SHARED_DIR`, else
/// the `shared/` folder next to the workspace, holding `tiledb-test-arrays/`;
/// `None` when absent.
pub fn legacy_arrays_dir(workspace: &Path) -> Option<PathBuf> {
    let shared = std::env::var_os("TILEDB_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("../shared"));
    let dir = shared.join("tiledb-test-arrays");
    dir.is_dir().then_some(dir)
}

#[derive(Debug, Clone)]
pub(crate) struct External {
    pub array_root: PathBuf,
    pub expected: PathBuf,
}

#[derive(Debug, Clone)]
pub(crate) struct Corpus {
    pub dir: PathBuf,
    pub producers: Vec<Producer>,
}

/// What a reader must produce for one read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expected {
    /// The canonical result (the read's object without its `id`).
    Result(Value),
    /// A negative read: the reader must refuse with this error class.
    Error { class: String },
    /// No trustworthy result: the producer's own read was wrong (an oracle bug).
    Skip { reason: String },
}

impl Corpus {
    pub fn open(dir: &Path) -> Result<Corpus, String> {
        let manifest_path = dir.join("MANIFEST.json");
        let text = fs::read_to_string(&manifest_path)
            .map_err(|e| format!("reading {}: {e}", manifest_path.display()))?;
        let manifest: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", manifest_path.display()))?;
        let producers = manifest
            .get("producers")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("{}: no \"producers\" object", manifest_path.display()))?;
        let mut out = Vec::new();
        for (name, p) in producers {
            let format_version = p
                .get("format_version")
                .and_then(Value::as_u64)
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| {
                    format!(
                        "{}: producer {name}: no format_version",
                        manifest_path.display()
                    )
                })?;
            let cases = p
                .get("cases")
                .and_then(Value::as_object)
                .map(|c| c.keys().cloned().collect())
                .unwrap_or_default();
            let skipped = p
                .get("skipped")
                .and_then(Value::as_object)
                .map(|s| {
                    s.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                        .collect()
                })
                .unwrap_or_default();
            let selection = p
                .get("selection")
                .and_then(Value::as_str)
                .map(str::to_string);
            out.push(Producer {
                name: name.clone(),
                format_version,
                cases,
                skipped,
                selection,
                external: None,
            });
        }
        // Newest format first: the matrix reads top-down from today's release.
        out.sort_by(|a, b| {
            b.format_version
                .cmp(&a.format_version)
                .then(a.name.cmp(&b.name))
        });
        let dir = fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(Corpus {
            dir,
            producers: out,
        })
    }

    pub fn case_dir(&self, producer: &str, case: &str) -> PathBuf {
        match self.external(producer) {
            Some(external) => external.array_root.clone(),
            None => self.dir.join(producer).join(case),
        }
    }

    fn external(&self, producer: &str) -> Option<&External> {
        self.producers
            .iter()
            .find(|p| p.name == producer)
            .and_then(|p| p.external.as_ref())
    }

    /// Adds one producer per legacy array of TileDB's test inputs present in
    /// `arrays_dir` (`../shared/tiledb-test-arrays`): each `legacy.<array>`
    /// case of `legacy_dir` whose array is there, with the expected results
    /// committed beside the case (`legacy.<array>.expected.json`).
    pub(crate) fn add_legacy(
        &mut self,
        legacy_dir: &Path,
        arrays_dir: &Path,
    ) -> Result<(), String> {
        let Ok(entries) = fs::read_dir(legacy_dir) else {
            return Ok(());
        };
        let mut found = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(file) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let Some(case) = file.strip_suffix(".expected.json") else {
                continue;
            };
            let doc: Value = serde_json::from_str(
                &fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?,
            )
            .map_err(|e| format!("{}: {e}", path.display()))?;
            let array = doc
                .get("array")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("{}: no \"array\"", path.display()))?;
            let format_version = doc
                .get("format_version")
                .and_then(Value::as_u64)
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| format!("{}: no \"format_version\"", path.display()))?;
            if !arrays_dir.join(array).is_dir() {
                continue;
            }
            found.push(Producer {
                name: format!("legacy:{array}"),
                format_version,
                cases: [case.to_string()].into_iter().collect(),
                skipped: BTreeMap::new(),
                selection: Some(format!(
                    "one array of TileDB's test inputs ({})",
                    arrays_dir.join(array).display()
                )),
                external: Some(External {
                    array_root: arrays_dir.to_path_buf(),
                    expected: path.clone(),
                }),
            });
        }
        found.sort_by(|a, b| {
            b.format_version
                .cmp(&a.format_version)
                .then(a.name.cmp(&b.name))
        });
        self.producers.extend(found);
        Ok(())
    }

    /// The expected result of every read of one case, by read id.
    pub fn expected(
        &self,
        producer: &str,
        case: &str,
    ) -> Result<BTreeMap<String, Expected>, String> {
        let path = match self.external(producer) {
            Some(external) => external.expected.clone(),
            None => self.case_dir(producer, case).join("expected.json"),
        };
        let text =
            fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let doc: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        parse_expected(&doc).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// The reads of an `expected.json` document, by id.
pub(crate) fn parse_expected(doc: &Value) -> Result<BTreeMap<String, Expected>, String> {
    let reads = doc
        .get("reads")
        .and_then(Value::as_array)
        .ok_or("no \"reads\" list")?;
    let mut out = BTreeMap::new();
    for read in reads {
        let obj = read.as_object().ok_or("a read is not an object")?;
        let id = obj
            .get("id")
            .and_then(Value::as_str)
            .ok_or("a read has no id")?
            .to_string();
        let expected = if let Some(reason) = obj.get("skip") {
            Expected::Skip {
                reason: reason.as_str().unwrap_or("skipped").to_string(),
            }
        } else if let Some(class) = obj.get("error") {
            Expected::Error {
                class: class
                    .as_str()
                    .ok_or("error class is not a string")?
                    .to_string(),
            }
        } else {
            let mut result = obj.clone();
            result.remove("id");
            // The legacy expected files also say how each read was made.
            result.remove("layout");
            Expected::Result(Value::Object(result))
        };
        out.insert(id, expected);
    }
    Ok(out)
}
