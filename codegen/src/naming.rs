//! Spellings: turns spec names into Rust names. Takes strings, gives strings
//! (or a `syn::Ident`); it sits at the bottom so every stage can use it.

use proc_macro2::Span;

/// UpperCamelCase of a spec spelling: `DATETIME_YEAR` → `DatetimeYear`, `INT32` → `Int32`.
pub fn upper_camel(spec_name: &str) -> String {
    let mut out = String::new();
    for part in spec_name.split(['_', '-', ' ']) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(&chars.as_str().to_lowercase());
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'V');
    }
    out
}

/// A Rust identifier for a spec name: keywords get a trailing underscore.
pub fn rust_ident(name: &str) -> String {
    const KEYWORDS: &[&str] = &[
        "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn",
        "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
        "return", "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe",
        "use", "where", "while", "async", "await", "dyn", "abstract", "become", "box", "do",
        "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
        "gen",
    ];
    if KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

pub fn ident(name: &str) -> syn::Ident {
    syn::Ident::new(name, Span::call_site())
}
