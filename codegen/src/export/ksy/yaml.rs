//! The YAML writer: block maps and lists, scalars quoted as JSON strings.

/// The YAML we write: block maps and lists, scalars quoted as JSON strings.
#[derive(Debug, Clone)]
pub(super) enum Y {
    Str(String),
    Raw(String),
    List(Vec<Y>),
    Map(Vec<(String, Y)>),
}

pub(super) fn s(text: impl Into<String>) -> Y {
    Y::Str(text.into())
}

pub(super) fn raw(text: impl ToString) -> Y {
    Y::Raw(text.to_string())
}

pub(super) fn write_yaml(out: &mut String, y: &Y, indent: usize) {
    match y {
        Y::Map(entries) => {
            for (key, value) in entries {
                out.push_str(&" ".repeat(indent));
                write_entry(out, key, value, indent);
            }
        }
        Y::List(items) => {
            for item in items {
                out.push_str(&" ".repeat(indent));
                out.push_str("- ");
                match item {
                    Y::Map(entries) if !entries.is_empty() => {
                        let (key, value) = &entries[0];
                        write_entry(out, key, value, indent + 2);
                        write_yaml(out, &Y::Map(entries[1..].to_vec()), indent + 2);
                    }
                    _ => {
                        out.push_str(&scalar(item));
                        out.push('\n');
                    }
                }
            }
        }
        _ => {
            out.push_str(&scalar(y));
            out.push('\n');
        }
    }
}

pub(super) fn write_entry(out: &mut String, key: &str, value: &Y, indent: usize) {
    out.push_str(&scalar(&s(key)));
    out.push(':');
    match value {
        Y::Map(entries) if entries.is_empty() => out.push_str(" {}\n"),
        Y::List(items) if items.is_empty() => out.push_str(" []\n"),
        Y::Map(_) | Y::List(_) => {
            out.push('\n');
            write_yaml(out, value, indent + 2);
        }
        _ => {
            out.push(' ');
            out.push_str(&scalar(value));
            out.push('\n');
        }
    }
}

pub(super) fn scalar(y: &Y) -> String {
    match y {
        Y::Str(text) => {
            let plain = !text.is_empty()
                && text
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                && !text.starts_with('-')
                && !matches!(text.as_str(), "true" | "false" | "null" | "yes" | "no");
            if plain && !text.starts_with(|c: char| c.is_ascii_digit()) {
                text.clone()
            } else {
                serde_json::to_string(text).expect("a string serializes")
            }
        }
        Y::Raw(text) => text.clone(),
        Y::List(_) | Y::Map(_) => unreachable!("not a scalar"),
    }
}
