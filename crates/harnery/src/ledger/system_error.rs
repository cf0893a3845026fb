//! SQLite's I/O errors with the operating system's reason (a full disk, a
//! read-only file system), which SQLite's own message leaves out.

use std::path::Path;

use rusqlite::Connection;

use super::LedgerError;

/// An SQLite I/O error with the operating system's reason (a full disk, a
/// read-only file system), which SQLite's own message leaves out.
pub(super) fn with_system_error(conn: &Connection, path: &Path, e: rusqlite::Error) -> LedgerError {
    // SAFETY: the handle is live for as long as `conn` is borrowed, and
    // sqlite3_system_errno only reads the connection's last error.
    let mut errno = unsafe { rusqlite::ffi::sqlite3_system_errno(conn.handle()) };
    if errno == 0 && e.sqlite_error_code() == Some(rusqlite::ErrorCode::SystemIoFailure) {
        // Some I/O paths (growing the WAL index) keep no errno: a full
        // disk is the one reason worth naming, and statvfs tells it.
        errno = if disk_full(path) { libc::ENOSPC } else { 0 };
    }
    if errno == 0 {
        return LedgerError::Sqlite(e);
    }
    LedgerError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::Error::from_raw_os_error(errno).kind(),
            format!("{} ({e})", std::io::Error::from_raw_os_error(errno)),
        ),
    }
}

/// Whether the filesystem holding `path` has no block left for us.
fn disk_full(path: &Path) -> bool {
    let dir = path.parent().unwrap_or(path);
    rustix::fs::statvfs(dir).is_ok_and(|st| st.f_bavail == 0)
}
