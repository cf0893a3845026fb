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
//! OpenCode keeps its record in SQLite: its adapter renders the session's
//! append-only journal as lines (`Adapter::render_record`), and the
//! rendering is read here exactly as a file would be.
//!
//! Before reading on, the bytes just before the cursor are checked against
//! their fingerprint. A record that is gone, unreadable, shorter than the
//! cursor or changed under it is a `harnery.record_problem` signal (a
//! loud `record.problem` event, once per kind), and it never holds up the
//! hook signals. A record not written yet is pending, not missing, until
//! the session's first prompt is 30 s old; one deleted after it was read
//! is `removed`, a note. The hook itself never reads a record.
//!
//! A session's pass spools its signals as one batch that enters the spool
//! whole, after the hook signals already there (`spool::batch`): a run
//! killed in the middle of it leaves nothing half written, so the drain
//! never reports damage for bytes that are read again anyway. The batch is
//! not fdatasync'd: it can be read again from the record until the ledger
//! batch holding it commits, and the raw archive makes the spool file
//! durable before that commit. A power loss in between costs a re-read
//! (and, at worst, spool damage the drain reports), never a byte of the
//! record. Once a session's batch is sealed the kernel is asked to start
//! writing it back, so that sync finds most of it written.
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
//! A record is followed only where its agent writes it for this very
//! session, opened without blocking and checked before a byte is read
//! (`agents::record::place`); anything else is one `record.problem` of
//! kind `refused` naming the path and why, and nothing of it is read. One
//! run reads at most [`RUN_LEN`] bytes of one session's records (the next
//! runs read on), so a giant record cannot fill the disk in one go; a line
//! longer than [`LINE_CEILING`] is not read into memory (one unrecognized
//! line, its first bytes kept).
//!
//! `HARNERY_RECORDS=off` turns following off (the hook signals are then
//! all the ledger gets).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::record_source::{Lines, Source, tail_fingerprint, whole_lines};
use crate::agents::harnery::{
    FINGERPRINT_LEN, RECORD, RECORD_PROBLEM, RecordChunkHeader, RecordStamp, TITLE, record_payload,
};
use crate::agents::record::place::{self, LINE_CEILING, NotOpened, RecordRole};
use crate::clock::ClockSample;
use crate::contract::{RecordProblem, SessionRef};
use crate::durable;
use crate::finalize::FinalizeError;
use crate::home::Home;
use crate::ledger::LedgerReader;
use crate::session::RecordCursor;
use crate::spool::{SealedBatch, Signal, SpoolWriter};

/// The most record bytes one `harnery.record` signal carries (a longer
/// line is carried whole, up to [`LINE_CEILING`]).
pub(crate) const CHUNK_LEN: usize = 4 << 20;
/// The most record bytes one pass spools for a session: a pass is drained
/// before the next one reads on, so the drain holds at most this much of
/// any one session's record (a spool file is the drain's unit).
pub(crate) const PASS_LEN: u64 = 8 << 20;
/// Passes one run makes at most (so a record that cannot be applied can
/// never keep a run going): 8 GiB of one session's record.
pub(crate) const MAX_PASSES: usize = 1024;

/// The most bytes of one session's records (its own and its subagents')
/// one run reads; the next runs read on from the cursor. A line longer
/// than what is left is read whole when a pass starts at it.
pub(crate) const RUN_LEN: u64 = 64 << 20;

/// [`PASS_LEN`], or `HARNERY_RECORD_PASS_BYTES` in failpoint builds (tests
/// that want many passes).
fn pass_len() -> u64 {
    crate::failpoint::tuning(crate::failpoint::RECORD_PASS_BYTES_ENV).unwrap_or(PASS_LEN)
}

/// [`RUN_LEN`], or `HARNERY_RECORD_RUN_BYTES` (tests that want many runs).
fn run_len() -> u64 {
    env_bytes("HARNERY_RECORD_RUN_BYTES").unwrap_or(RUN_LEN)
}

fn env_bytes(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Bytes of each session's records read so far this run.
#[derive(Debug, Default)]
pub(crate) struct RunBudget(HashMap<SessionRef, u64>);

impl RunBudget {
    /// What `session` may still read this run.
    fn left(&self, session: &SessionRef) -> u64 {
        run_len().saturating_sub(self.0.get(session).copied().unwrap_or(0))
    }
}

/// Whether following is on (`HARNERY_RECORDS` is not `off`).
pub(crate) fn enabled() -> bool {
    std::env::var("HARNERY_RECORDS").map_or(true, |v| v != "off")
}

/// Spool what each session's record gained since its cursor, at most
/// [`PASS_LEN`] bytes a session: every session, or only those of `only`
/// (the ones the pass before wrote for). Returns how many signals were
/// written and for which sessions; the caller drains them and calls again
/// with those until none are. Sessions are followed on several threads
/// (each session's signals by one, in order; no two share a spool), while
/// this one reads the next sessions' cursors from their states.
pub(crate) fn follow(
    home: &Home,
    ledger: &LedgerReader,
    now_unix_ns: i64,
    clock: &ClockSample,
    only: Option<&[SessionRef]>,
    budget: &mut RunBudget,
) -> Result<(u64, Vec<SessionRef>), FinalizeError> {
    let sessions = match only {
        Some(these) => these.to_vec(),
        None => ledger.bookkeeping().producer_sessions()?,
    };
    let run = Run {
        home,
        now_unix_ns,
        clock,
        first_pass: only.is_none(),
    };
    let count = sessions.len();
    let plans = sessions.into_iter().map(|session| {
        let Some(state) = ledger.producer_state_or_set_aside(&session)? else {
            return Ok(None);
        };
        let left = budget.left(&session);
        Ok(Some((session, state, left)))
    });
    let done = follow_all(&run, count, plans)?;
    let mut written = 0;
    let mut wrote_for = Vec::new();
    for (session, signals, read) in done {
        *budget.0.entry(session.clone()).or_default() += read;
        if signals > 0 {
            written += signals;
            wrote_for.push(session);
        }
    }
    Ok((written, wrote_for))
}

/// Most threads [`follow`] reads records on.
const FOLLOWERS: usize = 4;
/// Most sessions one job of [`follow_all`] holds. With a job a session,
/// the followers wait on this thread's reads of the states and are woken
/// for every session (an idle run over 10,000 sessions made 59,564 futex
/// calls, 4,781 with jobs of 16); with many sessions, jobs of several
/// keep them busy as well, and a run of a few sessions still follows
/// each on its own.
const PLANS_A_JOB: usize = 16;

/// A session to follow: its producer state (which holds its cursor), and
/// how many bytes at most.
type Plan = (SessionRef, String, u64);

/// Each planned session followed by [`Run::session`] on up to
/// [`FOLLOWERS`] threads (the machine's cores) from the cursor its state
/// holds, while this thread makes the next plans (`None`: a session
/// without a readable state; `count`: how many plans there are at most),
/// handed on a few at a time ([`PLANS_A_JOB`]). Returns each session
/// planned with the signals spooled and the bytes read, in the plans'
/// order; a state that does not load spools nothing (the drain that
/// loads it reports it, and following waits for it). The first failure,
/// a plan's or a session's, is the call's (sessions after it may have
/// been spooled already: the next run reads their records from the same
/// cursors, and the drain drops what it already applied).
fn follow_all(
    run: &Run<'_>,
    count: usize,
    plans: impl Iterator<Item = Result<Option<Plan>, FinalizeError>>,
) -> Result<Vec<(SessionRef, u64, u64)>, FinalizeError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(FOLLOWERS);
    // At least 16 jobs a follower, so that the last ones end together.
    let per_job = (count / (16 * threads)).clamp(1, PLANS_A_JOB);
    let (planned, results) = crate::ordered::run_ordered(
        threads,
        2 * threads,
        |feed| {
            let mut job = Vec::with_capacity(per_job);
            for plan in plans {
                job.extend(plan?);
                if job.len() == per_job
                    && !feed.send(std::mem::replace(&mut job, Vec::with_capacity(per_job)))
                {
                    return Ok(());
                }
            }
            if !job.is_empty() {
                feed.send(job);
            }
            Ok::<(), FinalizeError>(())
        },
        |job: Vec<Plan>| {
            let follow = |(session, state, left): Plan| match RecordCursor::of_state(&state) {
                Some(at) => run
                    .session(&session, &at, left)
                    .map(|(signals, read)| (session, signals, read)),
                None => Ok((session, 0, 0)),
            };
            job.into_iter().map(follow).collect::<Vec<_>>()
        },
        Vec::new(),
        |out, done| {
            out.extend(done);
            Ok(())
        },
    );
    let followed = results
        .expect("collecting results into a vector does not fail")
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    planned?;
    Ok(followed)
}

/// What one pass over the sessions shares.
struct Run<'a> {
    home: &'a Home,
    now_unix_ns: i64,
    clock: &'a ClockSample,
    /// The run's first pass (the one that settles held calls).
    first_pass: bool,
}

impl Run<'_> {
    /// Follow one session's records from `at`, reading at most `left`
    /// bytes: the signals spooled and the bytes read.
    fn session(
        &self,
        session: &SessionRef,
        at: &RecordCursor,
        left: u64,
    ) -> Result<(u64, u64), FinalizeError> {
        let mut out = Spooler {
            home: self.home,
            session,
            now_unix_ns: self.now_unix_ns,
            clock: self.clock,
            reported: at.problem.as_deref(),
            written: 0,
            left,
            batch: None,
        };
        let path = match record_path(session, at.path.as_deref()) {
            Ok(path) => path,
            Err((path, why)) => {
                out.refused(&path, &why)?;
                None
            }
        };
        if let Some((path, named)) = &path {
            // Not written yet (before the first prompt, or just after it):
            // pending, not missing.
            let named = *named && at.expected_by(self.now_unix_ns);
            let from = Cursor {
                at: at.cursor,
                fingerprint: &at.fingerprint,
                seen: at.seen.as_ref(),
            };
            follow_one(path, named, RecordRole::Session, from, &mut out)?;
        }
        for side in &at.subagents {
            out.reported = None;
            let path = Path::new(&side.path);
            let role = RecordRole::Subagent(&side.agent_id);
            let from = Cursor {
                at: side.cursor,
                fingerprint: &side.fingerprint,
                seen: None,
            };
            follow_one(path, true, role, from, &mut out)?;
        }
        if let Some((path, _)) = &path {
            out.title_beside(path, at.title.as_deref())?;
        }
        let read = left - out.left;
        // Calls held for their hook requests settle at the session's next
        // chunk; a record that did not grow gets an empty one once they
        // are due (first pass only: a run settles them once).
        let due = at.held_due_ns().is_some_and(|t| t <= self.now_unix_ns);
        if let Some((path, _)) = path.filter(|_| due && out.written == 0 && self.first_pass) {
            let header = RecordChunkHeader {
                path: path.display().to_string(),
                start: at.cursor,
                end: at.cursor,
                fingerprint: at.fingerprint.clone(),
                at_end: false,
                oversized_line: false,
                seen: None,
            };
            out.append(RECORD, &record_payload(&header, &[]))?;
        }
        out.seal()?;
        Ok((out.written, read))
    }
}

/// A record's path, and whether a hook named it.
type Located = Option<(PathBuf, bool)>;

/// Where the session's record is, and whether a hook named it (a path
/// only guessed is not reported missing); a guess that would leave
/// Copilot's home is refused (the path it reaches, why) when something is
/// there.
fn record_path(session: &SessionRef, named: Option<&str>) -> Result<Located, (PathBuf, String)> {
    if let Some(p) = named {
        return Ok(Some((PathBuf::from(p), true)));
    }
    let found = crate::agents::agent(session.adapter).found_record(&session.session_id)?;
    Ok(found.map(|path| (path, false)))
}

fn not_spooled(e: crate::spool::SpoolError) -> FinalizeError {
    FinalizeError::Spool(format!("record signal not spooled: {e}"))
}

/// Writes one session's record signals into its spool, as one batch
/// sealed at the end of the session's pass (`spool::batch`): a run killed
/// in the middle of it leaves nothing half written for the drain to
/// report, and the next run reads the same bytes again.
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
    /// Bytes the session may still read this run.
    left: u64,
    /// The batch of the session's signals, from its first one.
    batch: Option<SealedBatch>,
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
        let batch = match &mut self.batch {
            Some(batch) => batch,
            none => {
                let writer = SpoolWriter::new(self.home.clone());
                let opened = SealedBatch::open(&writer, signal.adapter, signal.session_id);
                none.insert(opened.map_err(not_spooled)?)
            }
        };
        batch.append(&signal).map_err(not_spooled)?;
        self.written += 1;
        Ok(())
    }

    /// Seal the session's signals into its spool and start writing them
    /// back, without waiting. They are not fdatasync'd: until the ledger
    /// batch holding them commits, the cursor has not moved and the record
    /// can be read again, and the drain's raw archive syncs the file before
    /// that commit (`ledger::raw::keep`); by then the kernel has had the
    /// rest of the pass to write it.
    fn seal(&mut self) -> Result<(), FinalizeError> {
        if let Some(batch) = self.batch.take() {
            let file = batch.seal().map_err(not_spooled)?;
            durable::start_writeback(&file);
        }
        Ok(())
    }

    /// The title the agent keeps beside the record (Copilot's
    /// `workspace.yaml`), spooled when it is not the one the session last
    /// took (`taken`, cleaned as the session cleans it).
    fn title_beside(&mut self, record: &Path, taken: Option<&str>) -> Result<(), FinalizeError> {
        let adapter = crate::agents::agent(self.session.adapter);
        let Some(said) = adapter.title_beside(record) else {
            return Ok(());
        };
        let Some(title) = crate::ledger::record_title(&said.title) else {
            return Ok(());
        };
        if taken == Some(title.as_str()) {
            return Ok(());
        }
        let bytes = serde_json::to_vec(&said).expect("a title is plain JSON");
        self.append(TITLE, &bytes)
    }

    fn refused(&mut self, path: &Path, why: &str) -> Result<(), FinalizeError> {
        let detail = format!("{}: {why}; not followed, nothing read", path.display());
        self.problem(path, "refused", detail)
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

/// Where a record was read up to, and how it was when read to its end.
struct Cursor<'a> {
    at: u64,
    fingerprint: &'a str,
    seen: Option<&'a RecordStamp>,
}

/// Whether the record at `path` is as it was when it was read to its end
/// at `cursor` (same file, size and modification time): nothing to read,
/// nothing to check, not opened.
fn unchanged(path: &Path, cursor: u64, seen: Option<&RecordStamp>) -> bool {
    seen.is_some_and(|seen| {
        seen.size == cursor
            && std::fs::symlink_metadata(path).is_ok_and(|m| RecordStamp::of(&m) == *seen)
    })
}

/// The wall clock (unix ns): a stamp's modification time is the file
/// system's, compared with the machine's time, never the run's pinned one.
fn wall_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

fn follow_one(
    path: &Path,
    named: bool,
    role: RecordRole,
    from: Cursor<'_>,
    out: &mut Spooler,
) -> Result<(), FinalizeError> {
    let (cursor, fingerprint) = (from.at, from.fingerprint);
    if out.left == 0 || unchanged(path, cursor, from.seen) {
        return Ok(());
    }
    let session = out.session;
    let file = match place::open(session.adapter, &session.session_id, role, path) {
        Ok(f) => f,
        Err(NotOpened::Missing) => {
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
        Err(NotOpened::Refused(place::Refusal(why))) => return out.refused(path, &why),
        Err(NotOpened::Unreadable(e)) => return out.unreadable(path, e),
    };
    let adapter = crate::agents::agent(session.adapter);
    // A rendered record is kept from the fingerprint before the cursor to
    // what this pass may read (a longer line whole).
    let keep_from = cursor.saturating_sub(FINGERPRINT_LEN);
    let upto = cursor + pass_len().min(out.left) + LINE_CEILING as u64;
    let mut file = match adapter.render_record(path, &session.session_id, keep_from, upto) {
        None => Source::File(file),
        Some(Ok(r)) => Source::Rendered(r.base, std::io::Cursor::new(r.bytes)),
        Some(Err(e)) => return out.unreadable(path, e),
    };
    // The file as found, for skipping it while it stays so: a file (not a
    // rendering), the session's own record, settled.
    let stamp = match (&file, role) {
        (Source::File(f), RecordRole::Session) => f.metadata().ok().map(|m| RecordStamp::of(&m)),
        _ => None,
    };
    let len = match file.len() {
        Ok(len) => len,
        Err(e) => return out.unreadable(path, e),
    };
    let stamp = stamp.filter(|s| s.size == len && s.settled_at(wall_ns()));
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
    if cursor == len && cursor > 0 && stamp.is_some() && stamp.as_ref() != from.seen {
        // Read to its end before, and not seen so (read by an older build,
        // or touched since): an empty chunk records how it is now.
        let header = RecordChunkHeader {
            fingerprint: fingerprint.to_string(),
            at_end: true,
            seen: stamp,
            ..chunk_header(path, cursor, cursor)
        };
        return out.append(RECORD, &record_payload(&header, &[]));
    }
    let mut at = cursor;
    let pass_len = pass_len().min(out.left);
    while at < len && at - cursor < pass_len {
        // What is left of the pass (one line longer than that is read
        // whole).
        let want = (pass_len - (at - cursor)).min(CHUNK_LEN as u64) as usize;
        let headroom = headroom(path);
        let (header, chunk) = match whole_lines(&mut file, at, len, want, headroom) {
            Ok(Lines::Whole(bytes)) => {
                let end = at + (bytes.len() - headroom) as u64;
                (chunk_header(path, at, end), bytes)
            }
            Ok(Lines::Oversized { len: n, head }) => {
                let header = RecordChunkHeader {
                    oversized_line: true,
                    ..chunk_header(path, at, at + n)
                };
                (header, head)
            }
            Ok(Lines::Unfinished) => break,
            Err(e) => return out.unreadable(path, e),
        };
        let end = header.end;
        let header = match tail_fingerprint(&mut file, end) {
            Ok(fingerprint) => RecordChunkHeader {
                fingerprint,
                at_end: end == len,
                seen: stamp.filter(|_| end == len),
                ..header
            },
            Err(e) => return out.unreadable(path, e),
        };
        let (payload, from) = payload_in_place(&header, chunk, headroom);
        out.append(RECORD, &payload[from..])?;
        out.left = out.left.saturating_sub(end - at);
        at = end;
    }
    Ok(())
}

fn chunk_header(path: &Path, start: u64, end: u64) -> RecordChunkHeader {
    RecordChunkHeader {
        path: path.display().to_string(),
        start,
        end,
        fingerprint: String::new(),
        at_end: false,
        oversized_line: false,
        seen: None,
    }
}

/// Room left before a chunk's bytes for its payload's header line: the
/// header is written there, so the chunk is never copied to sit after it
/// (the path is the one part of any length, six bytes a byte at most once
/// escaped; the rest is numbers, a digest and a few names).
fn headroom(path: &Path) -> usize {
    512 + 6 * path.as_os_str().len()
}

/// The `harnery.record` payload of `header` and the chunk that `buf`
/// holds after `headroom` bytes, as [`record_payload`] writes it: the
/// buffer and where the payload starts in it.
fn payload_in_place(
    header: &RecordChunkHeader,
    mut buf: Vec<u8>,
    headroom: usize,
) -> (Vec<u8>, usize) {
    let line = serde_json::to_vec(header).expect("the header is plain JSON");
    let Some(from) = headroom.checked_sub(line.len() + 1) else {
        return (record_payload(header, &buf[headroom..]), 0);
    };
    buf[from..headroom - 1].copy_from_slice(&line);
    buf[headroom - 1] = b'\n';
    (buf, from)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The payload written around the chunk is the payload
    /// `record_payload` writes, for any path and with too little room.
    #[test]
    fn a_payload_in_place_is_the_record_payload() {
        let chunk = b"{\"type\":\"user\"}\n{\"a\":1}\n".to_vec();
        for path in ["/t/s.jsonl", "", "/t/\"q\"\\\n\u{1}/é/日本/🦀.jsonl"] {
            let long = format!("/{}", "\u{1f}".repeat(300));
            for path in [path, long.as_str()] {
                for (at_end, oversized_line) in [(false, false), (true, false), (false, true)] {
                    let header = RecordChunkHeader {
                        at_end,
                        oversized_line,
                        fingerprint: "f".repeat(64),
                        ..chunk_header(Path::new(path), 7, u64::MAX)
                    };
                    let want = record_payload(&header, &chunk);
                    for room in [headroom(Path::new(path)), 0, 10] {
                        let buf = [vec![0; room], chunk.clone()].concat();
                        let (payload, from) = payload_in_place(&header, buf, room);
                        assert_eq!(payload[from..], want[..], "{path:?} {room}");
                    }
                }
            }
        }
    }
}
