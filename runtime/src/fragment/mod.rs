//! Fragment metadata: the footer of each fragment (from a consolidated
//! `.meta` file when one holds it, else from the fragment's own
//! `__fragment_metadata.tdb`), and, loaded only when a read needs them, the
//! per-field tile offsets, var sizes, validity offsets and the R-tree.
//!
//! Field index space (notes §2.11): attributes `0..A`, the legacy
//! `__coords` slot `A`, dimensions `A+1..=A+D` (v5+), then the cell
//! timestamps `t`, then the delete metadata `dt` and `dci`.

mod file;
mod load;
mod parse;
mod stats;
mod tables;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

pub use file::{footer_region, known_footer_size, parse_metadata_file, FragmentMetadataFile};
pub(crate) use file::{known_size_footer_start, require_footer_of_size};
pub use parse::{
    consolidated_footer_regions, footer_schema_name, global_order_bounds,
    load_consolidated_footers, parse_footer, parse_processed_conditions, parse_rtree,
    parse_tile_offsets, SchemaCache,
};
pub use stats::{FieldTileStats, FragmentFieldStats};

use crate::directory::TimestampedName;
use crate::format::generated as stored;
use crate::schema::ArraySchema;
use crate::storage::RelPath;

/// The largest fragment footer read. A footer holds a few u64 per field and
/// the non-empty domain (for string dimensions, the smallest and largest
/// coordinate): kilobytes even for schemas of thousands of fields. It is
/// read from the end of the file, and in the oldest layouts (3-9 without a
/// trailer) found by trying the positions after each generic tile, so this
/// bounds what a file far larger than its metadata makes us read.
pub const MAX_FRAGMENT_FOOTER_SIZE: u64 = 16 << 20;

/// A field of a fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// The attribute at this index of the schema.
    Attribute(usize),
    /// The zipped coordinates of format v1–v4.
    Coords,
    /// The dimension at this index of the schema (format v5 and later store each dimension apart).
    Dimension(usize),
    /// Per-cell timestamps (`t`, v14+).
    Timestamps,
    /// Per-cell delete timestamps (`dt`, v15+).
    DeleteTimestamps,
    /// Per-cell index of the delete condition (`dci`, v15+).
    DeleteConditionIndex,
}

/// A `[lo, hi]` range per dimension, as stored bytes.
pub type Rectangle = Vec<(Vec<u8>, Vec<u8>)>;

/// The per-tile tables of one field, loaded on demand.
#[derive(Debug, Default, Clone)]
pub struct FieldTileTables {
    /// The byte offset of each tile in the field's data file.
    pub offsets: Vec<u64>,
    pub(crate) var_offsets: Vec<u64>,
    pub(crate) var_sizes: Vec<u64>,
    pub(crate) validity_offsets: Vec<u64>,
}

/// The footer as stored, in either metadata generation: the footer of
/// format 3 and later, or the single generic tile of format 1-2.
#[derive(Debug, Clone)]
enum StoredFooter {
    Footer(Box<stored::FragmentFooter>),
    Legacy(Box<stored::FragmentMetadataV1V2>),
}

/// One fragment's metadata as readers hold it: the footer, parsed when
/// loaded, and the per-field tile tables, the R-tree and the processed
/// conditions, each loaded from the file on first use. The same file loaded
/// whole, as `tdb check` and the fuzz targets want it, is a
/// [`FragmentMetadataFile`].
#[derive(Debug)]
pub struct FragmentMetadata {
    /// The fragment folder, relative to the array.
    pub path: RelPath,
    /// Its name, parsed: the time range and the format version.
    pub name: TimestampedName,
    /// The format version of its metadata.
    pub version: u32,
    /// The schema it was written with.
    pub schema: Arc<ArraySchema>,
    /// Written by a dense write: tiles cover the non-empty domain, no coordinates stored.
    pub dense: bool,
    /// `None` when the fragment is empty (null non-empty domain).
    pub non_empty_domain: Option<Rectangle>,
    /// The number of tiles of every field.
    pub tile_num: u64,
    pub(crate) last_tile_cell_num: u64,
    /// Cells carry their write timestamps (`t`, v14+; consolidated with timestamps).
    pub has_timestamps: bool,
    /// Cells carry delete timestamps and condition indexes (`dt`, `dci`, v15+).
    pub has_delete_meta: bool,
    footer: StoredFooter,
    key: Option<[u8; 32]>,
    /// The size of `__fragment_metadata.tdb`, once looked up: its generic
    /// tiles are read by ranged reads, judged against it.
    file_size: OnceLock<u64>,
    fields: Mutex<HashMap<Field, Arc<FieldTileTables>>>,
    mbrs: OnceLock<Arc<Vec<Rectangle>>>,
    processed: OnceLock<Vec<String>>,
    stats: Mutex<HashMap<Field, Arc<FieldTileStats>>>,
    mmsn: OnceLock<Option<Arc<stored::FragmentMmsn>>>,
}

/// TileDB's v8 file-name encoding (`FragmentMetadata::encode_name`),
/// including its non-standard entries for Windows-illegal characters.
pub fn percent_encode_v8(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let code = match c {
            '!' => "%21",
            '#' => "%23",
            '$' => "%24",
            '%' => "%25",
            '&' => "%26",
            '\'' => "%27",
            '(' => "%28",
            ')' => "%29",
            '*' => "%2A",
            '+' => "%2B",
            ',' => "%2C",
            '/' => "%2F",
            ':' => "%3A",
            ';' => "%3B",
            '=' => "%3D",
            '?' => "%3F",
            '@' => "%40",
            '[' => "%5B",
            ']' => "%5D",
            '"' => "%22",
            '<' => "%20",
            '>' => "%2D",
            '\\' => "%30",
            '|' => "%3C",
            _ => {
                out.push(c);
                continue;
            }
        };
        out.push_str(code);
    }
    out
}
