//! Durable file writes: temporary file, fsync, rename, fsync the directory.
//! A failed fsync is never retried (a retried fsync can falsely succeed);
//! the error goes up and stops the writer.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use super::LedgerError;

/// Replace `path` with `bytes` so that a crash leaves either the old file or
/// the new one, never a torn mix.
/// The temporary file is `.<name>.tmp` beside `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), LedgerError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{}.tmp", name.unwrap_or_default()));
    let mut file = create_private(&tmp).map_err(|e| LedgerError::io(&tmp, e))?;
    file.write_all(bytes)
        .map_err(|e| LedgerError::io(&tmp, e))?;
    file.sync_all()
        .map_err(|e| LedgerError::durability(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| LedgerError::io(path, e))?;
    sync_dir(dir)
}

/// fsync a directory so that renames and unlinks in it are durable.
pub fn sync_dir(dir: &Path) -> Result<(), LedgerError> {
    let handle = File::open(dir).map_err(|e| LedgerError::io(dir, e))?;
    handle
        .sync_all()
        .map_err(|e| LedgerError::durability(dir, e))
}

/// Ask the kernel to start writing `file`'s dirty pages back, without
/// waiting: a later `sync_data` then waits for writes already in flight.
/// Only a hint (Linux `sync_file_range`); durability still comes from the
/// sync that follows.
pub fn start_writeback(file: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open fd; offset 0 and length 0 mean the whole file.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// Create (truncating) a file of mode 0600, like everything under the home.
pub fn create_private(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    File::options()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}
