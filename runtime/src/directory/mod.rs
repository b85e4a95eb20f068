//! The folder hierarchy of every format version: how files are named
//! ([`timestamped_name`]), the plain-text commit files ([`text_files`]),
//! which files make up an array at an open range ([`ArrayDirectory`], with the kinds
//! of entries in `files`), and the group folder ([`group`]).

pub(crate) mod array;
pub(crate) mod files;
pub mod group;
pub(crate) mod listing;
pub mod text_files;
pub mod timestamped_name;

pub use array::ArrayDirectory;
pub use files::*;
pub use group::{object_type, GroupDirectory, ObjectType};
pub use listing::TimestampedSet;
pub use timestamped_name::{Extension, NameForm, TimestampedName};
