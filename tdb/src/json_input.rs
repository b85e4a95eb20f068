//! The JSON input of `tdb write`, read in chunks. The document `tdb read
//! --format json` prints holds one list of cells per field (`{"dimensions":
//! {"d": [...]}, "attributes": {"a": [...]}}`), so the cells of one row lie
//! far apart in the file. A first pass finds where each field's list
//! starts, skipping the lists without holding them; then one reader per
//! field, each at its own list, takes the next [`JSON_CHUNK_CELLS`] cells of
//! every field in step. Memory holds one chunk of each field (and one cell's
//! text at a time), never the document.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;

use serde_json::{Map, Value};

/// Cells of each field per chunk.
pub const JSON_CHUNK_CELLS: usize = 8192;

/// A byte-level reader of JSON text that knows its offset in the file, for
/// the errors it gives (`FILE: byte N: what`).
struct Scanner {
    reader: BufReader<File>,
    pos: u64,
    path: String,
}

impl Scanner {
    fn open(path: &Path, offset: u64) -> Result<Scanner, String> {
        let at = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut file = File::open(path).map_err(at)?;
        file.seek(SeekFrom::Start(offset)).map_err(at)?;
        Ok(Scanner {
            reader: BufReader::with_capacity(1 << 16, file),
            pos: offset,
            path: path.display().to_string(),
        })
    }

    fn error(&self, what: &str) -> String {
        format!("{}: byte {}: {what}", self.path, self.pos)
    }

    fn peek(&mut self) -> Result<Option<u8>, String> {
        let pos = self.pos;
        let path = &self.path;
        let buf = (self.reader.fill_buf()).map_err(|e| format!("{path}: byte {pos}: {e}"))?;
        Ok(buf.first().copied())
    }

    fn bump(&mut self) {
        self.reader.consume(1);
        self.pos += 1;
    }

    /// The next byte that is not white space, not consumed.
    fn skip_ws(&mut self) -> Result<Option<u8>, String> {
        while let Some(b) = self.peek()? {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Ok(Some(b));
            }
            self.bump();
        }
        Ok(None)
    }

    fn expect(&mut self, want: u8, what: &str) -> Result<(), String> {
        if self.skip_ws()? != Some(want) {
            return Err(self.error(&format!("expected {what}")));
        }
        self.bump();
        Ok(())
    }

    /// Scans one JSON value, copying its text into `out` when given (a
    /// skipped list is never held).
    fn value(&mut self, mut out: Option<&mut Vec<u8>>) -> Result<(), String> {
        let Some(first) = self.skip_ws()? else {
            return Err(self.error("expected a value, found the end of the file"));
        };
        if matches!(first, b',' | b']' | b'}' | b':') {
            return Err(self.error(&format!("expected a value, found `{}`", first as char)));
        }
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        let scalar = !matches!(first, b'{' | b'[' | b'"');
        loop {
            let Some(b) = self.peek()? else {
                if scalar && depth == 0 {
                    return Ok(());
                }
                return Err(self.error("the file ends inside a value"));
            };
            if scalar && matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                return Ok(());
            }
            self.bump();
            if let Some(out) = out.as_deref_mut() {
                out.push(b);
            }
            if scalar {
                continue;
            }
            if in_string {
                match (escaped, b) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_string = false,
                    _ => {}
                }
                if !in_string && depth == 0 {
                    return Ok(());
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| self.error("unbalanced brackets"))?;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                _ => {}
            }
        }
    }

    /// A string (an object's key).
    fn string(&mut self) -> Result<String, String> {
        if self.skip_ws()? != Some(b'"') {
            return Err(self.error("expected a string"));
        }
        let start = self.pos;
        let mut text = Vec::new();
        self.value(Some(&mut text))?;
        serde_json::from_slice(&text).map_err(|e| format!("{}: byte {start}: {e}", self.path))
    }

    /// After a member of an object or list: true at a `,`, false at `close`.
    fn more(&mut self, close: u8) -> Result<bool, String> {
        match self.skip_ws()? {
            Some(b',') => {
                self.bump();
                Ok(true)
            }
            Some(b) if b == close => {
                self.bump();
                Ok(false)
            }
            _ => Err(self.error(&format!("expected `,` or `{}`", close as char))),
        }
    }
}

/// Where one field's list of cells starts.
struct FieldList {
    /// `dimensions` or `attributes`.
    group: &'static str,
    name: String,
    /// The offset of its `[`.
    offset: u64,
}

/// The first pass: every field's list, in the document's order. Keys other
/// than `dimensions` and `attributes` are skipped, as the whole-document
/// reader ignored them.
fn locate(path: &Path) -> Result<Vec<FieldList>, String> {
    let mut s = Scanner::open(path, 0)?;
    let mut fields: Vec<FieldList> = Vec::new();
    s.expect(b'{', "the document's `{`")?;
    let mut more = s.skip_ws()? != Some(b'}');
    if !more {
        s.bump();
    }
    while more {
        let key = s.string()?;
        s.expect(b':', "`:`")?;
        let group = match key.as_str() {
            "dimensions" => "dimensions",
            "attributes" => "attributes",
            _ => {
                s.value(None)?;
                more = s.more(b'}')?;
                continue;
            }
        };
        s.expect(b'{', &format!("an object of lists under {key:?}"))?;
        let mut members = s.skip_ws()? != Some(b'}');
        if !members {
            s.bump();
        }
        while members {
            let name = s.string()?;
            s.expect(b':', "`:`")?;
            if s.skip_ws()? != Some(b'[') {
                return Err(s.error(&format!("{name}: a list of cells")));
            }
            if fields.iter().any(|f| f.name == name) {
                return Err(s.error(&format!("{name}: listed twice")));
            }
            fields.push(FieldList {
                group,
                name,
                offset: s.pos,
            });
            s.value(None)?;
            members = s.more(b'}')?;
        }
        more = s.more(b'}')?;
    }
    if s.skip_ws()?.is_some() {
        return Err(s.error("text after the document"));
    }
    Ok(fields)
}

/// One field's cells, read from its list one at a time.
struct FieldCells {
    field: FieldList,
    scanner: Scanner,
    started: bool,
    done: bool,
    text: Vec<u8>,
}

impl FieldCells {
    fn open(path: &Path, field: FieldList) -> Result<FieldCells, String> {
        let mut scanner = Scanner::open(path, field.offset)?;
        scanner.expect(b'[', "`[`")?;
        Ok(FieldCells {
            field,
            scanner,
            started: false,
            done: false,
            text: Vec::new(),
        })
    }

    fn next_cell(&mut self) -> Result<Option<Value>, String> {
        if self.done {
            return Ok(None);
        }
        let s = &mut self.scanner;
        let at_end = if self.started {
            !s.more(b']')?
        } else if s.skip_ws()? == Some(b']') {
            s.bump();
            true
        } else {
            false
        };
        if at_end {
            self.done = true;
            return Ok(None);
        }
        self.started = true;
        let start = s.pos;
        self.text.clear();
        s.value(Some(&mut self.text))?;
        serde_json::from_slice(&self.text).map(Some).map_err(|e| {
            format!(
                "{}: byte {start}: {}: {e}",
                self.scanner.path, self.field.name
            )
        })
    }
}

/// The chunks of a JSON input: each a document of the shape `tdb read
/// --format json` prints, with the next cells of every field, and the
/// index of its first cell in the input.
pub struct JsonChunks {
    fields: Vec<FieldCells>,
    first: usize,
    done: bool,
}

impl JsonChunks {
    /// Finds the fields' lists (the first pass) and opens a reader at each.
    pub fn open(path: &Path) -> Result<JsonChunks, String> {
        let fields = locate(path)?
            .into_iter()
            .map(|f| FieldCells::open(path, f))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(JsonChunks {
            fields,
            first: 0,
            done: false,
        })
    }

    fn next_document(&mut self) -> Result<Option<(Value, usize)>, String> {
        let (mut dims, mut attrs) = (Map::new(), Map::new());
        let mut counts = Vec::with_capacity(self.fields.len());
        for f in &mut self.fields {
            let mut cells = Vec::with_capacity(JSON_CHUNK_CELLS);
            while cells.len() < JSON_CHUNK_CELLS {
                match f.next_cell()? {
                    Some(cell) => cells.push(cell),
                    None => break,
                }
            }
            counts.push(cells.len());
            let group = if f.field.group == "dimensions" {
                &mut dims
            } else {
                &mut attrs
            };
            group.insert(f.field.name.clone(), Value::Array(cells));
        }
        let Some(&most) = counts.iter().max() else {
            return Ok(None);
        };
        if most == 0 {
            return Ok(None);
        }
        if let Some(short) = counts.iter().position(|&n| n < most) {
            let longest = counts.iter().position(|&n| n == most).unwrap_or(0);
            return Err(format!(
                "{} has {} cells, {} more",
                self.fields[short].field.name,
                self.first + counts[short],
                self.fields[longest].field.name,
            ));
        }
        let first = self.first;
        self.first += most;
        Ok(Some((
            serde_json::json!({"dimensions": dims, "attributes": attrs}),
            first,
        )))
    }
}

impl Iterator for JsonChunks {
    /// A chunk's document and the index of its first cell.
    type Item = Result<(Value, usize), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.next_document().transpose();
        if !matches!(next, Some(Ok(_))) {
            self.done = true;
        }
        next
    }
}
