//! Whether any cell of a group (a tile, a fragment) can satisfy a
//! condition, judged from what is recorded about the group without reading
//! its cells: the smallest and largest value of each field, its null count
//! and cell count. The answer errs towards "maybe": a group is ruled out
//! only when TileDB's semantics say no cell in the bounds can pass — a null
//! fails every comparison, NaN passes only `!=` (so `!=` and `not in` on a
//! float are never ruled out by bounds), values compare as the field's type
//! (strings byte-wise).

use std::cmp::Ordering;

use crate::filter::Datatype;
use crate::schema::Scalar;

use super::node::{Comparison, Node};

/// What is known of one field over a group of cells; `None` = unknown.
#[derive(Debug, Clone, Default)]
pub struct FieldBounds {
    /// The type the bounds are values of.
    pub datatype: Option<Datatype>,
    /// The smallest and largest non-null value (a float's non-NaN values;
    /// NaN cells may lie outside).
    pub min_max: Option<(Scalar, Scalar)>,
    /// How many cells are null.
    pub nulls: Option<u64>,
    /// How many cells the group has.
    pub cells: Option<u64>,
}

impl FieldBounds {
    fn all_null(&self) -> bool {
        matches!((self.nulls, self.cells), (Some(n), Some(c)) if c > 0 && n >= c)
    }

    /// The bounds when they are values of `datatype`.
    fn range(&self, datatype: Datatype) -> Option<(&Scalar, &Scalar)> {
        if self.datatype != Some(datatype) {
            return None;
        }
        let (lo, hi) = self.min_max.as_ref()?;
        let nan = |s: &Scalar| matches!(s, Scalar::Float(f) if f.is_nan());
        (!nan(lo) && !nan(hi)).then_some((lo, hi))
    }
}

fn ordering(a: &Scalar, b: &Scalar) -> Option<Ordering> {
    match (a, b) {
        (Scalar::Float(x), Scalar::Float(y)) => x.partial_cmp(y),
        (Scalar::Int(_), Scalar::Int(_)) | (Scalar::Bytes(_), Scalar::Bytes(_)) => {
            Some(a.compare(b))
        }
        _ => None,
    }
}

/// Whether some cell of a group whose fields `bounds` describes may
/// satisfy `node`.
pub(crate) fn may_match(node: &Node, bounds: &dyn Fn(&str) -> FieldBounds) -> bool {
    match node {
        Node::And(children) => children.iter().all(|c| may_match(c, bounds)),
        Node::Or(children) => children.iter().any(|c| may_match(c, bounds)),
        Node::Constant(v) => *v,
        Node::Null { field, is_null } => {
            let b = bounds(field);
            if *is_null {
                b.nulls.is_none_or(|n| n > 0)
            } else {
                !b.all_null()
            }
        }
        Node::Set {
            field,
            members,
            negated,
        } => {
            let b = bounds(field);
            if b.all_null() {
                return false;
            }
            if *negated {
                return true;
            }
            let Some(datatype) = b.datatype else {
                return true;
            };
            let Some((lo, hi)) = b.range(datatype) else {
                return true;
            };
            members.iter().any(|m| match Scalar::decode(datatype, m) {
                Some(v) => inside(&v, lo, hi),
                None => true,
            })
        }
        Node::Compare {
            field,
            datatype,
            op,
            value,
        } => {
            let b = bounds(field);
            if b.all_null() {
                return false;
            }
            let Some((lo, hi)) = b.range(*datatype) else {
                return true;
            };
            let Some(x) = Scalar::decode(*datatype, value) else {
                return true;
            };
            compare_may_hold(*op, lo, hi, &x)
        }
    }
}

/// A value that may lie in `[lo, hi]` (unordered values: maybe).
fn inside(v: &Scalar, lo: &Scalar, hi: &Scalar) -> bool {
    match (ordering(v, lo), ordering(v, hi)) {
        (Some(a), Some(b)) => a != Ordering::Less && b != Ordering::Greater,
        _ => true,
    }
}

/// Whether `cell op x` may hold for a non-null cell in `[lo, hi]`.
fn compare_may_hold(op: Comparison, lo: &Scalar, hi: &Scalar, x: &Scalar) -> bool {
    if matches!(x, Scalar::Float(f) if f.is_nan()) {
        // Every comparison with NaN fails but `!=`.
        return op == Comparison::Ne;
    }
    let (Some(lo_x), Some(hi_x)) = (ordering(lo, x), ordering(hi, x)) else {
        return true;
    };
    use Ordering::*;
    match op {
        Comparison::Lt => lo_x == Less,
        Comparison::Le => lo_x != Greater,
        Comparison::Gt => hi_x == Greater,
        Comparison::Ge => hi_x != Less,
        Comparison::Eq => lo_x != Greater && hi_x != Less,
        // A NaN cell passes `!=` and may hide outside a float's bounds.
        Comparison::Ne => matches!(x, Scalar::Float(_)) || !(lo_x == Equal && hi_x == Equal),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int_bounds(lo: i128, hi: i128, nulls: u64, cells: u64) -> FieldBounds {
        FieldBounds {
            datatype: Some(Datatype::Int32),
            min_max: Some((Scalar::Int(lo), Scalar::Int(hi))),
            nulls: Some(nulls),
            cells: Some(cells),
        }
    }

    fn compare(op: Comparison, v: i32) -> Node {
        Node::Compare {
            field: "a".into(),
            datatype: Datatype::Int32,
            op,
            value: v.to_le_bytes().to_vec(),
        }
    }

    #[test]
    fn comparisons_outside_the_bounds_are_ruled_out() {
        let b = |_: &str| int_bounds(10, 20, 0, 5);
        assert!(!may_match(&compare(Comparison::Lt, 10), &b));
        assert!(may_match(&compare(Comparison::Le, 10), &b));
        assert!(!may_match(&compare(Comparison::Gt, 20), &b));
        assert!(may_match(&compare(Comparison::Ge, 20), &b));
        assert!(!may_match(&compare(Comparison::Eq, 21), &b));
        assert!(may_match(&compare(Comparison::Eq, 15), &b));
        assert!(may_match(&compare(Comparison::Ne, 15), &b));
        let one = |_: &str| int_bounds(7, 7, 0, 5);
        assert!(!may_match(&compare(Comparison::Ne, 7), &one));
        let or = Node::Or(vec![
            compare(Comparison::Lt, 0),
            compare(Comparison::Gt, 15),
        ]);
        assert!(may_match(&or, &b));
        let and = Node::And(vec![
            compare(Comparison::Gt, 0),
            compare(Comparison::Gt, 25),
        ]);
        assert!(!may_match(&and, &b));
    }

    #[test]
    fn nulls_fail_comparisons_and_answer_null_tests() {
        let all_null = |_: &str| int_bounds(0, 0, 5, 5);
        assert!(!may_match(&compare(Comparison::Ne, 3), &all_null));
        let is_null = Node::Null {
            field: "a".into(),
            is_null: true,
        };
        assert!(may_match(&is_null, &all_null));
        assert!(!may_match(&is_null, &|_: &str| int_bounds(0, 9, 0, 5)));
        assert!(!may_match(&is_null.negated(), &all_null));
        let unknown = |_: &str| FieldBounds::default();
        assert!(may_match(&compare(Comparison::Lt, i32::MIN), &unknown));
    }

    #[test]
    fn float_not_equal_is_never_ruled_out() {
        let b = |_: &str| FieldBounds {
            datatype: Some(Datatype::Float64),
            min_max: Some((Scalar::Float(1.0), Scalar::Float(1.0))),
            nulls: None,
            cells: Some(3),
        };
        let ne = Node::Compare {
            field: "f".into(),
            datatype: Datatype::Float64,
            op: Comparison::Ne,
            value: 1.0f64.to_le_bytes().to_vec(),
        };
        assert!(may_match(&ne, &b));
        let nan_eq = Node::Compare {
            field: "f".into(),
            datatype: Datatype::Float64,
            op: Comparison::Eq,
            value: f64::NAN.to_le_bytes().to_vec(),
        };
        assert!(!may_match(&nan_eq, &b));
    }
}
