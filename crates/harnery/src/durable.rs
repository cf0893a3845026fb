//! Durable file writes: temporary file, fsync, rename, fsync the directory.
//! A failed fsync is never retried (a retried fsync can falsely succeed);
//! the error goes up and stops the writer.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use crate::ledger::LedgerError;

/// Replace `path` with `bytes` so that a crash leaves either the old file or
/// the new one, never a torn mix.
/// The temporary file is [`temp_name`] beside `path`; a run killed before
/// the rename leaves it behind, for whoever writes `path` next to replace.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), LedgerError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.join(temp_name(&name.unwrap_or_default()));
    let mut file = create_private(&tmp).map_err(|e| LedgerError::io(&tmp, e))?;
    file.write_all(bytes)
        .map_err(|e| LedgerError::io(&tmp, e))?;
    file.sync_all()
        .map_err(|e| LedgerError::durability(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| LedgerError::io(path, e))?;
    sync_dir(dir)
}

/// The name of the temporary file [`write_atomic`] writes `name` through:
/// `.<name>.tmp`.
pub fn temp_name(name: &str) -> String {
    format!(".{name}.tmp")
}

/// fsync a directory so that renames and unlinks in it are durable.
pub fn sync_dir(dir: &Path) -> Result<(), LedgerError> {
    let handle = File::open(dir).map_err(|e| LedgerError::io(dir, e))?;
    handle
        .sync_all()
        .map_err(|e| LedgerError::durability(dir, e))
}

/// Syncs waited for at once by [`sync_each`]: each waits on the disk, not
/// on a core, so more of them than there are cores overlap.
const SYNC_THREADS: usize = 8;

/// Run `sync` (a sync that waits on the disk) for every item, several at
/// once on up to [`SYNC_THREADS`] threads, so their waits overlap instead
/// of queueing one behind another. When it returns, every item was synced
/// or a sync failed: the first failure seen is the result, and no further
/// item is started after it (a failed sync is never retried).
pub fn sync_each<T: Sync, E: Send>(
    items: &[T],
    sync: impl Fn(&T) -> Result<(), E> + Sync,
) -> Result<(), E> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = items.len().min(SYNC_THREADS);
    if threads <= 1 {
        return items.iter().try_for_each(&sync);
    }
    let next = AtomicUsize::new(0);
    let failed: Mutex<Option<E>> = Mutex::new(None);
    let stopped = || failed.lock().map_or(true, |f| f.is_some());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while !stopped() {
                    let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    if let Err(e) = sync(item) {
                        if let Ok(mut first) = failed.lock() {
                            first.get_or_insert(e);
                        }
                        break;
                    }
                }
            });
        }
    });
    match failed.into_inner() {
        Ok(Some(e)) => Err(e),
        _ => Ok(()),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn each_item_is_synced_once() {
        let items: Vec<usize> = (0..50).collect();
        let seen = Mutex::new(Vec::new());
        sync_each(&items, |i| {
            seen.lock().unwrap().push(*i);
            Ok::<(), String>(())
        })
        .unwrap();
        let mut seen = seen.into_inner().unwrap();
        seen.sort_unstable();
        assert_eq!(seen, items);
    }

    #[test]
    fn a_failed_sync_is_the_result_and_none_is_retried() {
        let items: Vec<usize> = (0..50).collect();
        let calls: Vec<AtomicUsize> = items.iter().map(|_| AtomicUsize::new(0)).collect();
        let failed = sync_each(&items, |i| {
            calls[*i].fetch_add(1, Ordering::Relaxed);
            if *i == 3 {
                Err(format!("item {i}"))
            } else {
                Ok(())
            }
        });
        assert_eq!(failed, Err("item 3".to_string()));
        let calls: Vec<usize> = calls.into_iter().map(AtomicUsize::into_inner).collect();
        assert_eq!(calls[3], 1, "the failed item is synced once, never again");
        assert!(
            calls.iter().all(|&n| n <= 1),
            "no item synced twice: {calls:?}"
        );
    }

    #[test]
    fn real_directories_are_synced_and_a_missing_one_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs: Vec<_> = (0..12).map(|i| tmp.path().join(format!("d{i}"))).collect();
        for d in &dirs {
            std::fs::create_dir(d).unwrap();
        }
        sync_each(&dirs, |d| sync_dir(d)).unwrap();
        let mut with_gone = dirs.clone();
        with_gone.push(tmp.path().join("gone"));
        let err = sync_each(&with_gone, |d| sync_dir(d)).unwrap_err();
        assert!(err.to_string().contains("gone"), "{err}");
    }
}
