//! The clock and the unique labels that name new files: fragments, commits
//! and metadata (through [`crate::directory::timestamped_name`]) and the
//! temporary files of an atomic write.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

struct LabelState {
    millisecond: u64,
    counter: u32,
}

/// Makes labels; names made by one generator within one millisecond sort in
/// the order they were made.
pub struct LabelGenerator {
    state: Mutex<LabelState>,
}

impl Default for LabelGenerator {
    fn default() -> Self {
        Self::new()
    }
}

impl LabelGenerator {
    /// A generator that has issued no label yet.
    pub const fn new() -> Self {
        LabelGenerator {
            state: Mutex::new(LabelState {
                millisecond: u64::MAX,
                counter: 0,
            }),
        }
    }

    /// A fresh label for a given millisecond: the counter restarts from a
    /// random value (top bit clear, leaving 2³¹ increments) when the
    /// millisecond changes and counts up within one millisecond.
    pub fn label_at(&self, millisecond: u64) -> Result<String> {
        let counter = {
            let mut state = self
                .state
                .lock()
                .map_err(|_| Error::Usage("label generator poisoned by a panic".into()))?;
            if state.millisecond != millisecond {
                state.millisecond = millisecond;
                state.counter = (random_u64(millisecond) as u32) & 0x7FFF_FFFF;
            } else {
                state.counter = state.counter.checked_add(1).ok_or_else(|| {
                    Error::Usage("more than 2^31 names requested within one millisecond".into())
                })?;
            }
            state.counter
        };
        let r1 = random_u64(u64::from(counter)) as u32;
        let r2 = random_u64(millisecond ^ u64::from(counter));
        Ok(format!("{counter:08x}{r1:08x}{r2:016x}"))
    }
}

static PROCESS_LABELS: LabelGenerator = LabelGenerator::new();

/// 64 random bits. The standard library seeds every `RandomState` from the
/// operating system's random source, which is all a label needs.
fn random_u64(mix: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(mix);
    hasher.finish()
}

/// A fresh label from the process-wide generator, and the millisecond it was
/// made in.
pub fn new_label() -> Result<(String, u64)> {
    let now = now_ms();
    Ok((PROCESS_LABELS.label_at(now)?, now))
}
