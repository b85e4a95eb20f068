//! Struct shells: takes a raw struct, gives a [`Struct`] whose params,
//! layouts, roles and gates are checked and whose expressions are parsed
//! (they are type-checked later, in `exprs`, once every struct is known);
//! then the checks that look across structs (recursion, args against params).

use std::collections::{BTreeMap, BTreeSet};

use super::{
    check_gates, is_snake, parse_expr, resolve_ty, Ctx, Declared, FileShell, GateRange, Kind,
    Parsed, RESERVED,
};
use crate::error::{SpecError, SpecErrorKind};
use crate::expr::check::parse;
use crate::expr::{rust_ident, upper_camel};
use crate::model::*;
use crate::raw::*;

pub(super) fn build_struct(
    ctx: &Ctx,
    raw: &RawStruct,
    declared: &Declared,
    gates: GateRange,
) -> Result<Struct<Parsed>, SpecError> {
    let path = format!("struct {}", raw.name);
    let (params, seen) = build_params(ctx, &path, raw, declared)?;
    let version_text = raw.version.clone().unwrap_or_else(|| "version".into());
    let version = parse(&version_text).map_err(|reason| {
        ctx.err(
            &path,
            SpecErrorKind::BadExpression {
                key: "version".into(),
                reason,
            },
        )
    })?;
    let mut fields: Vec<Field<Parsed>> = Vec::new();
    for index in 0..raw.fields.len() {
        let field = build_field(ctx, raw, index, &fields, &seen, declared, gates)?;
        fields.push(field);
    }
    let known_size = raw
        .known_size
        .as_ref()
        .map(|known| build_known_size(ctx, &path, known, &seen, declared))
        .transpose()?;
    Ok(Struct {
        name: raw.name.clone(),
        unused_reason: raw.unused_reason.clone(),
        doc: raw.doc.clone(),
        source: raw.source.clone(),
        erratum: raw.erratum.clone(),
        container: raw.container.clone(),
        params,
        version: Some(Parsed {
            text: version_text.clone(),
            syn: version,
        }),
        version_text,
        fields,
        // A placeholder marking the request; `views` plans it.
        view: raw.view.then(ViewPlan::default),
        known_size,
    })
}

/// `[struct.known_size]`: its inputs typed as params are (distinct from the
/// params, snake_case), its expressions parsed; `exprs` checks them in a
/// scope of the params and inputs only.
fn build_known_size(
    ctx: &Ctx,
    path: &str,
    raw: &RawKnownSize,
    params: &BTreeSet<String>,
    declared: &Declared,
) -> Result<KnownSize<Parsed>, SpecError> {
    let kpath = format!("{path}, known_size");
    let mut inputs = Vec::new();
    let mut seen = params.clone();
    for input in &raw.inputs {
        let ipath = format!("{kpath}, input {}", input.name);
        if !is_snake(&input.name) || RESERVED.contains(&input.name.as_str()) {
            return Err(ctx.err(
                ipath,
                SpecErrorKind::Invalid(format!(
                    "\"{}\" is not a snake_case name free for an input",
                    input.name
                )),
            ));
        }
        if !seen.insert(input.name.clone()) {
            return Err(ctx.err(
                ipath,
                SpecErrorKind::DuplicateName {
                    what: "param or input".into(),
                    name: input.name.clone(),
                },
            ));
        }
        let ty = resolve_ty(&input.ty, declared).map_err(|k| ctx.err(&ipath, k))?;
        if matches!(ty, Ty::Bytes | Ty::Struct(_)) || input.value.is_some() {
            return Err(ctx.err(
                ipath,
                SpecErrorKind::Invalid(format!(
                    "an input is a value the caller passes (a number, bool, enum or context), not a {}{}",
                    ty.spec_name(),
                    if input.value.is_some() { " with a value" } else { "" }
                )),
            ));
        }
        inputs.push(Named {
            name: input.name.clone(),
            ident: rust_ident(&input.name),
            ty,
            doc: input.doc.clone(),
            value: None,
        });
    }
    Ok(KnownSize {
        doc: raw.doc.clone(),
        source: raw.source.clone(),
        inputs,
        when: parse_expr(ctx, &kpath, "when", &raw.when)?,
        size: parse_expr(ctx, &kpath, "size", &raw.size)?,
    })
}

fn build_params(
    ctx: &Ctx,
    path: &str,
    raw: &RawStruct,
    declared: &Declared,
) -> Result<(Vec<Named<Parsed>>, BTreeSet<String>), SpecError> {
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
            ident: rust_ident(&param.name),
            ty,
            doc: param.doc.clone(),
            value: None,
        });
    }
    Ok((params, seen))
}

/// Field `index` of `raw`, given the fields before it (`earlier`) and the
/// params' names (`seen`).
fn build_field(
    ctx: &Ctx,
    raw: &RawStruct,
    index: usize,
    earlier: &[Field<Parsed>],
    seen: &BTreeSet<String>,
    declared: &Declared,
    gates: GateRange,
) -> Result<Field<Parsed>, SpecError> {
    let path = format!("struct {}", raw.name);
    let raw_field = &raw.fields[index];
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
    if earlier.iter().any(|f| f.name == raw_field.name) || seen.contains(&raw_field.name) {
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

    let layout = build_layout(ctx, &fpath, raw, raw_field, list_keys, declared)?;
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
    check_length_target(ctx, &fpath, raw, index, earlier, &role)?;

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
    if raw_field.or_end && raw_field.terminator.is_none() {
        return Err(invalid("or_end applies to bytes with a terminator".into()));
    }
    if raw_field.max.is_some() && !matches!(layout, Layout::Bytes { .. } | Layout::List { .. }) {
        return Err(invalid("max applies to bytes and lists".into()));
    }
    let initial = check_initial(raw_field, &layout, &role).map_err(invalid)?;
    Ok(Field {
        name: raw_field.name.clone(),
        ident: rust_ident(&raw_field.name),
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
        initial,
    })
}

/// `initial`: a literal of the field's type on a kept, always-present bool
/// or integer (what the generated `Default` gives it).
fn check_initial(
    raw_field: &RawField,
    layout: &Layout<Parsed>,
    role: &Role<Parsed>,
) -> Result<Option<String>, String> {
    let Some(initial) = &raw_field.initial else {
        return Ok(None);
    };
    let gated =
        raw_field.since.is_some() || raw_field.until.is_some() || raw_field.condition.is_some();
    if !matches!(role, Role::Stored) || gated {
        return Err("initial applies to a kept field that is always present".into());
    }
    match (layout, initial) {
        (Layout::Single(Ty::Bool), RawExpr::Boolean(b)) => Ok(Some(b.to_string())),
        (Layout::Single(Ty::Prim(p)), RawExpr::Integer(i)) if p.is_integer() => {
            Ok(Some(i.to_string()))
        }
        _ => Err("initial is a bool literal for a bool, an integer literal for an integer".into()),
    }
}

/// A `length_of` or `size_of` names a later field of the right kind.
fn check_length_target(
    ctx: &Ctx,
    fpath: &str,
    raw: &RawStruct,
    index: usize,
    earlier: &[Field<Parsed>],
    role: &Role<Parsed>,
) -> Result<(), SpecError> {
    let target_check = match role {
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
        let reason = if earlier.iter().any(|f| &f.name == target) {
            Some("that field comes earlier; a length must precede what it measures".to_string())
        } else if later.is_none() {
            Some("there is no such field".to_string())
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(ctx.err(
                fpath,
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
                    fpath,
                    SpecErrorKind::BadLengthTarget {
                        key,
                        target: target.clone(),
                        reason: "that field is neither bytes nor a list".into(),
                    },
                ));
            }
        }
    }
    Ok(())
}

/// The layout of a field: a switch, bytes, a single value or a list.
fn build_layout(
    ctx: &Ctx,
    fpath: &str,
    raw: &RawStruct,
    raw_field: &RawField,
    list_keys: usize,
    declared: &Declared,
) -> Result<Layout<Parsed>, SpecError> {
    let invalid = |message: String| ctx.err(fpath, SpecErrorKind::Invalid(message));
    let layout = match &raw_field.ty {
        RawType::Switch(switch) => {
            if list_keys > 0 {
                return Err(invalid("a switch field cannot be a list".into()));
            }
            build_switch(ctx, fpath, &raw.name, &raw_field.name, switch, declared)?
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
                    len: BytesLen::Terminated {
                        byte: terminator.unwrap_or(b'\n'),
                        or_end: raw_field.or_end,
                    },
                },
                (Some(size), false) => Layout::Bytes {
                    len: BytesLen::Size(parse_expr(ctx, fpath, "size", size)?),
                },
                (None, true) => Layout::Bytes {
                    len: BytesLen::UntilEof,
                },
                (None, false) if raw_field.length_of.is_none() && raw_field.size_of.is_none() => {
                    return Err(invalid("bytes need a size (or until_eof = true)".into()))
                }
                _ => return Err(invalid("bytes take either size or until_eof".into())),
            }
        }
        RawType::Name(name) => {
            let ty = resolve_ty(name, declared).map_err(|k| ctx.err(fpath, k))?;
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
                    ListLen::Count(parse_expr(ctx, fpath, "count", count)?)
                } else if let Some(each) = &raw_field.each {
                    ListLen::Each {
                        over: parse_expr(
                            ctx,
                            fpath,
                            "each.over",
                            &RawExpr::Text(each.over.clone()),
                        )?,
                        entry: each.entry.clone(),
                    }
                } else {
                    ListLen::UntilEof
                };
                Layout::List { elem: ty, len }
            }
        }
    };
    Ok(layout)
}

/// The checks that need every struct: a struct contains itself only through
/// a list (anything else has no end), and the args of struct-typed fields
/// match the params of the struct.
pub(super) fn check_across(
    shells: &[FileShell],
    table: &TypeTable<Parsed>,
) -> Result<(), SpecError> {
    for shell in shells {
        let ctx = Ctx {
            file: &shell.display,
        };
        for structure in &shell.structs {
            if let Some(field) = direct_cycle(&structure.name, table) {
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
    for shell in shells {
        let ctx = Ctx {
            file: &shell.display,
        };
        for structure in &shell.structs {
            for field in &structure.fields {
                let path = format!("struct {}, field {}", structure.name, field.name);
                check_args(&ctx, &path, field, table)?;
            }
        }
    }
    Ok(())
}

fn build_switch(
    ctx: &Ctx,
    fpath: &str,
    struct_name: &str,
    field_name: &str,
    raw: &RawSwitch,
    declared: &Declared,
) -> Result<Layout<Parsed>, SpecError> {
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
    if raw.default_reason.is_some() && raw.default.is_none() {
        return Err(ctx.err(
            fpath,
            SpecErrorKind::Invalid(
                "type.default_reason: there is no default for it to explain".into(),
            ),
        ));
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
        rust_name: format!("{struct_name}{}", upper_camel(field_name)),
        on,
        cases,
        default: raw.default.clone(),
        default_reason: raw.default_reason.clone(),
        open_enum: raw.open_enum.clone(),
        errors: raw
            .errors
            .iter()
            .map(|(key, reason)| (key.clone(), reason.clone()))
            .collect(),
    }))
}

fn check_args(
    ctx: &Ctx,
    path: &str,
    field: &Field<Parsed>,
    table: &TypeTable<Parsed>,
) -> Result<(), SpecError> {
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

/// The field of `start` through which it contains itself without a list, if any.
fn direct_cycle(start: &str, table: &TypeTable<Parsed>) -> Option<String> {
    fn inner_types(structure: &Struct<Parsed>) -> Vec<(String, String)> {
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
