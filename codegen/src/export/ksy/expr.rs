//! Kaitai expressions: names, field presence, the spec's expressions and
//! method calls, struct arguments and params.

use super::yaml::{s, Y};
use super::*;

impl<'a> Ctx<'a> {
    pub(super) fn new(spec: &'a Spec, table: &'a TypeTable) -> Self {
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

    pub(super) fn enum_of(&self, name: &str) -> Result<&'a Enum, Why> {
        self.table
            .enums
            .get(name)
            .ok_or_else(|| format!("unknown enum {name}"))
    }

    pub(super) fn struct_of(&self, name: &str) -> Result<&'a Struct, Why> {
        self.table
            .structs
            .get(name)
            .ok_or_else(|| format!("unknown struct {name}"))
    }

    pub(super) fn variant_id(&self, enum_name: &str, rust_variant: &str) -> Result<String, Why> {
        let e = self.enum_of(enum_name)?;
        let v = e
            .variants
            .iter()
            .find(|v| v.rust_name == rust_variant || v.name == rust_variant)
            .ok_or_else(|| format!("unknown variant {enum_name}::{rust_variant}"))?;
        Ok(format!("{}::{}", snake(enum_name), safe_id(&v.name)))
    }

    /// The Kaitai expression for when `field` is present (None: always).
    pub(super) fn presence(&self, st: &Struct, field: &Field) -> Result<Option<String>, Why> {
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

    pub(super) fn field_named(&self, st: &'a Struct, name: &str) -> Option<&'a Field> {
        st.fields.iter().find(|f| f.name == name || f.ident == name)
    }

    /// A name as a value: bools compare with 0, defaulted fields go through their instance.
    pub(super) fn name_ref(&self, st: &Struct, name: &str, kind: NameKind) -> Result<String, Why> {
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
    pub(super) fn expr(&self, st: &Struct, e: &crate::expr::Expr) -> Result<String, Why> {
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
            ExprKind::Gate { gate, .. } => {
                return Err(format!(
                    "{} calls the behaviour gate {gate} (a Rust function, not a Kaitai expression)",
                    st.name
                ))
            }
            ExprKind::Fold { .. } => {
                return Err(format!(
                    "{} folds over a list (sum/any: no such operation in Kaitai)",
                    st.name
                ))
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
    pub(super) fn option_presence(
        &self,
        st: &Struct,
        e: &crate::expr::Expr,
    ) -> Result<String, Why> {
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

    pub(super) fn method(
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
    pub(super) fn struct_call(
        &self,
        st: &Struct,
        field: &Field,
        target: &str,
    ) -> Result<String, Why> {
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

    pub(super) fn param_ksy(&self, st: &Struct, param: &Named) -> Result<Vec<Y>, Why> {
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
}
