//! Documentation: takes the prose and facts of the model, gives the doc
//! comments of generated items (escaped so rustdoc shows the spec's words as
//! written) and the descriptions of gates.

use proc_macro2::TokenStream;
use quote::quote;

use crate::model::*;

pub(super) fn doc_attrs(lines: &[String]) -> TokenStream {
    let mut out = TokenStream::new();
    for line in lines {
        let text = if line.is_empty() {
            String::new()
        } else {
            format!(" {}", escape_doc(line))
        };
        out.extend(quote!(#[doc = #text]));
    }
    out
}

/// Escapes what rustdoc would read as links or HTML (`[i]`, `<T>`) outside
/// code spans, so the spec's prose comes through as written.
fn escape_doc(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + 8);
    let mut in_code = false;
    for c in line.chars() {
        match c {
            '`' => in_code = !in_code,
            '[' | ']' | '<' | '>' if !in_code => out.push('\\'),
            _ => {}
        }
        out.push(c);
    }
    out
}

/// Splits a description into doc lines, keeping paragraphs.
pub(super) fn doc_lines(text: &str) -> Vec<String> {
    text.lines().map(|l| l.trim_end().to_string()).collect()
}

pub(super) fn gate_text(since: Option<u32>, until: Option<u32>) -> String {
    match (since, until) {
        (None, None) => "all versions".to_string(),
        (Some(s), None) => format!("versions {s} and later"),
        (None, Some(u)) => format!("versions before {u}"),
        (Some(s), Some(u)) => format!("versions {s} to {}", u - 1),
    }
}

/// The presence condition of a field in the spec's words, for messages.
pub(super) fn gate_description(structure: &Struct, field: &Field) -> String {
    let mut parts = Vec::new();
    if let Some(since) = field.since {
        parts.push(format!("{} >= {since}", structure.version_text));
    }
    if let Some(until) = field.until {
        parts.push(format!("{} < {until}", structure.version_text));
    }
    if let Some(condition) = &field.condition {
        parts.push(condition.text.clone());
    }
    parts.join(" && ")
}

pub(super) fn field_doc(structure: &Struct, field: &Field) -> Vec<String> {
    let mut lines = field.doc.as_deref().map(doc_lines).unwrap_or_default();
    let mut facts = Vec::new();
    facts.push(format!(
        "Versions: {}.",
        gate_text(field.since, field.until)
    ));
    if let Some(condition) = &field.condition {
        facts.push(format!("Present only when `{}`.", condition.text));
    }
    if let Some(default) = &field.default {
        facts.push(format!("Where absent it reads as `{}`.", default.text));
    } else if field.is_optional() {
        facts.push("`None` where absent.".into());
    }
    for other in &structure.fields {
        match &other.role {
            Role::LengthOf(target) if target == &field.name => facts.push(format!(
                "Its length is stored before it in `{}` ({}){}",
                other.name,
                other.base_ty().spec_name(),
                other
                    .doc
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_else(|| ".".into())
            )),
            Role::SizeOf(target) if target == &field.name => facts.push(format!(
                "Its size in bytes is stored before it in `{}` ({}){}",
                other.name,
                other.base_ty().spec_name(),
                other
                    .doc
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_else(|| ".".into())
            )),
            _ => {}
        }
    }
    match &field.layout {
        Layout::Bytes {
            len: BytesLen::Size(size),
        } => facts.push(format!("Size: `{}` bytes.", size.text)),
        Layout::List {
            len: ListLen::Count(count),
            ..
        } => facts.push(format!("Count: `{}`.", count.text)),
        Layout::List {
            len: ListLen::Each { over, .. },
            ..
        } => facts.push(format!("One element per entry of `{}`.", over.text)),
        Layout::List {
            len: ListLen::UntilEof,
            ..
        }
        | Layout::Bytes {
            len: BytesLen::UntilEof,
        } => facts.push("Runs to the end of the enclosing structure.".into()),
        Layout::Bytes {
            len: BytesLen::Terminated { byte, or_end },
        } => facts.push(format!(
            "Ends at the first byte {byte:#04x}, which is consumed and not kept{}.",
            if *or_end {
                ", or at the end of the enclosing structure (it is always written)"
            } else {
                ""
            }
        )),
        _ => {}
    }
    if let Some(size) = &field.sized {
        facts.push(format!("Occupies exactly `{}` bytes.", size.text));
    }
    if let Some(max) = field.max {
        facts.push(format!("At most {max}."));
    }
    let source = field.source.as_ref().or(structure.source.as_ref());
    if let Some(source) = source {
        facts.push(format!("Source: `{source}`."));
    }
    if !lines.is_empty() {
        lines.push(String::new());
    }
    lines.push(facts.join(" "));
    if let Some(erratum) = &field.erratum {
        lines.push(String::new());
        lines.push(format!("Erratum: {erratum}"));
    }
    for other in &structure.fields {
        if let (Role::LengthOf(t) | Role::SizeOf(t), Some(erratum)) = (&other.role, &other.erratum)
        {
            if t == &field.name {
                lines.push(String::new());
                lines.push(format!("Erratum (`{}`): {erratum}", other.name));
            }
        }
    }
    lines
}
