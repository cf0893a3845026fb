//! Durable file writes, the one home of them: a file is written to a
//! temporary beside it, fsynced, renamed (or linked) into place, and its
//! directory fsynced, so a crash leaves the old file or the new one, never a
//! torn mix. A failed fsync is never retried (a retried fsync can falsely
//! succeed); the error goes up and stops the writer.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A durable write that failed, naming the file it failed on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DurableError {
    /// Creating, writing, renaming or opening failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// An fsync failed: what was written may not be on the disk.
    #[error("fsync of {path} failed: {source}")]
    Sync {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl DurableError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> DurableError + '_ {
        move |source| DurableError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    fn sync(path: &Path) -> impl FnOnce(std::io::Error) -> DurableError + '_ {
        move |source| DurableError::Sync {
            path: path.to_path_buf(),
            source,
        }
    }

    /// The file the write failed on, and the operating system's error.
    pub(crate) fn into_parts(self) -> (PathBuf, std::io::Error) {
        match self {
            DurableError::Io { path, source } | DurableError::Sync { path, source } => {
                (path, source)
            }
        }
    }
}

/// The permissions a replaced file gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Mode 0600, like everything under the home. The temporary file is
    /// [`temp_name`]: the home's writers hold its lock, and a run killed
    /// before the rename leaves it for whoever writes the file next.
    Private,
    /// The permissions of the file it replaces (the default creation mode
    /// for a new one): a file of another program, such as an agent's
    /// settings. The temporary file's name carries the process id, since two
    /// processes may write the file at once.
    Inherit,
}

/// Replace `path` with `bytes` so that a crash leaves either the old file or
/// the new one, never a torn mix: temporary file, fsync, rename, fsync the
/// directory.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8], mode: Mode) -> Result<(), DurableError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = match mode {
        Mode::Private => dir.join(temp_name(&name)),
        Mode::Inherit => dir.join(format!(".{name}.harnery-tmp-{}", std::process::id())),
    };
    let mut file = match mode {
        Mode::Private => create_private(&tmp),
        Mode::Inherit => File::create(&tmp),
    }
    .map_err(DurableError::io(&tmp))?;
    if mode == Mode::Inherit
        && let Ok(meta) = std::fs::metadata(path)
    {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    file.write_all(bytes).map_err(DurableError::io(&tmp))?;
    file.sync_all().map_err(DurableError::sync(&tmp))?;
    std::fs::rename(&tmp, path).map_err(DurableError::io(path))?;
    sync_dir(dir)
}

/// The name of the temporary file [`write_atomic`] writes `name` through
/// in [`Mode::Private`]: `.<name>.tmp`.
pub(crate) fn temp_name(name: &str) -> String {
    format!(".{name}.tmp")
}

/// fsync a directory so that renames and unlinks in it are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), DurableError> {
    let handle = File::open(dir).map_err(DurableError::io(dir))?;
    handle.sync_all().map_err(DurableError::sync(dir))
}

/// What [`publish_once`] did.
pub(crate) enum Published {
    /// This run made the file.
    Created,
    /// Another run made it first; its content is the one to use.
    Exists,
}

/// Publish `line` (and a newline) as `dir/name`, mode 0600, exactly once:
/// written to a temporary file, synced, then linked into place, so a reader
/// sees the whole file or none and two runs racing to create it agree on
/// one. An existing file is left as it is. An error names the path it
/// happened on.
pub(crate) fn publish_once(dir: &Path, name: &str, line: &str) -> Result<Published, DurableError> {
    std::fs::create_dir_all(dir).map_err(DurableError::io(dir))?;
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    {
        let mut f = create_private(&tmp).map_err(DurableError::io(&tmp))?;
        writeln!(f, "{line}").map_err(DurableError::io(&tmp))?;
        f.sync_all().map_err(DurableError::io(&tmp))?;
    }
    let path = dir.join(name);
    let linked = std::fs::hard_link(&tmp, &path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            // The file is whole already; the link's durability is best effort.
            let _ = sync_dir(dir);
            Ok(Published::Created)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(Published::Exists),
        Err(e) => Err(DurableError::io(&path)(e)),
    }
}

/// Syncs waited for at once by [`sync_each`]: each waits on the disk, not
/// on a core, so more of them than there are cores overlap.
const SYNC_THREADS: usize = 8;

/// Run `sync` (a sync that waits on the disk) for every item, several at
/// once on up to `SYNC_THREADS` (eight) threads, so their waits overlap instead
/// of queueing one behind another. When it returns, every item was synced
/// or a sync failed: the first failure seen is the result, and no further
/// item is started after it (a failed sync is never retried).
pub(crate) fn sync_each<T: Sync, E: Send>(
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
pub(crate) fn start_writeback(file: &File) {
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

    use std::os::unix::fs::PermissionsExt;

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_private_write_replaces_the_file_at_0600_and_leaves_no_temporary() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("manifest.json");
        std::fs::write(&path, "old and longer\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_atomic(&path, b"new\n", Mode::Private).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new\n");
        assert_eq!(mode_of(&path), 0o600);
        assert_eq!(names_in(tmp.path()), ["manifest.json"]);
    }

    #[test]
    fn an_inheriting_write_keeps_the_replaced_files_mode_and_leaves_no_temporary() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("settings.json");
        std::fs::write(&path, "{}").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&path, b"{\"hooks\":{}}", Mode::Inherit).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"hooks\":{}}");
        assert_eq!(mode_of(&path), 0o640);
        assert_eq!(names_in(tmp.path()), ["settings.json"]);
    }

    #[test]
    fn a_private_write_over_a_killed_runs_temporary_replaces_it() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("ARCHIVED.json");
        let left = tmp.path().join(temp_name("ARCHIVED.json"));
        assert_eq!(left.file_name().unwrap(), ".ARCHIVED.json.tmp");
        std::fs::write(&left, "torn").unwrap();
        write_atomic(&path, b"{}", Mode::Private).unwrap();
        assert_eq!(names_in(tmp.path()), ["ARCHIVED.json"]);
    }

    #[test]
    fn a_write_into_a_missing_directory_names_the_temporary_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("absent").join("f");
        let err = write_atomic(&path, b"x", Mode::Private).unwrap_err();
        let (at, source) = err.into_parts();
        assert_eq!(at, tmp.path().join("absent").join(".f.tmp"));
        assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn publishing_once_makes_a_private_file_and_keeps_the_first() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("home");
        assert!(matches!(
            publish_once(&dir, "host-id", "first").unwrap(),
            Published::Created
        ));
        assert!(matches!(
            publish_once(&dir, "host-id", "second").unwrap(),
            Published::Exists
        ));
        let path = dir.join("host-id");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first\n");
        assert_eq!(mode_of(&path), 0o600);
        assert_eq!(names_in(&dir), ["host-id"]);
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
