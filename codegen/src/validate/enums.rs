//! Enums: takes a raw enum, gives a checked [`Enum`] (repr, properties and
//! variants whose values, names, gates and properties are consistent).

use super::{check_gates, Ctx, Declared, GateRange, Kind};
use crate::error::{SpecError, SpecErrorKind};
use crate::expr::upper_camel;
use crate::model::*;
use crate::raw::*;
use std::collections::BTreeMap;

use super::Parsed;

pub(super) fn build_enum(
    ctx: &Ctx,
    raw: &RawEnum,
    gates: GateRange,
    declared: &Declared,
) -> Result<Enum, SpecError> {
    let path = format!("enum {}", raw.name);
    let repr = Prim::parse(&raw.repr)
        .filter(|p| p.is_integer())
        .ok_or_else(|| ctx.err(&path, SpecErrorKind::UnknownType(raw.repr.clone())))?;
    let properties = build_properties(ctx, &path, raw)?;
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
        let rust_name = upper_camel(&raw_variant.name);
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
                (PropTy::Struct, value) => {
                    check_struct_value(ctx, &format!("{vpath}, {name}"), value, declared)?;
                    true
                }
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
        unused_reason: raw.unused_reason.clone(),
        repr,
        doc: raw.doc.clone(),
        source: raw.source.clone(),
        erratum: raw.erratum.clone(),
        properties,
        variants,
    })
}

/// The declared properties with their types, sorted by name.
fn build_properties(
    ctx: &Ctx,
    path: &str,
    raw: &RawEnum,
) -> Result<Vec<(String, PropTy)>, SpecError> {
    let mut properties = Vec::new();
    for (name, ty) in &raw.properties {
        let prop_ty = match ty.as_str() {
            "bool" => PropTy::Bool,
            "str" | "string" => PropTy::Str,
            "struct" => PropTy::Struct,
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
    Ok(properties)
}

/// The shape of a `struct` property's value: `""` (none), a struct's name,
/// or `{ struct = "Name", args = { param = "16" | "input" } }`, the struct
/// declared in spec/ and each argument an integer literal or a snake_case
/// name. Whether the arguments match the struct's params is checked once the
/// structs are built ([`check_struct_properties`]).
fn check_struct_value(
    ctx: &Ctx,
    path: &str,
    value: &toml::Value,
    declared: &Declared,
) -> Result<(), SpecError> {
    let invalid = |message: String| Err(ctx.err(path, SpecErrorKind::Invalid(message)));
    let name = match value {
        toml::Value::String(name) if name.is_empty() => return Ok(()),
        toml::Value::String(name) => name,
        toml::Value::Table(table) => {
            if let Some(key) = table.keys().find(|k| *k != "struct" && *k != "args") {
                return invalid(format!(
                    "key \"{key}\" is not `struct` or `args` of a struct property"
                ));
            }
            let Some(name) = table.get("struct").and_then(|s| s.as_str()) else {
                return invalid("a struct property's table needs `struct = \"Name\"`".into());
            };
            let args = match table.get("args") {
                None => None,
                Some(toml::Value::Table(args)) => Some(args),
                Some(other) => return invalid(format!("args must be a table, not {other}")),
            };
            for (param, arg) in args.into_iter().flatten() {
                let Some(arg) = arg.as_str() else {
                    return invalid(format!("argument {param} must be a string, not {arg}"));
                };
                let is_name = arg.starts_with(|c: char| c.is_ascii_lowercase())
                    && arg
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
                if arg.parse::<u64>().is_err() && !is_name {
                    return invalid(format!(
                        "argument {param} = \"{arg}\" is neither an integer nor a snake_case name"
                    ));
                }
            }
            name
        }
        other => {
            return invalid(format!(
                "{other} is not a struct name, \"\" or {{ struct = \"Name\", args = {{ … }} }}"
            ))
        }
    };
    match declared.get(name) {
        Some((_, Kind::Struct)) => Ok(()),
        Some((_, Kind::Enum)) => invalid(format!("\"{name}\" is an enum, not a struct")),
        Some((_, Kind::Context)) => invalid(format!("\"{name}\" is a context, not a struct")),
        None => invalid(format!("\"{name}\" names no struct of spec/")),
    }
}

/// Every `struct` property's arguments against the struct it names: one
/// argument per param and no other, a name argument only for a `u64` param
/// (the generated dispatch takes every name as a `u64`).
pub(super) fn check_struct_properties(
    ctx: &Ctx,
    spec_enum: &Enum,
    structs: &BTreeMap<String, Struct<Parsed>>,
) -> Result<(), SpecError> {
    for (index, (property, prop_ty)) in spec_enum.properties.iter().enumerate() {
        if *prop_ty != PropTy::Struct {
            continue;
        }
        for variant in &spec_enum.variants {
            let Some(reference) = StructRef::parse(&variant.props[index]) else {
                continue;
            };
            let path = format!(
                "enum {}, variant {}, {property}",
                spec_enum.name, variant.name
            );
            let invalid = |message: String| Err(ctx.err(&path, SpecErrorKind::Invalid(message)));
            let Some(target) = structs.get(&reference.name) else {
                return invalid(format!("\"{}\" names no struct of spec/", reference.name));
            };
            for param in &target.params {
                let Some((_, arg)) = reference.args.iter().find(|(p, _)| *p == param.name) else {
                    return invalid(format!(
                        "{} takes param {} but no argument gives it",
                        target.name, param.name
                    ));
                };
                if arg.parse::<u64>().is_err() && param.ty != Ty::Prim(Prim::U64) {
                    return invalid(format!(
                        "argument {} = \"{arg}\" names an input, which is a u64, but {}.{} is not",
                        param.name, target.name, param.name
                    ));
                }
            }
            if let Some((extra, _)) = reference
                .args
                .iter()
                .find(|(p, _)| !target.params.iter().any(|param| param.name == *p))
            {
                return invalid(format!("{} has no param {extra}", target.name));
            }
        }
    }
    Ok(())
}
