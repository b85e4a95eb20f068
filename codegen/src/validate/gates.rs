//! Behaviour gates of `format.toml` (`[[gate]]`): snake_case names, unique,
//! bounded by `since` or `until` (or both) within the versions described.

use std::collections::BTreeSet;

use super::{check_gates, is_snake, Ctx, GateRange};
use crate::error::{SpecError, SpecErrorKind};
use crate::raw::RawFormat;

pub(super) fn check_behaviour_gates(ctx: &Ctx, raw: &RawFormat) -> Result<(), SpecError> {
    let range = GateRange {
        oldest: raw.oldest,
        newest: raw.current + 1,
    };
    let mut seen = BTreeSet::new();
    for gate in &raw.gates {
        let path = format!("gate {}", gate.name);
        if !is_snake(&gate.name) {
            return Err(ctx.err(
                path,
                SpecErrorKind::Invalid(format!("\"{}\" is not a snake_case name", gate.name)),
            ));
        }
        if !seen.insert(gate.name.clone()) {
            return Err(ctx.err(
                path,
                SpecErrorKind::DuplicateName {
                    what: "gate".into(),
                    name: gate.name.clone(),
                },
            ));
        }
        if gate.since.is_none() && gate.until.is_none() {
            return Err(ctx.err(
                path,
                SpecErrorKind::Invalid(
                    "a gate needs since or until (else it holds for every version)".into(),
                ),
            ));
        }
        check_gates(ctx, &path, gate.since, gate.until, range)?;
    }
    Ok(())
}
