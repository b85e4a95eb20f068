//! The expression language: checks names and types of an expression parsed by
//! `syn`, and lowers it to Rust for the read side or the write side of a
//! binrw structure.
//!
//! Integers of different widths meet in u64 (i64 if one is signed);
//! `+ - *` saturate and `/ %` by a zero yield 0, so that hostile lengths make
//! the later bound checks fail instead of panicking.

use std::collections::BTreeMap;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{BinOp, Expr as SynExpr, Lit, UnOp};

use crate::model::{Context, Enum, Prim, PropTy, Struct, Ty};

/// Every named type of the spec, for resolving expressions.
#[derive(Debug, Default)]
pub struct TypeTable {
    pub enums: BTreeMap<String, Enum>,
    pub contexts: BTreeMap<String, Context>,
    pub structs: BTreeMap<String, Struct>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Read,
    Write,
}

#[derive(Debug, Clone)]
pub enum BindingKind {
    Param,
    /// A field kept in the struct: a local value when reading, a reference when writing.
    Field,
    /// A length, size or fixed value: a local when reading, recomputed when writing.
    Temp {
        write: TokenStream,
    },
    /// The entry of an `each` list (a reference to a context).
    Entry,
    /// A name that stands for a place expression, e.g. `source.field`.
    Place(TokenStream),
}

#[derive(Debug, Clone)]
pub struct Binding {
    pub name: String,
    pub ident: String,
    pub ty: Ty,
    pub kind: BindingKind,
}

pub struct Scope<'a> {
    pub table: &'a TypeTable,
    pub side: Side,
    pub names: Vec<Binding>,
    /// Fields declared after the expression's field, for a precise message.
    pub later: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExprError {
    UnknownName(String),
    LaterField(String),
    Bad(String),
}

pub struct Lowered {
    pub tokens: TokenStream,
    pub ty: Ty,
}

fn bad<T>(reason: impl Into<String>) -> Result<T, ExprError> {
    Err(ExprError::Bad(reason.into()))
}

pub fn prim_tokens(prim: Prim) -> TokenStream {
    let ident = format_ident!("{}", prim.name());
    quote!(#ident)
}

/// UpperCamelCase of a spec spelling: `DATETIME_YEAR` → `DatetimeYear`, `INT32` → `Int32`.
pub fn upper_camel(spec_name: &str) -> String {
    let mut out = String::new();
    for part in spec_name.split(['_', '-', ' ']) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(&chars.as_str().to_lowercase());
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'V');
    }
    out
}

/// A Rust identifier for a spec name: keywords get a trailing underscore.
pub fn rust_ident(name: &str) -> String {
    const KEYWORDS: &[&str] = &[
        "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn",
        "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
        "return", "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe",
        "use", "where", "while", "async", "await", "dyn", "abstract", "become", "box", "do",
        "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
        "gen",
    ];
    if KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

pub fn ident(name: &str) -> syn::Ident {
    syn::Ident::new(name, Span::call_site())
}

/// Parses the text of an expression; spec names that are Rust keywords are
/// accepted by renaming them first.
pub fn parse(text: &str) -> Result<SynExpr, String> {
    syn::parse_str::<SynExpr>(text).map_err(|err| format!("cannot parse \"{text}\": {err}"))
}

/// Unifies two integer types: equal types stay, a literal takes the other's
/// type, different widths meet in u64 (or i64 when one is signed).
fn unify_ints(a: &Ty, b: &Ty) -> Ty {
    match (a, b) {
        (Ty::IntLit, other) | (other, Ty::IntLit) => other.clone(),
        (x, y) if x == y => x.clone(),
        (Ty::Prim(p), Ty::Prim(q)) if p.is_signed() || q.is_signed() => Ty::Prim(Prim::I64),
        _ => Ty::Prim(Prim::U64),
    }
}

/// Converts a lowered value to `to`, inserting a cast only where the types differ.
pub fn coerce(value: Lowered, to: &Ty) -> Result<TokenStream, ExprError> {
    let Lowered { tokens, ty } = value;
    if &ty == to {
        return Ok(if ty.is_copy() {
            tokens
        } else {
            quote!(#tokens.clone())
        });
    }
    match (&ty, to) {
        (Ty::IntLit, Ty::Prim(_)) => Ok(tokens),
        (Ty::Prim(from), Ty::Prim(target)) if from.is_integer() && target.is_integer() => {
            let target = prim_tokens(*target);
            Ok(quote!((#tokens as #target)))
        }
        (Ty::NoneLit, Ty::Option(_)) => Ok(quote!(None)),
        (_, Ty::Option(inner)) => {
            let inner_tokens = crate::emit::bare(coerce(Lowered { tokens, ty }, inner)?);
            Ok(quote!(Some(#inner_tokens)))
        }
        _ => bad(format!(
            "has type {} where {} is expected",
            ty.spec_name(),
            to.spec_name()
        )),
    }
}

impl Scope<'_> {
    fn lookup(&self, name: &str) -> Result<&Binding, ExprError> {
        if let Some(binding) = self.names.iter().rev().find(|b| b.name == name) {
            return Ok(binding);
        }
        if self.later.iter().any(|later| later == name) {
            return Err(ExprError::LaterField(name.to_string()));
        }
        Err(ExprError::UnknownName(name.to_string()))
    }

    fn name_value(&self, binding: &Binding) -> TokenStream {
        let id = ident(&binding.ident);
        match (&binding.kind, self.side) {
            (BindingKind::Place(place), _) => place.clone(),
            (BindingKind::Temp { write }, Side::Write) => quote!((#write)),
            (BindingKind::Field, Side::Write) if binding.ty.is_copy() => quote!((*#id)),
            _ => quote!(#id),
        }
    }

    fn enum_of(&self, name: &str) -> Result<&Enum, ExprError> {
        self.table
            .enums
            .get(name)
            .ok_or_else(|| ExprError::UnknownName(name.to_string()))
    }

    /// Lowers an expression and checks that it has type `want`.
    pub fn lower_to(&self, expr: &SynExpr, want: &Ty) -> Result<TokenStream, ExprError> {
        let lowered = self.lower(expr)?;
        if want == &Ty::Bool && lowered.ty != Ty::Bool {
            return bad(format!(
                "is a {} where a condition (bool) is expected",
                lowered.ty.spec_name()
            ));
        }
        // A list of structs passed where a list of a context derived from
        // that struct is expected: convert each element.
        if let (Ty::List(have), Ty::List(target)) = (&lowered.ty, want) {
            if let (Ty::Struct(source), Ty::Context(context)) = (&**have, &**target) {
                let derived = self
                    .table
                    .contexts
                    .get(context)
                    .and_then(|c| c.from.as_ref());
                if derived == Some(source) {
                    let tokens = lowered.tokens;
                    let context = ident(context);
                    return Ok(quote!(#tokens.iter().map(#context::from).collect::<Vec<_>>()));
                }
            }
        }
        coerce(lowered, want)
    }

    /// Lowers an integer-valued expression (a size or count) to a u64.
    pub fn lower_u64(&self, expr: &SynExpr) -> Result<TokenStream, ExprError> {
        let lowered = self.lower(expr)?;
        if !lowered.ty.is_integer() {
            return bad(format!(
                "is a {} where an integer is expected",
                lowered.ty.spec_name()
            ));
        }
        coerce(lowered, &Ty::Prim(Prim::U64))
    }

    pub fn lower(&self, expr: &SynExpr) -> Result<Lowered, ExprError> {
        match expr {
            SynExpr::Lit(lit) => match &lit.lit {
                Lit::Int(int) => {
                    let ty = match int.suffix() {
                        "" => Ty::IntLit,
                        suffix => match Prim::parse(suffix) {
                            Some(p) => Ty::Prim(p),
                            None => return bad(format!("unknown integer suffix {suffix}")),
                        },
                    };
                    Ok(Lowered {
                        tokens: quote!(#int),
                        ty,
                    })
                }
                Lit::Bool(b) => Ok(Lowered {
                    tokens: quote!(#b),
                    ty: Ty::Bool,
                }),
                Lit::ByteStr(bytes) => Ok(Lowered {
                    tokens: quote!(#bytes),
                    ty: Ty::ByteStrLit,
                }),
                _ => bad("only integer and boolean literals are allowed"),
            },
            SynExpr::Paren(paren) => {
                let inner = self.lower(&paren.expr)?;
                let tokens = crate::emit::bare(inner.tokens);
                Ok(Lowered {
                    tokens: quote!((#tokens)),
                    ty: inner.ty,
                })
            }
            SynExpr::Group(group) => self.lower(&group.expr),
            SynExpr::Path(path) => self.lower_path(&path.path),
            SynExpr::Unary(unary) => {
                let inner = self.lower(&unary.expr)?;
                let tokens = inner.tokens;
                match unary.op {
                    UnOp::Not(_) if inner.ty == Ty::Bool => Ok(Lowered {
                        tokens: quote!((!#tokens)),
                        ty: Ty::Bool,
                    }),
                    UnOp::Neg(_) if inner.ty == Ty::IntLit => Ok(Lowered {
                        tokens: quote!(-#tokens),
                        ty: Ty::IntLit,
                    }),
                    UnOp::Neg(_) if matches!(inner.ty, Ty::Prim(p) if p.is_signed() || !p.is_integer()) => {
                        Ok(Lowered {
                            tokens: quote!((-#tokens)),
                            ty: inner.ty,
                        })
                    }
                    _ => bad(format!(
                        "operator {} does not apply to a {}",
                        quote!(#unary).to_string().chars().next().unwrap_or('?'),
                        inner.ty.spec_name()
                    )),
                }
            }
            SynExpr::Binary(binary) => self.lower_binary(binary),
            SynExpr::If(expr_if) => {
                let cond = crate::emit::bare(self.lower_to(&expr_if.cond, &Ty::Bool)?);
                let then = single_expr(&expr_if.then_branch)?;
                let Some((_, else_branch)) = &expr_if.else_branch else {
                    return bad("`if` needs an `else`");
                };
                let otherwise = match &**else_branch {
                    SynExpr::Block(block) => single_expr(&block.block)?,
                    other => other,
                };
                let a = self.lower(then)?;
                let b = self.lower(otherwise)?;
                let ty = if a.ty.is_integer() && b.ty.is_integer() {
                    unify_ints(&a.ty, &b.ty)
                } else if a.ty == b.ty {
                    a.ty.clone()
                } else {
                    return bad(format!(
                        "the branches of `if` have types {} and {}",
                        a.ty.spec_name(),
                        b.ty.spec_name()
                    ));
                };
                let a = coerce(a, &ty)?;
                let b = coerce(b, &ty)?;
                Ok(Lowered {
                    tokens: quote!((if #cond { #a } else { #b })),
                    ty,
                })
            }
            SynExpr::MethodCall(call) => self.lower_method(call),
            SynExpr::Call(call) => self.lower_call(call),
            SynExpr::Field(access) => {
                let base = self.lower(&access.base)?;
                let syn::Member::Named(member) = &access.member else {
                    return bad("tuple fields are not part of the expression language");
                };
                let member_name = member.to_string();
                let (ident_name, ty) = match &base.ty {
                    Ty::Context(ctx) => {
                        let context = self
                            .table
                            .contexts
                            .get(ctx)
                            .ok_or_else(|| ExprError::UnknownName(ctx.clone()))?;
                        let field = context
                            .fields
                            .iter()
                            .find(|f| f.name == member_name)
                            .ok_or_else(|| {
                                ExprError::Bad(format!("context {ctx} has no field {member_name}"))
                            })?;
                        (field.ident.clone(), field.ty.clone())
                    }
                    Ty::Struct(name) => {
                        let structure = self
                            .table
                            .structs
                            .get(name)
                            .ok_or_else(|| ExprError::UnknownName(name.clone()))?;
                        let field = structure
                            .fields
                            .iter()
                            .find(|f| f.name == member_name && f.is_stored())
                            .ok_or_else(|| {
                                ExprError::Bad(format!(
                                    "struct {name} keeps no field {member_name}"
                                ))
                            })?;
                        (field.ident.clone(), field.value_ty())
                    }
                    other => {
                        return bad(format!(
                            "`.{member_name}` on a {}, which has no fields",
                            other.spec_name()
                        ))
                    }
                };
                let base_tokens = base.tokens;
                let member_ident = ident(&ident_name);
                Ok(Lowered {
                    tokens: quote!(#base_tokens.#member_ident),
                    ty,
                })
            }
            SynExpr::Cast(cast) => {
                let inner = self.lower(&cast.expr)?;
                let target = match &*cast.ty {
                    syn::Type::Path(path) => path
                        .path
                        .get_ident()
                        .and_then(|i| Prim::parse(&i.to_string())),
                    _ => None,
                };
                let Some(target) = target else {
                    return bad("`as` casts only to a primitive number type");
                };
                if !inner.ty.is_integer() && !matches!(inner.ty, Ty::Prim(_)) {
                    return bad(format!(
                        "cannot cast a {} to a number",
                        inner.ty.spec_name()
                    ));
                }
                let tokens = coerce(inner, &Ty::Prim(target))?;
                Ok(Lowered {
                    tokens,
                    ty: Ty::Prim(target),
                })
            }
            other => bad(format!(
                "`{}` is not part of the expression language",
                quote!(#other)
            )),
        }
    }

    fn lower_path(&self, path: &syn::Path) -> Result<Lowered, ExprError> {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        match segments.as_slice() {
            [name] if name == "None" => Ok(Lowered {
                tokens: quote!(None),
                ty: Ty::NoneLit,
            }),
            [name] => {
                let binding = self.lookup(name)?;
                Ok(Lowered {
                    tokens: self.name_value(binding),
                    ty: binding.ty.clone(),
                })
            }
            [enum_name, variant] => {
                let spec_enum = self.enum_of(enum_name)?;
                let Some(found) = spec_enum.variant(variant) else {
                    return bad(format!("{enum_name} has no variant {variant}"));
                };
                let enum_ident = ident(enum_name);
                let variant_ident = ident(&found.rust_name);
                Ok(Lowered {
                    tokens: quote!(#enum_ident::#variant_ident),
                    ty: Ty::Enum(enum_name.clone()),
                })
            }
            _ => bad(format!("cannot resolve the path {}", segments.join("::"))),
        }
    }

    fn lower_binary(&self, binary: &syn::ExprBinary) -> Result<Lowered, ExprError> {
        let a = self.lower(&binary.left)?;
        let b = self.lower(&binary.right)?;
        let op = &binary.op;
        match op {
            BinOp::And(_) | BinOp::Or(_) => {
                if a.ty != Ty::Bool || b.ty != Ty::Bool {
                    return bad("`&&` and `||` need conditions on both sides");
                }
                let (x, y) = (a.tokens, b.tokens);
                Ok(Lowered {
                    tokens: quote!((#x #op #y)),
                    ty: Ty::Bool,
                })
            }
            BinOp::Eq(_)
            | BinOp::Ne(_)
            | BinOp::Lt(_)
            | BinOp::Le(_)
            | BinOp::Gt(_)
            | BinOp::Ge(_) => {
                let ordered = !matches!(op, BinOp::Eq(_) | BinOp::Ne(_));
                let (x, y) = if a.ty.is_integer() && b.ty.is_integer() {
                    let ty = unify_ints(&a.ty, &b.ty);
                    (coerce(a, &ty)?, coerce(b, &ty)?)
                } else if (a.ty == b.ty && !ordered && a.ty.is_copy())
                    || (!ordered
                        && matches!(
                            (&a.ty, &b.ty),
                            (Ty::Option(_), Ty::NoneLit) | (Ty::NoneLit, Ty::Option(_))
                        ))
                    || matches!((&a.ty, &b.ty), (Ty::Prim(p), Ty::Prim(q)) if p == q)
                {
                    (a.tokens, b.tokens)
                } else {
                    return bad(format!(
                        "cannot compare a {} with a {}",
                        a.ty.spec_name(),
                        b.ty.spec_name()
                    ));
                };
                Ok(Lowered {
                    tokens: quote!((#x #op #y)),
                    ty: Ty::Bool,
                })
            }
            BinOp::Add(_) | BinOp::Sub(_) | BinOp::Mul(_) | BinOp::Div(_) | BinOp::Rem(_) => {
                if !(a.ty.is_integer() && b.ty.is_integer()) {
                    return bad(format!(
                        "arithmetic needs integers, not {} and {}",
                        a.ty.spec_name(),
                        b.ty.spec_name()
                    ));
                }
                let ty = unify_ints(&a.ty, &b.ty);
                if ty == Ty::IntLit {
                    let (x, y) = (a.tokens, b.tokens);
                    return Ok(Lowered {
                        tokens: quote!((#x #op #y)),
                        ty,
                    });
                }
                let Ty::Prim(prim) = ty else {
                    return bad("arithmetic on a non-integer");
                };
                let b_is_nonzero_literal = matches!(&*binary.right, SynExpr::Lit(l) if matches!(&l.lit, Lit::Int(i) if i.base10_digits() != "0"));
                let a_is_literal = a.ty == Ty::IntLit;
                let x = coerce(a, &ty)?;
                let y = crate::emit::bare(coerce(b, &ty)?);
                // A literal receiver needs its type spelled out.
                let x = if a_is_literal {
                    let suffixed = syn::LitInt::new(
                        &format!("{}{}", x.to_string().replace(' ', ""), prim.name()),
                        Span::call_site(),
                    );
                    quote!(#suffixed)
                } else {
                    x
                };
                let tokens = match op {
                    BinOp::Add(_) => quote!(#x.saturating_add(#y)),
                    BinOp::Sub(_) => quote!(#x.saturating_sub(#y)),
                    BinOp::Mul(_) => quote!(#x.saturating_mul(#y)),
                    BinOp::Div(_) if b_is_nonzero_literal => quote!((#x / #y)),
                    BinOp::Rem(_) if b_is_nonzero_literal => quote!((#x % #y)),
                    BinOp::Div(_) => quote!(#x.checked_div(#y).unwrap_or(0)),
                    _ => quote!(#x.checked_rem(#y).unwrap_or(0)),
                };
                Ok(Lowered { tokens, ty })
            }
            _ => bad(format!(
                "operator `{}` is not part of the expression language",
                quote!(#op)
            )),
        }
    }

    fn lower_method(&self, call: &syn::ExprMethodCall) -> Result<Lowered, ExprError> {
        let receiver = self.lower(&call.receiver)?;
        let method = call.method.to_string();
        let recv = receiver.tokens.clone();
        match (method.as_str(), &receiver.ty, call.args.len()) {
            ("len", Ty::List(_) | Ty::Bytes, 0) => Ok(Lowered {
                tokens: quote!((#recv.len() as u64)),
                ty: Ty::Prim(Prim::U64),
            }),
            ("starts_with" | "ends_with", Ty::Bytes, 1) => {
                let affix = self.lower(&call.args[0])?;
                if affix.ty != Ty::ByteStrLit {
                    return bad(format!(
                        "`{method}` takes a byte string literal such as b\".del\""
                    ));
                }
                let m = ident(&method);
                let affix = affix.tokens;
                Ok(Lowered {
                    tokens: quote!(#recv.#m(#affix)),
                    ty: Ty::Bool,
                })
            }
            ("is_some" | "is_none", Ty::Option(_), 0) => {
                let m = ident(&method);
                Ok(Lowered {
                    tokens: quote!(#recv.#m()),
                    ty: Ty::Bool,
                })
            }
            ("unwrap_or", Ty::Option(inner), 1) => {
                let fallback = self.lower(&call.args[0])?;
                let fallback = crate::emit::bare(coerce(fallback, inner)?);
                let recv = if receiver.ty.is_copy() {
                    recv
                } else {
                    quote!(#recv.clone())
                };
                Ok(Lowered {
                    tokens: quote!(#recv.unwrap_or(#fallback)),
                    ty: (**inner).clone(),
                })
            }
            ("value", Ty::Enum(name), 0) => {
                let spec_enum = self.enum_of(name)?;
                Ok(Lowered {
                    tokens: quote!(#recv.value()),
                    ty: Ty::Prim(spec_enum.repr),
                })
            }
            (property, Ty::Enum(name), 0) => {
                let spec_enum = self.enum_of(name)?;
                let Some((_, prop_ty)) = spec_enum.properties.iter().find(|(p, _)| p == property)
                else {
                    return bad(format!("{name} has no property {property}"));
                };
                let ty = match prop_ty {
                    PropTy::Int(p) => Ty::Prim(*p),
                    PropTy::Bool => Ty::Bool,
                    PropTy::Str => return bad(format!("property {property} is text, not a value")),
                };
                let m = ident(property);
                Ok(Lowered {
                    tokens: quote!(#recv.#m()),
                    ty,
                })
            }
            _ => bad(format!(
                "method `{method}` with {} argument(s) does not apply to a {}",
                call.args.len(),
                receiver.ty.spec_name()
            )),
        }
    }

    fn lower_call(&self, call: &syn::ExprCall) -> Result<Lowered, ExprError> {
        let SynExpr::Path(func) = &*call.func else {
            return bad("only named functions can be called");
        };
        let name = func
            .path
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_default();
        match (name.as_str(), call.args.len()) {
            ("Some", 1) => {
                let inner = self.lower(&call.args[0])?;
                let tokens = crate::emit::bare(inner.tokens);
                Ok(Lowered {
                    tokens: quote!(Some(#tokens)),
                    ty: Ty::Option(Box::new(inner.ty)),
                })
            }
            ("size_of_datatype", 1) => {
                let arg = self.lower(&call.args[0])?;
                if arg.ty != Ty::Enum("Datatype".into()) {
                    return bad(format!(
                        "size_of_datatype takes a Datatype, not a {}",
                        arg.ty.spec_name()
                    ));
                }
                let datatype = self.enum_of("Datatype")?;
                let Some((_, PropTy::Int(prim))) =
                    datatype.properties.iter().find(|(p, _)| p == "size")
                else {
                    return bad("size_of_datatype needs the Datatype property `size`");
                };
                let tokens = arg.tokens;
                Ok(Lowered {
                    tokens: quote!(#tokens.size()),
                    ty: Ty::Prim(*prim),
                })
            }
            _ => bad(format!(
                "unknown function `{name}` with {} argument(s)",
                call.args.len()
            )),
        }
    }
}

fn single_expr(block: &syn::Block) -> Result<&SynExpr, ExprError> {
    match block.stmts.as_slice() {
        [syn::Stmt::Expr(expr, None)] => Ok(expr),
        _ => bad("each branch of `if` must be a single expression"),
    }
}
