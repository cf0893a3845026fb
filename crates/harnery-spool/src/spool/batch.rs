//! Signals that enter a session's spool whole, or not at all.
//!
//! A hook appends to `active.seg`, and a hook killed in the middle of its
//! write leaves a torn record there: damage the drain must report, since
//! those bytes exist nowhere else. Some writers can produce their signals
//! again: the record pass reads the agent's record again from a cursor that
//! has not moved, and an import names a session again until it is known. A
//! kill in the middle of their writes must leave nothing half written, or
//! the drain reports damage where nothing was lost.
//!
//! So such a writer opens a [`SealedBatch`]: its signals go to a file of its
//! own under a `.tmp-` name, which no reader reads, and
//! [`SealedBatch::seal`] makes that file part of the session's spool in one
//! rename. It takes the session lease, seals `active.seg` first and stamps
//! the batch after every file already there, so the batch drains after every
//! signal appended before it, as if it had been appended then. A writer
//! killed before the rename leaves only its temporary file; a later seal in
//! the same session removes those an hour old.
//!
//! Nothing here is fdatasync'd: the batch's signals can be produced again
//! until whatever they feed is durable, and the drain makes a spool file
//! durable before it relies on it.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use super::intake::{SEAL_LEASE_WAIT, list_files, seal_active, stamp};
use super::key::{adapter_key, session_key};
use super::writer::{ONE_WRITE_MAX, SEQ, SpoolWriter, acquire_lease, encode};
use super::{FALLBACK_PREFIX, SEALED_PREFIX, SpoolError, TMP_PREFIX};
use crate::clock::wall_now_ns;
use crate::home::PrivateDir;
use crate::spool::Signal;

/// Temporary batch files start so (after [`TMP_PREFIX`]).
const BATCH_TMP_PREFIX: &str = ".tmp-batch-";
/// A batch's temporary file this old belongs to a writer that died.
const ABANDONED_AFTER: Duration = Duration::from_secs(3600);
/// Buffered signals are written once they reach this many bytes.
const WRITE_AT: usize = 1 << 20;

/// One session's signals, written to a temporary file until sealed into
/// its spool (see the module doc). Dropped unsealed, the temporary file is
/// removed.
#[derive(Debug)]
pub struct SealedBatch {
    writer: SpoolWriter,
    dir: PrivateDir,
    session_key: String,
    tmp: String,
    file: File,
    buf: Vec<u8>,
    sealed: bool,
}

impl SealedBatch {
    /// A batch for the session `session_id` of `adapter`, its directory
    /// created when missing.
    pub fn open(
        writer: &SpoolWriter,
        adapter: &str,
        session_id: Option<&str>,
    ) -> Result<SealedBatch, SpoolError> {
        let session_key = session_key(session_id);
        let dir =
            writer
                .home()
                .private_dir(&["spool", "intake", &adapter_key(adapter), &session_key])?;
        let tmp = format!(
            "{BATCH_TMP_PREFIX}{:020}-{}-{}.seg",
            wall_now_ns().max(0),
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        debug_assert!(tmp.starts_with(TMP_PREFIX));
        let file = dir.create_new(&tmp)?;
        Ok(SealedBatch {
            writer: writer.clone(),
            dir,
            session_key,
            tmp,
            file,
            buf: Vec::new(),
            sealed: false,
        })
    }

    /// Add a signal of the batch's session.
    pub fn append(&mut self, s: &Signal<'_>) -> Result<(), SpoolError> {
        if session_key(s.session_id) != self.session_key {
            return Err(SpoolError::Io(std::io::Error::other(format!(
                "a signal of session {:?} offered to the batch of {}",
                s.session_id, self.session_key
            ))));
        }
        let env = self.writer.envelope(s, &self.session_key);
        let rec = encode(&env, s.payload)?;
        if rec.len() > ONE_WRITE_MAX {
            self.write_buffered()?;
            return Ok(rec.write_to(&mut self.file)?);
        }
        rec.extend(&mut self.buf);
        if self.buf.len() >= WRITE_AT {
            self.write_buffered()?;
        }
        Ok(())
    }

    /// Make the batch part of the session's spool, after every signal
    /// appended there before; its file (a caller may want its writeback
    /// started).
    pub fn seal(mut self) -> Result<File, SpoolError> {
        self.write_buffered()?;
        let _lease = acquire_lease(&self.dir, SEAL_LEASE_WAIT)?;
        let mut next = self.after_every_file()?.max(wall_now_ns().max(0));
        if seal_active(&self.dir, next)? {
            next += 1;
        }
        let name = format!(
            "{SEALED_PREFIX}{next:020}-{}-{}.seg",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        self.dir.rename(&self.tmp, &name)?;
        self.sealed = true;
        // The batch's `Drop` still holds its own handle.
        Ok(self.file.try_clone()?)
    }

    fn write_buffered(&mut self) -> Result<(), SpoolError> {
        self.file.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// A stamp after every sealed and fallback file of the session (the
    /// clock may have stepped back since they were named); batch files
    /// abandoned by writers that died are removed on the way.
    fn after_every_file(&self) -> Result<i64, SpoolError> {
        let mut after = 0;
        for name in list_files(self.dir.path())? {
            if let Some(ns) = stamp(&name, SEALED_PREFIX).or_else(|| stamp(&name, FALLBACK_PREFIX))
            {
                after = after.max(ns.saturating_add(1));
            } else if name.starts_with(BATCH_TMP_PREFIX)
                && name != self.tmp
                && self.abandoned(&name)
            {
                // Another writer may remove it first; nothing else can.
                let _ = self.dir.remove(&name);
            }
        }
        Ok(after)
    }

    fn abandoned(&self, name: &str) -> bool {
        std::fs::symlink_metadata(self.dir.path().join(name))
            .and_then(|m| m.modified())
            .is_ok_and(|t| {
                SystemTime::now()
                    .duration_since(t)
                    .is_ok_and(|age| age >= ABANDONED_AFTER)
            })
    }
}

impl Drop for SealedBatch {
    fn drop(&mut self) {
        if !self.sealed {
            let _ = self.dir.remove(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::home::Home;
    use crate::spool::{IntakeSpool, SessionSpool, SpoolRecord, read_segment};

    const SESSION: &str = "s-1";

    fn signal(event: &str) -> Signal<'_> {
        Signal::new("claude-code", Some(event), Some(SESSION), b"{}")
    }

    fn session(home: &Home) -> SessionSpool {
        let spool = IntakeSpool::open(home);
        spool
            .session("claude-code", Some(SESSION))
            .unwrap()
            .unwrap()
    }

    /// Every pending file's events, in drain order.
    fn drained(home: &Home) -> Vec<Vec<String>> {
        let event = |r: &SpoolRecord| r.envelope.event.clone().unwrap_or_default();
        session(home)
            .pending()
            .unwrap()
            .iter()
            .map(|f| {
                let read = read_segment(&f.path).unwrap();
                assert!(read.damage.is_empty(), "{:?}", read.damage);
                read.records.iter().map(event).collect()
            })
            .collect()
    }

    /// A home in a temporary directory, and its writer.
    struct Fixture {
        _root: tempfile::TempDir,
        home: Home,
        writer: SpoolWriter,
    }

    impl Fixture {
        fn new() -> Fixture {
            let root = tempfile::tempdir().unwrap();
            let home = Home::at(root.path());
            let writer = SpoolWriter::new(home.clone());
            Fixture {
                _root: root,
                home,
                writer,
            }
        }
    }

    fn names(home: &Home) -> Vec<String> {
        list_files(&session(home).dir).unwrap()
    }

    #[test]
    fn a_batch_drains_after_every_signal_appended_before_its_seal() {
        let Fixture { home, writer, .. } = &Fixture::new();
        writer.append_signal(&signal("before")).unwrap();
        let mut batch = SealedBatch::open(writer, "claude-code", Some(SESSION)).unwrap();
        batch.append(&signal("one")).unwrap();
        writer.append_signal(&signal("while")).unwrap();
        batch.append(&signal("two")).unwrap();
        assert_eq!(drained(home), Vec::<Vec<String>>::new(), "not sealed yet");
        batch.seal().unwrap();
        writer.append_signal(&signal("after")).unwrap();
        session(home).seal().unwrap();
        assert_eq!(
            drained(home),
            [vec!["before", "while"], vec!["one", "two"], vec!["after"]]
        );
    }

    #[test]
    fn a_batch_never_sealed_leaves_nothing() {
        let Fixture { home, writer, .. } = &Fixture::new();
        let mut batch = SealedBatch::open(writer, "claude-code", Some(SESSION)).unwrap();
        batch.append(&signal("one")).unwrap();
        assert_eq!(names(home).len(), 1, "its temporary file");
        drop(batch);
        assert_eq!(names(home), Vec::<String>::new());
    }

    #[test]
    fn a_signal_of_another_session_is_refused() {
        let Fixture { writer, .. } = &Fixture::new();
        let mut batch = SealedBatch::open(writer, "claude-code", Some(SESSION)).unwrap();
        let other = Signal::new("claude-code", Some("x"), Some("s-2"), b"{}");
        let err = batch.append(&other).unwrap_err().to_string();
        assert!(err.contains("s-2"), "{err}");
    }

    #[test]
    fn a_batch_is_stamped_after_every_file_when_the_clock_stepped_back() {
        let Fixture { home, writer, .. } = &Fixture::new();
        writer.append_signal(&signal("earlier")).unwrap();
        let dir = session(home).dir;
        let ahead = format!(
            "{SEALED_PREFIX}{:020}-1.seg",
            wall_now_ns() + 3_600_000_000_000
        );
        std::fs::rename(dir.join(super::super::ACTIVE_SEGMENT), dir.join(&ahead)).unwrap();
        let mut batch = SealedBatch::open(writer, "claude-code", Some(SESSION)).unwrap();
        batch.append(&signal("later")).unwrap();
        batch.seal().unwrap();
        assert_eq!(drained(home), [vec!["earlier"], vec!["later"]]);
    }

    #[test]
    fn batch_files_an_hour_old_are_removed_by_the_next_seal() {
        let Fixture { home, writer, .. } = &Fixture::new();
        let dir = home
            .private_dir(&["spool", "intake", "claude-code", SESSION])
            .unwrap();
        let old = format!("{BATCH_TMP_PREFIX}1-1-1.seg");
        let young = format!("{BATCH_TMP_PREFIX}2-1-2.seg");
        let hour_ago = SystemTime::now() - ABANDONED_AFTER - Duration::from_secs(1);
        dir.create_new(&old)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        dir.create_new(&young).unwrap();
        let mut batch = SealedBatch::open(writer, "claude-code", Some(SESSION)).unwrap();
        batch.append(&signal("one")).unwrap();
        batch.seal().unwrap();
        let left = names(home);
        assert!(!left.contains(&old), "{left:?}");
        assert!(left.contains(&young), "{left:?}");
        assert_eq!(drained(home), [vec!["one"]]);
    }
}
