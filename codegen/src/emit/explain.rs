//! Explain walkers: takes every checked [`Struct`] of the spec, gives one
//! `walk_<struct>` function per struct that reads the struct's bytes with the
//! position-tracking `Walker` of `runtime/src/explain/walker.rs` and records a
//! span per field (spec name and type, offset, size, value, the gate and
//! whether it held, source, erratum). Sizes, counts, switches and gates are
//! the same checked expressions the binrw emitter lowers, on the read side,
//! so a walker sees exactly the fields the binrw reader reads.
//!
//! Each walker returns the generated value it walked (built from its stored
//! fields), because later expressions name earlier fields and their members.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::context::Emitter;
use super::docs::gate_description;
use super::expr::Lowering;
use super::render::{bare, render};
use crate::model::*;
use crate::naming::{ident, rust_ident};

/// Where the walkers go, relative to the workspace root.
pub const EXPLAIN_PATH: &str = "runtime/src/explain/walkers.rs";

/// The text of the generated walkers file.
pub fn emit_walkers(spec: &Spec, table: &TypeTable) -> String {
    let emitter = Emitter::new(spec, table);
    let mut items = TokenStream::new();
    for file in &spec.files {
        for structure in &file.structs {
            items.extend(emitter.walker(&file.display, structure));
        }
        for spec_enum in &file.enums {
            items.extend(struct_property_walkers(&file.display, spec_enum, table));
        }
    }
    let tokens = quote! {
        //! Field-by-field walkers of every spec struct, for `tdb explain`.
        #![allow(clippy::all, unused_variables, unused_parens, unused_braces, non_snake_case, unreachable_patterns)]
        use crate::format::generated::*;
        use super::walker::{FieldInfo, Walker};
        use crate::error::Result;
        #items
    };
    render("spec/ (every file)", tokens)
}

/// For each `struct` property of an enum, a walker of the struct a value
/// names: `walk_<enum>_<property>(w, value, inputs…)` walks it and returns
/// `true`, or returns `false` for a value that names none. Its inputs are
/// the name arguments of every variant (`u64`, sorted), literals inlined.
fn struct_property_walkers(file: &str, spec_enum: &Enum, table: &TypeTable) -> TokenStream {
    let mut out = TokenStream::new();
    let enum_ident = ident(&spec_enum.name);
    for (index, (property, prop_ty)) in spec_enum.properties.iter().enumerate() {
        if *prop_ty != PropTy::Struct {
            continue;
        }
        let refs: Vec<Option<StructRef>> = spec_enum
            .variants
            .iter()
            .map(|v| StructRef::parse(&v.props[index]))
            .collect();
        let inputs: BTreeSet<&str> = refs.iter().flatten().flat_map(StructRef::inputs).collect();
        let input_params = inputs.iter().map(|i| {
            let id = ident(i);
            quote!(#id: u64)
        });
        // Variants grouped by what they walk, so the match stays short.
        let mut arms: Vec<(Option<StructRef>, Vec<TokenStream>)> = Vec::new();
        for (variant, reference) in spec_enum.variants.iter().zip(&refs) {
            let id = ident(&variant.rust_name);
            let pattern = quote!(#enum_ident::#id);
            match arms.iter_mut().find(|(r, _)| r == reference) {
                Some((_, patterns)) => patterns.push(pattern),
                None => arms.push((reference.clone(), vec![pattern])),
            }
        }
        let arms = arms.iter().map(|(reference, patterns)| {
            let Some(reference) = reference else {
                return quote!(#(#patterns)|* => Ok(false));
            };
            let walker = walker_name(&reference.name);
            let params = table
                .structs
                .get(&reference.name)
                .map(|s| s.params.as_slice())
                .unwrap_or_default();
            let args = params.iter().map(|param| {
                let arg = reference
                    .args
                    .iter()
                    .find(|(p, _)| *p == param.name)
                    .map(|(_, a)| a.as_str())
                    .unwrap_or_default();
                match arg.parse::<u64>() {
                    Ok(n) => {
                        let lit = Literal::u64_unsuffixed(n);
                        quote!(#lit)
                    }
                    Err(_) => {
                        let id = ident(arg);
                        quote!(#id)
                    }
                }
            });
            quote!(#(#patterns)|* => { #walker(w, #(#args),*)?; Ok(true) })
        });
        let fn_name = format_ident!("walk_{}_{}", snake(&spec_enum.name), property);
        let doc = format!(
            " Walks the struct that is the `{property}` of a `{}` value (spec: {file}); `false` when the value names none.",
            spec_enum.name
        );
        out.extend(quote! {
            #[doc = #doc]
            pub fn #fn_name(w: &mut Walker<'_>, of: #enum_ident, #(#input_params),*) -> Result<bool> {
                match of { #(#arms,)* }
            }
        });
    }
    out
}

/// The name of the walker of struct `name`.
fn walker_name(name: &str) -> syn::Ident {
    format_ident!("walk_{}", snake(name))
}

impl Emitter<'_> {
    fn walker(&self, file: &str, structure: &Struct) -> TokenStream {
        let name = ident(&structure.name);
        let fn_name = walker_name(&structure.name);
        let params: Vec<TokenStream> = structure
            .params
            .iter()
            .map(|p| {
                let id = ident(&p.ident);
                let ty = self.ty_tokens(&p.ty);
                quote!(#id: #ty)
            })
            .collect();
        let mut body = TokenStream::new();
        for field in &structure.fields {
            body.extend(self.walk_field(file, structure, field));
        }
        let stored: Vec<syn::Ident> = structure
            .fields
            .iter()
            .filter(|f| f.is_stored())
            .map(|f| ident(&f.ident))
            .collect();
        let doc = format!(" Walks a `{}` (spec: {file}).", structure.name);
        quote! {
            #[doc = #doc]
            pub fn #fn_name(w: &mut Walker<'_>, #(#params),*) -> Result<#name> {
                #body
                Ok(#name { #(#stored),* })
            }
        }
    }

    /// The static description of a field the walker records.
    fn field_info(&self, file: &str, structure: &Struct, field: &Field) -> TokenStream {
        let name = format!("{}.{}", structure.name, field.name);
        let ty = field.base_ty().spec_name();
        let source = field
            .source
            .clone()
            .or_else(|| structure.source.clone())
            .unwrap_or_else(|| file.to_string());
        let erratum = opt_str(field.erratum.as_deref());
        let gate = opt_str(
            field
                .is_conditional()
                .then(|| gate_description(structure, field))
                .as_deref(),
        );
        let spec = file;
        quote!(&FieldInfo { name: #name, spec_type: #ty, spec_file: #spec, source: #source, erratum: #erratum, gate: #gate })
    }

    fn walk_field(&self, file: &str, structure: &Struct, field: &Field) -> TokenStream {
        let read = Lowering::read();
        let id = ident(&field.ident);
        let info = self.field_info(file, structure, field);
        let value_ty = self.ty_tokens(&field.value_ty());
        let walk = self.walk_layout(structure, field, &read);
        let gate = self.gate(structure, field, &read);
        let default = field.default.as_ref().map(|d| self.lower(&d.expr, &read));
        let check = match &field.role {
            Role::Value(value) => {
                let expected = self.lower(&value.expr, &read);
                quote!(w.expect(#info, #id == #expected)?;)
            }
            _ => quote!(),
        };
        let Some(gate) = gate else {
            // A struct's own format version gates its later fields by the
            // layout it stands for: spec/format.toml's experimental version
            // stands for another (`Walker::layout_version`). The span keeps
            // the stored value.
            let layout = (field.name == "version" && matches!(field.role, Role::Stored))
                .then(|| quote!(let #id: #value_ty = w.layout_version(#id);));
            return quote! {
                w.enter(#info, None);
                let #id: #value_ty = { #walk };
                w.leave();
                #check
                #layout
            };
        };
        let absent = match (&field.role, default, field.is_optional()) {
            (_, Some(default), _) => default,
            (Role::Stored, None, true) => quote!(None),
            (Role::Value(value), None, _) => self.lower(&value.expr, &read),
            _ => quote!(0),
        };
        let present = if field.is_optional() {
            quote!(Some({ #walk }))
        } else {
            walk
        };
        let gate = bare(gate);
        quote! {
            let #id: #value_ty = if #gate {
                w.enter(#info, Some(true));
                let value = #present;
                w.leave();
                value
            } else {
                w.absent(#info);
                #absent
            };
            #check
        }
    }

    /// An expression that walks one value of `ty` and gives it.
    fn walk_single(
        &self,
        ty: &Ty,
        args: &BTreeMap<String, Checked>,
        read: &Lowering,
    ) -> TokenStream {
        match ty {
            Ty::Prim(p) => {
                let p = super::expr::prim_tokens(*p);
                quote!(w.prim::<#p>()?)
            }
            Ty::Bool => quote!(w.bool()?),
            Ty::Enum(name) => {
                let e = self.named(name, "");
                let repr = self
                    .table
                    .enums
                    .get(name)
                    .map(|e| super::expr::prim_tokens(e.repr))
                    .unwrap_or(quote!(u8));
                quote!({
                    let raw = w.prim::<#repr>()?;
                    match #e::from_value(raw) {
                        Some(v) => { w.name_value(v.name()); v }
                        None => return Err(w.bad_enum(stringify!(#e), raw as u64)),
                    }
                })
            }
            Ty::Struct(name) => {
                let f = walker_name(name);
                let call_args = self.call_args(name, args, read);
                quote!(#f(w, #(#call_args),*)?)
            }
            _ => quote!(return Err(w.unsupported())),
        }
    }

    /// The arguments a walker of struct `target` is called with, in param order.
    fn call_args(
        &self,
        target: &str,
        args: &BTreeMap<String, Checked>,
        read: &Lowering,
    ) -> Vec<TokenStream> {
        let Some(structure) = self.table.structs.get(target) else {
            return vec![];
        };
        structure
            .params
            .iter()
            .map(|p| match args.get(&p.name) {
                Some(value) => bare(self.lower(&value.expr, read)),
                None => quote!(Default::default()),
            })
            .collect()
    }

    fn walk_layout(&self, structure: &Struct, field: &Field, read: &Lowering) -> TokenStream {
        let max = field
            .max
            .map(|m| {
                let m = Literal::u64_unsuffixed(m);
                quote!(#m)
            })
            .unwrap_or(quote!(u64::MAX));
        let inner = match &field.layout {
            Layout::Single(ty) => self.walk_single(ty, &field.args, read),
            Layout::Switch(switch) => self.walk_switch(structure, field, switch, read),
            Layout::Bytes { len } => match len {
                BytesLen::Size(size) => {
                    let size = self.lower(&size.expr, read);
                    quote!(w.bytes(#size as u64, #max)?)
                }
                BytesLen::UntilEof => quote!(w.bytes_to_end(#max)?),
                BytesLen::Terminated { byte, or_end } => {
                    let byte = Literal::u8_suffixed(*byte);
                    quote!(w.terminated(#byte, #or_end, #max)?)
                }
            },
            Layout::List { elem, len } => {
                let elem_min =
                    Literal::u64_unsuffixed(self.min_size_of_ty(elem, &mut BTreeSet::new()).max(1));
                let one = self.walk_single(elem, &field.args, read);
                match len {
                    ListLen::Count(count) => {
                        let count = self.lower(&count.expr, read);
                        quote!({
                            let n = w.check_count(#count as u64, #max, #elem_min)?;
                            let mut list = Vec::new();
                            for i in 0..n { w.enter_elem(i); list.push(#one); w.leave(); }
                            list
                        })
                    }
                    ListLen::UntilEof => quote!({
                        let mut list = Vec::new();
                        let mut i = 0u64;
                        while w.remaining() > 0 {
                            let before = w.pos();
                            w.enter_elem(i); list.push(#one); w.leave(); i += 1;
                            // An element that reads nothing would repeat forever.
                            w.advanced_since(before)?;
                        }
                        list
                    }),
                    ListLen::Each { over, entry } => {
                        let over = self.lower(&over.expr, read);
                        let entry = ident(&rust_ident(entry));
                        quote!({
                            let mut list = Vec::new();
                            for (i, #entry) in #over.iter().enumerate() { w.enter_elem(i as u64); list.push(#one); w.leave(); }
                            list
                        })
                    }
                }
            }
        };
        match &field.sized {
            Some(size) => {
                let size = self.lower(&size.expr, read);
                quote!({
                    w.push_window(#size as u64, #max)?;
                    let value = #inner;
                    w.pop_window()?;
                    value
                })
            }
            None => inner,
        }
    }

    fn walk_switch(
        &self,
        structure: &Struct,
        field: &Field,
        switch: &Switch,
        read: &Lowering,
    ) -> TokenStream {
        let on = bare(self.lower(&switch.on.expr, read));
        let on_ty = &switch.on.expr.ty;
        let enum_name = self.named(&switch.rust_name, "");
        let mut arms = Vec::new();
        let mut seen = BTreeSet::new();
        for case in &switch.cases {
            if switch.default.as_deref() == Some(case.ty.as_str()) || !seen.insert(case.ty.clone())
            {
                continue;
            }
            let keys: Vec<TokenStream> = case
                .keys
                .iter()
                .map(|k| self.key_pattern(on_ty, k))
                .collect();
            let variant = ident(&case.ty);
            let walk = self.walk_single(&Ty::Struct(case.ty.clone()), &field.args, read);
            let pats: Vec<TokenStream> = keys.iter().map(|k| quote!(#k)).collect();
            arms.push(quote!(#(#pats)|* => #enum_name::#variant(#walk),));
        }
        if !switch.errors.is_empty() {
            let path = format!("{}.{}", structure.name, field.name);
            let keys: Vec<TokenStream> = switch
                .errors
                .iter()
                .map(|(k, _)| self.key_pattern(on_ty, k))
                .collect();
            arms.push(quote!(#(#keys)|* => return Err(w.refused(#path)),));
        }
        match &switch.default {
            Some(default) => {
                let variant = ident(default);
                let walk = self.walk_single(&Ty::Struct(default.clone()), &field.args, read);
                arms.push(quote!(_ => #enum_name::#variant(#walk),));
            }
            None => arms.push(quote!(_ => return Err(w.unsupported()),)),
        }
        quote!(match #on { #(#arms)* })
    }
}

fn opt_str(s: Option<&str>) -> TokenStream {
    match s {
        Some(s) => quote!(Some(#s)),
        None => quote!(None),
    }
}

/// `ArraySchema` → `array_schema`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
