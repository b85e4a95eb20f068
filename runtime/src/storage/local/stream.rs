//! A local file written part by part: the parts go to a temporary file at
//! the storage root, which is flushed and renamed into place at the end, as
//! [`LocalStorage::write`](crate::storage::Storage::write) does with a whole
//! file. An unfinished file leaves only its temporary file, removed when
//! the writer is dropped (or, after a crash, found as a leftover).

use std::fs;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use super::LocalStorage;
use crate::error::{Error, Result};
use crate::storage::counters::bump;
use crate::storage::{FileWriter, RelPath};

/// Big enough that a tile's bytes go to the kernel in few calls.
const BUFFER_BYTES: usize = 1 << 20;

pub(super) struct StreamedFile<'s> {
    storage: &'s LocalStorage,
    temp: PathBuf,
    full: PathBuf,
    out: Option<BufWriter<fs::File>>,
    len: u64,
}

impl<'s> StreamedFile<'s> {
    pub(super) fn create(storage: &'s LocalStorage, file: &RelPath) -> Result<StreamedFile<'s>> {
        let full = storage.resolve(file)?;
        let name = file
            .file_name()
            .ok_or_else(|| Error::Usage("cannot write the storage root as a file".into()))?;
        let temp = storage.temp_path(name)?;
        let out = fs::File::create_new(&temp).map_err(|e| Error::io(&temp, &e))?;
        Ok(StreamedFile {
            storage,
            temp,
            full,
            out: Some(BufWriter::with_capacity(BUFFER_BYTES, out)),
            len: 0,
        })
    }
}

impl FileWriter for StreamedFile<'_> {
    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| Error::Usage("the file is finished".into()))?;
        out.write_all(bytes)
            .map_err(|e| Error::io(&self.temp, &e))?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        let out = self
            .out
            .take()
            .ok_or_else(|| Error::Usage("the file is finished".into()))?;
        let file = out
            .into_inner()
            .map_err(|e| Error::io(&self.temp, e.error()))?;
        if self.storage.sync {
            file.sync_all().map_err(|e| Error::io(&self.temp, &e))?;
        }
        drop(file);
        bump(&self.storage.counters.files_written, 1);
        bump(&self.storage.counters.bytes_written, self.len);
        fs::rename(&self.temp, &self.full).map_err(|e| Error::io(&self.full, &e))?;
        // Renamed: nothing left for `drop` to remove.
        self.temp = PathBuf::new();
        self.storage.sync_parent(&self.full)
    }
}

impl Drop for StreamedFile<'_> {
    fn drop(&mut self) {
        if !self.temp.as_os_str().is_empty() {
            drop(self.out.take());
            let _ = fs::remove_file(&self.temp);
        }
    }
}
