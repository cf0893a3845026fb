//! `harnery archive compact`: the live epoch's raw archive files
//! converted in place to their compressed form (`rawz`), one file at a
//! time, so that a kill at any point leaves each file readable, in its old
//! form or its new, and recorded as such in `raw_members`.
//!
//! For each batch whose records all check out, its recorded `….seg` files:
//!
//! 1. each compressed to `.<name>z.tmp` beside it, fsynced;
//! 2. read back frame by frame and compared, byte for byte, with the
//!    original (whose records were just checked against their rows);
//! 3. renamed to `<name>z`; then the directory fsynced once (both forms
//!    exist, the ledger still records the old; readers take the new);
//! 4. in one transaction, the new files recorded in `raw_members` (size,
//!    mtime) and the old ones forgotten;
//! 5. the old files deleted, the directory fsynced.
//!
//! A rerun finishes what a kill interrupted: a temporary file is deleted,
//! a compressed file the ledger does not record is written anew, an old
//! file the ledger no longer records is deleted.

use std::path::{Path, PathBuf};

use rusqlite::params;

use super::LedgerWriter;
use crate::durable;
use crate::failpoint;
use crate::ledger::{LedgerError, raw, rawz};

/// What a compaction did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Compacted {
    /// Files converted.
    pub files: u64,
    /// Their bytes before and after.
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Batches left as they were because a record of theirs does not
    /// check out (`harnery verify` names it).
    pub skipped_batches: Vec<String>,
    /// The deadline passed with files left to convert.
    #[serde(skip)]
    pub unfinished: bool,
}

/// Whether a killed compaction left something in a batch whose recorded
/// files are `recorded`: an old file beside its recorded compressed form.
/// (A temporary file is left only in a batch that still has a file to
/// convert, and that batch is looked at anyway.)
fn has_leftovers(raw_dir: &Path, recorded: &[&str]) -> bool {
    recorded
        .iter()
        .filter_map(|n| n.strip_suffix('z').filter(|_| n.ends_with(rawz::SUFFIX)))
        .any(|old| recorded.contains(&old) || raw_dir.join(old).exists())
}

/// Delete the temporary compressed files (`.<name>z.tmp`) a killed
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

impl LedgerWriter {
    /// Convert every recorded uncompressed archive file of this (live,
    /// write-opened) ledger at zstd `level`.
    pub(crate) fn compact_archive(&mut self, level: i32) -> Result<Compacted, LedgerError> {
        self.compact_archive_within(level, &|| false)
    }

    /// [`compact_archive`](Self::compact_archive), starting no new file
    /// once `stop` answers true (a file begun is finished, and recorded
    /// with the others of its batch converted so far): what is left is
    /// converted by the next call, and `unfinished` says so. Batches with
    /// nothing to convert and no leftover of a killed run are passed over
    /// without reading their directories.
    pub(crate) fn compact_archive_within(
        &mut self,
        level: i32,
        stop: &dyn Fn() -> bool,
    ) -> Result<Compacted, LedgerError> {
        let raw_dir = self.dir.join(raw::RAW_DIR);
        let mut done = Compacted::default();
        let names = self.raw().recorded_names()?;
        remove_temporaries(&raw_dir)?;
        let mut batches: Vec<&str> = names.iter().map(|(b, _)| b.as_str()).collect();
        batches.dedup();
        for batch in batches {
            let recorded: Vec<&str> = names
                .iter()
                .filter(|(b, _)| b == batch)
                .map(|(_, n)| n.as_str())
                .collect();
            let todo: Vec<&str> = recorded
                .iter()
                .copied()
                .filter(|n| n.ends_with(".seg") && !recorded.contains(&format!("{n}z").as_str()))
                .collect();
            if todo.is_empty() && !has_leftovers(&raw_dir, &recorded) {
                continue;
            }
            if stop() {
                done.unfinished = true;
                break;
            }
            self.finish_interrupted(&raw_dir, batch, &recorded)?;
            if todo.is_empty() {
                continue;
            }
            let (_, problems) = self.raw().verify_batch(batch)?;
            if !problems.is_empty() {
                done.skipped_batches.push(batch.to_string());
                continue;
            }
            self.compact_batch(&raw_dir, batch, &todo, level, stop, &mut done)?;
        }
        Ok(done)
    }

    /// Leftovers of a killed compaction in `batch`: temporary files in its
    /// directory, and old files whose compressed form the ledger records
    /// already. (Those of a single-file archive, in `raw/` itself, went
    /// first: [`remove_temporaries`].)
    fn finish_interrupted(
        &mut self,
        raw_dir: &Path,
        batch: &str,
        recorded: &[&str],
    ) -> Result<(), LedgerError> {
        remove_temporaries(&raw::archive_path(&self.dir, batch))?;
        for z in recorded.iter().filter(|n| n.ends_with(rawz::SUFFIX)) {
            let old = z.strip_suffix('z').expect("ends with z");
            let old_path = raw_dir.join(old);
            if recorded.contains(&old) {
                self.conn.execute(
                    "DELETE FROM raw_members WHERE batch = ?1 AND name = ?2",
                    params![batch, old],
                )?;
            }
            if old_path.exists() {
                std::fs::remove_file(&old_path).map_err(|e| LedgerError::io(&old_path, e))?;
                durable::sync_dir(old_path.parent().unwrap_or(raw_dir))?;
            }
        }
        Ok(())
    }

    /// Convert the files `names` of `batch`: each written, synced and
    /// checked, then renamed into place; the directory synced once; one
    /// transaction records them all; then the old files go.
    fn compact_batch(
        &mut self,
        raw_dir: &Path,
        batch: &str,
        names: &[&str],
        level: i32,
        stop: &dyn Fn() -> bool,
        done: &mut Compacted,
    ) -> Result<(), LedgerError> {
        let mut converted = Vec::new();
        let mut dirs: Vec<PathBuf> = Vec::new();
        for name in names {
            if !converted.is_empty() && stop() {
                done.unfinished = true;
                break;
            }
            let old = raw_dir.join(name);
            let dir = old.parent().unwrap_or(raw_dir).to_path_buf();
            let new_name = format!("{name}z");
            let new = raw_dir.join(&new_name);
            let file_name = new.file_name().unwrap_or_default().to_string_lossy();
            let tmp: PathBuf = dir.join(format!(".{file_name}.tmp"));
            if new.exists() {
                // Renamed by a killed run before the ledger recorded it.
                std::fs::remove_file(&new).map_err(|e| LedgerError::io(&new, e))?;
            }
            let before = std::fs::metadata(&old)
                .map_err(|e| LedgerError::io(&old, e))?
                .len();
            let after = rawz::compress_file(&old, &tmp, level)
                .map_err(|e| LedgerError::durability(&tmp, e))?;
            failpoint::hit("compact-after-write");
            rawz::same_bytes(&tmp, &old).map_err(|detail| LedgerError::Corrupt {
                path: tmp.clone(),
                detail: format!("the compressed file does not read back as the original: {detail}"),
            })?;
            std::fs::rename(&tmp, &new).map_err(|e| LedgerError::io(&new, e))?;
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
            done.bytes_before += before;
            done.bytes_after += after;
            converted.push((name.to_string(), new_name, old, new));
        }
        for dir in &dirs {
            durable::sync_dir(dir)?;
        }
        failpoint::hit("compact-after-rename");
        let tx = self.conn_mut().transaction()?;
        for (name, new_name, _, new) in &converted {
            let (len, mtime) = super::integrity::stat_of(new)?;
            tx.execute(
                "INSERT OR REPLACE INTO raw_members (batch, name, len, mtime_ns) VALUES (?1, ?2, ?3, ?4)",
                params![batch, new_name, len as i64, mtime],
            )?;
            tx.execute(
                "DELETE FROM raw_members WHERE batch = ?1 AND name = ?2",
                params![batch, name],
            )?;
        }
        tx.commit().map_err(LedgerError::CommitFailed)?;
        failpoint::hit("compact-after-record");
        for (_, _, old, _) in &converted {
            std::fs::remove_file(old).map_err(|e| LedgerError::io(old, e))?;
        }
        for dir in &dirs {
            durable::sync_dir(dir)?;
        }
        done.files += converted.len() as u64;
        Ok(())
    }
}
