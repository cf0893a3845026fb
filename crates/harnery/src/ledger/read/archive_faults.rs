//! The raw archive files the ledger records (`raw_members`) checked
//! against the disk: missing, resized, or rewritten with bytes their rows'
//! records do not match (see [`crate::ledger::integrity`]). Read-only: a
//! writer runs this check through a reader before it writes.

use std::path::{Path, PathBuf};

use super::LedgerReader;
use super::raw_archive::Raw;
use crate::ledger::integrity::{Member, RawFault, damaged, stat};
use crate::ledger::{LedgerError, raw};

impl LedgerReader {
    /// Check the epoch in `dir` as a writer does before it writes (its
    /// genesis, its database and their binding, its raw archive files),
    /// writing nothing: for a step that moves the epoch as it is (an
    /// advance archiving it).
    pub(crate) fn check_epoch(dir: &Path) -> Result<(), LedgerError> {
        LedgerReader::open_dir(dir, None)?.raw().refuse_faults()?;
        Ok(())
    }
}

impl Raw<'_> {
    /// Whether this ledger records its raw archive files (migration
    /// `raw_members`; an older ledger read as it is may not).
    fn keeps_members(&self) -> Result<bool, LedgerError> {
        Ok(self.r.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'raw_members')",
            [],
            |r| r.get(0),
        )?)
    }

    fn recorded_members(&self) -> Result<Vec<(String, Member)>, LedgerError> {
        if !self.keeps_members()? {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .r
            .conn
            .prepare("SELECT batch, name, len, mtime_ns FROM raw_members ORDER BY batch, name")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                Member {
                    name: r.get(1)?,
                    len: r.get::<_, i64>(2)? as u64,
                    mtime_ns: r.get(3)?,
                },
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Every recorded raw archive file that is missing, of another length,
    /// or (when its mtime moved) holds records its rows do not match.
    /// Files whose mtime moved but whose records check out (restored from
    /// a backup by a copy that did not keep the time) are returned as
    /// `touched`, for a writer to record anew.
    fn scan(&self) -> Result<(Vec<RawFault>, Vec<String>), LedgerError> {
        let raw_dir = self.r.dir.join(raw::RAW_DIR);
        let mut faults = Vec::new();
        let mut suspect: Vec<(String, PathBuf)> = Vec::new();
        for (batch, m) in self.recorded_members()? {
            let path = raw_dir.join(&m.name);
            match stat(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => faults.push(RawFault {
                    what: format!("is missing (batch {batch} archived {} bytes there)", m.len),
                    path,
                }),
                Err(e) => faults.push(RawFault {
                    what: format!("cannot be read: {e}"),
                    path,
                }),
                Ok((len, _)) if len != m.len => faults.push(RawFault {
                    what: format!(
                        "is {len} bytes; batch {batch} archived {} bytes there",
                        m.len
                    ),
                    path,
                }),
                Ok((_, mtime)) if mtime != m.mtime_ns => suspect.push((batch, path)),
                Ok(_) => {}
            }
        }
        let mut touched = Vec::new();
        let mut checked: Option<String> = None;
        for (batch, path) in suspect {
            if checked.as_deref() == Some(batch.as_str()) {
                continue;
            }
            let (_, problems) = self.verify_batch(&batch)?;
            match problems.first() {
                None => touched.push(batch.clone()),
                Some(p) => faults.push(RawFault {
                    what: format!(
                        "was altered after batch {batch} archived it: raw signal {}: {}",
                        p.record_digest, p.detail
                    ),
                    path,
                }),
            }
            checked = Some(batch);
        }
        Ok((faults, touched))
    }

    /// The raw archive check of the read side: what `Raw::scan`
    /// finds, nothing written.
    pub(crate) fn faults(&self) -> Result<Vec<RawFault>, LedgerError> {
        Ok(self.scan()?.0)
    }

    /// The check a writer runs (through a reader) before it writes: every
    /// recorded file must check out, or this is the refusal. Returns the
    /// batches whose files were touched but check out.
    pub(in crate::ledger) fn refuse_faults(&self) -> Result<Vec<String>, LedgerError> {
        let (faults, touched) = self.scan()?;
        if let Some(f) = faults.first() {
            let more = match faults.len() {
                1 => String::new(),
                n => format!(" (and {} more archive files)", n - 1),
            };
            return Err(damaged(&f.path, format!("{}{more}", f.what)));
        }
        Ok(touched)
    }
}
