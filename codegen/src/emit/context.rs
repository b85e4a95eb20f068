//! The state of emitting one file: takes the model, gives the pieces every
//! item kind needs — Rust types for model types, the imports a file needs
//! from other generated modules, and binrw attributes held back as
//! placeholders until the file's text is formatted (see `render`).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::expr::{lower, prim_tokens, Lowering};
use super::render::{render_item, split_items};
use crate::expr::Expr;
use crate::model::*;

pub(super) fn io_path() -> TokenStream {
    quote!(crate::format::io)
}

/// Where each named type is generated, to import it across modules.
pub struct Emitter<'a> {
    pub(super) table: &'a TypeTable,
    module_of: BTreeMap<String, String>,
    pub(super) current_module: String,
    pub(super) imports: RefCell<BTreeSet<(String, String)>>,
    /// binrw attributes, rendered by hand (prettyplease leaves attribute tokens unformatted).
    pub(super) attrs: RefCell<Vec<(String, Vec<String>)>>,
}

impl<'a> Emitter<'a> {
    pub fn new(spec: &'a Spec, table: &'a TypeTable) -> Self {
        let mut module_of = BTreeMap::new();
        for file in &spec.files {
            for name in file
                .enums
                .iter()
                .map(|e| &e.name)
                .chain(file.contexts.iter().map(|c| &c.name))
                .chain(file.structs.iter().map(|s| &s.name))
            {
                module_of.insert(name.clone(), file.module.clone());
            }
            for structure in &file.structs {
                for field in &structure.fields {
                    if let Layout::Switch(switch) = &field.layout {
                        module_of.insert(switch.rust_name.clone(), file.module.clone());
                    }
                }
            }
        }
        Emitter {
            table,
            module_of,
            current_module: String::new(),
            imports: RefCell::new(BTreeSet::new()),
            attrs: RefCell::new(Vec::new()),
        }
    }

    /// A named type (or one of its binrw argument structs), imported when it lives elsewhere.
    pub(super) fn named(&self, type_name: &str, suffix: &str) -> TokenStream {
        if let Some(module) = self.module_of.get(type_name) {
            if module != &self.current_module {
                self.imports
                    .borrow_mut()
                    .insert((module.clone(), format!("{type_name}{suffix}")));
            }
        }
        let id = format_ident!("{}{}", type_name, suffix);
        quote!(#id)
    }

    pub(super) fn ty_tokens(&self, ty: &Ty) -> TokenStream {
        match ty {
            Ty::Prim(p) => prim_tokens(*p),
            Ty::Bool => quote!(bool),
            Ty::Enum(n) | Ty::Struct(n) | Ty::Context(n) | Ty::Switch(n) => self.named(n, ""),
            Ty::Bytes => quote!(Vec<u8>),
            Ty::List(inner) => {
                let inner = self.ty_tokens(inner);
                quote!(Vec<#inner>)
            }
            Ty::Option(inner) => {
                let inner = self.ty_tokens(inner);
                quote!(Option<#inner>)
            }
            Ty::IntLit => quote!(u64),
            Ty::NoneLit | Ty::ByteStrLit => quote!(()),
        }
    }

    /// Enum names used inside lowered expressions (`Datatype::Any`) need importing too.
    pub(super) fn note_enums_in(&self, tokens: &TokenStream) {
        for tree in tokens.clone() {
            match tree {
                proc_macro2::TokenTree::Ident(id) => {
                    let name = id.to_string();
                    if self.table.enums.contains_key(&name)
                        || self.table.contexts.contains_key(&name)
                    {
                        self.named(&name, "");
                    }
                }
                proc_macro2::TokenTree::Group(group) => self.note_enums_in(&group.stream()),
                _ => {}
            }
        }
    }

    /// An attribute `#[name(items)]`, stood in for by a placeholder until rendering.
    pub(super) fn attr(&self, name: &str, items: &[TokenStream]) -> TokenStream {
        if items.is_empty() {
            return quote!();
        }
        let rendered: Vec<String> = items
            .iter()
            .flat_map(|item| split_items(item.clone()))
            .map(|item| render_item(&item))
            .collect();
        let mut attrs = self.attrs.borrow_mut();
        attrs.push((name.to_string(), rendered));
        let placeholder = format_ident!("__tiledb_attr_{}__", attrs.len() - 1);
        quote!(#[#placeholder])
    }

    /// Replaces the placeholders with the attributes: on one line when it
    /// fits in 100 columns (or shares its line), otherwise one item per line.
    pub(super) fn fill_attrs(&self, text: String) -> String {
        const MARK: &str = "#[__tiledb_attr_";
        let attrs = self.attrs.borrow();
        let render = |index: &str| -> Option<(&str, &Vec<String>)> {
            let (name, items) = attrs.get(index.parse::<usize>().ok()?)?;
            Some((name.as_str(), items))
        };
        let mut out = String::with_capacity(text.len() * 2);
        for line in text.lines() {
            let trimmed = line.trim_start();
            let indent = &line[..line.len() - trimmed.len()];
            // An attribute alone on its line may be spread over several lines.
            if let Some(index) = trimmed
                .strip_prefix(MARK)
                .and_then(|rest| rest.strip_suffix("__]"))
            {
                if let Some((name, items)) = render(index) {
                    let one_line = format!("#[{name}({})]", items.join(", "));
                    if indent.len() + one_line.len() <= 100 {
                        out.push_str(&format!("{indent}{one_line}\n"));
                    } else {
                        out.push_str(&format!("{indent}#[{name}(\n"));
                        for item in items {
                            out.push_str(&format!("{indent}    {item},\n"));
                        }
                        out.push_str(&format!("{indent})]\n"));
                    }
                    continue;
                }
            }
            let mut rest = line;
            while let Some(start) = rest.find(MARK) {
                out.push_str(&rest[..start]);
                let after = &rest[start + MARK.len()..];
                let Some(end) = after.find("__]") else {
                    break;
                };
                match render(&after[..end]) {
                    Some((name, items)) => {
                        out.push_str(&format!("#[{name}({})]", items.join(", ")));
                    }
                    None => out.push_str(&rest[start..start + MARK.len() + end + 3]),
                }
                rest = &after[end + 3..];
            }
            out.push_str(rest);
            out.push('\n');
        }
        out
    }
}

impl Emitter<'_> {
    /// The tokens of a checked expression; the enums and contexts it names
    /// are imported.
    pub(super) fn lower(&self, expr: &Expr, cx: &Lowering) -> TokenStream {
        let tokens = lower(expr, cx);
        self.note_enums_in(&tokens);
        tokens
    }
}
