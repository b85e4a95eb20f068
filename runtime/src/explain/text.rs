//! The text files of spec/text_files.toml (`.vac`, `.ign`, `.con`): spec/
//! describes them in prose, not as structs (its vocabulary has no
//! newline-terminated lists), so their lines are walked here, each a span;
//! a `.con` line naming a `.del` commit is followed by the commit's size
//! and its whole generic tile, explained by the generated walkers.

use super::files::explain_generic_tile;
use super::walker::{FieldInfo, Span, Walker};
use super::walkers::walk_delete_commit;
use crate::error::{Error, Result};

const SPEC: &str = "spec/text_files.toml";

const LINE: FieldInfo = FieldInfo {
    name: "line",
    spec_type: "text line (a path, then a newline)",
    spec_file: SPEC,
    source: "format_spec/consolidated_commits_file.md",
    erratum: None,
    gate: None,
};

const DEL_SIZE: FieldInfo = FieldInfo {
    name: "size",
    spec_type: "u64",
    spec_file: SPEC,
    source: "tiledb/sm/consolidator/consolidator.cc",
    erratum: None,
    gate: Some("the line ends in .del"),
};

/// The lines of a text file; with `embedded_deletes` (a `.con` file), each
/// `.del` line's size and delete commit tile too.
pub fn explain_lines(
    bytes: &[u8],
    key: Option<&[u8; 32]>,
    embedded_deletes: bool,
) -> Result<Vec<Span>> {
    let mut spans = Vec::new();
    let mut pos = 0u64;
    while pos < bytes.len() as u64 {
        let mut w = Walker::new(bytes, "line", "file");
        w.seek(pos);
        w.enter(&LINE, None);
        let line = w.terminated(b'\n', u64::MAX)?;
        w.leave();
        let mut size = None;
        if embedded_deletes && line.ends_with(b".del") {
            w.enter(&DEL_SIZE, Some(true));
            size = Some(w.prim::<u64>()?);
            w.leave();
        }
        pos = w.pos();
        spans.extend(w.finish().children);
        if let Some(size) = size {
            let end = pos
                .checked_add(size)
                .filter(|e| *e <= bytes.len() as u64)
                .ok_or_else(|| {
                    Error::corrupt(
                        pos,
                        "size",
                        "the delete commit runs past the end of the file",
                    )
                })?;
            let mut tile = explain_generic_tile(&bytes[..end as usize], pos, key, |p| {
                p.enter_group("DeleteCommit", "DeleteCommit");
                walk_delete_commit(p)?;
                p.leave();
                Ok(())
            })?;
            if tile.offset + tile.size != end {
                return Err(Error::corrupt(
                    pos,
                    "size",
                    "the delete commit does not fill its size",
                ));
            }
            tile.name = "DeleteCommit: generic tile".into();
            spans.push(tile);
            pos = end;
        }
    }
    Ok(spans)
}
