//! `fixed_size`: a struct whose stored length upstream states (the options
//! of a filter, a raw C struct) says so, and the codegen checks that its
//! fields add up to it, so a field added to one side only fails here
//! instead of misreading whatever follows the struct in a file.

use super::{Ctx, FileShell, Parsed};
use crate::error::{SpecError, SpecErrorKind};
use crate::model::*;

/// Checks every declared `fixed_size` against the struct's fields.
pub(super) fn check_fixed_sizes(
    shells: &[FileShell],
    table: &TypeTable<Parsed>,
) -> Result<(), SpecError> {
    for shell in shells {
        let ctx = Ctx {
            file: &shell.display,
        };
        for raw in &shell.raw.structs {
            let Some(declared) = raw.fixed_size else {
                continue;
            };
            let Some(structure) = table.structs.get(&raw.name) else {
                continue;
            };
            let computed = match fixed_size(structure, table, 0) {
                Ok(size) if size == declared => continue,
                Ok(size) => format!("{size} bytes"),
                Err(why) => format!("no fixed number of bytes ({why})"),
            };
            return Err(ctx.err(
                format!("struct {}, fixed_size", raw.name),
                SpecErrorKind::FixedSizeMismatch { declared, computed },
            ));
        }
    }
    Ok(())
}

/// The bytes a struct always takes, or why it has no fixed size.
pub(crate) fn fixed_size<E: LiteralSize>(
    structure: &Struct<E>,
    table: &TypeTable<E>,
    depth: usize,
) -> Result<u64, String> {
    if depth > 32 {
        return Err(format!("{} nests too deep", structure.name));
    }
    let mut total = 0u64;
    for field in &structure.fields {
        if field.is_conditional() {
            return Err(format!("field {} is gated or conditional", field.name));
        }
        let size = match &field.layout {
            Layout::Single(ty) => {
                ty_size(ty, table, depth).map_err(|why| format!("field {}: {why}", field.name))?
            }
            Layout::Bytes {
                len: BytesLen::Size(size),
            } => size
                .literal()
                .ok_or_else(|| format!("field {} has a computed size", field.name))?,
            Layout::List {
                elem,
                len: ListLen::Count(count),
            } => {
                let count = count
                    .literal()
                    .ok_or_else(|| format!("field {} has a computed count", field.name))?;
                count.saturating_mul(
                    ty_size(elem, table, depth)
                        .map_err(|why| format!("field {}: {why}", field.name))?,
                )
            }
            _ => return Err(format!("field {} has a variable length", field.name)),
        };
        total = total.saturating_add(size);
    }
    Ok(total)
}

fn ty_size<E: LiteralSize>(ty: &Ty, table: &TypeTable<E>, depth: usize) -> Result<u64, String> {
    match ty {
        Ty::Prim(prim) => Ok(prim.size()),
        Ty::Bool => Ok(1),
        Ty::Enum(name) => table
            .enums
            .get(name)
            .map(|e| e.repr.size())
            .ok_or_else(|| format!("unknown enum {name}")),
        Ty::Struct(name) => match table.structs.get(name) {
            Some(inner) => fixed_size(inner, table, depth + 1),
            None => Err(format!("unknown struct {name}")),
        },
        other => Err(format!("a {} has no fixed size", other.spec_name())),
    }
}

/// An expression that may be a plain integer literal.
pub(crate) trait LiteralSize {
    fn literal(&self) -> Option<u64>;
}

impl LiteralSize for Parsed {
    fn literal(&self) -> Option<u64> {
        match &self.syn {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(int),
                ..
            }) => int.base10_parse().ok(),
            _ => None,
        }
    }
}
