//! A local file written part by part: the parts go to a temporary file at
//! the storage root, which is flushed and renamed into place at the end, as
//! [`LocalStorage::write`](crate::storage::Storage::write) does with a whole
//! file. An unfinished file leaves only its temporary file, removed when
//! the writer is dropped (or, after a crash, found as a leftover).
//!
//! When the storage syncs, the disk writes of a large file are started as
//! its parts arrive (`sync_file_range` with `SYNC_FILE_RANGE_WRITE`, which
//! does not wait for them), so that the `fsync` at the end waits for the
//! last parts only rather than for the whole file.
#![allow(
    unsafe_code,
    reason = "sync_file_range(2); the block states its SAFETY"
)]

use std::fs;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use super::LocalStorage;
use crate::error::{Error, Result};
use crate::storage::counters::bump;
use crate::storage::{FileWriter, RelPath};

/// Big enough that a tile's bytes go to the kernel in few calls.
const BUFFER_BYTES: usize = 1 << 20;

/// The bytes handed to the kernel between two starts of their writeback.
const WRITEBACK_BYTES: u64 = 8 << 20;

pub(super) struct StreamedFile<'s> {
    storage: &'s LocalStorage,
    temp: PathBuf,
    full: PathBuf,
    out: Option<BufWriter<fs::File>>,
    len: u64,
    /// The bytes whose writeback was started.
    written_back: u64,
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
            written_back: 0,
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
        // The bytes the kernel holds: those not in the buffer.
        let in_kernel = self.len - out.buffer().len() as u64;
        if self.storage.sync && in_kernel - self.written_back >= WRITEBACK_BYTES {
            start_writeback(out.get_ref(), self.written_back, in_kernel);
            self.written_back = in_kernel;
        }
        Ok(())
    }

    fn append_parts(&mut self, parts: &[&[u8]]) -> Result<()> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| Error::Usage("the file is finished".into()))?;
        if total < BUFFER_BYTES {
            // Small: through the buffer, as `append` does.
            for part in parts {
                out.write_all(part).map_err(|e| Error::io(&self.temp, &e))?;
            }
        } else {
            // Large: the buffered bytes first, then the parts straight from
            // where they are, in vectored writes.
            out.flush().map_err(|e| Error::io(&self.temp, &e))?;
            write_all_vectored(out.get_mut(), parts).map_err(|e| Error::io(&self.temp, &e))?;
        }
        self.len += total as u64;
        let in_kernel = self.len - out.buffer().len() as u64;
        if self.storage.sync && in_kernel - self.written_back >= WRITEBACK_BYTES {
            start_writeback(out.get_ref(), self.written_back, in_kernel);
            self.written_back = in_kernel;
        }
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

/// The most slices one `writev` takes (Linux's `IOV_MAX`).
const MAX_SLICES: usize = 1024;

/// Writes every byte of `parts` in order, `MAX_SLICES` slices a call,
/// resuming after a short write.
fn write_all_vectored(file: &mut fs::File, parts: &[&[u8]]) -> std::io::Result<()> {
    use std::io::IoSlice;
    for group in parts.chunks(MAX_SLICES) {
        let mut slices: Vec<IoSlice<'_>> = group.iter().map(|p| IoSlice::new(p)).collect();
        let mut rest = &mut slices[..];
        IoSlice::advance_slices(&mut rest, 0);
        while !rest.is_empty() {
            match file.write_vectored(rest) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => IoSlice::advance_slices(&mut rest, n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Starts writing the bytes `from..to` of `file` to disk without waiting:
/// an early start of what the final `fsync` makes durable. A failure only
/// loses the head start (the `fsync` still reports errors), so it is ignored.
#[cfg(target_os = "linux")]
fn start_writeback(file: &fs::File, from: u64, to: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(from), i64::try_from(to - from)) else {
        return;
    };
    // SAFETY: sync_file_range only reads its integer arguments; the file
    // descriptor is open (borrowed from `file`) for the whole call.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE);
    }
}

/// Elsewhere the final `fsync` does all the work.
#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &fs::File, _from: u64, _to: u64) {}
