//! The names of `directory.toml`: the constants of folders, the fixed file
//! names and suffixes, and the extensions of timestamped names. Each
//! constant and variant is a Rust name once, each name or suffix is stored
//! once, and version gates are in range.

use std::collections::BTreeMap;

use super::{check_gates, is_upper_camel, Ctx, GateRange};
use crate::error::{SpecError, SpecErrorKind};
use crate::model::*;
use crate::raw::*;

fn is_screaming(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

fn invalid(ctx: &Ctx, path: &str, message: String) -> SpecError {
    ctx.err(path, SpecErrorKind::Invalid(message))
}

/// Every constant names one text: a folder listed twice (`__meta` of
/// arrays and groups) may repeat its constant, nothing else may.
fn check_constants<'a>(
    ctx: &Ctx,
    pairs: impl Iterator<Item = (&'a str, &'a str)>,
) -> Result<(), SpecError> {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (constant, text) in pairs {
        let path = format!("constant {constant:?}");
        if !is_screaming(constant) {
            return Err(invalid(ctx, &path, "constant: SCREAMING_SNAKE_CASE".into()));
        }
        if let Some(previous) = seen.insert(constant, text) {
            if previous != text {
                return Err(ctx.err(
                    path,
                    SpecErrorKind::DuplicateName {
                        what: "constant".into(),
                        name: constant.to_string(),
                    },
                ));
            }
        }
    }
    Ok(())
}

/// The fixed file names and suffixes, checked.
pub(super) fn build_file_names(
    ctx: &Ctx,
    raw: &[RawFileName],
    folders: &[Folder],
    gates: GateRange,
) -> Result<Vec<FileName>, SpecError> {
    let mut out: Vec<FileName> = Vec::new();
    for name in raw {
        let path = format!("file_name {:?}", name.name);
        if !matches!(name.object.as_str(), "array" | "group" | "fragment") {
            let message = format!(
                "in: \"{}\" is not \"array\", \"group\" or \"fragment\"",
                name.object
            );
            return Err(invalid(ctx, &path, message));
        }
        if name.name.is_empty() || name.name.contains('/') {
            return Err(invalid(ctx, &path, "name: one path component".into()));
        }
        if out.iter().any(|n| n.name == name.name) {
            let kind = SpecErrorKind::DuplicateName {
                what: "file name".into(),
                name: name.name.clone(),
            };
            return Err(ctx.err(path, kind));
        }
        check_gates(ctx, &path, name.since, name.until, gates)?;
        out.push(FileName {
            name: name.name.clone(),
            constant: name.constant.clone(),
            object: name.object.clone(),
            since: name.since,
            until: name.until,
            doc: name.doc.clone(),
            source: name.source.clone(),
        });
    }
    let folder_constants = folders
        .iter()
        .filter_map(|f| Some((f.constant.as_deref()?, folder_name(&f.path))));
    let file_constants = out.iter().map(|n| (n.constant.as_str(), n.name.as_str()));
    check_constants(ctx, folder_constants.chain(file_constants))?;
    Ok(out)
}

/// A folder's own name: the last component of its path.
pub(crate) fn folder_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The extensions of timestamped names, checked.
pub(super) fn build_extensions(
    ctx: &Ctx,
    raw: &[RawExtension],
    folders: &[Folder],
    gates: GateRange,
) -> Result<Vec<NameExtension>, SpecError> {
    let mut out: Vec<NameExtension> = Vec::new();
    for ext in raw {
        let path = format!("extension {:?}", ext.suffix);
        if !is_upper_camel(&ext.variant) {
            return Err(invalid(ctx, &path, "variant: UpperCamelCase".into()));
        }
        let word = ext.suffix.strip_prefix('.').unwrap_or("");
        if word.is_empty() || !word.bytes().all(|b| b.is_ascii_lowercase()) {
            let message = "suffix: a dot and lowercase letters, e.g. \".wrt\"".into();
            return Err(invalid(ctx, &path, message));
        }
        if out
            .iter()
            .any(|e| e.variant == ext.variant || e.suffix == ext.suffix)
        {
            let kind = SpecErrorKind::DuplicateName {
                what: "extension".into(),
                name: ext.suffix.clone(),
            };
            return Err(ctx.err(path, kind));
        }
        // A file in a folder is no older than the folder.
        let mut folder_since = None;
        if let Some(folder) = &ext.folder {
            let Some(found) = folders.iter().find(|f| &f.path == folder) else {
                let message = format!("folder: {folder:?} is no [[folder]] path");
                return Err(invalid(ctx, &path, message));
            };
            folder_since = found.since;
        }
        let since = ext.since.or(folder_since);
        check_gates(ctx, &path, since, ext.until, gates)?;
        out.push(NameExtension {
            variant: ext.variant.clone(),
            suffix: ext.suffix.clone(),
            folder: ext.folder.clone(),
            since,
            until: ext.until,
            doc: ext.doc.clone(),
            source: ext.source.clone(),
        });
    }
    Ok(out)
}
