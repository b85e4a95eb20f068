//! Views: takes a struct with a [`ViewPlan`] (`view = true` in spec/), gives
//! `<Name>View<'a>`, a zero-copy reading of it over `&'a [u8]`, and its
//! mirror, `<Name>View::write`, which appends the same bytes to a `Vec<u8>`.
//!
//! `parse` checks every length once, against the bytes present, and keeps
//! each run of fixed-size fields as a `&[u8; N]`: an accessor is a
//! little-endian load at a constant offset, with no bounds check left to
//! run. Variable-size fields are borrowed slices or lazy lists
//! (`crate::format::view::ViewList`). Errors are the runtime's own: the
//! byte offset from the start of the parsed bytes, the `Struct.field` path
//! and a structured `Cause`, as the binrw readers give them.

use std::collections::BTreeSet;

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::context::Emitter;
use super::expr::prim_tokens;
use crate::model::*;
use crate::naming::ident;

/// What the items of a plan add to the view, gathered item by item.
#[derive(Default)]
struct ViewBody {
    members: TokenStream,
    parse: TokenStream,
    /// `parse_open`: when the last item is a list, `parse` up to it, then
    /// the list taking every byte left, its elements checked as they are
    /// read (one pass where `parse` needs two to find its end).
    parse_open: Option<TokenStream>,
    build: TokenStream,
    accessors: TokenStream,
    min_size: u64,
    fixed_stride: bool,
}

fn view_path() -> TokenStream {
    quote!(crate::format::view)
}

/// The first line of a field's doc, for its accessor.
fn first_line(field: &Field) -> String {
    let doc = field.doc.as_deref().unwrap_or("");
    let line = doc.split(". ").next().unwrap_or("").trim_end_matches('.');
    if line.is_empty() {
        format!(" The `{}` field.", field.name)
    } else {
        format!(" {line}.")
    }
}

fn run_ident(index: usize) -> syn::Ident {
    format_ident!("run{}", index)
}

/// Where a fixed-size field lives: its run's index among the items and its
/// offset there.
fn locate(plan: &ViewPlan, field: usize) -> Option<(usize, &ViewScalar)> {
    plan.items
        .iter()
        .enumerate()
        .find_map(|(i, item)| match item {
            ViewItem::Run { fields, .. } => {
                fields.iter().find(|s| s.field == field).map(|s| (i, s))
            }
            _ => None,
        })
}

/// A little-endian load of `prim` at `offset` of the array `run`.
fn load(run: TokenStream, offset: u64, prim: Prim) -> TokenStream {
    let ty = prim_tokens(prim);
    let bytes = (offset..offset + prim.size()).map(|i| {
        let i = Literal::usize_unsuffixed(i as usize);
        quote!(#run[#i])
    });
    quote!(#ty::from_le_bytes([#(#bytes),*]))
}

/// `value` (of type `prim`, unsigned) as a u64.
fn as_u64(value: TokenStream, prim: Prim) -> TokenStream {
    if prim == Prim::U64 {
        value
    } else {
        quote!(u64::from(#value))
    }
}

/// The param `name` of `owner` as a value of type `to` (cast only when its
/// own type differs).
pub(super) fn param_as(owner: &Struct, name: &str, to: &Ty, to_tokens: TokenStream) -> TokenStream {
    let id = ident(name);
    match owner.params.iter().find(|p| p.name == name) {
        Some(param) if &param.ty == to => quote!(#id),
        _ => quote!(#id as #to_tokens),
    }
}

impl Emitter<'_> {
    /// The view type of a list element.
    fn elem_tokens(&self, elem: &ViewElem) -> TokenStream {
        match elem {
            ViewElem::Prim(prim) => prim_tokens(*prim),
            ViewElem::Struct { name, .. } => {
                let view = self.named(name, "View");
                quote!(#view<'a>)
            }
        }
    }

    /// The params a view's `parse`, `write` and `stride` use.
    fn used_params(plan: &ViewPlan) -> BTreeSet<String> {
        let mut used = BTreeSet::new();
        for item in &plan.items {
            match item {
                ViewItem::Bytes {
                    len: ViewLen::Param(p),
                    ..
                } => {
                    used.insert(p.clone());
                }
                ViewItem::List {
                    elem: ViewElem::Struct { args, .. },
                    ..
                } => {
                    for arg in args {
                        if let ViewArg::Param(p) = arg {
                            used.insert(p.clone());
                        }
                    }
                }
                _ => {}
            }
        }
        used
    }

    /// The arguments passed to a list's elements, as a tuple.
    fn elem_args(&self, owner: &Struct, elem: &ViewElem) -> TokenStream {
        let ViewElem::Struct { name, args } = elem else {
            return quote!(());
        };
        let params = self
            .table
            .structs
            .get(name)
            .map(|s| s.params.clone())
            .unwrap_or_default();
        let values = args.iter().zip(&params).map(|(arg, param)| {
            let ty = self.ty_tokens(&param.ty);
            match arg {
                ViewArg::Param(p) => param_as(owner, p, &param.ty, ty),
                ViewArg::Literal(n) => {
                    let n = Literal::u64_unsuffixed(*n);
                    quote!(#n)
                }
            }
        });
        quote!((#(#values,)*))
    }

    pub(super) fn emit_view(&self, structure: &Struct) -> TokenStream {
        let Some(plan) = &structure.view else {
            return quote!();
        };
        let v = view_path();
        let name = format_ident!("{}View", structure.name);
        let used = Self::used_params(plan);
        let param_ident = |p: &Named| {
            if used.contains(&p.name) {
                ident(&p.ident)
            } else {
                format_ident!("_{}", p.ident)
            }
        };
        let params: Vec<TokenStream> = structure
            .params
            .iter()
            .map(|p| {
                let id = param_ident(p);
                let ty = self.ty_tokens(&p.ty);
                quote!(#id: #ty)
            })
            .collect();
        let param_tys: Vec<TokenStream> = structure
            .params
            .iter()
            .map(|p| self.ty_tokens(&p.ty))
            .collect();

        let mut body = ViewBody {
            fixed_stride: true,
            ..ViewBody::default()
        };
        for (i, item) in plan.items.iter().enumerate() {
            match item {
                ViewItem::Run { size, fields } => {
                    self.view_run(structure, i, *size, fields, &mut body);
                }
                ViewItem::Bytes { field, len } => {
                    self.view_bytes(structure, plan, &structure.fields[*field], len, &mut body);
                }
                ViewItem::List { field, count, elem } => {
                    let last = i + 1 == plan.items.len();
                    let field = &structure.fields[*field];
                    self.view_list(structure, plan, (field, *count, elem), last, &mut body);
                }
            }
        }
        let ViewBody {
            members,
            parse,
            parse_open,
            build,
            accessors,
            min_size,
            fixed_stride,
        } = body;
        let open_fn = parse_open.map(|open| {
            let doc = format!(
                " Reads a `{}` from the start of `bytes` without finding where its last list ends: the list takes every byte left, and each element is checked (and a fault reported) as the list is iterated. For a caller that reads every element and needs nothing after them, one pass instead of [`Self::parse`]'s two.",
                structure.name
            );
            quote! {
                #[doc = #doc]
                #[inline]
                pub fn parse_open(bytes: &'a [u8], #(#params),*) -> std::result::Result<Self, #v::ViewFault> {
                    let rest = bytes;
                    #open
                    Ok(#name { #build })
                }
            }
        });
        let stride_body = self.stride_body(structure, plan, fixed_stride, min_size);
        let write = self.emit_view_write(structure, plan, &params);
        let element = self.emit_view_element(structure);
        let min = Literal::usize_unsuffixed(min_size as usize);
        let doc = format!(
            " A zero-copy view of [`{}`] over the bytes it is stored in: each length checked once by [`Self::parse`], each field read in place when asked for. [`Self::write`] writes the same layout.",
            structure.name
        );
        let parse_doc = format!(
            " Reads a `{}` from the start of `bytes`; returns it and the bytes after it. Errors name the byte offset within `bytes` and the field.",
            structure.name
        );
        let args_ty = quote!((#(#param_tys,)*));
        let param_names: Vec<syn::Ident> = structure.params.iter().map(param_ident).collect();
        let (args_name, destructure) = if structure.params.is_empty() {
            (quote!(_args), quote!())
        } else {
            (quote!(args), quote!(let (#(#param_names,)*) = args;))
        };
        quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, Copy)]
            pub struct #name<'a> {
                #members
            }

            impl<'a> #name<'a> {
                /// The fewest bytes the struct occupies: its fixed-size fields.
                pub const MIN_SIZE: usize = #min;

                #[doc = #parse_doc]
                #[inline]
                pub fn parse(bytes: &'a [u8], #(#params),*) -> crate::Result<(Self, &'a [u8])> {
                    Ok(<Self as #v::View<'a>>::parse_with(bytes, (#(#param_names,)*))?)
                }

                #open_fn

                #accessors

                #write
            }

            impl<'a> #v::View<'a> for #name<'a> {
                type Args = #args_ty;
                const MIN_SIZE: usize = #min;

                #[inline]
                #stride_body

                #[inline]
                fn parse_with(bytes: &'a [u8], #args_name: Self::Args) -> #v::Parsed<'a, Self> {
                    #destructure
                    let rest = bytes;
                    #parse
                    Ok((#name { #build }, rest))
                }
            }

            #element
        }
    }

    /// A run of fixed-size fields: one array member, its split, the checks
    /// of its fixed values and its accessors.
    fn view_run(
        &self,
        structure: &Struct,
        i: usize,
        size: u64,
        fields: &[ViewScalar],
        out: &mut ViewBody,
    ) {
        let v = view_path();
        out.min_size += size;
        let run = run_ident(i);
        let n = Literal::usize_unsuffixed(size as usize);
        let first = &structure.fields[fields[0].field];
        let path = format!("{}.{}", structure.name, first.name);
        out.members.extend(quote!(#run: &'a [u8; #n],));
        out.parse.extend(quote! {
            let (#run, rest) = #v::fixed::<#n>(rest, bytes.len() - rest.len(), #path)?;
        });
        out.build.extend(quote!(#run,));
        for scalar in fields {
            let field = &structure.fields[scalar.field];
            if let (Role::Value(value), ScalarKind::Prim(prim)) = (&field.role, &scalar.kind) {
                let read = as_u64(load(quote!(#run), scalar.offset, *prim), *prim);
                let expected =
                    Literal::u64_unsuffixed(value.text.trim().parse::<u64>().unwrap_or(0));
                let run_at = quote!((bytes.len() - rest.len() - #n) as u64);
                let at = if scalar.offset == 0 {
                    run_at
                } else {
                    let off = Literal::u64_unsuffixed(scalar.offset);
                    quote!(#run_at + #off)
                };
                let path = format!("{}.{}", structure.name, field.name);
                out.parse.extend(quote! {
                    #v::check_value(#read, #expected, #at, #path)?;
                });
            }
            out.accessors
                .extend(self.scalar_accessor(structure, i, scalar));
        }
    }

    /// A `bytes` field sized by an earlier field or a param: a borrowed slice.
    fn view_bytes(
        &self,
        structure: &Struct,
        plan: &ViewPlan,
        field: &Field,
        len: &ViewLen,
        out: &mut ViewBody,
    ) {
        let v = view_path();
        let id = ident(&field.ident);
        let path = format!("{}.{}", structure.name, field.name);
        let len_expr = match len {
            ViewLen::Field(index) => {
                out.fixed_stride = false;
                let (run, scalar) = locate(plan, *index).expect("planned");
                let ScalarKind::Prim(prim) = scalar.kind else {
                    unreachable!("a length is an integer field")
                };
                let run = run_ident(run);
                as_u64(load(quote!(#run), scalar.offset, prim), prim)
            }
            ViewLen::Param(p) => param_as(structure, p, &Ty::Prim(Prim::U64), quote!(u64)),
        };
        out.members.extend(quote!(#id: &'a [u8],));
        out.parse.extend(quote! {
            let (#id, rest) = #v::bytes(rest, bytes.len() - rest.len(), #len_expr, #path)?;
        });
        out.build.extend(quote!(#id,));
        let doc = first_line(field);
        out.accessors.extend(quote! {
            #[doc = #doc]
            #[inline]
            pub fn #id(&self) -> &'a [u8] {
                self.#id
            }
        });
    }

    /// A list counted by an earlier field: a lazy [`ViewList`]; when it is
    /// the last item, `parse_open` too.
    fn view_list(
        &self,
        structure: &Struct,
        plan: &ViewPlan,
        (field, count, elem): (&Field, usize, &ViewElem),
        last: bool,
        out: &mut ViewBody,
    ) {
        let v = view_path();
        out.fixed_stride = false;
        let id = ident(&field.ident);
        let path = format!("{}.{}", structure.name, field.name);
        let (run, scalar) = locate(plan, count).expect("planned");
        let ScalarKind::Prim(prim) = scalar.kind else {
            unreachable!("a count is an integer field")
        };
        let run = run_ident(run);
        let read = as_u64(load(quote!(#run), scalar.offset, prim), prim);
        let elem_ty = self.elem_tokens(elem);
        let args = self.elem_args(structure, elem);
        out.members.extend(quote!(#id: #v::ViewList<'a, #elem_ty>,));
        if last {
            let mut open = out.parse.clone();
            open.extend(quote! {
                let #id = #v::ViewList::split_open(rest, bytes.len() - rest.len(), #read, #args, #path)?;
            });
            out.parse_open = Some(open);
        }
        out.parse.extend(quote! {
            let (#id, rest) = #v::ViewList::split(rest, bytes.len() - rest.len(), #read, #args, #path)?;
        });
        out.build.extend(quote!(#id,));
        let doc = first_line(field);
        out.accessors.extend(quote! {
            #[doc = #doc]
            #[inline]
            pub fn #id(&self) -> #v::ViewList<'a, #elem_ty> {
                self.#id
            }
        });
    }

    /// `View::stride`: the size given the params, when nothing else varies.
    fn stride_body(
        &self,
        structure: &Struct,
        plan: &ViewPlan,
        fixed: bool,
        min_size: u64,
    ) -> TokenStream {
        if !fixed {
            return quote! {
                fn stride(_args: Self::Args) -> Option<usize> {
                    None
                }
            };
        }
        let min = Literal::usize_unsuffixed(min_size as usize);
        let mut terms = TokenStream::new();
        for item in &plan.items {
            if let ViewItem::Bytes {
                len: ViewLen::Param(p),
                ..
            } = item
            {
                let index = structure
                    .params
                    .iter()
                    .position(|q| &q.name == p)
                    .unwrap_or(0);
                let index = syn::Index::from(index);
                terms.extend(quote! {
                    let size = size.checked_add(usize::try_from(args.#index).ok()?)?;
                });
            }
        }
        if terms.is_empty() {
            quote! {
                fn stride(_args: Self::Args) -> Option<usize> {
                    Some(#min)
                }
            }
        } else {
            quote! {
                fn stride(args: Self::Args) -> Option<usize> {
                    let size: usize = #min;
                    #terms
                    Some(size)
                }
            }
        }
    }

    fn scalar_accessor(&self, structure: &Struct, run: usize, scalar: &ViewScalar) -> TokenStream {
        let field = &structure.fields[scalar.field];
        let id = ident(&field.ident);
        let run = run_ident(run);
        let doc = first_line(field);
        match &scalar.kind {
            ScalarKind::Prim(prim) => {
                let ty = prim_tokens(*prim);
                let read = load(quote!(self.#run), scalar.offset, *prim);
                quote! {
                    #[doc = #doc]
                    #[inline]
                    pub fn #id(&self) -> #ty {
                        #read
                    }
                }
            }
            ScalarKind::Enum { name, repr } => {
                let enum_ty = self.named(name, "");
                let read = load(quote!(self.#run), scalar.offset, *repr);
                // Enums sit before any variable-size field: the run's
                // offset is the field's offset in the struct.
                let off = Literal::u64_unsuffixed(self.constant_offset(structure, scalar));
                let path = format!("{}.{}", structure.name, field.name);
                quote! {
                    #[doc = #doc]
                    #[inline]
                    pub fn #id(&self) -> crate::Result<#enum_ty> {
                        let value = #read;
                        #enum_ty::from_value(value).ok_or_else(|| {
                            crate::Error::corrupt(#off, #path, crate::error::Cause::BadEnumValue {
                                enum_name: #name,
                                value: value as u64,
                            })
                        })
                    }
                }
            }
            ScalarKind::Bytes(n) => {
                let start = Literal::usize_unsuffixed(scalar.offset as usize);
                let end = Literal::usize_unsuffixed((scalar.offset + n) as usize);
                quote! {
                    #[doc = #doc]
                    #[inline]
                    pub fn #id(&self) -> &'a [u8] {
                        &self.#run[#start..#end]
                    }
                }
            }
        }
    }

    /// The offset of a field in a run that only fixed-size fields precede.
    fn constant_offset(&self, structure: &Struct, scalar: &ViewScalar) -> u64 {
        let plan = structure.view.as_ref().expect("a view");
        let mut base = 0;
        for item in &plan.items {
            if let ViewItem::Run { size, fields } = item {
                if fields.iter().any(|s| s.field == scalar.field) {
                    return base + scalar.offset;
                }
                base += size;
            }
        }
        scalar.offset
    }
}
