//! One pass over an agent's raw stream (Copilot `events.jsonl`, Claude Code
//! transcript JSONL): what every dialect shares.
//!
//! The scan reads up to the length observed when it starts, keeps bounded
//! rings (direct user direction, agent steering, offsets of recent activity),
//! and counts every record it had to skip, by kind. Activity records are not
//! parsed during the scan: only their offsets are kept, and the newest few are
//! read again afterwards. A dialect only classifies lines and turns records
//! into canonical entries.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::canonical::{Entry, Ring};
use crate::agents::record::lines::{LineReader, Piece, ReadStats, ReaderLimits};

/// V8's maximum string length (2^29 - 24 UTF-16 code units): the stream size
/// at which runtimes that load the whole stream into one string fail.
pub(crate) const LEGACY_CEILING_CHARS: u64 = 536_870_888;

/// Bytes asked of the kernel per read.
const READ_CHUNK: usize = 1 << 20;

/// How many oversized records are listed (all are counted).
const OVERSIZED_LISTED: usize = 16;

/// The bounds of one scan.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScanLimits {
    pub max_direct: usize,
    pub max_steering: usize,
    pub max_recent: usize,
    /// Longest record read; longer ones are skipped and counted.
    pub max_record: usize,
    /// Longest text kept per message.
    pub text_cap: usize,
}

/// Records skipped, by why.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SkipCounts {
    /// Longer than `max_record`.
    pub oversized: u64,
    /// Cut short: bytes that are no complete record (a torn write, garbage).
    pub torn: u64,
    /// Lines that began with a run of NUL bytes (preallocated, never written).
    pub nul_run: u64,
    /// Extra records found run together on one line.
    pub concatenated: u64,
    /// Complete-looking records that are not the JSON their type needs.
    pub invalid: u64,
    /// The last bytes of the scanned range had no newline and were no record.
    pub unterminated_tail: u64,
}

impl SkipCounts {
    pub fn total_skipped(&self) -> u64 {
        self.oversized + self.torn + self.nul_run + self.invalid + self.unterminated_tail
    }
}

/// A record skipped for its size.
#[derive(Debug, Clone, Serialize)]
pub struct OversizedRecord {
    pub offset: u64,
    pub bytes: u64,
    /// The record type, when its first bytes say it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_type: Option<String>,
}

/// A user message from the raw stream, with a digest of its whole text.
#[derive(Debug, Clone)]
pub(crate) struct RawMessage {
    pub entry: Entry,
    /// blake3 of the normalized full text, for matching indexed turns.
    pub digest: [u8; 32],
}

/// Where a recent activity record sits, to read it again after the scan.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ActivityRef {
    pub offset: u64,
    pub len: u32,
}

/// Lifecycle facts the packet reports.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Lifecycle {
    pub starts: u64,
    pub resumes: u64,
    pub shutdowns: u64,
    pub aborts: u64,
    /// Offset of the last clean shutdown record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_shutdown_offset: Option<u64>,
}

/// Everything the scan keeps.
pub(crate) struct ScanState {
    pub limits: ScanLimits,
    pub direct: Ring<RawMessage>,
    pub steering: Ring<RawMessage>,
    pub activity: Ring<ActivityRef>,
    pub skipped: SkipCounts,
    pub oversized: Ring<OversizedRecord>,
    pub records: u64,
    pub lifecycle: Lifecycle,
    /// Oversized user messages newer than the newest direct message kept.
    pub oversized_user_after_direct: u64,
}

impl ScanState {
    pub(crate) fn new(limits: ScanLimits) -> ScanState {
        ScanState {
            limits,
            direct: Ring::new(limits.max_direct.max(1)),
            steering: Ring::new(limits.max_steering),
            activity: Ring::new(limits.max_recent),
            skipped: SkipCounts::default(),
            oversized: Ring::new(OVERSIZED_LISTED),
            records: 0,
            lifecycle: Lifecycle::default(),
            oversized_user_after_direct: 0,
        }
    }

    pub(crate) fn push_direct(&mut self, msg: RawMessage) {
        self.oversized_user_after_direct = 0;
        self.direct.push(msg);
    }
}

/// How a dialect reads lines.
pub(crate) trait Dialect {
    /// Classify one line (already split from the stream) and update `state`.
    fn on_line(&mut self, state: &mut ScanState, offset: u64, line: &[u8], terminated: bool);
    /// The record type named in the first bytes of an oversized record.
    fn type_of_head(&self, head: &[u8]) -> Option<String>;
    /// Whether an oversized record of this type is a user message.
    fn is_user_message_type(&self, record_type: &str) -> bool;
    /// Canonical entries of one activity record read again after the scan.
    fn activity_entries(&self, offset: u64, record: &[u8], text_cap: usize) -> Option<Vec<Entry>>;
}

/// What one scan of a stream found.
pub(crate) struct Scanned {
    pub path: PathBuf,
    pub bytes_at_start: u64,
    pub read: ReadStats,
    pub state: ScanState,
    /// Recent activity, newest first, at most `max_recent` entries.
    pub recent: Vec<Entry>,
    /// Activity records seen in the whole stream.
    pub activity_seen: u64,
}

/// Hooks for tests: run after the first chunk is read.
pub(crate) type AfterFirstRead = Option<Box<dyn FnOnce() + Send>>;

/// Scan `path` with `dialect`, up to the length it has now.
pub(crate) fn scan(
    path: &Path,
    dialect: &mut dyn Dialect,
    limits: ScanLimits,
    hook: AfterFirstRead,
    progress: &crate::progress::Progress,
) -> io::Result<Scanned> {
    let file = crate::agents::record::place::open_regular(path)?;
    let bytes_at_start = file.metadata()?.len();
    let mut state = ScanState::new(limits);
    let reader_limits = ReaderLimits {
        max_line: limits.max_record,
        chunk: READ_CHUNK,
    };
    progress.total(bytes_at_start);
    let read = LineReader::new(&file, bytes_at_start, reader_limits)
        .counting_utf16(bytes_at_start > LEGACY_CEILING_CHARS)
        .with_after_first_read(hook)
        .with_progress(progress.clone())
        .run(|piece| on_piece(dialect, &mut state, piece))?;
    let activity_seen = state.activity.seen();
    let recent = reread_activity(&file, dialect, &state);
    Ok(Scanned {
        path: path.to_path_buf(),
        bytes_at_start,
        read,
        state,
        recent,
        activity_seen,
    })
}

fn on_piece(dialect: &mut dyn Dialect, state: &mut ScanState, piece: Piece<'_>) {
    match piece {
        Piece::Line {
            offset,
            bytes,
            terminated,
        } => dialect.on_line(state, offset, bytes, terminated),
        Piece::Oversized { offset, len, head } => {
            let record_type = dialect.type_of_head(head);
            if record_type
                .as_deref()
                .is_some_and(|t| dialect.is_user_message_type(t))
            {
                state.oversized_user_after_direct += 1;
            }
            state.skipped.oversized += 1;
            state.oversized.push(OversizedRecord {
                offset,
                bytes: len,
                record_type,
            });
        }
    }
}

fn reread_activity(file: &File, dialect: &dyn Dialect, state: &ScanState) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    for at in state.activity.newest_first() {
        if out.len() >= state.limits.max_recent {
            break;
        }
        buf.resize(at.len as usize, 0);
        if file.read_exact_at(&mut buf, at.offset).is_err() {
            continue; // the file shrank since the scan: that record is gone
        }
        if let Some(mut entries) = dialect.activity_entries(at.offset, &buf, state.limits.text_cap)
        {
            entries.reverse();
            out.extend(entries);
        }
    }
    out.truncate(state.limits.max_recent);
    out
}

/// Split bytes that are not one clean record into the records they hold:
/// leading NUL runs are dropped, records run together are separated, and
/// garbage between records is skipped up to the next `marker`. Counts go to
/// `skipped`. Returns the byte ranges of whole JSON values.
pub(crate) fn salvage(line: &[u8], marker: &[u8], skipped: &mut SkipCounts) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut pos = 0;
    if line.first() == Some(&0) {
        skipped.nul_run += 1;
        pos = line.iter().position(|&b| b != 0).unwrap_or(line.len());
    }
    while pos < line.len() {
        let rest = &line[pos..];
        let lead = rest
            .iter()
            .take_while(|b| b.is_ascii_whitespace() || **b == 0)
            .count();
        if lead == rest.len() {
            break;
        }
        let mut values =
            serde_json::Deserializer::from_slice(rest).into_iter::<serde::de::IgnoredAny>();
        let mut last_end = 0;
        while let Some(Ok(_)) = values.next() {
            let end = values.byte_offset();
            out.push(pos + last_end..pos + end);
            last_end = end;
        }
        if last_end == rest.len() || rest[last_end..].iter().all(|b| b.is_ascii_whitespace()) {
            break;
        }
        // Garbage from `pos + last_end`: skip to the next record start.
        skipped.torn += 1;
        let search_from = pos + last_end + 1;
        match memchr::memmem::find(&line[search_from..], marker) {
            Some(found) => pos = search_from + found,
            None => break,
        }
    }
    if out.len() > 1 {
        skipped.concatenated += out.len() as u64 - 1;
    }
    out
}

/// Trim the whitespace (and a `\r`) a line may carry around its record.
pub(crate) fn trim_record(line: &[u8]) -> &[u8] {
    let start = line
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(line.len());
    let end = line
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &line[start..end]
}

/// The digest used to match a message with indexed turns: the text with
/// line endings unified and surrounding whitespace trimmed.
pub(crate) fn message_digest(text: &str) -> [u8; 32] {
    let unified = text.replace("\r\n", "\n");
    *blake3::hash(unified.trim().as_bytes()).as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(line: &[u8]) -> (Vec<String>, SkipCounts) {
        let mut skipped = SkipCounts::default();
        let ranges = salvage(line, b"{\"type\":\"", &mut skipped);
        let texts = ranges
            .into_iter()
            .map(|r| String::from_utf8_lossy(&line[r]).into_owned())
            .collect();
        (texts, skipped)
    }

    #[test]
    fn two_records_run_together_are_split() {
        let (got, s) = pieces(br#"{"type":"a"}{"type":"b"}"#);
        assert_eq!(got, [r#"{"type":"a"}"#, r#"{"type":"b"}"#]);
        assert_eq!((s.concatenated, s.torn), (1, 0));
    }

    #[test]
    fn torn_prefix_then_record() {
        let (got, s) = pieces(br#"{"type":"assistant.mes{"type":"user.message","data":{}}"#);
        assert_eq!(got, [r#"{"type":"user.message","data":{}}"#]);
        assert_eq!(s.torn, 1);
    }

    #[test]
    fn nul_run_then_record() {
        let mut line = vec![0u8; 40];
        line.extend_from_slice(br#"{"type":"x"}"#);
        let (got, s) = pieces(&line);
        assert_eq!(got, [r#"{"type":"x"}"#]);
        assert_eq!((s.nul_run, s.torn), (1, 0));
    }

    #[test]
    fn pure_garbage_counts_torn() {
        let (got, s) = pieces(b"\x00\x00garbage without records");
        assert!(got.is_empty());
        assert_eq!((s.nul_run, s.torn), (1, 1));
    }
}
