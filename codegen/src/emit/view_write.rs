//! The writer of a view (`<Name>View::write`): the mirror of its `parse`,
//! appending the struct's bytes to a `Vec<u8>` field by field in spec order.
//! It takes the fields the struct stores; lengths (`length_of`) are
//! computed from what they measure and checked to fit, fixed values
//! (`value`) written as the spec states them, and a byte field of a literal
//! or param size is checked to have it. Byte fields take anything that is
//! bytes (`crate::format::view::ByteSource`), so a field assembled from
//! pieces is written without first being joined; a list of structs takes
//! the generated structs and writes each through its own view's writer.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::context::Emitter;
use super::expr::prim_tokens;
use crate::model::*;
use crate::naming::ident;

/// How the writer handles one field.
enum Piece<'p> {
    Scalar(&'p ViewScalar),
    Bytes(&'p ViewLen),
    List(&'p ViewElem),
}

fn piece_of(plan: &ViewPlan, field: usize) -> Option<Piece<'_>> {
    plan.items.iter().find_map(|item| match item {
        ViewItem::Run { fields, .. } => fields.iter().find(|s| s.field == field).map(Piece::Scalar),
        ViewItem::Bytes { field: f, len } if *f == field => Some(Piece::Bytes(len)),
        ViewItem::List { field: f, elem, .. } if *f == field => Some(Piece::List(elem)),
        _ => None,
    })
}

impl Emitter<'_> {
    pub(super) fn emit_view_write(
        &self,
        structure: &Struct,
        plan: &ViewPlan,
        params: &[TokenStream],
    ) -> TokenStream {
        let v = quote!(crate::format::view);
        let mut args: Vec<TokenStream> = params.to_vec();
        let mut body = TokenStream::new();
        for (index, field) in structure.fields.iter().enumerate() {
            let Some(piece) = piece_of(plan, index) else {
                continue;
            };
            let id = ident(&field.ident);
            let path = format!("{}.{}", structure.name, field.name);
            match piece {
                Piece::Scalar(scalar) => match (&scalar.kind, &field.role) {
                    (ScalarKind::Prim(prim), Role::LengthOf(target)) => {
                        let ty = prim_tokens(*prim);
                        let target_field = structure
                            .fields
                            .iter()
                            .find(|f| &f.name == target)
                            .expect("validated target");
                        let target_id = ident(&target_field.ident);
                        let len = match target_field.layout {
                            Layout::Bytes { .. } => quote!(#target_id.byte_len()),
                            _ => quote!(#target_id.len()),
                        };
                        body.extend(quote! {
                            out.extend_from_slice(&#v::length::<#ty>(#len, #path)?.to_le_bytes());
                        });
                    }
                    (ScalarKind::Prim(prim), Role::Value(value)) => {
                        let ty = prim_tokens(*prim);
                        let value =
                            Literal::u64_unsuffixed(value.text.trim().parse::<u64>().unwrap_or(0));
                        body.extend(quote!(out.extend_from_slice(&#ty::to_le_bytes(#value));));
                    }
                    (ScalarKind::Prim(prim), _) => {
                        let ty = prim_tokens(*prim);
                        args.push(quote!(#id: #ty));
                        body.extend(quote!(out.extend_from_slice(&#id.to_le_bytes());));
                    }
                    (ScalarKind::Enum { name, .. }, _) => {
                        let ty = self.named(name, "");
                        args.push(quote!(#id: #ty));
                        body.extend(quote!(out.extend_from_slice(&#id.value().to_le_bytes());));
                    }
                    (ScalarKind::Bytes(n), _) => {
                        let n = Literal::u64_unsuffixed(*n);
                        args.push(quote!(#id: &[u8]));
                        body.extend(quote! {
                            #v::check_len(#id.len() as u64, #n, #path)?;
                            out.extend_from_slice(#id);
                        });
                    }
                },
                Piece::Bytes(len) => {
                    args.push(quote!(#id: &(impl #v::ByteSource + ?Sized)));
                    if let ViewLen::Param(p) = len {
                        let p =
                            super::view::param_as(structure, p, &Ty::Prim(Prim::U64), quote!(u64));
                        body.extend(quote!(#v::check_len(#id.byte_len() as u64, #p, #path)?;));
                    }
                    body.extend(quote!(#id.append_to(out);));
                }
                Piece::List(ViewElem::Prim(prim)) => {
                    let ty = prim_tokens(*prim);
                    args.push(quote!(#id: &[#ty]));
                    body.extend(quote! {
                        for value in #id {
                            out.extend_from_slice(&value.to_le_bytes());
                        }
                    });
                }
                Piece::List(elem @ ViewElem::Struct { name, .. }) => {
                    let owned = self.named(name, "");
                    let args_ty = self.elem_args_ty(name);
                    args.push(quote!(#id: &[impl #v::Element<#owned, #args_ty>]));
                    let elem_args = self.elem_write_args(structure, elem);
                    body.extend(quote! {
                        for item in #id {
                            item.write_element(out, (#elem_args))?;
                        }
                    });
                }
            }
        }
        let doc = format!(
            " Appends a `{}` to `out`, the mirror of [`Self::parse`]: lengths are computed from what they measure, fixed values written as the spec states them. A length that does not fit its field, or bytes of another size than the spec fixes, are refused (`Error::Usage`) and leave `out` as it was.",
            structure.name
        );
        let allow = if args.len() > 6 {
            quote!(#[allow(clippy::too_many_arguments)])
        } else {
            quote!()
        };
        quote! {
            #[doc = #doc]
            #allow
            pub fn write(out: &mut Vec<u8>, #(#args),*) -> crate::Result<()> {
                // A refusal leaves `out` as it was.
                let start = out.len();
                let mut fields = || -> crate::Result<()> {
                    #body
                    Ok(())
                };
                let written = fields();
                if written.is_err() {
                    out.truncate(start);
                }
                written
            }
        }
    }

    /// The params passed to a list element's writer, each followed by a comma.
    fn elem_write_args(&self, owner: &Struct, elem: &ViewElem) -> TokenStream {
        let ViewElem::Struct { name, args } = elem else {
            return quote!();
        };
        let params = self
            .table
            .structs
            .get(name)
            .map(|s| s.params.clone())
            .unwrap_or_default();
        let mut out = TokenStream::new();
        for (arg, param) in args.iter().zip(&params) {
            let ty = self.ty_tokens(&param.ty);
            out.extend(match arg {
                ViewArg::Param(p) => {
                    let value = super::view::param_as(owner, p, &param.ty, ty);
                    quote!(#value,)
                }
                ViewArg::Literal(n) => {
                    let n = Literal::u64_unsuffixed(*n);
                    quote!(#n,)
                }
            });
        }
        out
    }

    /// The tuple type of a struct's params.
    fn elem_args_ty(&self, name: &str) -> TokenStream {
        let tys: Vec<TokenStream> = self
            .table
            .structs
            .get(name)
            .map(|s| s.params.iter().map(|p| self.ty_tokens(&p.ty)).collect())
            .unwrap_or_default();
        quote!((#(#tys,)*))
    }

    /// `impl Element for` the generated struct: a list of them is written
    /// through the view's writer.
    pub(super) fn emit_view_element(&self, structure: &Struct) -> TokenStream {
        let v = quote!(crate::format::view);
        let owned = crate::naming::ident(&structure.name);
        let view = quote::format_ident!("{}View", structure.name);
        let args_ty = self.elem_args_ty(&structure.name);
        let params: Vec<TokenStream> = (0..structure.params.len())
            .map(|i| {
                let i = syn::Index::from(i);
                quote!(args.#i,)
            })
            .collect();
        let fields = self.elem_fields(&structure.name);
        let args = if structure.params.is_empty() {
            quote!(_args)
        } else {
            quote!(args)
        };
        quote! {
            impl #v::Element<#owned, #args_ty> for #owned {
                fn write_element(&self, out: &mut Vec<u8>, #args: #args_ty) -> crate::Result<()> {
                    let item = self;
                    #view::write(out, #(#params)* #fields)
                }
            }
        }
    }

    /// The stored fields of a list element, as its view's writer takes them.
    fn elem_fields(&self, name: &str) -> TokenStream {
        let Some(target) = self.table.structs.get(name) else {
            return quote!();
        };
        let mut out = TokenStream::new();
        for field in target.fields.iter().filter(|f| f.is_stored()) {
            let id = ident(&field.ident);
            out.extend(match &field.layout {
                Layout::Single(_) => quote!(item.#id,),
                Layout::Bytes { .. } => quote!(item.#id.as_slice(),),
                Layout::List {
                    elem: Ty::Prim(_), ..
                } => quote!(item.#id.as_slice(),),
                _ => quote!(item.#id.as_slice(),),
            });
        }
        out
    }
}
