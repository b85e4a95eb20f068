//! Stage 3: takes the validated model ([`crate::model`]) and gives the text
//! of every generated file. Split by item kind, as binrw_derive's codegen is:
//! [`enums`], [`contexts`], [`structs`] (with [`args`] for what a field
//! passes and recomputes, and [`switches`] for the enums of switch fields),
//! [`format`] for the version table and `mod.rs`, and [`tables`] for the
//! Markdown. [`expr`] lowers checked expressions; [`render`] formats.
//!
//! Nothing here can fail on a validated model: every expression was checked
//! by `validate`, so emission only walks the model.

mod args;
mod context;
mod contexts;
mod docs;
mod enums;
pub mod expr;
pub mod format;
pub mod render;
mod size;
mod structs;
mod switches;
pub mod tables;

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::quote;

use crate::model::*;
use crate::naming::ident;
pub use context::Emitter;
use docs::doc_lines;
pub use render::{bare, header, render};

impl Emitter<'_> {
    /// The Rust source of one spec file's module.
    pub fn emit_file(&mut self, file: &SpecFile) -> String {
        self.current_module = file.module.clone();
        self.imports.borrow_mut().clear();
        self.attrs.borrow_mut().clear();
        let mut items = TokenStream::new();
        for spec_enum in &file.enums {
            items.extend(enums::emit_enum(spec_enum));
        }
        for context in &file.contexts {
            items.extend(self.emit_context(context));
        }
        for structure in &file.structs {
            items.extend(self.emit_struct(structure));
        }
        let mut module_doc = vec![file.title.clone()];
        if let Some(doc) = &file.doc {
            module_doc.push(String::new());
            module_doc.extend(doc_lines(doc));
        }
        if let Some(source) = &file.source {
            module_doc.push(String::new());
            module_doc.push(format!("Upstream: `{source}`."));
        }
        let module_doc: TokenStream = module_doc
            .iter()
            .map(|line| {
                let text = if line.is_empty() {
                    String::new()
                } else {
                    format!(" {line}")
                };
                quote!(#![doc = #text])
            })
            .collect();
        let mut uses = TokenStream::new();
        let needs_binrw = !file.structs.is_empty();
        if needs_binrw {
            uses.extend(quote!(
                use binrw::binrw;
            ));
        }
        let mut by_module: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (module, name) in self.imports.borrow().iter() {
            by_module
                .entry(module.clone())
                .or_default()
                .push(name.clone());
        }
        for (module, names) in by_module {
            let module = ident(&module);
            let names: Vec<syn::Ident> = names.iter().map(|n| ident(n)).collect();
            uses.extend(quote!(use super::#module::{#(#names),*};));
        }
        let tokens = quote! {
            #module_doc
            #uses
            #items
        };
        let text = render(&file.display, tokens);
        self.fill_attrs(text)
    }
}
