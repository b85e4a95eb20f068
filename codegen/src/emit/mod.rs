//! Stage 3: takes the validated model ([`crate::model`]) and gives the text
//! of every generated file. Split by item kind, as binrw_derive's codegen is:
//! `enums`, `contexts`, `structs` (with `args` for what a field
//! passes and recomputes, and `switches` for the enums of switch fields),
//! [`format`](mod@format) for the version table and `mod.rs`, and [`tables`] for the
//! Markdown. [`expr`] lowers checked expressions; [`render`](mod@render) formats.
//!
//! Nothing here can fail on a validated model: every expression was checked
//! by `validate`, so emission only walks the model.

mod args;
mod context;
mod contexts;
mod docs;
mod enums;
pub mod explain;
pub mod expr;
pub mod format;
mod names;
pub mod render;
mod size;
mod structs;
mod switches;
pub mod tables;
mod view;
mod view_write;

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::quote;

use crate::model::*;
use crate::naming::ident;
pub use context::Emitter;
use docs::doc_lines;
pub use render::render;

/// The folder table: `FOLDERS`, and the folders TileDB lists whole.
fn emit_folders(folders: &[Folder]) -> TokenStream {
    let rows: Vec<TokenStream> = folders
        .iter()
        .map(|f| {
            let path = &f.path;
            let in_array = f.in_array;
            let in_group = f.in_group;
            let since = match f.since {
                Some(v) => quote!(Some(#v)),
                None => quote!(None),
            };
            let listed_whole = f.listed_whole;
            let loaded_as = &f.loaded_as;
            let refusal = &f.refusal;
            let reason = &f.reason;
            quote!(Folder {
                path: #path,
                in_array: #in_array,
                in_group: #in_group,
                since: #since,
                listed_whole: #listed_whole,
                loaded_as: #loaded_as,
                refusal: #refusal,
                reason: #reason,
            })
        })
        .collect();
    let mut whole: Vec<&String> = Vec::new();
    for f in folders.iter().filter(|f| f.listed_whole) {
        if !whole.contains(&&f.path) {
            whole.push(&f.path);
        }
    }
    let top_level = |in_group: bool| -> Vec<&String> {
        folders
            .iter()
            .filter(|f| !f.path.is_empty() && !f.path.contains('/'))
            .filter(|f| if in_group { f.in_group } else { f.in_array })
            .map(|f| &f.path)
            .collect()
    };
    let (array_top, group_top) = (top_level(false), top_level(true));
    quote! {
        /// The folders in an array's root, in spec order: an array owns
        /// these names (a file by one of them is an error).
        pub const ARRAY_FOLDERS: &[&str] = &[#(#array_top),*];

        /// The folders in a group's root, in spec order.
        pub const GROUP_FOLDERS: &[&str] = &[#(#group_top),*];

        /// A folder of an array or a group (`[[folder]]` in spec/).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Folder {
            /// Relative to the array or group.
            pub path: &'static str,
            /// Arrays have this folder.
            pub in_array: bool,
            /// Groups have this folder.
            pub in_group: bool,
            /// The format version it appeared in, if not always there.
            pub since: Option<u32>,
            /// TileDB lists it whole: it loads every file in it and fails
            /// on any name it does not expect (an unknown file elsewhere is ignored).
            pub listed_whole: bool,
            /// For a folder listed whole: what TileDB loads each file as.
            pub loaded_as: &'static str,
            /// For a folder listed whole: what TileDB cannot do beside an unexpected file.
            pub refusal: &'static str,
            /// Why (upstream's code, or how it was measured).
            pub reason: &'static str,
        }

        /// Every folder of spec/, in the order listed there.
        pub const FOLDERS: &[Folder] = &[#(#rows),*];

        /// The folders TileDB lists whole, in an array or a group.
        pub const LISTED_WHOLE_FOLDERS: &[&str] = &[#(#whole),*];

        /// The folder at `path` of an array (`in_group == false`) or a
        /// group, if TileDB lists it whole.
        pub fn listed_whole_folder(path: &str, in_group: bool) -> Option<&'static Folder> {
            FOLDERS.iter().find(|f| {
                f.listed_whole && f.path == path && if in_group { f.in_group } else { f.in_array }
            })
        }
    }
}

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
            items.extend(self.emit_view(structure));
        }
        if !file.folders.is_empty() {
            items.extend(emit_folders(&file.folders));
            items.extend(names::emit_names(file));
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
