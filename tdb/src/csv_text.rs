//! The CSV of `tdb read --format csv` and `tdb write`: RFC 4180 (comma,
//! `"` quoting with `""` for a quote, `\n` between records, CRLF read too),
//! with one rule the common readers leave out, so that a nullable string
//! field round-trips exactly: **a null cell is an empty unquoted field, an
//! empty string is `""`**. Other fields are quoted only when they hold a
//! comma, a quote or a line break. A reader that ignores quoting (as most
//! do) still reads both as empty.

use std::io::{BufRead, Write};

/// One field: its text and whether it was quoted.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub text: String,
    pub quoted: bool,
}

/// Writes one record: `None` is null (an empty unquoted field).
pub fn write_record<'a>(
    out: &mut impl Write,
    fields: impl IntoIterator<Item = Option<&'a str>>,
) -> std::io::Result<()> {
    let mut line = String::new();
    for (i, field) in fields.into_iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        match field {
            None => {}
            Some(text) if text.is_empty() || text.contains([',', '"', '\n', '\r']) => {
                line.push('"');
                line.push_str(&text.replace('"', "\"\""));
                line.push('"');
            }
            Some(text) => line.push_str(text),
        }
    }
    line.push('\n');
    out.write_all(line.as_bytes())
}

/// Reads CSV records one at a time, keeping whether each field was quoted.
pub struct Reader<R> {
    input: R,
    /// The line (1-based) the next record starts on.
    line: usize,
}

impl<R: BufRead> Reader<R> {
    pub fn new(input: R) -> Reader<R> {
        Reader { input, line: 1 }
    }

    /// The line the last record read started on.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The next record (`None` at the end), or what is wrong with it.
    pub fn next_record(&mut self) -> Result<Option<Vec<Field>>, String> {
        let start = self.line;
        let mut raw = Vec::new();
        let at = |e: &dyn std::fmt::Display| format!("line {start}: {e}");
        if self.input.read_until(b'\n', &mut raw).map_err(|e| at(&e))? == 0 {
            return Ok(None);
        }
        self.line += 1;
        // Inside a quoted field while the quotes so far are odd: the record
        // goes on over the line break.
        while raw.iter().filter(|&&b| b == b'"').count() % 2 == 1 {
            if self.input.read_until(b'\n', &mut raw).map_err(|e| at(&e))? == 0 {
                return Err(at(&"a quoted field never ends"));
            }
            self.line += 1;
        }
        if raw.last() == Some(&b'\n') {
            raw.pop();
            if raw.last() == Some(&b'\r') {
                raw.pop();
            }
        }
        let text = String::from_utf8(raw).map_err(|e| at(&e))?;
        parse_record(&text).map(Some).map_err(|e| at(&e))
    }
}

/// The fields of one record's text (line breaks inside quotes included).
fn parse_record(text: &str) -> Result<Vec<Field>, String> {
    let mut fields = Vec::new();
    let mut rest = text;
    loop {
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let end = loop {
                match chars.next() {
                    Some((i, '"')) => {
                        if quoted[i + 1..].starts_with('"') {
                            value.push('"');
                            chars.next();
                        } else {
                            break i + 1;
                        }
                    }
                    Some((_, c)) => value.push(c),
                    None => return Err("a quoted field never ends".into()),
                }
            };
            fields.push(Field {
                text: value,
                quoted: true,
            });
            rest = &quoted[end..];
            match rest.strip_prefix(',') {
                Some(next) => rest = next,
                None if rest.is_empty() => return Ok(fields),
                None => return Err(format!("text after a quoted field: {rest:?}")),
            }
        } else {
            let (field, next) = match rest.find(',') {
                Some(i) => (&rest[..i], Some(&rest[i + 1..])),
                None => (rest, None),
            };
            if field.contains('"') {
                return Err(format!("a quote inside an unquoted field: {field:?}"));
            }
            fields.push(Field {
                text: field.to_string(),
                quoted: false,
            });
            match next {
                Some(next) => rest = next,
                None => return Ok(fields),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_and_empty_string_and_quotes_round_trip() {
        let cells = [
            None,
            Some(""),
            Some("a,b"),
            Some("say \"hi\""),
            Some("x\ny"),
            Some("plain"),
        ];
        let mut out = Vec::new();
        write_record(&mut out, cells.iter().copied()).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out),
            ",\"\",\"a,b\",\"say \"\"hi\"\"\",\"x\ny\",plain\n"
        );
        let mut reader = Reader::new(&out[..]);
        let back = reader.next_record().unwrap().unwrap();
        let got: Vec<Option<&str>> = back
            .iter()
            .map(|f| (f.quoted || !f.text.is_empty()).then_some(f.text.as_str()))
            .collect();
        assert_eq!(got, cells);
        assert_eq!(reader.next_record().unwrap(), None);
    }

    #[test]
    fn malformed_records_are_refused() {
        for bad in ["\"open,1\n", "\"a\"b,1\n", "a\"b,1\n"] {
            assert!(
                Reader::new(bad.as_bytes()).next_record().is_err(),
                "{bad:?}"
            );
        }
        let crlf = Reader::new("a,b\r\n".as_bytes())
            .next_record()
            .unwrap()
            .unwrap();
        assert_eq!(crlf[1].text, "b");
    }
}
