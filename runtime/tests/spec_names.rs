//! Keeps the folder names, fixed file names and extensions of
//! spec/directory.toml out of the library's hand-written code: a string
//! literal in `runtime/src` (outside `format/generated` and generated
//! files, and outside test modules) that spells one of them fails, naming
//! the file, the line and the generated constant to use instead.
//!
//! The names come from the generated code itself (its `&str` constants,
//! `FOLDERS` and `Extension::ALL`), so a name added to spec/ is checked
//! from then on.

use std::fs;
use std::path::{Path, PathBuf};

use syn::visit::Visit;
use tiledb_runtime::format::generated::{Extension, FOLDERS};

/// A spec'd name and what to use instead.
struct Name {
    text: String,
    /// A suffix (`.wrt`, `_var.tdb`): matched also at the end of a
    /// formatted name (`"{stem}_var.tdb"`).
    suffix: bool,
    instead: String,
}

/// The `&str` constants of the generated `directory` module, and the
/// extensions' suffixes.
fn spec_names() -> Vec<Name> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/format/generated/directory.rs");
    let file = syn::parse_file(&fs::read_to_string(&path).unwrap()).unwrap();
    let mut names = Vec::new();
    for item in file.items {
        let syn::Item::Const(constant) = item else {
            continue;
        };
        let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(text),
            ..
        }) = *constant.expr
        else {
            continue;
        };
        let text = text.value();
        names.push(Name {
            suffix: !text.starts_with("__") && text.starts_with(['.', '_']),
            text,
            instead: format!("format::generated::{}", constant.ident),
        });
    }
    for ext in Extension::ALL {
        names.push(Name {
            text: ext.suffix().to_string(),
            suffix: true,
            instead: format!("Extension::{ext:?}.suffix()"),
        });
    }
    for folder in FOLDERS {
        for component in folder.path.split('/').filter(|c| !c.is_empty()) {
            assert!(
                names.iter().any(|n| n.text == component),
                "folder {component} of spec/directory.toml has no `constant`"
            );
        }
    }
    names
}

/// The name a literal spells, if any: the whole literal, one of its path
/// components, or (for a suffix) its end after a format argument or a name.
/// Prose (a literal with a space: messages, docs) is left alone.
fn spelled<'a>(literal: &str, names: &'a [Name]) -> Option<&'a Name> {
    if literal.contains(' ') {
        return None;
    }
    names.iter().find(|name| {
        let text = name.text.as_str();
        literal == text
            || literal.split('/').any(|component| component == text)
            || (name.suffix
                && literal.strip_suffix(text).is_some_and(|head| {
                    head.ends_with('}') || head.ends_with(|c: char| c.is_ascii_alphanumeric())
                }))
    })
}

struct Literals<'a> {
    names: &'a [Name],
    found: Vec<String>,
    file: String,
}

impl Literals<'_> {
    fn check(&mut self, text: &str, span: proc_macro2::Span) {
        if let Some(name) = spelled(text, self.names) {
            self.found.push(format!(
                "{}:{}: {text:?} spells {:?}: use {}",
                self.file,
                span.start().line,
                name.text,
                name.instead
            ));
        }
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string() == "test")
    })
}

impl<'ast> Visit<'ast> for Literals<'_> {
    fn visit_lit_str(&mut self, lit: &'ast syn::LitStr) {
        self.check(&lit.value(), lit.span());
    }
    fn visit_lit_byte_str(&mut self, lit: &'ast syn::LitByteStr) {
        if let Ok(text) = String::from_utf8(lit.value()) {
            self.check(&text, lit.span());
        }
    }
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if !is_cfg_test(&module.attrs) {
            syn::visit::visit_item_mod(self, module);
        }
    }
    fn visit_item_fn(&mut self, function: &'ast syn::ItemFn) {
        if !is_cfg_test(&function.attrs) {
            syn::visit::visit_item_fn(self, function);
        }
    }
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // format!("{dir}/__fragment_metadata.tdb", …) and friends: the
        // literals among the macro's arguments.
        let parser = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        if let Ok(args) = mac.parse_body_with(parser) {
            for arg in &args {
                self.visit_expr(arg);
            }
        }
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if !path.ends_with("format/generated") && !path.ends_with("tests") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("tests.rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_spec_name_is_spelled_by_hand_in_the_library() {
    let names = spec_names();
    assert!(
        names.iter().any(|n| n.text == "__fragments"),
        "the constants were read"
    );
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for path in files {
        let text = fs::read_to_string(&path).unwrap();
        if text.starts_with("// @generated") {
            continue;
        }
        let file = syn::parse_file(&text).unwrap();
        let mut visitor = Literals {
            names: &names,
            found: Vec::new(),
            file: path.strip_prefix(&src).unwrap().display().to_string(),
        };
        visitor.visit_file(&file);
        found.extend(visitor.found);
    }
    assert!(
        found.is_empty(),
        "spec/directory.toml's names spelled by hand:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_catches_each_form() {
    let names = spec_names();
    for literal in [
        "__commits",
        "{dir}/__fragment_metadata.tdb",
        "{}_var.tdb",
        "{name}.wrt",
        ".del",
        "__schema/x",
    ] {
        assert!(spelled(literal, &names).is_some(), "{literal}");
    }
    for literal in ["a .ok, .wrt or .del commit", "fragments", "x", "__commitsx"] {
        assert!(spelled(literal, &names).is_none(), "{literal}");
    }
}
