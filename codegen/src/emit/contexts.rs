//! Contexts: takes a checked [`Context`], gives the plain struct the runtime
//! builds and passes down, and for a derived context its `From<&Struct>`.

use proc_macro2::TokenStream;
use quote::quote;

use super::context::Emitter;
use super::docs::{doc_attrs, doc_lines};
use super::expr::Lowering;
use super::render::bare;
use crate::model::*;
use crate::naming::ident;

impl Emitter<'_> {
    pub(super) fn emit_context(&self, context: &Context) -> TokenStream {
        let name = ident(&context.name);
        let mut doc = context.doc.as_deref().map(doc_lines).unwrap_or_default();
        doc.push(String::new());
        doc.push("Built by the runtime and passed down; not read from the file.".into());
        if let Some(source) = &context.source {
            doc.push(String::new());
            doc.push(format!("Source: `{source}`."));
        }
        let doc = doc_attrs(&doc);
        let fields: Vec<_> = context
            .fields
            .iter()
            .map(|field| {
                let id = ident(&field.ident);
                let ty = self.ty_tokens(&field.ty);
                let mut lines = field.doc.as_deref().map(doc_lines).unwrap_or_default();
                if let Some(value) = &field.value {
                    if !lines.is_empty() {
                        lines.push(String::new());
                    }
                    lines.push(format!("Computed as `{}`.", value.text));
                }
                let fdoc = doc_attrs(&lines);
                quote!(#fdoc pub #id: #ty)
            })
            .collect();
        let derive = self.derive_from(context);
        quote! {
            #doc
            #[derive(Debug, Clone, PartialEq, serde::Serialize)]
            pub struct #name {
                #(#fields,)*
            }

            #derive
        }
    }

    /// `impl From<&Source> for Context`, for a context computed from a struct.
    fn derive_from(&self, context: &Context) -> TokenStream {
        let Some(source) = context
            .from
            .as_ref()
            .and_then(|f| self.table.structs.get(f))
        else {
            return quote!();
        };
        let name = ident(&context.name);
        let source_ty = self.named(&source.name, "");
        let inits: Vec<_> = context
            .fields
            .iter()
            .filter_map(|field| {
                let value = field.value.as_ref()?;
                let id = ident(&field.ident);
                let tokens = bare(self.lower(&value.expr, &Lowering::read()));
                Some(quote!(#id: #tokens))
            })
            .collect();
        let doc = format!(" Computes the `{}` of a `{}`.", context.name, source.name);
        quote! {
            impl From<&#source_ty> for #name {
                #[doc = #doc]
                fn from(source: &#source_ty) -> Self {
                    #name { #(#inits),* }
                }
            }
        }
    }
}
