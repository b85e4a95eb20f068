//! Switch fields: takes a checked [`Switch`] of a struct field, gives the
//! binrw enum of its layouts — one variant per case type (selected by
//! `pre_assert` on the selector), a refusing variant for the error values,
//! and the default last — with its `MIN_SIZE`.

use std::collections::BTreeSet;

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::context::{io_path, Emitter};
use super::expr::{Lowering, Side};
use crate::model::*;
use crate::naming::{ident, rust_ident};

impl Emitter<'_> {
    pub(super) fn emit_switch(
        &self,
        structure: &Struct,
        field: &Field,
        switch: &Switch,
    ) -> TokenStream {
        let name = ident(&switch.rust_name);
        // Lowered for its imports (the selector's type is imported below).
        self.lower(&switch.on.expr, &Lowering::read());
        let on_ty = &switch.on.expr.ty;
        let on_tokens = self.ty_tokens(on_ty);
        let mut imports = vec![quote!(switch_selector: #on_tokens)];
        for (param, ty) in &self.table.arg_param_types(field) {
            let id = ident(&rust_ident(param));
            let ty = self.ty_tokens(ty);
            imports.push(quote!(#id: #ty));
        }
        // Variants in the order of their smallest key's value; the default last.
        let mut cases = switch.cases.clone();
        for case in &mut cases {
            case.keys.sort_by_key(|k| self.key_order(on_ty, k));
        }
        cases.sort_by_key(|c| {
            c.keys
                .first()
                .map(|k| self.key_order(on_ty, k))
                .unwrap_or_default()
        });
        let mut variants = self.case_variants(switch, &cases, on_ty);
        if !switch.errors.is_empty() {
            variants.extend(self.error_variant(structure, field, switch, on_ty));
        }
        if let Some(default) = &switch.default {
            variants.extend(self.default_variant(switch, &cases, default, on_ty));
        }
        let brw = self.attr("brw", &[quote!(little), quote!(import { #(#imports),* })]);
        let doc = format!(
            " The layouts of `{}.{}`, chosen by `{}`. The variant read is the one whose selector matches; writing writes the variant held.",
            structure.name, field.name, switch.on.text
        );
        let min = switch
            .types()
            .map(|t| self.min_size_of_ty(&Ty::Struct(t.clone()), &mut BTreeSet::new()))
            .min()
            .unwrap_or(0);
        let min = Literal::u64_unsuffixed(min);
        let min_doc = format!(
            " The fewest bytes any variant of `{}` occupies.",
            switch.rust_name
        );
        quote! {
            #[doc = #doc]
            #[binrw]
            #brw
            #[derive(Debug, Clone, PartialEq, serde::Serialize)]
            pub enum #name {
                #variants
            }

            impl #name {
                #[doc = #min_doc]
                pub const MIN_SIZE: u64 = #min;
            }
        }
    }

    /// The pattern that matches a case key: an enum variant or an integer.
    pub(super) fn key_pattern(&self, on_ty: &Ty, key: &str) -> TokenStream {
        match on_ty {
            Ty::Enum(enum_name) => {
                let variant = self
                    .table
                    .enums
                    .get(enum_name)
                    .and_then(|e| e.variant(key))
                    .map(|v| v.rust_name.clone())
                    .unwrap_or_default();
                let e = self.named(enum_name, "");
                let v = ident(&variant);
                quote!(#e::#v)
            }
            _ => {
                let n: i128 = key.parse().unwrap_or_default();
                let lit = Literal::i128_unsuffixed(n);
                quote!(#lit)
            }
        }
    }

    /// The keys as the spec names them: for a switch over an open enum (whose
    /// checked keys are values), each value with its variant's name.
    fn key_names(&self, switch: &Switch, keys: &[String]) -> String {
        let named = |key: &String| {
            let variant = switch
                .open_enum
                .as_ref()
                .and_then(|name| self.table.enums.get(name))
                .and_then(|e| e.variants.iter().find(|v| v.value.to_string() == *key));
            match variant {
                Some(v) => format!("{key} ({})", v.name),
                None => key.clone(),
            }
        };
        keys.iter().map(named).collect::<Vec<_>>().join(", ")
    }

    /// The value of a case key, to order the variants.
    fn key_order(&self, on_ty: &Ty, key: &str) -> i128 {
        match on_ty {
            Ty::Enum(enum_name) => self
                .table
                .enums
                .get(enum_name)
                .and_then(|e| e.variant(key))
                .map(|v| v.value)
                .unwrap_or_default(),
            _ => key.parse().unwrap_or_default(),
        }
    }

    /// The args a case type gets: the switch's own imports, passed on by name.
    fn case_args(&self, ty_name: &str, side: Side) -> TokenStream {
        let Some(target) = self.table.structs.get(ty_name) else {
            return quote!(());
        };
        if target.params.is_empty() {
            return quote!(());
        }
        let suffix = match side {
            Side::Read => "BinReadArgs",
            Side::Write => "BinWriteArgs",
        };
        let args_ty = self.named(ty_name, suffix);
        let inits: Vec<_> = target
            .params
            .iter()
            .map(|p| {
                let id = ident(&p.ident);
                let value = if p.ty.is_copy() {
                    quote!(#id)
                } else {
                    quote!(#id.clone())
                };
                quote!(.#id(#value))
            })
            .collect();
        quote!(#args_ty::builder() #(#inits)* .finalize())
    }

    /// The `args_raw` attributes of a case variant's payload, if it takes args.
    fn case_attrs(&self, ty_name: &str) -> TokenStream {
        let r = self.case_args(ty_name, Side::Read);
        let w = self.case_args(ty_name, Side::Write);
        if r.to_string() == "()" {
            quote!()
        } else {
            let br = self.attr("br", &[quote!(args_raw = #r)]);
            let bw = self.attr("bw", &[quote!(args_raw = #w)]);
            quote!(#br #bw)
        }
    }

    /// One variant per case type, except the default's (which comes last).
    fn case_variants(&self, switch: &Switch, cases: &[SwitchCase], on_ty: &Ty) -> TokenStream {
        let default_merged = switch
            .default
            .as_ref()
            .filter(|d| cases.iter().any(|c| &c.ty == *d));
        let mut variants = TokenStream::new();
        for case in cases {
            if default_merged == Some(&case.ty) {
                continue;
            }
            let variant = ident(&case.ty);
            let ty = self.named(&case.ty, "");
            let patterns: Vec<_> = case
                .keys
                .iter()
                .map(|k| self.key_pattern(on_ty, k))
                .collect();
            let doc = format!(
                " When the selector is {}.",
                self.key_names(switch, &case.keys)
            );
            let attrs = self.case_attrs(&case.ty);
            let pre = self.attr(
                "br",
                &[quote!(pre_assert(
                    matches!(switch_selector, #(#patterns)|*)
                ))],
            );
            variants.extend(quote! {
                #[doc = #doc]
                #pre
                #variant(#attrs #ty),
            });
        }
        variants
    }

    /// The variant that refuses the error values on read and write.
    fn error_variant(
        &self,
        structure: &Struct,
        field: &Field,
        switch: &Switch,
        on_ty: &Ty,
    ) -> TokenStream {
        let patterns: Vec<TokenStream> = switch
            .errors
            .iter()
            .map(|(k, _)| self.key_pattern(on_ty, k))
            .collect();
        let arms: Vec<TokenStream> = switch
            .errors
            .iter()
            .map(|(k, reason)| {
                let pattern = self.key_pattern(on_ty, k);
                quote!(#pattern => #reason)
            })
            .collect();
        let path = format!("{}.{}", structure.name, field.name);
        let io = io_path();
        let pre = self.attr(
            "br",
            &[quote!(pre_assert(
                matches!(switch_selector, #(#patterns)|*)
            ))],
        );
        let br = self.attr(
            "br",
            &[quote!(parse_with = #io::reject, args(#path, match switch_selector { #(#arms,)* _ => "" }))],
        );
        let bw = self.attr("bw", &[quote!(write_with = #io::reject_write, args(#path))]);
        let keys: Vec<&str> = switch.errors.iter().map(|(k, _)| k.as_str()).collect();
        let doc = format!(
            " When the selector is {}: a read error (the value is refused).",
            keys.join(", ")
        );
        quote! {
            #[doc = #doc]
            #pre
            Rejected(#br #bw ()),
        }
    }

    /// The default variant: every selector no other variant takes.
    fn default_variant(
        &self,
        switch: &Switch,
        cases: &[SwitchCase],
        default: &str,
        on_ty: &Ty,
    ) -> TokenStream {
        let variant = ident(default);
        let ty = self.named(default, "");
        let attrs = self.case_attrs(default);
        let mut keys: Vec<String> = Vec::new();
        if let Some(case) = cases.iter().find(|c| c.ty == default) {
            keys = case.keys.clone();
        }
        let doc = if keys.is_empty() {
            " For every other selector.".to_string()
        } else {
            format!(
                " When the selector is {}, and for every other selector.",
                keys.join(", ")
            )
        };
        let others: Vec<TokenStream> = cases
            .iter()
            .filter(|c| c.ty != default)
            .flat_map(|c| c.keys.iter())
            .chain(switch.errors.iter().map(|(k, _)| k))
            .map(|k| self.key_pattern(on_ty, k))
            .collect();
        let pre = if others.is_empty() {
            quote!()
        } else {
            self.attr(
                "br",
                &[quote!(pre_assert(!matches!(switch_selector, #(#others)|*)))],
            )
        };
        quote! {
            #[doc = #doc]
            #pre
            #variant(#attrs #ty),
        }
    }
}
