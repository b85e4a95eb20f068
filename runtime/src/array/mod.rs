//! The array and group directory hierarchy of every format version: how
//! files are named ([`timestamped_name`]), where they are stored
//! ([`storage`]), which of them make up an array or a group at an open range
//! ([`directory`], [`group`]), and the plain-text commit files
//! ([`text_files`]).

pub mod directory;
pub mod group;
pub mod storage;
pub mod text_files;
pub mod timestamped_name;

pub use directory::{ArrayDirectory, Fragment, TimeTravelRule};
pub use group::{object_type, GroupDirectory, ObjectType};
pub use storage::{LocalStorage, RelPath, Storage};
pub use timestamped_name::{Extension, NameForm, TimestampedName};

pub mod open;
pub use open::{Array, OpenOptions};
