//! The array and group directory hierarchy of every format version.
