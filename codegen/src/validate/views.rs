//! `view = true`: plans the zero-copy view of a struct (`emit/view.rs`
//! writes it) and refuses a layout a view cannot read without copying or
//! without knowing where each field is. A view reads every field at an
//! offset fixed by the fields before it: fixed-size fields (numbers, enums,
//! bytes of a literal size) in runs at constant offsets, and between them
//! bytes sized by an earlier field or a param, or lists counted by an
//! earlier field of numbers or of structs that have views themselves.

use crate::error::{SpecError, SpecErrorKind};
use crate::expr::{Expr, ExprKind, NameKind};
use crate::model::*;

/// Plans the view of every struct that asks for one, in `files` and in
/// `table` alike.
pub(super) fn plan_views(files: &mut [SpecFile], table: &mut TypeTable) -> Result<(), SpecError> {
    let mut plans = Vec::new();
    for file in files.iter() {
        for structure in file.structs.iter().filter(|s| s.view.is_some()) {
            let plan = plan(structure, table).map_err(|(path, why)| SpecError {
                file: file.display.clone(),
                path: format!("struct {}{path}", structure.name),
                kind: SpecErrorKind::NotViewable(why),
            })?;
            plans.push((structure.name.clone(), plan));
        }
    }
    for (name, plan) in plans {
        for file in files.iter_mut() {
            for structure in file.structs.iter_mut().filter(|s| s.name == name) {
                structure.view = Some(plan.clone());
            }
        }
        if let Some(structure) = table.structs.get_mut(&name) {
            structure.view = Some(plan);
        }
    }
    Ok(())
}

/// A refusal: the key path below the struct (`, field x`) and why.
type Refusal = (String, String);

fn plan(structure: &Struct, table: &TypeTable) -> Result<ViewPlan, Refusal> {
    let mut items: Vec<ViewItem> = Vec::new();
    let mut run: Vec<ViewScalar> = Vec::new();
    let mut run_size = 0u64;
    let mut variable_before = false;
    for (index, field) in structure.fields.iter().enumerate() {
        let at = |why: String| (format!(", field {}", field.name), why);
        if field.is_conditional() {
            return Err(at(
                "is gated or conditional; a view reads every field at a fixed place".into(),
            ));
        }
        if field.max.is_some() || field.sized.is_some() {
            return Err(at(
                "has `max` or `sized`, which a view does not check".into()
            ));
        }
        if matches!(field.role, Role::SizeOf(_)) {
            return Err(at(
                "is a size_of, which a view's writer cannot compute without serializing".into(),
            ));
        }
        let scalar = match &field.layout {
            Layout::Single(Ty::Prim(prim)) => Some(ScalarKind::Prim(*prim)),
            Layout::Single(Ty::Enum(name)) => {
                if variable_before {
                    return Err(at(
                        "is an enum after a variable-size field; a view decodes enums only at constant offsets".into(),
                    ));
                }
                let repr = table
                    .enums
                    .get(name)
                    .map(|e| e.repr)
                    .ok_or_else(|| at(format!("names the unknown enum {name}")))?;
                Some(ScalarKind::Enum {
                    name: name.clone(),
                    repr,
                })
            }
            Layout::Bytes {
                len: BytesLen::Size(size),
            } => match size_source(&size.expr, structure, index) {
                Some(Source::Literal(n)) => Some(ScalarKind::Bytes(n)),
                Some(Source::Field(len)) => {
                    push_variable(&mut items, &mut run, &mut run_size);
                    items.push(ViewItem::Bytes {
                        field: index,
                        len: ViewLen::Field(len),
                    });
                    variable_before = true;
                    None
                }
                Some(Source::Param(name)) => {
                    push_variable(&mut items, &mut run, &mut run_size);
                    items.push(ViewItem::Bytes {
                        field: index,
                        len: ViewLen::Param(name),
                    });
                    variable_before = true;
                    None
                }
                None => {
                    return Err(at(format!(
                    "has size `{}`; a view needs a literal, a param or an earlier integer field",
                    size.text
                )))
                }
            },
            Layout::List {
                elem,
                len: ListLen::Count(count),
            } => {
                let Some(Source::Field(count_field)) = size_source(&count.expr, structure, index)
                else {
                    return Err(at(format!(
                        "has count `{}`; a view's list is counted by an earlier integer field",
                        count.text
                    )));
                };
                let elem = list_elem(structure, field, elem, table).map_err(at)?;
                push_variable(&mut items, &mut run, &mut run_size);
                items.push(ViewItem::List {
                    field: index,
                    count: count_field,
                    elem,
                });
                variable_before = true;
                None
            }
            other => {
                return Err(at(format!(
                    "is a {}, which a view cannot read in place",
                    layout_name(other)
                )))
            }
        };
        if let Some(kind) = scalar {
            if let Role::Value(value) = &field.role {
                if !matches!(kind, ScalarKind::Prim(p) if p.is_integer())
                    || literal(&value.expr).is_none()
                {
                    return Err(at(
                        "has a `value` a view cannot check (only integer literals on integer fields)".into(),
                    ));
                }
            }
            let size = kind.size();
            run.push(ViewScalar {
                field: index,
                offset: run_size,
                kind,
            });
            run_size += size;
        }
    }
    if !run.is_empty() {
        items.push(ViewItem::Run {
            size: run_size,
            fields: run,
        });
    }
    Ok(ViewPlan { items })
}

/// Closes the run in progress before a variable-size field.
fn push_variable(items: &mut Vec<ViewItem>, run: &mut Vec<ViewScalar>, run_size: &mut u64) {
    if !run.is_empty() {
        items.push(ViewItem::Run {
            size: *run_size,
            fields: std::mem::take(run),
        });
    }
    *run_size = 0;
}

fn list_elem(
    structure: &Struct,
    field: &Field,
    elem: &Ty,
    table: &TypeTable,
) -> Result<ViewElem, String> {
    match elem {
        Ty::Prim(prim) => Ok(ViewElem::Prim(*prim)),
        Ty::Struct(name) => {
            let target = table
                .structs
                .get(name)
                .ok_or_else(|| format!("lists the unknown struct {name}"))?;
            if target.view.is_none() {
                return Err(format!(
                    "lists {name}, which has no view; set `view = true` on it too"
                ));
            }
            let mut args = Vec::new();
            for param in &target.params {
                let arg = field.args.get(&param.name).ok_or_else(|| {
                    format!("passes no argument for {name}'s param {}", param.name)
                })?;
                args.push(match size_source(&arg.expr, structure, usize::MAX) {
                    Some(Source::Literal(n)) => ViewArg::Literal(n),
                    Some(Source::Param(p)) => ViewArg::Param(p),
                    _ => {
                        return Err(format!(
                            "passes `{}` to {name}; a view passes only params and literals to its elements",
                            arg.text
                        ))
                    }
                });
            }
            Ok(ViewElem::Struct {
                name: name.clone(),
                args,
            })
        }
        other => Err(format!(
            "lists {}, which a view cannot read in place",
            other.spec_name()
        )),
    }
}

fn layout_name<E>(layout: &Layout<E>) -> &'static str {
    match layout {
        Layout::Single(Ty::Bool) => "bool",
        Layout::Single(Ty::Struct(_)) => "nested struct",
        Layout::Single(_) => "value of that type",
        Layout::Bytes { .. } => "bytes field without a size",
        Layout::List { .. } => "list without a count",
        Layout::Switch(_) => "switch",
    }
}

/// Where a size, count or argument comes from.
enum Source {
    Literal(u64),
    Param(String),
    /// The index of an earlier unsigned integer field.
    Field(usize),
}

fn size_source(expr: &Expr, structure: &Struct, before: usize) -> Option<Source> {
    if let Some(n) = literal(expr) {
        return Some(Source::Literal(n));
    }
    match &strip(expr).kind {
        ExprKind::Name {
            name,
            kind: NameKind::Param,
            ..
        } => structure
            .params
            .iter()
            .any(|p| {
                &p.name == name
                    && matches!(p.ty, Ty::Prim(prim) if prim.is_integer() && !prim.is_signed())
            })
            .then(|| Source::Param(name.clone())),
        ExprKind::Name {
            name,
            kind: NameKind::Field | NameKind::Temp,
            ..
        } => structure
            .fields
            .iter()
            .position(|f| &f.name == name)
            .filter(|i| *i < before)
            .filter(|i| {
                matches!(structure.fields[*i].layout,
                    Layout::Single(Ty::Prim(prim)) if prim.is_integer() && !prim.is_signed())
            })
            .map(Source::Field),
        _ => None,
    }
}

/// Casts and parentheses the checker added around a name or literal.
fn strip(expr: &Expr) -> &Expr {
    match &expr.kind {
        ExprKind::Cast { inner, .. } | ExprKind::Paren(inner) => strip(inner),
        _ => expr,
    }
}

fn literal(expr: &Expr) -> Option<u64> {
    match &strip(expr).kind {
        ExprKind::Int(int) => int.base10_parse().ok(),
        _ => None,
    }
}
