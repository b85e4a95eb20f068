//! Keeps ARCHITECTURE.md true: every module of the library imports only
//! modules of the rows above its own in the layer table, and within its row
//! only the modules listed before it.
//!
//! The table is read from ARCHITECTURE.md (rows `| # | modules | … |`,
//! modules in backticks). Every file under `src/` belongs to its top-level
//! module; every `crate::…` path in it (in `use` lines and in code, brace
//! groups expanded) and every `super::…` path that leaves the top-level
//! module is a reference to another top-level module. Comments, string
//! literals and `format/generated` are left out. Items the crate root
//! re-exports (`crate::Error`) count as their module's.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Top-level modules the table does not place yet, and why.
const UNPLACED: &[(&str, &str)] = &[];

/// Module → (row, position in the row).
fn layer_table(text: &str) -> BTreeMap<String, (u32, usize)> {
    let mut layers = BTreeMap::new();
    let section = text
        .split("## The library's layers")
        .nth(1)
        .expect("ARCHITECTURE.md has a section \"The library's layers\"");
    for line in section.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // `| 3 | modules | what |` splits into ["", "3", "modules", "what", ""].
        if cells.len() < 4 || !cells[0].is_empty() {
            continue;
        }
        let Ok(row) = cells[1].parse::<u32>() else {
            continue;
        };
        let modules = cells[2].split('`').skip(1).step_by(2);
        for (position, module) in modules.enumerate() {
            let previous = layers.insert(module.to_string(), (row, position));
            assert!(previous.is_none(), "`{module}` is in two rows of the table");
        }
    }
    assert!(!layers.is_empty(), "no layer rows found in ARCHITECTURE.md");
    layers
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("list src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `read/sparse/mod.rs` → `[read, sparse]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts
}

/// The text with comments, string and character literals blanked out
/// (newlines kept, so that offsets still give line numbers).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, bytes: &[u8]| {
        out.extend(bytes.iter().map(|&c| if c == b'\n' { b'\n' } else { b' ' }));
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            let mut j = 0;
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if rest.starts_with(b"r\"") || rest.starts_with(b"r#") || rest.starts_with(b"br\"") {
            // A raw string: r#*" … "#*.
            let start = rest.iter().position(|&c| c == b'r').unwrap_or(0) + 1;
            let hashes = rest[start..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(start + hashes) != Some(&b'"') {
                out.push(b[i]);
                i += 1;
                continue;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let body = start + hashes + 1;
            let end = rest[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(rest.len(), |p| body + p + close.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'\'' && (rest.get(2) == Some(&b'\'') || (rest.get(1) == Some(&b'\\')))
        {
            // A character literal ('x', '\n', '\u{..}'), not a lifetime.
            let end = rest[1..]
                .iter()
                .position(|&c| c == b'\'')
                .map_or(1, |p| p + 2);
            let end = if rest.get(1) == Some(&b'\\') {
                rest[2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map_or(2, |p| p + 3)
            } else {
                end
            };
            blank(&mut out, &rest[..end]);
            i += end;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8 boundaries")
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The paths starting at `at` (`crate::a::b`, `super::super::c`, and each
/// branch of a brace group `crate::{a, b::c}`), as segments.
fn paths_at(code: &str, at: usize) -> Vec<Vec<String>> {
    let b = code.as_bytes();
    let mut segments = Vec::new();
    let mut i = at;
    loop {
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if i > start {
            segments.push(code[start..i].to_string());
        }
        if code[i..].starts_with("::") {
            i += 2;
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if b.get(i) == Some(&b'{') {
                // One level of braces: each branch is its own path.
                let close = code[i..].find('}').map_or(b.len(), |p| i + p);
                let mut out = Vec::new();
                for branch in code[i + 1..close].split(',') {
                    let branch = branch.split(" as ").next().unwrap_or("").trim();
                    if branch.is_empty() || branch == "self" || branch.starts_with('{') {
                        continue;
                    }
                    let mut path = segments.clone();
                    path.extend(branch.split("::").map(|s| s.trim().to_string()));
                    out.push(path);
                }
                out.push(segments);
                return out;
            }
            continue;
        }
        return vec![segments];
    }
}

/// Inline `mod name {` blocks: for each byte offset, how many enclose it.
fn inline_depth(code: &str) -> Vec<u8> {
    let b = code.as_bytes();
    let mut depth = vec![0u8; b.len() + 1];
    let mut braces: Vec<bool> = Vec::new(); // true = opened by an inline mod
    let mut inline = 0u8;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'{' {
            // `mod name {`: the word before the brace, and `mod` before it.
            let before = code[..i].trim_end();
            let name = before.trim_end_matches(|c: char| c.is_alphanumeric() || c == '_');
            let keyword = name.trim_end();
            let is_mod = name.len() < before.len()
                && keyword.ends_with("mod")
                && !keyword[..keyword.len() - 3]
                    .bytes()
                    .last()
                    .is_some_and(is_ident);
            braces.push(is_mod);
            if is_mod {
                inline += 1;
            }
        } else if b[i] == b'}' && braces.pop() == Some(true) {
            inline -= 1;
        }
        depth[i] = inline;
        i += 1;
    }
    depth
}

#[test]
fn modules_import_only_the_layers_below_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let table = fs::read_to_string(root.join("../ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let layers = layer_table(&table);
    let src = root.join("src");
    let lib = fs::read_to_string(src.join("lib.rs")).expect("lib.rs");

    // The top-level modules, each placed in the table (or listed as not yet).
    let mut problems = Vec::new();
    let mut top_modules = Vec::new();
    for line in lib.lines() {
        if let Some(name) = line
            .trim()
            .strip_prefix("pub mod ")
            .or(line.trim().strip_prefix("mod "))
        {
            let name = name.trim_end_matches(';').trim().to_string();
            if !layers.contains_key(&name) && !UNPLACED.iter().any(|(m, _)| *m == name) {
                problems.push(format!(
                    "src/lib.rs: module `{name}` is in no row of the layer table"
                ));
            }
            top_modules.push(name);
        }
    }
    // Items the crate root re-exports: `pub use module::{A, B}`.
    let mut root_items: BTreeMap<String, String> = BTreeMap::new();
    for line in lib.lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let rest = rest.trim_end_matches(';');
        let (module, items) = rest.split_once("::").unwrap_or((rest, ""));
        for item in items.trim_matches(|c| c == '{' || c == '}').split(',') {
            let item = item.trim().rsplit("::").next().unwrap_or("").to_string();
            if !item.is_empty() {
                root_items.insert(item, module.to_string());
            }
        }
    }

    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    for file in &files {
        let rel = file
            .strip_prefix(root)
            .expect("under the crate")
            .display()
            .to_string();
        if rel.contains("format/generated") {
            continue;
        }
        let module = module_path(&src, file);
        let Some(own) = module.first() else {
            continue; // lib.rs
        };
        let Some(&(own_row, own_position)) = layers.get(own) else {
            continue; // an unplaced module
        };
        let text = fs::read_to_string(file).expect("read");
        let code = code_only(&text);
        let depth = inline_depth(&code);
        let bytes = code.as_bytes();
        let mut at = 0;
        while let Some(found) = code[at..].find(['c', 's']).map(|p| at + p) {
            at = found + 1;
            let word = if code[found..].starts_with("crate::") {
                "crate"
            } else if code[found..].starts_with("super::") {
                "super"
            } else {
                continue;
            };
            if found > 0 && (is_ident(bytes[found - 1]) || bytes[found - 1] == b':') {
                continue;
            }
            at = found + word.len();
            for path in paths_at(&code, found) {
                let target: Vec<String> = if word == "crate" {
                    path[1..].to_vec()
                } else {
                    // `super` from the module the path is written in: the
                    // file's module, or an inline module inside it.
                    let mut here = module.clone();
                    here.extend(std::iter::repeat_n("_".to_string(), depth[found] as usize));
                    let supers = path.iter().take_while(|s| *s == "super").count();
                    if supers > here.len() {
                        continue;
                    }
                    here.truncate(here.len() - supers);
                    here.extend(path[supers..].iter().cloned());
                    if here.iter().any(|s| s == "_") {
                        continue; // still inside the file
                    }
                    here
                };
                let Some(first) = target.first() else {
                    continue;
                };
                let top = if top_modules.contains(first) {
                    first.clone()
                } else if let Some(module) = root_items.get(first) {
                    module.clone()
                } else {
                    continue;
                };
                if &top == own {
                    continue;
                }
                let Some(&(row, position)) = layers.get(&top) else {
                    continue; // an unplaced module (see UNPLACED)
                };
                if row > own_row || (row == own_row && position > own_position) {
                    let line = code[..found].matches('\n').count() + 1;
                    problems.push(format!(
                        "{rel}:{line}: `{own}` (row {own_row}) imports `{}` (`{top}`, row {row})",
                        target.join("::")
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "imports against the layer table of ARCHITECTURE.md:\n{}",
        problems.join("\n")
    );
}

/// The test's own reading: a reference up a row is found, with its line;
/// comments and strings are not references.
#[test]
fn the_reader_finds_references_and_skips_comments_and_strings() {
    let code =
        code_only("// crate::array\nlet s = \"crate::array\";\nuse crate::{read::X, storage};\n");
    let at = code.find("crate::").expect("the use line stays");
    assert_eq!(code[..at].matches('\n').count() + 1, 3);
    let paths = paths_at(&code, at);
    assert!(paths.contains(&vec!["crate".into(), "read".into(), "X".into()]));
    assert!(paths.contains(&vec!["crate".into(), "storage".into()]));
    let table = layer_table("## The library's layers\n| # | modules | what |\n| --- | --- | --- |\n| 0 | `error`, `format` | x |\n| 1 | `storage` | y |\n");
    assert_eq!(table["format"], (0, 1));
    assert_eq!(table["storage"], (1, 0));
    let nested = "mod tests {\n    use super::x;\n}\n";
    let depth = inline_depth(nested);
    assert_eq!(depth[nested.find("super").unwrap()], 1);
}
