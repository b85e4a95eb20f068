//! `--emit ksy DIR`: Kaitai Struct descriptions of the file kinds.
//!
//! Every struct of the model becomes a Kaitai type when Kaitai can express
//! it: little-endian numbers, byte arrays sized by expressions over earlier
//! fields and params, `if:` for version gates and conditions, `switch-on`
//! for switch fields, `repeat: expr`/`eos` for lists. A defaulted
//! conditional field `f` also gets an instance `f_or_default`. A `bool` is a
//! `u1` (expressions compare it with 0). An `Option<T>` param `p` travels
//! as `p` and `p_present`.
//!
//! Each generic-tile payload without params is a file kind: one
//! `tiledb_<stem>.ksy` with the generic tile header, the tile framing and,
//! for an unfiltered or GZIP-only single-chunk tile, the payload parsed
//! through (`process: zlib`). `tiledb_fragment_metadata.ksy` covers what
//! needs no schema: the footer length, the generic tiles before the footer
//! (headers and chunk framing) and the footer's first fields.
//! `UNSUPPORTED.md` lists what Kaitai cannot express, with why, and
//! `manifest.json` tells a dumper which Kaitai attribute holds which
//! field of the Rust structs (their serde shape).

mod expr;
mod files;
mod types;
mod yaml;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::expr::{BinOp, ExprKind, NameKind};
use crate::model::*;

use yaml::Y;

/// `ArraySchema` → `array_schema`, `RTree` → `r_tree`.
pub fn snake(name: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
            let prev_upper = i > 0 && chars[i - 1].is_ascii_uppercase();
            if i > 0 && (prev_lower || (prev_upper && next_lower)) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(*c);
        }
    }
    out
}

/// Names Kaitai's targets cannot take as identifiers.
fn safe_id(name: &str) -> String {
    const RESERVED: &[&str] = &[
        "and", "or", "not", "in", "is", "if", "else", "for", "while", "def", "class", "return",
        "import", "from", "as", "with", "pass", "lambda", "global", "none", "true", "false", "del",
        "try", "except", "finally", "raise", "yield", "assert", "break", "continue", "elif",
        "nonlocal", "async", "await", "to_i", "size", "io", "root", "parent",
    ];
    let lower = name.to_ascii_lowercase();
    let lower = if lower.starts_with(|c: char| c.is_ascii_digit()) {
        format!("v{lower}")
    } else {
        lower
    };
    if RESERVED.contains(&lower.as_str()) {
        format!("{lower}_")
    } else {
        lower
    }
}

fn prim_ksy(p: Prim) -> &'static str {
    match p {
        Prim::U8 => "u1",
        Prim::U16 => "u2",
        Prim::U32 => "u4",
        Prim::U64 => "u8",
        Prim::I8 => "s1",
        Prim::I16 => "s2",
        Prim::I32 => "s4",
        Prim::I64 => "s8",
        Prim::F32 => "f4",
        Prim::F64 => "f8",
    }
}

type Why = String;

/// Named YAML entries (Kaitai types or enums).
type Entries = Vec<(String, Y)>;

struct Ctx<'a> {
    spec: &'a Spec,
    table: &'a TypeTable,
    /// Struct → why Kaitai cannot express it (absent: it can).
    unsupported: BTreeMap<String, Why>,
}

/// Field ids: lower snake case already; keep clear of Kaitai's and Python's words.
fn safe_field(name: &str) -> String {
    safe_id(name)
}

/// The class name Kaitai's Python target gives a type.
fn python_class(struct_name: &str) -> String {
    snake(struct_name)
        .split('_')
        .map(|part| {
            let mut c = part.chars();
            match c.next() {
                Some(first) => first.to_uppercase().collect::<String>() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// A file kind: a paramless generic-tile payload.
fn is_file_kind(st: &Struct) -> bool {
    st.container.as_deref() == Some("generic_tile") && st.params.is_empty()
}

/// Every `.ksy`, `UNSUPPORTED.md` and `manifest.json`, by file name.
pub fn render(spec: &Spec, table: &TypeTable) -> Vec<(String, String)> {
    let cx = Ctx::new(spec, table);
    let mut files = Vec::new();
    let mut kinds = Vec::new();
    for st in table.structs.values() {
        if is_file_kind(st) && !cx.unsupported.contains_key(&st.name) {
            let name = format!("tiledb_{}.ksy", snake(&st.name));
            files.push((name.clone(), cx.render_kind(st)));
            kinds.push(format!("{name}: a generic tile holding {}", st.name));
        }
    }
    if let Some(text) = cx.render_fragment_metadata() {
        let name = "tiledb_fragment_metadata.ksy".to_string();
        files.push((name.clone(), text));
        kinds.push(format!(
            "{name}: footer length, generic tiles and footer prefix"
        ));
    }
    files.push(("UNSUPPORTED.md".into(), cx.render_unsupported(&kinds)));
    let mut manifest = serde_json::to_string_pretty(&cx.manifest()).expect("serializes");
    manifest.push('\n');
    files.push(("manifest.json".into(), manifest));
    files
}
