//! The raw archive files no batch will ever own: half-written archives,
//! and archives of batches that will never commit, deleted by finalize
//! once it holds the writer.

use std::path::Path;

use super::LedgerWriter;
use crate::ledger::LedgerError;
use crate::ledger::raw::{RAW_DIR, SUFFIX};

/// Delete half-written archives and archives of batches that will never
/// commit: `pending(batch)` says whether a ready file still waits for it.
/// Only under the finalizer lease, after the ledger was opened for writing.
pub fn remove_orphans(
    ledger: &LedgerWriter,
    pending: impl Fn(&str) -> bool,
) -> Result<(), LedgerError> {
    let dir = ledger.dir().join(RAW_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(LedgerError::io(&dir, e)),
    };
    for entry in entries {
        let path = entry.map_err(|e| LedgerError::io(&dir, e))?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let is_dir = entry_is_dir(&path)?;
        let orphan = if name.starts_with('.') && name.ends_with(".tmp") {
            true
        } else if let Some(batch) = name.strip_suffix(SUFFIX).filter(|_| !is_dir) {
            !pending(batch) && !ledger.bookkeeping().batch_applied(batch)?
        } else if is_dir {
            !pending(&name) && !ledger.bookkeeping().batch_applied(&name)?
        } else {
            false
        };
        if orphan && is_dir {
            std::fs::remove_dir_all(&path).map_err(|e| LedgerError::io(&path, e))?;
        } else if orphan {
            std::fs::remove_file(&path).map_err(|e| LedgerError::io(&path, e))?;
        }
    }
    Ok(())
}

fn entry_is_dir(path: &Path) -> Result<bool, LedgerError> {
    std::fs::symlink_metadata(path)
        .map(|m| m.is_dir())
        .map_err(|e| LedgerError::io(path, e))
}
