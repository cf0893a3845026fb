//! The raw archive, `raw/` beside the ledger database: the intake spool
//! files each batch drained, kept byte for byte once the spool lets them go.
//!
//! One file per batch, `raw/<batch>.seg`: the batch's spool files
//! concatenated in the batch's order. A spool file holds records and
//! nothing else (spool format §2), so an archive is itself a spool file
//! that the spool reader (and `harnery spool cat`'s format) reads; damaged
//! ranges are kept as they were, so no drained byte is lost. A raw signal
//! row names its record by the batch and the record's byte offset here.
//!
//! The bytes live outside SQLite because the ledger would otherwise write
//! each of them twice more (WAL, then checkpoint) and carry them through
//! every page it touches. An archive is written durably (temporary file,
//! fsync, rename, fsync of the directory) before the batch's ready file, so
//! no committed row can point at bytes that a crash could still take away;
//! an archive whose batch neither committed nor has a ready file waiting
//! is the leftover of a killed run, and [`remove_orphans`] deletes it.

use std::path::{Path, PathBuf};

use super::{LedgerError, durable};
use crate::spool::{SegmentItem, SpoolRecord, read_first};

/// The archive directory's name inside the ledger directory.
pub const RAW_DIR: &str = "raw";
const SUFFIX: &str = ".seg";

/// Where the archive of `batch` lives.
pub fn archive_path(ledger_dir: &Path, batch: &str) -> PathBuf {
    ledger_dir.join(RAW_DIR).join(format!("{batch}{SUFFIX}"))
}

/// Write the archive of `batch`: `parts` one after another. Returns its
/// path once it is durable.
pub fn write(ledger_dir: &Path, batch: &str, parts: &[&[u8]]) -> Result<PathBuf, LedgerError> {
    super::create_dir_private(&ledger_dir.join(RAW_DIR))?;
    let path = archive_path(ledger_dir, batch);
    durable::write_atomic_parts(&path, parts)?;
    Ok(path)
}

/// A record's captured agent environment as a raw signal row keeps it:
/// a compact JSON object, or nothing when it captured none.
pub fn env_text(env: &std::collections::BTreeMap<String, String>) -> Option<String> {
    (!env.is_empty()).then(|| serde_json::to_string(env).expect("env serializes"))
}

/// Delete half-written archives and archives of batches that will never
/// commit: `pending(batch)` says whether a ready file still waits for it.
/// Only under the finalizer lease, after the ledger was opened for writing.
pub fn remove_orphans(
    ledger: &super::Ledger,
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
        let orphan = if name.starts_with('.') && name.ends_with(".tmp") {
            true
        } else if let Some(batch) = name.strip_suffix(SUFFIX) {
            !pending(batch) && !ledger.batch_applied(batch)?
        } else {
            false
        };
        if orphan {
            std::fs::remove_file(&path).map_err(|e| LedgerError::io(&path, e))?;
        }
    }
    Ok(())
}

/// One archive held in memory, to look records up by offset.
pub struct Archive {
    path: PathBuf,
    bytes: Vec<u8>,
}

impl Archive {
    pub fn open(ledger_dir: &Path, batch: &str) -> Result<Archive, LedgerError> {
        let path = archive_path(ledger_dir, batch);
        let bytes = std::fs::read(&path).map_err(|e| LedgerError::io(&path, e))?;
        Ok(Archive { path, bytes })
    }

    /// The intact record that starts at byte `at`, or why there is none.
    pub fn record_at(&self, at: u64) -> Result<SpoolRecord, String> {
        let here = || format!("{} byte {at}", self.path.display());
        let start = usize::try_from(at)
            .ok()
            .filter(|&a| a < self.bytes.len())
            .ok_or_else(|| format!("{}: past the end of the archive", here()))?;
        match read_first(&self.bytes[start..], &self.path) {
            Some(SegmentItem::Record(mut record)) => {
                record.at.offset = at;
                Ok(*record)
            }
            Some(SegmentItem::Damage(d)) => Err(format!("{}: {}", here(), d.kind.as_str())),
            None => Err(format!("{}: no record", here())),
        }
    }
}

/// A raw signal whose bytes are not where its row says.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RawProblem {
    pub record_digest: String,
    pub batch: String,
    /// Its offset in the batch's archive (none for bytes kept inline).
    pub archive_at: Option<u64>,
    pub detail: String,
}

impl super::Ledger {
    /// Check every raw signal row against its bytes: an archived row's
    /// record must be intact (its spool digest matches) at its offset in
    /// its batch's archive, and carry the row's receive time, session key
    /// and event name; an inline row's envelope must say the same. Rows
    /// are read archive by archive, so each archive is read once. Returns
    /// the rows checked and the problems.
    pub fn verify_raw(&self) -> Result<(u64, Vec<RawProblem>), LedgerError> {
        let mut stmt = self.conn.prepare(
            "SELECT record_digest, session_key, event_name, received_unix_ns, batch, archive_at, envelope \
             FROM raw_signals ORDER BY batch, archive_at",
        )?;
        let mut rows = stmt.query([])?;
        let mut problems = Vec::new();
        let mut archive: Option<(String, Result<Archive, String>)> = None;
        let mut count = 0u64;
        while let Some(r) = rows.next()? {
            count += 1;
            let digest: String = r.get(0)?;
            let want = Identity {
                session_key: r.get(1)?,
                event: r.get(2)?,
                received_ns: r.get(3)?,
            };
            let batch: String = r.get(4)?;
            let at: Option<i64> = r.get(5)?;
            let envelope: Option<String> = r.get(6)?;
            let found = match (at, envelope) {
                (Some(at), _) => {
                    if archive.as_ref().is_none_or(|(b, _)| *b != batch) {
                        let opened = Archive::open(self.dir(), &batch).map_err(|e| e.to_string());
                        archive = Some((batch.clone(), opened));
                    }
                    match &archive.as_ref().expect("just opened").1 {
                        Ok(a) => a
                            .record_at(at as u64)
                            .map(|rec| Identity::of(&rec.envelope)),
                        Err(e) => Err(e.clone()),
                    }
                }
                (None, Some(text)) => serde_json::from_str::<crate::spool::Envelope>(&text)
                    .map(|env| Identity::of(&env))
                    .map_err(|e| format!("the inline envelope does not parse: {e}")),
                (None, None) => Err("the row keeps no bytes and no archive offset".into()),
            };
            let detail = match found {
                Ok(got) if got == want => continue,
                Ok(got) => format!("the record there is {got:?}, the row says {want:?}"),
                Err(e) => e,
            };
            problems.push(RawProblem {
                record_digest: digest,
                batch,
                archive_at: at.map(|a| a as u64),
                detail,
            });
        }
        Ok((count, problems))
    }
}

/// What a raw signal row and its record must agree on.
#[derive(Debug, PartialEq, Eq)]
struct Identity {
    session_key: String,
    event: Option<String>,
    received_ns: i64,
}

impl Identity {
    fn of(env: &crate::spool::Envelope) -> Identity {
        Identity {
            session_key: env.session_key.clone(),
            event: env.event.clone(),
            received_ns: env.received_ns,
        }
    }
}
