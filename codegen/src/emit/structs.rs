//! Structs: takes a checked [`Struct`], gives the binrw struct — one field
//! per spec field with its `#[br]`/`#[bw]` attributes (gates, temps, the
//! bounded readers of runtime/src/format/io.rs) — its `MIN_SIZE`, and the
//! enums of its switch fields.

use std::collections::BTreeSet;

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::args::field_ident;
use super::context::{io_path, Emitter};
use super::docs::{doc_attrs, doc_lines, field_doc, gate_description};
use super::expr::Lowering;
use super::render::bare;
use crate::model::*;
use crate::naming::ident;

/// The `#[br]` and `#[bw]` items of one field.
#[derive(Default)]
struct Attrs {
    br: Vec<TokenStream>,
    bw: Vec<TokenStream>,
}

impl Emitter<'_> {
    pub(super) fn emit_struct(&self, structure: &Struct) -> TokenStream {
        let name = ident(&structure.name);
        let doc = doc_attrs(&struct_doc(structure));
        let brw = if structure.params.is_empty() {
            quote!(#[brw(little)])
        } else {
            let imports: Vec<_> = structure
                .params
                .iter()
                .map(|p| {
                    let id = ident(&p.ident);
                    let ty = self.ty_tokens(&p.ty);
                    quote!(#id: #ty)
                })
                .collect();
            self.attr("brw", &[quote!(little), quote!(import { #(#imports),* })])
        };
        let mut fields = TokenStream::new();
        let mut extra_items = TokenStream::new();
        for field in &structure.fields {
            fields.extend(self.emit_field(structure, field));
            if let Layout::Switch(switch) = &field.layout {
                extra_items.extend(self.emit_switch(structure, field, switch));
            }
        }
        let min_size = Literal::u64_unsuffixed(self.min_size(structure, &mut BTreeSet::new()));
        let min_doc = format!(
            " The fewest bytes a `{}` occupies: its unconditional fixed-size fields. Lists of it are bounded with this before allocating.",
            structure.name
        );
        let defaultable =
            self.has_default(&Ty::Struct(structure.name.clone()), &mut BTreeSet::new());
        let with_initial = structure.fields.iter().any(|f| f.initial.is_some());
        let derive_default = (defaultable && !with_initial).then(|| quote!(Default,));
        let default_impl = if defaultable && with_initial {
            default_impl(structure)
        } else {
            TokenStream::new()
        };
        let known_size = structure
            .known_size
            .as_ref()
            .map(|known| self.emit_known_size(structure, known))
            .unwrap_or_default();
        quote! {
            #doc
            #[binrw]
            #brw
            #[derive(Debug, Clone, PartialEq, #derive_default serde::Serialize)]
            pub struct #name {
                #fields
            }

            #default_impl

            impl #name {
                #[doc = #min_doc]
                pub const MIN_SIZE: u64 = #min_size;

                #known_size
            }

            #extra_items
        }
    }

    /// `known_size(inputs…, params…) -> Option<u64>`: the stored size where
    /// `when` holds, `None` elsewhere. Lists are taken as slices.
    fn emit_known_size(&self, structure: &Struct, known: &KnownSize) -> TokenStream {
        let args: Vec<TokenStream> = known
            .inputs
            .iter()
            .chain(&structure.params)
            .map(|p| {
                let id = ident(&p.ident);
                let ty = match &p.ty {
                    Ty::List(inner) => {
                        let inner = self.ty_tokens(inner);
                        quote!(&[#inner])
                    }
                    other => self.ty_tokens(other),
                };
                quote!(#id: #ty)
            })
            .collect();
        let read = Lowering::read();
        let when = bare(super::expr::lower(&known.when.expr, &read));
        let size = bare(super::expr::lower(&known.size.expr, &read));
        self.note_enums_in(&when);
        self.note_enums_in(&size);
        let mut lines = vec![format!(
            "The stored size of a `{}` before reading it, where it is known (`None` elsewhere).",
            structure.name
        )];
        lines.push(String::new());
        lines.extend(super::docs::doc_lines(&known.doc));
        for input in &known.inputs {
            if let Some(doc) = &input.doc {
                lines.push(String::new());
                lines.push(format!("`{}`: {doc}", input.name));
            }
        }
        lines.push(String::new());
        lines.push(format!("Known when `{}`.", known.when.text.trim()));
        lines.push(String::new());
        lines.push(format!(
            "Size: `{}`.",
            known
                .size
                .text
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        ));
        if let Some(source) = &known.source {
            lines.push(String::new());
            lines.push(format!("Upstream: `{source}`."));
        }
        let doc = doc_attrs(&lines);
        quote! {
            #doc
            pub fn known_size(#(#args),*) -> Option<u64> {
                if #when { Some(#size) } else { None }
            }
        }
    }

    /// One field of the struct with its attributes.
    fn emit_field(&self, structure: &Struct, field: &Field) -> TokenStream {
        let id = ident(&field.ident);
        let stored_ty = self.ty_tokens(&field.value_ty());
        let mut attrs = Attrs::default();
        let read = Lowering::read();
        self.with_write(structure, |write| {
            self.role_attrs(structure, field, &read, write, &mut attrs);
            self.layout_attrs(structure, field, &read, write, &mut attrs);
        });
        let fdoc = doc_attrs(&field_doc(structure, field));
        let br = self.attr("br", &attrs.br);
        let bw = self.attr("bw", &attrs.bw);
        if field.is_stored() {
            quote!(#fdoc #br #bw pub #id: #stored_ty,)
        } else {
            let ty = self.ty_tokens(&field.base_ty());
            quote!(#br #bw #id: #ty,)
        }
    }

    /// The attributes that come from the field's role and gate: presence,
    /// defaults, how a temp is computed and checked.
    fn role_attrs(
        &self,
        structure: &Struct,
        field: &Field,
        read: &Lowering,
        write: &Lowering,
        attrs: &mut Attrs,
    ) {
        let io = io_path();
        let path = format!("{}.{}", structure.name, field.name);
        let id = ident(&field.ident);
        let gate_r = self.gate(structure, field, read);
        let gate_w = self.gate(structure, field, write);
        let (br, bw) = (&mut attrs.br, &mut attrs.bw);
        let default = field.default.as_ref().map(|d| self.lower(&d.expr, read));
        match &field.role {
            Role::Stored => {
                if let Some(gate) = &gate_r {
                    match &default {
                        Some(default) => br.push(quote!(if(#gate, #default))),
                        None => br.push(quote!(if(#gate))),
                    }
                }
                if let Some(gate) = &gate_w {
                    bw.push(quote!(if(#gate)));
                    if field.is_optional() {
                        // An absent value where the layout has the field
                        // would silently shift everything after it.
                        let message = format!(
                            "{path} is required when {}",
                            gate_description(structure, field)
                        );
                        let required = bare(gate.clone());
                        bw.push(quote!(assert(
                            #io::present_where_required(#id.is_some(), #required),
                            #message
                        )));
                    }
                }
            }
            Role::LengthOf(target) | Role::SizeOf(target) => {
                br.push(quote!(temp));
                if let Some(gate) = &gate_r {
                    match &default {
                        Some(default) => br.push(quote!(if(#gate, #default))),
                        None => br.push(quote!(if(#gate, 0))),
                    }
                }
                if let Some(gate) = &gate_w {
                    bw.push(quote!(if(#gate)));
                }
                let ty = self.ty_tokens(&field.base_ty());
                if matches!(field.role, Role::LengthOf(_)) {
                    let target_ident = ident(&field_ident(structure, target));
                    bw.push(quote!(try_calc = #io::checked_length::<#ty, _>(#target_ident, #path)));
                } else {
                    let write = self.write_of(structure, target);
                    bw.push(quote!(try_calc = #io::checked_size::<#ty>(#io::written_size(|size_sink| #write), #path)));
                }
            }
            Role::Value(value) => {
                let expected = self.lower(&value.expr, read);
                br.push(quote!(temp));
                if let Some(gate) = &gate_r {
                    br.push(quote!(if(#gate, #expected)));
                }
                br.push(quote!(assert(#id == #expected)));
                if let Some(gate) = &gate_w {
                    bw.push(quote!(if(#gate)));
                }
                let written = self.lower(&value.expr, write);
                bw.push(quote!(calc = #written));
            }
        }
    }

    /// The attributes that come from the field's layout: which bounded
    /// reader and writer, with what args.
    fn layout_attrs(
        &self,
        structure: &Struct,
        field: &Field,
        read: &Lowering,
        write: &Lowering,
        attrs: &mut Attrs,
    ) {
        let io = io_path();
        let path = format!("{}.{}", structure.name, field.name);
        let (br, bw) = (&mut attrs.br, &mut attrs.bw);
        let max = field
            .max
            .map(|m| {
                let m = Literal::u64_unsuffixed(m);
                quote!(#m)
            })
            .unwrap_or(quote!(u64::MAX));
        let sized = field.sized.as_ref().map(|s| self.lower(&s.expr, read));
        match &field.layout {
            Layout::Single(Ty::Bool) => {
                br.push(quote!(parse_with = #io::read_bool, args(#path)));
                bw.push(quote!(write_with = #io::write_bool));
            }
            Layout::Single(Ty::Struct(target)) => {
                let r = self.struct_args(target, &field.args, read);
                let w = self.struct_args(target, &field.args, write);
                let has_args = self.has_params(target);
                if let Some(size) = sized {
                    br.push(quote!(parse_with = #io::read_sized, args(#size, #max, #path, #r)));
                } else if has_args {
                    br.push(quote!(args_raw = #r));
                }
                if has_args {
                    bw.push(quote!(args_raw = #w));
                }
            }
            Layout::Single(_) => {}
            Layout::Switch(_) => {
                let r = self.element_args(field, read);
                let w = self.element_args(field, write);
                if let Some(size) = sized {
                    br.push(quote!(parse_with = #io::read_sized, args(#size, #max, #path, #r)));
                } else {
                    br.push(quote!(args_raw = #r));
                }
                bw.push(quote!(args_raw = #w));
            }
            Layout::Bytes { len } => match len {
                BytesLen::Size(size) => {
                    let size = self.lower(&size.expr, read);
                    br.push(quote!(parse_with = #io::read_bytes, args(#size, #max, #path)));
                }
                BytesLen::UntilEof => {
                    br.push(quote!(parse_with = #io::read_bytes_to_end, args(#max, #path)));
                }
                BytesLen::Terminated { byte, or_end } => {
                    let byte = Literal::u8_suffixed(*byte);
                    br.push(quote!(parse_with = #io::read_terminated, args(#byte, #or_end, #max, #path)));
                    bw.push(quote!(write_with = #io::write_terminated, args(#byte, #path)));
                }
            },
            Layout::List { elem, len } => {
                let elem_min =
                    Literal::u64_unsuffixed(self.min_size_of_ty(elem, &mut BTreeSet::new()).max(1));
                let r = self.element_args(field, read);
                let w = self.element_args(field, write);
                match len {
                    ListLen::Count(count) => {
                        let count = self.lower(&count.expr, read);
                        if matches!(elem, Ty::Prim(_)) {
                            // Numbers are read in bulk, not one call per element.
                            br.push(
                                quote!(parse_with = #io::read_numbers, args(#count, #max, #path)),
                            );
                        } else {
                            br.push(quote!(parse_with = #io::read_list, args(#count, #max, #elem_min, #path, #r)));
                        }
                        if w.to_string() != "()" {
                            bw.push(quote!(args_raw = #w));
                        }
                    }
                    ListLen::UntilEof => {
                        br.push(quote!(parse_with = #io::read_until_eof, args(#max, #elem_min, #path, #r)));
                        if w.to_string() != "()" {
                            bw.push(quote!(args_raw = #w));
                        }
                    }
                    ListLen::Each { .. } => {
                        br.push(quote!(parse_with = #io::read_each, args(#r, #elem_min, #path)));
                        bw.push(quote!(write_with = #io::write_each, args(#w)));
                    }
                }
            }
        }
    }
}

impl Emitter<'_> {
    /// Whether values of `ty` have a generated `Default`: numbers, bools,
    /// bytes, lists and options always; an enum with a value 0; a struct
    /// whose kept fields all have one (a recursive struct counts as having
    /// one while it is being decided: it recurses through lists only).
    fn has_default(&self, ty: &Ty, visiting: &mut BTreeSet<String>) -> bool {
        match ty {
            Ty::Prim(_) | Ty::Bool | Ty::Bytes | Ty::List(_) | Ty::Option(_) => true,
            Ty::Enum(name) => self
                .table
                .enums
                .get(name)
                .is_some_and(super::enums::has_zero),
            Ty::Struct(name) => {
                if !visiting.insert(name.clone()) {
                    return true;
                }
                let result = self.table.structs.get(name).is_some_and(|s| {
                    s.fields
                        .iter()
                        .filter(|f| f.is_stored())
                        .all(|f| self.has_default(&f.value_ty(), visiting))
                });
                visiting.remove(name);
                result
            }
            _ => false,
        }
    }
}

/// `impl Default` for a struct some of whose fields say their `initial` value.
fn default_impl(structure: &Struct) -> TokenStream {
    let name = ident(&structure.name);
    let fields = structure.fields.iter().filter(|f| f.is_stored()).map(|f| {
        let id = ident(&f.ident);
        match &f.initial {
            Some(literal) => {
                let value: TokenStream = literal.parse().unwrap_or_default();
                quote!(#id: #value)
            }
            None => quote!(#id: Default::default()),
        }
    });
    let doc = format!(
        " A new `{}`: each field's `initial` value in the spec, else its type's default.",
        structure.name
    );
    quote! {
        impl Default for #name {
            #[doc = #doc]
            fn default() -> Self {
                #name { #(#fields),* }
            }
        }
    }
}

/// The doc of a struct: its prose, container, source, erratum and params.
fn struct_doc(structure: &Struct) -> Vec<String> {
    let mut doc = structure.doc.as_deref().map(doc_lines).unwrap_or_default();
    if let Some(container) = &structure.container {
        doc.push(String::new());
        doc.push(format!(
            "Stored as the payload of a {}.",
            container.replace('_', " ")
        ));
    }
    if let Some(source) = &structure.source {
        doc.push(String::new());
        doc.push(format!("Source: `{source}`."));
    }
    if let Some(erratum) = &structure.erratum {
        doc.push(String::new());
        doc.push(format!("Erratum: {erratum}"));
    }
    if !structure.params.is_empty() {
        doc.push(String::new());
        doc.push("Read and written with these arguments:".into());
        for param in &structure.params {
            doc.push(format!(
                "- `{}` (`{}`){}",
                param.name,
                param.ty.spec_name(),
                param
                    .doc
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            ));
        }
    }
    doc
}
