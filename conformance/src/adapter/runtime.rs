//! Our own runtime, called in-process (no subprocess, no serialization in between).
//!
//! It claims only what it really does: the runner never asks it about a format version or a
//! capability it does not claim, and those cells show as `unsupported`. Writing (replaying
//! recipes) is not implemented by the runtime, so it claims no writer role.

use std::path::Path;

use super::{Adapter, Answer, Info};

pub struct RuntimeAdapter {
    info: Info,
}

/// The name the runtime goes by in matrices, known-failure files and `--reader`.
pub const RUNTIME_NAME: &str = "tiledb-runtime";

impl RuntimeAdapter {
    pub fn new() -> RuntimeAdapter {
        RuntimeAdapter {
            info: Info {
                name: RUNTIME_NAME.to_string(),
                version: format!("tiledb-runtime {}", env!("CARGO_PKG_VERSION")),
                roles: vec!["reader".to_string()],
                // The reader does not read arrays yet: no format version is claimed.
                format_versions: Vec::new(),
                write_format_version: None,
                capabilities: Vec::new(),
            },
        }
    }
}

impl Default for RuntimeAdapter {
    fn default() -> Self {
        RuntimeAdapter::new()
    }
}

impl Adapter for RuntimeAdapter {
    fn info(&self) -> &Info {
        &self.info
    }

    fn write(&mut self, _case_file: &Path, _out_dir: &Path) -> Answer {
        Answer::Refused {
            class: "unsupported".into(),
            message: "tiledb-runtime does not replay case recipes".into(),
        }
    }

    fn read(&mut self, _array_root: &Path, _case_file: &Path, _read_id: &str) -> Answer {
        Answer::Refused {
            class: "unsupported".into(),
            message: "tiledb-runtime cannot read arrays yet".into(),
        }
    }
}
