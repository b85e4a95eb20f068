//! Minimum sizes: takes a type of the model, gives the fewest bytes a value
//! of it occupies (its unconditional fixed-size parts), which the generated
//! readers use to bound a list before allocating it.

use std::collections::BTreeSet;

use super::context::Emitter;
use crate::expr::{Expr, ExprKind};
use crate::model::*;

impl Emitter<'_> {
    /// The fewest bytes a type occupies; used to bound lists before allocating.
    pub(super) fn min_size_of_ty(&self, ty: &Ty, visiting: &mut BTreeSet<String>) -> u64 {
        match ty {
            Ty::Prim(p) => p.size(),
            Ty::Bool => 1,
            Ty::Enum(name) => self
                .table
                .enums
                .get(name)
                .map(|e| e.repr.size())
                .unwrap_or(0),
            Ty::Struct(name) => match self.table.structs.get(name) {
                Some(structure) => self.min_size(structure, visiting),
                None => 0,
            },
            _ => 0,
        }
    }

    pub(super) fn min_size(&self, structure: &Struct, visiting: &mut BTreeSet<String>) -> u64 {
        if !visiting.insert(structure.name.clone()) {
            return 0;
        }
        let mut total = 0u64;
        for field in &structure.fields {
            if field.is_conditional() {
                continue;
            }
            let size = match &field.layout {
                _ if field.sized.is_some() => field
                    .sized
                    .as_ref()
                    .and_then(|s| literal_u64(&s.expr))
                    .unwrap_or(0),
                Layout::Single(ty) => self.min_size_of_ty(ty, visiting),
                Layout::Bytes {
                    len: BytesLen::Size(size),
                } => literal_u64(&size.expr).unwrap_or(0),
                Layout::Bytes {
                    len: BytesLen::Terminated { or_end, .. },
                } => u64::from(!or_end),
                Layout::List {
                    elem,
                    len: ListLen::Count(count),
                } => literal_u64(&count.expr)
                    .unwrap_or(0)
                    .saturating_mul(self.min_size_of_ty(elem, visiting)),
                Layout::Switch(switch) => switch
                    .types()
                    .map(|t| self.min_size_of_ty(&Ty::Struct(t.clone()), visiting))
                    .min()
                    .unwrap_or(0),
                _ => 0,
            };
            total = total.saturating_add(size);
        }
        visiting.remove(&structure.name);
        total
    }
}

/// The value of a size or count written as a plain integer literal (which
/// the checker may have cast to u64), if it is one.
fn literal_u64(expr: &Expr) -> Option<u64> {
    match &expr.kind {
        ExprKind::Int(int) => int.base10_parse().ok(),
        ExprKind::Cast { inner, .. } => match &inner.kind {
            ExprKind::Int(int) => int.base10_parse().ok(),
            _ => None,
        },
        _ => None,
    }
}
