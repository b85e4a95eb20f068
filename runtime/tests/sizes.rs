//! Keeps every piece of the repository small enough to hold in one's head
//! (issue 15): no file over [`MAX_FILE_LINES`] lines and no function over
//! [`MAX_FN_LINES`] lines, generated code aside.
//!
//! Every `.rs` file under the workspace root is read (every crate's `src/`,
//! `tests/`, `benches/`, and the cargo-fuzz crate `fuzz/`), except `target/`
//! folders, hidden folders and generated files (`runtime/src/format/generated/`,
//! and any file whose first lines say `@generated`). Functions are found by
//! parsing each file with `syn`: free functions, methods, trait methods with
//! a body, and functions nested in other functions; closures are part of the
//! function they are written in. Functions inside macro calls (`proptest!`,
//! `macro_rules!` bodies) are found in the macro's tokens. A function's
//! length runs from its `fn` keyword to its closing brace: the doc comment
//! and attributes above it are free.

use std::fs;
use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::visit::{self, Visit};

/// The most lines a file may have.
const MAX_FILE_LINES: usize = 800;
/// The most lines a function may have, `fn` to closing brace.
const MAX_FN_LINES: usize = 150;

/// Files over a limit that another piece of work is splitting, and why they
/// may stay over it until then. An entry no longer needed fails the test, so
/// the list only shrinks.
const PENDING: &[(&str, &str)] = &[];

/// A function (or file) over its limit: where, what, how long.
#[derive(Debug, PartialEq)]
struct Oversized {
    line: usize,
    name: String,
    lines: usize,
}

/// Collects every function longer than `limit` lines.
struct LongFunctions {
    limit: usize,
    /// Names of the enclosing impl (`Type::`) or function (`outer::`).
    scope: Vec<String>,
    found: Vec<Oversized>,
}

impl LongFunctions {
    fn measure(&mut self, name: &str, first: usize, last: usize) {
        let lines = last + 1 - first;
        if lines > self.limit {
            let mut qualified = self.scope.join("::");
            if !qualified.is_empty() {
                qualified.push_str("::");
            }
            qualified.push_str(name);
            self.found.push(Oversized {
                line: first,
                name: qualified,
                lines,
            });
        }
    }

    /// `fn name … { body }` sequences in a macro's tokens (which `syn` does
    /// not parse as items): each from `fn` to the first brace group before
    /// a `;`, and those nested in any group.
    fn scan_tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, token) in tokens.iter().enumerate() {
            match token {
                TokenTree::Ident(keyword) if keyword == "fn" => {
                    let Some(TokenTree::Ident(name)) = tokens.get(i + 1) else {
                        continue;
                    };
                    let body = tokens[i + 2..]
                        .iter()
                        .take_while(|t| !matches!(t, TokenTree::Punct(p) if p.as_char() == ';'))
                        .find_map(|t| match t {
                            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => Some(g),
                            _ => None,
                        });
                    if let Some(body) = body {
                        self.measure(
                            &name.to_string(),
                            keyword.span().start().line,
                            body.span_close().end().line,
                        );
                    }
                }
                TokenTree::Group(group) => self.scan_tokens(group.stream()),
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for LongFunctions {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        let name = f.sig.ident.to_string();
        self.measure(
            &name,
            f.sig.fn_token.span.start().line,
            f.block.brace_token.span.close().end().line,
        );
        self.scope.push(name);
        visit::visit_item_fn(self, f);
        self.scope.pop();
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        let name = f.sig.ident.to_string();
        self.measure(
            &name,
            f.sig.fn_token.span.start().line,
            f.block.brace_token.span.close().end().line,
        );
        self.scope.push(name);
        visit::visit_impl_item_fn(self, f);
        self.scope.pop();
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        let name = f.sig.ident.to_string();
        if let Some(body) = &f.default {
            self.measure(
                &name,
                f.sig.fn_token.span.start().line,
                body.brace_token.span.close().end().line,
            );
        }
        self.scope.push(name);
        visit::visit_trait_item_fn(self, f);
        self.scope.pop();
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let self_ty = &i.self_ty;
        let name = impl_type_name(self_ty);
        self.scope.push(name);
        visit::visit_item_impl(self, i);
        self.scope.pop();
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        self.scope.push(t.ident.to_string());
        visit::visit_item_trait(self, t);
        self.scope.pop();
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.scope.push(m.ident.to_string());
        visit::visit_item_mod(self, m);
        self.scope.pop();
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.scan_tokens(m.tokens.clone());
    }
}

/// A short name for an impl's type: its last path segment (`Checker` of
/// `impl Checker<'_>`), or where it starts for anything else.
fn impl_type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map_or_else(String::new, |s| s.ident.to_string()),
        other => format!("<type at line {}>", other.span().start().line),
    }
}

/// The functions of `text` longer than `limit` lines.
fn long_functions(text: &str, limit: usize) -> Result<Vec<Oversized>, String> {
    let file = syn::parse_file(text).map_err(|e| {
        let at = e.span().start();
        format!("does not parse at {}:{}: {e}", at.line, at.column)
    })?;
    let mut visitor = LongFunctions {
        limit,
        scope: Vec::new(),
        found: Vec::new(),
    };
    visitor.visit_file(&file);
    Ok(visitor.found)
}

/// Whether a file says, in its first lines, that a tool wrote it.
fn is_generated(text: &str) -> bool {
    text.lines()
        .take(5)
        .any(|l| l.trim_start().starts_with("//") && l.contains("@generated"))
}

/// Every `.rs` file under `dir`, leaving out `target/` and hidden folders.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("list {}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_default();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_file_or_function_is_over_its_size() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the runtime crate sits in the workspace")
        .to_path_buf();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    assert!(
        files.len() > 100,
        "found only {} .rs files under {}",
        files.len(),
        root.display()
    );

    let mut problems = Vec::new();
    let mut pending_needed = vec![false; PENDING.len()];
    for file in &files {
        let rel = file
            .strip_prefix(&root)
            .expect("under the root")
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("runtime/src/format/generated/") {
            continue;
        }
        let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("read {rel}: {e}"));
        if is_generated(&text) {
            continue;
        }
        let mut own = Vec::new();
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES {
            own.push(format!(
                "{rel}: {lines} lines (at most {MAX_FILE_LINES}): split it by concern into \
                 submodules"
            ));
        }
        match long_functions(&text, MAX_FN_LINES) {
            Ok(found) => own.extend(found.into_iter().map(|f| {
                format!(
                    "{rel}:{}: fn {} is {} lines (at most {MAX_FN_LINES}): split it into \
                     well-named helpers, or a struct holding the state it threads through",
                    f.line, f.name, f.lines
                )
            })),
            Err(e) => own.push(format!("{rel}: {e}")),
        }
        match PENDING.iter().position(|(path, _)| *path == rel) {
            Some(i) => pending_needed[i] = !own.is_empty(),
            None => problems.extend(own),
        }
    }
    for ((path, why), needed) in PENDING.iter().zip(pending_needed) {
        if !needed {
            problems.push(format!(
                "{path}: listed in PENDING ({why}) but within the sizes now: remove it from \
                 PENDING in runtime/tests/sizes.rs"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "files or functions over the sizes of issue 15 ({MAX_FILE_LINES} lines a file, \
         {MAX_FN_LINES} a function; generated code aside):\n{}\n\
         Split by concern: a file into submodules, a function into helpers named for what \
         they do (or a struct for the state it threads through). Behaviour stays the same.",
        problems.join("\n")
    );
}

/// The measure itself: a function's lines run from `fn` to its closing
/// brace; methods, nested functions and functions written inside macro
/// calls are found; closures belong to their function; a function at the
/// limit passes and one line more does not.
#[test]
fn functions_are_measured_from_fn_to_closing_brace() {
    let body = |lines: usize| "    let _ = 1;\n".repeat(lines);
    // `fn` line + 148 body lines + `}` = 150 lines: at the limit.
    let text = format!(
        "/// Docs are free.\n#[inline]\nfn at_limit() {{\n{}}}\n\
         struct S;\nimpl S {{\n    fn method(&self) {{\n{}    }}\n}}\n\
         fn outer() {{\n    fn inner() {{\n{}    }}\n    let c = || {{\n{}    }};\n}}\n\
         proptest::proptest! {{\n    fn in_macro(x in 0..1u8) {{\n{}    }}\n}}\n",
        body(148),
        body(149),
        body(149),
        body(10),
        body(149),
    );
    let found = long_functions(&text, MAX_FN_LINES).expect("parses");
    let names: Vec<(&str, usize)> = found.iter().map(|f| (f.name.as_str(), f.lines)).collect();
    // `outer` holds `inner` (151) and the closure: 1 + 151 + 12 + 1 lines.
    assert_eq!(
        names,
        [
            ("S::method", 151),
            ("outer", 1 + 151 + 12 + 1),
            ("outer::inner", 151),
            ("in_macro", 151),
        ]
    );
    // Doc, attribute, `fn at_limit` (line 3), its body, `}`, `struct`, `impl`.
    assert_eq!(found[0].line, 3 + 148 + 4);
    assert!(is_generated("// @generated by a tool\nfn x() {}\n"));
    assert!(!is_generated("//! Reads the generated layouts.\n"));
}
