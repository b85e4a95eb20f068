//! `--unused`: the generated types that no runtime code outside
//! `format/generated/` names, each with its reason from spec/
//! (`unused_reason`). A text scan: a type counts as used when its name (or
//! the name of its zero-copy view, `<Name>View`) appears as a word in a
//! `.rs` file of `runtime/src` outside the generated folder (comments
//! included, so naming a type in a doc link counts).

use std::collections::BTreeSet;
use std::path::Path;

use crate::model::Spec;

/// One generated type and whether the runtime names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeUse {
    /// The generated type's Rust name.
    pub name: String,
    /// The spec file that declares it.
    pub file: String,
    /// `enum`, `struct`, `context` or `switch` (the enum of a switch field).
    pub kind: &'static str,
    /// Some `.rs` file of `runtime/src` outside `format/generated/` names it.
    pub used: bool,
    /// `unused_reason` from spec/ (for a switch: its struct's).
    pub reason: Option<String>,
}

impl TypeUse {
    /// Unused with no reason, or given a reason while used: both fail `--unused`.
    pub fn problem(&self) -> Option<String> {
        match (self.used, &self.reason) {
            (false, None) => Some(format!(
                "{}: {} {} is used by no runtime code and has no unused_reason",
                self.file, self.kind, self.name
            )),
            (true, Some(_)) => Some(format!(
                "{}: {} {} is used by the runtime now; remove its unused_reason",
                self.file, self.kind, self.name
            )),
            _ => None,
        }
    }
}

/// Every generated type of `spec`, with whether the `.rs` files under
/// `runtime_src` (but not `format/generated/`) name it.
pub fn scan(spec: &Spec, runtime_src: &Path) -> std::io::Result<Vec<TypeUse>> {
    let mut words = BTreeSet::new();
    collect_words(
        runtime_src,
        &runtime_src.join("format/generated"),
        &mut words,
    )?;
    let mut out = Vec::new();
    let mut push = |name: &str, file: &str, kind: &'static str, reason: &Option<String>| {
        // A struct's zero-copy view reads and writes its layout: using
        // `<Name>View` uses `<Name>`.
        let used = words.contains(name) || words.contains(&format!("{name}View"));
        out.push(TypeUse {
            name: name.to_string(),
            file: file.to_string(),
            kind,
            used,
            reason: reason.clone(),
        });
    };
    for file in &spec.files {
        for e in &file.enums {
            push(&e.name, &file.display, "enum", &e.unused_reason);
        }
        for c in &file.contexts {
            push(&c.name, &file.display, "context", &c.unused_reason);
        }
        for s in &file.structs {
            push(&s.name, &file.display, "struct", &s.unused_reason);
            for field in &s.fields {
                if let crate::model::Layout::Switch(switch) = &field.layout {
                    push(&switch.rust_name, &file.display, "switch", &s.unused_reason);
                }
            }
        }
    }
    Ok(out)
}

fn collect_words(dir: &Path, skip: &Path, words: &mut BTreeSet<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path == skip {
            continue;
        }
        if path.is_dir() {
            collect_words(&path, skip, words)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path)?;
            // Other generated code (the explain walkers) names every type;
            // that is not the runtime using it.
            if text
                .lines()
                .next()
                .is_some_and(|l| l.contains("@generated"))
            {
                continue;
            }
            words.extend(
                text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| !w.is_empty())
                    .map(str::to_string),
            );
        }
    }
    Ok(())
}
