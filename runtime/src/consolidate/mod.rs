//! Consolidation, format 22 (FORMAT_NOTES §6.3–6.4), in TileDB's four
//! modes ([`ConsolidationMode`]), over any [`Storage`] and on encrypted
//! arrays (the key encrypts what is written as it decrypts what is read):
//! commits into a `.con` file, fragment metadata footers into a
//! `__fragment_meta/*.meta` file, array metadata into one `__meta` file
//! plus its `.vac`, and fragments into one fragment (or several) plus a
//! `.vac`.
//!
//! Sparse fragments are consolidated as TileDB does: every cell of every
//! input is kept with its timestamp (`t`). Without
//! `sm.consolidation.purge_deleted_cells`, cells removed by deletes stay
//! too, marked by delete metadata (`dt`: the timestamp of the first delete
//! that removed the cell, `dci`: its index in the new fragment's processed
//! conditions, both `u64::MAX` for a live cell); with it they are left out.
//! The processed conditions are every delete and update commit of the
//! array, by timestamp. Inputs that are consolidations themselves are read
//! with their own `t`, `dt` and `dci`.
//!
//! Fragment consolidation chooses its inputs as TileDB does (`select`):
//! runs of adjacent fragments, step by step, under the
//! `sm.consolidation.*` settings of a [`ConsolidationConfig`] (steps, run
//! lengths, size ratio, dense amplification, time range). With TileDB's
//! defaults the only run considered is every candidate (the minimum run
//! length is capped at the candidate count): they are merged in one step,
//! unless the array is dense and their union would amplify (hold more cells
//! than their non-empty domains expanded to tiles), when nothing is merged.
//! `sm.consolidation.max_fragment_size` cuts each step's output where
//! TileDB's writer cuts it (`split`). Consolidation leaves the inputs in
//! place; [`crate::vacuum`] removes them.

mod config;
mod fragments;
mod meta;
pub(crate) mod select;
mod split;

use std::sync::Arc;

pub use config::{ConsolidationConfig, ConsolidationMode};
pub use fragments::consolidate_fragments;
pub use meta::{consolidate_array_meta, consolidate_commits, consolidate_fragment_meta};

use crate::directory::ArrayDirectory;
use crate::directory::{Extension, TimestampedName};
use crate::error::Result;
use crate::schema::ArraySchema;
use crate::storage::Storage;
use crate::write::WRITE_VERSION;

/// Consolidates the array rooted at `storage` in `config.mode`, with
/// `key` for an encrypted array. Returns the names of the files written
/// (fragments, or the `.con`, `.meta` or `__meta` file); empty when there
/// was nothing to consolidate.
pub fn consolidate(
    storage: Arc<dyn Storage>,
    config: &ConsolidationConfig,
    key: Option<[u8; 32]>,
) -> Result<Vec<String>> {
    consolidate_reporting(storage, config, key, &mut |_| {})
}

/// How far a consolidation has come, reported after each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Steps done (one for the modes other than `fragments`).
    pub steps: u32,
    /// Input fragments (or files) merged so far.
    pub merged: usize,
    /// The candidates when consolidation started: fragments in the time
    /// range, or 1 for the other modes.
    pub candidates: usize,
}

/// [`consolidate`], calling `progress` after each step (a command line
/// draws a bar with it).
pub fn consolidate_reporting(
    storage: Arc<dyn Storage>,
    config: &ConsolidationConfig,
    key: Option<[u8; 32]>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<String>> {
    config.validate()?;
    // Every mode reads the schema first, as TileDB opens the array: a
    // wrong or missing key fails before anything is written.
    let dir = everything(storage.as_ref())?;
    ArraySchema::load(
        storage.as_ref(),
        &dir.latest_schema_for_read().path,
        key.as_ref(),
    )?;
    let one = |name: Option<String>| name.into_iter().collect();
    let written: Vec<String> = match config.mode {
        ConsolidationMode::Fragments => {
            return fragments::consolidate_fragments_reporting(storage, config, key, progress)
        }
        ConsolidationMode::FragmentMeta => {
            one(consolidate_fragment_meta(storage.as_ref(), key.as_ref())?)
        }
        ConsolidationMode::Commits => one(consolidate_commits(storage.as_ref())?),
        ConsolidationMode::ArrayMeta => one(consolidate_array_meta(
            storage.as_ref(),
            config.timestamp_start,
            config.timestamp_end,
            key.as_ref(),
        )?),
    };
    progress(Progress {
        steps: 1,
        merged: written.len(),
        candidates: 1,
    });
    Ok(written)
}

fn everything(storage: &dyn Storage) -> Result<ArrayDirectory> {
    ArrayDirectory::open(storage, 0, u64::MAX)
}

/// A name spanning `[t1, t2]` (fresh label), with the write version when
/// `versioned`.
fn span_name(t1: u64, t2: u64, versioned: bool, ext: Option<Extension>) -> Result<TimestampedName> {
    TimestampedName::generate(
        t1.max(1),
        t2.max(t1.max(1)),
        versioned.then_some(WRITE_VERSION),
        ext,
    )
}
