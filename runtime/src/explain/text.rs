//! The text files of spec/text_files.toml (`.vac`, `.ign`: `PathList`;
//! `.con`: `ConsolidatedCommits`), walked by the walkers generated from
//! those structures. A `.con` entry naming a `.del` commit embeds that
//! commit's whole generic tile: its span is then explained through the
//! generic-tile envelope and the generated `DeleteCommit` walker.

use super::tiles::explain_generic_tile;
use super::walker::{Span, Walker};
use super::walkers::{walk_consolidated_commits, walk_delete_commit, walk_path_list};
use crate::error::{Cause, Error, Result};

/// The span name the generated walker gives an entry's embedded tile.
const EMBEDDED_TILE: &str = "ConsolidatedCommit.tile";

/// The lines of a text file; with `embedded_deletes` (a `.con` file), each
/// `.del` entry's size and delete commit tile too.
pub fn explain_lines(
    bytes: &[u8],
    key: Option<&[u8; 32]>,
    embedded_deletes: bool,
) -> Result<Vec<Span>> {
    let mut w = Walker::new(bytes, "text file", "file");
    if embedded_deletes {
        walk_consolidated_commits(&mut w)?;
    } else {
        walk_path_list(&mut w)?;
    }
    let mut spans = w.finish().children;
    for span in &mut spans {
        explain_embedded_tiles(span, bytes, key)?;
    }
    Ok(spans)
}

/// Replaces the opaque bytes of each embedded delete commit with the
/// explanation of its generic tile.
fn explain_embedded_tiles(span: &mut Span, bytes: &[u8], key: Option<&[u8; 32]>) -> Result<()> {
    if span.name.ends_with(EMBEDDED_TILE) && span.present && span.size > 0 {
        let end = span.offset + span.size;
        let window = bytes.get(..end as usize).ok_or_else(|| {
            Error::corrupt(
                span.offset,
                EMBEDDED_TILE,
                Cause::Truncated {
                    needed: span.size,
                    available: (bytes.len() as u64).saturating_sub(span.offset),
                },
            )
        })?;
        let mut tile = explain_generic_tile(window, span.offset, key, |p| {
            p.enter_group("DeleteCommit", "DeleteCommit");
            walk_delete_commit(p)?;
            p.leave();
            Ok(())
        })?;
        if tile.offset + tile.size != end {
            return Err(Error::corrupt(
                span.offset,
                EMBEDDED_TILE,
                Cause::Inconsistent {
                    what: "ConsolidatedCommit.tile_size",
                    expected: tile.size,
                    found: span.size,
                },
            ));
        }
        tile.name = format!("{}: DeleteCommit generic tile", span.name);
        *span = tile;
        return Ok(());
    }
    for child in &mut span.children {
        explain_embedded_tiles(child, bytes, key)?;
    }
    Ok(())
}
