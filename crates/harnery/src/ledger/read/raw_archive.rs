//! What the raw archive holds and whether it is whole: its size on disk
//! and as original bytes, the files the ledger records, and `verify`'s
//! check of every raw signal row against its bytes.

use rusqlite::OptionalExtension;

use super::LedgerReader;
use crate::ledger::raw::{self, Identity, OpenArchives, inline_identity};
use crate::ledger::{LedgerError, rawz};

/// A raw signal whose bytes are not where its row says.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RawProblem {
    pub record_digest: String,
    /// The session key the row names.
    pub session_key: String,
    pub batch: String,
    /// Its offset in the batch's archive (none for bytes kept inline).
    pub archive_at: Option<u64>,
    pub detail: String,
}

/// The raw archive's size: on disk, and as the original bytes.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct ArchiveSize {
    pub files: u64,
    pub compressed_files: u64,
    pub bytes_on_disk: u64,
    pub original_bytes: u64,
}

/// The raw archive: its size, and its files checked against what the ledger recorded of them.
pub struct Raw<'r> {
    pub(super) r: &'r LedgerReader,
}

impl Raw<'_> {
    /// The recorded archive files, by batch.
    pub(in crate::ledger) fn recorded_names(&self) -> Result<Vec<(String, String)>, LedgerError> {
        let mut stmt = self
            .r
            .conn
            .prepare("SELECT batch, name FROM raw_members ORDER BY batch, name")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The size of the raw archive the ledger records.
    pub fn size(&self) -> Result<ArchiveSize, LedgerError> {
        let mut size = ArchiveSize::default();
        let has: bool = self.r.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'raw_members')",
            [],
            |r| r.get(0),
        )?;
        if !has {
            return Ok(size);
        }
        let raw_dir = self.r.dir.join(raw::RAW_DIR);
        for (_, name) in self.recorded_names()? {
            let path = raw_dir.join(&name);
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            size.files += 1;
            size.bytes_on_disk += meta.len();
            if name.ends_with(rawz::SUFFIX) {
                size.compressed_files += 1;
                if let Ok(z) = rawz::Compressed::open(&path) {
                    size.original_bytes += z.original_len();
                }
            } else {
                size.original_bytes += meta.len();
            }
        }
        Ok(size)
    }

    /// Check every raw signal row against its bytes: an archived row's
    /// record must be intact (its spool digest matches) at its offset in
    /// its batch's archive, and carry the row's receive time, session key
    /// and event name; an inline row's envelope must say the same. Rows
    /// are read in key order (no sort in SQLite), and archived ones checked
    /// [`CHECKED_TOGETHER`] at a time in archive order, each record read at
    /// its offset from a few archives kept open. Returns the rows checked
    /// and the problems, in key order.
    pub fn verify(&self) -> Result<(u64, Vec<RawProblem>), LedgerError> {
        self.verify_range(None, None)
    }

    /// The receive time that halves the raw signal rows, to check the two
    /// halves on two threads ([`Raw::verify_range`]).
    pub fn midpoint(&self) -> Result<Option<i64>, LedgerError> {
        let n: i64 = self
            .r
            .conn
            .query_row("SELECT count(*) FROM raw_signals", [], |r| r.get(0))?;
        Ok(self.r
            .conn
            .query_row(
                "SELECT received_unix_ns FROM raw_signals ORDER BY received_unix_ns LIMIT 1 OFFSET ?1",
                [n / 2],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// [`Raw::verify`] over the rows received at or after `from`
    /// and before `to` (either bound open when `None`).
    pub fn verify_range(
        &self,
        from: Option<i64>,
        to: Option<i64>,
    ) -> Result<(u64, Vec<RawProblem>), LedgerError> {
        self.verify_where(from, to, None)
    }

    /// [`Raw::verify`] over the rows of one batch.
    pub fn verify_batch(&self, batch: &str) -> Result<(u64, Vec<RawProblem>), LedgerError> {
        self.verify_batches(&[batch])
    }

    /// [`Raw::verify`] over the rows of `batches`, in one pass over the
    /// rows (which no index orders by batch): what a check of each batch
    /// on its own would find, for the cost of one. Each problem names its
    /// batch.
    pub(crate) fn verify_batches(
        &self,
        batches: &[&str],
    ) -> Result<(u64, Vec<RawProblem>), LedgerError> {
        let names = serde_json::to_string(batches).expect("a list of strings serializes");
        self.verify_where(None, None, Some(&names))
    }

    /// `batches`: a JSON array of batch names, or `None` for every batch.
    fn verify_where(
        &self,
        from: Option<i64>,
        to: Option<i64>,
        batches: Option<&str>,
    ) -> Result<(u64, Vec<RawProblem>), LedgerError> {
        let mut stmt = self.r.conn.prepare(
            "SELECT record_digest, session_key, event_name, received_unix_ns, batch, archive_at, envelope \
             FROM raw_signals WHERE received_unix_ns >= coalesce(?1, -9223372036854775808) \
             AND (?2 IS NULL OR received_unix_ns < ?2) \
             AND (?3 IS NULL OR batch IN (SELECT value FROM json_each(?3)))",
        )?;
        let mut rows = stmt.query(rusqlite::params![from, to, batches])?;
        let mut problems = Vec::new();
        let mut open = OpenArchives::default();
        let mut archived = Vec::new();
        let mut count = 0u64;
        while let Some(r) = rows.next()? {
            let text = |i: usize| -> rusqlite::Result<Option<String>> {
                Ok(r.get_ref(i)?.as_str_or_null()?.map(str::to_string))
            };
            let row = ArchivedRow {
                seq: count,
                record_digest: r.get(0)?,
                session_key: text(1)?.unwrap_or_default(),
                event: text(2)?,
                received_ns: r.get(3)?,
                batch: text(4)?.unwrap_or_default(),
                at: r.get::<_, Option<i64>>(5)?.map(|a| a as u64),
            };
            count += 1;
            if row.at.is_some() {
                archived.push(row);
                if archived.len() == CHECKED_TOGETHER {
                    self.check_archived(&mut archived, &mut open, &mut problems);
                }
                continue;
            }
            let inline = r
                .get_ref(6)?
                .as_str_or_null()
                .map_err(rusqlite::Error::from)?;
            let verdict = match inline {
                Some(text) => inline_identity(text, &row.identity()),
                None => Err("the row keeps no bytes and no archive offset".into()),
            };
            if let Err(detail) = verdict {
                problems.push((row.seq, row.problem(detail)));
            }
        }
        self.check_archived(&mut archived, &mut open, &mut problems);
        problems.sort_by_key(|(seq, _)| *seq);
        Ok((count, problems.into_iter().map(|(_, p)| p).collect()))
    }

    /// Check `rows` (archived rows, taken out) against their records,
    /// batch by batch in archive order: each compressed frame is then
    /// decompressed once, where rows in receive order would hop between
    /// the frames of many batches.
    fn check_archived(
        &self,
        rows: &mut Vec<ArchivedRow>,
        open: &mut OpenArchives,
        problems: &mut Vec<(u64, RawProblem)>,
    ) {
        rows.sort_by(|a, b| (&a.batch, a.at).cmp(&(&b.batch, b.at)));
        for row in rows.drain(..) {
            let at = row.at.expect("archived rows only");
            let verdict = match open.get(self.r.dir(), &row.batch) {
                Ok(a) => a.identity_at(at, &row.identity()),
                Err(e) => Err(e.clone()),
            };
            if let Err(detail) = verdict {
                problems.push((row.seq, row.problem(detail)));
            }
        }
    }
}

/// How many archived rows are sorted and checked together: enough that a
/// frame is decompressed once for most of its rows, few enough that the
/// rows held stay a few megabytes.
const CHECKED_TOGETHER: usize = 32 << 10;

/// A raw signal row as `verify` holds it until its record is read.
struct ArchivedRow {
    /// Its place in receive order, the order problems are told in.
    seq: u64,
    record_digest: String,
    session_key: String,
    event: Option<String>,
    received_ns: i64,
    batch: String,
    at: Option<u64>,
}

impl ArchivedRow {
    fn identity(&self) -> Identity<'_> {
        Identity {
            session_key: &self.session_key,
            event: self.event.as_deref(),
            received_ns: self.received_ns,
        }
    }

    fn problem(self, detail: String) -> RawProblem {
        RawProblem {
            record_digest: self.record_digest,
            session_key: self.session_key,
            batch: self.batch,
            archive_at: self.at,
            detail,
        }
    }
}
