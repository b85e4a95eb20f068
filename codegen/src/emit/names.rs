//! The names of `directory.toml` as Rust: one `&str` constant per folder
//! and fixed file name (or suffix), and the `Extension` enum of
//! timestamped names with its suffixes and version gates. The runtime
//! spells no folder, file name or extension itself.

use proc_macro2::TokenStream;
use quote::quote;

use super::docs::{doc_attrs, doc_lines};
use crate::model::*;
use crate::naming::ident;
use crate::validate::folder_name;

/// "Format versions 5–11.", "From format version 12.", or nothing.
fn versions(since: Option<u32>, until: Option<u32>) -> Option<String> {
    match (since, until) {
        (Some(s), Some(u)) => Some(format!("Format versions {s} to {}.", u - 1)),
        (Some(s), None) => Some(format!("From format version {s}.")),
        (None, Some(u)) => Some(format!("Before format version {u}.")),
        (None, None) => None,
    }
}

fn option_u32(value: Option<u32>) -> TokenStream {
    match value {
        Some(v) => quote!(Some(#v)),
        None => quote!(None),
    }
}

/// The docs of one constant: the spec's prose, its gates, and its table.
fn const_doc(
    doc: Option<&str>,
    since: Option<u32>,
    until: Option<u32>,
    table: String,
) -> TokenStream {
    let mut lines = doc.map(doc_lines).unwrap_or_default();
    lines.extend(versions(since, until));
    lines.push(String::new());
    lines.push(table);
    doc_attrs(&lines)
}

/// The constants of folders (their own names) and of fixed file names.
fn emit_constants(folders: &[Folder], file_names: &[FileName]) -> TokenStream {
    let mut out = TokenStream::new();
    let mut emitted: Vec<&str> = Vec::new();
    for folder in folders {
        let Some(constant) = folder.constant.as_deref() else {
            continue;
        };
        if emitted.contains(&constant) {
            continue;
        }
        emitted.push(constant);
        let name = folder_name(&folder.path);
        let table = format!(
            "The folder `{}` (`[[folder]]` of spec/directory.toml).",
            folder.path
        );
        let doc = const_doc(folder.doc.as_deref(), folder.since, None, table);
        let constant = ident(constant);
        out.extend(quote!(#doc pub const #constant: &str = #name;));
    }
    for file in file_names {
        let table = format!(
            "In the {}: `[[file_name]]` of spec/directory.toml.",
            file.object
        );
        let doc = const_doc(Some(&file.doc), file.since, file.until, table);
        let constant = ident(&file.constant);
        let name = &file.name;
        out.extend(quote!(#doc pub const #constant: &str = #name;));
    }
    out
}

/// The `Extension` enum: its variants, `ALL`, suffixes, folders and gates.
fn emit_extensions(extensions: &[NameExtension]) -> TokenStream {
    if extensions.is_empty() {
        return TokenStream::new();
    }
    let variants: Vec<_> = extensions.iter().map(|e| ident(&e.variant)).collect();
    let docs: Vec<TokenStream> = extensions
        .iter()
        .map(|e| {
            let mut lines = doc_lines(&e.doc);
            lines.extend(versions(e.since, e.until));
            doc_attrs(&lines)
        })
        .collect();
    let suffixes: Vec<&String> = extensions.iter().map(|e| &e.suffix).collect();
    let folders: Vec<TokenStream> = extensions
        .iter()
        .map(|e| match &e.folder {
            Some(f) => quote!(Some(#f)),
            None => quote!(None),
        })
        .collect();
    let since: Vec<TokenStream> = extensions.iter().map(|e| option_u32(e.since)).collect();
    let until: Vec<TokenStream> = extensions.iter().map(|e| option_u32(e.until)).collect();
    let count = extensions.len();
    quote! {
        /// The extensions a timestamped name can carry (`[[extension]]` of spec/directory.toml).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Extension {
            #(#docs #variants,)*
        }

        impl Extension {
            /// Every extension, in spec order.
            pub const ALL: [Extension; #count] = [#(Extension::#variants),*];

            /// The suffix as written, with its dot.
            pub const fn suffix(self) -> &'static str {
                match self {
                    #(Extension::#variants => #suffixes,)*
                }
            }

            /// The folder its files are in (`""`: the root), where spec/ states one.
            pub const fn folder(self) -> Option<&'static str> {
                match self {
                    #(Extension::#variants => #folders,)*
                }
            }

            /// The first format version that names files with it, if not the first.
            pub const fn since(self) -> Option<u32> {
                match self {
                    #(Extension::#variants => #since,)*
                }
            }

            /// The first format version that no longer does, if any.
            pub const fn until(self) -> Option<u32> {
                match self {
                    #(Extension::#variants => #until,)*
                }
            }

            /// The extension of a suffix given without its dot.
            pub fn from_suffix(without_dot: &str) -> Option<Extension> {
                Extension::ALL
                    .into_iter()
                    .find(|ext| ext.suffix().strip_prefix('.') == Some(without_dot))
            }
        }
    }
}

/// Everything `directory.toml` names, beside its folder table.
pub(super) fn emit_names(file: &SpecFile) -> TokenStream {
    let mut out = emit_constants(&file.folders, &file.file_names);
    out.extend(emit_extensions(&file.extensions));
    out
}
