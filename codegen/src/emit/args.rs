//! Arguments and recomputations: takes a field of a checked struct, gives
//! the binrw args passed to what it reads, its presence condition, and (on
//! the write side) how a length, size or fixed value that the struct does
//! not store is recomputed from the fields it does.

use std::collections::BTreeMap;

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::context::{io_path, Emitter};
use super::expr::{Lowering, Side};
use super::render::bare;
use crate::model::*;
use crate::naming::{ident, rust_ident};

fn args_suffix(side: Side) -> &'static str {
    match side {
        Side::Read => "BinReadArgs",
        Side::Write => "BinWriteArgs",
    }
}

impl Emitter<'_> {
    /// The `NameBinReadArgs::builder()…` (or `()`) for a struct with params.
    pub(super) fn struct_args(
        &self,
        target: &str,
        args: &BTreeMap<String, Checked>,
        cx: &Lowering,
    ) -> TokenStream {
        let Some(structure) = self.table.structs.get(target) else {
            return quote!(());
        };
        if structure.params.is_empty() {
            return quote!(());
        }
        let args_ty = self.named(target, args_suffix(cx.side));
        let inits: Vec<TokenStream> = structure
            .params
            .iter()
            .filter_map(|param| {
                let value = bare(self.lower(&args.get(&param.name)?.expr, cx));
                let id = ident(&param.ident);
                Some(quote!(.#id(#value)))
            })
            .collect();
        quote!(#args_ty::builder() #(#inits)* .finalize())
    }

    /// Whether `target` is a struct that takes params.
    pub(super) fn has_params(&self, target: &str) -> bool {
        self.table
            .structs
            .get(target)
            .is_some_and(|s| !s.params.is_empty())
    }

    /// The field's presence condition on one side, if it has one.
    pub(super) fn gate(
        &self,
        structure: &Struct,
        field: &Field,
        cx: &Lowering,
    ) -> Option<TokenStream> {
        let mut parts = Vec::new();
        if let (true, Some(version)) = (
            field.since.is_some() || field.until.is_some(),
            &structure.version,
        ) {
            let version = self.lower(&version.expr, cx);
            if let Some(since) = field.since {
                let n = Literal::u32_unsuffixed(since);
                parts.push(quote!(#version >= #n));
            }
            if let Some(until) = field.until {
                let n = Literal::u32_unsuffixed(until);
                parts.push(quote!(#version < #n));
            }
        }
        if let Some(condition) = &field.condition {
            parts.push(self.lower(&condition.expr, cx));
        }
        if parts.is_empty() {
            None
        } else {
            Some(quote!(#(#parts)&&*))
        }
    }

    /// Runs `f` with the write side of `structure`, where a temp is recomputed.
    pub(super) fn with_write<R>(&self, structure: &Struct, f: impl FnOnce(&Lowering) -> R) -> R {
        let temp = |name: &str| self.temp_write_named(structure, name);
        f(&Lowering {
            side: Side::Write,
            temp: &temp,
        })
    }

    fn temp_write_named(&self, structure: &Struct, name: &str) -> TokenStream {
        match structure.fields.iter().find(|f| f.name == name) {
            Some(field) => self.temp_write(structure, field),
            None => TokenStream::new(),
        }
    }

    /// How a temp field is recomputed on the write side (where it is not stored).
    fn temp_write(&self, structure: &Struct, field: &Field) -> TokenStream {
        let io = io_path();
        match &field.role {
            Role::LengthOf(target) => {
                let ty = self.ty_tokens(&field.base_ty());
                let target = ident(&field_ident(structure, target));
                quote!(#io::saturating_length::<#ty, _>(#target))
            }
            Role::SizeOf(target) => {
                let ty = self.ty_tokens(&field.base_ty());
                let write = self.write_of(structure, target);
                quote!(#io::saturating_size::<#ty>(#io::written_size(|size_sink| #write)))
            }
            Role::Value(value) => self.with_write(structure, |cx| self.lower(&value.expr, cx)),
            Role::Stored => quote!(),
        }
    }

    /// An expression that writes field `target` of `structure` to `size_sink` (write side).
    pub(super) fn write_of(&self, structure: &Struct, target: &str) -> TokenStream {
        let Some(field) = structure.fields.iter().find(|f| f.name == target) else {
            return quote!(());
        };
        // A size never feeds the arguments of what it measures; cutting the
        // recursion here keeps the substitution finite.
        // The placeholder is typed (`u32::MIN`, not `0`) so that the
        // conversion to a param's type is not a cast of a literal.
        let temp = |name: &str| match structure.fields.iter().find(|f| f.name == name) {
            Some(
                field @ Field {
                    role: Role::SizeOf(_),
                    ..
                },
            ) => {
                let ty = self.ty_tokens(&field.base_ty());
                quote!(#ty::MIN)
            }
            Some(other) => self.temp_write(structure, other),
            None => TokenStream::new(),
        };
        let cx = Lowering {
            side: Side::Write,
            temp: &temp,
        };
        let id = ident(&field.ident);
        let io = io_path();
        let args = self.element_args(field, &cx);
        match &field.layout {
            Layout::List {
                len: ListLen::Each { .. },
                ..
            } => quote!(#io::write_each(#id, size_sink, binrw::Endian::Little, (#args,))),
            _ => {
                quote!(binrw::BinWrite::write_options(#id, size_sink, binrw::Endian::Little, #args))
            }
        }
    }

    /// The binrw args of a field's value (or, for lists, of each element; for
    /// `each` lists, the iterator of per-element args).
    pub(super) fn element_args(&self, field: &Field, cx: &Lowering) -> TokenStream {
        match &field.layout {
            Layout::Single(Ty::Struct(name)) => self.struct_args(name, &field.args, cx),
            Layout::List { elem, len } => {
                let single = match elem {
                    Ty::Struct(name) => Some(name),
                    _ => None,
                };
                match (len, single) {
                    (ListLen::Each { over, entry }, single) => {
                        let over = self.lower(&over.expr, cx);
                        match single {
                            Some(name) if self.has_params(name) => {
                                let entry_id = ident(&rust_ident(entry));
                                let args = self.struct_args(name, &field.args, cx);
                                quote!(#over.iter().map(|#entry_id| #args))
                            }
                            _ => quote!(#over.iter().map(|_| ())),
                        }
                    }
                    (_, Some(name)) => self.struct_args(name, &field.args, cx),
                    (_, None) => quote!(()),
                }
            }
            Layout::Switch(switch) => {
                let on = bare(self.lower(&switch.on.expr, cx));
                let args_ty = self.named(&switch.rust_name, args_suffix(cx.side));
                let mut inits = vec![quote!(.switch_selector(#on))];
                for name in self.table.arg_param_types(field).keys() {
                    if let Some(value) = field.args.get(name) {
                        let value = bare(self.lower(&value.expr, cx));
                        let id = ident(&rust_ident(name));
                        inits.push(quote!(.#id(#value)));
                    }
                }
                quote!(#args_ty::builder() #(#inits)* .finalize())
            }
            _ => quote!(()),
        }
    }
}

/// The Rust name of the field `name` of `structure`.
pub(super) fn field_ident(structure: &Struct, name: &str) -> String {
    structure
        .fields
        .iter()
        .find(|f| f.name == name)
        .map(|f| f.ident.clone())
        .unwrap_or_default()
}
