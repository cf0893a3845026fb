//! `harnery archive compact`, and the pass a default `finalize` runs
//! after its commit: each batch's raw archive packed into one compressed
//! file, `raw/<batch>.segz` (`rawz`: the batch's whole concatenation as
//! one stream of 4 MiB zstd frames), so that the records of a batch's
//! sessions, which repeat one another, are compressed together. A batch
//! is packed from whatever form it is in: its directory of spool files as
//! `finalize` linked them, the same files compressed one by one (an older
//! build's compaction, or one of them and not the others), or the single
//! file of a ledger from before the links. Step by step, for each batch
//! whose records all check out:
//!
//! 1. its bytes, read through the archive reader, compressed to
//!    `raw/.<batch>.segz.tmp`, fsynced;
//! 2. read back frame by frame and compared, byte for byte, with the
//!    archive read again (whose records were just checked against their
//!    rows);
//! 3. renamed to `raw/<batch>.segz`, `raw/` fsynced: readers take it from
//!    then on (a reader looks for the packed file first, and one that
//!    opened the directory before reads it again from the packed file when
//!    a file it opens is gone), while the ledger still records the old
//!    files;
//! 4. in one transaction, the packed file recorded in `raw_members` (size,
//!    mtime) and the batch's old files forgotten;
//! 5. the old files deleted (the directory file by file, then itself),
//!    `raw/` fsynced.
//!
//! A rerun finishes what a kill interrupted: a temporary file is deleted,
//! a packed file the ledger does not record is deleted and written anew,
//! old files of a batch whose packed file the ledger records are
//! forgotten and deleted.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::params;

use super::LedgerWriter;
use crate::durable;
use crate::failpoint;
use crate::ledger::{LedgerError, raw, rawz};

/// What a compaction did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Compacted {
    /// Archive files replaced (each batch's old files, however many).
    pub files: u64,
    /// Their bytes on disk before, and the packed files' after.
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Batches packed, one file each.
    pub batches: u64,
    /// Batches left as they were because a record of theirs does not
    /// check out (`harnery verify` names it), or a file the ledger records
    /// is not one the archive reads.
    pub skipped_batches: Vec<String>,
    /// The deadline passed with batches left to pack.
    #[serde(skip)]
    pub unfinished: bool,
}

/// Batches whose rows one pass over the raw signal rows checks, ahead of
/// packing them: the pass costs as much for one batch as for many, and
/// what a stop leaves unpacked of them is checked again by the next run.
const VERIFIED_TOGETHER: usize = 128;

/// The name below `raw/` of `batch`'s packed archive.
fn packed_name(batch: &str) -> String {
    format!("{batch}{}", rawz::SUFFIX)
}

/// Whether a killed compaction left old files beside `batch`'s recorded
/// packed file: its directory, or an uncompressed single file.
fn has_leftovers(raw_dir: &Path, batch: &str) -> bool {
    let exists = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    exists(&raw_dir.join(batch)) || exists(&raw_dir.join(format!("{batch}{}", raw::SUFFIX)))
}

/// Delete the temporary packed files (`.<batch>.segz.tmp`) a killed
/// compaction left in `dir` (none there, or no `dir`: nothing to do).
fn remove_temporaries(dir: &Path) -> Result<(), LedgerError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries {
        let e = e.map_err(|e| LedgerError::io(dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && name.ends_with(".segz.tmp") {
            let path = e.path();
            std::fs::remove_file(&path).map_err(|e| LedgerError::io(&path, e))?;
        }
    }
    Ok(())
}

/// Delete the packed file of `batch`, which the ledger does not record: a
/// killed run renamed it into place before recording it, and the old
/// files are what the ledger vouches for (and what is checked and packed
/// again).
fn remove_unrecorded_packed(dir: &Path, raw_dir: &Path, batch: &str) -> Result<(), LedgerError> {
    let packed = raw::packed_path(dir, batch);
    if std::fs::symlink_metadata(&packed).is_ok() {
        std::fs::remove_file(&packed).map_err(|e| LedgerError::io(&packed, e))?;
        durable::sync_dir(raw_dir)?;
    }
    Ok(())
}

/// Delete `batch`'s old archive files: its directory, file by file, then
/// the directory; an uncompressed single file; then `raw/` synced.
fn remove_old_files(raw_dir: &Path, batch: &str) -> Result<(), LedgerError> {
    let dir = raw_dir.join(batch);
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries {
            let path = e.map_err(|e| LedgerError::io(&dir, e))?.path();
            std::fs::remove_file(&path).map_err(|e| LedgerError::io(&path, e))?;
            failpoint::hit("compact-mid-remove");
        }
        std::fs::remove_dir(&dir).map_err(|e| LedgerError::io(&dir, e))?;
    }
    let single = raw_dir.join(format!("{batch}{}", raw::SUFFIX));
    match std::fs::remove_file(&single) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(LedgerError::io(&single, e));
        }
        _ => {}
    }
    durable::sync_dir(raw_dir)?;
    Ok(())
}

impl LedgerWriter {
    /// Pack every batch of this (live, write-opened) ledger's raw archive
    /// not packed yet, at zstd `level`.
    pub(crate) fn compact_archive(&mut self, level: i32) -> Result<Compacted, LedgerError> {
        self.compact_archive_within(level, &|| false)
    }

    /// [`compact_archive`](Self::compact_archive), starting no new batch
    /// once `stop` answers true (a batch begun is finished): what is left
    /// is packed by the next call, and `unfinished` says so. Batches
    /// packed already, with no leftover of a killed run, are passed over
    /// at the cost of two lookups each.
    pub(crate) fn compact_archive_within(
        &mut self,
        level: i32,
        stop: &dyn Fn() -> bool,
    ) -> Result<Compacted, LedgerError> {
        let raw_dir = self.dir.join(raw::RAW_DIR);
        let mut done = Compacted::default();
        let names = self.raw().recorded_names()?;
        remove_temporaries(&raw_dir)?;
        // `names` is sorted by batch: each batch's recorded files in a run.
        let mut batches: Vec<(&str, Vec<&str>)> = Vec::new();
        for (batch, name) in &names {
            match batches.last_mut() {
                Some((b, files)) if *b == batch.as_str() => files.push(name),
                _ => batches.push((batch, vec![name])),
            }
        }
        let unpacked: Vec<&str> = batches
            .iter()
            .filter(|(batch, files)| !files.contains(&packed_name(batch).as_str()))
            .map(|(batch, _)| *batch)
            .collect();
        // Whose records check out, found for many batches in one pass over
        // the raw signal rows: a pass for each batch read every row once
        // per batch, which made packing a long run's batches quadratic.
        let mut checked: HashMap<&str, bool> = HashMap::new();
        for (batch, recorded) in &batches {
            let packed = packed_name(batch);
            let is_packed = recorded.contains(&packed.as_str());
            let old_recorded = recorded.iter().any(|n| *n != packed);
            if is_packed && !old_recorded && !has_leftovers(&raw_dir, batch) {
                continue;
            }
            if stop() {
                done.unfinished = true;
                break;
            }
            if is_packed {
                self.forget_old_files(batch)?;
                remove_old_files(&raw_dir, batch)?;
                continue;
            }
            if !checked.contains_key(batch) {
                let from = unpacked.iter().position(|b| b == batch).unwrap_or(0);
                let group = &unpacked[from..(from + VERIFIED_TOGETHER).min(unpacked.len())];
                for b in group {
                    remove_unrecorded_packed(&self.dir, &raw_dir, b)?;
                }
                let (_, problems) = self.raw().verify_batches(group)?;
                checked = group.iter().map(|b| (*b, true)).collect();
                for p in &problems {
                    if let Some(clean) = checked.get_mut(p.batch.as_str()) {
                        *clean = false;
                    }
                }
            }
            let clean = checked.get(batch).copied().unwrap_or(false);
            self.pack_batch(&raw_dir, batch, recorded, clean, level, &mut done)?;
        }
        Ok(done)
    }

    /// Forget every recorded file of `batch` but its packed one.
    fn forget_old_files(&mut self, batch: &str) -> Result<(), LedgerError> {
        self.conn.execute(
            "DELETE FROM raw_members WHERE batch = ?1 AND name <> ?2",
            params![batch, packed_name(batch)],
        )?;
        Ok(())
    }

    /// Pack `batch`, whose recorded files are `recorded` and whose rows'
    /// records all checked out when `clean`: written, synced and checked,
    /// renamed into place, recorded, then the old files go. A batch that
    /// is not clean is left as it is.
    fn pack_batch(
        &mut self,
        raw_dir: &Path,
        batch: &str,
        recorded: &[&str],
        clean: bool,
        level: i32,
        done: &mut Compacted,
    ) -> Result<(), LedgerError> {
        let packed = raw::packed_path(&self.dir, batch);
        let archive = match clean {
            true => Some(raw::Archive::open(&self.dir, batch)?),
            false => None,
        };
        let Some(archive) = archive.filter(|a| reads_every_recorded_file(a, raw_dir, recorded))
        else {
            done.skipped_batches.push(batch.to_string());
            return Ok(());
        };
        let mut before = 0;
        for name in recorded {
            before += super::integrity::stat_of(&raw_dir.join(name))?.0;
        }
        let tmp = raw_dir.join(format!(".{}.tmp", packed_name(batch)));
        let after = rawz::compress(&mut archive.bytes(), &tmp, level)
            .map_err(|e| LedgerError::durability(&tmp, e))?;
        failpoint::hit("compact-after-write");
        let what = format!("the archive of batch {batch}");
        rawz::same_bytes(&tmp, &mut archive.bytes(), archive.len(), &what).map_err(|detail| {
            LedgerError::Corrupt {
                path: tmp.clone(),
                detail: format!("the packed file does not read back as the archive: {detail}"),
            }
        })?;
        drop(archive);
        std::fs::rename(&tmp, &packed).map_err(|e| LedgerError::io(&packed, e))?;
        durable::sync_dir(raw_dir)?;
        failpoint::hit("compact-after-rename");
        let (len, mtime) = super::integrity::stat_of(&packed)?;
        let tx = self.conn_mut().transaction()?;
        tx.execute(
            "INSERT OR REPLACE INTO raw_members (batch, name, len, mtime_ns) VALUES (?1, ?2, ?3, ?4)",
            params![batch, packed_name(batch), len as i64, mtime],
        )?;
        tx.execute(
            "DELETE FROM raw_members WHERE batch = ?1 AND name <> ?2",
            params![batch, packed_name(batch)],
        )?;
        tx.commit().map_err(LedgerError::CommitFailed)?;
        failpoint::hit("compact-after-record");
        remove_old_files(raw_dir, batch)?;
        done.files += recorded.len() as u64;
        done.bytes_before += before;
        done.bytes_after += after;
        done.batches += 1;
        Ok(())
    }
}

/// Whether every file the ledger records for a batch is one `archive`
/// reads, itself or in its compressed form (the only files packing may
/// delete are ones whose bytes it packed).
fn reads_every_recorded_file(archive: &raw::Archive, raw_dir: &Path, recorded: &[&str]) -> bool {
    let read: Vec<&Path> = archive.files().collect();
    recorded.iter().all(|name| {
        let path = raw_dir.join(name);
        read.contains(&path.as_path()) || read.contains(&raw::compressed_path(&path).as_path())
    })
}
