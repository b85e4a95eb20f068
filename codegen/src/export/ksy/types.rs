//! Kaitai types and enums of the model's structs, and the field manifest.

use super::yaml::{raw, s, Y};
use super::*;

impl Ctx<'_> {
    /// The Kaitai type of one struct, or why it cannot be one.
    pub(super) fn render_struct(&self, st: &Struct) -> Result<Y, Why> {
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
                    let last = std::ptr::eq(field, st.fields.last().unwrap_or(field));
                    match self.single_type(st, field, ty, &mut entry) {
                        Ok(()) => {}
                        // A last field Kaitai cannot lay out (the current
                        // domain, shaped by the dimensions): its bytes, opaque.
                        Err(why) if last && matches!(ty, Ty::Struct(_)) => {
                            entry.push(("size-eos".into(), raw("true")));
                            entry.push(("doc-ref".into(), s(format!("opaque bytes here: {why}"))));
                        }
                        Err(why) => return Err(why),
                    }
                    if let Some(size) = &field.sized {
                        entry.push(("size".into(), s(self.expr(st, &size.expr)?)));
                    }
                }
                Layout::Bytes { len } => match len {
                    BytesLen::Size(e) => entry.push(("size".into(), s(self.expr(st, &e.expr)?))),
                    BytesLen::UntilEof => entry.push(("size-eos".into(), raw("true"))),
                    BytesLen::Terminated { byte, or_end } => {
                        entry.push(("terminator".into(), raw(byte)));
                        if *or_end {
                            entry.push(("eos-error".into(), raw("false")));
                        }
                    }
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

    pub(super) fn single_type(
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

    pub(super) fn render_enum(&self, e: &Enum) -> Y {
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
    pub(super) fn value_manifest(&self, ty: &Ty) -> Value {
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
    pub(super) fn manifest(&self) -> Value {
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
                    // Kept as opaque bytes (see `render_struct`): not compared.
                    Layout::Single(Ty::Struct(target)) if self.unsupported.contains_key(target) => {
                        json!({"kind": "opaque"})
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
