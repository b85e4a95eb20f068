//! `tdb explain`'s payload fields carry the file bytes they come from: for a
//! chunk stored unfiltered, the field's exact bytes in the file (the file
//! bytes there equal the field's bytes); for a filtered (compressed,
//! encrypted, …) chunk, the range of the chunk's filtered data in the file.
//! Checked over every file of the TileDB 2.30 corpus and the legacy arrays.

use std::path::{Path, PathBuf};

use tiledb_runtime::explain::{explain_file, FileKind, Span};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(64)];
    let mut out: String = shown.iter().map(|b| format!("{b:02x}")).collect();
    if bytes.len() > shown.len() {
        out.push('…');
    }
    out
}

/// The `(offset, end)` of every span named `name` under `span`.
fn ranges(span: &Span, name: &str, out: &mut Vec<(u64, u64)>) {
    if span.name == name {
        out.push((span.offset, span.offset + span.size));
    }
    for child in &span.children {
        ranges(child, name, out);
    }
}

#[derive(Default)]
struct Seen {
    exact: usize,
    filtered: usize,
}

/// Checks every payload span under `tile` (a generic tile's span) against
/// the file bytes and the tile's chunks.
fn check_tile(tile: &Span, bytes: &[u8], path: &Path, seen: &mut Seen) {
    let mut chunks = Vec::new();
    ranges(tile, "TileChunk.data", &mut chunks);
    ranges(tile, "Legacy13Chunk.data", &mut chunks);
    let Some(payload) = tile.children.iter().find(|c| c.space == "payload") else {
        return;
    };
    check_payload_span(payload, bytes, &chunks, path, seen);
}

fn check_payload_span(
    span: &Span,
    bytes: &[u8],
    chunks: &[(u64, u64)],
    path: &Path,
    seen: &mut Seen,
) {
    if span.present && span.size > 0 {
        let origin = span
            .file
            .unwrap_or_else(|| panic!("{}: {} has no file origin", path.display(), span.name));
        if origin.exact {
            assert_eq!(
                origin.end - origin.start,
                span.size,
                "{}: {}",
                path.display(),
                span.name
            );
            if !span.hex.is_empty() {
                let in_file = &bytes[origin.start as usize..origin.end as usize];
                assert_eq!(hex(in_file), span.hex, "{}: {}", path.display(), span.name);
                seen.exact += 1;
            }
        } else {
            // The range starts at a chunk's data and ends at a chunk's data's end.
            assert!(
                chunks.iter().any(|c| c.0 == origin.start)
                    && chunks.iter().any(|c| c.1 == origin.end),
                "{}: {} comes from {}..{}, not a run of chunks {chunks:?}",
                path.display(),
                span.name,
                origin.start,
                origin.end
            );
            seen.filtered += 1;
        }
    }
    for child in &span.children {
        check_payload_span(child, bytes, chunks, path, seen);
    }
}

/// Every span that is a generic tile (it has a payload child).
fn tiles<'a>(span: &'a Span, out: &mut Vec<&'a Span>) {
    if span.children.iter().any(|c| c.space == "payload") {
        out.push(span);
    }
    for child in &span.children {
        if child.space == "file" {
            tiles(child, out);
        }
    }
}

#[test]
fn payload_fields_carry_their_file_bytes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    files(&root.join("../conformance/corpus/tiledb-2.30"), &mut all);
    let legacy = root.join("../../shared/tiledb-test-arrays");
    if legacy.is_dir() {
        files(&legacy, &mut all);
    } else {
        println!("legacy arrays skipped: {} is absent", legacy.display());
    }
    let mut seen = Seen::default();
    let mut explained = 0;
    for path in all {
        if FileKind::of(&path).is_none() || path.to_string_lossy().contains("encrypted") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let Ok(result) = explain_file(&path, &bytes, None) else {
            continue;
        };
        explained += 1;
        let mut found = Vec::new();
        tiles(&result.root, &mut found);
        for tile in found {
            check_tile(tile, &bytes, &path, &mut seen);
        }
    }
    println!(
        "{explained} files: {} payload fields at their exact file bytes, {} from filtered chunks",
        seen.exact, seen.filtered
    );
    assert!(explained > 100);
    assert!(
        seen.exact > 50,
        "unfiltered generic tiles are common in the corpus"
    );
    assert!(seen.filtered > 1000, "so are compressed ones (schemas)");
}
