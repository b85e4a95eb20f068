//! Expressions: takes a checked, typed expression tree and the side of the
//! binrw structure it is evaluated on, gives its Rust tokens. Every choice
//! was made by the checker, so this is a walk that cannot fail; only names
//! differ between sides (a field is a local when reading and a reference
//! into the struct when writing; a length is recomputed when writing).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::render::bare;
use crate::expr::{Arith, BinOp, Expr, ExprKind, NameKind, Prim};
use crate::naming::ident;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Read,
    Write,
}

/// Where an expression is evaluated.
pub struct Lowering<'a> {
    pub side: Side,
    /// On the write side, how a length, size or fixed value (not stored in
    /// the struct) is recomputed, by its spec name.
    pub temp: &'a dyn Fn(&str) -> TokenStream,
}

impl Lowering<'_> {
    /// The read side, where every name is a local or an import.
    pub fn read() -> Lowering<'static> {
        Lowering {
            side: Side::Read,
            temp: &|_| TokenStream::new(),
        }
    }
}

pub fn prim_tokens(prim: Prim) -> TokenStream {
    let ident = format_ident!("{}", prim.name());
    quote!(#ident)
}

fn op_tokens(op: BinOp) -> TokenStream {
    match op {
        BinOp::And => quote!(&&),
        BinOp::Or => quote!(||),
        BinOp::Eq => quote!(==),
        BinOp::Ne => quote!(!=),
        BinOp::Lt => quote!(<),
        BinOp::Le => quote!(<=),
        BinOp::Gt => quote!(>),
        BinOp::Ge => quote!(>=),
        BinOp::Add => quote!(+),
        BinOp::Sub => quote!(-),
        BinOp::Mul => quote!(*),
        BinOp::Div => quote!(/),
        BinOp::Rem => quote!(%),
    }
}

/// The Rust tokens of `expr` where `cx` says it is evaluated.
pub fn lower(expr: &Expr, cx: &Lowering) -> TokenStream {
    match &expr.kind {
        ExprKind::Int(int) => quote!(#int),
        ExprKind::Bool(b) => quote!(#b),
        ExprKind::ByteStr(bytes) => quote!(#bytes),
        ExprKind::None => quote!(None),
        ExprKind::Paren(inner) => {
            let inner = bare(lower(inner, cx));
            quote!((#inner))
        }
        ExprKind::Name { name, ident, kind } => lower_name(expr, name, ident, *kind, cx),
        ExprKind::Variant { enum_name, variant } => {
            let (e, v) = (ident(enum_name), ident(variant));
            quote!(#e::#v)
        }
        ExprKind::Not(inner) => {
            let inner = lower(inner, cx);
            quote!((!#inner))
        }
        ExprKind::Neg { inner, literal } => {
            let inner = lower(inner, cx);
            if *literal {
                quote!(-#inner)
            } else {
                quote!((-#inner))
            }
        }
        ExprKind::If {
            cond,
            then,
            otherwise,
        } => {
            let cond = bare(lower(cond, cx));
            let (a, b) = (lower(then, cx), lower(otherwise, cx));
            quote!((if #cond { #a } else { #b }))
        }
        ExprKind::Binary { op, left, right } => {
            let (x, y, op) = (lower(left, cx), lower(right, cx), op_tokens(*op));
            quote!((#x #op #y))
        }
        ExprKind::Arith {
            op,
            left,
            right,
            mode,
        } => lower_arith(*op, left, right, mode, cx),
        ExprKind::Len(receiver) => {
            let receiver = lower(receiver, cx);
            quote!((#receiver.len() as u64))
        }
        ExprKind::Method {
            receiver,
            method,
            args,
        } => {
            let receiver = lower(receiver, cx);
            let method = ident(method);
            let args: Vec<TokenStream> = args.iter().map(|a| bare(lower(a, cx))).collect();
            quote!(#receiver.#method(#(#args),*))
        }
        ExprKind::Member { base, member } => {
            let (base, member) = (lower(base, cx), ident(member));
            quote!(#base.#member)
        }
        ExprKind::Cast { inner, to } => {
            let (inner, to) = (lower(inner, cx), prim_tokens(*to));
            quote!((#inner as #to))
        }
        ExprKind::Clone(inner) => {
            let inner = lower(inner, cx);
            quote!(#inner.clone())
        }
        ExprKind::Some(inner) => {
            let inner = bare(lower(inner, cx));
            quote!(Some(#inner))
        }
        ExprKind::Gate {
            module,
            gate,
            version,
        } => {
            let (module, gate) = (ident(module), ident(gate));
            let version = bare(lower(version, cx));
            quote!(super::#module::#gate(#version))
        }
        ExprKind::Fold {
            list,
            var,
            body,
            any,
        } => {
            let (list, var, body) = (lower(list, cx), ident(var), bare(lower(body, cx)));
            if *any {
                quote!(#list.iter().any(|#var| #body))
            } else {
                quote!(#list.iter().map(|#var| #body).fold(0u64, u64::saturating_add))
            }
        }
        ExprKind::DeriveList { inner, context } => {
            let (inner, context) = (lower(inner, cx), ident(context));
            quote!(#inner.iter().map(#context::from).collect::<Vec<_>>())
        }
    }
}

fn lower_name(expr: &Expr, name: &str, id: &str, kind: NameKind, cx: &Lowering) -> TokenStream {
    let id = ident(id);
    match (kind, cx.side) {
        (NameKind::Source, _) => quote!(source.#id),
        (NameKind::Temp, Side::Write) => {
            let write = (cx.temp)(name);
            quote!((#write))
        }
        (NameKind::Field, Side::Write) if expr.ty.is_copy() => quote!((*#id)),
        _ => quote!(#id),
    }
}

fn lower_arith(op: BinOp, left: &Expr, right: &Expr, mode: &Arith, cx: &Lowering) -> TokenStream {
    let Arith::Checked {
        receiver,
        nonzero_divisor,
    } = mode
    else {
        let (x, y, op) = (lower(left, cx), lower(right, cx), op_tokens(op));
        return quote!((#x #op #y));
    };
    let x = match receiver {
        Some(literal) => quote!(#literal),
        None => lower(left, cx),
    };
    let y = bare(lower(right, cx));
    match op {
        BinOp::Add => quote!(#x.saturating_add(#y)),
        BinOp::Sub => quote!(#x.saturating_sub(#y)),
        BinOp::Mul => quote!(#x.saturating_mul(#y)),
        BinOp::Div if *nonzero_divisor => quote!((#x / #y)),
        BinOp::Rem if *nonzero_divisor => quote!((#x % #y)),
        BinOp::Div => quote!(#x.checked_div(#y).unwrap_or(0)),
        _ => quote!(#x.checked_rem(#y).unwrap_or(0)),
    }
}
