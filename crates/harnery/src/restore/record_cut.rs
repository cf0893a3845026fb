//! Where a checkpoint stands in the agent's own record, derived from what
//! the ledger already holds, and that record's bytes up to there, put
//! back together from the raw archive.
//!
//! Every event read from the agent's record names the line it came from
//! (`record: {path, offset}`) and carries its turn. The turns a checkpoint
//! keeps are those of the live events below its offset (prompts, turn
//! starts and ends, record lines); the record is cut
//! where the first line of any other turn starts (a Claude Code prompt row
//! of a later `promptId`, a Copilot `user.message` of a later
//! interaction). So the cut always falls at a turn boundary: a checkpoint
//! pinned inside a turn keeps that turn's whole record. Then the tail of
//! the next turn's preamble is left out (Claude Code's
//! `file-history-snapshot` rows for the next prompt; for Copilot
//! everything after the last `assistant.turn_end`), as the clients resume
//! cleanly from there (RESUME-FACTS).
//!
//! Since generation 7 finalize writes the same place once it has read
//! the record past the checkpoint's turn (`checkpoint.located`, see
//! `session::locate`), and [`cut_for`] takes it from there; a checkpoint
//! of an older generation, or one not placed yet, is derived here. After a
//! resume the two may differ: the derivation skips superseded record
//! lines, the place written is the record as the agent wrote it then.
//!
//! The bytes come from the `harnery.record` chunks in the raw archive,
//! exactly as the agent wrote them, so the agent's own file is not
//! needed (it may be deleted, or have grown since).

use std::collections::HashSet;

use crate::agents::harnery::RecordChunkHeader;
use crate::agents::harnery::chunk::line_mark;
use crate::agents::record::LineMark;
use crate::agents::record::place::{RecordRole, check_shape};
use crate::contract::{AdapterId, Event, EventType, Payload, RecordAt, SessionRef};
use crate::ledger::{LedgerError, LedgerReader};
use crate::restore::log::{Checkpoint, SessionLog};

/// Why the record could not be put back.
#[derive(Debug, thiserror::Error)]
pub enum CutError {
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(
        "the ledger holds none of {0}'s own record (was record following off when it ran?), \
         so there is nothing to put back"
    )]
    NoRecord(String),
    #[error(
        "the raw archive holds {path} only up to byte {have}, not up to {want}: the record \
         cannot be put back byte for byte"
    )]
    Gap { path: String, have: u64, want: u64 },
}

/// The agent's record of a session, cut at a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RecordCut {
    /// The record's path as the agent wrote it.
    pub path: String,
    /// The bytes kept: `0..end`, whole lines.
    pub end: u64,
    /// Where the first later turn's first line starts, when the record
    /// harnery read goes past the checkpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_turn_at: Option<u64>,
    /// How many turns the kept record holds.
    pub turns: usize,
    /// The session's working directory below the checkpoint, as the
    /// agent named it last (its session start, else its record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The place is the one finalize wrote (`checkpoint.located`), not
    /// derived here.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub located: bool,
    /// The agent's own id of the last line kept, where the place names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_id: Option<String>,
}

/// The record position of an event read from the agent's record.
pub(crate) fn record_of(payload: &Payload) -> Option<&RecordAt> {
    payload.record_line()
}

/// What one pass over the session's events learns about its record.
#[derive(Default)]
struct Scan {
    path: Option<String>,
    kept: HashSet<String>,
    /// (record offset, turn id, a user message) of each line of the
    /// session's own record, live events only.
    lines: Vec<(u64, Option<String>, bool)>,
    cwd: Option<String>,
    cwd_record: Option<String>,
    cwd_later: Option<String>,
}

impl Scan {
    fn take(&mut self, session: &SessionRef, boundary: u64, e: &Event) {
        let turn = e.turn.turn_id.clone();
        if e.offset < boundary
            && let Some(t) = &turn
        {
            self.kept.insert(t.clone());
        }
        // The hooks' directory first, the record's after; Copilot's
        // record is read after its hooks, so later too.
        let (cwd, slot) = match &e.payload {
            Payload::SessionStarted(p) => (p.cwd.as_ref(), &mut self.cwd),
            Payload::SessionMetadata(p) => (p.cwd.as_ref(), &mut self.cwd_record),
            _ => (None, &mut self.cwd),
        };
        match cwd {
            Some(cwd) if e.offset < boundary => *slot = Some(cwd.clone()),
            Some(cwd) if self.cwd_later.is_none() => self.cwd_later = Some(cwd.clone()),
            _ => {}
        }
        let Some(at) = record_of(&e.payload) else {
            return;
        };
        let own = check_shape(
            session.adapter,
            &session.session_id,
            RecordRole::Session,
            std::path::Path::new(&at.path),
        )
        .is_ok();
        if !own || self.path.as_ref().is_some_and(|p| *p != at.path) {
            return;
        }
        self.path.get_or_insert_with(|| at.path.clone());
        let user = matches!(e.payload, Payload::MessageUser(_));
        self.lines.push((at.offset, turn, user));
    }

    /// The first line of a turn the checkpoint does not keep, and how many
    /// turns the record holds below that line (below `end`, when given).
    fn next_turn(&self, end: Option<u64>) -> (Option<u64>, usize) {
        let kept_end = self
            .lines
            .iter()
            .filter(|(_, t, _)| t.as_ref().is_some_and(|t| self.kept.contains(t)))
            .map(|(at, _, _)| *at)
            .max();
        let later = self.lines.iter().filter(|(at, turn, user)| match turn {
            Some(t) => !self.kept.contains(t),
            // A prompt no turn was stamped on, after the kept ones.
            None => *user && kept_end.is_some_and(|k| *at > k),
        });
        let cut = later.map(|(at, _, _)| *at).min();
        let below = end.or(cut);
        let turns: HashSet<&String> = self
            .lines
            .iter()
            .filter(|(at, _, _)| below.is_none_or(|c| *at < c))
            .filter_map(|(_, t, _)| t.as_ref())
            .collect();
        (cut, turns.len())
    }

    fn has_cwd(&self) -> bool {
        self.cwd.is_some() || self.cwd_record.is_some()
    }

    /// What an earlier epoch's part of the session says that this one
    /// does not: its directory, and its record's path.
    fn inherit(&mut self, before: Scan) {
        if !self.has_cwd() {
            self.cwd = before.cwd;
            self.cwd_record = before.cwd_record;
        }
        if self.path.is_none() {
            self.path = before.path;
        }
    }

    fn cut(self, path: String, end: u64, next_turn_at: Option<u64>, turns: usize) -> RecordCut {
        RecordCut {
            path,
            end,
            next_turn_at,
            turns,
            cwd: self.cwd.or(self.cwd_record).or(self.cwd_later),
            located: false,
            line_id: None,
        }
    }
}

/// The event types a cut reads.
const SCANNED: [EventType; 11] = [
    EventType::SessionStarted,
    EventType::PromptSubmitted,
    EventType::TurnStarted,
    EventType::TurnCompleted,
    EventType::MessageUser,
    EventType::MessageAssistant,
    EventType::ReasoningRecorded,
    EventType::UsageReported,
    EventType::SessionMetadata,
    EventType::ToolRecorded,
    EventType::SignalUnrecognized,
];

/// Where the checkpoint pinned at `boundary` stands in the session's own
/// record, and that record's bytes up to there.
pub fn cut_at(
    ledger: &LedgerReader,
    log: &SessionLog,
    boundary: u64,
) -> Result<(RecordCut, Vec<u8>), CutError> {
    cut_across(&Parts::one(ledger), log, boundary)
}

/// The epochs a cut reads: the one the checkpoint is in, the ones before
/// it (oldest first) that may hold the session's earlier part, and the
/// ones after it. An advance starts each continuing session again in the
/// new epoch, and the record bytes finalize archived before it stay in the
/// archived epoch's raw archive (so do the session's start and its
/// directory); a checkpoint pinned before an advance may be placed after
/// it, past the bytes its own epoch archived.
pub(crate) struct Parts<'a> {
    pub ledger: &'a LedgerReader,
    pub earlier: Vec<&'a LedgerReader>,
    pub later: Vec<&'a LedgerReader>,
}

impl<'a> Parts<'a> {
    pub(crate) fn one(ledger: &'a LedgerReader) -> Parts<'a> {
        Parts {
            ledger,
            earlier: Vec::new(),
            later: Vec::new(),
        }
    }

    /// Every epoch.
    fn all(&self) -> impl Iterator<Item = &'a LedgerReader> + '_ {
        let this = std::iter::once(self.ledger);
        self.earlier
            .iter()
            .copied()
            .chain(this)
            .chain(self.later.iter().copied())
    }
}

impl CutError {
    /// Whether another epoch may hold what was missing: the record's
    /// bytes, or its lines altogether.
    pub(crate) fn other_epochs_may_help(&self) -> bool {
        matches!(self, CutError::NoRecord(_) | CutError::Gap { .. })
    }
}

fn cut_across(
    parts: &Parts,
    log: &SessionLog,
    boundary: u64,
) -> Result<(RecordCut, Vec<u8>), CutError> {
    let session = &log.session;
    let (scan, path) = scan(parts, log, boundary)?;
    let (next_turn_at, turns) = scan.next_turn(None);
    let mut bytes = archived_prefix(parts, session, &path, next_turn_at)?;
    let end = preamble_start(session.adapter, &bytes);
    bytes.truncate(end);
    Ok((scan.cut(path, end as u64, next_turn_at, turns), bytes))
}

/// [`cut_at`] for `cp`, at the place finalize wrote for it
/// (`checkpoint.located`, generation 7) where it has one: a checkpoint of
/// an older generation, or one whose turn the record was not yet read
/// past, is derived. The bytes come from every epoch of `parts`.
pub(crate) fn cut_for(
    parts: &Parts,
    log: &SessionLog,
    cp: &Checkpoint,
) -> Result<(RecordCut, Vec<u8>), CutError> {
    let Some(at) = &cp.located else {
        return cut_across(parts, log, cp.offset);
    };
    let (scan, _) = scan(parts, log, cp.offset)?;
    let (next_turn_at, turns) = scan.next_turn(Some(at.end));
    let mut bytes = archived_prefix(parts, &log.session, &at.path, Some(at.end))?;
    // A place written before the next prompt's queue rows were known to
    // be its preamble still ends at the checkpoint's last line.
    bytes.truncate(preamble_start(log.session.adapter, &bytes));
    let end = bytes.len() as u64;
    let mut cut = scan.cut(at.path.clone(), end, next_turn_at, turns);
    cut.located = true;
    cut.line_id = at.line_id.clone();
    Ok((cut, bytes))
}

/// One pass over the session's live events below and above `boundary`,
/// and the path of its own record. What the checkpoint's epoch does not
/// name (the session's directory, the record's path: its start and
/// earlier lines were in an earlier epoch) is taken from the newest
/// earlier epoch that does.
fn scan(parts: &Parts, log: &SessionLog, boundary: u64) -> Result<(Scan, String), CutError> {
    let session = &log.session;
    let mut scan = Scan::default();
    // Only what names a turn's start or a record line (the ledger reads
    // just these rows whole: not the tool calls, mostly).
    for e in parts.ledger.events().session_events_of(session, &SCANNED)? {
        if !log.is_superseded(e.offset) {
            scan.take(session, boundary, &e);
        }
    }
    for ledger in parts.earlier.iter().rev() {
        if scan.path.is_some() && scan.has_cwd() {
            break;
        }
        // All of an earlier epoch's part is below the checkpoint, and
        // none of its turns is one of this epoch's.
        let mut before = Scan::default();
        for e in ledger.events().session_events_of(session, &SCANNED)? {
            before.take(session, u64::MAX, &e);
        }
        scan.inherit(before);
    }
    match scan.path.clone() {
        Some(path) => Ok((scan, path)),
        None => Err(CutError::NoRecord(session.session_id.clone())),
    }
}

/// The record at `path` from byte 0 up to `end` (all that was archived,
/// when `None`), from the session's `harnery.record` chunks in every
/// epoch of `parts`.
pub(crate) fn archived_prefix(
    parts: &Parts,
    session: &SessionRef,
    path: &str,
    end: Option<u64>,
) -> Result<Vec<u8>, CutError> {
    let mut chunks: Vec<(u64, Vec<u8>)> = Vec::new();
    for ledger in parts.all() {
        chunks_of(ledger, session, path, &mut chunks)?;
    }
    chunks.sort_by_key(|(start, _)| *start);
    join(chunks, path, end)
}

/// The whole chunks of the record at `path` that `ledger` archived.
fn chunks_of(
    ledger: &LedgerReader,
    session: &SessionRef,
    path: &str,
    chunks: &mut Vec<(u64, Vec<u8>)>,
) -> Result<(), LedgerError> {
    ledger.events().for_each_record_payload(session, |payload| {
        let Some(nl) = payload.iter().position(|b| *b == b'\n') else {
            return Ok(());
        };
        let Ok(header) = serde_json::from_slice::<RecordChunkHeader>(&payload[..nl]) else {
            return Ok(());
        };
        let body = &payload[nl + 1..];
        // A line over the ceiling was carried only in part: not its bytes.
        let whole = body.len() as u64 == header.end.saturating_sub(header.start);
        if header.path == path && whole && !header.oversized_line {
            chunks.push((header.start, body.to_vec()));
        }
        Ok(())
    })
}

/// Chunks sorted by where they start, joined from byte 0 up to `end`.
fn join(chunks: Vec<(u64, Vec<u8>)>, path: &str, end: Option<u64>) -> Result<Vec<u8>, CutError> {
    let mut out: Vec<u8> = Vec::new();
    for (start, body) in chunks {
        let have = out.len() as u64;
        if start > have || end.is_some_and(|e| have >= e) {
            break;
        }
        let from = (have - start) as usize;
        if from < body.len() {
            out.extend_from_slice(&body[from..]);
        }
    }
    let want = end.unwrap_or(out.len() as u64);
    if (out.len() as u64) < want || (end.is_none() && out.is_empty()) {
        return Err(CutError::Gap {
            path: path.into(),
            have: out.len() as u64,
            want,
        });
    }
    out.truncate(want as usize);
    Ok(out)
}

/// Where the next turn's preamble starts at the end of `bytes` (whole
/// lines), by the marks the agent's reader gives its lines
/// (`line_mark`): Claude Code writes a `file-history-snapshot` row
/// (interactive) or `queue-operation` rows (print mode) before a prompt; Copilot's turn is over at its last `assistant.turn_end`.
fn preamble_start(adapter: AdapterId, bytes: &[u8]) -> usize {
    let mut lines: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            lines.push((start, i + 1));
            start = i + 1;
        }
    }
    let mark = |(s, e): (usize, usize)| -> LineMark {
        #[derive(serde::Deserialize)]
        struct Kind {
            #[serde(rename = "type")]
            kind: Option<String>,
        }
        serde_json::from_slice::<Kind>(&bytes[s..e])
            .ok()
            .and_then(|k| k.kind)
            .map_or(LineMark::None, |k| line_mark(adapter, &k))
    };
    let ended = |line: &(usize, usize)| mark(*line) == LineMark::TurnEnd;
    if let Some(line) = lines.iter().rev().find(|l| ended(l)) {
        return line.1;
    }
    let preamble = lines
        .iter()
        .rev()
        .take_while(|l| mark(**l) == LineMark::NextPrompt);
    preamble.last().map_or(bytes.len(), |line| line.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_turns_preamble_is_left_out() {
        let claude = b"{\"type\":\"user\"}\n{\"type\":\"assistant\"}\n{\"type\":\"file-history-snapshot\"}\n";
        assert_eq!(preamble_start(AdapterId::ClaudeCode, claude), 37);
        let copilot = b"{\"type\":\"user.message\"}\n{\"type\":\"assistant.turn_end\"}\n{\"type\":\"hook.start\"}\n";
        assert_eq!(preamble_start(AdapterId::Copilot, copilot), 54);
        assert_eq!(preamble_start(AdapterId::Copilot, b"{}\n"), 3);
    }
}
