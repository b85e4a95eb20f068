//! Stage 2: turns the raw TOML into the typed model, rejecting every
//! inconsistency with an error that names the file and the key.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::error::{SpecError, SpecErrorKind};
use crate::expr::{self, Binding, BindingKind, ExprError, Scope, Side, TypeTable};
use crate::model::*;
use crate::raw::*;

struct Ctx<'a> {
    file: &'a str,
}

impl Ctx<'_> {
    fn err(&self, path: impl Into<String>, kind: SpecErrorKind) -> SpecError {
        SpecError {
            file: self.file.to_string(),
            path: path.into(),
            kind,
        }
    }
}

/// Reads and validates every `*.toml` in `spec_dir`.
pub fn load(spec_dir: &Path) -> Result<(Spec, TypeTable), SpecError> {
    let mut names: Vec<String> = std::fs::read_dir(spec_dir)
        .map_err(|e| SpecError {
            file: spec_dir.display().to_string(),
            path: String::new(),
            kind: SpecErrorKind::Io(e.to_string()),
        })?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".toml"))
        .collect();
    names.sort();

    let read = |name: &str| -> Result<String, SpecError> {
        std::fs::read_to_string(spec_dir.join(name)).map_err(|e| SpecError {
            file: format!("spec/{name}"),
            path: String::new(),
            kind: SpecErrorKind::Io(e.to_string()),
        })
    };

    let format_display = "spec/format.toml".to_string();
    if !names.iter().any(|n| n == "format.toml") {
        return Err(SpecError {
            file: format_display,
            path: String::new(),
            kind: SpecErrorKind::Io("format.toml is missing".into()),
        });
    }
    let raw_format: RawFormat = toml::from_str(&read("format.toml")?).map_err(|e| SpecError {
        file: format_display.clone(),
        path: String::new(),
        kind: SpecErrorKind::Syntax(syntax_message(&e)),
    })?;
    let format_ctx = Ctx {
        file: &format_display,
    };
    if raw_format.oldest > raw_format.current {
        return Err(format_ctx.err(
            "",
            SpecErrorKind::Invalid(format!(
                "oldest = {} is above current = {}",
                raw_format.oldest, raw_format.current
            )),
        ));
    }
    let mut seen_versions = BTreeSet::new();
    for version in &raw_format.versions {
        if !seen_versions.insert(version.number) {
            return Err(format_ctx.err(
                format!("version {}", version.number),
                SpecErrorKind::DuplicateName {
                    what: "version".into(),
                    name: version.number.to_string(),
                },
            ));
        }
    }

    let mut raw_files = Vec::new();
    for name in names.iter().filter(|n| *n != "format.toml") {
        let display = format!("spec/{name}");
        let raw: RawFile = toml::from_str(&read(name)?).map_err(|e| SpecError {
            file: display.clone(),
            path: String::new(),
            kind: SpecErrorKind::Syntax(syntax_message(&e)),
        })?;
        raw_files.push((display, name.trim_end_matches(".toml").to_string(), raw));
    }

    let gates = GateRange {
        oldest: raw_format.oldest,
        newest: raw_format.current + 1,
    };

    // Every type name, once across all files; modules likewise.
    let mut declared: BTreeMap<String, (String, Kind)> = BTreeMap::new();
    let mut modules: BTreeMap<String, String> = BTreeMap::new();
    modules.insert(raw_format.file.module.clone(), format_display.clone());
    for (display, _, raw) in &raw_files {
        let ctx = Ctx { file: display };
        if let Some(previous) = modules.insert(raw.file.module.clone(), display.clone()) {
            return Err(ctx.err(
                "file",
                SpecErrorKind::Invalid(format!(
                    "module \"{}\" is already generated from {previous}",
                    raw.file.module
                )),
            ));
        }
        if !is_snake(&raw.file.module) {
            return Err(ctx.err(
                "file",
                SpecErrorKind::Invalid(format!(
                    "module \"{}\" is not a snake_case name",
                    raw.file.module
                )),
            ));
        }
        let all = raw
            .enums
            .iter()
            .map(|e| (&e.name, Kind::Enum, "enum"))
            .chain(
                raw.contexts
                    .iter()
                    .map(|c| (&c.name, Kind::Context, "context")),
            )
            .chain(
                raw.structs
                    .iter()
                    .map(|s| (&s.name, Kind::Struct, "struct")),
            );
        for (name, kind, what) in all {
            let path = format!("{what} {name}");
            if !is_upper_camel(name) {
                return Err(ctx.err(
                    path,
                    SpecErrorKind::Invalid(format!("\"{name}\" is not an UpperCamelCase name")),
                ));
            }
            if declared
                .insert(name.clone(), (display.clone(), kind))
                .is_some()
            {
                return Err(ctx.err(
                    path,
                    SpecErrorKind::DuplicateName {
                        what: "type".into(),
                        name: name.clone(),
                    },
                ));
            }
        }
    }

    let mut table = TypeTable::default();
    let mut files = Vec::new();
    for (display, stem, raw) in &raw_files {
        let ctx = Ctx { file: display };
        let mut enums = Vec::new();
        for raw_enum in &raw.enums {
            let built = build_enum(&ctx, raw_enum, gates)?;
            table.enums.insert(built.name.clone(), built.clone());
            enums.push(built);
        }
        let mut contexts = Vec::new();
        for raw_context in &raw.contexts {
            let path = format!("context {}", raw_context.name);
            let mut fields = Vec::new();
            let mut seen = BTreeSet::new();
            for field in &raw_context.fields {
                let fpath = format!("{path}, field {}", field.name);
                if !seen.insert(field.name.clone()) {
                    return Err(ctx.err(
                        fpath,
                        SpecErrorKind::DuplicateName {
                            what: "field".into(),
                            name: field.name.clone(),
                        },
                    ));
                }
                let ty = resolve_ty(&field.ty, &declared).map_err(|k| ctx.err(&fpath, k))?;
                let value = match (&raw_context.from, &field.value) {
                    (Some(_), Some(text)) => Some(parse_expr(
                        &ctx,
                        &fpath,
                        "value",
                        &RawExpr::Text(text.clone()),
                    )?),
                    (Some(from), None) => {
                        return Err(ctx.err(
                            fpath,
                            SpecErrorKind::Invalid(format!(
                                "the context is computed from {from}, so every field needs a value"
                            )),
                        ))
                    }
                    (None, Some(_)) => {
                        return Err(ctx.err(
                            fpath,
                            SpecErrorKind::Invalid(
                                "value needs the context to be declared `from` a struct".into(),
                            ),
                        ))
                    }
                    (None, None) => None,
                };
                fields.push(Named {
                    name: field.name.clone(),
                    ident: expr::rust_ident(&field.name),
                    ty,
                    doc: field.doc.clone(),
                    value,
                });
            }
            if let Some(from) = &raw_context.from {
                if !matches!(declared.get(from), Some((_, Kind::Struct))) {
                    return Err(ctx.err(
                        format!("{path}, from"),
                        SpecErrorKind::UnknownType(from.clone()),
                    ));
                }
            }
            let built = Context {
                name: raw_context.name.clone(),
                doc: raw_context.doc.clone(),
                source: raw_context.source.clone(),
                from: raw_context.from.clone(),
                fields,
            };
            table.contexts.insert(built.name.clone(), built.clone());
            contexts.push(built);
        }
        files.push(SpecFile {
            display: display.clone(),
            stem: stem.clone(),
            title: raw.file.title.clone(),
            module: raw.file.module.clone(),
            source: raw.file.source.clone(),
            doc: raw.file.doc.clone(),
            enums,
            contexts,
            structs: Vec::new(),
        });
    }

    // Struct shells: types and layouts, expressions parsed but not yet resolved.
    for (index, (display, _, raw)) in raw_files.iter().enumerate() {
        let ctx = Ctx { file: display };
        for raw_struct in &raw.structs {
            let built = build_struct(&ctx, raw_struct, &declared, gates)?;
            table.structs.insert(built.name.clone(), built.clone());
            files[index].structs.push(built);
        }
    }

    // A struct may contain itself only through a list (anything else has no end).
    for (file, raw_file) in files.iter().zip(&raw_files) {
        let ctx = Ctx { file: &raw_file.0 };
        for structure in &file.structs {
            if let Some(field) = direct_cycle(&structure.name, &table) {
                return Err(ctx.err(
                    format!("struct {}, field {field}", structure.name),
                    SpecErrorKind::Invalid(format!(
                        "{} contains itself through this field; recursion needs a list",
                        structure.name
                    )),
                ));
            }
        }
    }

    // Args of struct-typed fields must match the params of the struct.
    for (file, raw_file) in files.iter().zip(&raw_files) {
        let ctx = Ctx { file: &raw_file.0 };
        for structure in &file.structs {
            for field in &structure.fields {
                let path = format!("struct {}, field {}", structure.name, field.name);
                check_args(&ctx, &path, field, &table)?;
            }
        }
    }

    // Expressions, now that every type is known.
    for file in &files {
        let ctx = Ctx {
            file: &file.display,
        };
        for context in &file.contexts {
            check_derived_context(&ctx, context, &table)?;
        }
        for structure in &file.structs {
            check_struct_exprs(&ctx, structure, &table)?;
        }
    }

    let spec = Spec {
        current: raw_format.current,
        oldest: raw_format.oldest,
        format_title: raw_format.file.title.clone(),
        format_module: raw_format.file.module.clone(),
        format_source: raw_format.file.source.clone(),
        versions: raw_format
            .versions
            .iter()
            .map(|v| Version {
                number: v.number,
                release: v.release.clone(),
                source: v.source.clone(),
                erratum: v.erratum.clone(),
                changes: v.changes.clone(),
            })
            .collect(),
        files,
    };
    Ok((spec, table))
}

fn syntax_message(err: &toml::de::Error) -> String {
    err.to_string().trim().replace('\n', " ").replace("  ", " ")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Enum,
    Context,
    Struct,
}

#[derive(Debug, Clone, Copy)]
struct GateRange {
    oldest: u32,
    newest: u32,
}

/// The field of `start` through which it contains itself without a list, if any.
fn direct_cycle(start: &str, table: &TypeTable) -> Option<String> {
    fn inner_types(structure: &Struct) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for field in &structure.fields {
            match &field.layout {
                Layout::Single(Ty::Struct(name)) => out.push((field.name.clone(), name.clone())),
                Layout::Switch(switch) => {
                    for ty in switch
                        .cases
                        .iter()
                        .map(|c| &c.ty)
                        .chain(switch.default.iter())
                    {
                        out.push((field.name.clone(), ty.clone()));
                    }
                }
                _ => {}
            }
        }
        out
    }
    let first = table.structs.get(start)?;
    for (field, ty) in inner_types(first) {
        let mut stack = vec![ty];
        let mut seen = BTreeSet::new();
        while let Some(name) = stack.pop() {
            if name == start {
                return Some(field);
            }
            if !seen.insert(name.clone()) {
                continue;
            }
            if let Some(structure) = table.structs.get(&name) {
                stack.extend(inner_types(structure).into_iter().map(|(_, t)| t));
            }
        }
    }
    None
}

/// Names the generated code uses for itself (the switch value passed to a
/// switch's enum, the sink a `size_of` is measured with).
const RESERVED: &[&str] = &["switch_selector", "size_sink"];

fn is_snake(name: &str) -> bool {
    !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn is_upper_camel(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric())
}

fn check_gates(
    ctx: &Ctx,
    path: &str,
    since: Option<u32>,
    until: Option<u32>,
    range: GateRange,
) -> Result<(), SpecError> {
    for (key, value) in [("since", since), ("until", until)] {
        if let Some(value) = value {
            if value < range.oldest || value > range.newest {
                return Err(ctx.err(
                    path,
                    SpecErrorKind::GateOutOfRange {
                        key,
                        value,
                        oldest: range.oldest,
                        newest: range.newest,
                    },
                ));
            }
        }
    }
    if let (Some(since), Some(until)) = (since, until) {
        if since >= until {
            return Err(ctx.err(path, SpecErrorKind::InvertedGate { since, until }));
        }
    }
    Ok(())
}

fn build_enum(ctx: &Ctx, raw: &RawEnum, gates: GateRange) -> Result<Enum, SpecError> {
    let path = format!("enum {}", raw.name);
    let repr = Prim::parse(&raw.repr)
        .filter(|p| p.is_integer())
        .ok_or_else(|| ctx.err(&path, SpecErrorKind::UnknownType(raw.repr.clone())))?;
    let mut properties = Vec::new();
    for (name, ty) in &raw.properties {
        let prop_ty = match ty.as_str() {
            "bool" => PropTy::Bool,
            "str" | "string" => PropTy::Str,
            other => match Prim::parse(other) {
                Some(p) if p.is_integer() => PropTy::Int(p),
                _ => {
                    return Err(ctx.err(
                        format!("{path}, properties.{name}"),
                        SpecErrorKind::UnknownType(other.to_string()),
                    ))
                }
            },
        };
        if matches!(
            name.as_str(),
            "name" | "value" | "is_deprecated" | "since" | "until" | "from_value"
        ) {
            return Err(ctx.err(
                format!("{path}, properties.{name}"),
                SpecErrorKind::Invalid(format!(
                    "property \"{name}\" clashes with a generated method"
                )),
            ));
        }
        properties.push((name.clone(), prop_ty));
    }
    let (min, max): (i128, i128) = match repr {
        Prim::U8 => (0, u8::MAX.into()),
        Prim::U16 => (0, u16::MAX.into()),
        Prim::U32 => (0, u32::MAX.into()),
        Prim::U64 => (0, u64::MAX.into()),
        Prim::I8 => (i8::MIN.into(), i8::MAX.into()),
        Prim::I16 => (i16::MIN.into(), i16::MAX.into()),
        Prim::I32 => (i32::MIN.into(), i32::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    };
    let mut variants: Vec<Variant> = Vec::new();
    for raw_variant in &raw.variants {
        let vpath = format!("{path}, variant {}", raw_variant.name);
        if let Some(other) = variants.iter().find(|v| v.name == raw_variant.name) {
            return Err(ctx.err(
                vpath,
                SpecErrorKind::DuplicateName {
                    what: "variant".into(),
                    name: other.name.clone(),
                },
            ));
        }
        let value = i128::from(raw_variant.value);
        if let Some(other) = variants.iter().find(|v| v.value == value) {
            return Err(ctx.err(
                vpath,
                SpecErrorKind::DuplicateValue {
                    value: raw_variant.value,
                    first: other.name.clone(),
                    second: raw_variant.name.clone(),
                },
            ));
        }
        if value < min || value > max {
            return Err(ctx.err(
                vpath,
                SpecErrorKind::Invalid(format!("value {value} does not fit in {}", repr.name())),
            ));
        }
        let rust_name = expr::upper_camel(&raw_variant.name);
        if let Some(other) = variants.iter().find(|v| v.rust_name == rust_name) {
            return Err(ctx.err(
                vpath,
                SpecErrorKind::Invalid(format!(
                    "its Rust name {rust_name} is also the Rust name of {}",
                    other.name
                )),
            ));
        }
        check_gates(ctx, &vpath, raw_variant.since, raw_variant.until, gates)?;
        for key in raw_variant.rest.keys() {
            if !raw.properties.contains_key(key) {
                return Err(ctx.err(vpath, SpecErrorKind::UnknownProperty(key.clone())));
            }
        }
        let mut props = Vec::new();
        for (name, prop_ty) in &properties {
            let Some(value) = raw_variant.rest.get(name) else {
                return Err(ctx.err(vpath, SpecErrorKind::MissingProperty(name.clone())));
            };
            let ok = match (prop_ty, value) {
                (PropTy::Bool, toml::Value::Boolean(_)) => true,
                (PropTy::Str, toml::Value::String(_)) => true,
                (PropTy::Int(p), toml::Value::Integer(i)) => *i >= 0 || p.is_signed(),
                _ => false,
            };
            if !ok {
                return Err(ctx.err(
                    format!("{vpath}, {name}"),
                    SpecErrorKind::Invalid(format!("{value} is not a valid {prop_ty:?} value")),
                ));
            }
            props.push(value.clone());
        }
        variants.push(Variant {
            name: raw_variant.name.clone(),
            rust_name,
            value,
            doc: raw_variant.doc.clone(),
            source: raw_variant.source.clone(),
            erratum: raw_variant.erratum.clone(),
            deprecated: raw_variant.deprecated,
            since: raw_variant.since,
            until: raw_variant.until,
            props,
        });
    }
    if variants.is_empty() {
        return Err(ctx.err(
            path,
            SpecErrorKind::Invalid("an enum needs at least one variant".into()),
        ));
    }
    Ok(Enum {
        name: raw.name.clone(),
        repr,
        doc: raw.doc.clone(),
        source: raw.source.clone(),
        erratum: raw.erratum.clone(),
        properties,
        variants,
    })
}

/// Resolves a type as written: a primitive, bool, bytes, a declared name,
/// `Option<T>`, `Vec<T>` or `[T]`.
fn resolve_ty(
    text: &str,
    declared: &BTreeMap<String, (String, Kind)>,
) -> Result<Ty, SpecErrorKind> {
    let text = text.trim();
    if let Some(inner) = text
        .strip_prefix("Option<")
        .and_then(|t| t.strip_suffix('>'))
    {
        return Ok(Ty::Option(Box::new(resolve_ty(inner, declared)?)));
    }
    if let Some(inner) = text
        .strip_prefix("Vec<")
        .and_then(|t| t.strip_suffix('>'))
        .or_else(|| text.strip_prefix('[').and_then(|t| t.strip_suffix(']')))
    {
        return Ok(Ty::List(Box::new(resolve_ty(inner, declared)?)));
    }
    if let Some(prim) = Prim::parse(text) {
        return Ok(Ty::Prim(prim));
    }
    match text {
        "bool" => return Ok(Ty::Bool),
        "bytes" => return Ok(Ty::Bytes),
        _ => {}
    }
    match declared.get(text) {
        Some((_, Kind::Enum)) => Ok(Ty::Enum(text.to_string())),
        Some((_, Kind::Context)) => Ok(Ty::Context(text.to_string())),
        Some((_, Kind::Struct)) => Ok(Ty::Struct(text.to_string())),
        None => Err(SpecErrorKind::UnknownType(text.to_string())),
    }
}

fn parse_expr(ctx: &Ctx, path: &str, key: &str, raw: &RawExpr) -> Result<Expr, SpecError> {
    let text = raw.text();
    let parsed = expr::parse(&text).map_err(|reason| {
        ctx.err(
            path,
            SpecErrorKind::BadExpression {
                key: key.to_string(),
                reason,
            },
        )
    })?;
    Ok(Expr { text, parsed })
}

fn build_struct(
    ctx: &Ctx,
    raw: &RawStruct,
    declared: &BTreeMap<String, (String, Kind)>,
    gates: GateRange,
) -> Result<Struct, SpecError> {
    let path = format!("struct {}", raw.name);
    let mut params = Vec::new();
    let mut seen = BTreeSet::new();
    for param in &raw.params {
        let ppath = format!("{path}, param {}", param.name);
        if !seen.insert(param.name.clone()) {
            return Err(ctx.err(
                ppath,
                SpecErrorKind::DuplicateName {
                    what: "param".into(),
                    name: param.name.clone(),
                },
            ));
        }
        if RESERVED.contains(&param.name.as_str()) {
            return Err(ctx.err(
                ppath,
                SpecErrorKind::Invalid(format!(
                    "\"{}\" is reserved for the generated code",
                    param.name
                )),
            ));
        }
        let ty = resolve_ty(&param.ty, declared).map_err(|k| ctx.err(&ppath, k))?;
        if matches!(ty, Ty::Bytes | Ty::Struct(_)) {
            return Err(ctx.err(
                ppath,
                SpecErrorKind::Invalid(format!("a param cannot be a {}", ty.spec_name())),
            ));
        }
        if param.value.is_some() {
            return Err(ctx.err(
                ppath,
                SpecErrorKind::Invalid("a param takes no value (its parent passes it)".into()),
            ));
        }
        params.push(Named {
            name: param.name.clone(),
            ident: expr::rust_ident(&param.name),
            ty,
            doc: param.doc.clone(),
            value: None,
        });
    }
    let version_text = raw.version.clone().unwrap_or_else(|| "version".into());
    let version = expr::parse(&version_text).map_err(|reason| {
        ctx.err(
            &path,
            SpecErrorKind::BadExpression {
                key: "version".into(),
                reason,
            },
        )
    })?;

    let mut fields: Vec<Field> = Vec::new();
    for (index, raw_field) in raw.fields.iter().enumerate() {
        let fpath = format!("{path}, field {}", raw_field.name);
        if RESERVED.contains(&raw_field.name.as_str()) {
            return Err(ctx.err(
                fpath,
                SpecErrorKind::Invalid(format!(
                    "\"{}\" is reserved for the generated code",
                    raw_field.name
                )),
            ));
        }
        if !is_snake(&raw_field.name) {
            return Err(ctx.err(
                fpath,
                SpecErrorKind::Invalid(format!("\"{}\" is not a snake_case name", raw_field.name)),
            ));
        }
        if fields.iter().any(|f| f.name == raw_field.name) || seen.contains(&raw_field.name) {
            return Err(ctx.err(
                fpath,
                SpecErrorKind::DuplicateName {
                    what: if seen.contains(&raw_field.name) {
                        "field or param".into()
                    } else {
                        "field".into()
                    },
                    name: raw_field.name.clone(),
                },
            ));
        }
        check_gates(ctx, &fpath, raw_field.since, raw_field.until, gates)?;
        let invalid = |message: String| ctx.err(&fpath, SpecErrorKind::Invalid(message));

        let list_keys = [
            raw_field.count.is_some(),
            raw_field.each.is_some(),
            raw_field.until_eof,
        ]
        .iter()
        .filter(|x| **x)
        .count();
        if list_keys > 1 {
            return Err(invalid(
                "only one of count, each and until_eof can be given".into(),
            ));
        }

        let layout = match &raw_field.ty {
            RawType::Switch(switch) => {
                if list_keys > 0 {
                    return Err(invalid("a switch field cannot be a list".into()));
                }
                build_switch(ctx, &fpath, &raw.name, &raw_field.name, switch, declared)?
            }
            RawType::Name(name) if name == "bytes" => {
                if raw_field.count.is_some() || raw_field.each.is_some() {
                    return Err(invalid("bytes take size, not count or each".into()));
                }
                let terminator = match raw_field.terminator.as_deref() {
                    None => None,
                    Some(text) if text.len() == 1 => Some(text.as_bytes()[0]),
                    Some(text) => {
                        return Err(invalid(format!(
                            "terminator {text:?} must be a single byte"
                        )))
                    }
                };
                if terminator.is_some() && (raw_field.size.is_some() || raw_field.until_eof) {
                    return Err(invalid(
                        "bytes take one of size, until_eof and terminator".into(),
                    ));
                }
                match (&raw_field.size, raw_field.until_eof) {
                    _ if terminator.is_some() => Layout::Bytes {
                        len: BytesLen::Terminated(terminator.unwrap_or(b'\n')),
                    },
                    (Some(size), false) => Layout::Bytes {
                        len: BytesLen::Size(parse_expr(ctx, &fpath, "size", size)?),
                    },
                    (None, true) => Layout::Bytes {
                        len: BytesLen::UntilEof,
                    },
                    (None, false)
                        if raw_field.length_of.is_none() && raw_field.size_of.is_none() =>
                    {
                        return Err(invalid("bytes need a size (or until_eof = true)".into()))
                    }
                    _ => return Err(invalid("bytes take either size or until_eof".into())),
                }
            }
            RawType::Name(name) => {
                let ty = resolve_ty(name, declared).map_err(|k| ctx.err(&fpath, k))?;
                if raw_field.size.is_some() && (list_keys > 0 || !matches!(ty, Ty::Struct(_))) {
                    return Err(invalid(
                        "size applies to bytes and to a single struct; lists take count".into(),
                    ));
                }
                match ty {
                    Ty::Context(_) => {
                        return Err(invalid(format!(
                            "{name} is a context, which is not read from the file"
                        )))
                    }
                    Ty::Option(_) | Ty::List(_) => {
                        return Err(invalid(format!(
                            "a field's type is a single element ({name}); use count/each/until_eof for lists and since/until/if for optional fields"
                        )))
                    }
                    _ => {}
                }
                if list_keys == 0 {
                    Layout::Single(ty)
                } else {
                    if ty == Ty::Bool {
                        return Err(invalid("lists of bool are not supported; use u8".into()));
                    }
                    let len = if let Some(count) = &raw_field.count {
                        ListLen::Count(parse_expr(ctx, &fpath, "count", count)?)
                    } else if let Some(each) = &raw_field.each {
                        ListLen::Each {
                            over: each.over.clone(),
                            entry: each.entry.clone(),
                        }
                    } else {
                        ListLen::UntilEof
                    };
                    Layout::List { elem: ty, len }
                }
            }
        };

        let role = match (&raw_field.length_of, &raw_field.size_of, &raw_field.value) {
            (None, None, None) => Role::Stored,
            (Some(target), None, None) => Role::LengthOf(target.clone()),
            (None, Some(target), None) => Role::SizeOf(target.clone()),
            (None, None, Some(value)) => Role::Value(parse_expr(ctx, &fpath, "value", value)?),
            _ => {
                return Err(invalid(
                    "only one of length_of, size_of and value can be given".into(),
                ))
            }
        };
        if !matches!(role, Role::Stored) {
            let integer = matches!(&layout, Layout::Single(Ty::Prim(p)) if p.is_integer());
            let single = matches!(&layout, Layout::Single(_));
            if matches!(role, Role::LengthOf(_) | Role::SizeOf(_)) && !integer {
                return Err(invalid(
                    "a length_of or size_of field must be an integer".into(),
                ));
            }
            if !single {
                return Err(invalid(
                    "a value field must be a single primitive or enum".into(),
                ));
            }
            if raw_field.default.is_some() && matches!(role, Role::Value(_)) {
                return Err(invalid(
                    "a fixed value takes no default (it is the value where absent)".into(),
                ));
            }
        }
        // length_of / size_of must point at a later field of the right kind.
        let target_check = match &role {
            Role::LengthOf(target) => Some(("length_of", target)),
            Role::SizeOf(target) => Some(("size_of", target)),
            _ => None,
        };
        if let Some((key, target)) = target_check {
            let later = raw
                .fields
                .iter()
                .skip(index + 1)
                .find(|f| &f.name == target);
            let reason = if fields.iter().any(|f| &f.name == target) {
                Some("that field comes earlier; a length must precede what it measures".to_string())
            } else if later.is_none() {
                Some("there is no such field".to_string())
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(ctx.err(
                    &fpath,
                    SpecErrorKind::BadLengthTarget {
                        key,
                        target: target.clone(),
                        reason,
                    },
                ));
            }
            if let (Some(later), "length_of") = (later, key) {
                let measurable = matches!(&later.ty, RawType::Name(n) if n == "bytes")
                    || later.count.is_some()
                    || later.each.is_some()
                    || later.until_eof;
                if !measurable {
                    return Err(ctx.err(
                        &fpath,
                        SpecErrorKind::BadLengthTarget {
                            key,
                            target: target.clone(),
                            reason: "that field is neither bytes nor a list".into(),
                        },
                    ));
                }
            }
        }

        let sized = match (&layout, &raw_field.size) {
            (Layout::Single(Ty::Struct(_)) | Layout::Switch(_), Some(size)) => {
                Some(parse_expr(ctx, &fpath, "size", size)?)
            }
            _ => None,
        };
        let mut args = BTreeMap::new();
        for (name, value) in &raw_field.args {
            args.insert(
                name.clone(),
                parse_expr(ctx, &fpath, &format!("args.{name}"), value)?,
            );
        }
        let condition = raw_field
            .condition
            .as_ref()
            .map(|c| parse_expr(ctx, &fpath, "if", c))
            .transpose()?;
        let default = raw_field
            .default
            .as_ref()
            .map(|d| parse_expr(ctx, &fpath, "default", d))
            .transpose()?;
        if default.is_some()
            && raw_field.since.is_none()
            && raw_field.until.is_none()
            && condition.is_none()
        {
            return Err(invalid(
                "default applies only to a field with since, until or if".into(),
            ));
        }
        if raw_field.terminator.is_some() && !matches!(layout, Layout::Bytes { .. }) {
            return Err(invalid("terminator applies to bytes only".into()));
        }
        if raw_field.max.is_some() && !matches!(layout, Layout::Bytes { .. } | Layout::List { .. })
        {
            return Err(invalid("max applies to bytes and lists".into()));
        }
        fields.push(Field {
            name: raw_field.name.clone(),
            ident: expr::rust_ident(&raw_field.name),
            doc: raw_field.doc.clone(),
            source: raw_field.source.clone(),
            erratum: raw_field.erratum.clone(),
            since: raw_field.since,
            until: raw_field.until,
            condition,
            default,
            layout,
            role,
            args,
            max: raw_field.max,
            sized,
        });
    }
    Ok(Struct {
        name: raw.name.clone(),
        doc: raw.doc.clone(),
        source: raw.source.clone(),
        erratum: raw.erratum.clone(),
        container: raw.container.clone(),
        params,
        version,
        version_text,
        fields,
    })
}

fn build_switch(
    ctx: &Ctx,
    fpath: &str,
    struct_name: &str,
    field_name: &str,
    raw: &RawSwitch,
    declared: &BTreeMap<String, (String, Kind)>,
) -> Result<Layout, SpecError> {
    let on = parse_expr(
        ctx,
        fpath,
        "type.switch_on",
        &RawExpr::Text(raw.switch_on.clone()),
    )?;
    // The type of `switch_on` is settled when expressions are checked; here we
    // only need to know whether it is an enum to check the case keys.
    let case_types: BTreeSet<&String> = raw.cases.values().chain(raw.default.iter()).collect();
    for ty in &case_types {
        match declared.get(*ty) {
            Some((_, Kind::Struct)) => {}
            _ => return Err(ctx.err(fpath, SpecErrorKind::UnknownType((*ty).clone()))),
        }
    }
    if let Some(key) = raw.errors.keys().find(|k| raw.cases.contains_key(*k)) {
        return Err(ctx.err(
            fpath,
            SpecErrorKind::Invalid(format!("switch value {key} is both a case and an error")),
        ));
    }
    let mut cases: Vec<SwitchCase> = Vec::new();
    for (key, ty) in &raw.cases {
        if let Some(case) = cases.iter_mut().find(|c| &c.ty == ty) {
            case.keys.push(key.clone());
        } else {
            cases.push(SwitchCase {
                ty: ty.clone(),
                keys: vec![key.clone()],
            });
        }
    }
    Ok(Layout::Switch(Switch {
        rust_name: format!("{struct_name}{}", expr::upper_camel(field_name)),
        on,
        on_ty: Ty::NoneLit,
        cases,
        default: raw.default.clone(),
        errors: raw
            .errors
            .iter()
            .map(|(key, reason)| (key.clone(), reason.clone()))
            .collect(),
    }))
}

fn check_args(ctx: &Ctx, path: &str, field: &Field, table: &TypeTable) -> Result<(), SpecError> {
    let targets: Vec<&String> = match &field.layout {
        Layout::Single(Ty::Struct(name)) => vec![name],
        Layout::List {
            elem: Ty::Struct(name),
            ..
        } => vec![name],
        Layout::Switch(switch) => switch
            .cases
            .iter()
            .map(|c| &c.ty)
            .chain(switch.default.iter())
            .collect(),
        _ => {
            if let Some(name) = field.args.keys().next() {
                return Err(ctx.err(
                    path,
                    SpecErrorKind::Invalid(format!(
                        "args.{name}: only struct-typed fields take args"
                    )),
                ));
            }
            return Ok(());
        }
    };
    let switch = matches!(field.layout, Layout::Switch(_));
    for target in &targets {
        let Some(structure) = table.structs.get(*target) else {
            continue;
        };
        for param in &structure.params {
            if !field.args.contains_key(&param.name) {
                return Err(ctx.err(
                    path,
                    SpecErrorKind::Invalid(format!(
                        "args: {target} needs param \"{}\", which is not given",
                        param.name
                    )),
                ));
            }
        }
        if !switch {
            for name in field.args.keys() {
                if !structure.params.iter().any(|p| &p.name == name) {
                    return Err(ctx.err(
                        path,
                        SpecErrorKind::Invalid(format!("args.{name}: {target} has no such param")),
                    ));
                }
            }
        }
    }
    if switch {
        for name in field.args.keys() {
            let used = targets.iter().any(|t| {
                table
                    .structs
                    .get(*t)
                    .is_some_and(|s| s.params.iter().any(|p| &p.name == name))
            });
            if !used {
                return Err(ctx.err(
                    path,
                    SpecErrorKind::Invalid(format!("args.{name}: no case type has such a param")),
                ));
            }
        }
    }
    Ok(())
}

/// The scope of the expressions of field `index`: params, then earlier fields.
pub fn field_scope<'a>(
    table: &'a TypeTable,
    structure: &Struct,
    index: usize,
    side: Side,
    temp_write: &dyn Fn(&Field) -> proc_macro2::TokenStream,
) -> Scope<'a> {
    let mut names: Vec<Binding> = structure
        .params
        .iter()
        .map(|p| Binding {
            name: p.name.clone(),
            ident: p.ident.clone(),
            ty: p.ty.clone(),
            kind: BindingKind::Param,
        })
        .collect();
    for field in structure.fields.iter().take(index) {
        let kind = if field.is_stored() {
            BindingKind::Field
        } else {
            BindingKind::Temp {
                write: temp_write(field),
            }
        };
        names.push(Binding {
            name: field.name.clone(),
            ident: field.ident.clone(),
            ty: field.value_ty(),
            kind,
        });
    }
    Scope {
        table,
        side,
        names,
        later: structure
            .fields
            .iter()
            .skip(index)
            .map(|f| f.name.clone())
            .collect(),
    }
}

fn expr_error(ctx: &Ctx, path: &str, key: &str, err: ExprError) -> SpecError {
    let kind = match err {
        ExprError::UnknownName(name) => SpecErrorKind::UnknownName {
            key: key.to_string(),
            name,
        },
        ExprError::LaterField(name) => SpecErrorKind::LaterField {
            key: key.to_string(),
            name,
        },
        ExprError::Bad(reason) => SpecErrorKind::BadExpression {
            key: key.to_string(),
            reason,
        },
    };
    ctx.err(path, kind)
}

/// The scope of a derived context's values: the stored fields of its struct,
/// reached through `source`.
pub fn derived_scope<'a>(table: &'a TypeTable, from: &Struct) -> Scope<'a> {
    let names = from
        .fields
        .iter()
        .filter(|f| f.is_stored())
        .map(|f| {
            let id = expr::ident(&f.ident);
            Binding {
                name: f.name.clone(),
                ident: f.ident.clone(),
                ty: f.value_ty(),
                kind: BindingKind::Place(quote::quote!(source.#id)),
            }
        })
        .collect();
    Scope {
        table,
        side: Side::Read,
        names,
        later: Vec::new(),
    }
}

fn check_derived_context(ctx: &Ctx, context: &Context, table: &TypeTable) -> Result<(), SpecError> {
    let Some(from) = &context.from else {
        return Ok(());
    };
    let Some(source) = table.structs.get(from) else {
        return Err(ctx.err(
            format!("context {}, from", context.name),
            SpecErrorKind::UnknownType(from.clone()),
        ));
    };
    let scope = derived_scope(table, source);
    for field in &context.fields {
        if let Some(value) = &field.value {
            scope.lower_to(&value.parsed, &field.ty).map_err(|e| {
                expr_error(
                    ctx,
                    &format!("context {}, field {}", context.name, field.name),
                    "value",
                    e,
                )
            })?;
        }
    }
    Ok(())
}

/// The element type of an `each` list's `over`, which must be a list param or an earlier list field.
pub fn each_entry_ty(scope: &Scope, over: &str) -> Result<Ty, ExprError> {
    let parsed = expr::parse(over).map_err(ExprError::Bad)?;
    let lowered = scope.lower(&parsed)?;
    match lowered.ty {
        Ty::List(elem) => Ok(*elem),
        other => Err(ExprError::Bad(format!(
            "is a {}, not a list",
            other.spec_name()
        ))),
    }
}

fn check_struct_exprs(ctx: &Ctx, structure: &Struct, table: &TypeTable) -> Result<(), SpecError> {
    for (index, field) in structure.fields.iter().enumerate() {
        let path = format!("struct {}, field {}", structure.name, field.name);
        let scope = field_scope(table, structure, index, Side::Read, &|_| {
            proc_macro2::TokenStream::new()
        });
        let at = |key: &str, err: ExprError| expr_error(ctx, &path, key, err);
        if field.since.is_some() || field.until.is_some() {
            let lowered = scope
                .lower(&structure.version)
                .map_err(|e| at("version", e))?;
            if !lowered.ty.is_integer() {
                return Err(at(
                    "version",
                    ExprError::Bad(format!("is a {}, not an integer", lowered.ty.spec_name())),
                ));
            }
        }
        if let Some(condition) = &field.condition {
            scope
                .lower_to(&condition.parsed, &Ty::Bool)
                .map_err(|e| at("if", e))?;
        }
        if let Some(default) = &field.default {
            scope
                .lower_to(&default.parsed, &field.base_ty())
                .map_err(|e| at("default", e))?;
        }
        if let Role::Value(value) = &field.role {
            scope
                .lower_to(&value.parsed, &field.base_ty())
                .map_err(|e| at("value", e))?;
        }
        if let Some(size) = &field.sized {
            scope.lower_u64(&size.parsed).map_err(|e| at("size", e))?;
        }
        match &field.layout {
            Layout::Bytes {
                len: BytesLen::Size(size),
            } => {
                scope.lower_u64(&size.parsed).map_err(|e| at("size", e))?;
            }
            Layout::List {
                len: ListLen::Count(count),
                ..
            } => {
                scope.lower_u64(&count.parsed).map_err(|e| at("count", e))?;
            }
            _ => {}
        }
        let mut arg_scope = scope;
        if let Layout::List {
            len: ListLen::Each { over, entry },
            ..
        } = &field.layout
        {
            let entry_ty = each_entry_ty(&arg_scope, over).map_err(|e| at("each.over", e))?;
            arg_scope.names.push(Binding {
                name: entry.clone(),
                ident: expr::rust_ident(entry),
                ty: entry_ty,
                kind: BindingKind::Entry,
            });
        }
        let param_types = arg_param_types(field, table);
        for (name, value) in &field.args {
            let key = format!("args.{name}");
            let want = param_types.get(name).cloned().unwrap_or(Ty::NoneLit);
            arg_scope
                .lower_to(&value.parsed, &want)
                .map_err(|e| at(&key, e))?;
        }
        if let Layout::Switch(switch) = &field.layout {
            let on = arg_scope
                .lower(&switch.on.parsed)
                .map_err(|e| at("type.switch_on", e))?;
            match &on.ty {
                Ty::Enum(name) => {
                    let spec_enum = &table.enums[name];
                    let keys = switch
                        .cases
                        .iter()
                        .flat_map(|c| c.keys.iter())
                        .chain(switch.errors.iter().map(|(k, _)| k));
                    {
                        for key in keys {
                            if spec_enum.variant(key).is_none() {
                                return Err(ctx.err(
                                    &path,
                                    SpecErrorKind::UnknownVariant {
                                        enum_name: name.clone(),
                                        variant: key.clone(),
                                    },
                                ));
                            }
                        }
                    }
                }
                ty if ty.is_integer() => {
                    let keys = switch
                        .cases
                        .iter()
                        .flat_map(|c| c.keys.iter())
                        .chain(switch.errors.iter().map(|(k, _)| k));
                    {
                        for key in keys {
                            if key.parse::<i128>().is_err() {
                                return Err(at(
                                    "type.cases",
                                    ExprError::Bad(format!(
                                        "case \"{key}\" is not an integer, but the switch is on an integer"
                                    )),
                                ));
                            }
                        }
                    }
                }
                other => {
                    return Err(at(
                        "type.switch_on",
                        ExprError::Bad(format!(
                            "is a {}; a switch needs an enum or an integer",
                            other.spec_name()
                        )),
                    ))
                }
            }
        }
    }
    Ok(())
}

/// The params (name → type) a struct-typed or switch field passes arguments to.
pub fn arg_param_types(field: &Field, table: &TypeTable) -> BTreeMap<String, Ty> {
    let targets: Vec<&String> = match &field.layout {
        Layout::Single(Ty::Struct(name))
        | Layout::List {
            elem: Ty::Struct(name),
            ..
        } => vec![name],
        Layout::Switch(switch) => switch
            .cases
            .iter()
            .map(|c| &c.ty)
            .chain(switch.default.iter())
            .collect(),
        _ => vec![],
    };
    let mut out = BTreeMap::new();
    for target in targets {
        if let Some(structure) = table.structs.get(target) {
            for param in &structure.params {
                out.entry(param.name.clone())
                    .or_insert_with(|| param.ty.clone());
            }
        }
    }
    out
}
