//! What one explainer of a file kind produces, before `files` wraps it in
//! the file's span: below `files` and every explainer, so that none of them
//! imports another's module for it.

use super::walker::Span;

/// The parts of a file one explainer produced.
pub(super) struct Body {
    pub(super) children: Vec<Span>,
    pub(super) layout: &'static str,
    pub(super) incomplete: Option<String>,
}

impl Body {
    pub(super) fn whole(children: Vec<Span>, layout: &'static str) -> Body {
        Body {
            children,
            layout,
            incomplete: None,
        }
    }
}
