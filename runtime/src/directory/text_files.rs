//! The plain-text commit files: vacuum lists (`.vac`), ignore lists (`.ign`)
//! and consolidated commits (`.con`, text lines with embedded delete tiles).
//!
//! Parsers work on a file's bytes and report offsets within it; the caller
//! names the file with [`Error::in_file`]. Every path they return is a
//! checked [`RelPath`]: a line that is absolute, holds `..`, or otherwise
//! names something outside the array is an error, never a path.

use crate::directory::timestamped_name::{Extension, TimestampedName};
use crate::error::{Cause, Error, Result};
use crate::format::generated as stored;
use crate::format::generated::COMMITS_DIR;
use crate::format::io::{read_exact_from, write_to_vec};
use crate::storage::RelPath;

/// One line of a text file with the byte offset it starts at.
struct Line<'a> {
    offset: u64,
    text: &'a str,
}

fn line_text(bytes: &[u8], offset: usize) -> Result<&str> {
    std::str::from_utf8(bytes).map_err(|_| Error::corrupt(offset as u64, "line", Cause::NotUtf8))
}

/// The lines of a `.vac` or `.ign` file (`PathList` of spec/text_files.toml)
/// with their offsets; empty lines are skipped (TileDB writes none).
fn lines(list: &stored::PathList) -> Result<Vec<Line<'_>>> {
    let mut out = Vec::new();
    let mut start = 0usize;
    for line in &list.lines {
        if !line.path.is_empty() {
            out.push(Line {
                offset: start as u64,
                text: line_text(&line.path, start)?,
            });
        }
        start += line.path.len() + 1;
    }
    Ok(out)
}

fn at_line(err: Error, line: &Line<'_>) -> Error {
    err.at_base(line.offset)
}

/// Array-relative form of one vacuum-file line.
///
/// TileDB wrote absolute URIs before format v19 (`file:///…/A/__fragments/X`,
/// or `file:///…/A/X` for a root fragment) and array-relative ones after,
/// which start with `/` (`/__fragments/X`, `/__meta/X`); group metadata
/// `.vac` files hold absolute URIs in every version. All reduce to
/// `<dir>/<name>` when the parent component is one of `kept_dirs` (the
/// folder the vacuumed files live in), else to `<name>`. TileDB instead cuts
/// at the first *substring* `__fragments`, else `__meta`, for every kind of
/// `.vac`; that gives the same result for every name it writes, but matching
/// whole components of the expected folder cannot be fooled by an array
/// whose own path contains `__fragments` or `__meta`.
///
/// Refused: `.`/`..` components anywhere, and a last component that is not
/// a timestamped name (so `/etc/passwd` is an error, not a basename).
pub fn normalize_vacuum_line(line: &str, kept_dirs: &[&str]) -> Result<RelPath> {
    let trimmed = line.strip_suffix('/').unwrap_or(line);
    let components: Vec<&str> = trimmed.split('/').collect();
    if components.iter().any(|c| *c == ".." || *c == ".") {
        return Err(Error::corrupt(
            0,
            "vacuum line",
            Cause::BadName {
                name: line.to_owned(),
                expected: "a path without `.` or `..` components",
            },
        ));
    }
    let (name, parent) = match components.as_slice() {
        [.., parent, name] => (*name, Some(*parent)),
        [name] => (*name, None),
        [] => ("", None),
    };
    TimestampedName::parse(name).map_err(|_| {
        Error::corrupt(
            0,
            "vacuum line",
            Cause::BadName {
                name: line.to_owned(),
                expected: "a path to a timestamped file or folder",
            },
        )
    })?;
    let path = match parent {
        Some(dir) if kept_dirs.contains(&dir) => RelPath::root().join(dir)?.join(name)?,
        _ => RelPath::root().join(name)?,
    };
    Ok(path)
}

/// A `.vac` file: the array-relative paths it lists, in order.
pub fn parse_vacuum_file(data: &[u8], kept_dirs: &[&str]) -> Result<Vec<RelPath>> {
    let list: stored::PathList = read_exact_from(data, (), "PathList")?;
    lines(&list)?
        .iter()
        .map(|line| normalize_vacuum_line(line.text, kept_dirs).map_err(|e| at_line(e, line)))
        .collect()
}

/// A `.ign` file: array-relative commit paths, one per line.
pub fn parse_ignore_file(data: &[u8]) -> Result<Vec<RelPath>> {
    let list: stored::PathList = read_exact_from(data, (), "PathList")?;
    lines(&list)?
        .iter()
        .map(|line| RelPath::parse(line.text).map_err(|e| at_line(e, line).within("ignore line")))
        .collect()
}

/// Where a delete condition tile sits inside a `.con` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddedTile {
    /// Offset of the generic tile within the `.con` file.
    pub offset: u64,
    /// Its size in bytes.
    pub size: u64,
}

/// One entry of a `.con` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsolidatedCommit {
    /// The commit's array-relative path: `__commits/<name>.wrt|.del|.upd`
    /// or `<name>.ok`.
    pub path: RelPath,
    /// The commit's parsed name.
    pub name: TimestampedName,
    /// Offset of the line in the `.con` file.
    pub line_offset: u64,
    /// For `.del` entries, the delete tile that follows the line.
    pub embedded: Option<EmbeddedTile>,
}

const SIZE_FIELD: u64 = 8;

/// Checks that a `.con` line names a commit the way TileDB writes them.
fn classify_commit(path: &RelPath) -> Result<TimestampedName> {
    let components: Vec<&str> = path.components().collect();
    let (dir, file) = match components.as_slice() {
        [file] => (None, *file),
        [dir, file] => (Some(*dir), *file),
        _ => {
            return Err(Error::corrupt(
                0,
                "consolidated commit",
                Cause::BadName {
                    name: path.to_string(),
                    expected: "a commit file, alone or in one folder",
                },
            ))
        }
    };
    let name = TimestampedName::parse(file)?;
    let expected_dir = match name.extension() {
        Some(Extension::Ok) => None,
        Some(Extension::Wrt | Extension::Del | Extension::Upd) => Some(COMMITS_DIR),
        _ => {
            return Err(Error::corrupt(
                0,
                "consolidated commit",
                Cause::BadName {
                    name: path.to_string(),
                    expected: "a .ok, .wrt, .del or .upd commit",
                },
            ))
        }
    };
    if dir != expected_dir {
        return Err(Error::corrupt(
            0,
            "consolidated commit",
            Cause::BadName {
                name: path.to_string(),
                expected:
                    "a commit where its kind lives (.ok in the root, the others in __commits)",
            },
        ));
    }
    Ok(name)
}

/// A `.con` file (`ConsolidatedCommits` of spec/text_files.toml):
/// array-relative commit lines; each `.del` line is followed by `size u64`
/// and that many bytes of the delete commit's generic tile, which is
/// located here but not decoded.
pub fn parse_consolidated_commits(data: &[u8]) -> Result<Vec<ConsolidatedCommit>> {
    let file: stored::ConsolidatedCommits = read_exact_from(data, (), "ConsolidatedCommits")?;
    let mut entries = Vec::new();
    let mut pos = 0u64;
    for entry in &file.entries {
        let line_offset = pos;
        pos += entry.path.len() as u64 + 1;
        let embedded = entry.tile.as_ref().map(|tile| {
            let offset = pos + SIZE_FIELD;
            pos = offset + tile.len() as u64;
            EmbeddedTile {
                offset,
                size: tile.len() as u64,
            }
        });
        if entry.path.is_empty() {
            continue;
        }
        let located = |e: Error| e.at_base(line_offset).within("consolidated commit line");
        let text = line_text(&entry.path, line_offset as usize)?;
        let path = RelPath::parse(text).map_err(located)?;
        let name = classify_commit(&path).map_err(located)?;
        entries.push(ConsolidatedCommit {
            path,
            name,
            line_offset,
            embedded,
        });
    }
    Ok(entries)
}

/// Writes paths one per line (the `.vac` and `.ign` formats).
pub fn encode_lines<'a>(paths: impl IntoIterator<Item = &'a str>) -> Result<Vec<u8>> {
    let list = stored::PathList {
        lines: paths
            .into_iter()
            .map(|path| stored::PathLine {
                path: path.as_bytes().to_vec(),
            })
            .collect(),
    };
    write_to_vec(&list, (), "PathList")
}

/// Writes a `.con` file: each commit path, and for deletes the size and the
/// bytes of their tile.
pub fn encode_consolidated_commits<'a>(
    commits: impl IntoIterator<Item = (&'a RelPath, Option<&'a [u8]>)>,
) -> Result<Vec<u8>> {
    let file = stored::ConsolidatedCommits {
        entries: commits
            .into_iter()
            .map(|(path, tile)| stored::ConsolidatedCommit {
                path: path.as_str().as_bytes().to_vec(),
                tile: tile.map(<[u8]>::to_vec),
            })
            .collect(),
    };
    write_to_vec(&file, (), "ConsolidatedCommits")
}

#[cfg(test)]
mod tests {
    use super::*;

    const LABEL: &str = "0123456789abcdef0123456789abcdef";

    fn frag(t: u64, v: u32) -> String {
        format!("__{t}_{t}_{LABEL}_{v}")
    }

    #[test]
    fn vacuum_lines_of_all_three_forms() {
        let kept = ["__fragments", "__meta"];
        let f = frag(3, 22);
        let absolute = format!("file:///home/me/arrays/a/__fragments/{f}");
        let relative = format!("/__fragments/{f}");
        let root = format!("file:///home/me/arrays/a/{}", frag(3, 10));
        let meta = format!("/__meta/__3_3_{LABEL}");
        assert_eq!(
            normalize_vacuum_line(&absolute, &kept).unwrap().as_str(),
            format!("__fragments/{f}")
        );
        assert_eq!(
            normalize_vacuum_line(&relative, &kept).unwrap().as_str(),
            format!("__fragments/{f}")
        );
        assert_eq!(
            normalize_vacuum_line(&root, &kept).unwrap().as_str(),
            frag(3, 10)
        );
        assert_eq!(
            normalize_vacuum_line(&meta, &kept).unwrap().as_str(),
            format!("__meta/__3_3_{LABEL}")
        );
        // An array folder whose own path contains "__fragments".
        let tricky = format!("/data/__fragments_old/a/{}", frag(4, 10));
        assert_eq!(
            normalize_vacuum_line(&tricky, &kept).unwrap().as_str(),
            frag(4, 10)
        );
    }

    #[test]
    fn vacuum_lines_that_escape_are_refused() {
        let kept = ["__fragments", "__meta"];
        for line in [
            "../../etc/passwd".to_owned(),
            "/etc/passwd".to_owned(),
            format!("/__fragments/../../{}", frag(1, 22)),
            format!("../{}", frag(1, 22)),
            "/__fragments/".to_owned(),
            "".to_owned(),
        ] {
            let err = normalize_vacuum_line(&line, &kept).expect_err(&line);
            assert_eq!(err.class(), crate::ErrorClass::Corrupt, "{line}");
        }
    }

    #[test]
    fn vacuum_file_errors_carry_the_line_offset() {
        let data = format!("/__fragments/{}\n/etc/passwd\n", frag(1, 22));
        let err = parse_vacuum_file(data.as_bytes(), &["__fragments"]).unwrap_err();
        match err {
            Error::Corrupt { at, .. } => assert_eq!(at.offset, data.find("/etc").unwrap() as u64),
            other => panic!("{other}"),
        }
    }

    #[test]
    fn consolidated_commits_with_an_embedded_delete() {
        let wrt = RelPath::parse(&format!("__commits/{}.wrt", frag(1, 22))).unwrap();
        let del = RelPath::parse(&format!("__commits/{}.del", frag(2, 22))).unwrap();
        let ok = RelPath::parse(&format!("{}.ok", frag(3, 11))).unwrap();
        // The tile holds newlines, which must not be read as lines.
        let tile: &[u8] = b"\n\nxyz\n";
        let data =
            encode_consolidated_commits([(&wrt, None), (&del, Some(tile)), (&ok, None)]).unwrap();
        let entries = parse_consolidated_commits(&data).unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].path, wrt);
        assert_eq!(entries[1].path, del);
        let embedded = entries[1].embedded.unwrap();
        let start = embedded.offset as usize;
        assert_eq!(&data[start..start + embedded.size as usize], tile);
        assert_eq!(entries[2].path, ok);
        assert_eq!(
            entries[2].line_offset,
            (data.len() - ok.as_str().len() - 1) as u64
        );
    }

    #[test]
    fn consolidated_commits_refuse_bad_lines_and_sizes() {
        let del = format!("__commits/{}.del\n", frag(2, 22));
        let cases: Vec<Vec<u8>> = vec![
            b"../../etc/passwd\n".to_vec(),
            b"/etc/passwd\n".to_vec(),
            format!("/{}.ok\n", frag(1, 11)).into_bytes(),
            format!("__fragments/{}.wrt\n", frag(1, 22)).into_bytes(),
            format!("{}.wrt\n", frag(1, 22)).into_bytes(),
            format!("__commits/{}.vac\n", frag(1, 22)).into_bytes(),
            b"__commits/x.wrt\n".to_vec(),
            // Truncated size field.
            [del.as_bytes(), &[1, 0, 0]].concat(),
            // Size beyond the end.
            [del.as_bytes(), &100u64.to_le_bytes(), b"abc"].concat(),
            [del.as_bytes(), &u64::MAX.to_le_bytes()].concat(),
            vec![0xff, b'\n'],
        ];
        for data in cases {
            let err = parse_consolidated_commits(&data).expect_err(&String::from_utf8_lossy(&data));
            assert_eq!(err.class(), crate::ErrorClass::Corrupt);
        }
    }

    #[test]
    fn a_last_line_without_its_newline_counts() {
        let two = format!(
            "__commits/{}.wrt\n__commits/{}.wrt",
            frag(1, 22),
            frag(2, 22)
        );
        assert_eq!(parse_ignore_file(two.as_bytes()).unwrap().len(), 2);
        let written = encode_lines(two.lines()).unwrap();
        assert_eq!(written, format!("{two}\n").into_bytes());
    }

    #[test]
    fn ignore_lines_are_checked_paths() {
        let good = format!("__commits/{}.wrt\n", frag(1, 22));
        assert_eq!(parse_ignore_file(good.as_bytes()).unwrap().len(), 1);
        assert!(parse_ignore_file(b"/abs/path\n").is_err());
        assert!(parse_ignore_file(b"__commits/../../x\n").is_err());
    }
}
