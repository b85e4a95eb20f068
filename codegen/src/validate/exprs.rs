//! The expression pass: takes the struct shells and derived contexts with
//! parsed expressions, gives them with every expression type-checked into a
//! [`Checked`] (text and typed tree), in the scope where the generated code
//! will evaluate it. This is the only place expressions are checked.

use std::collections::BTreeMap;

use super::{Ctx, FileShell, Parsed};
use crate::error::{SpecError, SpecErrorKind};
use crate::expr::check::{entry_binding, Binding, ExprError, Scope};
use crate::expr::{Expr, NameKind};
use crate::model::*;

/// Checks the expressions of every file; gives the files of the model and
/// the table of their checked types.
pub(super) fn check_files(
    shells: Vec<FileShell>,
    table: &TypeTable<Parsed>,
) -> Result<(Vec<SpecFile>, TypeTable), SpecError> {
    let mut files = Vec::new();
    let mut checked_table = TypeTable {
        gates: table.gates.clone(),
        ..TypeTable::default()
    };
    for shell in shells {
        let ctx = Ctx {
            file: &shell.display,
        };
        let mut contexts = Vec::new();
        for context in &shell.contexts {
            contexts.push(check_derived_context(&ctx, context, table)?);
        }
        let mut structs = Vec::new();
        for structure in &shell.structs {
            structs.push(check_struct(&ctx, structure, table)?);
        }
        for spec_enum in &shell.enums {
            checked_table
                .enums
                .insert(spec_enum.name.clone(), spec_enum.clone());
        }
        for context in &contexts {
            checked_table
                .contexts
                .insert(context.name.clone(), context.clone());
        }
        for structure in &structs {
            checked_table
                .structs
                .insert(structure.name.clone(), structure.clone());
        }
        files.push(SpecFile {
            display: shell.display.clone(),
            stem: shell.stem.clone(),
            title: shell.raw.file.title.clone(),
            module: shell.raw.file.module.clone(),
            source: shell.raw.file.source.clone(),
            doc: shell.raw.file.doc.clone(),
            enums: shell.enums,
            contexts,
            structs,
            folders: shell.folders,
            file_names: shell.file_names,
            extensions: shell.extensions,
        });
    }
    Ok((files, checked_table))
}

fn checked(parsed: &Parsed, expr: Expr) -> Checked {
    Checked {
        text: parsed.text.clone(),
        expr,
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

/// The scope of the expressions of field `index`: params, then earlier fields.
fn field_scope<'a>(
    table: &'a TypeTable<Parsed>,
    structure: &Struct<Parsed>,
    index: usize,
) -> Scope<'a, Parsed> {
    let mut names: Vec<Binding> = structure
        .params
        .iter()
        .map(|p| Binding {
            name: p.name.clone(),
            ident: p.ident.clone(),
            ty: p.ty.clone(),
            kind: NameKind::Param,
        })
        .collect();
    for field in structure.fields.iter().take(index) {
        names.push(Binding {
            name: field.name.clone(),
            ident: field.ident.clone(),
            ty: field.value_ty(),
            kind: if field.is_stored() {
                NameKind::Field
            } else {
                NameKind::Temp
            },
        });
    }
    Scope {
        table,
        names,
        later: structure
            .fields
            .iter()
            .skip(index)
            .map(|f| f.name.clone())
            .collect(),
    }
}

/// The scope of a derived context's values: the stored fields of its
/// struct, reached through `source`.
fn derived_scope<'a>(table: &'a TypeTable<Parsed>, from: &Struct<Parsed>) -> Scope<'a, Parsed> {
    let names = from
        .fields
        .iter()
        .filter(|f| f.is_stored())
        .map(|f| Binding {
            name: f.name.clone(),
            ident: f.ident.clone(),
            ty: f.value_ty(),
            kind: NameKind::Source,
        })
        .collect();
    Scope {
        table,
        names,
        later: Vec::new(),
    }
}

fn check_derived_context(
    ctx: &Ctx,
    context: &Context<Parsed>,
    table: &TypeTable<Parsed>,
) -> Result<Context, SpecError> {
    let source = match &context.from {
        Some(from) => match table.structs.get(from) {
            Some(source) => Some(source),
            None => {
                return Err(ctx.err(
                    format!("context {}, from", context.name),
                    SpecErrorKind::UnknownType(from.clone()),
                ))
            }
        },
        None => None,
    };
    let mut fields = Vec::new();
    for field in &context.fields {
        let value = match (&field.value, source) {
            (Some(value), Some(source)) => {
                let expr = derived_scope(table, source)
                    .check_to(&value.syn, &field.ty)
                    .map_err(|e| {
                        expr_error(
                            ctx,
                            &format!("context {}, field {}", context.name, field.name),
                            "value",
                            e,
                        )
                    })?;
                Some(checked(value, expr))
            }
            _ => None,
        };
        fields.push(Named {
            name: field.name.clone(),
            ident: field.ident.clone(),
            ty: field.ty.clone(),
            doc: field.doc.clone(),
            value,
        });
    }
    Ok(Context {
        name: context.name.clone(),
        unused_reason: context.unused_reason.clone(),
        doc: context.doc.clone(),
        source: context.source.clone(),
        from: context.from.clone(),
        fields,
    })
}

fn check_struct(
    ctx: &Ctx,
    structure: &Struct<Parsed>,
    table: &TypeTable<Parsed>,
) -> Result<Struct, SpecError> {
    let mut version = None;
    let mut fields = Vec::new();
    for index in 0..structure.fields.len() {
        let (field, field_version) = check_field(ctx, structure, index, table)?;
        // Every gated field resolves the version to the same name, so the
        // first one stands for all.
        if version.is_none() {
            version = field_version;
        }
        fields.push(field);
    }
    let params = structure
        .params
        .iter()
        .map(|p| Named {
            name: p.name.clone(),
            ident: p.ident.clone(),
            ty: p.ty.clone(),
            doc: p.doc.clone(),
            value: None,
        })
        .collect();
    let known_size = structure
        .known_size
        .as_ref()
        .map(|known| check_known_size(ctx, structure, known, table))
        .transpose()?;
    Ok(Struct {
        name: structure.name.clone(),
        unused_reason: structure.unused_reason.clone(),
        doc: structure.doc.clone(),
        source: structure.source.clone(),
        erratum: structure.erratum.clone(),
        container: structure.container.clone(),
        params,
        version,
        version_text: structure.version_text.clone(),
        fields,
        view: structure.view.clone(),
        known_size,
    })
}

/// `known_size`: `when` a condition and `size` an integer, over the
/// struct's params and the inputs only — a field is unknown before the
/// struct is read, so naming one is an error that says so.
fn check_known_size(
    ctx: &Ctx,
    structure: &Struct<Parsed>,
    known: &KnownSize<Parsed>,
    table: &TypeTable<Parsed>,
) -> Result<KnownSize, SpecError> {
    let path = format!("struct {}, known_size", structure.name);
    let names = known
        .inputs
        .iter()
        .chain(&structure.params)
        .map(|p| Binding {
            name: p.name.clone(),
            ident: p.ident.clone(),
            ty: p.ty.clone(),
            kind: NameKind::Param,
        })
        .collect();
    let scope = Scope {
        table,
        names,
        later: structure.fields.iter().map(|f| f.name.clone()).collect(),
    };
    let at = |key: &str, err: ExprError| {
        let err = match err {
            ExprError::LaterField(name) => ExprError::Bad(format!(
                "`{name}` is a field of {}, unknown before the struct is read; \
                 a known size uses only the params and inputs",
                structure.name
            )),
            other => other,
        };
        expr_error(ctx, &path, key, err)
    };
    let when = scope
        .check_to(&known.when.syn, &Ty::Bool)
        .map_err(|e| at("when", e))?;
    let size = scope
        .check_u64(&known.size.syn)
        .map_err(|e| at("size", e))?;
    let inputs = known
        .inputs
        .iter()
        .map(|p| Named {
            name: p.name.clone(),
            ident: p.ident.clone(),
            ty: p.ty.clone(),
            doc: p.doc.clone(),
            value: None,
        })
        .collect();
    Ok(KnownSize {
        doc: known.doc.clone(),
        source: known.source.clone(),
        inputs,
        when: checked(&known.when, when),
        size: checked(&known.size, size),
    })
}

/// Checks the expressions of field `index` in the order a reader meets the
/// keys; gives the checked field and, if it is gated, the checked version.
fn check_field(
    ctx: &Ctx,
    structure: &Struct<Parsed>,
    index: usize,
    table: &TypeTable<Parsed>,
) -> Result<(Field, Option<Checked>), SpecError> {
    let field = &structure.fields[index];
    let path = format!("struct {}, field {}", structure.name, field.name);
    let scope = field_scope(table, structure, index);
    let at = |key: &str, err: ExprError| expr_error(ctx, &path, key, err);
    let check_to = |parsed: &Parsed, key: &str, want: &Ty| -> Result<Checked, SpecError> {
        let expr = scope.check_to(&parsed.syn, want).map_err(|e| at(key, e))?;
        Ok(checked(parsed, expr))
    };
    let check_u64 = |scope: &Scope<Parsed>, parsed: &Parsed, key: &str| {
        let expr = scope.check_u64(&parsed.syn).map_err(|e| at(key, e))?;
        Ok::<_, SpecError>(checked(parsed, expr))
    };
    let mut version = None;
    if let (true, Some(parsed)) = (
        field.since.is_some() || field.until.is_some(),
        &structure.version,
    ) {
        let expr = scope.check(&parsed.syn).map_err(|e| at("version", e))?;
        if !expr.ty.is_integer() {
            return Err(at(
                "version",
                ExprError::Bad(format!("is a {}, not an integer", expr.ty.spec_name())),
            ));
        }
        version = Some(checked(parsed, expr));
    }
    let condition = field
        .condition
        .as_ref()
        .map(|c| check_to(c, "if", &Ty::Bool))
        .transpose()?;
    let default = field
        .default
        .as_ref()
        .map(|d| check_to(d, "default", &field.base_ty()))
        .transpose()?;
    let role = match &field.role {
        Role::Stored => Role::Stored,
        Role::LengthOf(target) => Role::LengthOf(target.clone()),
        Role::SizeOf(target) => Role::SizeOf(target.clone()),
        Role::Value(value) => Role::Value(check_to(value, "value", &field.base_ty())?),
    };
    let sized = field
        .sized
        .as_ref()
        .map(|s| check_u64(&scope, s, "size"))
        .transpose()?;
    // The layout's expressions and the args, in the order a reader meets the
    // keys: a length or the list an `each` walks (whose entry the args may
    // name), then the args, then the selector of a switch.
    let mut arg_scope = scope;
    let check_args = |scope: &Scope<Parsed>| -> Result<BTreeMap<String, Checked>, SpecError> {
        let param_types = table.arg_param_types(field);
        let mut args = BTreeMap::new();
        for (name, value) in &field.args {
            let key = format!("args.{name}");
            let want = param_types.get(name).cloned().unwrap_or(Ty::NoneLit);
            let expr = scope.check_to(&value.syn, &want).map_err(|e| at(&key, e))?;
            args.insert(name.clone(), checked(value, expr));
        }
        Ok(args)
    };
    let (layout, args) = match &field.layout {
        Layout::Single(ty) => (Layout::Single(ty.clone()), check_args(&arg_scope)?),
        Layout::Bytes { len } => {
            let len = match len {
                BytesLen::Size(size) => BytesLen::Size(check_u64(&arg_scope, size, "size")?),
                BytesLen::UntilEof => BytesLen::UntilEof,
                BytesLen::Terminated { byte, or_end } => BytesLen::Terminated {
                    byte: *byte,
                    or_end: *or_end,
                },
            };
            (Layout::Bytes { len }, check_args(&arg_scope)?)
        }
        Layout::List { elem, len } => {
            let len = match len {
                ListLen::Count(count) => ListLen::Count(check_u64(&arg_scope, count, "count")?),
                ListLen::UntilEof => ListLen::UntilEof,
                ListLen::Each { over, entry } => {
                    let expr = arg_scope.check(&over.syn).map_err(|e| at("each.over", e))?;
                    let binding = entry_binding(entry, &expr).map_err(|e| at("each.over", e))?;
                    arg_scope.names.push(binding);
                    ListLen::Each {
                        over: checked(over, expr),
                        entry: entry.clone(),
                    }
                }
            };
            let elem = elem.clone();
            (Layout::List { elem, len }, check_args(&arg_scope)?)
        }
        Layout::Switch(switch) => {
            let args = check_args(&arg_scope)?;
            let on = arg_scope
                .check(&switch.on.syn)
                .map_err(|e| at("type.switch_on", e))?;
            let switch = check_switch(ctx, &path, switch, on, table)?;
            (Layout::Switch(switch), args)
        }
    };
    let field = Field {
        name: field.name.clone(),
        ident: field.ident.clone(),
        doc: field.doc.clone(),
        source: field.source.clone(),
        erratum: field.erratum.clone(),
        since: field.since,
        until: field.until,
        condition,
        default,
        layout,
        role,
        args,
        max: field.max,
        sized,
        initial: field.initial.clone(),
    };
    Ok((field, version))
}

/// A switch once its selector is typed: the keys checked against the enum
/// (or integers), and for a switch over an open enum turned into the
/// variants' values, so the emitters see an integer switch.
fn check_switch(
    ctx: &Ctx,
    path: &str,
    switch: &Switch<Parsed>,
    on: Expr,
    table: &TypeTable<Parsed>,
) -> Result<Switch, SpecError> {
    let keys_ty = match &switch.open_enum {
        Some(name) => open_enum_selector(ctx, path, switch, name, &on.ty)?,
        None => on.ty.clone(),
    };
    check_switch_keys(ctx, path, switch, &keys_ty, table)?;
    let value_of = |key: &String| match &switch.open_enum {
        Some(name) => table
            .enums
            .get(name)
            .and_then(|e| e.variant(key))
            .map(|v| v.value.to_string())
            .unwrap_or_else(|| key.clone()),
        None => key.clone(),
    };
    let switch = Switch {
        rust_name: switch.rust_name.clone(),
        on: checked(&switch.on, on),
        cases: switch
            .cases
            .iter()
            .map(|c| SwitchCase {
                ty: c.ty.clone(),
                keys: c.keys.iter().map(value_of).collect(),
            })
            .collect(),
        default: switch.default.clone(),
        default_reason: switch.default_reason.clone(),
        errors: switch
            .errors
            .iter()
            .map(|(k, reason)| (value_of(k), reason.clone()))
            .collect(),
        open_enum: switch.open_enum.clone(),
    };
    Ok(switch)
}

/// A switch over an open enum looks at a plain integer and must say what
/// the values the enum does not know become (`default`): without one, a
/// newer file would be unreadable. Gives the type its keys are checked
/// against (the enum).
fn open_enum_selector(
    ctx: &Ctx,
    path: &str,
    switch: &Switch<Parsed>,
    enum_name: &str,
    on_ty: &Ty,
) -> Result<Ty, SpecError> {
    if !on_ty.is_integer() {
        return Err(expr_error(
            ctx,
            path,
            "type.enum",
            ExprError::Bad(format!(
                "the selector is a {}; a switch over an open enum looks at a plain integer",
                on_ty.spec_name()
            )),
        ));
    }
    if switch.default.is_none() {
        return Err(ctx.err(
            path,
            SpecErrorKind::OpenSwitchWithoutFallback {
                enum_name: enum_name.to_string(),
            },
        ));
    }
    Ok(Ty::Enum(enum_name.to_string()))
}

/// The case and error keys of a switch name variants of its enum, or are
/// integers when it switches on an integer.
fn check_switch_keys(
    ctx: &Ctx,
    path: &str,
    switch: &Switch<Parsed>,
    on_ty: &Ty,
    table: &TypeTable<Parsed>,
) -> Result<(), SpecError> {
    let at = |key: &str, err: ExprError| expr_error(ctx, path, key, err);
    let keys = switch
        .cases
        .iter()
        .flat_map(|c| c.keys.iter())
        .chain(switch.errors.iter().map(|(k, _)| k));
    match on_ty {
        Ty::Enum(name) => {
            let Some(spec_enum) = table.enums.get(name) else {
                return Err(at("type.switch_on", ExprError::UnknownName(name.clone())));
            };
            let keys: Vec<&String> = keys.collect();
            for key in &keys {
                if spec_enum.variant(key).is_none() {
                    return Err(ctx.err(
                        path,
                        SpecErrorKind::UnknownVariant {
                            enum_name: name.clone(),
                            variant: (*key).clone(),
                        },
                    ));
                }
            }
            let unlisted: Vec<String> = spec_enum
                .variants
                .iter()
                .filter(|v| !keys.iter().any(|k| **k == v.name))
                .map(|v| v.name.clone())
                .collect();
            if !unlisted.is_empty() && switch.default_reason.is_none() {
                return Err(ctx.err(
                    path,
                    SpecErrorKind::NonExhaustiveSwitch {
                        enum_name: name.clone(),
                        unlisted,
                        has_default: switch.default.is_some(),
                    },
                ));
            }
        }
        ty if ty.is_integer() => {
            if switch.default_reason.is_some() {
                return Err(at(
                    "type.default_reason",
                    ExprError::Bad(
                        "only a switch over an enum can leave variants to the default".into(),
                    ),
                ));
            }
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
    Ok(())
}
