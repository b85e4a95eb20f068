//! Delete conditions of recipes: the library's query condition language
//! (tiledb-py's `cond=` syntax, [`QueryCondition`]: `a == 9`, `a > 6 and
//! d < 7`, parentheses, `and`/`or`/`not`, `&`/`|`, `in` lists, numbers and
//! quoted strings), one parser for the library, `tdb` and the recipes; here
//! turned into the stored AST and negated as TileDB stores a delete
//! (FORMAT_NOTES §2.17: the condition of the cells to keep).

use tiledb_runtime::condition::QueryCondition;
use tiledb_runtime::error::{Error, Result};
use tiledb_runtime::format::generated as stored;
use tiledb_runtime::schema::ArraySchema;

/// Parses `text` against `schema` into the stored AST of the condition.
pub fn parse(text: &str, schema: &ArraySchema) -> Result<stored::AstNode> {
    QueryCondition::parse(text, schema)?
        .to_stored()
        .ok_or_else(|| {
            Error::Usage(format!(
                "condition {text:?} selects every cell or none, whatever they hold"
            ))
        })
}

/// The negation TileDB stores for a delete.
pub(crate) fn negate(node: stored::AstNode) -> stored::AstNode {
    use stored::{CombinationOp as C, QueryConditionOp as Q};
    let node_type = node.node_type;
    let inner = match node.node {
        stored::AstNodeNode::AstValue(mut v) => {
            v.op = match v.op {
                Q::Lt => Q::Ge,
                Q::Ge => Q::Lt,
                Q::Gt => Q::Le,
                Q::Le => Q::Gt,
                Q::Eq => Q::Ne,
                Q::Ne => Q::Eq,
                Q::In => Q::NotIn,
                Q::NotIn => Q::In,
                Q::AlwaysTrue => Q::AlwaysFalse,
                Q::AlwaysFalse => Q::AlwaysTrue,
            };
            stored::AstNodeNode::AstValue(v)
        }
        stored::AstNodeNode::AstExpression(e) => {
            let combination_op = match e.combination_op {
                C::And => C::Or,
                C::Or => C::And,
                C::Not => C::Not,
            };
            stored::AstNodeNode::AstExpression(stored::AstExpression {
                combination_op,
                children: e.children.into_iter().map(negate).collect(),
            })
        }
    };
    stored::AstNode {
        node_type,
        node: inner,
    }
}
