//! Vocabulary that spec/ does not use yet, compiled and run on real files.
//!
//! - Newline-terminated text as structures: `terminator` on bytes and
//!   `ends_with(b"…")` in conditions. A copy of spec/ gains a file that
//!   describes `.vac` and `.con` files with them; the regenerated crate reads
//!   the corpus's real files and a `.con` carrying an embedded delete commit
//!   (built from a real `.del` file by the documented layout), and writes
//!   them back byte for byte.
//! - `size` on a struct or switch field: the filter options are read within
//!   exactly `options_len` bytes, which every schema of the corpus satisfies
//!   (so each filter's options layout in spec/ is exact), and a mismatch is
//!   an error.
//! - `errors` in a switch: the retired filter type 17 is refused on read and
//!   on write, with the spec's reason.

mod support;

use std::path::{Path, PathBuf};

use support::{literal, run_generated_crate, workspace, GZIP_PAYLOAD};

const COMMIT_TEXT: &str = r#"
[file]
title = "Commit text files (vocabulary test)"
module = "commit_text"

[[struct]]
name = "LineList"
doc = "Newline-terminated lines to the end of the file (.vac, .ign)."

[[struct.field]]
name = "lines"
type = "Line"
until_eof = true
doc = "The lines."

[[struct]]
name = "Line"
doc = "One line."

[[struct.field]]
name = "text"
type = "bytes"
terminator = "\n"
doc = "The line without its newline."

[[struct]]
name = "CommitTextCon"
doc = "A .con file."

[[struct.field]]
name = "entries"
type = "ConsolidatedCommitEntry"
until_eof = true
doc = "The entries."

[[struct]]
name = "ConsolidatedCommitEntry"
doc = "A commit path; a delete commit's path is followed by the whole .del file."

[[struct.field]]
name = "path"
type = "bytes"
terminator = "\n"
doc = "Path relative to the array."

[[struct.field]]
name = "tile_size"
type = "u64"
length_of = "tile"
if = 'path.ends_with(b".del")'
doc = "Bytes of the embedded delete commit."

[[struct.field]]
name = "tile"
type = "bytes"
size = "tile_size"
if = 'path.ends_with(b".del")'
doc = "The delete commit file (a generic tile)."
"#;

const CRATE_TEST: &str = r#"
use generated_crate::format::generated::*;
use generated_crate::format::io::{read_exact_from, read_prefix, write_to_vec};

#[test]
fn vacuum_files_are_lines() {
    let bytes = std::fs::read(VAC).expect("vac");
    let list: LineList = read_exact_from(&bytes, (), "LineList").expect("read");
    assert_eq!(list.lines.len(), 3);
    assert!(list.lines.iter().all(|l| l.text.starts_with(b"/__fragments/")));
    assert_eq!(write_to_vec(&list, (), "LineList").expect("write"), bytes);
}

#[test]
fn consolidated_commits_round_trip() {
    let bytes = std::fs::read(CON).expect("con");
    let con: CommitTextCon = read_exact_from(&bytes, (), "CommitTextCon").expect("read");
    assert_eq!(con.entries.len(), 3);
    assert!(con.entries.iter().all(|e| e.path.ends_with(b".wrt") && e.tile.is_none()));
    assert_eq!(write_to_vec(&con, (), "CommitTextCon").expect("write"), bytes);
}

#[test]
fn an_embedded_delete_commit_follows_its_path() {
    let del = std::fs::read(DEL).expect("del");
    let mut bytes = std::fs::read(CON).expect("con");
    bytes.extend_from_slice(b"__commits/__40_40_0123456789abcdef0123456789abcdef_22.del\n");
    bytes.extend_from_slice(&(del.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&del);
    bytes.extend_from_slice(b"__commits/__50_50_0123456789abcdef0123456789abcdef_22.wrt\n");
    let con: CommitTextCon = read_exact_from(&bytes, (), "CommitTextCon").expect("read");
    assert_eq!(con.entries.len(), 5);
    let tile = con.entries[3].tile.as_ref().expect("the .del entry carries its file");
    assert_eq!(tile, &del);
    let condition: DeleteCommit = read_exact_from(&payload(tile), (), "DeleteCommit").expect("condition");
    let _ = condition;
    assert!(con.entries[4].tile.is_none());
    assert_eq!(write_to_vec(&con, (), "CommitTextCon").expect("write"), bytes);
}

#[test]
fn filter_options_fill_exactly_their_declared_length() {
    let mut filters = 0;
    for file in SCHEMAS {
        let bytes = std::fs::read(file).expect("schema");
        let payload = payload(&bytes);
        let schema: ArraySchema = read_exact_from(&payload, (), "ArraySchema")
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(write_to_vec(&schema, (), "ArraySchema").expect("write"), payload);
        filters += schema.coords_filters.filters.len() + schema.attributes.iter().map(|a| a.filters.filters.len()).sum::<usize>();
    }
    assert!(filters > 20, "{filters} filters checked");
    // ZSTD options (compressor u8, level i32) declared one byte longer.
    let mut bytes = vec![FilterType::Zstd.value()];
    bytes.extend(6u32.to_le_bytes());
    bytes.extend([Compressor::Zstd.value(), 3, 0, 0, 0, 0]);
    let err = read_exact_from::<Filter>(&bytes, FilterBinReadArgs::builder().version(22).finalize(), "Filter")
        .expect_err("a byte left over");
    // The byte after the 5 the options use (at 5 + 5) is left over.
    assert!(err.to_string().contains("byte 10: Filter.options: 1 unexpected trailing byte"), "{err}");
}

#[test]
fn a_refused_switch_value_is_an_error_both_ways() {
    let mut bytes = vec![FilterType::Deprecated.value()];
    bytes.extend(0u32.to_le_bytes());
    let err = read_exact_from::<Filter>(&bytes, FilterBinReadArgs::builder().version(22).finalize(), "Filter")
        .expect_err("type 17");
    assert!(err.to_string().contains("Filter.options: filter type 17 is retired"), "{err}");
    let filter = Filter { filter_type: FilterType::Deprecated, options: FilterOptions::Rejected(()) };
    let err = write_to_vec(&filter, FilterBinWriteArgs::builder().version(22).finalize(), "Filter")
        .expect_err("cannot write");
    assert!(err.to_string().contains("refused value cannot be written"), "{err}");
}

#[test]
fn a_line_without_its_newline_is_corrupt() {
    let err = read_exact_from::<LineList>(b"/__fragments/a\n/__fragments/b", (), "LineList")
        .expect_err("no final newline");
    assert!(err.to_string().contains("Line.text: no terminator"), "{err}");
}

#[test]
fn a_line_holding_a_newline_cannot_be_written() {
    let list = LineList { lines: vec![Line { text: b"a\nb".to_vec() }] };
    let err = write_to_vec(&list, (), "LineList").expect_err("newline inside");
    assert!(err.to_string().contains("contain the terminator"), "{err}");
    let _ = read_prefix::<Line>(b"x\n", (), "Line").expect("a line");
}
"#;

/// Reads each filter's options within exactly `options_len` bytes.
fn size_filter_options(spec: &Path) {
    let path = spec.join("filter_pipeline.toml");
    let mut file: toml::Table = std::fs::read_to_string(&path)
        .expect("filter_pipeline.toml")
        .parse()
        .expect("TOML");
    let filter = file
        .get_mut("struct")
        .and_then(|s| s.as_array_mut())
        .and_then(|s| {
            s.iter_mut()
                .find(|s| s.get("name").and_then(|n| n.as_str()) == Some("Filter"))
        })
        .expect("struct Filter");
    let options = filter
        .get_mut("field")
        .and_then(|f| f.as_array_mut())
        .and_then(|f| {
            f.iter_mut()
                .find(|f| f.get("name").and_then(|n| n.as_str()) == Some("options"))
        })
        .and_then(|f| f.as_table_mut())
        .expect("Filter.options");
    options.insert("size".into(), "options_len".into());
    // And the retired filter type 17 as a refused value instead of a case.
    let switch = options
        .get_mut("type")
        .and_then(|t| t.as_table_mut())
        .expect("the options switch");
    switch
        .get_mut("cases")
        .and_then(|c| c.as_table_mut())
        .expect("cases")
        .remove("DEPRECATED")
        .expect("a DEPRECATED case");
    let errors: toml::Table = r#"DEPRECATED = "filter type 17 is retired""#
        .parse()
        .expect("errors");
    switch.insert("errors".into(), toml::Value::Table(errors));
    std::fs::write(&path, toml::to_string(&file).expect("serialize")).expect("write");
}

fn first_with_extension(dir: &Path, extension: &str) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    files.sort();
    files.remove(0)
}

#[test]
fn vocabulary_extensions_work_on_real_files() {
    let corpus = workspace().join("conformance/corpus/tiledb-2.30");
    let vac = first_with_extension(
        &corpus.join("sparse.consolidate.fragments/array/__commits"),
        "vac",
    );
    let con = first_with_extension(
        &corpus.join("sparse.consolidate.commits/array/__commits"),
        "con",
    );
    let del = first_with_extension(
        &corpus.join("sparse.delete.condition/array/__commits"),
        "del",
    );
    let test = format!(
        "const VAC: &str = {};\nconst CON: &str = {};\nconst DEL: &str = {};\n{CRATE_TEST}\n{GZIP_PAYLOAD}",
        literal(&vac),
        literal(&con),
        literal(&del)
    );
    let schemas: Vec<String> = std::fs::read_dir(&corpus)
        .expect("corpus")
        .flatten()
        .filter(|case| {
            let name = case.file_name().to_string_lossy().into_owned();
            !name.starts_with("negative.") && !name.contains("encrypted")
        })
        .filter_map(|case| {
            std::fs::read_dir(case.path().join("array/__schema"))
                .ok()?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.is_file())
        })
        .map(|p| literal(&p))
        .collect();
    let test = format!(
        "const SCHEMAS: [&str; {}] = [{}];\n{test}",
        schemas.len(),
        schemas.join(", ")
    );
    let run = run_generated_crate(
        |spec| {
            std::fs::write(spec.join("commit_text.toml"), COMMIT_TEXT).expect("write spec");
            size_filter_options(spec);
        },
        &test,
    );
    let code = run
        .generated
        .get("runtime/src/format/generated/commit_text.rs")
        .expect("commit_text.rs");
    assert!(code.contains("read_terminated"), "{code}");
    let pipeline = run
        .generated
        .get("runtime/src/format/generated/filter_pipeline.rs")
        .expect("filter_pipeline.rs");
    assert!(pipeline.contains("read_sized"), "{pipeline}");
    assert!(pipeline.contains("Rejected("), "{pipeline}");
    assert!(run.stdout.contains("7 passed"), "{}", run.stdout);
}
