//! The finalizer lease: one finalizer (or epoch advance) at a time per home.
//! The lease is an exclusive `flock` on `ledgers/finalize.lock`, kept beside
//! the live epoch rather than inside it so that archiving the epoch never
//! moves the lock. The lease alone cannot stop a writer that was paused and
//! wakes up after losing it; the ledger's durable incarnation number does.
//!
//! A finalizer waiting for the lease says so by holding a shared `flock` on
//! `ledgers/finalize.want` while it waits ([`someone_waits`]): the
//! holder's work that can wait (compaction after a run) stops at its next
//! file for it.

use std::fs::{File, TryLockError};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::home::Home;
use crate::ledger::create_dir_private;

/// Why the lease could not be had.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("another finalizer holds the lease at {0} (waited {1:?}); try again when it is done")]
    Busy(PathBuf, Duration),
}

/// Held while a finalizer runs; released on drop.
#[derive(Debug)]
pub(crate) struct Lease {
    _file: File,
}

/// How long to wait for another holder (`HARNERY_LEASE_WAIT_MS`, default 60 s).
fn wait_limit() -> Duration {
    let ms = std::env::var("HARNERY_LEASE_WAIT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60_000);
    Duration::from_millis(ms)
}

impl Lease {
    /// Wait (bounded) for the lease.
    pub(crate) fn take(home: &Home) -> Result<Lease, LeaseError> {
        Self::take_within(home, wait_limit())
    }

    /// The lease if it is free now; `None` if another holds it.
    pub(crate) fn try_take(home: &Home) -> Result<Option<Lease>, LeaseError> {
        match Self::take_within(home, Duration::ZERO) {
            Ok(lease) => Ok(Some(lease)),
            Err(LeaseError::Busy(..)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn take_within(home: &Home, limit: Duration) -> Result<Lease, LeaseError> {
        let dir = home.ledgers_dir();
        create_dir_private(&dir).map_err(|e| LeaseError::Io {
            path: dir.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let path = dir.join("finalize.lock");
        let io = |source| LeaseError::Io {
            path: path.clone(),
            source,
        };
        let file = {
            use std::os::unix::fs::OpenOptionsExt;
            File::options()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(&path)
                .map_err(io)?
        };
        let start = Instant::now();
        let mut want: Option<File> = None;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Lease { _file: file }),
                Err(TryLockError::WouldBlock) if start.elapsed() < limit => {
                    if want.is_none() {
                        want = open_want(&dir).ok();
                        if let Some(w) = &want {
                            // A holder that sees no waiter only finishes later.
                            let _ = w.try_lock_shared();
                        }
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(TryLockError::WouldBlock) => return Err(LeaseError::Busy(path, limit)),
                Err(TryLockError::Error(e)) => return Err(io(e)),
            }
        }
    }
}

/// `ledgers/finalize.want`, opened (created if missing) for locking.
fn open_want(dir: &std::path::Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(dir.join("finalize.want"))
}

/// Whether another finalizer is waiting for the lease now (it holds
/// `finalize.want` shared while it waits). Asked by the lease's holder
/// between steps that can wait; an error reading the file counts as no.
pub(crate) fn someone_waits(home: &Home) -> bool {
    let Ok(want) = open_want(&home.ledgers_dir()) else {
        return false;
    };
    match want.try_lock() {
        Ok(()) => {
            let _ = want.unlock();
            false
        }
        Err(TryLockError::WouldBlock) => true,
        Err(TryLockError::Error(_)) => false,
    }
}
