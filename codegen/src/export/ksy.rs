//! `--emit ksy DIR`: Kaitai Struct descriptions of the file kinds.
//!
//! Every struct of the model becomes a Kaitai type when Kaitai can express
//! it: little-endian numbers, byte arrays sized by expressions over earlier
//! fields and params, `if:` for version gates and conditions, `switch-on`
//! for switch fields, `repeat: expr`/`eos` for lists. A defaulted
//! conditional field `f` also gets an instance `f_or_default`. A `bool` is a
//! `u1` (expressions compare it with 0). An `Option<T>` param `p` travels
//! as `p` and `p_present`.
//!
//! Each generic-tile payload without params is a file kind: one
//! `tiledb_<stem>.ksy` with the generic tile header, the tile framing and,
//! for an unfiltered or GZIP-only single-chunk tile, the payload parsed
//! through (`process: zlib`). `tiledb_fragment_metadata.ksy` covers what
//! needs no schema: the footer length, the generic tiles before the footer
//! (headers and chunk framing) and the footer's first fields.
//! `UNSUPPORTED.md` lists what Kaitai cannot express, with why, and
//! `manifest.json` tells a dumper which Kaitai attribute holds which
//! field of the Rust structs (their serde shape).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::expr::{BinOp, ExprKind, NameKind};
use crate::model::*;

/// The YAML we write: block maps and lists, scalars quoted as JSON strings.
#[derive(Debug, Clone)]
enum Y {
    Str(String),
    Raw(String),
    List(Vec<Y>),
    Map(Vec<(String, Y)>),
}

fn s(text: impl Into<String>) -> Y {
    Y::Str(text.into())
}

fn raw(text: impl ToString) -> Y {
    Y::Raw(text.to_string())
}

fn write_yaml(out: &mut String, y: &Y, indent: usize) {
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

fn write_entry(out: &mut String, key: &str, value: &Y, indent: usize) {
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

fn scalar(y: &Y) -> String {
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

/// `ArraySchema` → `array_schema`, `RTree` → `r_tree`.
pub fn snake(name: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_ascii_uppercase();
            if i > 0 && (prev_lower || (prev_upper && next_lower)) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(*c);
        }
    }
    out
}

/// Names Kaitai's targets cannot take as identifiers.
fn safe_id(name: &str) -> String {
    const RESERVED: &[&str] = &[
        "and", "or", "not", "in", "is", "if", "else", "for", "while", "def", "class", "return",
        "import", "from", "as", "with", "pass", "lambda", "global", "none", "true", "false", "del",
        "try", "except", "finally", "raise", "yield", "assert", "break", "continue", "elif",
        "nonlocal", "async", "await", "to_i", "size", "io", "root", "parent",
    ];
    let lower = name.to_ascii_lowercase();
    let lower = if lower.starts_with(|c: char| c.is_ascii_digit()) {
        format!("v{lower}")
    } else {
        lower
    };
    if RESERVED.contains(&lower.as_str()) {
        format!("{lower}_")
    } else {
        lower
    }
}

fn prim_ksy(p: Prim) -> &'static str {
    match p {
        Prim::U8 => "u1",
        Prim::U16 => "u2",
        Prim::U32 => "u4",
        Prim::U64 => "u8",
        Prim::I8 => "s1",
        Prim::I16 => "s2",
        Prim::I32 => "s4",
        Prim::I64 => "s8",
        Prim::F32 => "f4",
        Prim::F64 => "f8",
    }
}

type Why = String;

/// Named YAML entries (Kaitai types or enums).
type Entries = Vec<(String, Y)>;

struct Ctx<'a> {
    spec: &'a Spec,
    table: &'a TypeTable,
    /// Struct → why Kaitai cannot express it (absent: it can).
    unsupported: BTreeMap<String, Why>,
}

impl<'a> Ctx<'a> {
    fn new(spec: &'a Spec, table: &'a TypeTable) -> Self {
        let mut cx = Ctx {
            spec,
            table,
            unsupported: BTreeMap::new(),
        };
        // Iterate to a fixed point: a struct is unsupported when it cannot be
        // rendered or uses an unsupported struct.
        loop {
            let mut changed = false;
            for structure in table.structs.values() {
                if cx.unsupported.contains_key(&structure.name) {
                    continue;
                }
                if let Err(why) = cx.render_struct(structure) {
                    cx.unsupported.insert(structure.name.clone(), why);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        cx
    }

    fn enum_of(&self, name: &str) -> Result<&'a Enum, Why> {
        self.table
            .enums
            .get(name)
            .ok_or_else(|| format!("unknown enum {name}"))
    }

    fn struct_of(&self, name: &str) -> Result<&'a Struct, Why> {
        self.table
            .structs
            .get(name)
            .ok_or_else(|| format!("unknown struct {name}"))
    }

    fn variant_id(&self, enum_name: &str, rust_variant: &str) -> Result<String, Why> {
        let e = self.enum_of(enum_name)?;
        let v = e
            .variants
            .iter()
            .find(|v| v.rust_name == rust_variant || v.name == rust_variant)
            .ok_or_else(|| format!("unknown variant {enum_name}::{rust_variant}"))?;
        Ok(format!("{}::{}", snake(enum_name), safe_id(&v.name)))
    }

    /// The Kaitai expression for when `field` is present (None: always).
    fn presence(&self, st: &Struct, field: &Field) -> Result<Option<String>, Why> {
        let mut parts = Vec::new();
        if field.since.is_some() || field.until.is_some() {
            let version = st.version.as_ref().ok_or_else(|| {
                format!(
                    "{}.{} is gated but the struct has no version",
                    st.name, field.name
                )
            })?;
            let v = self.expr(st, &version.expr)?;
            if let Some(since) = field.since {
                parts.push(format!("{v} >= {since}"));
            }
            if let Some(until) = field.until {
                parts.push(format!("{v} < {until}"));
            }
        }
        if let Some(cond) = &field.condition {
            parts.push(format!("({})", self.expr(st, &cond.expr)?));
        }
        Ok(if parts.is_empty() {
            None
        } else {
            Some(parts.join(" and "))
        })
    }

    fn field_named(&self, st: &'a Struct, name: &str) -> Option<&'a Field> {
        st.fields.iter().find(|f| f.name == name || f.ident == name)
    }

    /// A name as a value: bools compare with 0, defaulted fields go through their instance.
    fn name_ref(&self, st: &Struct, name: &str, kind: NameKind) -> Result<String, Why> {
        match kind {
            NameKind::Param => Ok(safe_field(name)),
            NameKind::Field | NameKind::Temp => {
                let field = self
                    .field_named(self.struct_of(&st.name)?, name)
                    .ok_or_else(|| format!("unknown field {name} in {}", st.name))?;
                if field.default.is_some() && field.is_conditional() {
                    return Ok(format!("{}_or_default", safe_field(&field.name)));
                }
                if matches!(field.layout, Layout::Single(Ty::Bool)) {
                    return Ok(format!("({} != 0)", safe_field(&field.name)));
                }
                Ok(safe_field(&field.name))
            }
            NameKind::Entry | NameKind::Source => Err(format!(
                "{} uses `{name}`, an entry of a list of schema-derived shapes",
                st.name
            )),
        }
    }

    /// Translates a checked expression of `st` into Kaitai's expression language.
    fn expr(&self, st: &Struct, e: &crate::expr::Expr) -> Result<String, Why> {
        Ok(match &e.kind {
            ExprKind::Int(lit) => lit.base10_digits().to_string(),
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::ByteStr(_) => {
                return Err(format!(
                    "{} compares bytes with a literal (no such operation in Kaitai)",
                    st.name
                ))
            }
            ExprKind::None => return Err(format!("{} uses `None` in an expression", st.name)),
            ExprKind::Paren(inner) => format!("({})", self.expr(st, inner)?),
            ExprKind::Name { name, kind, .. } => self.name_ref(st, name, *kind)?,
            ExprKind::Variant { enum_name, variant } => self.variant_id(enum_name, variant)?,
            ExprKind::Not(inner) => format!("not ({})", self.expr(st, inner)?),
            ExprKind::Neg { inner, .. } => format!("-({})", self.expr(st, inner)?),
            ExprKind::If {
                cond,
                then,
                otherwise,
            } => format!(
                "({} ? {} : {})",
                self.expr(st, cond)?,
                self.expr(st, then)?,
                self.expr(st, otherwise)?
            ),
            ExprKind::Binary { op, left, right }
            | ExprKind::Arith {
                op, left, right, ..
            } => {
                let op = match op {
                    BinOp::And => "and",
                    BinOp::Or => "or",
                    BinOp::Eq => "==",
                    BinOp::Ne => "!=",
                    BinOp::Lt => "<",
                    BinOp::Le => "<=",
                    BinOp::Gt => ">",
                    BinOp::Ge => ">=",
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    BinOp::Mul => "*",
                    BinOp::Div => "/",
                    BinOp::Rem => "%",
                };
                format!("({} {op} {})", self.expr(st, left)?, self.expr(st, right)?)
            }
            ExprKind::Len(inner) => {
                let base = self.expr(st, inner)?;
                match &inner.ty {
                    Ty::Bytes => format!("{base}.length"),
                    _ => format!("{base}.size"),
                }
            }
            ExprKind::Method {
                receiver,
                method,
                args,
            } => self.method(st, receiver, method, args)?,
            ExprKind::Member { base, member } => {
                let Ty::Struct(base_struct) = &base.ty else {
                    return Err(format!("{} reads a member of a non-struct", st.name));
                };
                let target = self.struct_of(base_struct)?;
                let field = self
                    .field_named(target, member)
                    .ok_or_else(|| format!("unknown member {member} of {base_struct}"))?;
                let base = self.expr(st, base)?;
                if field.default.is_some() && field.is_conditional() {
                    format!("{base}.{}_or_default", safe_field(&field.name))
                } else if matches!(field.layout, Layout::Single(Ty::Bool)) {
                    format!("({base}.{} != 0)", safe_field(&field.name))
                } else {
                    format!("{base}.{}", safe_field(&field.name))
                }
            }
            ExprKind::Cast { inner, .. } | ExprKind::Clone(inner) | ExprKind::Some(inner) => {
                self.expr(st, inner)?
            }
            ExprKind::DeriveList { .. } => {
                return Err(format!(
                    "{} derives schema shapes from a list (no such operation in Kaitai)",
                    st.name
                ))
            }
        })
    }

    /// `present` of an optional value: a field's presence or a param's `_present`.
    fn option_presence(&self, st: &Struct, e: &crate::expr::Expr) -> Result<String, Why> {
        match &e.kind {
            ExprKind::Name {
                name,
                kind: NameKind::Param,
                ..
            } => Ok(format!("{}_present", safe_field(name))),
            ExprKind::Name { name, .. } => {
                let field = self
                    .field_named(self.struct_of(&st.name)?, name)
                    .ok_or_else(|| format!("unknown field {name}"))?;
                Ok(self.presence(st, field)?.unwrap_or_else(|| "true".into()))
            }
            ExprKind::Some(_) => Ok("true".into()),
            ExprKind::None => Ok("false".into()),
            ExprKind::Paren(inner) | ExprKind::Clone(inner) => self.option_presence(st, inner),
            _ => Err(format!(
                "{} uses an optional value Kaitai cannot test",
                st.name
            )),
        }
    }

    fn method(
        &self,
        st: &Struct,
        receiver: &crate::expr::Expr,
        method: &str,
        args: &[crate::expr::Expr],
    ) -> Result<String, Why> {
        match method {
            "value" => return Ok(format!("{}.to_i", self.expr(st, receiver)?)),
            "is_some" => return Ok(format!("({})", self.option_presence(st, receiver)?)),
            "is_none" => return Ok(format!("not ({})", self.option_presence(st, receiver)?)),
            "unwrap_or" => {
                let present = self.option_presence(st, receiver)?;
                let fallback = self.expr(st, &args[0])?;
                return Ok(format!(
                    "({present} ? {} : {fallback})",
                    self.expr(st, receiver)?
                ));
            }
            _ => {}
        }
        let enum_name = match &receiver.ty {
            Ty::Enum(name) => name.clone(),
            Ty::Option(inner) => match inner.as_ref() {
                Ty::Enum(name) => name.clone(),
                _ => return Err(format!("{} calls `{method}` (not in Kaitai)", st.name)),
            },
            _ => return Err(format!("{} calls `{method}` (not in Kaitai)", st.name)),
        };
        let e = self.enum_of(&enum_name)?;
        let index = e
            .properties
            .iter()
            .position(|(p, _)| p == method)
            .ok_or_else(|| {
                format!(
                    "{} calls `{method}` on {enum_name} (not in Kaitai)",
                    st.name
                )
            })?;
        let value = self.expr(st, receiver)?;
        // A property becomes a lookup: variants grouped by their value.
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for variant in &e.variants {
            let prop = match &variant.props[index] {
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                other => {
                    return Err(format!(
                        "{} uses {enum_name}.{method}, a {} property",
                        st.name,
                        other.type_str()
                    ))
                }
            };
            let id = format!("{}::{}", snake(&enum_name), safe_id(&variant.name));
            match groups.iter_mut().find(|(v, _)| *v == prop) {
                Some((_, ids)) => ids.push(id),
                None => groups.push((prop, vec![id])),
            }
        }
        if e.properties[index].1 == PropTy::Bool {
            // A bool property: the variants for which it holds.
            let ids = groups
                .iter()
                .find(|(prop, _)| prop == "true")
                .map(|(_, ids)| ids.clone())
                .unwrap_or_default();
            if ids.is_empty() {
                return Ok("false".into());
            }
            let test: Vec<String> = ids.iter().map(|id| format!("{value} == {id}")).collect();
            return Ok(format!("({})", test.join(" or ")));
        }
        let fallback = match e.properties[index].1 {
            PropTy::Bool => "false".to_string(),
            _ => "0".to_string(),
        };
        let mut text = fallback;
        for (prop, ids) in groups.iter().rev() {
            let test: Vec<String> = ids.iter().map(|id| format!("{value} == {id}")).collect();
            text = format!("({} ? {prop} : {text})", test.join(" or "));
        }
        Ok(text)
    }

    /// The `type:` of a struct-typed value, with its arguments.
    fn struct_call(&self, st: &Struct, field: &Field, target: &str) -> Result<String, Why> {
        if let Some(why) = self.unsupported.get(target) {
            return Err(format!("{} holds a {target}: {why}", st.name));
        }
        let target_struct = self.struct_of(target)?;
        let mut args = Vec::new();
        for param in &target_struct.params {
            let arg = field.args.get(&param.name).ok_or_else(|| {
                format!(
                    "{}.{} passes no `{}` to {target}",
                    st.name, field.name, param.name
                )
            })?;
            if matches!(param.ty, Ty::Option(_)) {
                let present = self.option_presence(st, &arg.expr)?;
                // An absent field is no attribute at all in some targets: pass
                // a placeholder of the same type where it is absent.
                let Ty::Option(inner) = &param.ty else {
                    unreachable!("matched an Option above")
                };
                let placeholder = match inner.as_ref() {
                    Ty::Enum(name) => {
                        let first = self
                            .enum_of(name)?
                            .variants
                            .first()
                            .ok_or_else(|| format!("{name} has no variants"))?;
                        format!("{}::{}", snake(name), safe_id(&first.name))
                    }
                    Ty::Bool => "false".to_string(),
                    _ => "0".to_string(),
                };
                let value = match &arg.expr.kind {
                    ExprKind::None => placeholder,
                    _ => format!(
                        "({present} ? {} : {placeholder})",
                        self.expr(st, &arg.expr)?
                    ),
                };
                args.push(value);
                args.push(present);
            } else {
                args.push(self.expr(st, &arg.expr)?);
            }
        }
        Ok(if args.is_empty() {
            snake(target)
        } else {
            format!("{}({})", snake(target), args.join(", "))
        })
    }

    fn param_ksy(&self, st: &Struct, param: &Named) -> Result<Vec<Y>, Why> {
        let ty = match &param.ty {
            Ty::Option(inner) => inner.as_ref().clone(),
            other => other.clone(),
        };
        let mut entry = vec![("id".to_string(), s(safe_field(&param.name)))];
        match &ty {
            Ty::Prim(p) => entry.push(("type".into(), s(prim_ksy(*p)))),
            Ty::Bool => entry.push(("type".into(), s("bool"))),
            Ty::Enum(name) => {
                let e = self.enum_of(name)?;
                entry.push(("type".into(), s(prim_ksy(e.repr))));
                entry.push(("enum".into(), s(snake(name))));
            }
            other => {
                return Err(format!(
                    "{} takes `{}` of type {}, computed from the array schema (another file)",
                    st.name,
                    param.name,
                    other.spec_name()
                ))
            }
        }
        if let Some(doc) = &param.doc {
            entry.push(("doc".into(), s(doc.clone())));
        }
        let mut out = vec![Y::Map(entry)];
        if matches!(param.ty, Ty::Option(_)) {
            out.push(Y::Map(vec![
                (
                    "id".into(),
                    s(format!("{}_present", safe_field(&param.name))),
                ),
                ("type".into(), s("bool")),
                (
                    "doc".into(),
                    s(format!("whether `{}` is given", param.name)),
                ),
            ]));
        }
        Ok(out)
    }

    /// The Kaitai type of one struct, or why it cannot be one.
    fn render_struct(&self, st: &Struct) -> Result<Y, Why> {
        let mut params = Vec::new();
        for param in &st.params {
            params.extend(self.param_ksy(st, param)?);
        }
        let mut seq = Vec::new();
        let mut instances = Vec::new();
        for field in &st.fields {
            let id = safe_field(&field.name);
            let mut entry = vec![("id".to_string(), s(id.clone()))];
            match &field.layout {
                Layout::Single(ty) => {
                    self.single_type(st, field, ty, &mut entry)?;
                    if let Some(size) = &field.sized {
                        entry.push(("size".into(), s(self.expr(st, &size.expr)?)));
                    }
                }
                Layout::Bytes { len } => match len {
                    BytesLen::Size(e) => entry.push(("size".into(), s(self.expr(st, &e.expr)?))),
                    BytesLen::UntilEof => entry.push(("size-eos".into(), raw("true"))),
                    BytesLen::Terminated(b) => entry.push(("terminator".into(), raw(b))),
                },
                Layout::List { elem, len } => {
                    self.single_type(st, field, elem, &mut entry)?;
                    match len {
                        ListLen::Count(e) => {
                            entry.push(("repeat".into(), s("expr")));
                            entry.push(("repeat-expr".into(), s(self.expr(st, &e.expr)?)));
                        }
                        ListLen::UntilEof => entry.push(("repeat".into(), s("eos"))),
                        ListLen::Each { over, .. } => {
                            return Err(format!(
                                "{}.{} has one element per entry of `{}`, shapes computed from the array schema (another file)",
                                st.name, field.name, over.text
                            ))
                        }
                    }
                }
                Layout::Switch(switch) => {
                    let mut cases = Vec::new();
                    let on_enum = match &switch.on.expr.ty {
                        Ty::Enum(name) => Some(name.clone()),
                        _ => None,
                    };
                    for case in &switch.cases {
                        let call = self.struct_call(st, field, &case.ty)?;
                        for key in &case.keys {
                            let key = match &on_enum {
                                Some(e) => self.variant_id(e, key)?,
                                None => key.clone(),
                            };
                            cases.push((key, s(call.clone())));
                        }
                    }
                    if let Some(default) = &switch.default {
                        cases.push(("_".into(), s(self.struct_call(st, field, default)?)));
                    }
                    entry.push((
                        "type".into(),
                        Y::Map(vec![
                            ("switch-on".into(), s(self.expr(st, &switch.on.expr)?)),
                            ("cases".into(), Y::Map(cases)),
                        ]),
                    ));
                    if let Some(size) = &field.sized {
                        entry.push(("size".into(), s(self.expr(st, &size.expr)?)));
                    }
                }
            }
            if let Some(presence) = self.presence(st, field)? {
                entry.push(("if".into(), s(presence.clone())));
                if let Some(default) = &field.default {
                    let value = if matches!(field.layout, Layout::Single(Ty::Bool)) {
                        format!("({id} != 0)")
                    } else {
                        id.clone()
                    };
                    instances.push((
                        format!("{id}_or_default"),
                        Y::Map(vec![
                            (
                                "value".into(),
                                s(format!(
                                    "({presence} ? {value} : {})",
                                    self.expr(st, &default.expr)?
                                )),
                            ),
                            (
                                "doc".into(),
                                s(format!(
                                    "`{}`, or `{}` where it is absent",
                                    field.name, default.text
                                )),
                            ),
                        ]),
                    ));
                }
            }
            if let Role::Value(value) = &field.role {
                entry.push(("valid".into(), s(self.expr(st, &value.expr)?)));
            }
            if let Some(doc) = &field.doc {
                entry.push(("doc".into(), s(doc.clone())));
            }
            seq.push(Y::Map(entry));
        }
        let mut out = Vec::new();
        if let Some(doc) = &st.doc {
            out.push(("doc".to_string(), s(doc.clone())));
        }
        if !params.is_empty() {
            out.push(("params".into(), Y::List(params)));
        }
        out.push(("seq".into(), Y::List(seq)));
        if !instances.is_empty() {
            out.push(("instances".into(), Y::Map(instances)));
        }
        Ok(Y::Map(out))
    }

    fn single_type(
        &self,
        st: &Struct,
        field: &Field,
        ty: &Ty,
        entry: &mut Vec<(String, Y)>,
    ) -> Result<(), Why> {
        match ty {
            Ty::Prim(p) => entry.push(("type".into(), s(prim_ksy(*p)))),
            Ty::Bool => entry.push(("type".into(), s("u1"))),
            Ty::Enum(name) => {
                let e = self.enum_of(name)?;
                entry.push(("type".into(), s(prim_ksy(e.repr))));
                entry.push(("enum".into(), s(snake(name))));
            }
            Ty::Struct(name) => entry.push(("type".into(), s(self.struct_call(st, field, name)?))),
            other => {
                return Err(format!(
                    "{}.{} has type {} (not a layout Kaitai reads)",
                    st.name,
                    field.name,
                    other.spec_name()
                ))
            }
        }
        Ok(())
    }

    fn render_enum(&self, e: &Enum) -> Y {
        let mut entries = Vec::new();
        for v in &e.variants {
            let mut item = vec![("id".to_string(), s(safe_id(&v.name)))];
            if let Some(doc) = &v.doc {
                item.push(("doc".into(), s(doc.clone())));
            }
            entries.push((v.value.to_string(), Y::Map(item)));
        }
        Y::Map(entries)
    }

    /// The manifest entry of a value of type `ty` (see module docs).
    fn value_manifest(&self, ty: &Ty) -> Value {
        match ty {
            Ty::Prim(p) if p.is_integer() => json!({"kind": "int"}),
            Ty::Prim(_) => json!({"kind": "float"}),
            Ty::Bool => json!({"kind": "bool"}),
            Ty::Enum(name) => {
                let names: BTreeMap<String, String> = self
                    .table
                    .enums
                    .get(name)
                    .map(|e| {
                        e.variants
                            .iter()
                            .map(|v| (v.value.to_string(), v.rust_name.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                json!({"kind": "enum", "names": names})
            }
            Ty::Struct(name) => json!({"kind": "struct", "type": snake(name)}),
            Ty::Bytes => json!({"kind": "bytes"}),
            Ty::List(inner) => json!({"kind": "list", "elem": self.value_manifest(inner)}),
            _ => json!({"kind": "unknown"}),
        }
    }

    /// Per Kaitai type: its Rust struct and, per stored field, the attribute and kind.
    fn manifest(&self) -> Value {
        let mut types = serde_json::Map::new();
        for st in self.table.structs.values() {
            if self.unsupported.contains_key(&st.name) {
                continue;
            }
            let mut fields = Vec::new();
            for field in st.fields.iter().filter(|f| f.is_stored()) {
                let attr = if field.default.is_some() && field.is_conditional() {
                    format!("{}_or_default", safe_field(&field.name))
                } else {
                    safe_field(&field.name)
                };
                let value = match &field.layout {
                    Layout::Switch(switch) => {
                        let cases: BTreeMap<String, String> = switch
                            .types()
                            .map(|t| (python_class(t), t.clone()))
                            .collect();
                        json!({"kind": "switch", "cases": cases})
                    }
                    Layout::Single(Ty::Bool)
                        if field.default.is_some() && field.is_conditional() =>
                    {
                        json!({"kind": "bool"})
                    }
                    _ => self.value_manifest(&field.base_ty()),
                };
                fields.push(json!({"key": field.ident, "attr": attr, "value": value}));
            }
            types.insert(
                snake(&st.name),
                json!({"struct": st.name, "class": python_class(&st.name), "fields": fields}),
            );
        }
        json!({"types": types})
    }
}

/// Field ids: lower snake case already; keep clear of Kaitai's and Python's words.
fn safe_field(name: &str) -> String {
    safe_id(name)
}

/// The class name Kaitai's Python target gives a type.
fn python_class(struct_name: &str) -> String {
    snake(struct_name)
        .split('_')
        .map(|part| {
            let mut c = part.chars();
            match c.next() {
                Some(first) => first.to_uppercase().collect::<String>() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// A file kind: a paramless generic-tile payload.
fn is_file_kind(st: &Struct) -> bool {
    st.container.as_deref() == Some("generic_tile") && st.params.is_empty()
}

impl Ctx<'_> {
    /// Every supported struct reachable from `roots`, and every enum, as Kaitai types.
    fn types_for(&self, roots: &[&str]) -> (Entries, Entries) {
        let mut seen: Vec<String> = Vec::new();
        let mut stack: Vec<String> = roots.iter().map(|r| r.to_string()).collect();
        while let Some(name) = stack.pop() {
            if seen.contains(&name) || self.unsupported.contains_key(&name) {
                continue;
            }
            let Some(st) = self.table.structs.get(&name) else {
                continue;
            };
            seen.push(name.clone());
            for field in &st.fields {
                stack.extend(field.arg_targets().into_iter().cloned());
            }
        }
        seen.sort();
        let types = seen
            .iter()
            .filter_map(|name| {
                let st = &self.table.structs[name];
                self.render_struct(st).ok().map(|y| (snake(name), y))
            })
            .collect();
        let enums = self
            .table
            .enums
            .values()
            .map(|e| (snake(&e.name), self.render_enum(e)))
            .collect();
        (types, enums)
    }

    fn meta(&self, id: &str, title: &str) -> Y {
        Y::Map(vec![
            ("id".into(), s(id)),
            ("title".into(), s(title)),
            ("file-extension".into(), s("tdb")),
            ("endian".into(), s("le")),
            (
                "xref".into(),
                Y::Map(vec![(
                    "tiledb-format".into(),
                    s(format!("format version {}", self.spec.current)),
                )]),
            ),
        ])
    }

    /// The shared types of every generic-tile kind: header with pipeline, chunk framing.
    fn generic_tile_types(&self, payload: Option<&str>) -> Vec<(String, Y)> {
        let chunk_seq = |payload_field: Y| {
            Y::List(vec![
                Y::Map(vec![("id".into(), s("orig_len")), ("type".into(), s("u4"))]),
                Y::Map(vec![
                    ("id".into(), s("filtered_len")),
                    ("type".into(), s("u4")),
                ]),
                Y::Map(vec![("id".into(), s("md_len")), ("type".into(), s("u4"))]),
                payload_field,
            ])
        };
        let mut types = Vec::new();
        if let Some(payload) = payload {
            // GZIP-only pipeline: the chunk metadata, then one zlib stream.
            types.push((
                "gzip_chunk".to_string(),
                Y::Map(vec![
                    ("doc".into(), s("The single chunk of a generic tile whose pipeline is GZIP alone: the compressor's part table, then one zlib stream that inflates to the payload.")),
                    (
                        "seq".into(),
                        match chunk_seq(Y::Map(vec![
                            ("id".into(), s("metadata")),
                            ("type".into(), s("compression_chunk_metadata")),
                            ("size".into(), s("md_len")),
                        ])) {
                            Y::List(mut items) => {
                                items.push(Y::Map(vec![
                                    ("id".into(), s("payload")),
                                    ("size".into(), s("filtered_len")),
                                    ("process".into(), s("zlib")),
                                    ("type".into(), s(payload)),
                                    ("if".into(), s("metadata.n_md_parts == 0 and metadata.n_data_parts == 1")),
                                ]));
                                items.push(Y::Map(vec![
                                    ("id".into(), s("data")),
                                    ("size".into(), s("filtered_len")),
                                    ("if".into(), s("not (metadata.n_md_parts == 0 and metadata.n_data_parts == 1)")),
                                ]));
                                Y::List(items)
                            }
                            other => other,
                        },
                    ),
                ]),
            ));
            types.push((
                "plain_chunk".to_string(),
                Y::Map(vec![
                    ("doc".into(), s("The single chunk of a generic tile with an empty pipeline: the payload as is.")),
                    (
                        "seq".into(),
                        match chunk_seq(Y::Map(vec![("id".into(), s("metadata")), ("size".into(), s("md_len"))])) {
                            Y::List(mut items) => {
                                items.push(Y::Map(vec![
                                    ("id".into(), s("payload")),
                                    ("size".into(), s("filtered_len")),
                                    ("type".into(), s(payload)),
                                ]));
                                Y::List(items)
                            }
                            other => other,
                        },
                    ),
                ]),
            ));
        }
        types
    }

    /// The `.ksy` of a generic-tile file kind whose payload is `st`.
    fn render_kind(&self, st: &Struct) -> String {
        let payload = snake(&st.name);
        let id = format!("tiledb_{payload}");
        let mut roots = vec!["GenericTileHeader", "TileChunk", "CompressionChunkMetadata"];
        roots.push(&st.name);
        let (mut types, enums) = self.types_for(&roots);
        types.extend(self.generic_tile_types(Some(&payload)));
        types.sort_by(|a, b| a.0.cmp(&b.0));
        let single = "n_chunks == 1";
        let root = Y::Map(vec![
            ("meta".into(), self.meta(&id, &format!("TileDB {} (generic tile)", st.name))),
            (
                "doc".into(),
                s(format!(
                    "{}\n\nA generic tile: the header, then the filtered tile. The payload is parsed through when the tile has one chunk and its pipeline is empty or GZIP alone (what TileDB writes without encryption); otherwise `chunks` holds the framing and the payload stays filtered.",
                    st.doc.clone().unwrap_or_default()
                )),
            ),
            (
                "seq".into(),
                Y::List(vec![
                    Y::Map(vec![("id".into(), s("header")), ("type".into(), s("generic_tile_header"))]),
                    Y::Map(vec![("id".into(), s("n_chunks")), ("type".into(), s("u8"))]),
                    Y::Map(vec![
                        ("id".into(), s("gzip_chunk")),
                        ("type".into(), s("gzip_chunk")),
                        ("if".into(), s(format!("is_gzip and {single}"))),
                    ]),
                    Y::Map(vec![
                        ("id".into(), s("plain_chunk")),
                        ("type".into(), s("plain_chunk")),
                        ("if".into(), s(format!("is_plain and {single}"))),
                    ]),
                    Y::Map(vec![
                        ("id".into(), s("chunks")),
                        ("type".into(), s("tile_chunk")),
                        ("repeat".into(), s("expr")),
                        ("repeat-expr".into(), s("n_chunks")),
                        ("if".into(), s(format!("not ((is_gzip or is_plain) and {single})"))),
                    ]),
                ]),
            ),
            (
                "instances".into(),
                Y::Map(vec![
                    (
                        "is_plain".into(),
                        Y::Map(vec![("value".into(), s("header.pipeline.n_filters == 0"))]),
                    ),
                    (
                        "is_gzip".into(),
                        Y::Map(vec![(
                            "value".into(),
                            s("header.pipeline.n_filters == 1 and header.pipeline.filters[0].filter_type == filter_type::gzip"),
                        )]),
                    ),
                ]),
            ),
            ("types".into(), Y::Map(types)),
            ("enums".into(), Y::Map(enums)),
        ]);
        let mut out = format!(
            "# @generated by tiledb-codegen --emit ksy from spec/ — do not edit.\n# The payload `{}` of a generic tile.\n",
            st.name
        );
        write_yaml(&mut out, &root, 0);
        out
    }

    /// `tiledb_fragment_metadata.ksy`: what needs no schema.
    fn render_fragment_metadata(&self) -> Option<String> {
        if self.unsupported.contains_key("FragmentFooterHead") {
            return None;
        }
        let roots = ["GenericTileHeader", "TileChunk", "FragmentFooterHead"];
        let (mut types, enums) = self.types_for(&roots);
        types.push((
            "generic_tile".into(),
            Y::Map(vec![
                (
                    "doc".into(),
                    s("One generic tile: its header and filtered tile (payload left filtered)."),
                ),
                (
                    "seq".into(),
                    Y::List(vec![
                        Y::Map(vec![
                            ("id".into(), s("header")),
                            ("type".into(), s("generic_tile_header")),
                        ]),
                        Y::Map(vec![("id".into(), s("n_chunks")), ("type".into(), s("u8"))]),
                        Y::Map(vec![
                            ("id".into(), s("chunks")),
                            ("type".into(), s("tile_chunk")),
                            ("repeat".into(), s("expr")),
                            ("repeat-expr".into(), s("n_chunks")),
                        ]),
                    ]),
                ),
            ]),
        ));
        types.push((
            "generic_tiles".into(),
            Y::Map(vec![(
                "seq".into(),
                Y::List(vec![Y::Map(vec![
                    ("id".into(), s("tiles")),
                    ("type".into(), s("generic_tile")),
                    ("repeat".into(), s("eos")),
                ])]),
            )]),
        ));
        types.sort_by(|a, b| a.0.cmp(&b.0));
        let root = Y::Map(vec![
            ("meta".into(), self.meta("tiledb_fragment_metadata", "TileDB fragment metadata (__fragment_metadata.tdb), format version 10 and later")),
            (
                "doc".into(),
                s("A fragment metadata file from format version 10 on: generic tiles (R-tree, tile offsets, sizes, mins, maxes, sums, null counts, ...), then the footer, then the footer's length (u64). The payloads of the tiles and the footer past its first fields need the array schema (another file); see UNSUPPORTED.md."),
            ),
            (
                "instances".into(),
                Y::Map(vec![
                    (
                        "footer_len".into(),
                        Y::Map(vec![("pos".into(), s("_io.size - 8")), ("type".into(), s("u8"))]),
                    ),
                    (
                        "footer_start".into(),
                        Y::Map(vec![("value".into(), s("_io.size - 8 - footer_len"))]),
                    ),
                    (
                        "tiles".into(),
                        Y::Map(vec![
                            ("pos".into(), s("0")),
                            ("size".into(), s("footer_start")),
                            ("type".into(), s("generic_tiles")),
                        ]),
                    ),
                    (
                        "footer_head".into(),
                        Y::Map(vec![
                            ("pos".into(), s("footer_start")),
                            ("type".into(), s("fragment_footer_head")),
                        ]),
                    ),
                ]),
            ),
            ("types".into(), Y::Map(types)),
            ("enums".into(), Y::Map(enums)),
        ]);
        let mut out =
            "# @generated by tiledb-codegen --emit ksy from spec/ — do not edit.\n".to_string();
        write_yaml(&mut out, &root, 0);
        Some(out)
    }

    fn render_unsupported(&self, kinds: &[String]) -> String {
        let mut out = String::from(
            "# What the Kaitai Struct export cannot express\n\n\
             Generated by `cargo run -p tiledb-codegen -- --emit ksy DIR`; do not edit.\n\n\
             ## File kinds written\n\n",
        );
        for kind in kinds {
            let _ = writeln!(out, "- `{kind}`");
        }
        out.push_str(
            "\n## Generic tiles\n\n\
             Every `.ksy` of a generic-tile kind parses the header and the chunk framing of any tile. \
             The payload is parsed through only when the tile has one chunk and its pipeline is empty \
             or GZIP alone (`process: zlib`), which is what TileDB writes for unencrypted metadata \
             below 64 KiB. Otherwise (several chunks, AES-256-GCM encryption, another compressor) \
             the chunks stay as filtered bytes: Kaitai cannot concatenate the unfiltered chunks into \
             one stream, and has no AES-GCM or zstd/lz4/bzip2 process.\n\n\
             ## Fragment metadata\n\n\
             `tiledb_fragment_metadata.ksy` reads the footer length (last 8 bytes, always present from \
             format version 10), the generic tiles before the footer (header and framing) and the \
             footer's first fields (`FragmentFooterHead`). Which tile holds what, and the rest of the \
             footer, follow from the array schema of the fragment, which is in another file.\n\n\
             ## Files that are not binary layouts\n\n\
             The commit markers (`.wrt`, `.ok`) are empty files, and `.con`, `.ign` and `.vac` are \
             text (spec/text_files.toml): there is nothing for Kaitai to parse.\n\n\
             ## Structures Kaitai cannot express\n\n| structure | why |\n| --- | --- |\n",
        );
        for (name, why) in &self.unsupported {
            let _ = writeln!(out, "| `{name}` | {} |", why.replace('|', "\\|"));
        }
        let skipped: Vec<&String> = self
            .table
            .structs
            .values()
            .filter(|st| {
                st.container.as_deref() == Some("generic_tile")
                    && !st.params.is_empty()
                    && !self.unsupported.contains_key(&st.name)
            })
            .map(|st| &st.name)
            .collect();
        if !skipped.is_empty() {
            out.push_str("\n## Generic-tile payloads without a file kind of their own\n\nThese payloads are types of the `.ksy` files that use them but take params from the schema or footer, so no file parses them alone:\n\n");
            for name in skipped {
                let _ = writeln!(out, "- `{name}`");
            }
        }
        out
    }
}

/// Every `.ksy`, `UNSUPPORTED.md` and `manifest.json`, by file name.
pub fn render(spec: &Spec, table: &TypeTable) -> Vec<(String, String)> {
    let cx = Ctx::new(spec, table);
    let mut files = Vec::new();
    let mut kinds = Vec::new();
    for st in table.structs.values() {
        if is_file_kind(st) && !cx.unsupported.contains_key(&st.name) {
            let name = format!("tiledb_{}.ksy", snake(&st.name));
            files.push((name.clone(), cx.render_kind(st)));
            kinds.push(format!("{name}: a generic tile holding {}", st.name));
        }
    }
    if let Some(text) = cx.render_fragment_metadata() {
        let name = "tiledb_fragment_metadata.ksy".to_string();
        files.push((name.clone(), text));
        kinds.push(format!(
            "{name}: footer length, generic tiles and footer prefix"
        ));
    }
    files.push(("UNSUPPORTED.md".into(), cx.render_unsupported(&kinds)));
    let mut manifest = serde_json::to_string_pretty(&cx.manifest()).expect("serializes");
    manifest.push('\n');
    files.push(("manifest.json".into(), manifest));
    files
}
