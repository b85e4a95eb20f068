//! Enums: takes a raw enum, gives a checked [`Enum`] (repr, properties and
//! variants whose values, names, gates and properties are consistent).

use super::{check_gates, Ctx, GateRange};
use crate::error::{SpecError, SpecErrorKind};
use crate::expr::upper_camel;
use crate::model::*;
use crate::raw::*;

pub(super) fn build_enum(ctx: &Ctx, raw: &RawEnum, gates: GateRange) -> Result<Enum, SpecError> {
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
