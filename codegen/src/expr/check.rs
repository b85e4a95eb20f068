//! The type checker: takes the text of an expression (parsed by `syn`) and a
//! [`Scope`] of the names it may use, gives a typed [`Expr`] tree or an
//! [`ExprError`]. Every decision the generated code depends on (which name,
//! which coercion, which arithmetic) is made here, once.

use proc_macro2::Span;
use quote::quote;
use syn::{Expr as SynExpr, Lit, UnOp};

use super::{rust_ident, Arith, BinOp, Expr, ExprKind, NameKind, Prim, Ty};
use crate::model::{Enum, PropTy, TypeTable};

/// A name an expression may use.
#[derive(Debug, Clone)]
pub struct Binding {
    pub name: String,
    pub ident: String,
    pub ty: Ty,
    pub kind: NameKind,
}

/// The names visible to one expression, and the types they may lead to.
pub struct Scope<'a, E> {
    pub table: &'a TypeTable<E>,
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

fn bad<T>(reason: impl Into<String>) -> Result<T, ExprError> {
    Err(ExprError::Bad(reason.into()))
}

fn node(kind: ExprKind, ty: Ty) -> Expr {
    Expr { kind, ty }
}

/// Parses the text of an expression.
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

/// Converts a value to `to`, inserting a cast only where the types differ.
pub fn coerce(value: Expr, to: &Ty) -> Result<Expr, ExprError> {
    if &value.ty == to {
        return Ok(if value.ty.is_copy() {
            value
        } else {
            node(ExprKind::Clone(Box::new(value)), to.clone())
        });
    }
    match (&value.ty, to) {
        (Ty::IntLit, Ty::Prim(_)) => Ok(Expr {
            kind: value.kind,
            ty: to.clone(),
        }),
        (Ty::Prim(from), Ty::Prim(target)) if from.is_integer() && target.is_integer() => {
            let to_prim = *target;
            Ok(node(
                ExprKind::Cast {
                    inner: Box::new(value),
                    to: to_prim,
                },
                to.clone(),
            ))
        }
        (Ty::NoneLit, Ty::Option(_)) => Ok(node(ExprKind::None, to.clone())),
        (_, Ty::Option(inner)) => {
            let inner = coerce(value, inner)?;
            Ok(node(ExprKind::Some(Box::new(inner)), to.clone()))
        }
        _ => bad(format!(
            "has type {} where {} is expected",
            value.ty.spec_name(),
            to.spec_name()
        )),
    }
}

impl<E> Scope<'_, E> {
    fn lookup(&self, name: &str) -> Result<&Binding, ExprError> {
        if let Some(binding) = self.names.iter().rev().find(|b| b.name == name) {
            return Ok(binding);
        }
        if self.later.iter().any(|later| later == name) {
            return Err(ExprError::LaterField(name.to_string()));
        }
        Err(ExprError::UnknownName(name.to_string()))
    }

    fn enum_of(&self, name: &str) -> Result<&Enum, ExprError> {
        self.table
            .enums
            .get(name)
            .ok_or_else(|| ExprError::UnknownName(name.to_string()))
    }

    /// Checks an expression and that it has type `want`.
    pub fn check_to(&self, expr: &SynExpr, want: &Ty) -> Result<Expr, ExprError> {
        let checked = self.check(expr)?;
        if want == &Ty::Bool && checked.ty != Ty::Bool {
            return bad(format!(
                "is a {} where a condition (bool) is expected",
                checked.ty.spec_name()
            ));
        }
        // A list of structs passed where a list of a context derived from
        // that struct is expected: convert each element.
        if let (Ty::List(have), Ty::List(target)) = (&checked.ty, want) {
            if let (Ty::Struct(source), Ty::Context(context)) = (&**have, &**target) {
                let derived = self
                    .table
                    .contexts
                    .get(context)
                    .and_then(|c| c.from.as_ref());
                if derived == Some(source) {
                    let kind = ExprKind::DeriveList {
                        inner: Box::new(checked),
                        context: context.clone(),
                    };
                    return Ok(node(kind, want.clone()));
                }
            }
        }
        coerce(checked, want)
    }

    /// Checks an integer-valued expression (a size or count), as a u64.
    pub fn check_u64(&self, expr: &SynExpr) -> Result<Expr, ExprError> {
        let checked = self.check(expr)?;
        if !checked.ty.is_integer() {
            return bad(format!(
                "is a {} where an integer is expected",
                checked.ty.spec_name()
            ));
        }
        coerce(checked, &Ty::Prim(Prim::U64))
    }

    pub fn check(&self, expr: &SynExpr) -> Result<Expr, ExprError> {
        match expr {
            SynExpr::Lit(lit) => check_lit(&lit.lit),
            SynExpr::Paren(paren) => {
                let inner = self.check(&paren.expr)?;
                let ty = inner.ty.clone();
                Ok(node(ExprKind::Paren(Box::new(inner)), ty))
            }
            SynExpr::Group(group) => self.check(&group.expr),
            SynExpr::Path(path) => self.check_path(&path.path),
            SynExpr::Unary(unary) => self.check_unary(unary),
            SynExpr::Binary(binary) => self.check_binary(binary),
            SynExpr::If(expr_if) => self.check_if(expr_if),
            SynExpr::MethodCall(call) => self.check_method(call),
            SynExpr::Call(call) => self.check_call(call),
            SynExpr::Field(access) => self.check_member(access),
            SynExpr::Cast(cast) => {
                let inner = self.check(&cast.expr)?;
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
                coerce(inner, &Ty::Prim(target))
            }
            other => bad(format!(
                "`{}` is not part of the expression language",
                quote!(#other)
            )),
        }
    }

    fn check_unary(&self, unary: &syn::ExprUnary) -> Result<Expr, ExprError> {
        let inner = self.check(&unary.expr)?;
        match unary.op {
            UnOp::Not(_) if inner.ty == Ty::Bool => {
                Ok(node(ExprKind::Not(Box::new(inner)), Ty::Bool))
            }
            UnOp::Neg(_) if inner.ty == Ty::IntLit => {
                let kind = ExprKind::Neg {
                    inner: Box::new(inner),
                    literal: true,
                };
                Ok(node(kind, Ty::IntLit))
            }
            UnOp::Neg(_) if matches!(inner.ty, Ty::Prim(p) if p.is_signed() || !p.is_integer()) => {
                let ty = inner.ty.clone();
                let kind = ExprKind::Neg {
                    inner: Box::new(inner),
                    literal: false,
                };
                Ok(node(kind, ty))
            }
            _ => bad(format!(
                "operator {} does not apply to a {}",
                quote!(#unary).to_string().chars().next().unwrap_or('?'),
                inner.ty.spec_name()
            )),
        }
    }

    fn check_if(&self, expr_if: &syn::ExprIf) -> Result<Expr, ExprError> {
        let cond = self.check_to(&expr_if.cond, &Ty::Bool)?;
        let then = single_expr(&expr_if.then_branch)?;
        let Some((_, else_branch)) = &expr_if.else_branch else {
            return bad("`if` needs an `else`");
        };
        let otherwise = match &**else_branch {
            SynExpr::Block(block) => single_expr(&block.block)?,
            other => other,
        };
        let a = self.check(then)?;
        let b = self.check(otherwise)?;
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
        let kind = ExprKind::If {
            cond: Box::new(cond),
            then: Box::new(coerce(a, &ty)?),
            otherwise: Box::new(coerce(b, &ty)?),
        };
        Ok(node(kind, ty))
    }

    fn check_member(&self, access: &syn::ExprField) -> Result<Expr, ExprError> {
        let base = self.check(&access.base)?;
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
                        ExprError::Bad(format!("struct {name} keeps no field {member_name}"))
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
        let kind = ExprKind::Member {
            base: Box::new(base),
            member: ident_name,
        };
        Ok(node(kind, ty))
    }

    fn check_path(&self, path: &syn::Path) -> Result<Expr, ExprError> {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        match segments.as_slice() {
            [name] if name == "None" => Ok(node(ExprKind::None, Ty::NoneLit)),
            [name] => {
                let binding = self.lookup(name)?;
                let kind = ExprKind::Name {
                    name: binding.name.clone(),
                    ident: binding.ident.clone(),
                    kind: binding.kind,
                };
                Ok(node(kind, binding.ty.clone()))
            }
            [enum_name, variant] => {
                let spec_enum = self.enum_of(enum_name)?;
                let Some(found) = spec_enum.variant(variant) else {
                    return bad(format!("{enum_name} has no variant {variant}"));
                };
                let kind = ExprKind::Variant {
                    enum_name: enum_name.clone(),
                    variant: found.rust_name.clone(),
                };
                Ok(node(kind, Ty::Enum(enum_name.clone())))
            }
            _ => bad(format!("cannot resolve the path {}", segments.join("::"))),
        }
    }

    fn check_binary(&self, binary: &syn::ExprBinary) -> Result<Expr, ExprError> {
        let a = self.check(&binary.left)?;
        let b = self.check(&binary.right)?;
        let op = &binary.op;
        match op {
            syn::BinOp::And(_) | syn::BinOp::Or(_) => {
                if a.ty != Ty::Bool || b.ty != Ty::Bool {
                    return bad("`&&` and `||` need conditions on both sides");
                }
                let op = if matches!(op, syn::BinOp::And(_)) {
                    BinOp::And
                } else {
                    BinOp::Or
                };
                Ok(binary_node(op, a, b, Ty::Bool))
            }
            syn::BinOp::Eq(_)
            | syn::BinOp::Ne(_)
            | syn::BinOp::Lt(_)
            | syn::BinOp::Le(_)
            | syn::BinOp::Gt(_)
            | syn::BinOp::Ge(_) => check_comparison(comparison_op(op), a, b),
            syn::BinOp::Add(_)
            | syn::BinOp::Sub(_)
            | syn::BinOp::Mul(_)
            | syn::BinOp::Div(_)
            | syn::BinOp::Rem(_) => {
                let nonzero_divisor = matches!(&*binary.right, SynExpr::Lit(l) if matches!(&l.lit, Lit::Int(i) if i.base10_digits() != "0"));
                check_arith(arith_op(op), a, b, nonzero_divisor)
            }
            _ => bad(format!(
                "operator `{}` is not part of the expression language",
                quote!(#op)
            )),
        }
    }

    fn check_method(&self, call: &syn::ExprMethodCall) -> Result<Expr, ExprError> {
        let receiver = self.check(&call.receiver)?;
        let method = call.method.to_string();
        let plain = |receiver: Expr, args: Vec<Expr>, ty: Ty| {
            let kind = ExprKind::Method {
                receiver: Box::new(receiver),
                method: method.clone(),
                args,
            };
            Ok(node(kind, ty))
        };
        match (method.as_str(), &receiver.ty, call.args.len()) {
            ("len", Ty::List(_) | Ty::Bytes, 0) => {
                Ok(node(ExprKind::Len(Box::new(receiver)), Ty::Prim(Prim::U64)))
            }
            ("starts_with" | "ends_with", Ty::Bytes, 1) => {
                let affix = self.check(&call.args[0])?;
                if affix.ty != Ty::ByteStrLit {
                    return bad(format!(
                        "`{method}` takes a byte string literal such as b\".del\""
                    ));
                }
                plain(receiver, vec![affix], Ty::Bool)
            }
            ("is_some" | "is_none", Ty::Option(_), 0) => plain(receiver, vec![], Ty::Bool),
            ("unwrap_or", Ty::Option(inner), 1) => {
                let inner = (**inner).clone();
                let fallback = coerce(self.check(&call.args[0])?, &inner)?;
                let receiver = if receiver.ty.is_copy() {
                    receiver
                } else {
                    let ty = receiver.ty.clone();
                    node(ExprKind::Clone(Box::new(receiver)), ty)
                };
                plain(receiver, vec![fallback], inner)
            }
            ("value", Ty::Enum(name), 0) => {
                let repr = self.enum_of(name)?.repr;
                plain(receiver, vec![], Ty::Prim(repr))
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
                    PropTy::Struct => {
                        return bad(format!("property {property} names a struct, not a value"))
                    }
                };
                plain(receiver, vec![], ty)
            }
            _ => bad(format!(
                "method `{method}` with {} argument(s) does not apply to a {}",
                call.args.len(),
                receiver.ty.spec_name()
            )),
        }
    }

    fn check_call(&self, call: &syn::ExprCall) -> Result<Expr, ExprError> {
        let SynExpr::Path(func) = &*call.func else {
            return bad("only named functions can be called");
        };
        let name = func
            .path
            .get_ident()
            .map(std::string::ToString::to_string)
            .unwrap_or_default();
        match (name.as_str(), call.args.len()) {
            ("Some", 1) => {
                let inner = self.check(&call.args[0])?;
                let ty = Ty::Option(Box::new(inner.ty.clone()));
                Ok(node(ExprKind::Some(Box::new(inner)), ty))
            }
            (gate, 1) if self.table.gates.1.contains(gate) => {
                let version = coerce(self.check(&call.args[0])?, &Ty::Prim(Prim::U32))?;
                let kind = ExprKind::Gate {
                    module: self.table.gates.0.clone(),
                    gate: gate.to_string(),
                    version: Box::new(version),
                };
                Ok(node(kind, Ty::Bool))
            }
            ("sum" | "any", 2) => self.check_fold(&name, &call.args[0], &call.args[1]),
            ("size_of_datatype", 1) => {
                let arg = self.check(&call.args[0])?;
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
                let kind = ExprKind::Method {
                    receiver: Box::new(arg),
                    method: "size".into(),
                    args: vec![],
                };
                Ok(node(kind, Ty::Prim(*prim)))
            }
            _ => bad(format!(
                "unknown function `{name}` with {} argument(s)",
                call.args.len()
            )),
        }
    }
}

impl<E> Scope<'_, E> {
    /// `sum(list, |x| body)` and `any(list, |x| body)`: the body is checked
    /// with `x` bound to an element of `list` (an integer body for `sum`, a
    /// condition for `any`).
    fn check_fold(&self, name: &str, list: &SynExpr, closure: &SynExpr) -> Result<Expr, ExprError> {
        let list = self.check(list)?;
        let Ty::List(elem) = &list.ty else {
            return bad(format!(
                "`{name}` takes a list first, not a {}",
                list.ty.spec_name()
            ));
        };
        let SynExpr::Closure(closure) = closure else {
            return bad(format!("`{name}` takes a closure `|x| ...` second"));
        };
        let var = match closure.inputs.iter().collect::<Vec<_>>().as_slice() {
            [syn::Pat::Ident(pat)] => pat.ident.to_string(),
            _ => {
                return bad(format!(
                    "the closure of `{name}` takes one plain name, `|x| ...`"
                ))
            }
        };
        if self.names.iter().any(|b| b.name == var) {
            return bad(format!(
                "the closure's name `{var}` hides a name already in scope"
            ));
        }
        let mut names = self.names.clone();
        names.push(Binding {
            name: var.clone(),
            ident: rust_ident(&var),
            ty: (**elem).clone(),
            kind: NameKind::Entry,
        });
        let inner = Scope {
            table: self.table,
            names,
            later: self.later.clone(),
        };
        let any = name == "any";
        let (body, ty) = if any {
            (inner.check_to(&closure.body, &Ty::Bool)?, Ty::Bool)
        } else {
            (inner.check_u64(&closure.body)?, Ty::Prim(Prim::U64))
        };
        let kind = ExprKind::Fold {
            list: Box::new(list),
            var: rust_ident(&var),
            body: Box::new(body),
            any,
        };
        Ok(node(kind, ty))
    }
}

fn check_lit(lit: &Lit) -> Result<Expr, ExprError> {
    match lit {
        Lit::Int(int) => {
            let ty = match int.suffix() {
                "" => Ty::IntLit,
                suffix => match Prim::parse(suffix) {
                    Some(p) => Ty::Prim(p),
                    None => return bad(format!("unknown integer suffix {suffix}")),
                },
            };
            Ok(node(ExprKind::Int(int.clone()), ty))
        }
        Lit::Bool(b) => Ok(node(ExprKind::Bool(b.value), Ty::Bool)),
        Lit::ByteStr(bytes) => Ok(node(ExprKind::ByteStr(bytes.clone()), Ty::ByteStrLit)),
        _ => bad("only integer and boolean literals are allowed"),
    }
}

fn binary_node(op: BinOp, left: Expr, right: Expr, ty: Ty) -> Expr {
    let kind = ExprKind::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
    };
    node(kind, ty)
}

fn comparison_op(op: &syn::BinOp) -> BinOp {
    match op {
        syn::BinOp::Eq(_) => BinOp::Eq,
        syn::BinOp::Ne(_) => BinOp::Ne,
        syn::BinOp::Lt(_) => BinOp::Lt,
        syn::BinOp::Le(_) => BinOp::Le,
        syn::BinOp::Gt(_) => BinOp::Gt,
        _ => BinOp::Ge,
    }
}

fn arith_op(op: &syn::BinOp) -> BinOp {
    match op {
        syn::BinOp::Add(_) => BinOp::Add,
        syn::BinOp::Sub(_) => BinOp::Sub,
        syn::BinOp::Mul(_) => BinOp::Mul,
        syn::BinOp::Div(_) => BinOp::Div,
        _ => BinOp::Rem,
    }
}

fn check_comparison(op: BinOp, a: Expr, b: Expr) -> Result<Expr, ExprError> {
    let ordered = !matches!(op, BinOp::Eq | BinOp::Ne);
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
        (a, b)
    } else {
        return bad(format!(
            "cannot compare a {} with a {}",
            a.ty.spec_name(),
            b.ty.spec_name()
        ));
    };
    Ok(binary_node(op, x, y, Ty::Bool))
}

fn check_arith(op: BinOp, a: Expr, b: Expr, nonzero_divisor: bool) -> Result<Expr, ExprError> {
    if !(a.ty.is_integer() && b.ty.is_integer()) {
        return bad(format!(
            "arithmetic needs integers, not {} and {}",
            a.ty.spec_name(),
            b.ty.spec_name()
        ));
    }
    let ty = unify_ints(&a.ty, &b.ty);
    let arith = |left: Expr, right: Expr, mode: Arith, ty: Ty| {
        let kind = ExprKind::Arith {
            op,
            left: Box::new(left),
            right: Box::new(right),
            mode,
        };
        Ok(node(kind, ty))
    };
    if ty == Ty::IntLit {
        return arith(a, b, Arith::Literal, ty);
    }
    let Ty::Prim(prim) = ty else {
        return bad("arithmetic on a non-integer");
    };
    let receiver = if a.ty == Ty::IntLit {
        Some(suffixed(&a, prim)?)
    } else {
        None
    };
    let x = coerce(a, &ty)?;
    let y = coerce(b, &ty)?;
    let mode = Arith::Checked {
        receiver,
        nonzero_divisor,
    };
    arith(x, y, mode, ty)
}

/// An integer literal (or its negation) spelled with a type suffix: `2u64`.
/// Anything else of literal type (`(2)`, `1 + 1`) has no such spelling.
fn suffixed(literal: &Expr, prim: Prim) -> Result<syn::LitInt, ExprError> {
    let digits = match &literal.kind {
        ExprKind::Int(int) => int.to_string(),
        ExprKind::Neg { inner, .. } => match &inner.kind {
            ExprKind::Int(int) => format!("-{int}"),
            _ => return bad("a literal left of an arithmetic operator must be a plain integer"),
        },
        _ => return bad("a literal left of an arithmetic operator must be a plain integer"),
    };
    Ok(syn::LitInt::new(
        &format!("{digits}{}", prim.name()),
        Span::call_site(),
    ))
}

fn single_expr(block: &syn::Block) -> Result<&SynExpr, ExprError> {
    match block.stmts.as_slice() {
        [syn::Stmt::Expr(expr, None)] => Ok(expr),
        _ => bad("each branch of `if` must be a single expression"),
    }
}

/// The binding of an `each` list's entry, whose type is the element type of `over`.
pub fn entry_binding(entry: &str, over: &Expr) -> Result<Binding, ExprError> {
    match &over.ty {
        Ty::List(elem) => Ok(Binding {
            name: entry.to_string(),
            ident: rust_ident(entry),
            ty: (**elem).clone(),
            kind: NameKind::Entry,
        }),
        other => Err(ExprError::Bad(format!(
            "is a {}, not a list",
            other.spec_name()
        ))),
    }
}
