//! Following each session's own record (multi-signal finalization).
//!
//! After a run has drained the hook signals, each session whose record is
//! known (a hook named it: Claude Code `transcript_path`, Copilot
//! `transcriptPath`; or Copilot's `session-state/<id>/events.jsonl` under
//! `COPILOT_HOME`, default `~/.copilot`) is read on from the cursor its
//! producer state keeps, whole lines only, and what was read is written
//! into the session's intake spool as `harnery.record` signals, which the
//! run then drains like any other. So every byte read is kept in the raw
//! archive (and `verify` checks it), lands in order after the hook signals
//! it is joined with, and the cursor only moves when the batch holding
//! those bytes commits: a run killed in between reads the same bytes again
//! and the producer drops what it already applied.
//!
//! Before reading on, the bytes just before the cursor are checked against
//! their fingerprint. A record that is gone, unreadable, shorter than the
//! cursor or changed under it is a `harnery.record_problem` signal (a
//! loud `record.problem` event, once per kind), and it never holds up the
//! hook signals. A record not written yet is pending, not missing, until
//! the session's first prompt is 30 s old; one deleted after it was read
//! is `removed`, a note. The hook itself never reads a record.
//!
//! A Claude Code subagent writes a transcript of its own, which
//! `SubagentStop` names (`agent_transcript_path`): it is followed the same
//! way, from a cursor of its own, until a pass has read it to its end (the
//! subagent has stopped, so nothing more comes).
//!
//! A record call that found no hook request to join is held for a while
//! (the hook that announces it runs just after the agent writes it): a
//! session holding calls gets an empty `harnery.record` once they are due,
//! so they settle even when the record does not grow.
//!
//! `HARNERY_RECORDS=off` turns following off (the hook signals are then
//! all the ledger gets).

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::adapter::harnery::{
    FINGERPRINT_LEN, RECORD, RECORD_PROBLEM, RecordChunkHeader, record_payload,
};
use crate::clock::ClockSample;
use crate::contract::{AdapterId, RecordProblem, SessionRef};
use crate::finalize::FinalizeError;
use crate::finalize::producer::RecordCursor;
use crate::home::Home;
use crate::ledger::Ledger;
use crate::spool::{Signal, SpoolWriter};

/// The most record bytes one `harnery.record` signal carries (a longer
/// line is carried whole, up to [`MAX_LINE`]).
pub const CHUNK_LEN: usize = 4 << 20;
/// The longest record line followed.
pub const MAX_LINE: usize = 60 << 20;
/// The most record bytes one pass spools for a session: a pass is drained
/// before the next one reads on, so the drain holds at most this much of
/// any one session's record (a spool file is the drain's unit).
pub const PASS_LEN: u64 = 8 << 20;
/// Passes one run makes at most (so a record that cannot be applied can
/// never keep a run going): 8 GiB of one session's record.
pub const MAX_PASSES: usize = 1024;

/// [`PASS_LEN`], or `HARNERY_RECORD_PASS_BYTES` (tests that want many
/// passes).
fn pass_len() -> u64 {
    std::env::var("HARNERY_RECORD_PASS_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(PASS_LEN)
}

/// Whether following is on (`HARNERY_RECORDS` is not `off`).
pub fn enabled() -> bool {
    std::env::var("HARNERY_RECORDS").map_or(true, |v| v != "off")
}

/// Spool what each session's record gained since its cursor, at most
/// [`PASS_LEN`] bytes a session: every session, or only those of `only`
/// (the ones the pass before wrote for). Returns how many signals were
/// written and for which sessions; the caller drains them and calls again
/// with those until none are.
pub fn follow(
    home: &Home,
    ledger: &Ledger,
    now_unix_ns: i64,
    clock: &ClockSample,
    only: Option<&[SessionRef]>,
) -> Result<(u64, Vec<SessionRef>), FinalizeError> {
    let mut written = 0;
    let mut wrote_for = Vec::new();
    let sessions = match only {
        Some(these) => these.to_vec(),
        None => ledger.producer_sessions()?,
    };
    for session in sessions {
        let Some(text) = ledger.producer_state(&session)? else {
            continue;
        };
        // A state that does not load is reported by the drain that loads
        // it; following waits for it.
        let Some(at) = RecordCursor::of_state(&text) else {
            continue;
        };
        let mut out = Spooler {
            home,
            session: &session,
            now_unix_ns,
            clock,
            reported: at.problem.as_deref(),
            written: 0,
        };
        let path = record_path(&session, at.path.as_deref());
        if let Some((path, named)) = &path {
            // Not written yet (before the first prompt, or just after it):
            // pending, not missing.
            let named = *named && at.expected_by(now_unix_ns);
            follow_one(path, named, at.cursor, &at.fingerprint, &mut out)?;
        }
        for side in &at.subagents {
            out.reported = None;
            let path = Path::new(&side.path);
            follow_one(path, true, side.cursor, &side.fingerprint, &mut out)?;
        }
        // Calls held for their hook requests settle at the session's next
        // chunk; a record that did not grow gets an empty one once they
        // are due (first pass only: a run settles them once).
        let due = at.held_due_ns().is_some_and(|t| t <= now_unix_ns);
        if let Some((path, _)) = path.filter(|_| due && out.written == 0 && only.is_none()) {
            let header = RecordChunkHeader {
                path: path.display().to_string(),
                start: at.cursor,
                end: at.cursor,
                fingerprint: at.fingerprint.clone(),
                at_end: false,
            };
            out.append(RECORD, &record_payload(&header, &[]))?;
        }
        if out.written > 0 {
            written += out.written;
            wrote_for.push(session);
        }
    }
    Ok((written, wrote_for))
}

/// Where the session's record is, and whether a hook named it (a path
/// only guessed is not reported missing).
fn record_path(session: &SessionRef, named: Option<&str>) -> Option<(PathBuf, bool)> {
    if let Some(p) = named {
        return Some((PathBuf::from(p), true));
    }
    match session.adapter {
        AdapterId::ClaudeCode => None,
        AdapterId::Copilot => {
            let home = std::env::var_os("COPILOT_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".copilot")))?;
            let path = home
                .join("session-state")
                .join(&session.session_id)
                .join("events.jsonl");
            path.exists().then_some((path, false))
        }
    }
}

/// Writes one session's record signals into its spool.
struct Spooler<'a> {
    home: &'a Home,
    session: &'a SessionRef,
    /// The run's time and clock: a rerun after a crash writes the same
    /// signals.
    now_unix_ns: i64,
    clock: &'a ClockSample,
    /// The problem the session last reported: not spooled again.
    reported: Option<&'a str>,
    written: u64,
}

impl Spooler<'_> {
    fn append(&mut self, event: &str, payload: &[u8]) -> Result<(), FinalizeError> {
        let mut signal = Signal::new(
            self.session.adapter.as_str(),
            Some(event),
            Some(&self.session.session_id),
            payload,
        );
        signal.received_ns = self.now_unix_ns;
        signal.clock = self.clock.clone();
        SpoolWriter::new(self.home.clone())
            .append_signal(&signal)
            .map_err(|e| FinalizeError::Spool(format!("record signal not spooled: {e}")))?;
        self.written += 1;
        Ok(())
    }

    fn unreadable(&mut self, path: &Path, e: std::io::Error) -> Result<(), FinalizeError> {
        self.problem(path, "unreadable", format!("{}: {e}", path.display()))
    }

    fn problem(&mut self, path: &Path, kind: &str, detail: String) -> Result<(), FinalizeError> {
        if self.reported == Some(kind) {
            return Ok(());
        }
        let problem = RecordProblem {
            path: path.display().to_string(),
            kind: kind.to_string(),
            detail,
        };
        let bytes = serde_json::to_vec(&problem).expect("a problem is plain JSON");
        self.append(RECORD_PROBLEM, &bytes)
    }
}

fn follow_one(
    path: &Path,
    named: bool,
    cursor: u64,
    fingerprint: &str,
    out: &mut Spooler,
) -> Result<(), FinalizeError> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Read before and gone now: the agent cleaned it up; what was
            // read is in the raw archive.
            if cursor > 0 {
                let detail = format!(
                    "{}: deleted after {cursor} bytes were read; its history now lives only in harnery",
                    path.display()
                );
                out.problem(path, "removed", detail)?;
            } else if named {
                out.problem(path, "missing", format!("{}: no such file", path.display()))?;
            }
            return Ok(());
        }
        Err(e) => return out.unreadable(path, e),
    };
    let len = match file.metadata() {
        Ok(m) => m.len(),
        Err(e) => return out.unreadable(path, e),
    };
    if len < cursor {
        let detail = format!(
            "{} is {len} bytes, shorter than the {cursor} already read",
            path.display()
        );
        return out.problem(path, "truncated", detail);
    }
    if cursor > 0 {
        match tail_fingerprint(&mut file, cursor) {
            Ok(f) if f == fingerprint => {}
            Ok(_) => {
                let detail = format!(
                    "{}: the bytes before offset {cursor} changed since they were read",
                    path.display()
                );
                return out.problem(path, "rewritten", detail);
            }
            Err(e) => return out.unreadable(path, e),
        }
    }
    let mut at = cursor;
    let pass_len = pass_len();
    while at < len && at - cursor < pass_len {
        let chunk = match whole_lines(&mut file, at, len, pass_len.min(CHUNK_LEN as u64) as usize) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(()),
            Err(e) => return out.unreadable(path, e),
        };
        let end = at + chunk.len() as u64;
        let fingerprint = match tail_fingerprint(&mut file, end) {
            Ok(f) => f,
            Err(e) => return out.unreadable(path, e),
        };
        let header = RecordChunkHeader {
            path: path.display().to_string(),
            start: at,
            end,
            fingerprint,
            at_end: end == len,
        };
        out.append(RECORD, &record_payload(&header, &chunk))?;
        at = end;
    }
    Ok(())
}

/// Whole lines from `at`: at most `want` bytes of them, or one longer
/// line; `None` when no newline ends what is there yet (a line the agent
/// is still writing).
fn whole_lines(
    file: &mut std::fs::File,
    at: u64,
    len: u64,
    mut want: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    loop {
        let n = (len - at).min(want as u64) as usize;
        let mut buf = vec![0u8; n];
        file.seek(SeekFrom::Start(at))?;
        file.read_exact(&mut buf)?;
        if let Some(last) = memchr::memrchr(b'\n', &buf) {
            buf.truncate(last + 1);
            return Ok(Some(buf));
        }
        if n < want || want >= MAX_LINE {
            if want >= MAX_LINE {
                return Err(std::io::Error::other(format!(
                    "a line at offset {at} is longer than {MAX_LINE} bytes"
                )));
            }
            return Ok(None);
        }
        want = (want * 4).min(MAX_LINE);
    }
}

/// blake3 (hex) of the (at most [`FINGERPRINT_LEN`]) bytes before `end`.
fn tail_fingerprint(file: &mut std::fs::File, end: u64) -> std::io::Result<String> {
    let from = end.saturating_sub(FINGERPRINT_LEN);
    let mut buf = vec![0u8; (end - from) as usize];
    file.seek(SeekFrom::Start(from))?;
    file.read_exact(&mut buf)?;
    Ok(blake3::hash(&buf).to_hex().to_string())
}
